"""The run time of converted control flow: what code rewritten by ``hlodsl.flow`` calls.

``hlodsl.flow`` rewrites a function's ``if``/``while``/``for`` statements into
calls of ``if_``, ``while_`` and ``for_range`` (and ``and_``/``or_``/``not_`` for
conditions). Each decides at staging time: a Python (or concrete) condition
runs as plain Python; a symbolic one becomes ``hd.cond``/``hd.while_loop``/
``hd.fori_loop`` over the variables the statement assigns, with errors that
name the variable and the statement's line.

>>> import numpy as np, hlodsl as hd
>>> def clip_at_zero(x):
...     if hd.stdlib.sum(x) < 0:
...         x = x * 0.0
...     return x
>>> hd.compile(clip_at_zero)(hd.array(np.float32([-1.0, -2.0])))
hlodsl.Array[float32, (2,)]([-0., -0.])
"""

from __future__ import annotations

import builtins
from typing import Callable

import numpy as np

from hlodsl.array import Array
from hlodsl.dtypes import Bool, ComplexFloating, Floating, Integer
from hlodsl.dtypes import pred as pred_dtype
from hlodsl.errors import ShapeError, StagingError, staging_error
from hlodsl.structural import Constant
from hlodsl.tree import flatten, unflatten

from .body import Body
from .structures import flatten_lifting
from hlodsl.types import ArrayType

__all__ = ["Undefined", "undefined", "load", "not_", "and_", "or_", "stopped", "static_test",
           "static_range", "if_", "while_", "for_range"]


# -- run time: what converted code calls --------------------------------------------------


class Undefined:
    """The value of a variable that is not bound (yet) where converted code reads it."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<undefined {self.name}>"

    def _unbound(self, *args, **kwargs):
        raise UnboundLocalError(f"cannot access local variable '{self.name}' where it is not "
                                "associated with a value")


for _dunder in ("bool", "call", "getitem", "iter", "len", "index", "float", "int", "neg",
                "add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "matmul",
                "rmatmul", "pow", "lt", "le", "gt", "ge"):
    setattr(Undefined, f"__{_dunder}__", Undefined._unbound)


def undefined(value) -> bool:
    return type(value) is Undefined


def load(scope: dict, names: tuple, global_scope: dict | None = None,
         global_names: tuple = ()) -> tuple:
    out = []
    for n in names:
        v = (global_scope if n in global_names else scope).get(n, _MISSING)
        out.append(Undefined(n) if v is _MISSING else v)
    return tuple(out)


_MISSING = object()


def _symbolic(x) -> bool:
    return isinstance(x, Array) and x._buf is None


def _ops():
    from hlodsl import ops  # the core imports ops only at run time

    return ops


def _control():
    from . import control

    return control


_WORDS = {"expression": "conditional expression", "if": "if", "return": "if"}


def _where(site) -> str:
    """``the if at file.py:12``: the statement an error is about."""
    kind, file, line = site[:3]
    return f"the {_WORDS.get(kind, kind)} at {file.rsplit('/', 1)[-1]}:{line}"


def _truth(x, what: str = "a condition") -> Array:
    """A symbolic array as a ``pred[]`` condition (``x != 0`` for numbers), as Python would."""
    if x.shape != ():
        raise staging_error(f"{what} is a symbolic array {x.type}: only a scalar has a truth "
                            "value (reduce it first, e.g. with xp.any or xp.all)")
    if x.dtype is pred_dtype:
        return x
    return _ops().Compare("NE")(x, _scalar(0, x.dtype))


def _scalar(value, dtype) -> Array:
    return Constant(np.asarray(value, dtype.np_dtype))()


def _as_pred(x) -> Array:
    return _truth(x) if _symbolic(x) else _scalar(bool(x), pred_dtype)


def not_(x):
    """``not x``, for a symbolic ``x`` a ``pred[]`` array."""
    return _ops().Not()(_truth(x)) if _symbolic(x) else not x


def and_(*thunks):
    """``a and b and ...`` (each operand a thunk): Python's short circuit until one is symbolic."""
    acc, last = None, None
    for thunk in thunks:
        v = thunk()
        if _symbolic(v):
            acc = _truth(v) if acc is None else _ops().And()(acc, _truth(v))
        elif not v:
            return v if acc is None else False
        last = v
    return last if acc is None else acc


