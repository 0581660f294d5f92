"""Elementwise binary ops: both operands of one type, result of that type.

HLO does not broadcast or promote: ``Add()(f32[3,4], f32[4])`` is an error
here; ``hlodsl.stdlib.add`` (and ``+``) broadcast numpy-style first.

>>> import numpy as np, hlodsl as hd
>>> Add()(hd.array(np.float32([1, 2])), hd.array(np.float32([10, 20])))
hlodsl.Array[float32, (2,)]([11., 22.])
"""

from __future__ import annotations

from typing import Callable, ClassVar

import numpy as np

from hlodsl.arrays.dtypes import Bool, ComplexFloating, ElementType, Floating, Integer, Number
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen

from .unary import check_kinds

__all__ = [
    "Binary", "Add", "Subtract", "Multiply", "Divide", "Remainder", "Power", "Maximum",
    "Minimum", "Atan2", "And", "Or", "Xor",
]


@frozen
class Binary(HloOp):
    """Base of elementwise binary ops."""

    kinds: ClassVar[tuple[type[ElementType], ...]] = (Number,)
    #: Kinds the spec allows that XLA:CPU gets wrong: (kind, why) pairs, refused.
    refused: ClassVar[tuple] = ()
    numpy: ClassVar[Callable | None] = None

    def result_type(self, x, y):
        require(x == y, self, (x, y),
                "elementwise operands must have equal shapes and element types (HLO does "
                "not broadcast or promote; hlodsl.stdlib functions and operators do)")
        check_kinds(self, (x, y))
        return x

    def reference(self, x, y):
        return type(self).numpy(x, y)


def _int_div(x, y):
    # XLA integer division truncates toward zero (C semantics), unlike numpy's floor;
    # in integers throughout (float64 would round 64-bit quotients).
    x, y = np.asarray(x), np.asarray(y)
    if np.issubdtype(x.dtype, np.integer):
        q = x // y
        return (q + ((q < 0) & (x % y != 0)).astype(q.dtype)).astype(x.dtype)
    return np.divide(x, y)


class Add(Binary, opcode="add"):
    """x + y; logical or on pred."""

    kinds = (Bool, Number)
    numpy = staticmethod(np.add)


class Subtract(Binary, opcode="subtract"):
    numpy = staticmethod(np.subtract)


class Multiply(Binary, opcode="multiply"):
    """x * y; logical and on pred."""

    kinds = (Bool, Number)
    numpy = staticmethod(np.multiply)


class Divide(Binary, opcode="divide"):
    """x / y; integer division truncates toward zero."""

    numpy = staticmethod(_int_div)


class Remainder(Binary, opcode="remainder"):
    """C-style remainder: the sign follows the dividend (``np.fmod``)."""

    kinds = (Integer, Floating)
    refused = ((ComplexFloating, "XLA:CPU (jaxlib 0.10.2) crashes compiling a complex remainder"),)
    numpy = staticmethod(np.fmod)


class Power(Binary, opcode="power"):
    numpy = staticmethod(np.power)


# NOTE: XLA:CPU's maximum and minimum of complex numbers (jaxlib 0.10.2) return
# the first operand whenever the real parts tie, instead of ordering by the
# imaginary parts as the spec's lexicographic order does (jax lowers them by
# hand): complex is refused, with that reason.
_COMPLEX_ORDER = ((ComplexFloating, ("XLA:CPU (jaxlib 0.10.2) does not order complex numbers "
                                     "lexicographically when their real parts tie")),)


class Maximum(Binary, opcode="maximum"):
    """The larger of x and y (NaN propagates); logical or on pred."""

    kinds = (Bool, Integer, Floating)
    refused = _COMPLEX_ORDER
    numpy = staticmethod(np.maximum)


class Minimum(Binary, opcode="minimum"):
    """The smaller of x and y (NaN propagates); logical and on pred."""

    kinds = (Bool, Integer, Floating)
    refused = _COMPLEX_ORDER
    numpy = staticmethod(np.minimum)


def _atan2(y, x):
    """numpy's atan2; complex by the spec's formula, which on log's branch cut (real part
    +-pi) may land on the other side from XLA's: the side follows a rounded zero's sign."""
    if np.iscomplexobj(y):  # the HLO spec's complex atan2: -i log((x + iy) / sqrt(x^2 + y^2))
        return -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))
    return np.arctan2(y, x)


