"""RaggedDot: a dot whose lhs has one dimension cut into groups (CHLO's ``ragged_dot``).

``group_sizes`` (integers, shape ``[g]`` or ``[p..., g]``) cuts the lhs ragged
dimension into ``g`` consecutive groups. The ragged dimension's kind picks the
mode (CHLO spec, stablehlo/dialect/ChloOps.td):

1. a non-contracting lhs dimension ``m``: ``[b,m,k], [g,b,k,n] -> [b,m,n]``, rows of
   group j meet group j of the rhs group dimension; rows past ``sum(group_sizes)``
   are zeros.
2. a contracting dimension ``k``: ``[b,m,k], [b,k,n] -> [g,b,m,n]``, result j
   contracts only group j's part of k (none of k past the sum).
3. a batch dimension: ``[b,m,k], [b,k,n] -> [b,m,n]``, the batch dot itself (the
   groups add no dependence between batch entries; as CHLO's and jax's lowerings).

A ``group_sizes`` of shape ``[p..., g]`` gives each entry of the prefix dims its own
groups: ``p`` are the lhs batch dims (in ``lhs_batch`` order), then in mode 1 the lhs
non-contracting dims before the ragged one, in mode 2 the contracting dims before it
(in ``lhs_contracting`` order), in mode 3 the batch dims before it; ``[g]`` is
broadcast over them. It stages densely, as CHLO's legalization does and as jax lowers
it on CPU (jax 0.10.2, even with ``jax_ragged_dot_use_ragged_dot_instruction``): the
ragged operand (in mode 2 both) is repeated g times, each copy masked (iota against
the cumulative sums of group_sizes) to its group, then one dot. That costs g times
the FLOPs and memory of the dot.
Derivatives and vmap follow from those ops; group_sizes has no derivative.

>>> import numpy as np, hlodsl as hd
>>> lhs = hd.array(np.float32([[1], [2], [3]])); rhs = hd.array(np.float32([[[10]], [[100]]]))
>>> RaggedDot((1,), (1,), lhs_ragged_dims=(0,), rhs_group_dims=(0,))(
...     lhs, rhs, hd.array(np.int32([1, 1])))
hlodsl.Array[float32, (3, 1)](
  [[ 10.],
   [200.],
   [  0.]])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.array import array
from hlodsl.arrays.dtypes import ElementType, Integer, element_type, int64
from hlodsl.errors import ShapeError, require
from hlodsl.ir.op import Composite, frozen
from hlodsl.arrays.types import ArrayType

from ._ad import add, full_like
from ._checks import check_dims, dims
from .binary import And, Subtract
from .broadcast import Broadcast
from .compare import Compare, Select
from .convert import Convert
from .dot import Dot, _algorithm, _optional_dtype, check_paired_dims
from .iota import Iota
from .reduce_window import ReduceWindow
from .reshape import Transpose

__all__ = ["RaggedDot"]


def _rest(rank: int, *used) -> list[int]:
    return [d for d in range(rank) if not any(d in u for u in used)]


@frozen
class RaggedDot(Composite, opcode="ragged-dot"):
    """Dot of ``lhs`` and ``rhs`` with lhs dimension ``lhs_ragged_dims[0]`` cut into groups.

    Called as ``RaggedDot(...)(lhs, rhs, group_sizes)``. Fields as ``Dot``'s, plus
    ``lhs_ragged_dims`` (exactly one dimension) and ``rhs_group_dims`` (one rhs
    dimension of size g in mode 1, none otherwise). Result: ``Dot``'s shape without
    the rhs group dimension, with a leading ``g`` in mode 2.
    """

    lhs_contracting: tuple[int, ...] = attrs.field(converter=dims, default=())
    rhs_contracting: tuple[int, ...] = attrs.field(converter=dims, default=())
    lhs_batch: tuple[int, ...] = attrs.field(converter=dims, default=())
    rhs_batch: tuple[int, ...] = attrs.field(converter=dims, default=())
    lhs_ragged_dims: tuple[int, ...] = attrs.field(converter=dims, default=())
    rhs_group_dims: tuple[int, ...] = attrs.field(converter=dims, default=())
    preferred_element_type: type[ElementType] | None = attrs.field(
        converter=_optional_dtype, default=None)
    algorithm: str | None = attrs.field(converter=_algorithm, default=None)

    def __attrs_post_init__(self):
        check_paired_dims(self)
        if len(self.lhs_ragged_dims) != 1:  # spec: exactly one lhs ragged dimension
            raise ValueError(f"{self!r}: lhs_ragged_dims must hold exactly one dimension")
        check_dims(self, "lhs_ragged_dims", self.lhs_ragged_dims)
        # spec: rhs group dims distinct from the rhs batch and contracting dims
        check_dims(self, "rhs dimensions",
                   self.rhs_contracting + self.rhs_batch + self.rhs_group_dims)

    @property
    def mode(self) -> int:
        """1: ragged non-contracting dim, 2: ragged contracting dim, 3: ragged batch dim."""
        ragged = self.lhs_ragged_dims[0]
        return 3 if ragged in self.lhs_batch else 2 if ragged in self.lhs_contracting else 1

    def _prefix(self, rank: int) -> list[int]:
        """The lhs dims of group_sizes' leading axes ([b..., x...] in the spec)."""
        ragged, lb, lc = self.lhs_ragged_dims[0], list(self.lhs_batch), list(self.lhs_contracting)
        if self.mode == 3:
            return lb[:lb.index(ragged)]
        if self.mode == 2:
            return lb + lc[:lc.index(ragged)]
        return lb + [d for d in _rest(rank, lb, lc) if d < ragged]

    def _dot(self, **dims) -> Dot:
        return Dot(**dims, preferred_element_type=self.preferred_element_type,
                   algorithm=self.algorithm)

    def _group_dot(self, rhs_rank: int) -> Dot:
        """The Dot of lhs with one group of rhs (rhs without its group dimension)."""
        renumber = {d: i for i, d in enumerate(_rest(rhs_rank, self.rhs_group_dims))}
        return self._dot(lhs_contracting=self.lhs_contracting,
                         rhs_contracting=[renumber[d] for d in self.rhs_contracting],
                         lhs_batch=self.lhs_batch, rhs_batch=[renumber[d] for d in self.rhs_batch])

    def result_type(self, lhs, rhs, group_sizes):
        ops_ = (lhs, rhs, group_sizes)
        ragged = self.lhs_ragged_dims[0]
        require(ragged < lhs.rank, self, ops_,
                f"lhs ragged dimension {ragged} out of range for rank {lhs.rank}")
        require(all(d < rhs.rank for d in self.rhs_group_dims), self, ops_,
                f"rhs group dimensions {self.rhs_group_dims} out of range for rank {rhs.rank}")
        require(issubclass(group_sizes.dtype, Integer), self, ops_,
                f"group_sizes must be integers, got {group_sizes.dtype.__name__}")
        require(group_sizes.rank >= 1, self, ops_, "group_sizes must have rank >= 1")
        g = group_sizes.shape[-1]
        if self.mode == 1:
            require(len(self.rhs_group_dims) == 1, self, ops_,
                    "a ragged non-contracting lhs dimension needs exactly one rhs group dimension")
            size = rhs.shape[self.rhs_group_dims[0]]
            require(size == g, self, ops_,
                    f"rhs group dimension {self.rhs_group_dims[0]} has size {size}, "
                    f"group_sizes has {g} groups")
        else:
            require(not self.rhs_group_dims, self, ops_,
                    "a ragged batch or contracting dimension takes no rhs group dimension")
        if group_sizes.rank != 1:
            want = lhs.dims(self._prefix(lhs.rank)) + (g,)
            require(group_sizes.shape == want, self, ops_,
                    f"group_sizes must have shape {list(want)} (or [{g}]), got "
                    f"{list(group_sizes.shape)}")
        # The rest is dot_general's rule, with the rhs group dimension left out.
        rhs_view = ArrayType(rhs.dtype, rhs.dims(_rest(rhs.rank, self.rhs_group_dims)))
        try:
            out = self._group_dot(rhs.rank).result_type(lhs, rhs_view)
        except ShapeError as e:  # Dot's reason, reported against this op and its operands
            require(False, self, ops_, str(e).splitlines()[0].split("): ", 1)[-1])
        return ArrayType(out.dtype, ((g,) if self.mode == 2 else ()) + out.shape)

    def expand(self, lhs, rhs, group_sizes):
        lc, rc, lb, rb = self.lhs_contracting, self.rhs_contracting, self.lhs_batch, self.rhs_batch
        if self.mode == 3:
            return self._dot(lhs_contracting=lc, rhs_contracting=rc, lhs_batch=lb,
                             rhs_batch=rb)(lhs, rhs)
        if group_sizes.shape[-1] == 0:  # no groups: nothing is multiplied
            out = self.result_type(lhs.type, rhs.type, group_sizes.type)
            return Broadcast(out.shape)(array(np.zeros((), out.dtype.np_dtype)))
        prefix = self._prefix(lhs.ndim)
        sizes = _as_int64(_broadcast_groups(group_sizes, [lhs.shape[d] for d in prefix]))
        ends = _cumulative_sum(sizes)
        starts = Subtract()(ends, sizes)
        ragged = self.lhs_ragged_dims[0]
        lhs_g = _by_group(lhs, ragged, starts, ends, prefix)  # group axis first: shift the rest
        if self.mode == 1:
            return self._dot(lhs_contracting=(0, *_up(lc)),
                             rhs_contracting=(self.rhs_group_dims[0], *rc),
                             lhs_batch=_up(lb), rhs_batch=rb)(lhs_g, rhs)
        rhs_prefix = [rb[lb.index(d)] if d in lb else rc[lc.index(d)] for d in prefix]
        rhs_g = _by_group(rhs, rc[lc.index(ragged)], starts, ends, rhs_prefix)
        return self._dot(lhs_contracting=_up(lc), rhs_contracting=_up(rc),
                         lhs_batch=(0, *_up(lb)), rhs_batch=(0, *_up(rb)))(lhs_g, rhs_g)

    def reference(self, lhs, rhs, group_sizes):
        """numpy: a loop over the groups (and over group_sizes' prefix entries)."""
        lhs, rhs, gs = np.asarray(lhs), np.asarray(rhs), np.asarray(group_sizes, np.int64)
        prefix, ragged = self._prefix(lhs.ndim), self.lhs_ragged_dims[0]
        gs = np.broadcast_to(gs, tuple(lhs.shape[d] for d in prefix) + gs.shape[-1:])
        dot = self._group_dot(rhs.ndim)
        if self.mode == 3:
            return dot.reference(lhs, rhs)
        ends = np.cumsum(gs, axis=-1)
        pos = np.indices(lhs.shape)[ragged]
        idx = np.indices(lhs.shape)
        terms = []
        if gs.shape[-1] == 0:  # no groups: nothing is multiplied
            out = self.result_type(*(ArrayType(element_type(a.dtype), a.shape)
                                     for a in (lhs, rhs, gs)))
            return np.zeros(out.shape, out.dtype.np_dtype)
        for j in range(gs.shape[-1]):
            at = tuple(idx[d] for d in prefix)
            member = (pos >= (ends[..., j] - gs[..., j])[at]) & (pos < ends[..., j][at])
            part = np.where(member, lhs, np.zeros((), lhs.dtype))
            if self.mode == 1:
                terms.append(dot.reference(part, np.take(rhs, j, axis=self.rhs_group_dims[0])))
            else:
                terms.append(dot.reference(part, rhs))  # lhs masked: only group j's k add up
        return sum(terms[1:], terms[0]) if self.mode == 1 else np.stack(terms)


