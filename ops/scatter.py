"""Scatter: combine update windows into an operand at run-time indices (HLO scatter).

Follows XLA's scatter semantics; the update computation is a Python callable
on scalars, staged into a sub-computation. For N operands it is called as
``Scatter(f, ...)(*operands, scatter_indices, *updates)`` and ``f`` takes 2N
scalars (N current values, then N updates) and returns N scalars. Update
windows that do not lie wholly inside the operand are skipped.

>>> import numpy as np, hlodsl as hd
>>> add = lambda a, b: hd.ops.Add()(a, b)
>>> scatter_add = Scatter(add, update_window_dims=(), inserted_window_dims=(0,),
...                       scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
>>> scatter_add(hd.array(np.int32([0, 0, 0])), hd.array(np.int32([[2], [2], [0]])),
...             hd.array(np.int32([1, 2, 5])))
hlodsl.Array[int32, (3,)]([5, 0, 3])
"""

from __future__ import annotations

from typing import Callable

import attrs

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.ir.staging import stage_computation
from hlodsl.arrays.types import ArrayType, TupleType

from ._checks import dims, dims_text, flag, function, integer
from .gather import check_disjoint, check_sorted_unique, index_batch_shape

__all__ = ["Scatter"]


@frozen
class Scatter(HloOp, opcode="scatter"):
    """Operands with update windows combined in by ``computation``; one result per operand."""

    computation: Callable = attrs.field(converter=function)
    update_window_dims: tuple[int, ...] = attrs.field(converter=dims)
    inserted_window_dims: tuple[int, ...] = attrs.field(converter=dims)
    scatter_dims_to_operand_dims: tuple[int, ...] = attrs.field(converter=dims)
    index_vector_dim: int = attrs.field(converter=integer)
    input_batching_dims: tuple[int, ...] = attrs.field(converter=dims, default=())
    scatter_indices_batching_dims: tuple[int, ...] = attrs.field(converter=dims, default=())
    indices_are_sorted: bool = attrs.field(converter=flag, default=False)
    unique_indices: bool = attrs.field(converter=flag, default=False)

    def __attrs_post_init__(self):
        check_sorted_unique(self, "update_window_dims", self.update_window_dims)
        check_sorted_unique(self, "inserted_window_dims", self.inserted_window_dims)
        check_sorted_unique(self, "input_batching_dims", self.input_batching_dims)
        check_sorted_unique(self, "scatter_dims_to_operand_dims",
                            self.scatter_dims_to_operand_dims, sort=False)
        check_sorted_unique(self, "scatter_indices_batching_dims",
                            self.scatter_indices_batching_dims, sort=False)
        check_disjoint(self, "inserted_window_dims", self.inserted_window_dims,
                       "input_batching_dims", self.input_batching_dims)
        check_disjoint(self, "scatter_dims_to_operand_dims", self.scatter_dims_to_operand_dims,
                       "input_batching_dims", self.input_batching_dims)
        if len(self.input_batching_dims) != len(self.scatter_indices_batching_dims):
            raise ValueError(f"{self!r}: input_batching_dims and "
                             "scatter_indices_batching_dims must have the same length")
        if self.index_vector_dim < 0 or \
                self.index_vector_dim in self.scatter_indices_batching_dims:
            raise ValueError(f"{self!r}: index_vector_dim must be non-negative and not a "
                             "batching dimension")

    def _split(self, types):
        n = (len(types) - 1) // 2
        return types[:n], types[n], types[n + 1:]

    def _comp(self, operands):
        scalars = tuple(ArrayType(t.dtype, ()) for t in operands)
        return stage_computation(self.computation, scalars + scalars)

    def result_type(self, *types):
        require(len(types) >= 3 and len(types) % 2 == 1, self, types,
                "takes N operands, the scatter indices and N updates")
        operands, indices, updates = self._split(types)
        operand, update = operands[0], updates[0]
        for o, u in zip(operands, updates):
            require(o.shape == operand.shape and u.shape == update.shape, self, types,
                    "all operands must have one shape, all updates one shape")
            require(o.dtype is u.dtype, self, types,
                    "each update must have its operand's element type")
        window_rank = len(self.update_window_dims) + len(self.inserted_window_dims) + \
            len(self.input_batching_dims)
        require(operand.rank == window_rank, self, types,
                f"update_window_dims, inserted_window_dims and input_batching_dims must "
                f"together have the operand's rank {operand.rank}, they have {window_rank}")
        for what, axes in (("inserted_window_dims", self.inserted_window_dims),
                           ("scatter_dims_to_operand_dims", self.scatter_dims_to_operand_dims)):
            require(all(a < operand.rank for a in axes), self, types,
                    f"{what} {axes} out of range for rank {operand.rank}")
        batch = index_batch_shape(self, types, indices, self.index_vector_dim,
                                  len(self.scatter_dims_to_operand_dims),
                                  self.scatter_indices_batching_dims,
                                  operand, self.input_batching_dims)
        require(update.rank == len(self.update_window_dims) + len(batch), self, types,
                f"updates must have rank {len(self.update_window_dims) + len(batch)} "
                "(update window dims plus scatter dims)")
        require(all(d < update.rank for d in self.update_window_dims), self, types,
                f"update_window_dims {self.update_window_dims} out of range")
        skipped = self.inserted_window_dims + self.input_batching_dims
        bounds = [n for d, n in enumerate(operand.shape) if d not in skipped]
        for d, n in zip(self.update_window_dims, bounds):
            require(update.shape[d] <= n, self, types,
                    f"update window dimension {d} (size {update.shape[d]}) exceeds the "
                    f"operand window bound {n}")
        scatter_sizes = tuple(n for d, n in enumerate(update.shape)
                              if d not in self.update_window_dims)
        require(scatter_sizes == batch, self, types,
                f"update scatter dimensions {scatter_sizes} must match the indices' batch "
                f"dimensions {batch}")
        scalars = tuple(ArrayType(t.dtype, ()) for t in operands)
        expect = scalars[0] if len(scalars) == 1 else TupleType(scalars)
        got = self._comp(operands).result_type
        require(got == expect, self, types,
                f"the computation must return {expect}, it returns {got}")
        return operands[0] if len(operands) == 1 else TupleType(operands)

    def attributes(self, operand_types, result_type, ctx):
        out = [f"update_window_dims={dims_text(self.update_window_dims)}",
               f"inserted_window_dims={dims_text(self.inserted_window_dims)}",
               f"scatter_dims_to_operand_dims={dims_text(self.scatter_dims_to_operand_dims)}"]
        if self.input_batching_dims:
            out += [f"input_batching_dims={dims_text(self.input_batching_dims)}",
                    "scatter_indices_batching_dims="
                    + dims_text(self.scatter_indices_batching_dims)]
        out.append(f"index_vector_dim={self.index_vector_dim}")
        if self.indices_are_sorted:
            out.append("indices_are_sorted=true")
        if self.unique_indices:
            out.append("unique_indices=true")
        out.append(f"to_apply={ctx.computation(self._comp(self._split(operand_types)[0]))}")
        return out


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

