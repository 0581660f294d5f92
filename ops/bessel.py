"""BesselI0e and BesselI1e: exponentially scaled modified Bessel functions of order 0 and 1.

``i0e(x) = exp(-|x|) I0(x)`` and ``i1e(x) = exp(-|x|) I1(x)`` (CHLO ops; HLO has no
opcode): Chebyshev series on [0, 8] (i1e: [0, 2] and [2, 8]) and in ``8 / |x|``
beyond (Cephes' split, with coefficients fitted for hlodsl,
ops/_special_coefficients.py). Real floats; f16, bf16 and float8 through f32. i0e is
even, i1e odd.

>>> import numpy as np, hlodsl as hd
>>> BesselI0e()(hd.array(np.float64([0.0, 1.0, 100.0])))
hlodsl.Array[float64, (3,)]([1.        , 0.46575961, 0.03994438])
>>> BesselI1e()(hd.array(np.float64([-1.0, 0.0])))
hlodsl.Array[float64, (2,)]([-0.20791042,  0.        ])
"""

from __future__ import annotations

from . import _special_coefficients as K
from ._special import SpecialUnary, c, chebyshev, div, lt, mul, select, sub
from .compare import Compare
from .unary import Abs, Rsqrt, Sign

__all__ = ["BesselI0e", "BesselI1e"]


def _large(a, coefficients):
    """The series in u = 8 / a, for a >= 8 (a = inf gives u = 0: the limit, times 0)."""
    safe = select(lt(a, c(8, a)), c(8, a), a)
    return mul(chebyshev(div(c(8, a), safe), coefficients, 0.0, 1.0), Rsqrt()(safe))


class BesselI0e(SpecialUnary, opcode="bessel-i0e"):
    """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0."""

    @staticmethod
    def numpy(x):
        from scipy.special import i0e
        return i0e(x)

    def compute(self, x):
        a = Abs()(x)
        return select(lt(a, c(8, x)), chebyshev(a, K.I0E_SMALL, 0.0, 8.0), _large(a, K.I0E_LARGE))


class BesselI1e(SpecialUnary, opcode="bessel-i1e"):
    """exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1."""

    @staticmethod
    def numpy(x):
        from scipy.special import i1e
        return i1e(x)

    def compute(self, x):
        a = Abs()(x)
        small = select(lt(a, c(2, x)), mul(a, chebyshev(a, K.I1E_SMALL, 0.0, 2.0)),
                       chebyshev(a, K.I1E_MID, 2.0, 8.0))
        return mul(Sign()(x), select(lt(a, c(8, x)), small, _large(a, K.I1E_LARGE)))


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule


@vjp_rule.dispatch
def bessel_i0e_vjp(op: BesselI0e, ct, out, x):
    # i0e' = i1e - sign(x) i0e
    return (mul(ct, sub(BesselI1e()(x), mul(Sign()(x), out))),)


@vjp_rule.dispatch
def bessel_i1e_vjp(op: BesselI1e, ct, out, x):
    # i1e' = i0e - i1e (sign(x) + 1/x); at x = 0 the limit 1/2
    zero = Compare("EQ")(x, c(0, x))
    safe = select(zero, c(1, x), x)
    slope = sub(BesselI0e()(x), mul(out, add_sign_inv(x, safe)))
    return (mul(ct, select(zero, c(0.5, x), slope)),)


def add_sign_inv(x, safe):
    from ._special import add
    return add(Sign()(x), div(c(1, x), safe))
