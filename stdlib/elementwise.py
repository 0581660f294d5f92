"""Elementwise functions with numpy broadcasting and promotion, as plum generics.

Each bottoms out in one HLO elementwise instruction (plus broadcasts and
converts where the operands need them). Add a method for your own types with
``@hlodsl.stdlib.add.dispatch``.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import add, exp
>>> add(hd.array(np.float32([[1], [2]])), hd.array(np.float32([10, 20])))
hlodsl.Array[float32, (2, 2)](
  [[11., 21.],
   [12., 22.]])
>>> exp(hd.array(np.float32(0)))
hlodsl.Array[float32, ()](1.)
"""

import functools

import numpy as np

from hlodsl.transforms.eager import eager_module
from hlodsl import ops
from hlodsl.ops import complex_functions
from hlodsl.arrays.array import Array
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import (
    Bool, ComplexFloating, Floating, Inexact, Integer, UnsignedInteger, element_type, float64,
    pred,
)

from .broadcasting import ELEMENTWISE, broadcast_arrays
from .data_types import scalar_default
from .manipulation import fail
from .promotion import ArrayLike, lift, truth

__all__ = [
    "add", "subtract", "multiply", "divide", "pow", "maximum", "minimum", "remainder",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor",
    "negative", "positive", "abs", "exp", "expm1", "log", "log1p", "sqrt", "tanh", "sin",
    "cos", "tan", "floor", "ceil", "sign", "sigmoid", "logical_not", "bitwise_invert",
    "isfinite",
]


def _generic(name: str, impl, doc: str):
    impl.__name__ = impl.__qualname__ = name
    impl.__doc__ = doc
    # Eagerly, the whole function is one compiled module per signature (not op by op).
    fn = dispatch(eager_module(impl, name))
    ELEMENTWISE.add(fn)
    return fn


def _element_type_of(x):
    if isinstance(x, Array):
        return x.dtype
    if isinstance(x, (np.ndarray, np.generic)):
        return element_type(x.dtype)
    return scalar_default(x)


def check_kinds(name: str, xs, kinds, allowed: str) -> None:
    """A TypeError naming ``name`` and the operands unless every element type is one of ``kinds``.

    Checked before promotion, so the message shows the types the user passed.
    """
    if all(issubclass(_element_type_of(x), kinds) for x in xs):
        return
    shown = ", ".join(str(x.type) if isinstance(x, Array) else f"{type(x).__name__} {x!r}"
                      for x in xs)
    raise fail(TypeError, f"{name}: operands must be {allowed}, got {shown}")


def _binary(name: str, op, doc: str, true_division: bool = False, kinds=None,
            allowed: str = ""):
    def impl(x: ArrayLike, y: ArrayLike):
        if kinds is not None:
            check_kinds(name, (x, y), kinds, allowed)
        x, y = broadcast_arrays(x, y, what=name)
        if true_division and issubclass(x.dtype, (Integer, Bool)):
            x, y = lift(x, float64), lift(y, float64)
        return op(x, y)

    return _generic(name, impl, doc)


def _unary(name: str, op, doc: str, inexact: bool = False, kinds=None, allowed: str = ""):
    def impl(x: ArrayLike):
        if kinds is not None:
            check_kinds(name, (x,), kinds, allowed)
        (x,) = broadcast_arrays(x, what=name)
        if inexact and not issubclass(x.dtype, Inexact):
            x = lift(x, float64)  # as numpy: exp of an int array is float64
        return op(x)

    return _generic(name, impl, doc)


def _compare(name: str, direction: str):
    return _binary(name, ops.Compare(direction),
                   f"Elementwise ``{direction}`` comparison after broadcasting; pred result.")


def _same(x):
    return x


def _abs(x):
    if issubclass(x.dtype, (UnsignedInteger, Bool)):
        return x
    if issubclass(x.dtype, ComplexFloating):
        return modulus(x)
    return ops.Abs()(x)


def modulus(z):
    """|z| of a complex array as its real type, without overflow: ``hypot(re, im)``."""
    a, b = ops.Abs()(ops.Real()(z)), ops.Abs()(ops.Imag()(z))
    big, small = ops.Maximum()(a, b), ops.Minimum()(a, b)
    ratio = ops.Divide()(small, big)
    one, zero, inf = (_zeros(big, v) for v in (1, 0, float("inf")))
    out = ops.Multiply()(big, ops.Sqrt()(ops.Add()(one, ops.Multiply()(ratio, ratio))))
    out = ops.Select()(ops.Compare("EQ")(big, zero), zero, out)
    # An infinite part makes |z| infinite, even beside a NaN.
    either_inf = ops.Or()(ops.Compare("EQ")(a, inf), ops.Compare("EQ")(b, inf))
    return ops.Select()(either_inf, inf, out)