def or_(*thunks):
    """``a or b or ...`` (each operand a thunk): Python's short circuit until one is symbolic."""
    acc, last = None, None
    for thunk in thunks:
        v = thunk()
        if _symbolic(v):
            acc = _truth(v) if acc is None else _ops().Or()(acc, _truth(v))
        elif v:
            return v if acc is None else True
        last = v
    return last if acc is None else acc


def stopped(flag) -> bool:
    """A loop's break flag, as far as Python knows: a symbolic flag keeps the loop going."""
    return not _symbolic(flag) and bool(flag)


def static_test(value, site):
    """The condition of a statement hlodsl leaves to Python: it must not be symbolic."""
    if _symbolic(value):
        raise staging_error(
            f"{_where(site)} {site[6]}, which hlodsl cannot convert to HLO control flow, and "
            f"its condition is a symbolic array {value.type}, whose value is only known when "
            "the compiled program runs. Restructure it (see docs/python-control-flow.md), "
            "or compute the choice with hlodsl.stdlib.where")
    return value


def static_range(rng, args, site):
    if rng is builtins.range and any(_symbolic(a) for a in args):
        a = next(a for a in args if _symbolic(a))
        raise staging_error(
            f"{_where(site)} {site[6]}, which hlodsl cannot convert to HLO control flow, and "
            f"its range has a symbolic bound {a.type}, only known when the compiled program "
            "runs. Restructure it (see docs/python-control-flow.md)")
    return rng(*args)


# -- if ------------------------------------------------------------------------------------


def if_(test, true_fn: Callable, false_fn: Callable, values: tuple, site):
    """A converted ``if``: Python's ``if`` on a Python value, ``hd.cond`` on a symbolic one."""
    if not _symbolic(test):
        return (true_fn if test else false_fn)(*values)
    pred = _truth(test, f"the condition of {_where(site)}")
    kind, names, live = site[0], site[4], site[5]
    if kind != "if":  # one result: the value returned, or the expression's value
        def one(fn):
            return lambda *vs: (fn(*vs),)

        true_fn, false_fn = one(true_fn), one(false_fn)
        names, live = ("<return>",), ("<return>",)
    label = f"{site[3]}_if{site[2]}"
    # Each branch is staged once, into a body of its own; what its variables become
    # (kept arrays, numbers to lift, static values) is decided from both branches'
    # results, and the coercions are then added to the branches that need them.
    staged = []
    for fn, side in ((true_fn, "true"), (false_fn, "false")):
        body = Body(f"{label}_{side}", (), tupled=True)
        staged.append((body, body.run(lambda fn=fn: tuple(fn(*values)))))
    (t_body, t_out), (f_body, f_out) = staged
    plans = [_merge(n, a, b, n in live, site) for n, a, b in zip(names, t_out, f_out)]
    kept = [i for i, p in enumerate(plans) if p[0] in ("keep", "coerce", "lift")]
    results = [p[1] if p[0] == "static" else Undefined(n) for n, p in zip(names, plans)]
    if kept:
        finished, tree = [], None
        for side, (body, out) in enumerate(staged):
            with body.within():
                leaves, tree = flatten_lifting(tuple(_apply(plans[i], side, out[i])
                                                     for i in kept))
            finished.append((body.finish(leaves, force_tuple=not leaves), leaves))
        got = []
        if finished[0][1]:
            got = _ops().Conditional(finished[0][0], finished[1][0])(
                pred, tuple(t_body.captured), tuple(f_body.captured))
            got = got if isinstance(got, tuple) else (got,)
        for i, v in zip(kept, unflatten(tree, got)):
            results[i] = v
    return tuple(results) if kind == "if" else results[0]


