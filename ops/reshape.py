"""Reshape and Transpose.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.arange(6, dtype=np.int32))
>>> Transpose((1, 0))(Reshape((2, 3))(x))
hlodsl.Array[int32, (3, 2)](
  [[0, 3],
   [1, 4],
   [2, 5]])
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType

from ._checks import check_permutation, dims, dims_text, sizes

__all__ = ["Reshape", "Transpose"]


@frozen
class Reshape(HloOp, opcode="reshape"):
    """The same elements in row-major order, in a new ``shape`` of equal size."""

    shape: tuple[int, ...] = attrs.field(converter=sizes)

    def result_type(self, x):
        require(math.prod(self.shape) == x.size, self, (x,),
                f"cannot reshape {x.size} elements into shape {self.shape}")
        return ArrayType(x.dtype, self.shape)

    def reference(self, x):
        return np.reshape(x, self.shape)


@frozen
class Transpose(HloOp, opcode="transpose"):
    """Result dimension i is operand dimension ``permutation[i]``."""

    permutation: tuple[int, ...] = attrs.field(converter=dims)

    def __attrs_post_init__(self):
        check_permutation(self, self.permutation)

    def result_type(self, x):
        require(len(self.permutation) == x.rank, self, (x,),
                f"permutation of length {len(self.permutation)} for a rank-{x.rank} operand")
        return ArrayType(x.dtype, x.dims(self.permutation))

    def attributes(self, operand_types, result_type, ctx):
        return [f"dimensions={dims_text(self.permutation)}"]

    def reference(self, x):
        return np.transpose(x, self.permutation)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402


@vjp_rule.dispatch
def reshape_vjp(op: Reshape, ct, out, x):
    return (Reshape(x.shape)(ct),)


@vjp_rule.dispatch
def transpose_vjp(op: Transpose, ct, out, x):
    inverse = tuple(sorted(range(len(op.permutation)), key=op.permutation.__getitem__))
    return (Transpose(inverse)(ct),)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import shifted  # noqa: E402


@batch_rule.dispatch
def reshape_batched(op: Reshape, args: tuple, dims: tuple):
    (x,) = args
    return Reshape((x.shape[0], *op.shape))(x), 0


@batch_rule.dispatch
def transpose_batched(op: Transpose, args: tuple, dims: tuple):
    (x,) = args
    return Transpose((0, *shifted(op.permutation)))(x), 0
