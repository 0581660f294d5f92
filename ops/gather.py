"""Gather: slices of the operand at run-time start indices (HLO gather).

Follows XLA's gather semantics: every index vector of ``start_indices``
(along ``index_vector_dim``) gives the start of one ``slice_sizes`` window;
``collapsed_slice_dims`` and ``operand_batching_dims`` (both of size <= 1) are
dropped from the window, the remaining window dimensions are placed at
``offset_dims`` of the result, and the batch dimensions (``start_indices``
without ``index_vector_dim``) fill the other result dimensions in order.
Starts are clamped so that each window lies inside the operand.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.arange(6, dtype=np.int32).reshape(3, 2))
>>> rows = Gather(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,),
...               index_vector_dim=1, slice_sizes=(1, 2))
>>> rows(x, hd.array(np.int32([[2], [0]])))
hlodsl.Array[int32, (2, 2)](
  [[4, 5],
   [0, 1]])
"""

from __future__ import annotations

import attrs

from hlodsl.arrays.dtypes import Integer
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType

from ._checks import dims, dims_text, flag, integer

__all__ = ["Gather"]


def check_sorted_unique(op, what: str, axes, sort: bool = True) -> None:
    """``ValueError`` unless ``axes`` are non-negative, distinct (and sorted)."""
    if any(a < 0 for a in axes) or len(set(axes)) != len(axes):
        raise ValueError(f"{op!r}: {what} must be distinct non-negative dimensions, got {axes}")
    if sort and list(axes) != sorted(axes):
        raise ValueError(f"{op!r}: {what} must be sorted, got {axes}")


def check_disjoint(op, what_a: str, a, what_b: str, b) -> None:
    if set(a) & set(b):
        raise ValueError(f"{op!r}: {what_a} {a} and {what_b} {b} must be disjoint")


def index_batch_shape(op, types, indices: ArrayType, index_vector_dim: int,
                      index_count: int, batching_dims, operand: ArrayType, operand_batching):
    """Checks the indices operand; its shape without the index vector dimension."""
    require(issubclass(indices.dtype, Integer), op, types, "indices must have an integer type")
    require(index_vector_dim <= indices.rank, op, types,
            f"index_vector_dim {index_vector_dim} out of range for rank-{indices.rank} indices")
    shape = list(indices.shape) + [1] * (index_vector_dim == indices.rank)
    require(shape[index_vector_dim] == index_count, op, types,
            f"index vectors have {shape[index_vector_dim]} entries, the dimension map "
            f"names {index_count} operand dimensions")
    require(all(d < indices.rank for d in batching_dims), op, types,
            f"indices batching dimensions {batching_dims} out of range")
    require(all(d < operand.rank for d in operand_batching), op, types,
            f"operand batching dimensions {operand_batching} out of range")
    require(indices.dims(batching_dims) == operand.dims(operand_batching), op, types,
            "batching dimensions of operand and indices must have the same sizes")
    del shape[index_vector_dim]
    return tuple(shape)