def _dry(fn: Callable, name: str, in_types: tuple = ()) -> tuple:
    """Stage ``fn`` once, thrown away, for the values it produces (types, static values)."""
    body = Body(name, in_types, tupled=True)
    return tuple(body.run(lambda *params: tuple(fn(*params))))


def _is_host(v) -> bool:
    return isinstance(v, (bool, int, float, complex, np.number, np.bool_, np.ndarray))


def _has_arrays(v) -> bool:
    try:
        return bool(flatten(v)[0])
    except TypeError:
        return False


def _kind(dtype) -> int:
    if issubclass(dtype, Bool):
        return 0
    if issubclass(dtype, Integer):
        return 1
    if issubclass(dtype, Floating):
        return 2
    return 3 if issubclass(dtype, ComplexFloating) else 4


_KINDS = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def _host_kind(v) -> int:
    return _KINDS.get(np.asarray(v).dtype.kind, 4)


def _fits(host, t: ArrayType) -> bool:
    h = np.asarray(host)
    return _host_kind(host) <= _kind(t.dtype) and \
        (h.ndim == 0 or np.broadcast_shapes(h.shape, t.shape) == t.shape)


def _show(v) -> str:
    if isinstance(v, Array):
        return str(v.type)
    if undefined(v):
        return "unassigned"
    return repr(v) if _is_host(v) or not _has_arrays(v) else \
        f"{type(v).__name__} of arrays " + str([a.type for a in flatten(v)[0]])


def _same_static(a, b) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 (an == that cannot say)
        return False


def _merge(name: str, a, b, live: bool, site):
    """How variable ``name`` leaves a symbolic if whose branches give it ``a`` and ``b``."""
    what = "the value returned" if name == "<return>" else f"variable '{name}'"
    if undefined(a) or undefined(b):
        if undefined(a) and undefined(b) or not live:
            return ("drop",)
        side = "false" if undefined(a) else "true"
        raise staging_error(
            f"{_where(site)}: {what} is assigned only in its {side} branch (and not before "
            f"the if), but it is used after the if. The condition is a symbolic array, so both "
            f"branches become one HLO conditional, which must give '{name}' a value either "
            "way: assign it before the if, or in both branches")
    if isinstance(a, Array) and isinstance(b, Array):
        if a.type == b.type:
            return ("keep",)
    elif isinstance(a, Array) and _is_host(b) and _fits(b, a.type):
        return ("coerce", 1, a.type)
    elif isinstance(b, Array) and _is_host(a) and _fits(a, b.type):
        return ("coerce", 0, b.type)
    elif _is_host(a) and _is_host(b):
        if _same_static(a, b) or isinstance(a, np.ndarray) and isinstance(b, np.ndarray) \
                and a.dtype == b.dtype and np.array_equal(a, b):
            return ("static", a)
        if np.shape(a) == np.shape(b):
            return ("lift", np.result_type(np.asarray(a), np.asarray(b)))
    elif not isinstance(a, Array) and not isinstance(b, Array):
        if _same_static(a, b) and not _has_arrays(a):
            return ("static", a)
        if _has_arrays(a) and _has_arrays(b):
            try:
                (la, ta), (lb, tb) = flatten(a), flatten(b)
            except TypeError:
                pass
            else:
                if ta == tb and [x.type for x in la] == [x.type for x in lb]:
                    return ("keep",)
    if not live:  # unused after the if: it may simply stay unbound
        return ("drop",)
    cls = ShapeError if isinstance(a, Array) or isinstance(b, Array) else StagingError
    raise cls(_located(
        f"{_where(site)}: {what} is {_show(a)} in the true branch but {_show(b)} in the "
        "false branch. The condition is a symbolic array, so both branches become one HLO "
        "conditional, which gives each variable one element type and shape (only arrays and "
        "numbers can differ between the branches)"))


def _located(message: str) -> str:
    """``message`` with the user's source line appended, as every hlodsl error has."""
    return str(staging_error(message))


