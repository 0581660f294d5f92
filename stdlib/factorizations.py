"""LU and Cholesky factorizations in HLO, and the solvers and determinants built on them.

The functions here are re-exported by ``hlodsl.stdlib.linalg`` (``xp.linalg``),
where they belong; this module holds them so that each stays a readable size.
XLA has no LU instruction: ``lu_factor`` is LU with partial pivoting written
in HLO, one ``while`` loop over the columns whose body works on the whole
batch at once, so it runs wherever XLA does (see docs/linalg.md).

>>> import numpy as np, hlodsl as hd
>>> A = hd.array(np.float64([[0, 2], [1, 1]]))
>>> det(A)
hlodsl.Array[float64, ()](-2.)
>>> solve(A, hd.array(np.float64([2, 3])))
hlodsl.Array[float64, (2,)]([2., 1.])
"""

from __future__ import annotations

from collections import namedtuple

from hlodsl import ops
from hlodsl.array import Array
from hlodsl.dispatcher import dispatch
from hlodsl.dtypes import ComplexFloating, Floating, Inexact, Number, float32, float64, int32
from hlodsl.errors import ShapeError

from .broadcasting import broadcast_shapes, broadcast_to
from .elementwise import add, log, multiply
from .elementwise_more import conj, hypot
from .manipulation import fail
from .promotion import lift, promote
from .reductions import mapreduce
from .searching import argmax

__all__ = [
    "cholesky", "lu_factor", "solve", "inv", "det", "slogdet", "solve_triangular",
    "SlogdetResult", "LUFactor",
]

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
LUFactor = namedtuple("LUFactor", ["lu", "pivots", "permutation"])


# -- argument checks (shared with linalg.py) ----------------------------------------

def check_numeric(what: str, *xs: Array) -> None:
    """``TypeError`` naming ``what`` unless every array is numeric."""
    for x in xs:
        if not issubclass(x.dtype, Number):
            raise fail(TypeError, f"{what}: needs numeric arrays, got {x.type}")


def check_inexact(what: str, *xs: Array) -> None:
    """``TypeError`` naming ``what`` unless every array is floating-point or complex."""
    for x in xs:
        if not issubclass(x.dtype, Inexact):
            raise fail(TypeError, f"{what}: needs floating-point (or complex) arrays, got "
                                  f"{x.type}; convert with astype first")


def check_square(what: str, x: Array) -> None:
    """``ShapeError`` naming ``what`` unless ``x`` is a stack of square matrices."""
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise fail(ShapeError, f"{what}: needs a stack of square matrices (..., M, M), got "
                               f"shape {x.shape}")


def _factorable(what: str, *xs: Array) -> list[Array]:
    """Floating operands of one element type; float16/bfloat16 are computed in float32."""
    check_inexact(what, *xs)
    xs = promote(*xs)
    if issubclass(xs[0].dtype, Floating) and xs[0].dtype not in (float32, float64):
        xs = [lift(x, float32) for x in xs]
    return xs


def _real_dtype(dtype):
    return {"complex64": float32, "complex128": float64}.get(dtype.__name__, dtype)


# -- small helpers on stacks of vectors and matrices ----------------------------------

def filled(value, dtype, shape) -> Array:
    """``value`` of element type ``dtype`` broadcast to ``shape``."""
    return ops.Broadcast(shape)(lift(value, dtype))


def _spread(x: Array, shape, at) -> Array:
    """``x`` (leading batch dims, then the dims ``at`` of ``shape``) broadcast to ``shape``."""
    nb = x.ndim - len(at)
    return ops.Broadcast(shape, tuple(range(nb)) + tuple(at))(x)


def magnitude(x: Array) -> Array:
    """``|x|`` in the real element type (complex: ``hypot(re, im)``)."""
    if issubclass(x.dtype, ComplexFloating):
        return hypot(ops.Real()(x), ops.Imag()(x))
    return ops.Abs()(x)


def _add(a, b):
    return ops.Add()(a, b)


