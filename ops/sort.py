"""Sort: sort N same-shape operands along one dimension by a staged comparator.

The comparator is any Python callable on 2N scalars ``(a0, b0, a1, b1, ...)``
(``a_i``, ``b_i`` elements of operand i) returning a pred scalar: true when
the element at ``a`` must come before the one at ``b``. Every operand is
permuted the same way, so sorting (keys, values) carries the values along.

>>> import numpy as np, hlodsl as hd
>>> lt = lambda a, b: hd.ops.Compare("LT")(a, b)
>>> Sort(lt, 0)(hd.array(np.int32([3, 1, 2])))
hlodsl.Array[int32, (3,)]([1, 2, 3])
"""

from __future__ import annotations

from typing import Callable

import attrs

from hlodsl.dtypes import pred
from hlodsl.errors import require
from hlodsl.op import HloOp, frozen
from hlodsl.staging import stage_computation
from hlodsl.types import ArrayType, TupleType

from .reduce_window import takes

__all__ = ["Sort"]


@frozen
class Sort(HloOp, opcode="sort"):
    """Sort operands along ``dimension``; one array for one operand, a tuple for several.

    ``is_stable=True`` keeps elements the comparator finds equivalent (neither
    comes before the other) in their original order.
    """

    comparator: Callable
    dimension: int = attrs.field(converter=int)
    is_stable: bool = attrs.field(default=False, converter=bool)

    def __attrs_post_init__(self):
        if self.dimension < 0:
            raise ValueError(f"{self!r}: dimension must be non-negative, got {self.dimension}")

    def _comp(self, types):
        scalars = tuple(ArrayType(t.dtype, ()) for t in types for _ in (0, 1))
        return stage_computation(self.comparator, scalars)

    def result_type(self, *types):
        require(len(types) >= 1, self, types, "needs at least one operand")
        require(all(t.shape == types[0].shape for t in types), self, types,
                "all operands must have the same shape")
        require(self.dimension < types[0].rank, self, types,
                f"dimension {self.dimension} out of range for rank {types[0].rank}")
        require(takes(self.comparator, 2 * len(types)), self, types,
                f"the comparator must take {2 * len(types)} scalars (a0, b0, a1, b1, ...)")
        out = self._comp(types).result_type
        require(out == ArrayType(pred, ()), self, types,
                f"the comparator must return pred[], it returns {out}")
        return types[0] if len(types) == 1 else TupleType(types)

    def attributes(self, operand_types, result_type, ctx):
        out = [f"dimensions={{{self.dimension}}}"]
        if self.is_stable:
            out.append("is_stable=true")
        return out + [f"to_apply={ctx.computation(self._comp(operand_types))}"]