import math  # noqa: E402

import numpy as np  # noqa: E402

from hlodsl.arrays.array import array  # noqa: E402
from hlodsl.ir.rules import vjp_rule  # noqa: E402
from hlodsl.arrays.dtypes import int32  # noqa: E402


def combiner_kind(op: Scatter, dtype) -> str | None:
    """'overwrite' when ``op.computation`` returns its update; 'add', 'mul', 'max' or
    'min' when it is that one binary op of its two parameters; else None.

    >>> import hlodsl as hd
    >>> combiner_kind(Scatter(lambda a, b: b, (), (0,), (0,), 1), hd.float32)
    'overwrite'
    """
    from .binary import Add, Maximum, Minimum, Multiply

    scalar = ArrayType(dtype, ())
    comp = stage_computation(op.computation, (scalar, scalar))
    root = comp.root
    if root is comp.params[1]:
        return "overwrite"
    if len(comp.nodes) != 3 or set(root.operands) != set(comp.params):
        return None
    return {Add: "add", Maximum: "max", Minimum: "min", Multiply: "mul"}.get(type(root.op))


def _overwrite(a, b):
    return b


def _window_gather(op: Scatter, operand_shape, updates_shape):
    """The gather reading, at each scatter start, the window the scatter writes."""
    from .gather import Gather

    skipped = op.inserted_window_dims + op.input_batching_dims
    window = iter(updates_shape[d] for d in op.update_window_dims)
    sizes = tuple(1 if d in skipped else next(window) for d in range(len(operand_shape)))
    gather = Gather(offset_dims=op.update_window_dims,
                    collapsed_slice_dims=op.inserted_window_dims,
                    start_index_map=op.scatter_dims_to_operand_dims,
                    index_vector_dim=op.index_vector_dim, slice_sizes=sizes,
                    operand_batching_dims=op.input_batching_dims,
                    start_indices_batching_dims=op.scatter_indices_batching_dims,
                    indices_are_sorted=op.indices_are_sorted)
    return gather, sizes


