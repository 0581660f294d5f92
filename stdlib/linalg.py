"""The array API's linear algebra: ``xp.linalg``, plus ``matmul`` and friends at top level.

Every function is a plum generic that bottoms out in HLO ops, eagerly and
under ``hd.compile`` alike, batched over leading dimensions where the
standard says ``(..., M, M)``. XLA has no LU, eigen-, SVD or QR instruction:
on CPU ``solve``, ``inv``, ``det``, ``slogdet`` and ``lu_factor`` call LAPACK's
``getrf`` (elsewhere an HLO ``while`` loop: factorizations.py), and ``eigh``,
``eigvalsh``, ``svd``, ``svdvals``, ``qr``, ``pinv``, ``lstsq`` and
``matrix_rank`` call LAPACK (elsewhere HLO loops: decompositions.py), ``eig``
and ``eigvals`` LAPACK's ``geev`` (CPU and GPU only: eig.py); on a GPU each
calls cuSOLVER's kernels instead, as jax does (``stdlib/kernels.py`` picks);
see docs/linalg.md.

>>> import numpy as np, hlodsl as hd
>>> import hlodsl.stdlib as xp
>>> A = hd.array(np.float64([[0, 2], [1, 1]]))
>>> xp.linalg.det(A)
hlodsl.Array[float64, ()](-2.)
>>> xp.linalg.solve(A, hd.array(np.float64([2, 3])))
hlodsl.Array[float64, (2,)]([2., 1.])
"""

from __future__ import annotations

import math
from numbers import Real

import attrs

from hlodsl import ops
from hlodsl.arrays.array import Array, Matrix, Vector
from hlodsl.ir.dispatcher import dispatch
from hlodsl.errors import ShapeError
from hlodsl.arrays.scalars import static_hint

from .broadcasting import broadcast_shapes, broadcast_to
from .decompositions import (
    EighResult, QRResult, SVDResult, eigh, eigvalsh, matrix_rank, pinv, qr, singular_value_norm,
    svd, svdvals,
)
from .eig import EigResult, eig, eigvals
from .least_squares import LstsqResult, lstsq
from .elementwise import add, maximum, minimum, multiply, sqrt
from .elementwise_more import conj
from .factorizations import (
    LUFactor, SlogdetResult, check_inexact, check_numeric, check_square, cholesky, det, filled,
    identity, inv, lu_factor, magnitude, slogdet, solve, solve_triangular, sum_exact,
)
from .manipulation import as_int, fail, normalize_axes
from .promotion import lift, promote
from .reductions import mapreduce, sum

__all__ = [
    "matmul", "matrix_transpose", "tensordot", "vecdot", "outer", "cross", "diagonal", "trace",
    "vector_norm", "matrix_norm", "matrix_power", "cholesky", "solve", "inv", "det", "slogdet",
    "solve_triangular", "lu_factor", "eig", "eigvals", "eigh", "eigvalsh", "svd", "svdvals", "qr",
    "pinv", "matrix_rank", "lstsq", "SlogdetResult", "LUFactor", "EigResult", "EighResult",
    "SVDResult", "QRResult", "LstsqResult",
]

_MATVEC = ops.Dot(lhs_contracting=(1,), rhs_contracting=(0,))
_VECMAT = ops.Dot(lhs_contracting=(0,), rhs_contracting=(0,))


# -- products ------------------------------------------------------------------------

def _with(dot: ops.Dot, precision) -> ops.Dot:
    """``dot`` with the caller's ``precision`` (None: ``hd.config.default_matmul_precision``)."""
    return dot if precision is None else attrs.evolve(dot, precision=precision)


# Every product takes ``precision=``: ``"default"``, ``"high"``, ``"highest"`` or a
# (lhs, rhs) pair, as HLO's operand_precision and jax.numpy's argument; None follows
# hd.config.default_matmul_precision. XLA:CPU computes at the operands' precision.

@dispatch
def matmul(A: Matrix, B: Matrix, *, precision=None):
    """Matrix product: ``(m, k) @ (k, n) -> (m, n)``."""
    return _with(_MATVEC, precision)(*promote(A, B))


@dispatch
def matmul(A: Matrix, x: Vector, *, precision=None):  # noqa: F811
    """Matrix-vector product: ``(m, k) @ (k,) -> (m,)``."""
    return _with(_MATVEC, precision)(*promote(A, x))


@dispatch
def matmul(x: Vector, B: Matrix, *, precision=None):  # noqa: F811
    """Vector-matrix product: ``(k,) @ (k, n) -> (n,)``."""
    return _with(_VECMAT, precision)(*promote(x, B))


