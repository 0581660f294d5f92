"""Lgamma and Digamma: log|Gamma(x)| and its derivative, as composites.

HLO has no opcode for them (they are CHLO ops, which XLA expands); each stages
as other ops, for real floats (f16, bf16 and float8 through f32):

- ``lgamma``: Stirling's series from 8 on; below, the recurrence to [0.5, 3) and a
  Chebyshev series there with the zeros at 1 and 2 factored out; the reflection
  ``log(pi / |sin(pi x)|) - lgamma(1 - x)`` below 0.5. Poles (0, -1, -2, ...) give
  +inf, as scipy's ``gammaln``.
- ``digamma``: the asymptotic series at ``x + 10`` and the recurrence
  ``psi(x) = psi(x + 10) - sum 1/(x + k)`` below 10; reflection
  ``psi(1 - x) - pi / tan(pi x)`` below 0.5. Poles give NaN (scipy: NaN, -inf at 0).

lgamma is accurate to a few ulp, its zeros at 1 and 2 included (the zeros of the
reflected branch below 0 are a few ulp of the terms that cancel); digamma to a few
ulp away from its zero at 1.4616..., where the error is a few ulp of the terms.

>>> import numpy as np, hlodsl as hd
>>> Lgamma()(hd.array(np.float64([0.5, 3.0, 10.0])))
hlodsl.Array[float64, (3,)]([ 0.57236494,  0.69314718, 12.80182748])
>>> Digamma()(hd.array(np.float64([1.0, 0.5])))
hlodsl.Array[float64, (2,)]([-0.57721566, -1.96351003])
"""

from __future__ import annotations

import math

from hlodsl.arrays.array import Array

from . import _special_coefficients as K
from ._special import PI, SpecialUnary, add, c, chebyshev, div, lt, mul, reduce_half, select, sub
from .compare import Compare
from .unary import Abs, IsFinite, Log, Sine, Tan

__all__ = ["Digamma", "Lgamma"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
#: B_2k / (2k (2k - 1)) for k = 1..7: lgamma(z) - Stirling's formula ~ sum_k c_k / z^(2k-1).
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)

#: B_2k / (2k) for k = 1..7: psi(w) ~ log(w) - 1/(2w) - sum_k B_2k / (2k w^2k).
_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def stirling_series(w: Array) -> Array:
    """``sum_k c_k / w^(2k-1)`` over ``_STIRLING``: lgamma(w) minus Stirling's formula."""
    inv = div(c(1, w), w)
    inv2, series, power = mul(inv, inv), c(0, w), inv
    for coefficient in _STIRLING:
        series = add(series, mul(c(coefficient, w), power))
        power = mul(power, inv2)
    return series


def _is_pole(x):
    """x is 0 or a negative integer (where Gamma has its poles)."""
    from .binary import And

    return And()(Compare("LE")(x, c(0, x)), Compare("EQ")(reduce_half(x), c(0, x)))


def _lgamma_from_half(z):
    """lgamma(z) for z >= 0.5.

    From 8 on, Stirling's series. Below, the recurrence down to u in [0.5, 3)
    (``lgamma(z) = lgamma(u) + log(u (u+1) ... (z-1))``, a sum of positive terms), and
    there ``(u - 1)(u - 2) S(u)`` with a Chebyshev series S: the zeros at 1 and 2 are
    exact factors, so the result keeps its relative accuracy next to them (Lanczos'
    sum loses ~10 ulp to cancellation there).
    """
    big = Compare("GE")(z, c(8, z))
    w = select(big, z, c(8, z))
    series = stirling_series(w)
    stirling = add(sub(mul(sub(w, c(0.5, z)), Log()(w)), w), add(c(_LOG_SQRT_2PI, z), series))
    stirling = select(IsFinite()(z), stirling, z)  # inf * log(inf) - inf would be NaN
    u = select(big, c(2, z), z)
    product = c(1, z)
    for _ in range(5):  # u < 8: at most five exact steps down to [0.5, 3)
        down = Compare("GE")(u, c(3, z))
        u = select(down, sub(u, c(1, z)), u)
        product = select(down, mul(product, u), product)
    near = add(lgamma_1p(sub(u, c(1, z))), Log()(product))
    return select(big, stirling, near)


