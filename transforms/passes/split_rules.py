"""Which dimension of each operand a slice of an op's result needs: the split pass's rules.

Splitting computes a region of the program in slices along one dimension.
For that, each op in the region must be computable from slices of its
operands: ``operand_dims(node, d)`` says, for a slice of the result along
dimension ``d``, which dimension of each operand is sliced the same way
(``None``: the operand is used whole), or returns ``None`` when the op
cannot be computed in slices along ``d``. ``result_dim(node, i, d)`` reads the
same rule forward: the result dimension that follows operand ``i``'s
dimension ``d``, ``REDUCED`` where the op sums (or takes the max of) over
``d`` so that slices give partial results to accumulate, or ``None``.
``sliced_op(node, d, size)`` is the node's op for a slice of ``size`` along
``d`` (ops whose static operands hold shapes change; others stay).

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.ir.staging import stage
>>> a = hd.array(np.ones((4, 3), np.float32))
>>> comp = stage(lambda a: hd.ops.Transpose((1, 0))(a), (a,), {}).computation
>>> operand_dims(comp.root, 0), result_dim(comp.root, 0, 0)
([1], 1)
"""

from __future__ import annotations

from math import prod

import attrs

from hlodsl.ir.graph import Node
from hlodsl.ir.structural import GetTupleElement
from hlodsl.arrays.types import ArrayType, TupleType
from hlodsl.ops.binary import Binary
from hlodsl.ops.broadcast import Broadcast
from hlodsl.ops.clamp import Clamp
from hlodsl.ops.compare import Compare, Select
from hlodsl.ops.concatenate import Concatenate
from hlodsl.ops.convert import Convert
from hlodsl.ops.dot import Dot
from hlodsl.ops.gather import Gather
from hlodsl.ops.iota import Iota
from hlodsl.ops.reduce import Reduce, reduction_kind
from hlodsl.ops.reshape import Reshape, Transpose
from hlodsl.ops.reverse import Reverse
from hlodsl.ops.slice import Slice
from hlodsl.ops.topk import TopK
from hlodsl.ops.triangular_solve import TriangularSolve
from hlodsl.ops.unary import Unary

__all__ = ["operand_dims", "result_dim", "sliced_op", "REDUCED", "accumulation",
           "shape_of", "dot_dims"]

#: ``result_dim``'s answer where the op reduces over the sliced dimension.
REDUCED = "reduced"

_ELEMENTWISE = (Unary, Binary, Compare, Select, Convert, Clamp)


def shape_of(t) -> tuple[int, ...]:
    """The shape of an array type, or the common shape of a tuple's elements."""
    if isinstance(t, TupleType):
        shapes = {e.shape for e in t.elements if isinstance(e, ArrayType)}
        return shapes.pop() if len(shapes) == 1 else ()
    return t.shape


def dot_dims(op: Dot, lhs_rank: int, rhs_rank: int) -> tuple[list, list, list]:
    """The result's dimensions of a ``Dot`` as (operand, dim) pairs per group:
    batch (both operands), lhs free, rhs free."""
    lhs_free = [d for d in range(lhs_rank) if d not in op.lhs_batch + op.lhs_contracting]
    rhs_free = [d for d in range(rhs_rank) if d not in op.rhs_batch + op.rhs_contracting]
    return list(zip(op.lhs_batch, op.rhs_batch)), lhs_free, rhs_free


def operand_dims(node: Node, d: int) -> list[int | None] | None:
    """Per operand, the dimension to slice for a slice of ``node`` along ``d`` (None: whole).

    None (instead of a list) where ``node`` cannot be computed in slices along ``d``.
    """
    op, ins = node.op, [shape_of(o.type) for o in node.operands]
    out = shape_of(node.type)
    if isinstance(op, _ELEMENTWISE):
        return [d if len(s) == len(out) else None for s in ins]
    if isinstance(op, Broadcast):
        return [op.dimensions.index(d) if d in op.dimensions else None]
    if isinstance(op, Transpose):
        return [op.permutation[d]]
    if isinstance(op, Reshape):
        for j, size in enumerate(ins[0]):
            if size == out[d] and prod(ins[0][:j]) == prod(out[:d]):
                return [j]
        return None
    if isinstance(op, Dot):
        batch, lhs_free, rhs_free = dot_dims(op, len(ins[0]), len(ins[1]))
        if d < len(batch):
            return list(batch[d])
        d -= len(batch)
        if d < len(lhs_free):
            return [lhs_free[d], None]
        return [None, rhs_free[d - len(lhs_free)]]
    if isinstance(op, Reduce):
        n = len(node.operands) // 2
        kept = [k for k in range(len(ins[0])) if k not in op.dimensions]
        return [kept[d]] * n + [None] * n
    if isinstance(op, TopK):
        return [d] if d != len(ins[0]) - 1 else None
    if isinstance(op, TriangularSolve):  # columns (left) or rows (right) of b are independent
        rank = len(out)
        if d < rank - 2:
            return [d, d] if len(ins[0]) == rank else [None, d]
        return [None, d] if d == (rank - 1 if op.left_side else rank - 2) else None
    if isinstance(op, Iota):
        return []
    if isinstance(op, GetTupleElement):
        return [d]
    if isinstance(op, Slice):
        whole = (op.start_indices[d], op.limit_indices[d], op.strides[d]) == (0, ins[0][d], 1)
        return [d] if whole else None
    if isinstance(op, Concatenate):
        return [d] * len(ins) if d != op.dimension else None
    if isinstance(op, Reverse):
        return [d] if d not in op.dimensions else None
    if isinstance(op, Gather):
        return _gather_dims(op, ins, d)
    return None


