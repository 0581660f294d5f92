"""``linalg.lstsq``: least-squares solutions by the SVD, as ``jax.numpy.linalg.lstsq``.

An hlodsl extra (numpy has it, the array API does not), batched over leading
dimensions. It stages what jax stages: the reduced SVD (cuSOLVER's ``gesvdj``
on a GPU, LAPACK's ``gesdd`` on CPU, HLO's Jacobi elsewhere), singular values
at or below ``rcond * max(S)`` dropped, and products at ``"highest"``
precision; differentiable through ``svd`` (distinct singular values).

>>> import numpy as np, hlodsl as hd
>>> a = hd.array(np.float64([[1, 0], [0, 2], [0, 0]]))
>>> x, residuals, rank, s = lstsq(a, hd.array(np.float64([1, 2, 3])))
>>> x, residuals, rank
(hlodsl.Array[float64, (2,)]([1., 1.]), hlodsl.Array[float64, ()](9.), hlodsl.Array[int64, ()](2))
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import int64
from hlodsl.errors import ShapeError
from hlodsl.ir.dispatcher import dispatch

from . import reductions
from .broadcasting import broadcast_shapes, broadcast_to
from .decompositions import check_matrices, svd
from .elementwise import divide, greater, greater_equal, logical_and, multiply, subtract
from .factorizations import _factorable
from .manipulation import fail, where
from .matrices import adjoint, magnitude
from .promotion import lift

__all__ = ["lstsq", "LstsqResult"]

LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])


def _highest(a: Array, b: Array) -> Array:
    nb = a.ndim - 2
    batch = tuple(range(nb))
    return ops.Dot(lhs_contracting=(nb + 1,), rhs_contracting=(nb,), lhs_batch=batch,
                   rhs_batch=batch, precision=("highest", "highest"))(a, b)


@dispatch
def lstsq(x1: Array, x2: Array, rcond=None):
    """``LstsqResult(solution, residuals, rank, singular_values)`` minimising ``|x1 @ x - x2|``.

    ``x1``: ``(..., M, N)``; ``x2``: ``(M,)`` or ``(..., M, K)``, batch dimensions
    broadcast. ``solution`` is ``(..., N)`` or ``(..., N, K)``; ``residuals`` the
    squared 2-norms of ``x1 @ x - x2`` per column (``(...)`` or ``(..., K)``),
    always computed (as jax under ``jit``; numpy leaves them out for a
    rank-deficient or wide ``x1``); ``rank`` (int64) counts the singular values
    above ``rcond * max(S)`` (``rcond=None``: ``max(M, N) * eps``);
    ``singular_values`` are ``x1``'s, ``(..., min(M, N))``.
    """
    dtype = x1.dtype
    a, b = _factorable("lstsq", x1, x2)
    check_matrices("lstsq", a)
    m, n = a.shape[-2:]
    vector = b.ndim == 1
    if vector:
        b = ops.Reshape((b.shape[0], 1))(b)
    if b.ndim < 2 or b.shape[-2] != m:
        raise fail(ShapeError, f"lstsq: x2 must be (M,) or (..., M, K) with x1's M = {m}, got "
                               f"shapes {x1.shape} and {x2.shape}")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], what="lstsq",
                             operands=(x1.type, x2.type))
    a, b = broadcast_to(a, batch + (m, n)), broadcast_to(b, batch + b.shape[-2:])
    u, s, vh = svd(a, full_matrices=False)
    if rcond is None:
        rcond = float(np.finfo(s.dtype.np_dtype).eps) * max(m, n)
    k = s.shape[-1]
    largest = ops.Slice((0,) * s.ndim, s.shape[:-1] + (min(k, 1),))(s)
    keep = logical_and(greater(s, 0), greater_equal(s, multiply(lift(rcond, s.dtype), largest)))
    s_inv = where(keep, divide(1, where(keep, s, 1)), 0)
    scaled = ops.Multiply()(lift(ops.Broadcast(s.shape + b.shape[-1:], tuple(range(s.ndim)))(
        s_inv), a.dtype), _highest(adjoint(u), b))
    x = _highest(adjoint(vh), scaled)
    residual = magnitude(subtract(_highest(a, x), b))
    residuals = reductions.sum(multiply(residual, residual), axis=-2)
    rank = reductions.sum(lift(keep, int64), axis=-1)
    if vector:
        x, residuals = ops.Reshape(x.shape[:-1])(x), ops.Reshape(residuals.shape[:-1])(residuals)
    return LstsqResult(lift(x, dtype), residuals, rank, s)
