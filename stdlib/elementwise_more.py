"""The array API elementwise functions beyond ``elementwise.py``, as plum generics.

Broadcasting and promotion as in ``elementwise.py``: integer (and bool)
operands of float-only functions become float64, as numpy does. The inverse
and hyperbolic functions take complex arrays too (principal branches as
numpy's, C99's special values; ``hlodsl.ops.complex_functions``).

>>> import numpy as np, hlodsl as hd
>>> floor_divide(hd.array(np.int32([7, -7])), 2)
hlodsl.Array[int32, (2,)]([ 3, -4])
>>> hypot(hd.array(np.float32([3, 6])), hd.array(np.float32([4, 8])))
hlodsl.Array[float32, (2,)]([ 5., 10.])
>>> clip(hd.array(np.float32([-2, 0.5, 3])), min=0, max=1)
hlodsl.Array[float32, (3,)]([0. , 0.5, 1. ])
"""

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.ops import complex_functions
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import (
    Bool, ComplexFloating, Floating, Inexact, Integer, SignedInteger, UnsignedInteger,
    element_type, float64, pred,
)

from .broadcasting import ELEMENTWISE, broadcast_arrays, broadcast_to
from .elementwise import _generic, _unary, check_kinds  # one way to make an elementwise generic
from .promotion import ArrayLike, lift, truth

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cosh", "sinh", "log2",
    "log10", "logaddexp", "hypot", "copysign", "floor_divide", "square", "trunc", "round",
    "signbit", "isinf", "isnan", "reciprocal", "conj", "real", "imag",
    "bitwise_left_shift", "bitwise_right_shift", "clip", "logical_xor", "nextafter",
]

_EQ, _NE, _LT, _GT = (ops.Compare(d) for d in ("EQ", "NE", "LT", "GT"))
_select, _and, _or = ops.Select(), ops.And(), ops.Or()
_add, _sub, _mul, _div = ops.Add(), ops.Subtract(), ops.Multiply(), ops.Divide()


def _full(value, like: Array) -> Array:
    """``value`` as an array of ``like``'s type."""
    return broadcast_to(lift(np.asarray(value, like.dtype.np_dtype)[()], like.dtype), like.shape)


def _bits_type(x: Array):
    """The unsigned integer type as wide as ``x``'s element type."""
    return element_type(np.dtype(f"u{x.dtype.np_dtype.itemsize}"))


def _sign_mask(x: Array) -> Array:
    u = _bits_type(x)
    return _full(1 << (u.np_dtype.itemsize * 8 - 1), ops.BitcastConvert(u)(x))


def _float(*xs) -> list[Array]:
    """Integer or bool operands as float64 (numpy's rule for float-only functions)."""
    if issubclass(xs[0].dtype, Inexact):
        return list(xs)
    return [lift(x, float64) for x in xs]


def _binary(name: str, body, doc: str, inexact: bool = False, kinds=None, allowed: str = ""):
    def impl(x1: ArrayLike, x2: ArrayLike):
        if kinds is not None:
            check_kinds(name, (x1, x2), kinds, allowed)
        x1, x2 = broadcast_arrays(x1, x2, what=name)
        if inexact:
            x1, x2 = _float(x1, x2)
        return body(x1, x2)

    return _generic(name, impl, doc)


# ----------------------------------------------------------------------------- bodies

def _atan(x):
    if issubclass(x.dtype, ComplexFloating):
        return complex_functions.atan(x)
    return ops.Atan2()(x, _full(1, x))


def _acosh(x):
    if issubclass(x.dtype, ComplexFloating):  # defined everywhere off its cut
        return ops.Acosh()(x)
    # NOTE: ops.Acosh's formula gives finite values for large negative x.
    return _select(_LT(x, _full(1, x)), _full(np.nan, x), ops.Acosh()(x))


def _log_base(base):
    def body(x):
        if issubclass(x.dtype, ComplexFloating):  # each part by a real: no complex division
            out = complex_functions.log(x)
            re, im = ops.Real()(out), ops.Imag()(out)
            scale = _full(np.log(base), re)
            return ops.Complex()(_div(re, scale), _div(im, scale))
        return _div(ops.Log()(x), _full(np.log(base), x))

    return body


