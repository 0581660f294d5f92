"""Concatenate: join arrays along one dimension (HLO concatenate).

>>> import numpy as np, hlodsl as hd
>>> a, b = hd.array(np.int32([[1], [2]])), hd.array(np.int32([[3, 4], [5, 6]]))
>>> Concatenate(1)(a, b)
hlodsl.Array[int32, (2, 3)](
  [[1, 3, 4],
   [2, 5, 6]])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType

from ._checks import integer

__all__ = ["Concatenate"]


@frozen
class Concatenate(HloOp, opcode="concatenate"):
    """Operands joined along ``dimension``; all other dimensions must agree.

    Takes one or more operands of one element type and one rank; the result's
    ``dimension`` is the sum of theirs.
    """

    dimension: int = attrs.field(converter=integer, default=0)

    def __attrs_post_init__(self):
        if self.dimension < 0:
            raise ValueError(f"{self!r}: dimension must be non-negative")

    def result_type(self, *types):
        require(len(types) >= 1, self, types, "needs at least one operand")
        first = types[0]
        require(self.dimension < first.rank, self, types,
                f"dimension {self.dimension} out of range for rank {first.rank}")
        for t in types:
            require(t.rank == first.rank, self, types, "all operands must have the same rank")
            require(t.dtype is first.dtype, self, types,
                    "all operands must have the same element type")
            require(all(a == b for d, (a, b) in enumerate(zip(t.shape, first.shape))
                        if d != self.dimension), self, types,
                    f"operands may differ only in dimension {self.dimension}")
        shape = list(first.shape)
        shape[self.dimension] = sum(t.shape[self.dimension] for t in types)
        return ArrayType(first.dtype, shape)

    def attributes(self, operand_types, result_type, ctx):
        return [f"dimensions={{{self.dimension}}}"]

    def reference(self, *arrays):
        return np.concatenate(arrays, axis=self.dimension)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402


@vjp_rule.dispatch
def concatenate_vjp(op: Concatenate, ct, out, *xs):
    # Each operand takes back its own stretch of ct along the dimension.
    from .slice import Slice

    cts, start, d = [], 0, op.dimension
    for x in xs:
        stop = start + x.shape[d]
        lo = tuple(start if i == d else 0 for i in range(ct.ndim))
        hi = tuple(stop if i == d else n for i, n in enumerate(ct.shape))
        cts.append(Slice(lo, hi)(ct))
        start = stop
    return tuple(cts)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import all_batched  # noqa: E402


@batch_rule.dispatch
def concatenate_batched(op: Concatenate, args: tuple, dims: tuple):
    return Concatenate(op.dimension + 1)(*all_batched(args, dims)), 0