def _real_or_complex(op, name: str):
    """``op`` on real arrays; ``complex_functions.<name>`` on complex ones, which gives
    C99's values at infinite and NaN parts where XLA's complex instruction does not."""
    complex_fn = getattr(complex_functions, name)
    return lambda x: complex_fn(x) if issubclass(x.dtype, ComplexFloating) else op(x)


def _sigmoid(x):
    if issubclass(x.dtype, ComplexFloating):  # XLA's logistic takes no complex operand
        one = _zeros(x, 1)
        return ops.Divide()(one, ops.Add()(one, complex_functions.exp(ops.Negate()(x))))
    return ops.Logistic()(x)


def _rounding(op):
    return lambda x: x if issubclass(x.dtype, (Integer, Bool)) else op(x)


def _sign(x):
    if issubclass(x.dtype, UnsignedInteger):
        return ops.Convert(x.dtype)(ops.Compare("NE")(x, _zeros(x)))
    if issubclass(x.dtype, ComplexFloating):
        return _complex_sign(x)
    zero = _zeros(x)
    return ops.Select()(ops.Compare("EQ")(x, zero), zero, ops.Sign()(x))  # sign(-0.0) is +0


def _complex_sign(x):
    """x / |x|, 0 at 0, NaN + NaN j if a part is NaN (the standard); one infinite part
    counts as +-1 and the finite one beside it as 0 (numpy's limit, where x / |x| is NaN)."""
    re, im = ops.Real()(x), ops.Imag()(x)
    inf = _zeros(re, float("inf"))
    re_inf, im_inf = ops.Compare("EQ")(ops.Abs()(re), inf), ops.Compare("EQ")(ops.Abs()(im), inf)
    infinite = ops.Xor()(re_inf, im_inf)  # both infinite: NaN, as numpy

    def limit(part, part_inf):
        one = ops.Select()(ops.Compare("LT")(part, _zeros(part)), _zeros(part, -1), _zeros(part, 1))
        return ops.Select()(part_inf, one, _zeros(part))

    re = ops.Select()(infinite, limit(re, re_inf), re)
    im = ops.Select()(infinite, limit(im, im_inf), im)
    m = modulus(ops.Complex()(re, im))
    unit = ops.Complex()(ops.Divide()(re, m), ops.Divide()(im, m))
    zero = _zeros(x)
    return ops.Select()(ops.Compare("EQ")(x, zero), zero, unit)


def _isfinite(x):
    if issubclass(x.dtype, ComplexFloating):
        return ops.And()(ops.IsFinite()(ops.Real()(x)), ops.IsFinite()(ops.Imag()(x)))
    if not issubclass(x.dtype, Inexact):
        return ops.Broadcast(x.shape)(lift(True, pred))
    return ops.IsFinite()(x)


def _zeros(x, value=0):
    return ops.Broadcast(x.shape)(lift(value, x.dtype))


add = _binary("add", ops.Add(), "x + y, broadcast.")
subtract = _binary("subtract", ops.Subtract(), "x - y, broadcast.")
multiply = _binary("multiply", ops.Multiply(), "x * y, broadcast.")
divide = _binary("divide", ops.Divide(), "x / y, true division (ints give float64).",
                 true_division=True)
pow = _binary("pow", ops.Power(), "x ** y, broadcast.")


def _integer_pow(x: Array, n: int) -> Array:
    """``x ** n`` by repeated squaring (jax's ``integer_pow``); ``1 / x ** -n`` below 0."""
    if n == 0:
        return _zeros(x, 1)
    out, base, m = None, x, -n if n < 0 else n  # (abs is the array function here)
    while m:
        if m & 1:
            out = base if out is None else ops.Multiply()(out, base)
        m >>= 1
        if m:
            base = ops.Multiply()(base, base)
    return ops.Divide()(_zeros(x, 1), out) if n < 0 else out


@functools.lru_cache(maxsize=64)
def _integer_pow_module(n: int):
    """``x ** n`` for one ``n``: eagerly one compiled module per signature (n is static)."""
    def power(x):
        return _integer_pow(x, n)

    return eager_module(power, f"pow_{n}".replace("-", "m"))


@dispatch
def pow(x: Array, y: int):
    """``x ** n`` for a Python int ``n``: multiplications (by repeated squaring, as jax's
    ``integer_pow``), exact where HLO ``power`` need not be (XLA:GPU's f64 ``power(3, 1)``
    is not 3), and its derivatives with them. ``n < 0`` on a float: ``1 / x ** -n``.

    >>> import numpy as np, hlodsl as hd
    >>> pow(hd.array(np.float64([3, 0.5])), 3)
    hlodsl.Array[float64, (2,)]([27.   ,  0.125])
    """
    if isinstance(y, bool) or not issubclass(x.dtype, (Inexact, Integer)) or \
            (y < 0 and not issubclass(x.dtype, Inexact)):
        return pow.invoke(ArrayLike, ArrayLike)(x, y)  # promotion, HLO power
    return _integer_pow_module(y)(x)
