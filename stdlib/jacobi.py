"""Jacobi eigen- and singular value decompositions in HLO: the fallback where LAPACK is absent.

Both are cyclic Jacobi methods in the parallel (round-robin, "chess
tournament") ordering: the ``n`` indices (``n`` even; an odd ``n`` gets one
decoupled dummy index) sit in ``n / 2`` pairs of adjacent slots ``(2i, 2i+1)``,
each round applies the ``n / 2`` disjoint 2x2 rotations of all pairs at once
(elementwise on the even and odd slices: O(n^2) per matrix, no matrix
products), then moves the indices to the next pairing by one fixed
permutation of the slots (a ``gather``). ``n - 1`` rounds pair every two
indices once (a sweep) and bring the slots back in order. One ``while`` loop
runs the rounds on the whole batch at once, until every matrix of the batch
has converged or a sweep cap is reached (30 sweeps in 64-bit, 20 in 32-bit).

- ``eigh``: two-sided Jacobi on a Hermitian matrix; the rotation of pair
  ``(p, q)`` zeroes ``a_pq`` (a complex ``a_pq`` has its phase factored out
  first), eigenvectors accumulate as ``V <- V J``. Converged when the
  off-diagonal Frobenius norm is at most ``eps * ||A||_F``.
- ``svd``: one-sided (Hestenes) Jacobi on the columns of ``W`` (the matrix,
  or its adjoint if it is wide, after a Householder QR when it is not
  square); the rotation of pair ``(p, q)`` diagonalises the 2x2 Gram matrix
  of columns ``p`` and ``q``. Converged after a sweep in which no pair had
  ``|w_p^H w_q| > sqrt(M) * eps * ||w_p|| ||w_q||``. ``S`` are the column
  norms, ``U`` the normalised columns, completed to an orthonormal basis (and
  re-orthonormalised) by a Householder QR, so zero singular values still get
  orthonormal singular vectors.

Both work on the matrix divided by its largest entry (``_scaled``), so that
their sums of squares neither overflow nor underflow.

>>> import numpy as np, hlodsl as hd
>>> w, v = jacobi_eigh(hd.array(np.float64([[2, 1], [1, 2]])))
>>> w
hlodsl.Array[float64, (2,)]([1., 3.])
>>> jacobi_svd(hd.array(np.float64([[3, 0], [0, -4], [0, 0]])), vectors=False)[1]
hlodsl.Array[float64, (2,)]([4., 3.])
"""

from __future__ import annotations

import functools

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import ComplexFloating, float64, int32, pred

from .elementwise_more import _real, conj
from .householder import householder_qr
from .lu_loop import _permute_rows
from .factorizations import _real_dtype
from .matrices import adjoint, filled, magnitude, main_diagonal, mm, mt, spread, sum_exact
from .promotion import lift

__all__ = ["jacobi_eigh", "jacobi_svd", "sweep_cap"]


def _eps(dtype) -> float:
    return float(np.finfo(_real_dtype(dtype).np_dtype).eps)


def sweep_cap(dtype) -> int:
    """The most sweeps a Jacobi loop runs: 30 for 64-bit types, 20 for 32-bit ones."""
    return 30 if _real_dtype(dtype) is float64 else 20


# -- the parallel ordering --------------------------------------------------------------

@functools.cache
def _slot_permutation(n: int) -> tuple:
    """Where each slot's next index comes from: the round-robin (circle) method.

    Slot ``2i`` holds the "top" player ``i`` and slot ``2i+1`` the "bottom" one;
    top 0 stays, the others turn one place around the circle, so ``n - 1``
    rounds pair every two indices once and return every index to its slot.
    """
    h = n // 2
    perm = list(range(n))
    if h > 1:
        perm[2] = 1
        for i in range(1, h - 1):
            perm[2 * i + 2] = 2 * i
        perm[2 * h - 1] = 2 * h - 2
        for i in range(h - 1):
            perm[2 * i + 1] = 2 * i + 3
    return tuple(perm)


def _permute(x: Array, axis: int) -> Array:
    """``x`` with the slots of ``axis`` (one of the last two) moved to the next round."""
    n, nd = x.shape[axis], x.ndim
    axis %= nd
    idx = lift(np.array(_slot_permutation(n), np.int32).reshape(n, 1), int32)
    return ops.Gather(offset_dims=tuple(d for d in range(nd) if d != axis),
                      collapsed_slice_dims=(axis,), start_index_map=(axis,), index_vector_dim=1,
                      slice_sizes=tuple(1 if d == axis else s for d, s in enumerate(x.shape)))(
        x, idx)


