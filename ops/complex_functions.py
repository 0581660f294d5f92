"""Complex elementary functions, written with real ops on the real and imaginary parts.

XLA:CPU has no complex sinh, cosh, asin, acos, asinh, acosh or atanh, and its
complex exp, log, sqrt, tanh, sin, cos and tan return NaN (or a wrong sign of
zero) at some infinite, NaN or signed-zero inputs where C99 Annex G, and the
array API standard that copies it, fix the value. These functions compute each
result from the parts: W. Kahan's formulas ("Branch cuts for complex elementary
functions", 1987) for the inverse functions, so branch cuts follow the sign of
a zero part and nothing cancels near the branch points, and then one select per
row of the standard's special-value table. They are plain functions, not ops:
``ops.Sinh`` ... ``ops.Atanh`` expand to them for complex operands, and
``hlodsl.stdlib`` calls the rest.

Every function takes a complex64 or complex128 array and returns one of its type.

>>> import numpy as np, hlodsl as hd
>>> exp(hd.array(np.complex128([complex(-np.inf, np.nan)])))
hlodsl.Array[complex128, (1,)]([0.+0.j])
>>> asin(hd.array(np.complex128([complex(2, 0.0), complex(2, -0.0)])))  # the cut's two sides
hlodsl.Array[complex128, (2,)]([1.57079633+1.3169579j, 1.57079633-1.3169579j])
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlodsl.arrays.dtypes import element_type
from hlodsl.ir.structural import Constant

from ._bits import exact_negate
from .binary import Add, And, Atan2, Divide, Maximum, Minimum, Multiply, Or, Subtract
from .bitcast_convert import BitcastConvert
from .broadcast import Broadcast
from .compare import Compare, Select
from .complex_parts import Complex, Imag, Real
from .special_functions import COMPLEX_EXPANSIONS, Asinh, Cosh, Sinh, far_from_zero, half_exp_abs
from .unary import Abs, Cosine, Exp, Expm1, IsFinite, Log, Log1p, Negate, Not, Sine, Sqrt, Tan

__all__ = ["exp", "expm1", "log", "log1p", "sqrt", "sinh", "cosh", "tanh", "sin", "cos", "tan",
           "asinh", "asin", "acos", "acosh", "atanh", "atan"]

_add, _sub, _mul, _div, _sel = Add(), Subtract(), Multiply(), Divide(), Select()
_and, _or, _abs, _neg = And(), Or(), Abs(), Negate()
_eq, _lt, _gt, _ge = (Compare(d) for d in ("EQ", "LT", "GT", "GE"))


# -- real helpers --------------------------------------------------------------------------

def _k(value, like):
    """``value`` as an array of ``like``'s (real) type and shape."""
    scalar = Constant(np.asarray(value, like.dtype.np_dtype))()
    return Broadcast(like.shape)(scalar) if like.shape else scalar


def _finfo(x):
    return ml_dtypes.finfo(x.dtype.np_dtype)


def _isnan(x):
    return Compare("NE")(x, x)


def _isinf(x):
    return _eq(_abs(x), _k(np.inf, x))


def _finite(x):
    return IsFinite()(x)


def _signbit(x):
    """pred: the sign bit of x is set (true for -0.0, unlike ``x < 0``)."""
    bits = BitcastConvert(element_type(np.dtype(f"i{x.dtype.np_dtype.itemsize}")))(x)
    return _lt(bits, _k(0, bits))


def _flip(x, negative):
    """-x where ``negative``, else x."""
    return _sel(negative, _neg(x), x)


def _copysign(x, y):
    return _flip(_abs(x), _signbit(y))


def _hypot(a, b):
    """sqrt(a^2 + b^2) without overflow; infinite if either part is (even beside a NaN)."""
    a, b = _abs(a), _abs(b)
    big, small = Maximum()(a, b), Minimum()(a, b)
    ratio = _div(small, _sel(_eq(big, _k(0, big)), _k(1, big), big))
    out = _mul(big, Sqrt()(_add(_k(1, big), _mul(ratio, ratio))))
    return _sel(_or(_isinf(a), _isinf(b)), _k(np.inf, a), out)