def lgamma_1p(d):
    """lgamma(1 + d) for 1 + d in [0.5, 3): ``d (d - 1) S(1 + d)``, S a Chebyshev series.

    The zeros at 1 and 2 are exact factors, so the result keeps its relative accuracy
    next to them; and d itself is a factor, so lgamma(1 + d) for tiny d is not lost to
    rounding 1 + d (that moves the smooth S, ~0.5 on [1, 3], by an ulp only).
    """
    return mul(mul(d, sub(d, c(1, d))), chebyshev(add(c(1, d), d), K.LGAMMA, 0.5, 3.0))


class Lgamma(SpecialUnary, opcode="lgamma"):
    """log|Gamma(x)| for real x (+inf at the poles 0, -1, -2, ...)."""

    @staticmethod
    def numpy(x):
        from scipy.special import gammaln
        return gammaln(x)

    def compute(self, x):
        reflect = lt(x, c(0.5, x))
        z = select(reflect, sub(c(1, x), x), x)
        lg = _lgamma_from_half(z)
        # log(pi / |sin(pi x)|), with sin of the exactly reduced argument.
        sin = Abs()(Sine()(mul(c(PI, x), reduce_half(x))))
        reflected = sub(sub(c(math.log(PI), x), Log()(sin)), lg)
        reflected = select(IsFinite()(x), reflected, Abs()(x))  # -inf -> +inf, NaN stays
        return select(reflect, reflected, lg)


def _digamma_from_half(z):
    """psi(z) for z >= 0.5: the asymptotic series at w >= 10, by the recurrence."""
    small = lt(z, c(10, z))
    w = select(small, add(z, c(10, z)), z)
    inv2 = div(c(1, z), mul(w, w))
    series, power = c(0, z), inv2
    for coefficient in _ASYMPTOTIC:
        series = add(series, mul(c(coefficient, z), power))
        power = mul(power, inv2)
    psi_w = sub(sub(Log()(w), div(c(0.5, z), w)), series)
    shift = c(0, z)
    for k in range(9, -1, -1):  # smallest terms first
        shift = add(shift, div(c(1, z), add(z, c(k, z))))
    return select(small, sub(psi_w, shift), psi_w)


class Digamma(SpecialUnary, opcode="digamma"):
    """psi(x) = d/dx log Gamma(x) for real x (NaN at the poles 0, -1, -2, ...)."""

    @staticmethod
    def numpy(x):
        import numpy as np
        from scipy.special import psi

        x = np.asarray(x)
        return np.where((x <= 0) & (x == np.round(x)), np.nan, psi(x)).astype(x.dtype)

    def compute(self, x):
        reflect = lt(x, c(0.5, x))
        z = select(reflect, sub(c(1, x), x), x)
        psi = _digamma_from_half(z)
        reflected = sub(psi, div(c(PI, x), Tan()(mul(c(PI, x), reduce_half(x)))))
        out = select(reflect, reflected, psi)
        return select(_is_pole(x), c(float("nan"), x), out)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule


@vjp_rule.dispatch
def lgamma_vjp(op: Lgamma, ct, out, x):
    return (mul(ct, Digamma()(x)),)


def _trigamma(x):
    """psi'(x): sum 1/(x+k)^2 below 10, the asymptotic series above; reflection below 0.5."""
    reflect = lt(x, c(0.5, x))
    z = select(reflect, sub(c(1, x), x), x)
    small = lt(z, c(10, z))
    w = select(small, add(z, c(10, z)), z)
    inv = div(c(1, z), w)
    inv2 = mul(inv, inv)
    # psi'(w) ~ 1/w + 1/(2w^2) + sum B_2k / w^(2k+1)
    bernoulli = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
    series, power = c(0, z), mul(inv2, inv)
    for coefficient in bernoulli:
        series = add(series, mul(c(coefficient, z), power))
        power = mul(power, inv2)
    tri_w = add(add(inv, mul(c(0.5, z), inv2)), series)
    shift = c(0, z)
    for k in range(9, -1, -1):
        d = add(z, c(k, z))
        shift = add(shift, div(c(1, z), mul(d, d)))
    tri = select(small, add(tri_w, shift), tri_w)
    # psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x)
    sin = Sine()(mul(c(PI, x), reduce_half(x)))
    reflected = sub(div(c(PI * PI, x), mul(sin, sin)), tri)
    return select(reflect, reflected, tri)


@vjp_rule.dispatch
def digamma_vjp(op: Digamma, ct, out, x):
    return (mul(ct, _trigamma(x)),)