def _halves(x: Array, axis: int):
    """The even and odd slots of ``axis``: two strided slices with ``n / 2`` there."""
    ax = axis % x.ndim
    stride = tuple(2 if d == ax else 1 for d in range(x.ndim))
    return tuple(ops.Slice(tuple(j if d == ax else 0 for d in range(x.ndim)), x.shape, stride)(x)
                 for j in (0, 1))


def _interleave(even: Array, odd: Array, axis: int) -> Array:
    """The inverse of ``_halves``."""
    d = even.ndim + axis + 1  # the new axis, right after ``axis``
    shape = even.shape[:d] + (1,) + even.shape[d:]
    both = ops.Concatenate(d)(ops.Reshape(shape)(even), ops.Reshape(shape)(odd))
    out = list(even.shape)
    out[axis] *= 2
    return ops.Reshape(tuple(out))(both)


def _rotation(app: Array, aqq: Array, apq: Array):
    """``(c, s, e)`` of the rotation ``J = [[c, s e], [-s conj(e), c]]`` with
    ``J^H [[app, apq], [conj(apq), aqq]] J`` diagonal (``app``, ``aqq`` real).

    ``e = apq / |apq|`` (the phase); ``t = s / c`` is the smaller root of
    ``t^2 + 2 tau t - 1 = 0``, ``tau = (aqq - app) / (2 |apq|)``. ``apq = 0``
    gives exactly ``c = 1, s = 0``, so decoupled (dummy) indices stay untouched.
    """
    real = app.dtype
    r = magnitude(apq)
    zero, one = filled(0, real, r.shape), filled(1, real, r.shape)
    off = ops.Compare("NE")(r, zero)
    safe = ops.Select()(off, r, one)
    tau = ops.Divide()(ops.Subtract()(aqq, app), ops.Add()(safe, safe))
    root = ops.Sqrt()(ops.Add()(one, ops.Multiply()(tau, tau)))
    sign = ops.Select()(ops.Compare("GE")(tau, zero), one, ops.Negate()(one))
    t = ops.Divide()(sign, ops.Add()(ops.Abs()(tau), root))
    c = ops.Rsqrt()(ops.Add()(one, ops.Multiply()(t, t)))
    c, s = ops.Select()(off, c, one), ops.Select()(off, ops.Multiply()(t, c), zero)
    e = ops.Divide()(apq, lift(safe, apq.dtype))
    e = ops.Select()(off, e, filled(1, apq.dtype, r.shape))
    return c, s, e


def _rotate(x: Array, c: Array, s: Array, e: Array, axis: int) -> Array:
    """``x J`` (``axis=-1``, columns) or ``J^H x`` (``axis=-2``, rows) for every pair at once."""
    x0, x1 = _halves(x, axis)
    at = (x0.ndim - 1,) if axis == -1 else (x0.ndim - 2,)
    nb = c.ndim - 1
    dims = tuple(range(nb)) + at
    c, s = (lift(ops.Broadcast(x0.shape, dims)(v), x.dtype) for v in (c, s))
    e = ops.Broadcast(x0.shape, dims)(e)
    if axis == -2:
        e = conj(e)
    mul, add, sub = ops.Multiply(), ops.Add(), ops.Subtract()
    new0 = sub(mul(c, x0), mul(s, mul(conj(e), x1)))
    new1 = add(mul(s, mul(e, x0)), mul(c, x1))
    return _interleave(new0, new1, axis)


def _any(p: Array) -> Array:
    """Whether any element of the pred array ``p`` is true: a ``pred[]`` scalar."""
    return ops.Reduce(ops.Or(), tuple(range(p.ndim)))(p, lift(False, pred))


# -- eigh ---------------------------------------------------------------------------------

def _pair_entries(a: Array):
    """``(a_pp, a_qq, a_pq)`` of every pair ``(2i, 2i+1)``: three ``(..., n/2)`` arrays."""
    batch, n = a.shape[:-2], a.shape[-1]
    nb = len(batch)
    d0, d1 = _diag_halves(a)
    flat = ops.Reshape(batch + (n * n,))(a)
    apq = ops.Slice((0,) * nb + (1,), batch + (n * n,), (1,) * nb + (2 * n + 2,))(flat)
    return d0, d1, apq


def _diag_halves(a: Array):
    d = main_diagonal(a)
    return _halves(_real(d), -1)


def _off_mask(shape) -> Array:
    n = len(shape)
    return ops.Compare("NE")(ops.Iota(int32, shape, n - 2)(), ops.Iota(int32, shape, n - 1)())


