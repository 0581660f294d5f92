"""Broadcast: place the operand's dimensions into a larger shape (HLO broadcast-in-dim).

>>> import numpy as np, hlodsl as hd
>>> Broadcast((2, 3), (1,))(hd.array(np.float32([1, 2, 3])))
hlodsl.Array[float32, (2, 3)](
  [[1., 2., 3.],
   [1., 2., 3.]])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType

from ._checks import check_dims, dims, dims_text, sizes

__all__ = ["Broadcast"]


@frozen
class Broadcast(HloOp, opcode="broadcast"):
    """Result of ``shape``; operand dimension i becomes result dimension ``dimensions[i]``.

    Sizes must match exactly (degenerate size-1 broadcasting is the stdlib's
    job: it reshapes those dimensions away first).
    """

    shape: tuple[int, ...] = attrs.field(converter=sizes)
    dimensions: tuple[int, ...] = attrs.field(converter=dims, default=())

    def __attrs_post_init__(self):
        check_dims(self, "dimensions", self.dimensions, len(self.shape))

    def result_type(self, x):
        require(len(self.dimensions) == x.rank, self, (x,),
                f"dimensions has {len(self.dimensions)} entries for a rank-{x.rank} operand")
        for i, d in enumerate(self.dimensions):
            require(x.shape[i] == self.shape[d], self, (x,),
                    f"operand dimension {i} (size {x.shape[i]}) does not match result "
                    f"dimension {d} (size {self.shape[d]})")
        return ArrayType(x.dtype, self.shape)

    def attributes(self, operand_types, result_type, ctx):
        return [f"dimensions={dims_text(self.dimensions)}"]

    def reference(self, x):
        order = sorted(range(len(self.dimensions)), key=lambda i: self.dimensions[i])
        x = np.transpose(x, order)
        expanded = [1] * len(self.shape)
        for i in order:
            expanded[self.dimensions[i]] = self.shape[self.dimensions[i]]
        return np.broadcast_to(x.reshape(expanded), self.shape)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402

from ._ad import sum_dims  # noqa: E402


@vjp_rule.dispatch
def broadcast_vjp(op: Broadcast, ct, out, x):
    # Sum over the new dimensions; what remains is in sorted(dimensions) order.
    summed = sum_dims(ct, tuple(d for d in range(len(op.shape)) if d not in op.dimensions))
    order = sorted(op.dimensions)
    perm = tuple(order.index(d) for d in op.dimensions)
    if perm != tuple(range(len(perm))):
        from .reshape import Transpose
        summed = Transpose(perm)(summed)
    return (summed,)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import shifted  # noqa: E402


@batch_rule.dispatch
def broadcast_batched(op: Broadcast, args: tuple, dims: tuple):
    (x,) = args
    size = x.shape[0]
    return Broadcast((size, *op.shape), (0, *shifted(op.dimensions)))(x), 0
