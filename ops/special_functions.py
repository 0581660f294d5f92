"""Erf, and the hyperbolic and inverse trigonometric functions.

XLA:CPU rejects the sinh, cosh, asin, acos, asinh, acosh and atanh opcodes
(``UNIMPLEMENTED``), so these ops are *composites*: calling one stages an
expression of ops every backend has, chosen for accuracy (log1p/expm1 near
zero, a separate branch where squaring would overflow). They are real-only.

>>> import numpy as np, hlodsl as hd
>>> Asin()(hd.array(np.float64([0.5])))
hlodsl.Array[float64, (1,)]([0.52359878])
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlodsl.dtypes import Floating
from hlodsl.op import Composite
from hlodsl.structural import Constant

from . import binary as b
from . import unary as u
from .broadcast import Broadcast
from .compare import Compare, Select
from .unary import Unary

__all__ = ["Erf", "Sinh", "Cosh", "Asin", "Acos", "Asinh", "Acosh", "Atanh"]


class Erf(Unary, opcode="erf"):
    """The error function (a native XLA op)."""

    kinds = (Floating,)

    @staticmethod
    def numpy(x):
        from math import erf

        x = np.asarray(x)
        return np.vectorize(erf, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)


def _c(value, like):
    """``value`` broadcast to ``like``'s type."""
    t = like.type
    return Broadcast(t.shape)(Constant(np.asarray(value, t.dtype.np_dtype))())


class _Composite(Composite, Unary):
    """A real elementwise function staged as an expression of other ops."""

    kinds = (Floating,)


def _log1p_sqrt(x, t):
    """log1p(t + sqrt(t * (t + 2))): acosh(1 + t), accurate for small t."""
    return u.Log1p()(b.Add()(t, u.Sqrt()(b.Multiply()(t, b.Add()(t, _c(2, x))))))


def _large(x, a):
    """a > 1/sqrt(eps): beyond it sqrt(a*a + 1) == a, and a*a may overflow."""
    # ml_dtypes' finfo knows bfloat16 as well as numpy's types (numpy's does not).
    return Compare("GT")(a, _c(1 / np.sqrt(ml_dtypes.finfo(x.dtype.np_dtype).eps), x))


class Sinh(_Composite, opcode="sinh"):
    numpy = staticmethod(np.sinh)

    def expand(self, x):
        return b.Divide()(b.Subtract()(u.Expm1()(x), u.Expm1()(u.Negate()(x))), _c(2, x))


class Cosh(_Composite, opcode="cosh"):
    numpy = staticmethod(np.cosh)

    def expand(self, x):
        return b.Divide()(b.Add()(u.Exp()(x), u.Exp()(u.Negate()(x))), _c(2, x))


def _one_minus_sq(x):
    return b.Multiply()(b.Subtract()(_c(1, x), x), b.Add()(_c(1, x), x))


class Asin(_Composite, opcode="asin"):
    numpy = staticmethod(np.arcsin)

    def expand(self, x):
        return b.Atan2()(x, u.Sqrt()(_one_minus_sq(x)))


class Acos(_Composite, opcode="acos"):
    numpy = staticmethod(np.arccos)

    def expand(self, x):
        return b.Atan2()(u.Sqrt()(_one_minus_sq(x)), x)


class Atanh(_Composite, opcode="atanh"):
    numpy = staticmethod(np.arctanh)

    def expand(self, x):
        # sign(x) * 0.5 * log1p(2a / (1 - a)), a = |x|: one log1p, of a
        # non-negative argument (XLA's log1p loses ~100 ulp on negative ones).
        a = u.Abs()(x)
        ratio = b.Divide()(b.Multiply()(_c(2, x), a), b.Subtract()(_c(1, x), a))
        return b.Multiply()(u.Sign()(x), b.Multiply()(_c(0.5, x), u.Log1p()(ratio)))


class Asinh(_Composite, opcode="asinh"):
    numpy = staticmethod(np.arcsinh)

    def expand(self, x):
        a = u.Abs()(x)
        big = b.Add()(u.Log()(a), _c(np.log(2), x))
        small = u.Log1p()(b.Add()(a, b.Divide()(
            b.Multiply()(a, a), b.Add()(_c(1, x), u.Sqrt()(b.Add()(_c(1, x), b.Multiply()(a, a)))))))
        return b.Multiply()(u.Sign()(x), Select()(_large(x, a), big, small))


class Acosh(_Composite, opcode="acosh"):
    numpy = staticmethod(np.arccosh)

    def expand(self, x):
        big = b.Add()(u.Log()(x), _c(np.log(2), x))
        return Select()(_large(x, x), big, _log1p_sqrt(x, b.Subtract()(x, _c(1, x))))


# -- derivatives (hlodsl.rules, used by hlodsl.transforms) ------------------------------------------------
# The composites are differentiated through their expansions; erf is one instruction.

from hlodsl.rules import vjp_rule  # noqa: E402

from ._ad import full_like, mul  # noqa: E402


@vjp_rule.dispatch
def erf_vjp(op: Erf, ct, out, x):
    # d/dx erf(x) = 2 / sqrt(pi) * exp(-x^2)
    slope = mul(full_like(x, 2 / np.sqrt(np.pi)), u.Exp()(u.Negate()(mul(x, x))))
    return (mul(ct, slope),)
