"""Erf, and the hyperbolic and inverse trigonometric functions.

XLA:CPU rejects the sinh, cosh, asin, acos, asinh, acosh and atanh opcodes
(``UNIMPLEMENTED``), so these ops are *composites*: calling one stages an
expression of ops every backend has, chosen for accuracy (log1p/expm1 near
zero, a separate branch where squaring would overflow). A complex operand
expands to the function of the same name in ``complex_functions`` (principal
branches as numpy, C99's special values); each op has its own derivative rule.

>>> import numpy as np, hlodsl as hd
>>> Asin()(hd.array(np.float64([0.5])))
hlodsl.Array[float64, (1,)]([0.52359878])
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlodsl.arrays.dtypes import ComplexFloating, Floating
from hlodsl.ir.op import Composite
from hlodsl.ir.structural import Constant

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


#: Opcode -> the expansion of that function for a complex operand, a function of
#: ``hlodsl.ops.complex_functions``, which registers them: it is built on the real
#: composites of this module, so it sits above it and this module never imports it.
COMPLEX_EXPANSIONS: dict = {}


class _Elementary(_Composite):
    """A real or complex elementary function; complex operands expand in ``complex_functions``."""

    kinds = (Floating, ComplexFloating)
    # Its rule (below) instead of the expansion's: the special-value selects of the
    # expansion would turn unused infinite branches into NaN derivatives.
    differentiate_expansion = False

    def expand(self, x):
        if issubclass(x.dtype, ComplexFloating):
            return COMPLEX_EXPANSIONS[self.opcode](x)
        return self.expand_real(x)


def far_from_zero(x):
    """pred: |x| > log(4 / eps) / 2, beyond which sinh and cosh are e^|x| / 2 to the last bit."""
    bound = 0.5 * np.log(4 / ml_dtypes.finfo(x.dtype.np_dtype).eps)
    return Compare("GT")(u.Abs()(x), _c(bound, x))


def half_exp_abs(x, factor=None):
    """e^|x| / 2 (times ``factor``) as (e^(|x|/2) / 2 factor) e^(|x|/2): finite wherever the
    result is, where exp(|x|) overflows first (|x| in (709.78, 710.47] in f64, (88.72, 89.42]
    in f32); e^(|x|/2) is good to an ulp, as |x|/2 is exact."""
    half = u.Exp()(b.Multiply()(u.Abs()(x), _c(0.5, x)))
    scaled = b.Multiply()(half, _c(0.5, x))
    if factor is not None:
        scaled = b.Multiply()(scaled, factor)
    return b.Multiply()(scaled, half)


class Sinh(_Elementary, opcode="sinh"):
    """Hyperbolic sine, real or complex."""

    numpy = staticmethod(np.sinh)

    def expand_real(self, x):
        near = b.Divide()(b.Subtract()(u.Expm1()(x), u.Expm1()(u.Negate()(x))), _c(2, x))
        return Select()(far_from_zero(x), half_exp_abs(x, u.Sign()(x)), near)


class Cosh(_Elementary, opcode="cosh"):
    """Hyperbolic cosine, real or complex."""

    numpy = staticmethod(np.cosh)

    def expand_real(self, x):
        near = b.Divide()(b.Add()(u.Exp()(x), u.Exp()(u.Negate()(x))), _c(2, x))
        return Select()(far_from_zero(x), half_exp_abs(x), near)


def _one_minus_sq(x):
    return b.Multiply()(b.Subtract()(_c(1, x), x), b.Add()(_c(1, x), x))


class Asin(_Elementary, opcode="asin"):
    """Inverse sine, real or complex (cuts along the real axis beyond +-1)."""

    numpy = staticmethod(np.arcsin)

    def expand_real(self, x):
        return b.Atan2()(x, u.Sqrt()(_one_minus_sq(x)))


class Acos(_Elementary, opcode="acos"):
    """Inverse cosine, real or complex (cuts along the real axis beyond +-1)."""

    numpy = staticmethod(np.arccos)

    def expand_real(self, x):
        return b.Atan2()(u.Sqrt()(_one_minus_sq(x)), x)


class Atanh(_Elementary, opcode="atanh"):
    """Inverse hyperbolic tangent, real or complex (cuts along the reals beyond +-1)."""

    numpy = staticmethod(np.arctanh)

    def expand_real(self, x):
        # sign(x) * 0.5 * log1p(2a / (1 - a)), a = |x|: one log1p, of a
        # non-negative argument (XLA's log1p loses ~100 ulp on negative ones).
        a = u.Abs()(x)
        ratio = b.Divide()(b.Multiply()(_c(2, x), a), b.Subtract()(_c(1, x), a))
        return b.Multiply()(u.Sign()(x), b.Multiply()(_c(0.5, x), u.Log1p()(ratio)))


class Asinh(_Elementary, opcode="asinh"):
    """Inverse hyperbolic sine, real or complex (cuts along the imaginary axis beyond +-i)."""

    numpy = staticmethod(np.arcsinh)

    def expand_real(self, x):
        a = u.Abs()(x)
        big = b.Add()(u.Log()(a), _c(np.log(2), x))
        small = u.Log1p()(b.Add()(a, b.Divide()(
            b.Multiply()(a, a), b.Add()(_c(1, x), u.Sqrt()(b.Add()(_c(1, x), b.Multiply()(a, a)))))))
        return b.Multiply()(u.Sign()(x), Select()(_large(x, a), big, small))


class Acosh(_Elementary, opcode="acosh"):
    """Inverse hyperbolic cosine, real or complex (cut along the reals below 1)."""

    numpy = staticmethod(np.arccosh)

    def expand_real(self, x):
        big = b.Add()(u.Log()(x), _c(np.log(2), x))
        return Select()(_large(x, x), big, _log1p_sqrt(x, b.Subtract()(x, _c(1, x))))


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# ct * f'(x), real or complex (jax's convention: the transpose, no conjugate). Where
# sqrt(1 - x^2) would round, (1 - x)(1 + x); for acosh two square roots, which keep
# the principal branch in the left half-plane, where sqrt(x^2 - 1) has the other sign.

from hlodsl.ir.rules import register_rule, vjp_rule  # noqa: E402

from ._ad import add, div, full_like, mul, sub  # noqa: E402


def _one_minus_x_sq(x):
    return mul(sub(full_like(x, 1), x), add(full_like(x, 1), x))


_DERIVATIVES = {
    Sinh: lambda x: Cosh()(x),
    Cosh: lambda x: Sinh()(x),
    Asin: lambda x: div(full_like(x, 1), u.Sqrt()(_one_minus_x_sq(x))),
    Acos: lambda x: div(full_like(x, -1), u.Sqrt()(_one_minus_x_sq(x))),
    Atanh: lambda x: div(full_like(x, 1), _one_minus_x_sq(x)),
    Asinh: lambda x: div(full_like(x, 1), u.Sqrt()(add(full_like(x, 1), mul(x, x)))),
    Acosh: lambda x: div(full_like(x, 1), mul(u.Sqrt()(sub(x, full_like(x, 1))),
                                              u.Sqrt()(add(x, full_like(x, 1))))),
}


def _elementary_vjp(op, ct, out, x):
    return (mul(ct, _DERIVATIVES[type(op)](x)),)


for _cls in _DERIVATIVES:
    register_rule(vjp_rule, _cls, _elementary_vjp)


@vjp_rule.dispatch
def erf_vjp(op: Erf, ct, out, x):
    # d/dx erf(x) = 2 / sqrt(pi) * exp(-x^2)
    slope = mul(full_like(x, 2 / np.sqrt(np.pi)), u.Exp()(u.Negate()(mul(x, x))))
    return (mul(ct, slope),)
