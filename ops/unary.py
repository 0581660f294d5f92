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

from hlodsl.arrays.dtypes import (
    Bool, ComplexFloating, ElementType, Floating, Inexact, Integer, Number, SignedInteger,
    element_type, pred,
)
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen

__all__ = [
    "Unary", "Abs", "Negate", "Sign", "Floor", "Ceil", "RoundNearestEven", "Exp", "Expm1",
    "Log", "Log1p", "Logistic", "Sqrt", "Rsqrt", "Cbrt", "Tanh", "Sine", "Cosine", "Tan",
    "Not", "IsFinite",
]


@frozen
class Unary(HloOp):
    """Base of elementwise unary ops."""

    kinds: ClassVar[tuple[type[ElementType], ...]] = (Number,)
    #: Kinds the spec allows that XLA:CPU gets wrong: (kind, why) pairs, refused.
    refused: ClassVar[tuple] = ()
    numpy: ClassVar[Callable | None] = None

    def result_type(self, x):
        check_kinds(self, (x,))
        return x

    def reference(self, x):
        return type(self).numpy(x)


def check_kinds(op, types) -> None:
    """ShapeError unless the (first) operand's element type is one of ``op.kinds``.

    ``op.refused`` names kinds the HLO spec allows but XLA:CPU does not run
    correctly, with the reason, so the error says it is XLA's limit.
    """
    dtype = types[0].dtype
    for kind, why in getattr(op, "refused", ()):
        require(not issubclass(dtype, kind), op, types,
                f"element type {dtype.__name__} is allowed by the HLO spec, but {why}")
    require(issubclass(dtype, op.kinds), op, types,
            f"element type {dtype.__name__} is not one of "
            f"{', '.join(k.__name__ for k in op.kinds)}")


class Abs(Unary, opcode="abs"):
    """|x|; for a complex operand the modulus, of the component type (c64 -> f32)."""

    kinds = (SignedInteger, Floating, ComplexFloating)
    numpy = staticmethod(np.abs)

    def result_type(self, x):
        check_kinds(self, (x,))
        if issubclass(x.dtype, ComplexFloating):  # StableHLO abs C2: the component type
            return x.with_dtype(element_type(np.finfo(x.dtype.np_dtype).dtype))
        return x


class Negate(Unary, opcode="negate"):
    """-x."""

    numpy = staticmethod(np.negative)


class Sign(Unary, opcode="sign"):
    """-1, 0 or 1 with the sign of x; ``x / |x|`` (0 at 0) for complex x."""

    kinds = (SignedInteger, Floating, ComplexFloating)
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
    """1 / (1 + exp(-x)); complex too, as the HLO spec allows (XLA:CPU runs it)."""

    kinds = (Inexact,)
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


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms): the operand's cotangent given the result's ct -------

from hlodsl.ir.rules import nondifferentiable, register_rule, vjp_rule  # noqa: E402

from ._ad import add, div, full_like, mul, neg, sub  # noqa: E402


def _rule(cls, derivative):
    """Register ``ct * derivative(x, out)`` as ``cls``'s rule (one line per op below)."""

    def rule(op, ct, out, x):
        return (mul(ct, derivative(x, out)),)

    register_rule(vjp_rule, cls, rule)


_rule(Exp, lambda x, out: out)
_rule(Expm1, lambda x, out: add(out, full_like(out, 1)))
_rule(Log, lambda x, out: div(full_like(x, 1), x))
_rule(Log1p, lambda x, out: div(full_like(x, 1), add(x, full_like(x, 1))))
_rule(Logistic, lambda x, out: mul(out, sub(full_like(out, 1), out)))
_rule(Sqrt, lambda x, out: div(full_like(out, 0.5), out))
_rule(Rsqrt, lambda x, out: mul(full_like(x, -0.5), div(out, x)))
_rule(Cbrt, lambda x, out: div(full_like(out, 1 / 3), mul(out, out)))
_rule(Tanh, lambda x, out: sub(full_like(out, 1), mul(out, out)))
_rule(Sine, lambda x, out: Cosine()(x))
_rule(Cosine, lambda x, out: neg(Sine()(x)))
_rule(Tan, lambda x, out: add(full_like(out, 1), mul(out, out)))


@vjp_rule.dispatch
def abs_vjp(op: Abs, ct, out, x):
    # ct where x >= 0, -ct below: at 0 the derivative is taken as +1, as jax does.
    # Complex x: ct * conj(x) / |x|, and 0 at x = 0 (jax's, under its pairing re(u v)).
    from .compare import Compare, Select

    if issubclass(x.dtype, ComplexFloating):
        from .complex_parts import Complex
        from ._ad import conj_if_complex

        at_zero = Compare("EQ")(out, full_like(out, 0))
        scale = Select()(at_zero, full_like(out, 0),
                         div(ct, Select()(at_zero, full_like(out, 1), out)))
        return (mul(Complex()(scale, full_like(out, 0)), conj_if_complex(x)),)
    return (Select()(Compare("GE")(x, full_like(x, 0)), ct, neg(ct)),)


@vjp_rule.dispatch
def negate_vjp(op: Negate, ct, out, x):
    return (neg(ct),)


# Piecewise constant: the derivative is zero wherever it exists (as in jax). jax
# also takes the sign of a complex number, x / |x|, as having a zero derivative.
nondifferentiable(Sign, Floor, Ceil, RoundNearestEven, Not, IsFinite)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import elementwise_rule  # noqa: E402

register_rule(batch_rule, Unary, elementwise_rule)  # every unary op, one rule