class Atan2(Binary, opcode="atan2"):
    """atan2(y, x), the angle of the point (x, y); complex too, as the HLO spec defines it.

    Complex: ``-i log((x + iy) / sqrt(x^2 + y^2))``, holomorphic in both operands. XLA
    evaluates that formula as written, so where x^2 + y^2 underflows (parts below about
    1e-154 in f64, 1e-19 in f32) or overflows the result is NaN, and where a product of
    parts is subnormal XLA:CPU flushes it to zero, which can put a result that lies on
    log's branch cut (real part +-pi) on the other side: all as in jax.

    >>> import numpy as np, hlodsl as hd
    >>> Atan2()(hd.array(np.float64([1, -1])), hd.array(np.float64([0, 0])))
    hlodsl.Array[float64, (2,)]([ 1.57079633, -1.57079633])
    """

    kinds = (Floating, ComplexFloating)
    numpy = staticmethod(_atan2)


class And(Binary, opcode="and"):
    kinds = (Bool, Integer)
    numpy = staticmethod(np.bitwise_and)


class Or(Binary, opcode="or"):
    kinds = (Bool, Integer)
    numpy = staticmethod(np.bitwise_or)


class Xor(Binary, opcode="xor"):
    kinds = (Bool, Integer)
    numpy = staticmethod(np.bitwise_xor)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms): cotangents of (x, y) given the result's ct -------

from hlodsl.ir.rules import nondifferentiable, vjp_rule  # noqa: E402

from ._ad import div, full_like, mul, neg  # noqa: E402


@vjp_rule.dispatch
def add_vjp(op: Add, ct, out, x, y):
    return ct, ct


@vjp_rule.dispatch
def subtract_vjp(op: Subtract, ct, out, x, y):
    return ct, neg(ct)


@vjp_rule.dispatch
def multiply_vjp(op: Multiply, ct, out, x, y):
    return mul(ct, y), mul(ct, x)


@vjp_rule.dispatch
def divide_vjp(op: Divide, ct, out, x, y):
    ct_x = div(ct, y)
    return ct_x, neg(mul(ct_x, out))


@vjp_rule.dispatch
def power_vjp(op: Power, ct, out, x, y):
    # d/dx x^y = y x^(y-1); d/dy x^y = log(x) x^y, taken as 0 where x == 0 (as jax does).
    from .compare import Compare, Select
    from .unary import Log

    one = full_like(y, 1)
    ct_x = mul(ct, mul(y, Power()(x, Subtract()(y, one))))
    zero = full_like(x, 0)
    is_zero = Compare("EQ")(x, zero)
    safe_x = Select()(is_zero, full_like(x, 1), x)
    ct_y = mul(ct, Select()(is_zero, zero, mul(Log()(safe_x), out)))
    return ct_x, ct_y


def _pick(op, ct, x, y, direction):
    # Where x wins ct goes to x, where y wins to y; ties split it evenly (as jax does).
    from .compare import Compare, Select

    zero, half, one = full_like(x, 0), full_like(x, 0.5), full_like(x, 1)
    wins = Compare(direction)(x, y)
    tie = Compare("EQ")(x, y)
    share = Select()(wins, one, Select()(tie, half, zero))
    return mul(ct, share), mul(ct, Subtract()(one, share))


@vjp_rule.dispatch
def maximum_vjp(op: Maximum, ct, out, x, y):
    return _pick(op, ct, x, y, "GT")


@vjp_rule.dispatch
def minimum_vjp(op: Minimum, ct, out, x, y):
    return _pick(op, ct, x, y, "LT")


@vjp_rule.dispatch
def atan2_vjp(op: Atan2, ct, out, x, y):
    # atan2(x, y): d/dx = y / (x^2 + y^2), d/dy = -x / (x^2 + y^2).
    denom = Add()(mul(x, x), mul(y, y))
    scaled = div(ct, denom)
    return mul(scaled, y), neg(mul(scaled, x))


@vjp_rule.dispatch
def remainder_vjp(op: Remainder, ct, out, x, y):
    # fmod(x, y) = x - trunc(x / y) y.
    from .unary import Abs, Floor, Sign

    q = div(x, y)
    trunc = mul(Sign()(q), Floor()(Abs()(q)))
    return ct, neg(mul(ct, trunc))


nondifferentiable(And, Or, Xor)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule, register_rule  # noqa: E402

from ._batch import elementwise_rule  # noqa: E402

register_rule(batch_rule, Binary, elementwise_rule)  # every binary op, one rule