@frozen
class Gather(HloOp, opcode="gather"):
    """Windows of ``operand`` at the starts in ``start_indices``: ``Gather(...)(operand, idx)``."""

    offset_dims: tuple[int, ...] = attrs.field(converter=dims)
    collapsed_slice_dims: tuple[int, ...] = attrs.field(converter=dims)
    start_index_map: tuple[int, ...] = attrs.field(converter=dims)
    index_vector_dim: int = attrs.field(converter=integer)
    slice_sizes: tuple[int, ...] = attrs.field(converter=dims)
    operand_batching_dims: tuple[int, ...] = attrs.field(converter=dims, default=())
    start_indices_batching_dims: tuple[int, ...] = attrs.field(converter=dims, default=())
    indices_are_sorted: bool = attrs.field(converter=flag, default=False)

    def __attrs_post_init__(self):
        rank = len(self.slice_sizes)
        check_sorted_unique(self, "offset_dims", self.offset_dims)
        check_sorted_unique(self, "collapsed_slice_dims", self.collapsed_slice_dims)
        check_sorted_unique(self, "operand_batching_dims", self.operand_batching_dims)
        check_sorted_unique(self, "start_index_map", self.start_index_map, sort=False)
        check_sorted_unique(self, "start_indices_batching_dims",
                            self.start_indices_batching_dims, sort=False)
        check_disjoint(self, "collapsed_slice_dims", self.collapsed_slice_dims,
                       "operand_batching_dims", self.operand_batching_dims)
        check_disjoint(self, "start_index_map", self.start_index_map,
                       "operand_batching_dims", self.operand_batching_dims)
        if len(self.operand_batching_dims) != len(self.start_indices_batching_dims):
            raise ValueError(f"{self!r}: operand_batching_dims and "
                             "start_indices_batching_dims must have the same length")
        if self.index_vector_dim < 0 or self.index_vector_dim in self.start_indices_batching_dims:
            raise ValueError(f"{self!r}: index_vector_dim must be non-negative and not a "
                             "batching dimension")
        if any(s < 0 for s in self.slice_sizes):
            raise ValueError(f"{self!r}: slice_sizes must be non-negative")
        if len(self.offset_dims) + len(self.collapsed_slice_dims) + \
                len(self.operand_batching_dims) != rank:
            raise ValueError(f"{self!r}: every operand dimension (one per slice size) must be "
                             "an offset, collapsed or batching dimension")
        for what, axes in (("collapsed_slice_dims", self.collapsed_slice_dims),
                           ("operand_batching_dims", self.operand_batching_dims),
                           ("start_index_map", self.start_index_map)):
            if any(a >= rank for a in axes):
                raise ValueError(f"{self!r}: {what} {axes} out of range for rank {rank}")
        if any(self.slice_sizes[d] > 1
               for d in self.collapsed_slice_dims + self.operand_batching_dims):
            raise ValueError(f"{self!r}: collapsed and batching dimensions need slice size <= 1")

    def result_type(self, operand, indices):
        types = (operand, indices)
        require(operand.rank == len(self.slice_sizes), self, types,
                f"{len(self.slice_sizes)} slice sizes for a rank-{operand.rank} operand")
        for d, (w, n) in enumerate(zip(self.slice_sizes, operand.shape)):
            require(w <= n, self, types, f"slice size {w} exceeds the size {n} of dimension {d}")
        batch = index_batch_shape(self, types, indices, self.index_vector_dim,
                                  len(self.start_index_map), self.start_indices_batching_dims,
                                  operand, self.operand_batching_dims)
        rank = len(self.offset_dims) + len(batch)
        require(all(d < rank for d in self.offset_dims), self, types,
                f"offset_dims {self.offset_dims} out of range for the rank-{rank} result")
        dropped = self.collapsed_slice_dims + self.operand_batching_dims
        window = iter(w for d, w in enumerate(self.slice_sizes) if d not in dropped)
        batch_it = iter(batch)
        shape = [next(window) if d in self.offset_dims else next(batch_it) for d in range(rank)]
        return ArrayType(operand.dtype, shape)

    def attributes(self, operand_types, result_type, ctx):
        out = [f"offset_dims={dims_text(self.offset_dims)}",
               f"collapsed_slice_dims={dims_text(self.collapsed_slice_dims)}",
               f"start_index_map={dims_text(self.start_index_map)}"]
        if self.operand_batching_dims:
            out += [f"operand_batching_dims={dims_text(self.operand_batching_dims)}",
                    f"start_indices_batching_dims={dims_text(self.start_indices_batching_dims)}"]
        out += [f"index_vector_dim={self.index_vector_dim}",
                f"slice_sizes={dims_text(self.slice_sizes)}"]
        if self.indices_are_sorted:
            out.append("indices_are_sorted=true")
        return out



# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

import numpy as np  # noqa: E402

from hlodsl.arrays.array import array  # noqa: E402
from hlodsl.ir.rules import vjp_rule  # noqa: E402


def _add(a, b):
    from .binary import Add
    return Add()(a, b)


def _and(a, b):
    from .binary import And
    return And()(a, b)


