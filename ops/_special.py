"""What the special-function composites share: base classes and staged numerics helpers.

The composites (ops/error_functions.py, ops/gamma_functions.py, ops/bessel.py) are
written in f32 or f64; a narrower float operand (f16, bf16, float8) is widened to
f32 around the expansion, as XLA's CHLO decompositions do, so no function is
evaluated at a precision its approximation was not made for.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.float64([0.0, 0.5, 1.0]))
>>> chebyshev(x, (1.0, 2.0, 3.0), -1.0, 1.0)   # 1 + 2x + 3(2x^2 - 1)
hlodsl.Array[float64, (3,)]([-2. ,  0.5,  6. ])
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import Floating, float32
from hlodsl.ir.op import Composite

from ._ad import full_like
from .binary import Add, Binary, Divide, Multiply, Subtract
from .compare import Compare, Select
from .convert import Convert
from .unary import Unary

__all__ = [
    "PI",
    "SpecialBinary",
    "SpecialUnary",
    "add",
    "c",
    "chebyshev",
    "div",
    "eps",
    "lt",
    "mul",
    "reduce_half",
    "select",
    "sub",
    "widened",
]


class SpecialUnary(Composite, Unary):
    """A real elementwise function of one operand, staged as other ops (own derivative)."""

    kinds = (Floating,)
    differentiate_expansion = False

    def expand(self, x):
        return widened(self.compute, x)

    def compute(self, x):  # pragma: no cover - every subclass defines it
        raise NotImplementedError


class SpecialBinary(Composite, Binary):
    """A real elementwise function of two operands, staged as other ops (own derivative)."""

    kinds = (Floating,)
    differentiate_expansion = False

    def expand(self, x, y):
        return widened(self.compute, x, y)

    def compute(self, x, y):  # pragma: no cover - every subclass defines it
        raise NotImplementedError


def widened(fn, *xs: Array):
    """``fn(*xs)``, computed in f32 when the operands' float type is narrower."""
    dtype = xs[0].dtype
    if dtype.np_dtype.itemsize >= 4:
        return fn(*xs)
    return Convert(dtype)(fn(*(Convert(float32)(x) for x in xs)))


def eps(x: Array) -> float:
    """Machine epsilon of ``x``'s float type."""
    return float(ml_dtypes.finfo(x.dtype.np_dtype).eps)


def c(value, like: Array) -> Array:
    """``value`` in ``like``'s type and shape (a constant when staged)."""
    return full_like(like, value)


def add(x, y):
    return Add()(x, y)


def sub(x, y):
    return Subtract()(x, y)


def mul(x, y):
    return Multiply()(x, y)


def div(x, y):
    return Divide()(x, y)


def select(p, x, y):
    return Select()(p, x, y)


def lt(x, y):
    return Compare("LT")(x, y)


def chebyshev(x: Array, coefficients, lo: float, hi: float) -> Array:
    """The Chebyshev series ``sum(c_k T_k(y))`` at ``y = (2x - lo - hi) / (hi - lo)`` (Clenshaw).

    In f32 the series stops where its coefficients fall below f32's precision: the
    tail cannot change an f32 result, and the fits are made to f64's.
    """
    if x.dtype.np_dtype.itemsize <= 4:
        big = abs(coefficients[0])
        coefficients = coefficients[:1 + max(i for i, v in enumerate(coefficients)
                                             if abs(v) > 1e-9 * big)]
    y = div(sub(mul(c(2, x), x), c(lo + hi, x)), c(hi - lo, x))
    y2 = mul(c(2, x), y)
    b1, b2 = c(0, x), c(0, x)
    for k in range(len(coefficients) - 1, 0, -1):
        b1, b2 = add(sub(mul(y2, b1), b2), c(coefficients[k], x)), b1
    return add(sub(mul(y, b1), b2), c(coefficients[0], x))


def reduce_half(x: Array) -> Array:
    """``x - round(x)``, in [-0.5, 0.5] and exact: sin(pi x) and tan(pi x) without error."""
    from .unary import RoundNearestEven

    return sub(x, RoundNearestEven()(x))


PI = float(np.pi)