def sum_exact(x: Array, axis: int) -> Array:
    """Sum over one axis in ``x``'s own element type (no integer widening)."""
    return ops.Reduce(_add, (axis % x.ndim,))(x, lift(0, x.dtype))


def identity(n: int, dtype, batch=()) -> Array:
    """Identity matrices ``batch + (n, n)`` of element type ``dtype``."""
    rows, cols = ops.Iota(int32, (n, n), 0)(), ops.Iota(int32, (n, n), 1)()
    eye = lift(ops.Compare("EQ")(rows, cols), dtype)
    return broadcast_to(eye, batch + (n, n))


def _triangle_mask(shape, lower: bool) -> Array:
    n = len(shape)
    rows, cols = ops.Iota(int32, shape, n - 2)(), ops.Iota(int32, shape, n - 1)()
    return ops.Compare("GE" if lower else "LE")(rows, cols)


@dispatch
def cholesky(x: Array, upper: bool = False):
    """The Cholesky factor of Hermitian positive-definite matrices, ``(..., M, M)``.

    ``x = L @ L^H`` with ``L`` lower triangular (``upper=True``: ``x = U^H @ U``);
    only the lower triangle of ``x`` is read, and the other triangle of the
    result is zero. Like jax (and unlike numpy, which raises), a matrix that
    is not positive definite gives NaNs: XLA's HLO ``cholesky`` reports no
    error, and on CPU the whole factor of such a matrix is NaN.

    >>> import numpy as np, hlodsl as hd
    >>> cholesky(hd.array(np.float64([[4, 2], [2, 5]])))
    hlodsl.Array[float64, (2, 2)](
      [[2., 0.],
       [1., 2.]])
    """
    dtype = x.dtype
    (a,) = _factorable("cholesky", x)
    check_square("cholesky", a)
    low = ops.Cholesky(lower=True)(a)
    low = ops.Select()(_triangle_mask(a.shape, True), low, filled(0, a.dtype, a.shape))
    if upper:
        low = conj(ops.Transpose(tuple(range(low.ndim - 2)) + (low.ndim - 1, low.ndim - 2))(low))
    return lift(low, dtype)


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
    at_p = ops.Compare("EQ")(rows, _spread(p, vec, ()))
    # Swap rows k and p of the matrix and of the permutation.
    row_k = ops.DynamicSlice(batch + (1, shape[-1]))(a, *[zero] * nb, k, zero)
    row_p = sum_exact(ops.Select()(_spread(at_p, shape, (nb,)), a, filled(0, a.dtype, shape)), -2)
    row_k = ops.Reshape(batch + shape[-1:])(row_k)
    a = ops.Select()(_spread(at_k, shape, (nb,)), _spread(row_p, shape, (nb + 1,)),
                     ops.Select()(_spread(at_p, shape, (nb,)), _spread(row_k, shape, (nb + 1,)),
                                  a))
    perm_k = _spread(ops.Reshape(batch)(ops.DynamicSlice(batch + (1,))(perm, *[zero] * nb, k)),
                     vec, ())
    perm_p = _spread(sum_exact(ops.Select()(at_p, perm, filled(0, int32, vec)), -1), vec, ())
    perm = ops.Select()(at_k, perm_p, ops.Select()(at_p, perm_k, perm))
    piv = ops.Select()(at_k, _spread(p, vec, ()), piv)
    # Eliminate below the pivot: multipliers into column k, a rank-1 update of the rest.
    pivot = ops.Reshape(batch)(ops.DynamicSlice(batch + (1,))(row_p, *[zero] * nb, k))
    col = ops.Reshape(vec)(ops.DynamicSlice(vec + (1,))(a, *[zero] * (nb + 1), k))
    usable = ops.Compare("NE")(pivot, filled(0, pivot.dtype, batch))
    scaled = ops.Divide()(col, _spread(pivot, vec, ()))
    mult = ops.Select()(ops.And()(below, _spread(usable, vec, ())), scaled,
                        filled(0, a.dtype, vec))
    cols = ops.Iota(int32, shape, nb + 1)()
    kk = ops.Broadcast(shape)(k)
    lower_rows = _spread(below, shape, (nb,))
    trailing = ops.And()(lower_rows, ops.Compare("GT")(cols, kk))
    update = ops.Multiply()(_spread(mult, shape, (nb,)), _spread(row_p, shape, (nb + 1,)))
    a = ops.Select()(trailing, ops.Subtract()(a, update), a)
    a = ops.Select()(ops.And()(lower_rows, ops.Compare("EQ")(cols, kk)),
                     _spread(mult, shape, (nb,)), a)
    return ops.Add()(k, lift(1, int32)), a, piv, perm