def _real_asinh(x):
    return Asinh()(x)


def _real_sinh_cosh(x):
    return Sinh()(x), Cosh()(x)


def _sinh_cosh_times(x, sh, ch, f, g):
    """(sinh(x) f, cosh(x) g) for |f|, |g| <= 1, given ``sh, ch = _real_sinh_cosh(x)``:
    finite wherever the products are, where sinh(x) and cosh(x) overflow first (beyond
    |x| = 710.47 in f64, 89.42 in f32)."""
    from .unary import Sign

    far = far_from_zero(x)
    return (_sel(far, half_exp_abs(x, _mul(Sign()(x), f)), _mul(sh, f)),
            _sel(far, half_exp_abs(x, g), _mul(ch, g)))


def _parts(z):
    return Real()(z), Imag()(z)


# -- exp, log, sqrt ------------------------------------------------------------------------

def _exp_parts(x, y):
    # exp(x/2)^2 instead of exp(x): finite wherever exp(x) * cos(y) is.
    half = Exp()(_mul(x, _k(0.5, x)))
    re = _mul(_mul(half, Cosine()(y)), half)
    im = _mul(_mul(half, Sine()(y)), half)
    zero_y = _eq(y, _k(0, y))  # exp(x +- 0i) = exp(x) +- 0i, for infinite and NaN x too
    re, im = _sel(zero_y, Exp()(x), re), _sel(zero_y, y, im)
    odd_y = Not()(_finite(y))  # y infinite or NaN: +-0 (x = -inf), inf + NaN i (x = +inf)
    low, high = _and(odd_y, _eq(x, _k(-np.inf, x))), _and(odd_y, _eq(x, _k(np.inf, x)))
    re = _sel(low, _k(0, x), _sel(high, _k(np.inf, x), re))
    im = _sel(low, _sel(_isnan(y), _k(0, y), _copysign(_k(0, y), y)),
              _sel(high, _k(np.nan, y), im))
    return re, im


def exp(z):
    """e ** z, with C99's values at infinite and NaN parts (``exp(-inf + nan j) = 0``)."""
    return Complex()(*_exp_parts(*_parts(z)))


def expm1(z):
    """exp(z) - 1, accurate near 0: ``expm1(x) cos(y) - 2 sin(y/2)^2`` for the real part."""
    x, y = _parts(z)
    ex, ey = _exp_parts(x, y)
    s = Sine()(_mul(y, _k(0.5, y)))
    core = _sub(_mul(Expm1()(x), Cosine()(y)), _mul(_k(2, s), _mul(s, s)))
    special = Not()(_and(_finite(x), _finite(y)))
    re = _sel(special, _sub(ex, _k(1, ex)), core)
    # expm1(+-0 + 0j) = +0 + 0j (the standard; the core gives -0 at x = -0)
    return Complex()(_sel(_and(_eq(x, _k(0, x)), _eq(y, _k(0, y))), _k(0, x), re), ey)


def _near_one(h):
    # Near |z| = 1, log|z| = log1p(|z|^2 - 1) / 2 keeps the digits log(h) loses; from
    # 0.9 on, as XLA's log1p loses ~100 ulp below -0.2.
    return _and(_gt(h, _k(0.9, h)), _lt(h, _k(2, h)))


def _log_parts(x, y):
    h = _hypot(x, y)
    near = _near_one(h)
    close = _add(_mul(_sub(x, _k(1, x)), _add(x, _k(1, x))), _mul(y, y))
    re = _sel(near, _mul(_k(0.5, x), Log1p()(close)), Log()(h))
    return re, Atan2()(y, x)


def log(z):
    """Principal natural logarithm: imaginary part in [-pi, pi], cut along the negative reals."""
    return Complex()(*_log_parts(*_parts(z)))


def log1p(z):
    """log(1 + z), accurate near 0."""
    x, y = _parts(z)
    one = _k(1, x)
    h = _hypot(_add(one, x), y)
    near = _near_one(h)
    close = _add(_mul(x, _add(_k(2, x), x)), _mul(y, y))  # |1 + z|^2 - 1
    re = _sel(near, _mul(_k(0.5, x), Log1p()(close)), Log()(h))
    return Complex()(re, Atan2()(y, _add(one, x)))


