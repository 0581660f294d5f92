"""Converted ``while`` and ``for i in range(...)``: Python loops until a value is symbolic.

A ``while`` runs as Python while its condition is a Python value, and becomes
``hd.while_loop`` once it is symbolic; a ``for`` over a ``range`` with a
symbolic bound becomes ``hd.fori_loop`` (or a while loop, with a ``break``).
``_Loop`` decides which variables travel through the HLO loop: arrays and
structures of arrays, Python numbers (typed by one iteration of the body),
and static values that must not change.
"""

from __future__ import annotations

import builtins
from typing import Callable

import numpy as np

from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import Integer
from hlodsl.errors import ShapeError, staging_error
from hlodsl.ir.structural import Constant
from hlodsl.arrays.tree import flatten
from hlodsl.arrays.types import ArrayType

from ..body import Body
from .values import (
    Site, Undefined, _as_pred, _control, _fits, _full, _has_arrays, _is_host, _located, _ops,
    _same_static, _scalar, _show, _symbolic, _where, stopped, undefined,
)

__all__ = ["while_", "for_range"]


def while_(test_fn: Callable, body_fn: Callable, values: tuple, site):
    """A converted ``while``: a Python loop while the test is a Python value, then HLO."""
    site = Site._make(site)
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
    site = Site._make(site)
    brk = site.break_flag
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
        self.names, live = site.names, site.live
        self.brk = site.break_flag
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
        out = _dry(body, f"{self.site.function}_loop{self.site.line}_types", in_types)
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
        label = f"{self.site.function}_while{self.site.line}"
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
        label = f"{self.site.function}_for{self.site.line}"
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
    from hlodsl.arrays.dtypes import element_type

    return element_type(dtype)


def _same_structure(a, b) -> bool:
    try:
        (la, ta), (lb, tb) = flatten(a), flatten(b)
    except TypeError:
        return False
    return ta == tb and [x.type for x in la] == [x.type for x in lb]


def _dry(fn: Callable, name: str, in_types: tuple = ()) -> tuple:
    """Stage ``fn`` once, thrown away, for the values it produces (types, static values)."""
    body = Body(name, in_types, tupled=True)
    return tuple(body.run(lambda *params: tuple(fn(*params))))
