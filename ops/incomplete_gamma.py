"""Igamma and Igammac: the regularized incomplete gamma functions P(a, x) and Q(a, x).

As in Cephes (and XLA's CHLO expansion): the power series of P where ``x <= 1`` or
``x <= a``, the continued fraction of Q elsewhere, each a ``While`` loop that runs
until every element has converged (at most 2000 terms). The complement is ``1 - ``
the other. Two regions differ:

- Near the transition, ``a >= 20`` and ``|x - a| <= 0.3 a``, Temme's uniform
  asymptotic expansion (as scipy's ``igam``): there the series and the fraction need
  ~9 sqrt(a) terms, so XLA's 2000-term cap leaves P(1e8, 1e8) at 0.08, not 0.5.
- Small a and ``x <= 1.1`` (Boost's region: ``a <= -0.4 / log x`` below x = 0.5,
  ``a <= 0.75 x`` above), where Q <~ 1/3 and as small as a: 1 - P cancelled (Q(0.001,
  0.3) was 5e-4 off in f32). Q is Gamma(a, x) = Gamma(a) - gamma(a, x) summed directly,
  with Gamma(1 + a) - 1 and x^a - 1 by expm1 (Boost's ``tgamma_small_upper_part``),
  and P = 1 - Q. Measured against mpmath: Q to ~9 ulp (f32) and ~12 ulp (f64).

Real floats; f16, bf16 and float8 through f32.

Derivatives: in x the closed form ``x^(a-1) e^-x / Gamma(a)``; in a, the loops
differentiated term by term (forward mode inside the loop, as Cephes' and XLA's
``igamma_grad_a``), and the small-a sum and Temme's expansion differentiated in
closed form.

>>> import numpy as np, hlodsl as hd
>>> a, x = hd.array(np.float64([1.0, 2.0])), hd.array(np.float64([1.0, 3.0]))
>>> Igamma()(a, x), Igammac()(a, x)
(hlodsl.Array[float64, (2,)]([0.63212056, 0.80085173]), hlodsl.Array[float64, (2,)]([0.36787944, 0.19914827]))
>>> a, x = hd.array(np.float32([1e-3, 1e-2])), hd.array(np.float32([0.3, 1.0]))
>>> Igammac()(a, x)  # 1 - P gave 0.00090629 and 0.00221598
hlodsl.Array[float32, (2,)]([0.00090584, 0.00221623])
"""

from __future__ import annotations

import math

import numpy as np

from hlodsl.arrays.array import Array

from ._special import SpecialBinary, add, c, div, eps, lt, mul, select, sub
from ._special_temme import TEMME
from .binary import And, Maximum, Or
from .compare import Compare
from .error_functions import Erfc
from .gamma_functions import Digamma, Lgamma, lgamma_1p, stirling_series
from .reduce import Reduce
from .unary import Abs, Exp, Expm1, Log, Log1p, Not, Sign, Sqrt
from .while_loop import While

__all__ = ["Igamma", "Igammac"]

_MAX_TERMS = 2000


def _any_above(values: Array, bound: float):
    """pred[]: some element of ``values`` exceeds ``bound`` (NaN does not)."""
    flat = Reduce(lambda m, v: Maximum()(m, v), tuple(range(values.ndim)))(
        select(Compare("EQ")(values, values), values, c(0, values)), _scalar(values, -np.inf))
    return Compare("GT")(flat, _scalar(values, bound))


def _scalar(like: Array, value) -> Array:
    from hlodsl.arrays.array import array

    return array(np.asarray(value, like.dtype.np_dtype))


def _series(a, x, active, with_da):
    """sum_n x^n / ((a+1)...(a+n)) and its a-derivative, where ``active``."""
    tol = eps(x)
    one, zero = c(1, x), c(0, x)
    term = select(active, one, zero)  # inactive elements start converged

    def cond(s):
        i, _, _, term, total, dterm, dtotal = s
        change = Abs()(div(term, total))
        if with_da:
            zero = c(0, total)
            change = Maximum()(change, Abs()(div(dterm, select(Compare("EQ")(dtotal, zero),
                                                               c(1, total), dtotal))))
        return And()(lt(i, _scalar_i(_MAX_TERMS)), _any_above(change, tol))

    def body(s):
        i, x, r, term, total, dterm, dtotal = s
        one = c(1, x)
        r = add(r, one)
        term = mul(term, div(x, r))
        dterm = sub(mul(dterm, div(x, r)), div(term, r))
        return add(i, _scalar_i(1)), x, r, term, add(total, term), dterm, add(dtotal, dterm)

    # The loop's computations see only the state: x rides along, unchanged.
    out = While(cond, body)(_scalar_i(0), x, a, term, one, zero, zero)
    return out[4], out[6]


