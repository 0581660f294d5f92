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


from hlodsl import ops
from hlodsl.dispatcher import dispatch
from hlodsl.dtypes import Bool, Inexact, Integer, float64

from .broadcasting import ELEMENTWISE, broadcast_arrays
from .promotion import ArrayLike, lift

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
    fn = dispatch(impl)
    ELEMENTWISE.add(fn)
    return fn


def _binary(name: str, op, doc: str, true_division: bool = False):
    def impl(x: ArrayLike, y: ArrayLike):
        x, y = broadcast_arrays(x, y, what=name)
        if true_division and issubclass(x.dtype, (Integer, Bool)):
            x, y = lift(x, float64), lift(y, float64)
        return op(x, y)

    return _generic(name, impl, doc)


def _unary(name: str, op, doc: str, inexact: bool = False):
    def impl(x: ArrayLike):
        (x,) = broadcast_arrays(x, what=name)
        if inexact and not issubclass(x.dtype, Inexact):
            x = lift(x, float64)  # as numpy: exp of an int array is float64
        return op(x)

    return _generic(name, impl, doc)


def _compare(name: str, direction: str):
    return _binary(name, ops.Compare(direction),
                   f"Elementwise ``{direction}`` comparison after broadcasting; pred result.")


add = _binary("add", ops.Add(), "x + y, broadcast.")
subtract = _binary("subtract", ops.Subtract(), "x - y, broadcast.")
multiply = _binary("multiply", ops.Multiply(), "x * y, broadcast.")
divide = _binary("divide", ops.Divide(), "x / y, true division (ints give float64).",
                 true_division=True)
pow = _binary("pow", ops.Power(), "x ** y, broadcast.")
maximum = _binary("maximum", ops.Maximum(), "Elementwise maximum.")
minimum = _binary("minimum", ops.Minimum(), "Elementwise minimum.")
remainder = _binary("remainder", ops.Remainder(), "C-style remainder (sign of x).")
logical_and = _binary("logical_and", ops.And(), "Logical and of pred arrays.")
logical_or = _binary("logical_or", ops.Or(), "Logical or of pred arrays.")
bitwise_and = _binary("bitwise_and", ops.And(), "Bitwise and.")
bitwise_or = _binary("bitwise_or", ops.Or(), "Bitwise or.")
bitwise_xor = _binary("bitwise_xor", ops.Xor(), "Bitwise xor.")
equal = _compare("equal", "EQ")
not_equal = _compare("not_equal", "NE")
less = _compare("less", "LT")
less_equal = _compare("less_equal", "LE")
greater = _compare("greater", "GT")
greater_equal = _compare("greater_equal", "GE")

negative = _unary("negative", ops.Negate(), "-x.")
positive = _unary("positive", lambda x: x, "+x (the array itself).")
abs = _unary("abs", ops.Abs(), "|x|.")
exp = _unary("exp", ops.Exp(), "e ** x.", inexact=True)
expm1 = _unary("expm1", ops.Expm1(), "e ** x - 1, accurate near 0.", inexact=True)
log = _unary("log", ops.Log(), "Natural logarithm.", inexact=True)
log1p = _unary("log1p", ops.Log1p(), "log(1 + x), accurate near 0.", inexact=True)
sqrt = _unary("sqrt", ops.Sqrt(), "Square root.", inexact=True)
tanh = _unary("tanh", ops.Tanh(), "Hyperbolic tangent.", inexact=True)
sin = _unary("sin", ops.Sine(), "Sine.", inexact=True)
cos = _unary("cos", ops.Cosine(), "Cosine.", inexact=True)
tan = _unary("tan", ops.Tan(), "Tangent.", inexact=True)
floor = _unary("floor", ops.Floor(), "Round toward -inf.")
ceil = _unary("ceil", ops.Ceil(), "Round toward +inf.")
sign = _unary("sign", ops.Sign(), "-1, 0 or 1.")
sigmoid = _unary("sigmoid", ops.Logistic(), "1 / (1 + e ** -x).", inexact=True)
logical_not = _unary("logical_not", ops.Not(), "Logical not of a pred array.")
bitwise_invert = _unary("bitwise_invert", ops.Not(), "Bitwise not.")
isfinite = _unary("isfinite", ops.IsFinite(), "pred: x is finite.")