@dispatch
def matmul(x: Vector, y: Vector, *, precision=None):  # noqa: F811
    """Inner product: ``(k,) @ (k,) -> ()``."""
    return _with(_VECMAT, precision)(*promote(x, y))


@dispatch
def matmul(A: Array, B: Array, *, precision=None):  # noqa: F811
    """Batched product with numpy's rules: batch dimensions broadcast.

    ``precision``: ``"default"``, ``"high"``, ``"highest"`` or a (lhs, rhs) pair
    (None: ``hd.config.default_matmul_precision``), emitted as the dot's
    ``operand_precision``; GPUs honour it (``"highest"``: full float32 instead
    of TF32), XLA:CPU computes at the operands' precision whatever it says.

    >>> import numpy as np, hlodsl as hd
    >>> matmul(hd.array(np.ones((2, 1, 3))), hd.array(np.ones(3))).shape
    (2, 1)
    >>> "operand_precision={highest,highest}" in hd.code_hlo(
    ...     lambda a, b: matmul(a, b, precision="highest"), np.ones((2, 2)), np.ones((2, 2)))
    True
    """
    if A.ndim == 0 or B.ndim == 0:
        raise fail(ShapeError, f"matmul: operands must have rank >= 1, got shapes {A.shape} "
                               f"and {B.shape}")
    types = (A.type, B.type)
    A, B = promote(A, B)
    a_vec, b_vec = A.ndim == 1, B.ndim == 1
    if a_vec:
        A = ops.Reshape((1, A.shape[0]))(A)
    if b_vec:
        B = ops.Reshape((B.shape[0], 1))(B)
    if B.ndim == 2 and A.ndim > 2:
        # (..., m, k) @ (k, n): the free batch dimensions of A join its rows, as
        # jnp.matmul does, instead of copying B once per batch entry (a broadcast XLA
        # keeps: a transformer step's weight gradients became one dot per entry).
        out = ops.Dot(lhs_contracting=(A.ndim - 1,), rhs_contracting=(0,),
                      precision=precision)(A, B)
        return ops.Reshape(out.shape[:-1])(out) if b_vec else out
    if A.ndim == 2 and B.ndim > 2:  # (m, k) @ (..., k, n): the same from the right
        out = ops.Dot(lhs_contracting=(1,), rhs_contracting=(B.ndim - 2,),
                      precision=precision)(A, B)
        k = B.ndim - 2  # out is (m, ..., n): move m before n
        out = ops.Transpose((*range(1, k + 1), 0, k + 1))(out)
        return ops.Reshape(out.shape[:-2] + out.shape[-1:])(out) if a_vec else out
    batch = broadcast_shapes(A.shape[:-2], B.shape[:-2], what="matmul", operands=types)
    A = broadcast_to(A, batch + A.shape[-2:])
    B = broadcast_to(B, batch + B.shape[-2:])
    n = len(batch)
    out = ops.Dot(lhs_contracting=(n + 1,), rhs_contracting=(n,),
                  lhs_batch=tuple(range(n)), rhs_batch=tuple(range(n)), precision=precision)(A, B)
    if a_vec or b_vec:
        shape = batch + (() if a_vec else (out.shape[-2],)) + (() if b_vec else (out.shape[-1],))
        out = ops.Reshape(shape)(out)
    return out


@dispatch
def matrix_transpose(A: Array):
    """Swap the last two dimensions: ``(..., M, N) -> (..., N, M)``.

    >>> import numpy as np, hlodsl as hd
    >>> matrix_transpose(hd.array(np.zeros((4, 2, 3)))).shape
    (4, 3, 2)
    """
    if A.ndim < 2:
        raise fail(ValueError, f"matrix_transpose: needs rank >= 2, got shape {A.shape}")
    perm = tuple(range(A.ndim - 2)) + (A.ndim - 1, A.ndim - 2)
    return ops.Transpose(perm)(A)


def _tensordot_axes(x1: Array, x2: Array, axes):
    if isinstance(axes, (tuple, list)):
        if len(axes) != 2:
            raise fail(ValueError, f"tensordot: axes must be an int or a pair of sequences, "
                                   f"got {axes!r}")
        a1 = normalize_axes(axes[0], x1.ndim, "tensordot")
        a2 = normalize_axes(axes[1], x2.ndim, "tensordot")
        if len(a1) != len(a2):
            raise fail(ValueError, f"tensordot: axes {axes!r} name {len(a1)} axes of x1 but "
                                   f"{len(a2)} of x2")
        return a1, a2
    n = as_int(axes, "tensordot", "axes")
    if not 0 <= n <= min(x1.ndim, x2.ndim):
        raise fail(ValueError, f"tensordot: axes={n} must lie in [0, {min(x1.ndim, x2.ndim)}] "
                               f"for shapes {x1.shape} and {x2.shape}")
    return tuple(range(x1.ndim - n, x1.ndim)), tuple(range(n))


