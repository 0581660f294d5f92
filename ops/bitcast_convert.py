"""BitcastConvert: reinterpret the bits of each element as another element type.

Equal widths keep the shape. A narrower target adds a trailing dimension
(f32 -> 4 x u8); a wider one consumes the trailing dimension, which must hold
exactly the ratio (4 x u8 -> f32).

>>> import numpy as np, hlodsl as hd
>>> BitcastConvert(hd.uint32)(hd.array(np.float32([1.0])))
hlodsl.Array[uint32, (1,)]([1065353216])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import Bool, ComplexFloating, ElementType, bit_width
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType

from .convert import element_type_of

__all__ = ["BitcastConvert"]


@frozen
class BitcastConvert(HloOp, opcode="bitcast-convert"):
    """The bits of each element of ``x`` read as ``new_dtype`` (see the module docstring).

    Neither type may be pred, and a complex type converts only to itself:
    XLA refuses to reinterpret complex numbers as anything else, as
    ``jax.lax.bitcast_convert_type`` does; bitcast ``Real`` and ``Imag`` instead.
    """

    new_dtype: type[ElementType] = attrs.field(converter=element_type_of)

    def result_type(self, x):
        require(not issubclass(x.dtype, Bool) and not issubclass(self.new_dtype, Bool), self,
                (x,), "pred has no bit layout to reinterpret")
        # NOTE: StableHLO's verifier rejects it ("cannot convert between real and
        # complex types"), and XLA's shape inference one complex type to another.
        require(x.dtype is self.new_dtype or not (
            issubclass(x.dtype, ComplexFloating) or issubclass(self.new_dtype, ComplexFloating)),
            self, (x,), f"XLA cannot bitcast {x.dtype.__name__} to "
            f"{self.new_dtype.__name__}: a complex type converts only to itself (bitcast "
            "ops.Real and ops.Imag of a complex array instead)")
        # NOTE: numpy keeps a sub-byte element in a byte, XLA counts its bits (an f4
        # pair is one u8): a change of width there is left out, not guessed at.
        bits = bit_width(x.dtype), bit_width(self.new_dtype)
        require(bits[0] == bits[1] or min(bits) >= 8, self, (x,),
                f"bitcast of {x.dtype.__name__} ({bits[0]} bits) to {self.new_dtype.__name__} "
                f"({bits[1]} bits) is not supported: sub-byte types bitcast only to types of "
                "their own width (int4/uint4/float4_e2m1fn among themselves)")
        src, dst = x.dtype.np_dtype.itemsize, self.new_dtype.np_dtype.itemsize
        if src == dst:
            return ArrayType(self.new_dtype, x.shape)
        if src > dst:
            return ArrayType(self.new_dtype, x.shape + (src // dst,))
        require(x.rank >= 1 and x.shape[-1] == dst // src, self, (x,),
                f"widening to {self.new_dtype.__name__} needs a trailing dimension of {dst // src}")
        return ArrayType(self.new_dtype, x.shape[:-1])

    def reference(self, x):
        x = np.asarray(x)
        src, dst = x.dtype.itemsize, self.new_dtype.np_dtype.itemsize
        flat = x.reshape(-1).view(self.new_dtype.np_dtype)
        if src == dst:
            return flat.reshape(x.shape)
        return flat.reshape(x.shape + (src // dst,) if src > dst else x.shape[:-1])


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import nondifferentiable  # noqa: E402

# Reinterpreting bits has no derivative (jax: zero tangent), even float to float.
nondifferentiable(BitcastConvert)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402


@batch_rule.dispatch
def bitcast_convert_batched(op: BitcastConvert, args: tuple, dims: tuple):
    # Elementwise; a change of width adds or removes a trailing dimension only.
    return op(*args), 0