def _logaddexp(x1, x2):
    big = ops.Maximum()(x1, x2)
    out = _add(big, ops.Log1p()(ops.Exp()(ops.Negate()(ops.Abs()(_sub(x1, x2))))))
    # Equal infinities make x1 - x2 NaN; the answer is that infinity.
    same_inf = _and(_EQ(x1, x2), ops.Not()(ops.IsFinite()(x1)))
    return _select(same_inf, x1, out)


def _hypot(x1, x2):
    a, b = ops.Abs()(x1), ops.Abs()(x2)
    big, small = ops.Maximum()(a, b), ops.Minimum()(a, b)
    # big * sqrt(1 + (small/big)^2) cannot overflow where x1^2 + x2^2 would.
    r = _div(small, big)
    out = _mul(big, ops.Sqrt()(_add(_full(1, r), _mul(r, r))))
    out = _select(_EQ(big, _full(0, big)), _full(0, big), out)
    inf = _full(np.inf, big)
    return _select(_or(_EQ(a, inf), _EQ(b, inf)), inf, out)


def _copysign(x1, x2):
    u = _bits_type(x1)
    mask = _sign_mask(x1)
    magnitude = ops.And()(ops.BitcastConvert(u)(x1), ops.Not()(mask))
    sign = ops.And()(ops.BitcastConvert(u)(x2), mask)
    return ops.BitcastConvert(x1.dtype)(ops.Or()(magnitude, sign))


def _signbit(x):
    if issubclass(x.dtype, Floating):
        mask = _sign_mask(x)
        bits = ops.And()(ops.BitcastConvert(_bits_type(x))(x), mask)
        return _NE(bits, _full(0, bits))
    if issubclass(x.dtype, SignedInteger):
        return _LT(x, _full(0, x))
    if issubclass(x.dtype, (UnsignedInteger, Bool)):
        return _false(x)
    raise TypeError(f"signbit: complex {x.type} has no sign bit")


def _nextafter(x1, x2):
    if not issubclass(x1.dtype, Floating):
        raise TypeError(f"nextafter: operands must be real floating-point, got {x1.type}")
    u = _bits_type(x1)
    bits = ops.BitcastConvert(u)(x1)
    zero, one = _full(0, x1), _full(1, bits)
    # Sign and magnitude: one more in the bits is one step away from zero.
    away = _EQ(_GT(x2, x1), _GT(x1, zero))
    step = ops.BitcastConvert(x1.dtype)(_select(away, _add(bits, one), _sub(bits, one)))
    tiniest = _copysign(ops.BitcastConvert(x1.dtype)(one), x2)  # the smallest subnormal
    out = _select(_EQ(x1, zero), tiniest, step)
    out = _select(_EQ(x1, x2), x2, out)
    nan = _or(_NE(x1, x1), _NE(x2, x2))
    return _select(nan, _full(np.nan, x1), out)


def _floor_divide_int(x1, x2):
    q = _div(x1, x2)  # truncates toward zero
    zero = _full(0, x1)
    inexact = _NE(_sub(x1, _mul(q, x2)), zero)
    if issubclass(x1.dtype, SignedInteger):
        signs_differ = _NE(_LT(x1, zero), _LT(x2, zero))
        q = _select(_and(inexact, signs_differ), _sub(q, _full(1, q)), q)
    return _select(_EQ(x2, zero), zero, q)  # numpy: x // 0 is 0 for integers