def _apply(plan, side: int, v):
    if plan[0] == "coerce" and plan[1] == side:
        return _full(v, plan[2])
    if plan[0] == "lift":
        return Constant(np.asarray(v, plan[1]))()
    return v


def _full(host, t: ArrayType) -> Array:
    """A Python number or numpy array as an array of type ``t`` (a broadcast scalar)."""
    h = np.asarray(host, t.dtype.np_dtype)
    if h.ndim:
        return Constant(np.ascontiguousarray(np.broadcast_to(h, t.shape)))()
    s = Constant(h)()
    return _ops().Broadcast(t.shape)(s) if t.shape else s


# -- loops ---------------------------------------------------------------------------------


def while_(test_fn: Callable, body_fn: Callable, values: tuple, site):
    """A converted ``while``: a Python loop while the test is a Python value, then HLO."""
    values = tuple(values)
    while True:
        t = test_fn(*values)
        if _symbolic(t):
            return _Loop(site, values).run_while(test_fn, body_fn)
        if not t:
            return values
        values = tuple(body_fn(*values))


def for_range(rng, args: tuple, body_fn: Callable, values: tuple, site):
    """A converted ``for target in range(...)``: Python's loop, or HLO for symbolic bounds."""
    brk = site[6]
    values = tuple(values)
    if rng is not builtins.range or not any(_symbolic(a) for a in args):
        for i in rng(*args):
            values = tuple(body_fn(i, *values[1:]))
            if brk is not None and stopped(values[brk]):
                break
        return values
    lo, hi, step, dtype = _range_bounds(args, site)
    return _Loop(site, values, index=(lo, hi, step, dtype)).run_range(body_fn)


def _range_bounds(args, site):
    where = _where(site)
    for a in args:
        if _symbolic(a) and (a.shape != () or not issubclass(a.dtype, Integer)):
            raise staging_error(f"{where}: range() needs integer scalars, got a symbolic "
                                f"array {a.type}")
    bounds = [a if _symbolic(a) else _python_int(a, where) for a in args]
    lo, hi, step = (0, bounds[0], 1) if len(bounds) == 1 else \
        (*bounds, 1) if len(bounds) == 2 else bounds
    if _symbolic(step):
        raise staging_error(f"{where}: the step of range() must be a Python int when a bound "
                            f"is a symbolic array, got a symbolic {step.type}")
    if step == 0:
        raise ValueError(f"{where}: range() arg 3 must not be zero")
    dtypes = [b.dtype for b in (lo, hi) if _symbolic(b)]
    dtype = dtypes[0] if len(set(dtypes)) == 1 else \
        max(dtypes, key=lambda d: np.dtype(d.np_dtype).itemsize)
    lo, hi = (_convert_to(b, dtype) for b in (lo, hi))
    return lo, hi, step, dtype


def _python_int(a, where: str) -> int:
    try:
        return int(a.__index__())
    except (AttributeError, TypeError):
        raise TypeError(f"{where}: '{type(a).__name__}' object cannot be interpreted as an "
                        "integer") from None


def _convert_to(b, dtype):
    if not _symbolic(b):
        return b
    return b if b.dtype is dtype else _ops().Convert(dtype)(b)


class _Retype(Exception):
    """A loop variable that started as a Python number takes another type in the body."""

    def __init__(self, index: int, type_: ArrayType):
        self.index, self.type = index, type_