def _pair_mask(shape) -> Array:
    """Where the entries ``(2i, 2i+1)`` and ``(2i+1, 2i)`` are: the ones a round zeroes."""
    n = len(shape)
    two = filled(2, int32, shape)
    rows, cols = ops.Iota(int32, shape, n - 2)(), ops.Iota(int32, shape, n - 1)()
    same = ops.Compare("EQ")(ops.Divide()(rows, two), ops.Divide()(cols, two))
    return ops.And()(same, ops.Compare("NE")(rows, cols))


def _off_norm2(a: Array) -> Array:
    """The squared off-diagonal Frobenius norm of each matrix: ``(...)``."""
    mag = magnitude(a)
    sq = ops.Select()(_off_mask(a.shape), ops.Multiply()(mag, mag), filled(0, mag.dtype, a.shape))
    return sum_exact(sum_exact(sq, -1), -1)


def _eigh_cond(state):
    rounds, a, _, tol2 = state
    n = a.shape[-1]
    more = ops.Compare("LT")(rounds, lift(sweep_cap(a.dtype) * (n - 1), int32))
    return ops.And()(more, _any(ops.Compare("GT")(_off_norm2(a), tol2)))


def _eigh_step(state):
    """One round: the ``n / 2`` rotations of the current pairs, then the next pairing."""
    rounds, a, v, tol2 = state
    app, aqq, apq = _pair_entries(a)
    c, s, e = _rotation(app, aqq, apq)
    a = _rotate(_rotate(a, c, s, e, -1), c, s, e, -2)
    a = ops.Select()(_pair_mask(a.shape), filled(0, a.dtype, a.shape), a)  # zero by design
    a = _permute(_permute(a, -1), -2)
    if v is not None:
        v = _permute(_rotate(v, c, s, e, -1), -1)
    return ops.Add()(rounds, lift(1, int32)), a, v, tol2


def _eigh_loop(a: Array, vectors: bool):
    """Run the rounds; returns ``(a, v, rounds)`` (``v`` None without vectors)."""
    batch, n = a.shape[:-2], a.shape[-1]
    mag = magnitude(a)
    norm2 = sum_exact(sum_exact(ops.Multiply()(mag, mag), -1), -1)
    eps2 = filled(_eps(a.dtype) ** 2, norm2.dtype, norm2.shape)
    tol2 = ops.Multiply()(eps2, norm2)
    eye = lift(ops.Compare("EQ")(ops.Iota(int32, (n, n), 0)(), ops.Iota(int32, (n, n), 1)()),
               a.dtype)
    v = ops.Broadcast(batch + (n, n), (len(batch), len(batch) + 1))(eye)
    if vectors:
        rounds, a, v, _ = ops.While(_eigh_cond, _eigh_step)(lift(0, int32), a, v, tol2)
    else:
        rounds, a, _ = ops.While(_eigh_cond_values, _eigh_step_values)(lift(0, int32), a, tol2)
        v = None
    return a, v, rounds


# Module-level functions, not lambdas: While's computations are cached (and its eager
# executables keyed) by the functions' identity.
def _eigh_cond_values(state):
    return _eigh_cond((state[0], state[1], None, state[2]))


def _eigh_step_values(state):
    rounds, a, _, tol2 = _eigh_step((state[0], state[1], None, state[2]))
    return rounds, a, tol2


def _scaled(a: Array):
    """``(a / m, m)``, ``m`` the largest ``|a_ij|`` of each matrix (1 for a zero matrix).

    The loops' sums of squares (``||A||_F^2``, ``||w_p||^2``) then neither
    overflow nor underflow (in float32 they would from entries of about 1e19
    or 1e-19 on, and stop the loop at once or never); eigen- and singular
    values scale back by ``m``, vectors are unchanged.
    """
    mag = magnitude(a)
    big = ops.Reduce(ops.Maximum(), (a.ndim - 2, a.ndim - 1))(mag, lift(float("-inf"), mag.dtype))
    zero = ops.Compare("EQ")(big, filled(0, big.dtype, big.shape))
    m = ops.Select()(zero, filled(1, big.dtype, big.shape), big)
    return ops.Divide()(a, lift(spread(m, a.shape, ()), a.dtype)), m


def _pad(a: Array, rows: int, cols: int) -> Array:
    nb = a.ndim - 2
    return ops.Pad((0,) * a.ndim, (0,) * nb + (rows, cols), (0,) * a.ndim)(a, lift(0, a.dtype))


