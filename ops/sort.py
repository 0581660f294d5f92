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

from hlodsl.arrays.dtypes import pred
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.ir.staging import stage_computation
from hlodsl.arrays.types import ArrayType, TupleType

from ._checks import flag, function, integer
from .reduce_window import takes

__all__ = ["Sort"]


@frozen
class Sort(HloOp, opcode="sort"):
    """Sort operands along ``dimension``; one array for one operand, a tuple for several.

    ``is_stable=True`` keeps elements the comparator finds equivalent (neither
    comes before the other) in their original order.
    """

    comparator: Callable = attrs.field(converter=function)
    dimension: int = attrs.field(converter=integer)
    is_stable: bool = attrs.field(default=False, converter=flag)

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


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import jvp_rule, vjp_rule  # noqa: E402


@attrs.frozen
class _IgnoringLast:
    """``comparator`` for a sort with one more operand (the positions), which it ignores.

    Equal for equal comparators, so the extended sort is staged and compiled once.
    """

    comparator: Callable

    @property
    def __name__(self) -> str:
        return getattr(self.comparator, "__name__", "comparator")

    def __call__(self, *scalars):
        return self.comparator(*scalars[:-2])


def _add(a, b):
    from .binary import Add
    return Add()(a, b)


def scatter_along(x, dimension: int, positions, values):
    """Zeros of ``x``'s type with ``values`` added at ``positions`` along ``dimension``.

    ``positions`` (int) and ``values`` have one shape, which is x's but along
    ``dimension``; element ``[..., j, ...]`` of values lands at
    ``[..., positions[..., j, ...], ...]`` (the other dimensions are batch).

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.zeros((1, 3), np.float32))
    >>> scatter_along(x, 1, hd.array(np.int32([[2, 0]])), hd.array(np.float32([[5, 7]])))
    hlodsl.Array[float32, (1, 3)]([[7., 0., 5.]])
    """
    from ._ad import full_like
    from .scatter import Scatter

    if values.size == 0:
        return full_like(x, 0)
    batch = tuple(d for d in range(x.ndim) if d != dimension)
    scatter = Scatter(_add, update_window_dims=(), inserted_window_dims=(dimension,),
                      scatter_dims_to_operand_dims=(dimension,), index_vector_dim=x.ndim,
                      input_batching_dims=batch, scatter_indices_batching_dims=batch)
    return scatter(full_like(x, 0), positions, values)


def take_along(x, dimension: int, positions):
    """``x[..., positions[..., j, ...], ...]`` along ``dimension`` (the others are batch).

    >>> import numpy as np, hlodsl as hd
    >>> take_along(hd.array(np.float32([[5, 6, 7]])), 1, hd.array(np.int32([[2, 0]])))
    hlodsl.Array[float32, (1, 2)]([[7., 5.]])
    """
    from .gather import Gather

    batch = tuple(d for d in range(x.ndim) if d != dimension)
    gather = Gather(offset_dims=(), collapsed_slice_dims=(dimension,),
                    start_index_map=(dimension,), index_vector_dim=x.ndim,
                    slice_sizes=(1,) * x.ndim, operand_batching_dims=batch,
                    start_indices_batching_dims=batch)
    return gather(x, positions)


def _permutation(op: Sort, xs):
    """Where each element of the sorted result came from, along ``op.dimension``.

    The operands are sorted once more with each element's position alongside.
    NOTE: for is_stable=False, equivalent elements are assumed to move as they
    did in the first sort (XLA's sort is deterministic).
    """
    from hlodsl.arrays.dtypes import int32

    from .iota import Iota

    positions = Iota(int32, xs[0].shape, op.dimension)()
    return Sort(_IgnoringLast(op.comparator), op.dimension, op.is_stable)(*xs, positions)[-1]


@vjp_rule.dispatch
def sort_vjp(op: Sort, ct, out, *xs):
    # Every cotangent goes back to where its element came from.
    from hlodsl.arrays.dtypes import Inexact

    perm = _permutation(op, xs)
    cts = ct if isinstance(ct, tuple) else (ct,)
    return tuple(scatter_along(x, op.dimension, perm, c)
                 if issubclass(x.dtype, Inexact) else None for x, c in zip(xs, cts))


@jvp_rule.dispatch
def sort_jvp(op: Sort, tangents: tuple, out, *xs):
    # Tangents are permuted as their values were (also the rule for integer operands,
    # whose results the transposed vjp_rule cannot take as primals).
    perm = _permutation(op, xs)
    moved = tuple(None if t is None else take_along(t, op.dimension, perm) for t in tangents)
    return moved if len(xs) > 1 else moved[0]


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import all_batched  # noqa: E402


@batch_rule.dispatch
def sort_batched(op: Sort, args: tuple, dims: tuple):
    out = Sort(op.comparator, op.dimension + 1, op.is_stable)(*all_batched(args, dims))
    return out, (tuple(0 for _ in out) if isinstance(out, tuple) else 0)