def _scalar_i(value) -> Array:
    from hlodsl.arrays.array import array

    return array(np.int32(value))


def _continued_fraction(a, x, active, with_da):
    """Q(a, x) e^x x^-a Gamma(a) by Cephes' continued fraction, and its a-derivative."""
    tol = eps(x)
    one, zero = c(1, x), c(0, x)
    big_value = 2.0 ** 50 if x.dtype.np_dtype.itemsize == 4 else 2.0 ** 500
    y = sub(one, a)
    z = add(add(x, y), one)
    state = (_scalar_i(0), y, z, zero,
             one, x, add(x, one), mul(z, x),          # p(k-2), q(k-2), p(k-1), q(k-1)
             zero, zero, zero, sub(zero, x),          # their a-derivatives
             div(add(x, one), mul(z, x)), zero,       # ans, d ans / da
             select(active, one, zero),               # the last relative change
             x, active)                               # constant: the loop sees only its state

    def cond(s):
        return And()(lt(s[0], _scalar_i(_MAX_TERMS)), _any_above(s[14], tol))

    def body(s):
        i, y, z, k, p2, q2, p1, q1, dp2, dq2, dp1, dq1, ans, dans, last, x, active = s
        # Converged elements keep their answer: more terms only add rounding to it.
        going = lt(c(tol, x), last)
        one, zero, big = c(1, x), c(0, x), c(big_value, x)
        k, y, z = add(k, one), add(y, one), add(z, c(2, x))
        yc = mul(y, k)
        p = sub(mul(p1, z), mul(p2, yc))
        q = sub(mul(q1, z), mul(q2, yc))
        dp = add(sub(sub(mul(dp1, z), p1), mul(dp2, yc)), mul(p2, k))
        dq = add(sub(sub(mul(dq1, z), q1), mul(dq2, yc)), mul(q2, k))
        nonzero = Not()(Compare("EQ")(q, zero))
        safe_q = select(nonzero, q, one)
        r = div(p, safe_q)
        dr = div(sub(dp, mul(r, dq)), safe_q)
        change = select(nonzero, Abs()(div(sub(ans, r), r)), one)
        if with_da:
            change = Maximum()(change, select(nonzero, Abs()(div(sub(dans, dr), select(
                Compare("EQ")(dr, zero), one, dr))), one))
        update = And()(nonzero, going)
        ans, dans = select(update, r, ans), select(update, dr, dans)
        rescale = lt(big, Abs()(p))  # keep p and q (and their derivatives) finite
        scale = select(rescale, div(one, big), one)
        p2, q2, p1, q1 = (mul(v, scale) for v in (p1, q1, p, q))
        dp2, dq2, dp1, dq1 = (mul(v, scale) for v in (dp1, dq1, dp, dq))
        return (add(i, _scalar_i(1)), y, z, k, p2, q2, p1, q1, dp2, dq2, dp1, dq1, ans,
                dans, select(going, change, zero), x, active)

    out = While(cond, body)(*state)
    return out[12], out[13]



def _small_a_region(a, x):
    """Where Q is small in the series' region, so 1 - P would cancel: Boost's choice
    (``gamma_incomplete_imp``, Q below ~1/3): a <= -0.4 / log x for x < 0.5,
    a <= 0.75 x for 0.5 <= x <= 1.1 (where x > 1, in place of the continued fraction:
    its weight x^a e^-x / Gamma(a) loses ~lgamma(a) ulp as a -> 0)."""
    below_half = lt(x, c(0.5, x))
    bound = select(below_half, div(c(-0.4, x), Log()(select(below_half, x, c(0.25, x)))),
                   mul(c(0.75, x), x))
    return And()(Compare("LE")(x, c(1.1, x)), Compare("LE")(a, bound))


