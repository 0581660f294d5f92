"""Rounding and precision: RoundNearestAfz, ReducePrecision.

>>> import numpy as np, hlodsl as hd
>>> RoundNearestAfz()(hd.array(np.float32([0.5, 1.5, -2.5])))
hlodsl.Array[float32, (3,)]([ 1.,  2., -3.])
>>> ReducePrecision(8, 7)(hd.array(np.float32([1.00390625])))  # to bfloat16's precision
hlodsl.Array[float32, (1,)]([1.])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import Floating
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen

from ._checks import integer
from .unary import Unary

__all__ = ["RoundNearestAfz", "ReducePrecision"]


def _round_afz(x):
    x = np.asarray(x)
    t = np.trunc(x)
    # x - trunc(x) is exact, so ties are found exactly (floor(|x| + 0.5) is not).
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


class RoundNearestAfz(Unary, opcode="round-nearest-afz"):
    """Round to nearest, ties away from zero (C's ``round``)."""

    kinds = (Floating,)
    numpy = staticmethod(_round_afz)


@frozen
class ReducePrecision(HloOp, opcode="reduce-precision"):
    """Round to a float format with ``exponent_bits`` and ``mantissa_bits``, same dtype.

    Emulates narrower formats: (8, 7) is bfloat16, (5, 10) is float16.
    """

    exponent_bits: int = attrs.field(converter=integer)
    mantissa_bits: int = attrs.field(converter=integer)

    def __attrs_post_init__(self):
        if self.exponent_bits < 1 or self.mantissa_bits < 0:
            raise ValueError(f"{self!r}: needs exponent_bits >= 1 and mantissa_bits >= 0")

    def result_type(self, x):
        require(issubclass(x.dtype, Floating), self, (x,), "the operand must be floating-point")
        return x

    def attributes(self, operand_types, result_type, ctx):
        return [f"exponent_bits={self.exponent_bits}", f"mantissa_bits={self.mantissa_bits}"]


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import nondifferentiable, vjp_rule  # noqa: E402

# Piecewise constant, as the other roundings (ops/unary.py).
nondifferentiable(RoundNearestAfz)


@vjp_rule.dispatch
def reduce_precision_vjp(op: ReducePrecision, ct, out, x):
    # As jax: treated as the identity, with the cotangent rounded the same way.
    return (op(ct),)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402


@batch_rule.dispatch
def reduceprecision_batched(op: ReducePrecision, args: tuple, dims: tuple):
    return op(*args), 0  # ReducePrecision is elementwise: a leading batch dimension is one more
