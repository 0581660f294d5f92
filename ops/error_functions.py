"""Erfc and ErfInv: the complementary and inverse error functions, as composites.

HLO has ``erf`` but neither of these (they are CHLO ops, which XLA expands), so
each stages as an expression of ops every backend has:

- ``erfc(x)``: ``1 - erf(x)`` on [-0.5, 0.5], where no digits cancel (erf as a short
  Chebyshev series in x^2); above, ``t exp(-x^2)
  S(t)`` for ``t = 2 / (2 + x)``, with S a Chebyshev series (ops/_special_coefficients.py)
  and ``exp(-x^2)`` taken from an exact split of ``x^2``, so the tail keeps a few
  ulp of relative accuracy down to underflow; ``2 - erfc(-x)`` for negative x.
- ``erf_inv(y)``: Chebyshev series in ``w = -log((1 - y)(1 + y))`` (as Giles, "Approximating
  the erfinv function", 2011: in w for the centre, in sqrt(w) for the tails).

>>> import numpy as np, hlodsl as hd
>>> Erfc()(hd.array(np.float64([0.0, 1.0, 10.0])))
hlodsl.Array[float64, (3,)]([1.00000000e+00, 1.57299207e-01, 2.08848758e-45])
>>> ErfInv()(hd.array(np.float32([0.0, 0.5, -1.0])))
hlodsl.Array[float32, (3,)]([0.       , 0.4769363,      -inf])
"""

from __future__ import annotations

import math

import numpy as np

from hlodsl.arrays.dtypes import uint32, uint64

from . import _special_coefficients as K
from ._special import SpecialUnary, add, c, chebyshev, div, lt, mul, select, sub
from .binary import And
from .bitcast_convert import BitcastConvert
from .compare import Compare
from .unary import Abs, Exp, Expm1, Log1p, Sign, Sqrt

__all__ = ["ErfInv", "Erfc"]


#: Mantissa masks keeping the high bits of a float: 12 significant bits of a float32, 26
#: of a float64, so hi^2 is exact in the type.
_HIGH_BITS = {"float32": (uint32, 0xFFFFF000), "float64": (uint64, 0xFFFFFFFFF8000000)}


def _exp_minus_square(x):
    """exp(-x^2) for x >= 0, with x^2 split exactly: x = hi + lo, hi^2 exact."""
    # NOTE: hi is x with its low mantissa bits cleared, in integer space. A round trip
    # through a narrower float (f32 -> bf16 -> f32) is no split on XLA:GPU: with excess
    # precision allowed (its default) it removes such convert pairs, leaving hi = x,
    # lo = 0 and exp(-x^2) with x^2's rounding error (18 ulp at x = 8.1 in f32, 253 at
    # x = 25.8 in f64).
    bits, mask = _HIGH_BITS[x.dtype.__name__]
    as_bits = BitcastConvert(bits)(x)
    hi = BitcastConvert(x.dtype)(And()(as_bits, c(mask, as_bits)))
    lo = sub(x, hi)
    big = Exp()(mul(hi, sub(c(0, x), hi)))
    # e + e * expm1(d), not exp(-hi^2) * exp(d): XLA rewrites a product of exps into
    # the exp of the sum, which rounds the split away.
    return add(big, mul(big, Expm1()(mul(lo, sub(c(0, x), add(x, hi))))))


class Erfc(SpecialUnary, opcode="erfc"):
    """1 - erf(x), accurate where erf(x) is near 1 (real floats)."""

    @staticmethod
    def numpy(x):
        from scipy.special import erfc
        return erfc(x)

    def compute(self, x):
        a = Abs()(x)
        # Past 30 erfc underflows in f64; clamping keeps exp and the split finite.
        a = select(lt(c(30, x), a), c(30, x), a)  # NaN stays NaN
        t = div(c(2, x), add(c(2, x), a))
        tail = mul(mul(t, _exp_minus_square(a)), chebyshev(t, K.ERFC, 0.0, 0.8))
        tail = select(lt(x, c(0, x)), sub(c(2, x), tail), tail)
        # 1 - x S(x^2): a short series (XLA's own f64 erf costs more than all of erfc).
        near = sub(c(1, x), mul(x, chebyshev(mul(x, x), K.ERF_SMALL, 0.0, 0.25)))
        return select(lt(x, c(0.5, x)), select(lt(x, c(-0.5, x)), tail, near), tail)


class ErfInv(SpecialUnary, opcode="erf-inv"):
    """The inverse of erf on [-1, 1] (+-inf at +-1, NaN outside)."""

    @staticmethod
    def numpy(x):
        from scipy.special import erfinv
        return erfinv(x)

    def compute(self, y):
        a = Abs()(y)
        # w = log1p(a^2 / ((1 - a)(1 + a))): XLA's log1p of a negative argument is off
        # by ~100 ulp, of a positive one by ~1; 1 - a is exact where it matters (a > 0.5).
        w = Log1p()(div(mul(a, a), mul(sub(c(1, y), a), add(c(1, y), a))))
        s = Sqrt()(w)
        centre = mul(a, chebyshev(w, K.ERFINV_W, 0.0, 6.25))
        tail = select(lt(s, c(4, y)), chebyshev(s, K.ERFINV_S1, 2.5, 4.0),
                      chebyshev(s, K.ERFINV_S2, 4.0, 6.5))
        out = select(lt(w, c(6.25, y)), centre, tail)
        out = select(Compare("EQ")(a, c(1, y)), c(np.inf, y), out)
        out = select(Compare("GT")(a, c(1, y)), c(np.nan, y), out)
        return mul(Sign()(y), out)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule


@vjp_rule.dispatch
def erfc_vjp(op: Erfc, ct, out, x):
    # d/dx erfc(x) = -2 / sqrt(pi) exp(-x^2)
    return (mul(ct, mul(c(-2 / math.sqrt(math.pi), x), Exp()(sub(c(0, x), mul(x, x))))),)


@vjp_rule.dispatch
def erf_inv_vjp(op: ErfInv, ct, out, y):
    # d/dy erfinv(y) = sqrt(pi) / 2 exp(erfinv(y)^2)
    return (mul(ct, mul(c(math.sqrt(math.pi) / 2, y), Exp()(mul(out, out)))),)