@dispatch
def tensordot(x1: Array, x2: Array, axes=2, *, precision=None):
    """Contract ``x1`` and ``x2`` over ``axes``: the free dims of x1, then those of x2.

    ``axes``: an int ``n`` (the last ``n`` axes of x1 with the first ``n`` of
    x2) or a pair of axis sequences. Contracted axes must have equal sizes
    (they do not broadcast).

    >>> import numpy as np, hlodsl as hd
    >>> a = hd.array(np.arange(6.0).reshape(2, 3)); b = hd.array(np.ones((3, 2)))
    >>> tensordot(a, b, axes=1)
    hlodsl.Array[float64, (2, 2)](
      [[ 3.,  3.],
       [12., 12.]])
    >>> tensordot(a, b, axes=([0, 1], [1, 0]))
    hlodsl.Array[float64, ()](15.)
    """
    check_numeric("tensordot", x1, x2)
    a1, a2 = _tensordot_axes(x1, x2, axes)
    if tuple(x1.shape[a] for a in a1) != tuple(x2.shape[a] for a in a2):
        raise fail(ShapeError, f"tensordot: contracted axes {a1} of shape {x1.shape} and "
                               f"{a2} of shape {x2.shape} differ in size")
    x1, x2 = promote(x1, x2)
    return ops.Dot(lhs_contracting=a1, rhs_contracting=a2, precision=precision)(x1, x2)


def _vector_axis(what: str, x1: Array, x2: Array, axis, size: int | None = None):
    """``x1`` and ``x2`` with ``axis`` (counted from the end) moved last, the rest broadcast."""
    n = min(x1.ndim, x2.ndim)
    a = as_int(axis, what, "axis")
    if not -n <= a < 0 and n:
        if 0 <= a < max(x1.ndim, x2.ndim):  # non-negative: an axis of the broadcast shape
            a -= max(x1.ndim, x2.ndim)
        if not -n <= a < 0:
            raise fail(ValueError, f"{what}: axis {axis} is out of range for shapes "
                                   f"{x1.shape} and {x2.shape}")
    if n == 0:
        raise fail(ShapeError, f"{what}: needs arrays of rank >= 1, got shapes {x1.shape} "
                               f"and {x2.shape}")
    if x1.shape[a] != x2.shape[a] or (size is not None and x1.shape[a] != size):
        want = f"size {size}" if size is not None else "equal sizes"
        raise fail(ShapeError, f"{what}: axis {a} must have {want} in both arrays, got shapes "
                               f"{x1.shape} and {x2.shape}")
    x1, x2 = promote(x1, x2)
    moved = []
    for x in (x1, x2):
        d = x.ndim + a
        moved.append(ops.Transpose(tuple(i for i in range(x.ndim) if i != d) + (d,))(x))
    batch = broadcast_shapes(moved[0].shape[:-1], moved[1].shape[:-1], what=what)
    return [broadcast_to(x, batch + x.shape[-1:]) for x in moved], a


@dispatch
def vecdot(x1: Array, x2: Array, axis=-1, *, precision=None):
    """``sum(conj(x1) * x2, axis)``: dot products of vectors along ``axis``, broadcast.

    ``axis`` counts from the end (``-1``: the last); it must have the same
    size in both arrays, and the other dimensions broadcast.

    >>> import numpy as np, hlodsl as hd
    >>> vecdot(hd.array(np.float32([[1, 2], [3, 4]])), hd.array(np.float32([1, 1])))
    hlodsl.Array[float32, (2,)]([3., 7.])
    """
    check_numeric("vecdot", x1, x2)
    (x1, x2), _ = _vector_axis("vecdot", x1, x2, axis)
    nb = x1.ndim - 1
    batch = tuple(range(nb))
    return ops.Dot(lhs_contracting=(nb,), rhs_contracting=(nb,), lhs_batch=batch,
                   rhs_batch=batch, precision=precision)(conj(x1), x2)