def _sqrt_parts(x, y):
    info = _finfo(x)
    m = Maximum()(_abs(x), _abs(y))
    # Scale by a power of 4 (exact) so |x| + |z| cannot overflow nor lose subnormal digits.
    big, small = _gt(m, _k(info.max / 4, m)), _lt(m, _k(info.tiny / info.eps, m))
    scale = _sel(big, _k(0.25, m), _sel(small, _k(info.eps ** -2, m), _k(1, m)))
    unscale = _sel(big, _k(2, m), _sel(small, _k(info.eps, m), _k(1, m)))
    xs, ys = _mul(x, scale), _mul(y, scale)
    t = Sqrt()(_mul(_add(_abs(xs), _hypot(xs, ys)), _k(0.5, m)))  # the larger part
    other = _div(ys, _add(t, t))
    right = _ge(x, _k(0, x))
    re = _mul(_sel(right, t, _abs(other)), unscale)
    im = _mul(_sel(right, other, _copysign(t, y)), unscale)
    zero = _eq(m, _k(0, m))
    re, im = _sel(zero, _k(0, x), re), _sel(zero, y, im)
    inf_y = _isinf(y)  # sqrt(x +- inf i) = inf +- inf i, even for NaN x
    return _sel(inf_y, _k(np.inf, x), re), _sel(inf_y, y, im)


def sqrt(z):
    """Principal square root (real part >= 0), cut along the negative reals."""
    return Complex()(*_sqrt_parts(*_parts(z)))


# -- hyperbolic and trigonometric functions ------------------------------------------------

def _sinh_parts(x, y):
    sh, ch = _real_sinh_cosh(x)
    re, im = _sinh_cosh_times(x, sh, ch, Cosine()(y), Sine()(y))
    zero_y = _eq(y, _k(0, y))
    re, im = _sel(zero_y, sh, re), _sel(zero_y, y, im)
    # x = 0 or infinite with y infinite or NaN: x + NaN i.
    odd = _and(Not()(_finite(y)), _or(_eq(x, _k(0, x)), _isinf(x)))
    return _sel(odd, x, re), _sel(odd, _k(np.nan, y), im)


def _cosh_parts(x, y):
    sh, ch = _real_sinh_cosh(x)
    im, re = _sinh_cosh_times(x, sh, ch, Sine()(y), Cosine()(y))
    zero_y = _eq(y, _k(0, y))  # cosh(x +- 0i) = cosh(x) +- 0i, the sign of x times that of y
    re, im = _sel(zero_y, ch, re), _sel(zero_y, _mul(y, _copysign(_k(1, x), x)), im)
    odd_y = Not()(_finite(y))
    zero_x, inf_x = _and(odd_y, _eq(x, _k(0, x))), _and(odd_y, _isinf(x))
    re = _sel(zero_x, _k(np.nan, x), _sel(inf_x, _k(np.inf, x), re))
    im = _sel(zero_x, _k(0, y), _sel(inf_x, _k(np.nan, y), im))
    return re, im


def _tanh_parts(x, y):
    info = _finfo(x)
    a = _abs(x)
    # Beyond `edge`, tanh(x) rounds to +-1 and 1 - tanh(a) underflows the imaginary part.
    large = _gt(a, _k(0.5 * np.log(4 / info.eps) + 1, a))
    xg = _sel(large, _k(0, x), x)  # the general formula's operand, finite where not used
    t = Tan()(y)
    beta = _add(_k(1, t), _mul(t, t))
    s, _ = _real_sinh_cosh(xg)
    rho = Sqrt()(_add(_k(1, s), _mul(s, s)))
    den = _add(_k(1, s), _mul(beta, _mul(s, s)))
    re = _div(_mul(_mul(beta, rho), s), den)  # Kahan's tanh: no cancellation anywhere
    im = _div(t, den)
    far = _mul(_mul(_k(4, y), _mul(Sine()(y), Cosine()(y))), Exp()(_mul(_k(-2, a), a)))
    re = _sel(large, _copysign(_k(1, x), x), re)
    im = _sel(large, far, im)
    im = _sel(_eq(y, _k(0, y)), y, im)
    # tanh(+-inf + iy) = +-1 + 0j with the sign of y (the standard; C99 has sin(2y)'s).
    im = _sel(_isinf(x), _copysign(_k(0, y), y), im)
    odd_y = Not()(_finite(y))
    finite_x = _and(odd_y, _finite(x))  # NaN + NaN i, but 0 + NaN i at x = 0
    re = _sel(finite_x, _sel(_eq(x, _k(0, x)), x, _k(np.nan, x)), re)
    return re, _sel(finite_x, _k(np.nan, y), im)


