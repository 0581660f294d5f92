"""Elementwise unary ops: the result has the operand's type (or pred for predicates).

Each op names the element types it accepts (as XLA does) and the numpy
function that models it for the tests.

>>> import numpy as np, hlodsl as hd
>>> Exp()(hd.array(np.zeros(2, np.float32)))
hlodsl.Array[float32, (2,)]([1., 1.])
"""

from __future__ import annotations

from typing import Callable, ClassVar

import numpy as np

from hlodsl.dtypes import Bool, ElementType, Floating, Inexact, Integer, Number, SignedInteger, pred
from hlodsl.errors import require
from hlodsl.op import HloOp, frozen

__all__ = [
    "Unary", "Abs", "Negate", "Sign", "Floor", "Ceil", "RoundNearestEven", "Exp", "Expm1",
    "Log", "Log1p", "Logistic", "Sqrt", "Rsqrt", "Cbrt", "Tanh", "Sine", "Cosine", "Tan",
    "Not", "IsFinite",
]


@frozen
class Unary(HloOp):
    """Base of elementwise unary ops."""

    kinds: ClassVar[tuple[type[ElementType], ...]] = (Number,)
    numpy: ClassVar[Callable | None] = None

    def result_type(self, x):
        require(issubclass(x.dtype, self.kinds), self, (x,),
                f"element type {x.dtype.__name__} is not one of "
                f"{', '.join(k.__name__ for k in self.kinds)}")
        return x

    def reference(self, x):
        return type(self).numpy(x)


class Abs(Unary, opcode="abs"):
    """|x| (real result for real input)."""

    kinds = (SignedInteger, Floating)
    numpy = staticmethod(np.abs)


class Negate(Unary, opcode="negate"):
    """-x."""

    numpy = staticmethod(np.negative)


class Sign(Unary, opcode="sign"):
    """-1, 0 or 1 with the sign of x."""

    kinds = (SignedInteger, Floating)
    numpy = staticmethod(np.sign)


class Floor(Unary, opcode="floor"):
    kinds = (Floating,)
    numpy = staticmethod(np.floor)


class Ceil(Unary, opcode="ceil"):
    kinds = (Floating,)
    numpy = staticmethod(np.ceil)


class RoundNearestEven(Unary, opcode="round-nearest-even"):
    """Round half to even, as ``np.round``."""

    kinds = (Floating,)
    numpy = staticmethod(np.round)


class Exp(Unary, opcode="exponential"):
    kinds = (Inexact,)
    numpy = staticmethod(np.exp)


class Expm1(Unary, opcode="exponential-minus-one"):
    kinds = (Inexact,)
    numpy = staticmethod(np.expm1)


class Log(Unary, opcode="log"):
    kinds = (Inexact,)
    numpy = staticmethod(np.log)


class Log1p(Unary, opcode="log-plus-one"):
    kinds = (Inexact,)
    numpy = staticmethod(np.log1p)


class Logistic(Unary, opcode="logistic"):
    """1 / (1 + exp(-x))."""

    kinds = (Floating,)
    numpy = staticmethod(lambda x: 1 / (1 + np.exp(-x)))


class Sqrt(Unary, opcode="sqrt"):
    kinds = (Inexact,)
    numpy = staticmethod(np.sqrt)


class Rsqrt(Unary, opcode="rsqrt"):
    kinds = (Inexact,)
    numpy = staticmethod(lambda x: 1 / np.sqrt(x))


class Cbrt(Unary, opcode="cbrt"):
    kinds = (Floating,)
    numpy = staticmethod(np.cbrt)


class Tanh(Unary, opcode="tanh"):
    kinds = (Inexact,)
    numpy = staticmethod(np.tanh)


class Sine(Unary, opcode="sine"):
    kinds = (Inexact,)
    numpy = staticmethod(np.sin)


class Cosine(Unary, opcode="cosine"):
    kinds = (Inexact,)
    numpy = staticmethod(np.cos)


class Tan(Unary, opcode="tan"):
    kinds = (Inexact,)
    numpy = staticmethod(np.tan)


class Not(Unary, opcode="not"):
    """Logical not for pred, bitwise not for integers."""

    kinds = (Bool, Integer)
    numpy = staticmethod(np.invert)


class IsFinite(Unary, opcode="is-finite"):
    """pred: x is neither infinite nor NaN."""

    kinds = (Floating,)
    numpy = staticmethod(np.isfinite)

    def result_type(self, x):
        return super().result_type(x).with_dtype(pred)
