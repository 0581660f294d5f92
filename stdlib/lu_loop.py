"""LU with partial pivoting written in HLO: the fallback where LAPACK is not available.

One ``while`` loop over the columns whose body works on the whole batch at
once, so it runs wherever XLA does (docs/linalg.md describes each step);
``permutation`` turns LAPACK-style row interchanges into a row order (a loop
over them, used after LAPACK's ``getrf`` too).

>>> import numpy as np, hlodsl as hd
>>> lu, pivots, perm = lu_loop(hd.array(np.float64([[1, 2], [3, 4]])))
>>> pivots, perm
(hlodsl.Array[int32, (2,)]([1, 1]), hlodsl.Array[int32, (2,)]([1, 0]))
"""

from __future__ import annotations

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import Floating, int32

from .matrices import filled, spread, sum_exact
from .promotion import lift
from .searching import argmax

__all__ = ["lu_loop", "lu_solve", "permutation"]


def _lu_cond(state):
    return ops.Compare("LT")(state[0], lift(state[1].shape[-1], int32))


def _lu_step(state):
    """One column ``k`` of LU with partial pivoting, on the whole batch at once."""
    k, a, piv, perm = state
    shape, vec = a.shape, piv.shape
    batch, nb = shape[:-2], len(shape) - 2
    zero = lift(0, int32)
    rows = ops.Iota(int32, vec, nb)()
    at_k = ops.Compare("EQ")(rows, ops.Broadcast(vec)(k))
    below = ops.Compare("GT")(rows, ops.Broadcast(vec)(k))
    col = ops.Reshape(vec)(ops.DynamicSlice(vec + (1,))(a, *[zero] * (nb + 1), k))
    # |re| + |im|, as LAPACK's i?amax: the first row of largest magnitude at or below k.
    mag = ops.Abs()(col) if issubclass(col.dtype, Floating) else \
        ops.Add()(ops.Abs()(ops.Real()(col)), ops.Abs()(ops.Imag()(col)))
    candidate = ops.Or()(at_k, below)
    mag = ops.Select()(candidate, mag, filled(-1, mag.dtype, vec))
    p = ops.Convert(int32)(argmax(mag, axis=-1))
    at_p = ops.Compare("EQ")(rows, spread(p, vec, ()))
    # Swap rows k and p of the matrix and of the permutation.
    row_k = ops.DynamicSlice(batch + (1, shape[-1]))(a, *[zero] * nb, k, zero)
    row_p = sum_exact(ops.Select()(spread(at_p, shape, (nb,)), a, filled(0, a.dtype, shape)), -2)
    row_k = ops.Reshape(batch + shape[-1:])(row_k)
    a = ops.Select()(spread(at_k, shape, (nb,)), spread(row_p, shape, (nb + 1,)),
                     ops.Select()(spread(at_p, shape, (nb,)), spread(row_k, shape, (nb + 1,)),
                                  a))
    perm_k = spread(ops.Reshape(batch)(ops.DynamicSlice(batch + (1,))(perm, *[zero] * nb, k)),
                     vec, ())
    perm_p = spread(sum_exact(ops.Select()(at_p, perm, filled(0, int32, vec)), -1), vec, ())
    perm = ops.Select()(at_k, perm_p, ops.Select()(at_p, perm_k, perm))
    piv = ops.Select()(at_k, spread(p, vec, ()), piv)
    # Eliminate below the pivot: multipliers into column k, a rank-1 update of the rest.
    pivot = ops.Reshape(batch)(ops.DynamicSlice(batch + (1,))(row_p, *[zero] * nb, k))
    col = ops.Reshape(vec)(ops.DynamicSlice(vec + (1,))(a, *[zero] * (nb + 1), k))
    usable = ops.Compare("NE")(pivot, filled(0, pivot.dtype, batch))
    scaled = ops.Divide()(col, spread(pivot, vec, ()))
    mult = ops.Select()(ops.And()(below, spread(usable, vec, ())), scaled,
                        filled(0, a.dtype, vec))
    cols = ops.Iota(int32, shape, nb + 1)()
    kk = ops.Broadcast(shape)(k)
    lower_rows = spread(below, shape, (nb,))
    trailing = ops.And()(lower_rows, ops.Compare("GT")(cols, kk))
    update = ops.Multiply()(spread(mult, shape, (nb,)), spread(row_p, shape, (nb + 1,)))
    a = ops.Select()(trailing, ops.Subtract()(a, update), a)
    a = ops.Select()(ops.And()(lower_rows, ops.Compare("EQ")(cols, kk)),
                     spread(mult, shape, (nb,)), a)
    return ops.Add()(k, lift(1, int32)), a, piv, perm


def lu_loop(a: Array):
    """``(lu, pivots, permutation)`` of a non-empty stack of square matrices, in HLO."""
    rows = ops.Iota(int32, a.shape[:-1], a.ndim - 2)()
    _, lu, piv, perm = ops.While(_lu_cond, _lu_step)(lift(0, int32), a, rows, rows)
    return lu, piv, perm


def _swap_cond(state):
    return ops.Compare("LT")(state[0], lift(state[1].shape[-1], int32))


def _swap_step(state):
    """Apply row interchange ``k``: swap entries ``k`` and ``piv[k]`` of ``perm``."""
    k, piv, perm = state
    vec, nb = perm.shape, perm.ndim - 1
    zero = lift(0, int32)
    rows = ops.Iota(int32, vec, nb)()
    p = ops.Reshape(vec[:-1])(ops.DynamicSlice(vec[:-1] + (1,))(piv, *[zero] * nb, k))
    at_k = ops.Compare("EQ")(rows, ops.Broadcast(vec)(k))
    at_p = ops.Compare("EQ")(rows, spread(p, vec, ()))
    perm_k = ops.Reshape(vec[:-1])(ops.DynamicSlice(vec[:-1] + (1,))(perm, *[zero] * nb, k))
    perm_p = sum_exact(ops.Select()(at_p, perm, filled(0, int32, vec)), -1)
    perm = ops.Select()(at_k, spread(perm_p, vec, ()),
                        ops.Select()(at_p, spread(perm_k, vec, ()), perm))
    return ops.Add()(k, lift(1, int32)), piv, perm


def permutation(piv: Array) -> Array:
    """The row order ``getrf``'s 0-based interchanges ``piv`` give (a loop over them)."""
    rows = ops.Iota(int32, piv.shape, piv.ndim - 1)()
    return ops.While(_swap_cond, _swap_step)(lift(0, int32), piv, rows)[2]


def _permute_rows(b: Array, perm: Array) -> Array:
    """``b[..., perm, :]`` with a permutation per batch element (one gather)."""
    nb = b.ndim - 2
    idx = ops.Reshape(perm.shape + (1,))(perm)
    return ops.Gather(offset_dims=(nb + 1,), collapsed_slice_dims=(nb,), start_index_map=(nb,),
                      index_vector_dim=nb + 1, slice_sizes=(1,) * (nb + 1) + b.shape[-1:],
                      operand_batching_dims=tuple(range(nb)),
                      start_indices_batching_dims=tuple(range(nb)))(b, idx)


def lu_solve(lu: Array, perm: Array, b: Array) -> Array:
    """Solve with an LU factorization; ``b`` is ``(..., M, K)`` with ``lu``'s batch dims."""
    if b.size == 0:
        return b
    y = ops.TriangularSolve(left_side=True, lower=True, unit_diagonal=True)(
        lu, _permute_rows(b, perm))
    return ops.TriangularSolve(left_side=True, lower=False)(lu, y)