def _rotated(fn, z):
    """-i fn(i z): sin from sinh, tan from tanh (the standard's definition of their
    special values); multiplying by i swaps the parts, so nothing is rounded. The parts
    change sign on their bits: ``fn`` reads the sign of a NaN part (asin(inf + nan i) =
    nan + inf i, as numpy), which HLO's negate leaves to the platform (ops/_bits.py)."""
    x, y = _parts(z)
    p, q = fn(exact_negate(y), x)
    return Complex()(q, exact_negate(p))


def sinh(z):
    return Complex()(*_sinh_parts(*_parts(z)))


def cosh(z):
    return Complex()(*_cosh_parts(*_parts(z)))


def tanh(z):
    return Complex()(*_tanh_parts(*_parts(z)))


def sin(z):
    """sin(z) = -i sinh(i z)."""
    return _rotated(_sinh_parts, z)


def cos(z):
    """cos(z) = cosh(i z)."""
    x, y = _parts(z)
    return Complex()(*_cosh_parts(exact_negate(y), x))


def tan(z):
    """tan(z) = -i tanh(i z)."""
    return _rotated(_tanh_parts, z)


# -- inverse functions ---------------------------------------------------------------------

def _asin_core(x, y):
    """Kahan's asin of finite x + iy: atan2(x, Re(s1 s2)) + i asinh(Im(conj(s1) s2)),
    s1 = sqrt(1 - z), s2 = sqrt(1 + z); the signs of zero parts pick the cut's side."""
    one = _k(1, x)
    r1, i1 = _sqrt_parts(_sub(one, x), _neg(y))
    r2, i2 = _sqrt_parts(_add(one, x), y)
    re = Atan2()(x, _sub(_mul(r1, r2), _mul(i1, i2)))
    return re, _real_asinh(_sub(_mul(r1, i2), _mul(i1, r2)))


def _asinh_parts(x, y):
    # Odd and conjugate-symmetric: compute in the first quadrant, then give the signs back.
    a, b = _abs(x), _abs(y)
    p, q = _asin_core(_neg(b), a)  # asinh(w) = -i asin(i w)
    re, im = q, _neg(p)
    nan_a, nan_b, inf_a, inf_b = _isnan(a), _isnan(b), _isinf(a), _isinf(b)
    special_re = _sel(_or(inf_a, inf_b), _k(np.inf, a), _k(np.nan, a))
    special_im = _sel(nan_b, _k(np.nan, b),
                      _sel(nan_a, _sel(_eq(b, _k(0, b)), b, _k(np.nan, b)),
                           _sel(inf_a, _sel(inf_b, _k(np.pi / 4, b), _k(0, b)),
                                _k(np.pi / 2, b))))
    special = Not()(_and(_finite(a), _finite(b)))
    re, im = _sel(special, special_re, re), _sel(special, special_im, im)
    return _flip(re, _signbit(x)), _flip(im, _signbit(y))


def asinh(z):
    """Inverse hyperbolic sine; cuts along the imaginary axis beyond +-i."""
    return Complex()(*_asinh_parts(*_parts(z)))


def asin(z):
    """Inverse sine, -i asinh(i z); cuts along the real axis beyond +-1."""
    return _rotated(_asinh_parts, z)