@dispatch
def outer(x1: Array, x2: Array):
    """Outer product of two vectors: ``(N,), (M,) -> (N, M)``.

    >>> import numpy as np, hlodsl as hd
    >>> outer(hd.array(np.int32([1, 2])), hd.array(np.int32([1, 10, 100])))
    hlodsl.Array[int32, (2, 3)](
      [[  1,  10, 100],
       [  2,  20, 200]])
    """
    check_numeric("outer", x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise fail(ShapeError, f"outer: needs two vectors, got shapes {x1.shape} and {x2.shape}")
    x1, x2 = promote(x1, x2)
    shape = x1.shape + x2.shape
    return ops.Multiply()(ops.Broadcast(shape, (0,))(x1), ops.Broadcast(shape, (1,))(x2))


@dispatch
def cross(x1: Array, x2: Array, axis=-1):
    """Cross product of 3-vectors along ``axis`` (size 3 in both), other dims broadcast.

    >>> import numpy as np, hlodsl as hd
    >>> cross(hd.array(np.float32([1, 0, 0])), hd.array(np.float32([0, 1, 0])))
    hlodsl.Array[float32, (3,)]([0., 0., 1.])
    """
    check_numeric("cross", x1, x2)
    (a, b), axis = _vector_axis("cross", x1, x2, axis, size=3)
    shape = a.shape[:-1] + (1,)
    last = len(shape) - 1

    def part(x, i):
        return ops.Slice((0,) * last + (i,), shape[:-1] + (i + 1,))(x)

    def term(i, j):  # a_i b_j - a_j b_i
        return ops.Subtract()(ops.Multiply()(part(a, i), part(b, j)),
                              ops.Multiply()(part(a, j), part(b, i)))

    out = ops.Concatenate(last)(term(1, 2), term(2, 0), term(0, 1))
    d = out.ndim + axis
    return ops.Transpose(tuple(range(d)) + (last,) + tuple(range(d, last)))(out)


# -- diagonals, traces, norms, powers -------------------------------------------------

@dispatch
def diagonal(x: Array, offset=0):
    """The ``offset`` diagonal of each matrix: ``(..., M, N) -> (..., K)``.

    ``offset > 0`` is above the main diagonal, ``< 0`` below. Exact: a strided
    slice of the flattened matrices.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.arange(9).reshape(3, 3))
    >>> diagonal(x)
    hlodsl.Array[int64, (3,)]([0, 4, 8])
    >>> diagonal(x, offset=1), diagonal(x, offset=-2)
    (hlodsl.Array[int64, (2,)]([1, 5]), hlodsl.Array[int64, (1,)]([6]))
    """
    return _diagonal(x, offset, "diagonal")


def _check_matrices(what: str, x: Array) -> None:
    """``ShapeError`` naming ``what`` unless ``x`` is a stack of matrices."""
    if x.ndim < 2:
        raise fail(ShapeError, f"{what}: needs rank >= 2 (a stack of matrices (..., M, N)), "
                               f"got shape {x.shape}")


def _diagonal(x: Array, offset, what: str) -> Array:
    k = as_int(offset, what, "offset")
    _check_matrices(what, x)
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    size = max(0, min(m, n - k) if k >= 0 else min(m + k, n))
    start = k if k >= 0 else -k * n
    flat = ops.Reshape(batch + (m * n,))(x)
    if size == 0:
        start = 0
    limit = start + (size - 1) * (n + 1) + 1 if size else 0
    nb = len(batch)
    return ops.Slice((0,) * nb + (start,), batch + (limit,), (1,) * nb + (n + 1,))(flat)


@dispatch
def trace(x: Array, offset=0, dtype=None):
    """Sum of the ``offset`` diagonal of each matrix: ``(..., M, N) -> (...)``.

    ``dtype=None`` sums as ``xp.sum`` does (small integers in int64/uint64);
    a given ``dtype`` converts first and sums in it.

    >>> import numpy as np, hlodsl as hd
    >>> trace(hd.array(np.float32([[1, 2], [3, 4]])))
    hlodsl.Array[float32, ()](5.)
    """
    check_numeric("trace", x)
    d = _diagonal(x, offset, "trace")
    if dtype is None:
        return sum(d, axis=-1)
    return sum_exact(lift(d, dtype), -1)


def _check_ord(what: str, ord, allowed) -> None:
    if isinstance(ord, bool) or ord not in allowed:
        raise fail(ValueError, f"{what}: ord={ord!r} is not supported; use one of "
                               f"{', '.join(map(repr, allowed))}")


@dispatch
def vector_norm(x: Array, axis=None, keepdims: bool = False, ord=2):
    """The ``ord``-norm of ``x`` over ``axis`` (``None``: all elements, as one vector).

    ``ord``: ``2`` (Euclidean), ``1``, ``inf`` (max ``|x|``), ``-inf`` (min),
    ``0`` (count of non-zeros) or any other real ``p``: ``sum(|x|**p)**(1/p)``.
    The result has ``x``'s real floating-point element type.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.float64([[3, -4], [0, 1]]))
    >>> vector_norm(x), vector_norm(x, ord=np.inf)
    (hlodsl.Array[float64, ()](5.09901951), hlodsl.Array[float64, ()](4.))
    >>> vector_norm(x, axis=1, ord=1)
    hlodsl.Array[float64, (2,)]([7., 1.])
    """
    check_inexact("vector_norm", x)
    if isinstance(ord, bool) or not isinstance(ord, Real):
        raise fail(ValueError, f"vector_norm: ord must be a real number, got {ord!r}"
                               f"{static_hint(ord, 'ord')}")
    axes = normalize_axes(axis, x.ndim, "vector_norm")
    a = magnitude(x)
    if ord == math.inf:
        return mapreduce(None, maximum, a, axis=axes, keepdims=keepdims)
    if ord == -math.inf:
        return mapreduce(None, minimum, a, axis=axes, keepdims=keepdims)
    if ord == 0:
        nonzero = lift(ops.Compare("NE")(a, filled(0, a.dtype, a.shape)), a.dtype)
        return mapreduce(None, add, nonzero, axis=axes, keepdims=keepdims)
    if ord == 1:
        return mapreduce(None, add, a, axis=axes, keepdims=keepdims)
    if ord == 2:
        return sqrt(mapreduce(None, add, multiply(a, a), axis=axes, keepdims=keepdims))
    p = lift(float(ord), a.dtype)
    s = mapreduce(None, add, ops.Power()(a, ops.Broadcast(a.shape)(p)), axis=axes,
                  keepdims=keepdims)
    return ops.Power()(s, ops.Broadcast(s.shape)(lift(1 / float(ord), a.dtype)))


@dispatch
def matrix_norm(x: Array, keepdims: bool = False, ord="fro"):
    """Norm of each matrix of ``x`` (``(..., M, N) -> (...)``).

    ``ord``: ``'fro'`` (Frobenius), ``1``/``-1`` (max/min absolute column sum),
    ``inf``/``-inf`` (max/min absolute row sum), ``2``/``-2`` (largest/smallest
    singular value) and ``'nuc'`` (sum of the singular values; these three
    through ``svdvals``, LAPACK on CPU).

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.float32([[1, -2], [3, 4]]))
    >>> matrix_norm(x, ord=1), matrix_norm(x, ord=np.inf)
    (hlodsl.Array[float32, ()](6.), hlodsl.Array[float32, ()](7.))
    """
    check_inexact("matrix_norm", x)
    if x.ndim < 2:
        raise fail(ShapeError, f"matrix_norm: needs rank >= 2, got shape {x.shape}")
    _check_ord("matrix_norm", ord, ("fro", 1, -1, math.inf, -math.inf, 2, -2, "nuc"))
    a = magnitude(x)
    if ord in (2, -2, "nuc"):
        out = singular_value_norm(x, ord)
    elif ord == "fro":
        out = sqrt(mapreduce(None, add, multiply(a, a), axis=(-2, -1)))
    else:
        inner, best = (-2, maximum if ord == 1 else minimum) if ord in (1, -1) else \
            (-1, maximum if ord == math.inf else minimum)
        out = mapreduce(None, best, mapreduce(None, add, a, axis=inner), axis=-1)
    return ops.Reshape(out.shape + (1, 1))(out) if keepdims else out


@dispatch
def matrix_power(x: Array, n):
    """``x`` multiplied by itself ``n`` times (a static int); ``n < 0`` powers ``inv(x)``.

    By repeated squaring: about ``2 log2(n)`` matrix products. ``n = 0``
    gives identity matrices of ``x``'s element type.

    >>> import numpy as np, hlodsl as hd
    >>> matrix_power(hd.array(np.int32([[1, 1], [0, 1]])), 5)
    hlodsl.Array[int32, (2, 2)](
      [[1, 5],
       [0, 1]])
    >>> matrix_power(hd.array(np.float64([[2, 0], [0, 4]])), -2)
    hlodsl.Array[float64, (2, 2)](
      [[0.25  , 0.    ],
       [0.    , 0.0625]])
    """
    k = as_int(n, "matrix_power", "n")
    check_numeric("matrix_power", x)
    check_square("matrix_power", x)
    if k < 0:
        x, k = inv(x), -k
    if k == 0:
        return identity(x.shape[-1], x.dtype, x.shape[:-2])
    result = None
    while True:
        if k & 1:
            result = x if result is None else matmul(result, x)
        k >>= 1
        if not k:
            return result
        x = matmul(x, x)