def _small_a_upper(a, x, psi_1p=None):
    """(Q(a, x), dQ/da or None) in the region of ``_small_a_region`` (Boost's
    ``tgamma_small_upper_part``); ``psi_1p`` = psi(1 + a), for the derivative.

    Gamma(a, x) = Gamma(a) - x^a sum_n (-x)^n / (n! (a + n)); with g = Gamma(1 + a) - 1
    and p = x^a - 1, both O(a) and computed by expm1 (no cancellation),
    a Gamma(a, x) = (g - p) + a x^a S, S = sum_{n>=1} (-1)^(n+1) x^n / (n! (a + n)), and
    Q = a Gamma(a, x) / Gamma(1 + a). The alternating S is cut where its first dropped
    term (at most 1.1^n / (n + 1)! of the first, x <= 1.1) is below eps / 8.
    Differentiated: dQ/da = (1 - Q) psi(1 + a) - x^a (log x - S (1 + a log x) - a S')
    / Gamma(1 + a), no 1/a in it (the series' dP/da divides by a).
    """
    g = Expm1()(lgamma_1p(a))
    log_x = Log()(x)
    p = Expm1()(mul(a, log_x))
    terms = 1
    while 1.1 ** terms / math.factorial(terms + 1) >= eps(x) / 8:
        terms += 1
    total, dtotal = c(0, x), c(0, x)
    for n in range(terms, 0, -1):  # Horner, smallest terms first
        a_n = add(a, c(n, x))
        coefficient = div(c(1 / math.factorial(n), x), a_n)
        total = sub(coefficient, mul(x, total))
        dtotal = sub(sub(c(0, x), div(coefficient, a_n)), mul(x, dtotal))
    series, dseries = mul(x, total), mul(x, dtotal)
    one = c(1, x)
    q = div(add(sub(g, p), mul(mul(a, add(one, p)), series)), add(one, g))
    if psi_1p is None:
        return q, None
    inner = sub(sub(log_x, mul(series, add(one, mul(a, log_x)))), mul(a, dseries))
    dq = sub(mul(sub(one, q), psi_1p), mul(div(add(one, p), add(one, g)), inner))
    return q, dq


def _log1p(d):
    """log(1 + d) to a few ulp for d > -1: XLA's log1p is ~100 ulp off for negative d."""
    negative = lt(d, c(0, d))
    flipped = sub(c(0, d), Log1p()(div(sub(c(0, d), d), add(c(1, d), d))))
    return select(negative, flipped, Log1p()(select(negative, c(0, d), d)))


def _log_weight(a, x):
    """log(x^a e^-x / Gamma(a)) for a, x > 0.

    a log x - x - lgamma(a) loses ~a log x ulp to cancellation; from a = 10 on, with
    Stirling's lgamma, it is a log1p((x - a) / a) + (a - x) + log(a / 2 pi) / 2 - the
    Stirling remainder, whose terms cancel only as much as x - a is large.
    """
    direct = sub(sub(mul(a, Log()(x)), x), Lgamma()(a))
    big = Compare("GE")(a, c(10, a))
    a10 = select(big, a, c(10, a))
    remainder = stirling_series(a10)
    d = div(sub(x, a10), a10)
    # Below x = a / 2, 1 + d would cancel the rounding of d: log(x / a) is exact to an ulp.
    log_ratio = select(lt(d, c(-0.5, d)), Log()(div(x, a10)), _log1p(d))
    stirling = add(add(mul(a10, log_ratio), sub(a10, x)),
                   sub(mul(c(0.5, a), Log()(mul(a10, c(1 / (2 * np.pi), a)))), remainder))
    return select(big, stirling, direct)


#: Temme's expansion is used for a >= _TEMME_A and |x - a| <= _TEMME_SIGMA a (|eta| <= 0.34).
_TEMME_A, _TEMME_SIGMA = 20.0, 0.3


def _log1pmx(s):
    """log(1 + s) - s for |s| <= 0.3 without cancellation: log(1 + s) = 2 atanh(t),
    t = s / (2 + s), so it is -2 t^2 / (1 - t) + 2 t^3 sum_j t^(2j - 2) / (2j + 1)."""
    t = div(s, add(c(2, s), s))
    t2 = mul(t, t)
    series = c(0, s)
    for j in range(12 if s.dtype.np_dtype.itemsize == 8 else 6, 0, -1):  # t^2 <= 0.032
        series = add(mul(series, t2), c(1 / (2 * j + 1), s))
    return add(div(mul(c(-2, s), t2), sub(c(1, s), t)), mul(mul(c(2, s), mul(t2, t)), series))