def _sort_by(keys: Array, descending: bool):
    """``(sorted keys, permutation)`` along the last axis (stable)."""
    cmp = _gt if descending else _lt
    idx = ops.Iota(int32, keys.shape, keys.ndim - 1)()
    return ops.Sort(cmp, keys.ndim - 1, is_stable=True)(keys, idx)


def _lt(a, b, i, j):
    return ops.Compare("LT")(a, b)


def _gt(a, b, i, j):
    return ops.Compare("GT")(a, b)


def _take_columns(v: Array, perm: Array) -> Array:
    return mt(_permute_rows(mt(v), perm))


def _strip(x: Array, rows: int, cols: int) -> Array:
    return ops.Slice((0,) * x.ndim, x.shape[:-2] + (rows, cols))(x)


def jacobi_eigh(a: Array, vectors: bool = True):
    """``(w, v)`` of a non-empty stack of Hermitian ``(..., n, n)``: ``w`` ascending.

    Only the Hermitian part matters (the caller passes ``(a + a^H) / 2``);
    ``v`` is None with ``vectors=False``.
    """
    n = a.shape[-1]
    if a.size == 0:
        w = filled(0, _real_dtype(a.dtype), a.shape[:-1])
        return w, (a if vectors else None)
    a, scale = _scaled(a)
    odd = n % 2
    a = _pad(a, odd, odd) if odd else a
    a, v, _ = _eigh_loop(a, vectors or bool(odd))
    w = ops.Real()(main_diagonal(a)) if issubclass(a.dtype, ComplexFloating) \
        else main_diagonal(a)
    if odd:  # the dummy index: the eigenvector whose last coordinate (the padding) is set
        last = _last_row(v)
        dummy = ops.Compare("NE")(last, filled(0, v.dtype, last.shape))
        w = ops.Select()(dummy, filled(float("inf"), w.dtype, w.shape), w)
    w, perm = _sort_by(w, descending=False)
    if odd:
        w = ops.Slice((0,) * w.ndim, w.shape[:-1] + (n,))(w)
    w = ops.Multiply()(w, spread(scale, w.shape, ()))
    if not vectors:
        return w, None
    v = _take_columns(v, perm)
    return w, (_strip(v, n, n) if odd else v)


def _last_row(v: Array) -> Array:
    """The last row of each matrix: ``(..., n)``."""
    nb, (n, m) = v.ndim - 2, v.shape[-2:]
    return ops.Reshape(v.shape[:-2] + (m,))(
        ops.Slice((0,) * nb + (n - 1, 0), v.shape)(v))


# -- svd ----------------------------------------------------------------------------------

def _gram_pairs(w: Array):
    """``(||w_p||^2, ||w_q||^2, w_p^H w_q)`` of every column pair: ``(..., n/2)`` each."""
    w0, w1 = _halves(w, -1)
    m0, m1 = magnitude(w0), magnitude(w1)
    alpha = sum_exact(ops.Multiply()(m0, m0), -2)
    beta = sum_exact(ops.Multiply()(m1, m1), -2)
    return alpha, beta, sum_exact(ops.Multiply()(conj(w0), w1), -2)


def _svd_cond(state):
    rounds, w, last = state[0], state[1], state[-2]
    n = w.shape[-1]
    return ops.And()(ops.Compare("LT")(rounds, lift(sweep_cap(w.dtype) * (n - 1), int32)), last)


def _svd_round(rounds, w, v, last, sweep):
    alpha, beta, gamma = _gram_pairs(w)
    c, s, e = _rotation(alpha, beta, gamma)
    m, n = w.shape[-2:]
    # A pair still rotates (the sweep is not converged) while its columns are not
    # orthogonal to working precision, relative to their norms.
    tol = filled(max(1.0, m ** 0.5) * _eps(w.dtype), alpha.dtype, alpha.shape)
    scale = ops.Multiply()(ops.Sqrt()(alpha), ops.Sqrt()(beta))
    active = _any(ops.Compare("GT")(magnitude(gamma), ops.Multiply()(tol, scale)))
    w = _permute(_rotate(w, c, s, e, -1), -1)
    if v is not None:
        v = _permute(_rotate(v, c, s, e, -1), -1)
    rounds = ops.Add()(rounds, lift(1, int32))
    sweep = ops.Or()(sweep, active)
    at_end = ops.Compare("EQ")(ops.Remainder()(rounds, lift(n - 1, int32)), lift(0, int32))
    last = ops.Select()(at_end, sweep, last)
    sweep = ops.And()(sweep, ops.Not()(at_end))
    return rounds, w, v, last, sweep


