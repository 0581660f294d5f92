"""``matmul`` dispatched on rank, as the paper's ``Base.*`` methods.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import matmul
>>> A = hd.array(np.float32([[1, 2], [3, 4]]))
>>> matmul(A, hd.array(np.float32([1, 1])))
hlodsl.Array[float32, (2,)]([3., 7.])
"""

from __future__ import annotations

from hlodsl import ops
from hlodsl.array import Array, Matrix, Vector
from hlodsl.dispatcher import dispatch
from hlodsl.errors import ShapeError, user_location

from .broadcasting import broadcast_shapes, broadcast_to
from .promotion import promote

__all__ = ["matmul", "matrix_transpose"]

_MATVEC = ops.Dot(lhs_contracting=(1,), rhs_contracting=(0,))
_VECMAT = ops.Dot(lhs_contracting=(0,), rhs_contracting=(0,))


@dispatch
def matmul(A: Matrix, B: Matrix):
    """Matrix product: ``(m, k) @ (k, n) -> (m, n)``."""
    return _MATVEC(*promote(A, B))


@dispatch
def matmul(A: Matrix, x: Vector):  # noqa: F811
    """Matrix-vector product: ``(m, k) @ (k,) -> (m,)``."""
    return _MATVEC(*promote(A, x))


@dispatch
def matmul(x: Vector, B: Matrix):  # noqa: F811
    """Vector-matrix product: ``(k,) @ (k, n) -> (n,)``."""
    return _VECMAT(*promote(x, B))


@dispatch
def matmul(x: Vector, y: Vector):  # noqa: F811
    """Inner product: ``(k,) @ (k,) -> ()``."""
    return _VECMAT(*promote(x, y))


@dispatch
def matmul(A: Array, B: Array):  # noqa: F811
    """Batched product with numpy's rules: batch dimensions broadcast."""
    if A.ndim == 0 or B.ndim == 0:
        loc = user_location()
        raise ShapeError(f"matmul: operands must have rank >= 1, got shapes {A.shape} and "
                         f"{B.shape}" + (f"\n  at {loc}" if loc else ""))
    A, B = promote(A, B)
    a_vec, b_vec = A.ndim == 1, B.ndim == 1
    if a_vec:
        A = ops.Reshape((1, A.shape[0]))(A)
    if b_vec:
        B = ops.Reshape((B.shape[0], 1))(B)
    batch = broadcast_shapes(A.shape[:-2], B.shape[:-2], what="matmul")
    A = broadcast_to(A, batch + A.shape[-2:])
    B = broadcast_to(B, batch + B.shape[-2:])
    n = len(batch)
    out = ops.Dot(lhs_contracting=(n + 1,), rhs_contracting=(n,),
                  lhs_batch=tuple(range(n)), rhs_batch=tuple(range(n)))(A, B)
    if a_vec or b_vec:
        shape = batch + (() if a_vec else (out.shape[-2],)) + (() if b_vec else (out.shape[-1],))
        out = ops.Reshape(shape)(out)
    return out


@dispatch
def matrix_transpose(A: Array):
    """Swap the last two dimensions."""
    if A.ndim < 2:
        raise ValueError(f"matrix_transpose needs rank >= 2, got shape {A.shape}")
    perm = tuple(range(A.ndim - 2)) + (A.ndim - 1, A.ndim - 2)
    return ops.Transpose(perm)(A)