def _temme_rows(x: Array):
    """TEMME, cut for x's precision (as the f64 table is cut for f64)."""
    bound = eps(x) * 1e-2 / 3
    rows = []
    for k, row in enumerate(TEMME):
        kept = [n for n, d in enumerate(row) if abs(d) * 0.34 ** n * _TEMME_A ** -k > bound]
        if not kept:
            break
        rows.append(row[:max(kept) + 1])
    return rows


def _horner(coefficients, t):
    out = c(0, t)
    for v in reversed(coefficients):
        out = add(mul(out, t), c(v, t) if isinstance(v, float) else v)
    return out


def _temme(a, x, with_da):
    """(P, Q, dP/da or None) by Temme's expansion, for a >= 20 and |x - a| <= 0.3 a.

    Q = erfc(eta sqrt(a/2)) / 2 + R, P = erfc(-eta sqrt(a/2)) / 2 - R, with
    R = exp(a L) / sqrt(2 pi a) sum_k c_k(eta) a^-k, L = log1p(s) - s = -eta^2 / 2,
    s = (x - a) / a (ops/_special_temme.py).
    """
    s = div(sub(x, a), a)
    log1pmx = _log1pmx(s)
    eta = mul(Sign()(s), Sqrt()(Abs()(mul(c(-2, a), log1pmx))))
    rows = _temme_rows(a)
    ck = [_horner(row, eta) for row in rows]
    inv_a = div(c(1, a), a)
    total = _horner(ck, inv_a)
    root = Sqrt()(mul(c(0.5, a), a))  # sqrt(a / 2)
    z = mul(eta, root)
    gauss = Exp()(mul(a, log1pmx))  # exp(-a eta^2 / 2)
    weight = div(gauss, Sqrt()(mul(c(2 * np.pi, a), a)))
    r = mul(weight, total)
    p = sub(mul(c(0.5, a), Erfc()(sub(c(0, a), z))), r)
    q = add(mul(c(0.5, a), Erfc()(z)), r)
    if not with_da:
        return p, q, None
    # d eta / da = -(s / eta) / a (s / eta -> 1 at s = 0); d(a L)/da = log1p(s).
    ratio = select(Compare("EQ")(eta, c(0, a)), c(1, a), div(s, eta))
    deta = sub(c(0, a), div(ratio, a))
    dz = sub(mul(div(ratio, a), root), div(eta, mul(c(4, a), root)))  # z' for z = -eta root
    dck = [_horner([k * v for k, v in enumerate(row)][1:], eta) for row in rows]
    dtotal = sub(mul(deta, _horner(dck, inv_a)),
                 mul(inv_a, _horner([mul(c(k, a), v) for k, v in enumerate(ck)], inv_a)))
    dweight = mul(weight, sub(Log1p()(s), div(c(0.5, a), a)))
    derfc = mul(c(-1 / np.sqrt(np.pi), a), mul(gauss, dz))
    dp = sub(derfc, add(mul(dweight, total), mul(weight, dtotal)))
    return p, q, dp