def clamp_starts(indices, index_vector_dim: int, start_index_map, operand_shape, window):
    """``indices`` with each start clamped into ``[0, dim - window]``, as gather clamps them.

    ``window`` holds the window size of every operand dimension (gather's
    ``slice_sizes``). Scatter skips out-of-range windows instead, so a scatter
    given these indices touches exactly the elements the gather read.

    >>> import hlodsl as hd
    >>> clamp_starts(hd.array(np.int32([[-1], [2], [9]])), 1, (0,), (5,), (2,))
    hlodsl.Array[int32, (3, 1)](
      [[0],
       [2],
       [3]])
    """
    from .broadcast import Broadcast
    from .clamp import Clamp

    np_dtype = indices.dtype.np_dtype
    top = np.iinfo(np_dtype).max  # a bound past the type's range clamps nothing
    hi = np.asarray([min(operand_shape[d] - window[d], top) for d in start_index_map], np_dtype)
    if index_vector_dim == indices.ndim:  # implicit index vectors of one entry
        hi = Broadcast(indices.shape)(array(hi.reshape(())))
    else:
        hi = Broadcast(indices.shape, (index_vector_dim,))(array(hi))
    return Clamp()(array(np.zeros((), np_dtype)), indices, hi)


def starts_in_bounds(indices, index_vector_dim: int, start_index_map, operand_shape, window):
    """pred over the index batch shape: the window at this start lies inside the operand.

    >>> import hlodsl as hd
    >>> starts_in_bounds(hd.array(np.int32([[-1], [2], [4]])), 1, (0,), (5,), (2,))
    hlodsl.Array[pred, (3,)]([False,  True, False])
    """
    from .compare import Compare
    from .reduce import Reduce

    clamped = clamp_starts(indices, index_vector_dim, start_index_map, operand_shape, window)
    fits = Compare("EQ")(clamped, indices)
    if index_vector_dim == indices.ndim:
        return fits
    return Reduce(_and, (index_vector_dim,))(fits, array(np.bool_(True)))


@vjp_rule.dispatch
def gather_vjp(op: Gather, ct, out, x, indices):
    # Scatter-add ct into zeros at the starts gather used (clamped, so none is skipped).
    from hlodsl.ir.op import op_class

    from ._ad import full_like

    Scatter = op_class("scatter")  # scatter.py imports this module's index checks

    if ct.size == 0 or 0 in op.slice_sizes:
        return full_like(x, 0), None
    starts = clamp_starts(indices, op.index_vector_dim, op.start_index_map, x.shape,
                          op.slice_sizes)
    scatter_add = Scatter(_add, update_window_dims=op.offset_dims,
                          inserted_window_dims=op.collapsed_slice_dims,
                          scatter_dims_to_operand_dims=op.start_index_map,
                          index_vector_dim=op.index_vector_dim,
                          input_batching_dims=op.operand_batching_dims,
                          scatter_indices_batching_dims=op.start_indices_batching_dims,
                          indices_are_sorted=op.indices_are_sorted)
    return scatter_add(full_like(x, 0), starts, ct), None


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import shifted, with_batch  # noqa: E402


@batch_rule.dispatch
def gather_batched(op: Gather, args: tuple, dims: tuple):
    operand, indices = args
    if dims[0] is None:
        # Shared operand: the examples are one more batch dimension of the indices,
        # which comes first in the result (the other result dims shift by one).
        return Gather(offset_dims=shifted(op.offset_dims),
                      collapsed_slice_dims=op.collapsed_slice_dims,
                      start_index_map=op.start_index_map,
                      index_vector_dim=op.index_vector_dim + 1,
                      slice_sizes=op.slice_sizes,
                      operand_batching_dims=op.operand_batching_dims,
                      start_indices_batching_dims=shifted(op.start_indices_batching_dims),
                      indices_are_sorted=op.indices_are_sorted)(operand, indices), 0
    indices = with_batch(indices, dims[1], operand.shape[0])
    return Gather(offset_dims=shifted(op.offset_dims),
                  collapsed_slice_dims=shifted(op.collapsed_slice_dims),
                  start_index_map=shifted(op.start_index_map),
                  index_vector_dim=op.index_vector_dim + 1,
                  slice_sizes=(1, *op.slice_sizes),
                  operand_batching_dims=(0, *shifted(op.operand_batching_dims)),
                  start_indices_batching_dims=(0, *shifted(op.start_indices_batching_dims)),
                  indices_are_sorted=op.indices_are_sorted)(operand, indices), 0
