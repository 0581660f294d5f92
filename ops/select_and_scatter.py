"""SelectAndScatter: pick one element per window, scatter-combine a source value into it.

The classic use is the gradient of max pooling: ``select`` is ``>=`` (the
first maximal element of each window wins) and ``scatter`` is ``+``.

>>> import numpy as np, hlodsl as hd
>>> ge = lambda a, b: hd.ops.Compare("GE")(a, b)
>>> add = lambda a, b: hd.ops.Add()(a, b)
>>> x, g = hd.array(np.float32([1, 3, 2, 0])), hd.array(np.float32([10, 20]))
>>> SelectAndScatter(ge, add, (2,), (2,))(x, g, hd.array(np.float32(0)))
hlodsl.Array[float32, (4,)]([ 0., 10., 20.,  0.])
"""

from __future__ import annotations

from typing import Callable

import attrs

from hlodsl.dtypes import pred
from hlodsl.errors import require
from hlodsl.op import HloOp, frozen
from hlodsl.staging import stage_computation
from hlodsl.types import ArrayType

from ._checks import dims
from .reduce_window import (check_window, ones, pairs, takes, window_shape, window_text,
                            zero_pads)

__all__ = ["SelectAndScatter"]


@frozen
class SelectAndScatter(HloOp, opcode="select-and-scatter"):
    """Scatter ``source`` into the elements ``select`` picks in each window of ``operand``.

    Called as ``SelectAndScatter(select, scatter, window_dimensions, ...)(operand,
    source, init)``. ``source`` has the shape of the windowed operand (as a
    ReduceWindow with the same window would give); ``select(a, b)`` returns pred,
    true to keep the currently selected ``a`` over ``b``; every result element
    starts at ``init`` and is combined with the source values scattered to it by
    ``scatter(acc, value)``. The result has the operand's shape and type.
    """

    select: Callable
    scatter: Callable
    window_dimensions: tuple[int, ...] = attrs.field(converter=dims)
    window_strides: tuple[int, ...] = attrs.field(
        converter=dims, default=attrs.Factory(ones, takes_self=True))
    padding: tuple[tuple[int, int], ...] = attrs.field(
        converter=pairs, default=attrs.Factory(zero_pads, takes_self=True))

    def __attrs_post_init__(self):
        check_window(self, ("window_strides", "padding"), ("window_dimensions", "window_strides"))
        if any(lo < 0 or hi < 0 for lo, hi in self.padding):
            raise ValueError(f"{self!r}: padding must be non-negative, got {self.padding}")

    def _comps(self, operand, source):
        elem, src = ArrayType(operand.dtype, ()), ArrayType(source.dtype, ())
        return (stage_computation(self.select, (elem, elem)),
                stage_computation(self.scatter, (src, src)))

    def result_type(self, operand, source, init):
        types = (operand, source, init)
        require(source.dtype is operand.dtype and init.dtype is operand.dtype, self, types,
                "operand, source and init must have the same element type")
        require(init.shape == (), self, types, "init must be a scalar")
        shape = window_shape(self, operand, types)
        require(source.shape == shape, self, types,
                f"source must have the windowed operand's shape {shape}")
        require(takes(self.select, 2) and takes(self.scatter, 2), self, types,
                "select and scatter must each take two scalars")
        select, scatter = self._comps(operand, source)
        require(select.result_type == ArrayType(pred, ()), self, types,
                f"select must return pred[], it returns {select.result_type}")
        require(scatter.result_type == init, self, types,
                f"scatter must return {init}, it returns {scatter.result_type}")
        return operand

    def attributes(self, operand_types, result_type, ctx):
        select, scatter = self._comps(*operand_types[:2])
        return [window_text(self), f"select={ctx.computation(select)}",
                f"scatter={ctx.computation(scatter)}"]