def _floor_divide_float(a, b):
    # numpy's npy_floor_divide, step by step, so signed zeros and rounding agree.
    zero, one = _full(0, a), _full(1, a)
    mod = ops.Remainder()(a, b)
    div = _div(_sub(a, mod), b)
    fix = _and(_NE(mod, zero), _NE(_LT(b, zero), _LT(mod, zero)))
    div = _select(fix, _sub(div, one), div)
    floordiv = ops.Floor()(div)
    floordiv = _select(_GT(_sub(div, floordiv), _full(0.5, a)), _add(floordiv, one), floordiv)
    floordiv = _select(_EQ(div, zero), _copysign(zero, _div(a, b)), floordiv)
    # NOTE: the array API (2024.12 on) asks floor(a / b) where exactly one operand
    # is infinite: inf // 1 is +inf and 1 // -inf is -0.0, where numpy and
    # Python pair // with % (nan and -1.0). a / b is that value: floor keeps
    # infinities and the signed zeros of finite / inf.
    one_inf = _NE(_isinf(a), _isinf(b))
    return _select(_or(_EQ(b, zero), one_inf), _div(a, b), floordiv)


def _floor_divide(x1, x2):
    if issubclass(x1.dtype, Integer):
        return _floor_divide_int(x1, x2)
    if issubclass(x1.dtype, Floating):
        return _floor_divide_float(x1, x2)
    raise TypeError(f"floor_divide: operands of type {x1.type} are neither integer nor real")


def _trunc(x):
    if issubclass(x.dtype, (Integer, Bool)):  # as floor and ceil: already whole
        return x
    return _select(_LT(x, _full(0, x)), ops.Ceil()(x), ops.Floor()(x))


def _round(x):
    if issubclass(x.dtype, (Integer, Bool)):
        return x
    if issubclass(x.dtype, ComplexFloating):
        return ops.Complex()(ops.RoundNearestEven()(ops.Real()(x)),
                             ops.RoundNearestEven()(ops.Imag()(x)))
    return ops.RoundNearestEven()(x)


def _false(x):
    return broadcast_to(lift(False, pred), x.shape)


def _isinf(x):
    if issubclass(x.dtype, ComplexFloating):
        return _or(_isinf(ops.Real()(x)), _isinf(ops.Imag()(x)))
    if not issubclass(x.dtype, Floating):
        return _false(x)
    return _EQ(ops.Abs()(x), _full(np.inf, x))


def _isnan(x):
    if issubclass(x.dtype, ComplexFloating):
        return _or(_isnan(ops.Real()(x)), _isnan(ops.Imag()(x)))
    if not issubclass(x.dtype, Floating):
        return _false(x)
    return _NE(x, x)


def _conj(x):
    if issubclass(x.dtype, ComplexFloating):
        return ops.Complex()(ops.Real()(x), ops.Negate()(ops.Imag()(x)))
    return x


def _real(x):
    return ops.Real()(x) if issubclass(x.dtype, ComplexFloating) else x


def _imag(x):
    if issubclass(x.dtype, ComplexFloating):
        return ops.Imag()(x)
    return _full(0, x)


def _shift(name: str, left: bool):
    def body(x1, x2):
        if not issubclass(x1.dtype, Integer):
            raise TypeError(f"{name}: operands must be integers, got {x1.type}")
        if left:
            return ops.ShiftLeft()(x1, x2)
        if issubclass(x1.dtype, UnsignedInteger):
            return ops.ShiftRightLogical()(x1, x2)
        return ops.ShiftRightArithmetic()(x1, x2)

    return body


# ----------------------------------------------------------------------------- generics

acos = _unary("acos", ops.Acos(), "Inverse cosine.", inexact=True)
acosh = _unary("acosh", _acosh, "Inverse hyperbolic cosine (real input: NaN below 1).",
               inexact=True)