def _gather_dims(op: Gather, ins: list, d: int) -> list[int | None] | None:
    """A gather's result along an offset dimension whose window is the whole operand
    dimension (``take(c, i, axis=1)``'s rows: the operand's rows), or along a batch
    dimension (its indices' dimension; the operand whole)."""
    if op.operand_batching_dims:
        return None
    if d in op.offset_dims:
        dropped = op.collapsed_slice_dims
        window = [k for k in range(len(ins[0])) if k not in dropped]
        od = window[op.offset_dims.index(d)]
        whole = op.slice_sizes[od] == ins[0][od] and od not in op.start_index_map
        return [od, None] if whole else None
    batch = [k for k in range(len(ins[1])) if k != op.index_vector_dim]
    b = [r for r in range(d + 1) if r not in op.offset_dims].index(d)
    return [None, batch[b]]


def result_dim(node: Node, i: int, d: int) -> int | str | None:
    """The dimension of ``node``'s result that follows operand ``i``'s dimension ``d``.

    ``REDUCED`` where the node is a reduction over ``d`` whose partial results
    over slices combine (``accumulation``); None where slices cannot follow.
    """
    out = shape_of(node.type)
    for r in range(len(out)):
        dims = operand_dims(node, r)
        if dims is not None and dims[i] == d:
            return r
    return REDUCED if accumulation(node, i, d) is not None else None


def accumulation(node: Node, i: int, d: int) -> tuple[str, list[int | None]] | None:
    """How slices of operand ``i`` along ``d`` give partial results of ``node``.

    ``(kind, dims)``: ``kind`` the binary op combining partial results ('add',
    'max', 'min', 'mul'; 'topk' for a top-k along ``d``; 'reduce' for a reduction whose
    partial results combine by its own computation, as a variadic arg-max's),
    ``dims`` the dimension to slice for each operand
    (None: whole). None where the node does not reduce over ``d`` that way.
    """
    op = node.op
    if isinstance(op, Dot):
        contracting = (op.lhs_contracting, op.rhs_contracting)[i]
        if d not in contracting:
            return None
        k = contracting.index(d)
        return "add", [op.lhs_contracting[k], op.rhs_contracting[k]]
    if isinstance(op, TopK) and d == len(node.operands[0].type.shape) - 1:
        return "topk", [d]  # merged: the best k of the best so far and the slice's
    n = len(node.operands) // 2
    if isinstance(op, Reduce) and d in op.dimensions and i < n:
        kind = reduction_kind(op, node.operands[0].type.dtype) if n == 1 else None
        if kind not in ("add", "max", "min", "mul"):
            kind = "reduce"  # any other (an arg-max's (value, index) pairs): its own computation
        return kind, [d] * n + [None] * n
    return None


def sliced_op(node: Node, d: int, size: int):
    """``node``'s op computing a slice of ``size`` along result dimension ``d``.

    Every static operand that holds the sliced extent changes with it: the
    result shape of a broadcast, reshape or iota, and the end of a slice
    (which ``operand_dims`` accepts only along a dimension it keeps whole,
    from 0 with stride 1, so its slice of ``size`` ends at ``size``), and a
    gather's window along the operand dimension it takes whole."""
    op = node.op
    if isinstance(op, (Broadcast, Reshape, Iota)):
        shape = list(op.shape)
        shape[d] = size
        return attrs.evolve(op, shape=tuple(shape))
    if isinstance(op, Slice):
        limits = list(op.limit_indices)
        limits[d] = size
        return attrs.evolve(op, limit_indices=tuple(limits))
    if isinstance(op, Gather) and d in op.offset_dims:  # the window's whole operand dimension
        sizes = list(op.slice_sizes)
        sizes[operand_dims(node, d)[0]] = size
        return attrs.evolve(op, slice_sizes=tuple(sizes))
    return op
