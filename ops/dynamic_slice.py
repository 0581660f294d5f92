"""DynamicSlice and DynamicUpdateSlice: windows at run-time start indices.

Start indices are scalar integer arrays, one per dimension, all of one
element type. Out-of-range starts are clamped (as in XLA) so that the whole
window lies inside the operand: ``start = clamp(start, 0, dim - window)``.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.arange(5, dtype=np.int32))
>>> DynamicSlice(2)(x, hd.array(np.int32(9)))   # start 9 is clamped to 3
hlodsl.Array[int32, (2,)]([3, 4])
>>> DynamicUpdateSlice()(x, hd.array(np.int32([7, 7])), hd.array(np.int32(1)))
hlodsl.Array[int32, (5,)]([0, 7, 7, 3, 4])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import Integer
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType

from ._checks import dims, dims_text

__all__ = ["DynamicSlice", "DynamicUpdateSlice"]


def _check_starts(op, types, operand: ArrayType, starts) -> None:
    require(len(starts) == operand.rank, op, types,
            f"takes one start index per operand dimension: {operand.rank}, got {len(starts)}")
    for s in starts:
        require(s.shape == () and issubclass(s.dtype, Integer), op, types,
                "start indices must be integer scalars")
        require(s.dtype is starts[0].dtype, op, types,
                "start indices must all have the same element type")


def _clamped(starts, shape, window) -> tuple[slice, ...]:
    out = []
    for s, n, w in zip(starts, shape, window):
        lo = int(min(max(int(s), 0), n - w))
        out.append(slice(lo, lo + w))
    return tuple(out)


@frozen
class DynamicSlice(HloOp, opcode="dynamic-slice"):
    """The ``slice_sizes`` window of the operand at run-time (clamped) starts.

    Called as ``DynamicSlice(sizes)(operand, *start_indices)``.
    """

    slice_sizes: tuple[int, ...] = attrs.field(converter=dims)

    def __attrs_post_init__(self):
        if any(s < 0 for s in self.slice_sizes):
            raise ValueError(f"{self!r}: slice sizes must be non-negative")

    def result_type(self, x, *starts):
        types = (x, *starts)
        _check_starts(self, types, x, starts)
        require(len(self.slice_sizes) == x.rank, self, types,
                f"{len(self.slice_sizes)} slice sizes for a rank-{x.rank} operand")
        for d, (w, n) in enumerate(zip(self.slice_sizes, x.shape)):
            require(w <= n, self, types, f"slice size {w} exceeds the size {n} of dimension {d}")
        return ArrayType(x.dtype, self.slice_sizes)

    def attributes(self, operand_types, result_type, ctx):
        return [f"dynamic_slice_sizes={dims_text(self.slice_sizes)}"]

    def reference(self, x, *starts):
        return np.asarray(x)[_clamped(starts, np.shape(x), self.slice_sizes)]


@frozen
class DynamicUpdateSlice(HloOp, opcode="dynamic-update-slice"):
    """``operand`` with ``update`` written at run-time (clamped) starts.

    Called as ``DynamicUpdateSlice()(operand, update, *start_indices)``.
    """

    def result_type(self, x, update, *starts):
        types = (x, update, *starts)
        require(update.dtype is x.dtype, self, types,
                "operand and update must have the same element type")
        require(update.rank == x.rank, self, types, "operand and update must have the same rank")
        _check_starts(self, types, x, starts)
        for d, (w, n) in enumerate(zip(update.shape, x.shape)):
            require(w <= n, self, types,
                    f"update size {w} exceeds the size {n} of operand dimension {d}")
        return x

    def reference(self, x, update, *starts):
        out = np.array(x, copy=True)
        out[_clamped(starts, out.shape, np.shape(update))] = update
        return out


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402


@vjp_rule.dispatch
def dynamic_slice_vjp(op: DynamicSlice, ct, out, x, *starts):
    # ct written into zeros at the same (equally clamped) starts; indices take none.
    from ._ad import full_like

    return (DynamicUpdateSlice()(full_like(x, 0), ct, *starts),) + (None,) * len(starts)


@vjp_rule.dispatch
def dynamic_update_slice_vjp(op: DynamicUpdateSlice, ct, out, x, update, *starts):
    # The operand's ct is ct with the overwritten window zeroed; the update's is that window.
    from ._ad import full_like

    ct_x = DynamicUpdateSlice()(ct, full_like(update, 0), *starts)
    ct_update = DynamicSlice(update.shape)(ct, *starts)
    return (ct_x, ct_update) + (None,) * len(starts)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import scalar, with_batch  # noqa: E402


def _start_vectors(starts, dims, size: int):
    """The (per-example) start indices as one ``[size, n]`` index array."""
    from .broadcast import Broadcast
    from .concatenate import Concatenate
    from .reshape import Reshape

    columns = [Reshape((size, 1))(s if d is not None else Broadcast((size,))(s))
               for s, d in zip(starts, dims)]
    return Concatenate(1)(*columns) if len(columns) > 1 else columns[0]


@batch_rule.dispatch
def dynamic_slice_batched(op: DynamicSlice, args: tuple, dims: tuple):
    from .gather import Gather

    x, starts = args[0], args[1:]
    size = next(a.shape[0] for a, d in zip(args, dims) if d is not None)
    x = with_batch(x, dims[0], size)
    if all(d is None for d in dims[1:]):  # one window for every example
        zero = scalar(0, starts[0].dtype) if starts else scalar(0)
        return DynamicSlice((size, *op.slice_sizes))(x, zero, *starts), 0
    # A window per example: a gather whose batching dimension pairs example i's
    # starts with example i's operand (gather clamps starts as dynamic-slice does).
    n = len(starts)
    gather = Gather(offset_dims=tuple(range(1, n + 1)), collapsed_slice_dims=(),
                    start_index_map=tuple(range(1, n + 1)), index_vector_dim=1,
                    slice_sizes=(1, *op.slice_sizes), operand_batching_dims=(0,),
                    start_indices_batching_dims=(0,))
    return gather(x, _start_vectors(starts, dims[1:], size)), 0


def _overwrite(old, new):
    return new


@batch_rule.dispatch
def dynamic_update_slice_batched(op: DynamicUpdateSlice, args: tuple, dims: tuple):
    from .clamp import Clamp
    from .scatter import Scatter

    x, update, starts = args[0], args[1], args[2:]
    size = next(a.shape[0] for a, d in zip(args, dims) if d is not None)
    x, update = with_batch(x, dims[0], size), with_batch(update, dims[1], size)
    if all(d is None for d in dims[2:]):
        zero = scalar(0, starts[0].dtype)
        return DynamicUpdateSlice()(x, update, zero, *starts), 0
    # Scatter drops out-of-bounds windows where dynamic-update-slice clamps them:
    # clamp each start first, so both write the same window.
    n, dtype = len(starts), starts[0].dtype
    clamped = [Clamp()(scalar(0, dtype), s, scalar(x.shape[k + 1] - update.shape[k + 1], dtype))
               for k, s in enumerate(starts)]
    scatter = Scatter(_overwrite, update_window_dims=tuple(range(1, n + 1)),
                      inserted_window_dims=(), scatter_dims_to_operand_dims=tuple(range(1, n + 1)),
                      index_vector_dim=1, input_batching_dims=(0,),
                      scatter_indices_batching_dims=(0,))
    return scatter(x, _start_vectors(clamped, dims[2:], size), update), 0