asin = _unary("asin", ops.Asin(), "Inverse sine.", inexact=True)
asinh = _unary("asinh", ops.Asinh(), "Inverse hyperbolic sine.", inexact=True)
atan = _unary("atan", _atan, "Inverse tangent (real input: atan2(x, 1)).", inexact=True)
atanh = _unary("atanh", ops.Atanh(), "Inverse hyperbolic tangent.", inexact=True)
cosh = _unary("cosh", ops.Cosh(), "Hyperbolic cosine.", inexact=True)
sinh = _unary("sinh", ops.Sinh(), "Hyperbolic sine.", inexact=True)
log2 = _unary("log2", _log_base(2), "Base-2 logarithm.", inexact=True)
log10 = _unary("log10", _log_base(10), "Base-10 logarithm.", inexact=True)
square = _unary("square", lambda x: _mul(x, x), "x * x.")
trunc = _unary("trunc", _trunc, "Round toward zero (integers are returned as they are).")
round = _unary("round", _round, "Round half to even (integers are returned as they are).")
signbit = _unary("signbit", _signbit, "pred: the sign bit of x is set (-0.0 and -nan too).")
isinf = _unary("isinf", _isinf, "pred: x is +inf or -inf (complex: either part is).")
isnan = _unary("isnan", _isnan, "pred: x is NaN (complex: either part is).")
reciprocal = _unary("reciprocal", lambda x: _div(_full(1, x), x), "1 / x.", inexact=True)
conj = _unary("conj", _conj, "Complex conjugate (real input is returned as it is).")
real = _unary("real", _real, "Real part (real input is returned as it is).")
imag = _unary("imag", _imag, "Imaginary part (zeros of x's type for real input).")

atan2 = _binary("atan2", ops.Atan2(), "Angle of the point (x2, x1), quadrant-aware (real only).",
                inexact=True, kinds=(Integer, Floating, Bool),
                allowed="real (integer or floating-point), not complex")
logaddexp = _binary("logaddexp", _logaddexp, "log(exp(x1) + exp(x2)) without overflow.",
                    inexact=True)
hypot = _binary("hypot", _hypot, "sqrt(x1**2 + x2**2) without overflow.", inexact=True)
def _real_copysign(x1, x2):
    if issubclass(x1.dtype, ComplexFloating):  # as numpy: no sign bit to copy
        raise TypeError(f"copysign: operands must be real, got {x1.type} and {x2.type}")
    return _copysign(x1, x2)


copysign = _binary("copysign", _real_copysign, "|x1| with the sign bit of x2.", inexact=True)
floor_divide = _binary("floor_divide", _floor_divide,
                       "x1 // x2, rounded toward -inf as numpy (integer x // 0 gives 0).")
nextafter = _binary("nextafter", _nextafter,
                    "The next representable value after x1 toward x2 (real floats).")
logical_xor = _binary("logical_xor", lambda x1, x2: ops.Xor()(truth(x1), truth(x2)),
                      "Logical exclusive or (nonzero elements count as true).")
bitwise_left_shift = _binary("bitwise_left_shift", _shift("bitwise_left_shift", True),
                             "x1 << x2 (0 once x2 reaches the bit width).",
                             kinds=(Integer, Bool), allowed="integers")
bitwise_right_shift = _binary("bitwise_right_shift", _shift("bitwise_right_shift", False),
                              "x1 >> x2: arithmetic for signed, logical for unsigned.",
                              kinds=(Integer, Bool), allowed="integers")


def _bound(b, x: Array, which: str):
    if isinstance(b, float) and not issubclass(x.dtype, Inexact):
        raise TypeError(f"clip: {which}={b!r} is a float but x is {x.type}")
    return b if isinstance(b, Array) else lift(b, x.dtype)


@dispatch
def clip(x: ArrayLike, min=None, max=None):  # noqa: A002  (the standard's names)
    """``x`` limited to ``[min, max]``; bounds broadcast with ``x`` and take its type.

    Either bound may be None (no limit), a Python scalar or an array. NaN in
    ``x`` stays NaN.

    >>> import numpy as np, hlodsl as hd
    >>> clip(hd.array(np.int32([1, 5, 9])), max=hd.array(np.int32([0, 6, 8])))
    hlodsl.Array[int32, (3,)]([0, 5, 8])
    """
    (x,) = broadcast_arrays(x, what="clip")
    bounds = [(b, which) for b, which in ((min, "min"), (max, "max")) if b is not None]
    if not bounds:
        return x
    arrays = [lift(_bound(b, x, which), x.dtype) for b, which in bounds]
    x, *arrays = broadcast_arrays(x, *arrays, what="clip")
    if min is not None:
        x = ops.Maximum()(x, arrays.pop(0))
    if max is not None:
        x = ops.Minimum()(x, arrays.pop(0))
    return x


ELEMENTWISE.add(clip)