def incomplete_gamma(a: Array, x: Array, with_da: bool = False):
    """(P(a, x), Q(a, x), dP/da or None) for f32 or f64 operands of one shape."""
    one, zero = c(1, x), c(0, x)
    valid = And()(Compare("GT")(x, zero), Compare("GT")(a, zero))
    use_temme = And()(And()(Compare("GE")(a, c(_TEMME_A, a)), Compare("LE")(
        Abs()(sub(x, a)), mul(c(_TEMME_SIGMA, a), a))), And()(valid, lt(a, c(np.inf, a))))
    # Small a, x <= 1.1: Q by _small_a_upper (1 - P would cancel), P = 1 - Q.
    use_small = And()(_small_a_region(a, x), valid)
    use_fraction = And()(And()(Compare("GT")(x, one), Compare("GT")(x, a)),
                         And()(valid, Not()(Or()(use_temme, use_small))))
    use_series = And()(Not()(Or()(use_fraction, use_temme)), valid)
    log_x = Log()(select(valid, x, one))
    a_ = select(valid, a, one)
    ax = _log_weight(a_, select(valid, x, one))
    total, dtotal = _series(a_, select(valid, x, one), And()(use_series, Not()(use_small)),
                            with_da)
    fraction, dfraction = _continued_fraction(a_, select(valid, x, c(2, x)), use_fraction,
                                              with_da)
    weight = Exp()(ax)
    p_series = div(mul(total, weight), a_)
    q_fraction = mul(fraction, weight)
    near = c(_TEMME_A, a)
    p_temme, q_temme, dp_temme = _temme(select(use_temme, a, near), select(use_temme, x, near),
                                        with_da)
    half = c(0.5, x)
    psi_1p = Digamma()(add(a_, one)) if with_da else None
    q_small, dq_small = _small_a_upper(select(use_small, a, half), select(use_small, x, half),
                                       select(use_small, psi_1p, half) if with_da else None)
    # P near 1 there: 1 - Q is good to an ulp, the series' weight to a few (lgamma(a)).
    p = select(use_temme, p_temme, select(use_fraction, sub(one, q_fraction),
                                          select(use_small, sub(one, q_small), p_series)))
    q = select(use_temme, q_temme, select(use_fraction, q_fraction,
                                          select(use_small, q_small, sub(one, p_series))))
    # The edges, as scipy: x = 0 -> P = 0; a = 0 < x -> P = 1; x = inf -> P = 1;
    # a = inf -> P = 0; both inf, negative or NaN operands -> NaN.
    p_edge = select(Compare("EQ")(x, zero), zero, one)
    nan = c(np.nan, x)
    bad = Or()(Or()(lt(x, zero), lt(a, zero)), Or()(Compare("NE")(x, x), Compare("NE")(a, a)))
    edge = Not()(valid)
    infinite_x = Compare("EQ")(x, c(np.inf, x))
    p = select(bad, nan, select(edge, p_edge, select(infinite_x, one, p)))
    q = select(bad, nan, select(edge, sub(one, p_edge), select(infinite_x, zero, q)))
    infinite_a = Compare("EQ")(a, c(np.inf, x))  # P(inf, x) = 0 for finite x
    p = select(infinite_a, select(infinite_x, nan, zero), p)
    q = select(infinite_a, select(infinite_x, nan, one), q)
    if not with_da:
        return p, q, None
    dlog = sub(log_x, Digamma()(a_))
    # Below a = 1, log x - psi(a + 1) for dlog - 1/a: psi(a) ~ -1/a cancels 1/a.
    dlog_1p = select(lt(a_, one), sub(log_x, psi_1p), sub(dlog, div(one, a_)))
    dp_series = div(mul(weight, add(dtotal, mul(total, dlog_1p))), a_)
    dp_series = select(use_small, sub(zero, dq_small), dp_series)
    dq_fraction = mul(weight, add(dfraction, mul(fraction, dlog)))
    dp = select(use_temme, dp_temme, select(use_fraction, sub(zero, dq_fraction), dp_series))
    dp = select(bad, nan, select(Or()(edge, infinite_x), zero, dp))
    return p, q, dp


class Igamma(SpecialBinary, opcode="igamma"):
    """P(a, x): the regularized lower incomplete gamma function (operands a, x)."""

    @staticmethod
    def numpy(a, x):
        from scipy.special import gammainc
        return gammainc(a, x)

    def compute(self, a, x):
        return incomplete_gamma(a, x)[0]


class Igammac(SpecialBinary, opcode="igammac"):
    """Q(a, x) = 1 - P(a, x): the regularized upper incomplete gamma function."""

    @staticmethod
    def numpy(a, x):
        from scipy.special import gammaincc
        return gammaincc(a, x)

    def compute(self, a, x):
        return incomplete_gamma(a, x)[1]


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule

from ._special import widened


def _dp_dx(a, x):
    """x^(a-1) e^-x / Gamma(a) (at x = 0: 0, 1 or inf as a > 1, = 1, < 1)."""
    at_zero = Exp()(sub(sub(mul(sub(a, c(1, x)), Log()(x)), x), Lgamma()(a)))
    return select(Compare("EQ")(x, c(0, x)), at_zero, div(Exp()(_log_weight(a, x)), x))


def _dp_da(a, x):
    return incomplete_gamma(a, x, with_da=True)[2]


@vjp_rule.dispatch
def igamma_vjp(op: Igamma, ct, out, a, x):
    return mul(ct, widened(_dp_da, a, x)), mul(ct, widened(_dp_dx, a, x))


@vjp_rule.dispatch
def igammac_vjp(op: Igammac, ct, out, a, x):
    minus = sub(c(0, ct), ct)
    return mul(minus, widened(_dp_da, a, x)), mul(minus, widened(_dp_dx, a, x))
