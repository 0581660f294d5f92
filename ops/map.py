"""Map: apply a staged Python scalar computation elementwise over N arrays.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.float32([1, 2]))
>>> Map(lambda a, b: hd.ops.Multiply()(a, b))(x, x)
hlodsl.Array[float32, (2,)]([1., 4.])
"""

from __future__ import annotations

from typing import Callable


from hlodsl.errors import require
from hlodsl.op import HloOp, frozen
from hlodsl.staging import stage_computation
from hlodsl.types import ArrayType

from ._checks import check_one_float_precision, dims_text

__all__ = ["Map"]


@frozen
class Map(HloOp, opcode="map"):
    """``computation`` applied to corresponding elements of same-shape operands."""

    computation: Callable

    def _comp(self, types):
        return stage_computation(self.computation, tuple(ArrayType(t.dtype, ()) for t in types))

    def result_type(self, *types):
        require(len(types) >= 1, self, types, "needs at least one operand")
        require(all(t.shape == types[0].shape for t in types), self, types,
                "all operands must have the same shape")
        check_one_float_precision(self, types)
        out = self._comp(types).result_type
        require(isinstance(out, ArrayType) and out.shape == (), self, types,
                f"the computation must return one scalar, it returns {out}")
        return ArrayType(out.dtype, types[0].shape)

    def attributes(self, operand_types, result_type, ctx):
        rank = len(operand_types[0].shape)
        return [f"dimensions={dims_text(range(rank))}",
                f"to_apply={ctx.computation(self._comp(operand_types))}"]
