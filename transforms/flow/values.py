"""The run time's values: statement sites, unbound variables, conditions and coercions.

What converted code calls for ``not``/``and``/``or``, for reading variables that
may be unbound, and for statements left to Python (``static_test``,
``static_range``), plus what the branches and loops share: how a Python value
or an array is classified, shown in a message, or made an array of a type.
"""

from __future__ import annotations

import builtins
from typing import NamedTuple

import numpy as np

from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import Bool, ComplexFloating, Floating, Integer
from hlodsl.arrays.dtypes import pred as pred_dtype
from hlodsl.errors import staging_error
from hlodsl.ir.structural import Constant
from hlodsl.arrays.tree import flatten
from hlodsl.arrays.types import ArrayType

__all__ = ["Site", "Undefined", "undefined", "load", "not_", "and_", "or_", "stopped",
           "static_test", "static_range"]


class Site(NamedTuple):
    """Where a converted statement is and what it assigns (the rewrite makes one per
    statement, as a tuple constant; the run time reads it with these names)."""

    kind: str  # "if", "return" (an if whose branches return), "expression", "while loop",
    #            "for loop"
    file: str
    line: int
    function: str  # the user's function the statement is in
    names: tuple  # the variables the statement assigns
    live: tuple  # those of them read after it
    reason: str | None  # why the statement stays Python (None: it can be converted)
    break_flag: int | None  # a for loop's break flag: its position among ``names``


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
    from .. import control

    return control


_WORDS = {"expression": "conditional expression", "if": "if", "return": "if"}


def _where(site: Site) -> str:
    """``the if at file.py:12``: the statement an error is about."""
    return f"the {_WORDS.get(site.kind, site.kind)} at {site.file.rsplit('/', 1)[-1]}:{site.line}"


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
        site = Site._make(site)
        raise staging_error(
            f"{_where(site)} {site.reason}, which hlodsl cannot convert to HLO control flow, and "
            f"its condition is a symbolic array {value.type}, whose value is only known when "
            "the compiled program runs. Restructure it (see docs/python-control-flow.md), "
            "or compute the choice with hlodsl.stdlib.where")
    return value


def static_range(rng, args, site):
    """The range of a loop hlodsl leaves to Python: no bound may be symbolic."""
    if rng is builtins.range and any(_symbolic(a) for a in args):
        site = Site._make(site)
        a = next(a for a in args if _symbolic(a))
        raise staging_error(
            f"{_where(site)} {site.reason}, which hlodsl cannot convert to HLO control flow, and "
            f"its range has a symbolic bound {a.type}, only known when the compiled program "
            "runs. Restructure it (see docs/python-control-flow.md)")
    return rng(*args)


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


def _located(message: str) -> str:
    """``message`` with the user's source line appended, as every hlodsl error has."""
    return str(staging_error(message))


def _full(host, t: ArrayType) -> Array:
    """A Python number or numpy array as an array of type ``t`` (a broadcast scalar)."""
    h = np.asarray(host, t.dtype.np_dtype)
    if h.ndim:
        return Constant(np.ascontiguousarray(np.broadcast_to(h, t.shape)))()
    s = Constant(h)()
    return _ops().Broadcast(t.shape)(s) if t.shape else s