def _lu(a: Array):
    """``(lu, pivots, permutation)`` of a stack of square matrices (checked by the caller)."""
    vec = a.shape[:-1]
    rows = ops.Iota(int32, vec, len(vec) - 1)()
    if a.size == 0:  # nothing to factor (and no column for the loop body to slice)
        return a, rows, rows
    _, lu, piv, perm = ops.While(_lu_cond, _lu_step)(lift(0, int32), a, rows, rows)
    return lu, piv, perm


@dispatch
def lu_factor(x: Array):
    """LU factorization with partial pivoting of ``(..., M, M)``: ``x[perm] = L @ U``.

    An hlodsl extra, the factorization behind ``solve``, ``inv``, ``det`` and
    ``slogdet``. Returns ``LUFactor(lu, pivots, permutation)``: ``lu`` holds
    ``U`` in its upper triangle and the multipliers of the unit lower
    triangular ``L`` below; ``pivots`` (int32, 0-based, as LAPACK's ``getrf``
    and ``scipy.linalg.lu_factor``) says row ``i`` was swapped with row
    ``pivots[i]`` at step ``i``; ``permutation`` (int32) is the resulting row
    order. Pivots are the first row of largest ``|re| + |im|`` on or below the
    diagonal. Singular matrices factor without error (a zero on ``U``'s diagonal).

    >>> import numpy as np, hlodsl as hd
    >>> f = lu_factor(hd.array(np.float64([[1, 2], [3, 4]])))
    >>> f.lu
    hlodsl.Array[float64, (2, 2)](
      [[3.        , 4.        ],
       [0.33333333, 0.66666667]])
    >>> f.pivots, f.permutation
    (hlodsl.Array[int32, (2,)]([1, 1]), hlodsl.Array[int32, (2,)]([1, 0]))
    """
    dtype = x.dtype
    (a,) = _factorable("lu_factor", x)
    check_square("lu_factor", a)
    lu, piv, perm = _lu(a)
    return LUFactor(lift(lu, dtype), piv, perm)


def _permute_rows(b: Array, perm: Array) -> Array:
    """``b[..., perm, :]`` with a permutation per batch element (one gather)."""
    nb = b.ndim - 2
    idx = ops.Reshape(perm.shape + (1,))(perm)
    return ops.Gather(offset_dims=(nb + 1,), collapsed_slice_dims=(nb,), start_index_map=(nb,),
                      index_vector_dim=nb + 1, slice_sizes=(1,) * (nb + 1) + b.shape[-1:],
                      operand_batching_dims=tuple(range(nb)),
                      start_indices_batching_dims=tuple(range(nb)))(b, idx)


def _lu_solve(lu: Array, perm: Array, b: Array) -> Array:
    """Solve with an LU factorization; ``b`` is ``(..., M, K)`` with ``lu``'s batch dims."""
    if b.size == 0:
        return b
    y = ops.TriangularSolve(left_side=True, lower=True, unit_diagonal=True)(
        lu, _permute_rows(b, perm))
    return ops.TriangularSolve(left_side=True, lower=False)(lu, y)