# -- the dense formulation's pieces ---------------------------------------------------


def _as_int64(x):
    return x if x.dtype is int64 else Convert(int64)(x)


def _broadcast_groups(group_sizes, prefix_shape):
    """group_sizes as [p..., g] (a [g] one repeated over the prefix dims)."""
    if group_sizes.ndim == 1 and prefix_shape:
        shape = tuple(prefix_shape) + group_sizes.shape
        return Broadcast(shape, (len(prefix_shape),))(group_sizes)
    return group_sizes


def _up(axes) -> tuple[int, ...]:
    return tuple(d + 1 for d in axes)


def _cumulative_sum(gs):
    """Inclusive cumulative sums along the last axis (int64 [p..., g]): the groups' ends."""
    g, r = gs.shape[-1], gs.ndim
    window = (1,) * (r - 1) + (g,)
    pads = ((0, 0),) * (r - 1) + ((g - 1, 0),)
    return ReduceWindow(add, window, padding=pads)(gs, array(np.int64(0)))


def _by_group(x, dim, starts, ends, prefix):
    """[g] + x.shape: copy j keeps the entries of x whose index along ``dim`` is in group j.

    ``starts``/``ends`` ([p..., g]) vary along x's dims ``prefix``; everything else zero.
    """
    g = ends.shape[-1]
    shape = (g,) + tuple(x.shape)
    targets = [1 + d for d in prefix] + [0]
    order = sorted(range(len(targets)), key=targets.__getitem__)
    if order != list(range(len(order))):  # broadcast dimensions in increasing order
        starts, ends = Transpose(order)(starts), Transpose(order)(ends)
    spread = Broadcast(shape, sorted(targets))
    position = Iota(int64, shape, dim + 1)()
    member = And()(Compare("GE")(position, spread(starts)), Compare("LT")(position, spread(ends)))
    copies = Broadcast(shape, tuple(range(1, len(shape))))(x)
    return Select()(member, copies, full_like(copies, 0))
