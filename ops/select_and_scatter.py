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

from hlodsl.arrays.dtypes import pred
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.ir.staging import stage_computation
from hlodsl.arrays.types import ArrayType

from ._checks import dims, function
from .reduce_window import (check_window, ones, pairs, select_gather, takes, window_shape,
                            window_text, zero_pads)

__all__ = ["SelectAndScatter"]


@frozen
class SelectAndScatter(HloOp, opcode="select-and-scatter"):
    """Scatter ``source`` into the elements ``select`` picks in each window of ``operand``.

    Called as ``SelectAndScatter(select, scatter, window_dimensions, ...)(operand,
    source, init)``. ``source`` has the shape of the windowed operand (as a
    ReduceWindow with the same window would give, so it is empty where no window
    fits and nothing is scattered); ``select(a, b)`` returns pred,
    true to keep the currently selected ``a`` over ``b``; every result element
    starts at ``init`` and is combined with the source values scattered to it by
    ``scatter(acc, value)``. The result has the operand's shape and type.
    """

    select: Callable = attrs.field(converter=function)
    scatter: Callable = attrs.field(converter=function)
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


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# The result is linear in source (and init): each source value lands on the
# element its window selects. The cotangent of source gathers ct back from those
# elements: a two-operand ReduceWindow over (operand, ct) that carries the
# selected element's ct along (jax's select_and_gather_add). The operand only
# chooses positions, so it has no derivative (zero almost everywhere).

from hlodsl.ir.rules import jvp_rule, vjp_rule  # noqa: E402


def select_direction(select: Callable, dtype) -> str | None:
    """'GE', 'GT', 'LE' or 'LT' when ``select(a, b)`` is that one comparison of a with b."""
    from .compare import Compare

    scalar = ArrayType(dtype, ())
    comp = stage_computation(select, (scalar, scalar))
    root = comp.root
    if len(comp.nodes) != 3 or tuple(root.operands) != tuple(comp.params):
        return None
    if isinstance(root.op, Compare) and root.op.direction in ("GE", "GT", "LE", "LT"):
        return root.op.direction
    return None


def _scatter_kind(op: SelectAndScatter, dtype) -> None:
    from .reduce import reduction_kind

    if reduction_kind(_AsReduce(op.scatter), dtype) != "add":
        raise NotImplementedError(
            f"no derivative rule for {op!r}: only an add scatter is differentiated")


@attrs.frozen
class _AsReduce:
    """What ``reduction_kind`` reads of a Reduce: its computation."""

    computation: Callable


@vjp_rule.dispatch
def select_and_scatter_vjp(op: SelectAndScatter, ct, out, operand, source, init):
    from ._ad import sum_dims

    _scatter_kind(op, ct.dtype)
    direction = select_direction(op.select, operand.dtype)
    if direction is None:
        raise NotImplementedError(
            f"no derivative rule for {op!r}: the select computation must be one "
            "comparison (GE, GT, LE or LT) of its two parameters, in order")
    ct_source = select_gather(direction, op.window_dimensions, op.window_strides,
                              op.padding, operand, ct)
    return None, ct_source, sum_dims(ct, tuple(range(ct.ndim)))


@jvp_rule.dispatch
def select_and_scatter_jvp(op: SelectAndScatter, tangents: tuple, out, *args):
    # Linear in (source, init): the same op on their tangents.
    from ._ad import zeros_like_array

    _, t_source, t_init = tangents
    if t_source is None and t_init is None:
        return None
    _scatter_kind(op, out.dtype)
    operand, source, init = args
    return op(operand, t_source if t_source is not None else zeros_like_array(source),
              t_init if t_init is not None else zeros_like_array(init))


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402
from hlodsl.ir.rules import NotBatchableError  # noqa: E402

from ._batch import batch_size, with_batch  # noqa: E402


@batch_rule.dispatch
def select_and_scatter_batched(op: SelectAndScatter, args: tuple, dims: tuple):
    if dims[2] is not None:
        raise NotBatchableError(f"vmap: {op!r} with a batched initial value (one per "
                                "example) cannot be batched; pass it unbatched")
    size = batch_size(args, dims)
    operand, source = (with_batch(a, d, size) for a, d in zip(args[:2], dims[:2]))
    batched = SelectAndScatter(op.select, op.scatter, (1, *op.window_dimensions),
                               (1, *op.window_strides), ((0, 0), *op.padding))
    return batched(operand, source, args[2]), 0