def _as_columns(what: str, a: Array, b: Array, side: int = -2):
    """``b`` as a stack of ``(M, K)`` right-hand sides, broadcast with ``a``'s batch dims.

    Returns ``(a, b, vector)``; a 1-D ``b`` (``(M,)``) is one column.
    """
    m = a.shape[-1]
    types = (a.type, b.type)
    vector = b.ndim == 1
    if vector:
        b = ops.Reshape((m, 1) if side == -2 else (1, m))(b) if b.shape == (m,) else b
    if b.ndim < 2 or b.shape[side] != m:
        raise fail(ShapeError, f"{what}: x2 must have shape (M,) or (..., M, K) matching x1's "
                               f"M = {m}, got shapes {a.shape} and "
                               f"{b.shape if not vector else (b.shape[0],)}")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], what=what, operands=types)
    return broadcast_to(a, batch + a.shape[-2:]), broadcast_to(b, batch + b.shape[-2:]), vector


@dispatch
def solve(x1: Array, x2: Array):
    """Solve ``x1 @ x = x2`` for ``x``; ``x1`` is ``(..., M, M)``.

    ``x2`` is one vector ``(M,)`` (the result is ``(..., M)``) or a stack of
    right-hand sides ``(..., M, K)`` whose batch dims broadcast with x1's (the
    2023.12 rule). LU with partial pivoting, then two triangular solves. A
    singular ``x1`` raises no error: the result holds infs or NaNs.

    >>> import numpy as np, hlodsl as hd
    >>> A = hd.array(np.float32([[2, 1], [4, 4]]))
    >>> solve(A, hd.array(np.float32([4, 12])))
    hlodsl.Array[float32, (2,)]([1., 2.])
    """
    dtype = promote(x1, x2)[0].dtype
    a, b = _factorable("solve", x1, x2)
    check_square("solve", a)
    lu, _, perm = _lu(a)
    lu, b, vector = _as_columns("solve", lu, b)
    perm = broadcast_to(perm, b.shape[:-1])
    out = _lu_solve(lu, perm, b)
    return lift(ops.Reshape(out.shape[:-1])(out) if vector else out, dtype)


@dispatch
def inv(x: Array):
    """The inverse of each matrix of ``x`` (``(..., M, M)``), by LU with partial pivoting.

    >>> import numpy as np, hlodsl as hd
    >>> inv(hd.array(np.float64([[2, 0], [0, 4]])))
    hlodsl.Array[float64, (2, 2)](
      [[0.5 , 0.  ],
       [0.  , 0.25]])
    """
    dtype = x.dtype
    (a,) = _factorable("inv", x)
    check_square("inv", a)
    lu, _, perm = _lu(a)
    return lift(_lu_solve(lu, perm, identity(a.shape[-1], a.dtype, a.shape[:-2])), dtype)


def _plus_zero(x: Array) -> Array:
    """``x`` with -0.0 as +0.0: a zero pivot times a negative sign is 0, as numpy gives it."""
    zero = filled(0, x.dtype, x.shape)
    return ops.Select()(ops.Compare("EQ")(x, zero), zero, x)


def _main_diagonal(x: Array) -> Array:
    """``(..., M, M) -> (..., M)``: a strided slice of the flattened matrices."""
    batch, m = x.shape[:-2], x.shape[-1]
    flat = ops.Reshape(batch + (m * m,))(x)
    nb = len(batch)
    return ops.Slice((0,) * (nb + 1), batch + (m * m,), (1,) * nb + (m + 1,))(flat)


def _det_parts(what: str, x: Array):
    """``(diagonal of U, +-1 of the row permutation, x's element type)``."""
    dtype = x.dtype
    (a,) = _factorable(what, x)
    check_square(what, a)
    lu, piv, _ = _lu(a)
    swaps = ops.Compare("NE")(piv, ops.Iota(int32, piv.shape, piv.ndim - 1)())
    count = sum_exact(lift(swaps, int32), -1)
    odd = ops.Compare("EQ")(ops.Remainder()(count, filled(2, int32, count.shape)),
                            filled(1, int32, count.shape))
    parity = ops.Select()(odd, filled(-1, a.dtype, count.shape), filled(1, a.dtype, count.shape))
    return _main_diagonal(lu), parity, dtype