def _acos_upper(x, b):
    """acos(x + i b) for b >= 0 (or NaN): real part in [0, pi], imaginary part <= 0."""
    one = _k(1, x)
    r1, i1 = _sqrt_parts(_sub(one, x), _neg(b))
    r2, i2 = _sqrt_parts(_add(one, x), b)
    re = _mul(_k(2, x), Atan2()(r1, r2))
    im = _real_asinh(_sub(_mul(r2, i1), _mul(i2, r1)))
    nan_b = _isnan(b)
    special = Not()(_and(_finite(x), _finite(b)))
    special_re = _sel(_and(nan_b, _eq(x, _k(0, x))), _k(np.pi / 2, x), Atan2()(b, x))
    special_im = _sel(_or(_isinf(x), _isinf(b)), _k(-np.inf, b), _k(np.nan, b))
    return _sel(special, special_re, re), _sel(special, special_im, im)


def acos(z):
    """Inverse cosine (real part in [0, pi]); cuts along the real axis beyond +-1."""
    x, y = _parts(z)
    re, im = _acos_upper(x, _abs(y))
    return Complex()(re, _flip(im, _signbit(y)))


def acosh(z):
    """Inverse hyperbolic cosine (real part >= 0); cut along the real axis below 1.

    In the upper half-plane acosh(z) = i acos(z), the table of special values included.
    """
    x, y = _parts(z)
    re, im = _acos_upper(x, _abs(y))
    return Complex()(_neg(im), _flip(re, _signbit(y)))


def _atanh_parts(x, y):
    info = _finfo(x)
    a, b = _abs(x), _abs(y)
    one = _k(1, a)
    d = _add(_mul(_sub(one, a), _sub(one, a)), _mul(b, b))  # |1 - z|^2
    # log1p(4a / |1-z|^2) / 4, or (near z = 1, where |1-z|^2 may underflow) the
    # difference of logs, which cannot cancel there.
    by_logs = _mul(_k(0.5, a), _sub(Log()(_hypot(_add(one, a), b)), Log()(_hypot(_sub(one, a), b))))
    re = _sel(_lt(d, _k(0.25, d)), by_logs, _mul(_k(0.25, a), Log1p()(_div(_mul(_k(4, a), a), d))))
    im = _mul(_k(0.5, b), Atan2()(_add(b, b), _sub(_mul(_sub(one, a), _add(one, a)), _mul(b, b))))
    # |z| beyond sqrt(max) / 4: atanh(z) = 1/z + i pi/2 to working precision.
    m, n = Maximum()(a, b), Minimum()(a, b)
    huge = _gt(m, _k(np.sqrt(info.max) / 4, m))
    safe_m = _sel(huge, m, one)
    ratio = _div(n, safe_m)
    # (a/m) (1/m) / (1 + r^2), not a/m/m, which XLA rewrites as a / (m m) (overflow).
    tail = _div(_div(one, safe_m), _add(one, _mul(ratio, ratio)))
    re = _sel(huge, _mul(_div(a, safe_m), tail), re)
    im = _sel(huge, _k(np.pi / 2, b), im)
    nan_a, nan_b, inf_a, inf_b = _isnan(a), _isnan(b), _isinf(a), _isinf(b)
    special = Not()(_and(_finite(a), _finite(b)))
    special_re = _sel(_or(_or(inf_a, inf_b), _eq(a, _k(0, a))), _k(0, a), _k(np.nan, a))
    special_im = _sel(nan_b, _k(np.nan, b),
                      _sel(_and(nan_a, Not()(inf_b)), _k(np.nan, b), _k(np.pi / 2, b)))
    re, im = _sel(special, special_re, re), _sel(special, special_im, im)
    return _flip(re, _signbit(x)), _flip(im, _signbit(y))


def atanh(z):
    """Inverse hyperbolic tangent; cuts along the real axis beyond +-1."""
    return Complex()(*_atanh_parts(*_parts(z)))


def atan(z):
    """Inverse tangent, -i atanh(i z); cuts along the imaginary axis beyond +-i."""
    return _rotated(_atanh_parts, z)


# The complex expansions of the real composites of special_functions (which sits below).
COMPLEX_EXPANSIONS.update(sinh=sinh, cosh=cosh, asin=asin, acos=acos, atanh=atanh,
                          asinh=asinh, acosh=acosh)