maximum = _binary("maximum", ops.Maximum(), "Elementwise maximum.")
minimum = _binary("minimum", ops.Minimum(), "Elementwise minimum.")
def _floored_remainder(x, y):
    """numpy's (and Python's) remainder: the sign follows the divisor. HLO's
    ``remainder`` is C's ``fmod`` (the dividend's sign), so a nonzero result whose
    sign differs from the divisor's gets the divisor added (numpy's ``npy_divmod``),
    and a zero float result takes the divisor's sign."""
    r = ops.Remainder()(x, y)
    if issubclass(r.dtype, (UnsignedInteger, Bool)):
        return r
    zero = _zeros(r)
    differs = ops.Compare("NE")(ops.Compare("LT")(r, zero), ops.Compare("LT")(y, zero))
    fix = ops.And()(ops.Compare("NE")(r, zero), differs)
    out = ops.Select()(fix, ops.Add()(r, y), r)
    if not issubclass(r.dtype, Floating):
        return out
    bits = {2: "int16", 4: "int32", 8: "int64"}[r.dtype.np_dtype.itemsize]
    y_negative = ops.Compare("LT")(ops.BitcastConvert(bits)(y),
                                   _zeros(ops.BitcastConvert(bits)(y)))  # -0.0 included
    signed_zero = ops.Select()(y_negative, ops.Negate()(zero), zero)
    return ops.Select()(ops.Compare("EQ")(r, zero), signed_zero, out)


remainder = _binary("remainder", _floored_remainder,
                    "Remainder of division with the divisor's sign, as numpy and Python's "
                    "``%``: ``remainder(-7, 2) == 1`` (``hlodsl.ops.Remainder`` is C's "
                    "``fmod``).", kinds=(Integer, Floating, Bool),
                    allowed="real (integer or floating-point), not complex")
logical_and = _binary("logical_and", lambda x, y: ops.And()(truth(x), truth(y)),
                      "Logical and (nonzero elements count as true).")
logical_or = _binary("logical_or", lambda x, y: ops.Or()(truth(x), truth(y)),
                     "Logical or (nonzero elements count as true).")
_BITS = {"kinds": (Integer, Bool), "allowed": "integer or bool"}
bitwise_and = _binary("bitwise_and", ops.And(), "Bitwise and.", **_BITS)
bitwise_or = _binary("bitwise_or", ops.Or(), "Bitwise or.", **_BITS)
bitwise_xor = _binary("bitwise_xor", ops.Xor(), "Bitwise xor.", **_BITS)
equal = _compare("equal", "EQ")
not_equal = _compare("not_equal", "NE")
less = _compare("less", "LT")
less_equal = _compare("less_equal", "LE")
greater = _compare("greater", "GT")
greater_equal = _compare("greater_equal", "GE")

negative = _unary("negative", ops.Negate(), "-x.")
positive = _unary("positive", _same, "+x (the array itself).")
abs = _unary("abs", _abs, "|x| (complex: the modulus, real; unsigned: x itself).")
exp = _unary("exp", _real_or_complex(ops.Exp(), "exp"), "e ** x.", inexact=True)
expm1 = _unary("expm1", _real_or_complex(ops.Expm1(), "expm1"), "e ** x - 1, accurate near 0.",
               inexact=True)
log = _unary("log", _real_or_complex(ops.Log(), "log"), "Natural logarithm.", inexact=True)
log1p = _unary("log1p", _real_or_complex(ops.Log1p(), "log1p"), "log(1 + x), accurate near 0.",
               inexact=True)
sqrt = _unary("sqrt", _real_or_complex(ops.Sqrt(), "sqrt"), "Square root.", inexact=True)
tanh = _unary("tanh", _real_or_complex(ops.Tanh(), "tanh"), "Hyperbolic tangent.", inexact=True)
sin = _unary("sin", _real_or_complex(ops.Sine(), "sin"), "Sine.", inexact=True)
cos = _unary("cos", _real_or_complex(ops.Cosine(), "cos"), "Cosine.", inexact=True)
tan = _unary("tan", _real_or_complex(ops.Tan(), "tan"), "Tangent.", inexact=True)
floor = _unary("floor", _rounding(ops.Floor()), "Round toward -inf (integers: x itself).")
ceil = _unary("ceil", _rounding(ops.Ceil()), "Round toward +inf (integers: x itself).")
sign = _unary("sign", _sign, "-1, 0 or 1 (complex: x / |x|, or 0).")
sigmoid = _unary("sigmoid", _sigmoid, "1 / (1 + e ** -x) (complex x too).", inexact=True)
logical_not = _unary("logical_not", lambda x: ops.Not()(truth(x)),
                     "Logical not (nonzero elements count as true).")
bitwise_invert = _unary("bitwise_invert", ops.Not(), "Bitwise not.", **_BITS)
isfinite = _unary("isfinite", _isfinite, "pred: x is finite (integers always are).")