@dispatch
def det(x: Array):
    """The determinant of each matrix of ``x`` (``(..., M, M) -> (...)``).

    The product of ``U``'s diagonal from ``lu_factor``, signed by the row
    permutation; exactly 0 for a matrix that factors with a zero pivot.

    >>> import numpy as np, hlodsl as hd
    >>> det(hd.array(np.float32([[[0, 1], [1, 0]], [[1, 2], [2, 4]]])))
    hlodsl.Array[float32, (2,)]([-1.,  0.])
    """
    d, parity, dtype = _det_parts("det", x)
    out = ops.Multiply()(parity, mapreduce(None, multiply, d, axis=-1))
    return lift(_plus_zero(out), dtype)


@dispatch
def slogdet(x: Array):
    """``SlogdetResult(sign, logabsdet)`` of each matrix: ``det = sign * exp(logabsdet)``.

    ``sign`` has ``x``'s element type (for complex ``x``, a number of modulus
    1), ``logabsdet`` its real type; a singular matrix gives ``sign = 0`` and
    ``logabsdet = -inf``.

    >>> import numpy as np, hlodsl as hd
    >>> sign, logabsdet = slogdet(hd.array(np.float64([[0, -3], [1, 0]])))
    >>> sign, logabsdet
    (hlodsl.Array[float64, ()](1.), hlodsl.Array[float64, ()](1.09861229))
    """
    d, parity, dtype = _det_parts("slogdet", x)
    mag = magnitude(d)
    if issubclass(d.dtype, ComplexFloating):
        nonzero = ops.Compare("NE")(mag, filled(0, mag.dtype, mag.shape))
        safe = ops.Select()(nonzero, mag, filled(1, mag.dtype, mag.shape))
        unit = ops.Select()(nonzero, ops.Divide()(d, lift(safe, d.dtype)),
                            filled(0, d.dtype, d.shape))
    else:
        unit = ops.Sign()(d)
    sign = ops.Multiply()(parity, mapreduce(None, multiply, unit, axis=-1))
    logabs = mapreduce(None, add, log(mag), axis=-1)
    return SlogdetResult(lift(_plus_zero(sign), dtype), lift(logabs, _real_dtype(dtype)))


@dispatch
def solve_triangular(a: Array, b: Array, lower: bool = False, left: bool = True,
                     unit_diagonal: bool = False):
    """Solve ``a @ x = b`` (``left``) or ``x @ a = b`` for triangular ``a`` (an hlodsl extra).

    ``a``: ``(..., M, M)``, of which only the ``lower`` (else upper) triangle
    is read (and not its diagonal with ``unit_diagonal``); ``b``: ``(M,)`` or
    ``(..., M, K)`` (left) / ``(..., K, M)`` (right), batch dims broadcast.
    One HLO ``triangular-solve``.

    >>> import numpy as np, hlodsl as hd
    >>> a = hd.array(np.float64([[2, 0], [1, 1]]))
    >>> solve_triangular(a, hd.array(np.float64([2, 3])), lower=True)
    hlodsl.Array[float64, (2,)]([1., 2.])
    """
    for name, flag in (("lower", lower), ("left", left), ("unit_diagonal", unit_diagonal)):
        if not isinstance(flag, bool):
            raise fail(TypeError, f"solve_triangular: {name} must be a bool, got {flag!r}")
    dtype = promote(a, b)[0].dtype
    a, b = _factorable("solve_triangular", a, b)
    check_square("solve_triangular", a)
    a, b, vector = _as_columns("solve_triangular", a, b, -2 if left else -1)
    out = ops.TriangularSolve(left_side=left, lower=lower, unit_diagonal=unit_diagonal)(a, b)
    return lift(ops.Reshape(out.shape[:-2] + (a.shape[-1],))(out) if vector else out, dtype)