@vjp_rule.dispatch
def scatter_vjp(op: Scatter, ct, out, *args):
    # As jax's scatter-add transpose and scatter (overwrite) jvp, with XLA's rule that
    # a window reaching outside the operand is skipped: such updates take zero.
    from ._ad import full_like
    from .compare import Compare, Select
    from .gather import clamp_starts, starts_in_bounds

    n = (len(args) - 1) // 2
    kind = combiner_kind(op, args[0].dtype) if n == 1 else None
    if kind not in ("add", "overwrite"):
        what = f"{n} operands" if n != 1 else f"computation {kind or 'other'}"
        raise NotImplementedError(
            f"no derivative rule for {op!r} ({what}): only scatters of one operand that "
            "add or overwrite are differentiated; write the update another way, or wrap "
            "it in hlodsl.custom_vjp")
    x, indices, updates = args
    zero = full_like(updates, 0)
    if updates.size == 0:
        return ct, None, zero
    gather, sizes = _window_gather(op, x.shape, updates.shape)
    starts = clamp_starts(indices, op.index_vector_dim, op.scatter_dims_to_operand_dims,
                          x.shape, sizes)
    window = gather(ct, starts)
    if kind == "add":
        fits = starts_in_bounds(indices, op.index_vector_dim,
                                op.scatter_dims_to_operand_dims, x.shape, sizes)
        return ct, None, Select()(_spread(fits, op, updates), window, zero)
    # Overwrite: number the update windows from 1 and scatter the numbers the same
    # way; an update takes ct where its number landed, the operand where none did.
    ids, nothing = _window_ids(op, updates), _int32_zeros(x.shape)
    landed = attrs.evolve(op, computation=_overwrite)(nothing, indices, ids)
    untouched = Compare("EQ")(landed, nothing)
    won = Compare("EQ")(gather(landed, starts), ids)
    return Select()(untouched, ct, full_like(ct, 0)), None, Select()(won, window, zero)


def _spread(per_window, op: Scatter, updates):
    """A value per update window (index batch shape), repeated over the window."""
    from .broadcast import Broadcast

    scatter_dims = tuple(d for d in range(updates.ndim) if d not in op.update_window_dims)
    return Broadcast(updates.shape, scatter_dims)(per_window)


def _int32_zeros(shape):
    from .broadcast import Broadcast

    return Broadcast(shape)(array(np.int32(0)))


def _window_ids(op: Scatter, updates):
    """int32 numbers 1, 2, ... of the update windows, repeated over each window."""
    from .binary import Add
    from .broadcast import Broadcast
    from .iota import Iota
    from .reshape import Reshape

    batch = tuple(n for d, n in enumerate(updates.shape) if d not in op.update_window_dims)
    count = math.prod(batch)
    ids = Add()(Iota(int32, (count,))(), Broadcast((count,))(array(np.int32(1))))
    return _spread(Reshape(batch)(ids), op, updates)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import batch_size, shifted, with_batch  # noqa: E402


@batch_rule.dispatch
def scatter_batched(op: Scatter, args: tuple, dims: tuple):
    # Each example scatters into its own operand: everything batched, the examples
    # paired by a batching dimension of the operands and the indices.
    size = batch_size(args, dims)
    args = [with_batch(a, d, size) for a, d in zip(args, dims)]
    out = Scatter(op.computation, update_window_dims=shifted(op.update_window_dims),
                  inserted_window_dims=shifted(op.inserted_window_dims),
                  scatter_dims_to_operand_dims=shifted(op.scatter_dims_to_operand_dims),
                  index_vector_dim=op.index_vector_dim + 1,
                  input_batching_dims=(0, *shifted(op.input_batching_dims)),
                  scatter_indices_batching_dims=(0, *shifted(op.scatter_indices_batching_dims)),
                  indices_are_sorted=op.indices_are_sorted,
                  unique_indices=op.unique_indices)(*args)
    return out, (tuple(0 for _ in out) if isinstance(out, tuple) else 0)