def _svd_step(state):
    return _svd_round(*state)


def _svd_step_values(state):
    rounds, w, _, last, sweep = _svd_round(state[0], state[1], None, state[2], state[3])
    return rounds, w, last, sweep


def _svd_loop(w: Array, vectors: bool):
    """Run the rounds on the columns of ``w`` ``(..., m, n)``, ``n`` even: ``(w, v, rounds)``."""
    batch, n = w.shape[:-2], w.shape[-1]
    start = (lift(0, int32), w)
    flags = (lift(True, pred), lift(False, pred))
    if not vectors:
        rounds, w, _, _ = ops.While(_svd_cond, _svd_step_values)(*start, *flags)
        return w, None, rounds
    eye = lift(ops.Compare("EQ")(ops.Iota(int32, (n, n), 0)(), ops.Iota(int32, (n, n), 1)()),
               w.dtype)
    v = ops.Broadcast(batch + (n, n), (len(batch), len(batch) + 1))(eye)
    rounds, w, v, _, _ = ops.While(_svd_cond, _svd_step)(*start, v, *flags)
    return w, v, rounds


def _orthonormal_columns(u: Array) -> Array:
    """``u`` (square, columns orthonormal or zero) made orthonormal: ``Q`` of its QR,
    each column turned by the phase of ``R``'s diagonal where that is about 1."""
    q, r = householder_qr(u)
    d = main_diagonal(r)
    mag = magnitude(d)
    unit = ops.Compare("GT")(mag, filled(0.5, mag.dtype, mag.shape))
    phase = ops.Select()(unit, ops.Divide()(d, lift(ops.Select()(
        unit, mag, filled(1, mag.dtype, mag.shape)), d.dtype)), filled(1, d.dtype, d.shape))
    return ops.Multiply()(q, spread(phase, q.shape, (q.ndim - 1,)))


def jacobi_svd(a: Array, vectors: bool = True, full: bool = False):
    """``(U, S, Vh)`` of a non-empty stack ``(..., M, N)``, ``S`` descending.

    ``full``: ``U`` ``(..., M, M)`` and ``Vh`` ``(..., N, N)``; else reduced
    (``K = min(M, N)`` columns/rows). ``vectors=False``: ``(None, S, None)``.
    """
    m, n = a.shape[-2:]
    if m < n:  # x^H = U' S V'^H, so x = V' S U'^H
        u, s, vh = jacobi_svd(adjoint(a), vectors, full)
        return (adjoint(vh), s, adjoint(u)) if vectors else (None, s, None)
    nb = a.ndim - 2
    a, scale = _scaled(a)
    q1 = None
    if m > n:  # the rounds then work on n x n: a Householder QR first
        q1, r = householder_qr(a, complete=full, want_q=vectors)
        r = _strip(r, n, n) if full else r
    else:
        r = a
    odd = n % 2
    w, v, _ = _svd_loop(_pad(r, 0, odd) if odd else r, vectors or bool(odd))
    mag = magnitude(w)
    s = ops.Sqrt()(sum_exact(ops.Multiply()(mag, mag), -2))
    key = s
    if odd:  # the dummy column: zero, its right vector the padding coordinate; sorted last
        last = _last_row(v)
        dummy = ops.Compare("NE")(last, filled(0, v.dtype, last.shape))
        key = ops.Select()(dummy, filled(-1, s.dtype, s.shape), s)
    s, perm = _sort_by(key, descending=True)
    if odd:
        s = ops.Slice((0,) * s.ndim, s.shape[:-1] + (n,))(s)
    s_out = ops.Multiply()(s, spread(scale, s.shape, ()))
    if not vectors:
        return None, s_out, None
    w, v = _take_columns(w, perm), _take_columns(v, perm)
    if odd:
        w, v = _strip(w, n, n), _strip(v, n, n)
    positive = ops.Compare("GT")(s, filled(0, s.dtype, s.shape))
    safe = ops.Select()(positive, s, filled(1, s.dtype, s.shape))
    u = ops.Divide()(w, lift(spread(safe, w.shape, (nb + 1,)), w.dtype))
    u = ops.Select()(spread(positive, w.shape, (nb + 1,)), u, filled(0, w.dtype, w.shape))
    u = _orthonormal_columns(u)
    if q1 is not None:
        head = mm(ops.Slice((0,) * (nb + 2), a.shape[:-2] + (m, n))(q1), u)
        u = ops.Concatenate(nb + 1)(head, ops.Slice((0,) * nb + (0, n), q1.shape)(q1)) \
            if full else head
    return u, s_out, adjoint(v)