class _Loop:
    """Variables of a loop on a symbolic condition: which travel through the HLO while.

    Each variable is *carried* (an array, a Python number lifted to an array, or a
    structure of arrays), *static* (any other value: it must not change), or
    *local* (unbound before the loop and not used after it: a temporary of the
    body). A for loop's target (the first name) is carried only if used after it.
    """

    def __init__(self, site, values: tuple, index=None):
        self.site, self.values, self.index = site, values, index
        self.names, live = site[4], site[5]
        self.brk = site[6] if site[0] == "for loop" else None
        self.types: dict[int, ArrayType] = {}  # Python numbers: the type they travel as
        self.numbers: set[int] = set()
        self.kinds = []
        for i, (name, v) in enumerate(zip(self.names, values)):
            if index is not None and i == 0:
                self.kinds.append("carry" if name in live else "local")
            elif undefined(v):
                if name in live:
                    raise staging_error(
                        f"{_where(site)}: variable '{name}' is assigned in the loop and used "
                        "after it, but it has no value before the loop. The loop runs on a "
                        "symbolic value, so it becomes one HLO while loop, which needs an "
                        f"initial value for each variable it carries: assign '{name}' before "
                        "the loop")
                self.kinds.append("local")
            elif isinstance(v, Array) or _has_arrays(v):
                self.kinds.append("carry")
            elif _is_host(v):
                self.kinds.append("carry")
                self.numbers.add(i)
            else:
                self.kinds.append("static")
        self.carried = [i for i, k in enumerate(self.kinds) if k == "carry"]

    def what(self, i: int) -> str:
        return f"{_where(self.site)}: variable '{self.names[i]}'"

    # -- the state of the HLO loop ----------------------------------------------------

    def init(self) -> tuple:
        out = []
        for i in self.carried:
            v = self.values[i]
            if self.index is not None and i == 0:
                lo, dtype = self.index[0], self.index[3]
                t = ArrayType(dtype, ())
                v = _as(lo, dtype) if undefined(v) else _full(v, t) if _is_host(v) else \
                    v if v.type == t else _ops().Convert(dtype)(v)
            elif i in self.types:
                v = _full(v, self.types[i])
            elif i in self.numbers:
                v = Constant(np.asarray(v))()
            out.append(v)
        return tuple(out)

    def full(self, state, i_value=None) -> tuple:
        """The values the body sees: the state's arrays, the static values, unbound locals."""
        vals = list(self.values)
        for j, i in enumerate(self.carried):
            vals[i] = state[j]
        for i, k in enumerate(self.kinds):
            if k == "local":
                vals[i] = Undefined(self.names[i])
        if self.index is not None:
            vals[0] = i_value
        return tuple(vals)

    def full_static(self) -> tuple:
        return tuple(Undefined(n) if k == "local" else v
                     for n, k, v in zip(self.names, self.kinds, self.values))

    def result(self, final) -> tuple:
        vals = list(self.full_static())
        for j, i in enumerate(self.carried):
            vals[i] = final[j]
        return tuple(vals)

    def next(self, state, out) -> tuple:
        """The body's results as the next state; a variable must keep its type."""
        new = []
        for j, i in enumerate(self.carried):
            old, v = state[j], out[i]
            if isinstance(old, Array) and isinstance(v, Array):
                if v.type != old.type:
                    if i in self.numbers and _fits(self.values[i], v.type):
                        raise _Retype(i, v.type)
                    raise ShapeError(_located(
                        f"{self.what(i)} is {old.type} before an iteration and {v.type} after "
                        "it. The loop runs on a symbolic value, so it becomes one HLO while "
                        "loop, which keeps the element type and shape of every variable it "
                        "carries"))
            elif isinstance(old, Array) and _is_host(v) and _fits(v, old.type):
                v = _full(v, old.type)
            elif isinstance(old, Array) or undefined(v) or not _same_structure(old, v):
                raise ShapeError(_located(
                    f"{self.what(i)} is {_show(old)} before an iteration and {_show(v)} after "
                    "it. The loop runs on a symbolic value, so it becomes one HLO while loop, "
                    "which keeps the structure, element types and shapes of every variable it "
                    "carries"))
            new.append(v)
        for i, k in enumerate(self.kinds):
            if k == "static" and not _same_static(out[i], self.values[i]):
                raise staging_error(
                    f"{self.what(i)} changes from {self.values[i]!r} to {_show(out[i])} in the "
                    "loop. The loop runs on a symbolic value, so it becomes one HLO while "
                    "loop, in which only arrays and numbers can change")
        return tuple(new)

    # -- staging ----------------------------------------------------------------------

    def pretype(self, body: Callable, in_types: tuple = ()) -> None:
        """Python numbers take the type one iteration gives them (``s = 0.0; s = s + x``)."""
        if not self.numbers:
            return
        out = _dry(body, f"{self.site[3]}_loop{self.site[2]}_types", in_types)
        for i in self.numbers:
            v = out[i]
            if isinstance(v, Array) and _fits(self.values[i], v.type):
                self.types[i] = v.type
            elif _is_host(v):
                dtype = np.result_type(np.asarray(self.values[i]), np.asarray(v))
                self.types[i] = ArrayType(_element(dtype), np.shape(v))

    def retrying(self, attempt: Callable):
        for _ in range(len(self.names) + 2):
            try:
                return attempt()
            except _Retype as r:
                self.types[r.index] = r.type
        raise staging_error(f"{_where(self.site)}: the types of its variables do not settle")

    def run_while(self, test_fn, body_fn) -> tuple:
        label = f"{self.site[3]}_while{self.site[2]}"
        self.pretype(lambda: body_fn(*self.full_static()))

        def cond(state):
            return _as_pred(test_fn(*self.full(state)))

        def body(state):
            return self.next(state, tuple(body_fn(*self.full(state))))

        cond.__name__ = cond.__qualname__ = f"{label}_test"
        body.__name__ = body.__qualname__ = f"{label}_body"
        return self.retrying(lambda: self.result(
            _control().while_loop(cond, body, self.init())))

    def run_range(self, body_fn) -> tuple:
        ops = _ops()
        lo, hi, step, dtype = self.index
        label = f"{self.site[3]}_for{self.site[2]}"
        t = ArrayType(dtype, ())
        self.pretype(lambda i: body_fn(i, *self.full_static()[1:]), (t,))

        def index(k):
            if step == 1 and self.brk is None:
                return k
            return ops.Add()(_as(lo, dtype), ops.Multiply()(k, _scalar(step, dtype)))

        def body(k, state):
            i = index(k)
            return self.next(state, tuple(body_fn(i, *self.full(state, i)[1:])))

        body.__name__ = body.__qualname__ = f"{label}_body"
        if self.brk is None:
            if step == 1:
                lower, upper = lo, hi
            else:
                lower, upper = 0, _trip(lo, hi, step, dtype)
            run = lambda: _control().fori_loop(lower, upper, body, self.init())  # noqa: E731
            return self.retrying(lambda: self.result(run()))
        trip = _trip(lo, hi, step, dtype)
        j = self.carried.index(self.brk) if self.brk in self.carried else None

        def cond(s):
            going = ops.Compare("LT")(s[0], trip)
            if j is None:
                return going
            return ops.And()(going, ops.Not()(_as_pred(s[1][j])))

        def wbody(s):
            return ops.Add()(s[0], _scalar(1, dtype)), body(s[0], s[1])

        cond.__name__ = cond.__qualname__ = f"{label}_test"
        wbody.__name__ = wbody.__qualname__ = f"{label}_body"
        return self.retrying(lambda: self.result(_control().while_loop(
            cond, wbody, (_scalar(0, dtype), self.init()))[1]))


def _as(b, dtype) -> Array:
    return b if _symbolic(b) else _scalar(b, dtype)


def _trip(lo, hi, step: int, dtype) -> Array:
    """``len(range(lo, hi, step))`` for a static step: max(0, ceil((hi - lo) / step))."""
    ops = _ops()
    lo, hi = _as(lo, dtype), _as(hi, dtype)
    d = ops.Subtract()(hi, lo) if step > 0 else ops.Subtract()(lo, hi)
    s = abs(step)
    if s != 1:
        d = ops.Divide()(ops.Add()(d, _scalar(s - 1, dtype)), _scalar(s, dtype))
    return ops.Maximum()(d, _scalar(0, dtype))


def _element(dtype: np.dtype):
    from hlodsl.dtypes import element_type

    return element_type(dtype)


def _same_structure(a, b) -> bool:
    try:
        (la, ta), (lb, tb) = flatten(a), flatten(b)
    except TypeError:
        return False
    return ta == tb and [x.type for x in la] == [x.type for x in lb]
