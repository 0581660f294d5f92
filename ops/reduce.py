"""Reduce: fold dimensions with a staged Python computation (variadic).

The computation is any Python callable on scalar arrays; it is staged into an
HLO sub-computation. For N operands it takes 2N scalars (N accumulators, then
N elements) and returns N scalars.

>>> import numpy as np, hlodsl as hd
>>> def add(a, b): return hd.ops.Add()(a, b)
>>> Reduce(add, (1,))(hd.array(np.float32([[1, 2], [3, 4]])), hd.array(np.float32(0)))
hlodsl.Array[float32, (2,)]([3., 7.])
"""

from __future__ import annotations

from typing import Callable

import attrs

from hlodsl.errors import require
from hlodsl.op import HloOp, frozen
from hlodsl.staging import stage_computation
from hlodsl.types import ArrayType, TupleType

from ._checks import check_dims, check_one_float_precision, dims, dims_text

__all__ = ["Reduce"]


@frozen
class Reduce(HloOp, opcode="reduce"):
    """Reduce ``dimensions`` of N operands with N initial values and ``computation``.

    Called as ``Reduce(f, dims)(*operands, *inits)``; returns one array for one
    operand, a tuple for several.
    """

    computation: Callable
    dimensions: tuple[int, ...] = attrs.field(converter=dims)

    def __attrs_post_init__(self):
        check_dims(self, "dimensions", self.dimensions)

    def _split(self, types):
        n = len(types) // 2
        return types[:n], types[n:]

    def _scalars(self, inits):
        return tuple(ArrayType(t.dtype, ()) for t in inits)

    def result_type(self, *types):
        require(len(types) >= 2 and len(types) % 2 == 0, self, types,
                "takes N operands followed by N initial values")
        operands, inits = self._split(types)
        shape = operands[0].shape
        for t in operands:
            require(t.shape == shape, self, types, "all operands must have the same shape")
        for o, i in zip(operands, inits):
            require(i.shape == () and i.dtype is o.dtype, self, types,
                    "each initial value must be a scalar of its operand's element type")
        require(all(d < len(shape) for d in self.dimensions), self, types,
                f"dimensions {self.dimensions} out of range for rank {len(shape)}")
        check_one_float_precision(self, types)
        scalars = self._scalars(inits)
        comp = stage_computation(self.computation, scalars + scalars)
        expect = scalars[0] if len(scalars) == 1 else TupleType(scalars)
        require(comp.result_type == expect, self, types,
                f"the computation must return {expect}, it returns {comp.result_type}")
        kept = tuple(s for d, s in enumerate(shape) if d not in self.dimensions)
        outs = tuple(ArrayType(t.dtype, kept) for t in operands)
        return outs[0] if len(outs) == 1 else TupleType(outs)

    def attributes(self, operand_types, result_type, ctx):
        scalars = self._scalars(self._split(operand_types)[1])
        comp = stage_computation(self.computation, scalars + scalars)
        return [f"dimensions={dims_text(self.dimensions)}", f"to_apply={ctx.computation(comp)}"]
