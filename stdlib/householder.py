"""QR by Householder reflections written in HLO: the fallback where LAPACK is not available.

Two ``while`` loops whose bodies work on the whole batch ``(..., M, N)`` at
once (masks and ``dynamic-slice`` at the loop counter, as ``lu_loop.py``):
the first reduces column ``k = 0 .. K-1`` (``K = min(M, N)``) with one
reflector ``H_k = I - tau_k v_k v_k^H`` and keeps ``v_k`` and ``tau_k``;
the second builds ``Q = H_0 H_1 ... H_{K-1}`` applied to the first ``q``
columns of the identity, last reflector first (LAPACK's ``orgqr``). Each
step costs O(M N) per matrix (O(M q) for ``Q``): O(M N K) in all. The
reflectors follow LAPACK's ``?larfg``: ``R``'s diagonal is real,
``-sign(Re alpha) * norm`` of the column (so the signs match numpy's), and a
column that is already reduced (zero below the diagonal, real diagonal)
gets ``H = I``.

>>> import numpy as np, hlodsl as hd
>>> q, r = householder_qr(hd.array(np.float64([[3, 1], [4, 2]])))
>>> r
hlodsl.Array[float64, (2, 2)](
  [[-5. , -2.2],
   [ 0. ,  0.4]])
"""

from __future__ import annotations

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import ComplexFloating, int32

from .elementwise_more import _real, conj
from .matrices import filled, magnitude, spread, sum_exact, triangle_mask
from .promotion import lift

__all__ = ["householder_qr", "upper"]


def _column(a: Array, k: Array) -> Array:
    """Column ``k`` (a traced int32 scalar) of each matrix: ``(..., M)``."""
    nb = a.ndim - 2
    zero = lift(0, int32)
    vec = a.shape[:-1]
    return ops.Reshape(vec)(ops.DynamicSlice(vec + (1,))(a, *[zero] * (nb + 1), k))


def _entry(v: Array, k: Array) -> Array:
    """Entry ``k`` of each vector of ``(..., K)``: ``(...)``."""
    nb = v.ndim - 1
    zero = lift(0, int32)
    return ops.Reshape(v.shape[:-1])(ops.DynamicSlice(v.shape[:-1] + (1,))(v, *[zero] * nb, k))


def _reflect(a: Array, v: Array, tau: Array) -> Array:
    """``(I - tau v v^H) a`` for ``a`` ``(..., M, C)``, ``v`` ``(..., M)``, ``tau`` ``(...)``."""
    nb = a.ndim - 2
    w = sum_exact(ops.Multiply()(spread(conj(v), a.shape, (nb,)), a), -2)  # v^H a: (..., C)
    tv = ops.Multiply()(v, spread(tau, v.shape, ()))
    return ops.Subtract()(a, ops.Multiply()(spread(tv, a.shape, (nb,)),
                                            spread(w, a.shape, (nb + 1,))))


def _norm(x: Array) -> Array:
    """The 2-norm of each vector of ``(..., M)``, scaled by its largest entry (no overflow)."""
    mag = magnitude(x)
    big = ops.Reduce(ops.Maximum(), (x.ndim - 1,))(mag, lift(float("-inf"), mag.dtype))
    zero = ops.Compare("EQ")(big, filled(0, mag.dtype, big.shape))
    scale = ops.Select()(zero, filled(1, mag.dtype, big.shape), big)
    scaled = ops.Divide()(mag, spread(scale, mag.shape, ()))
    return ops.Multiply()(scale, ops.Sqrt()(sum_exact(ops.Multiply()(scaled, scaled), -1)))


def _qr_cond(state):
    return ops.Compare("LT")(state[0], lift(state[2].shape[-1], int32))


def _qr_step(state):
    """Reduce column ``k``: LAPACK's ``?larfg`` reflector, applied to the whole matrix."""
    k, a, vs, taus = state
    dtype, vec, nb = a.dtype, a.shape[:-1], a.ndim - 2
    batch = vec[:-1]
    rows = ops.Iota(int32, vec, nb)()
    kk = ops.Broadcast(vec)(k)
    at, below = ops.Compare("EQ")(rows, kk), ops.Compare("GT")(rows, kk)
    col = _column(a, k)
    alpha = sum_exact(ops.Select()(at, col, filled(0, dtype, vec)), -1)
    x = ops.Select()(below, col, filled(0, dtype, vec))
    xnorm = _norm(x)
    norm = _norm(ops.Select()(ops.Or()(at, below), col, filled(0, dtype, vec)))
    real_zero = filled(0, xnorm.dtype, batch)
    beta = ops.Select()(ops.Compare("GE")(_real(alpha), real_zero), ops.Negate()(norm), norm)
    trivial = ops.Compare("EQ")(xnorm, real_zero)
    if issubclass(dtype, ComplexFloating):
        trivial = ops.And()(trivial, ops.Compare("EQ")(ops.Imag()(alpha), real_zero))
    # Where the reflector is trivial, divide by 1 instead of beta (or alpha - beta) = 0.
    one = filled(1, dtype, batch)
    beta_c = ops.Select()(trivial, one, lift(beta, dtype))
    tau = ops.Select()(trivial, filled(0, dtype, batch),
                       ops.Divide()(ops.Subtract()(beta_c, alpha), beta_c))
    denom = ops.Select()(trivial, one, ops.Subtract()(alpha, beta_c))
    v = ops.Add()(ops.Divide()(x, spread(denom, vec, ())),
                  lift(at, dtype))
    a = _reflect(a, v, conj(tau))  # H^H a
    # Column k becomes exactly (R's entries above, beta, zeros below).
    diag = ops.Select()(trivial, alpha, lift(beta, dtype))
    col_k = ops.Select()(at, spread(diag, vec, ()),
                         ops.Select()(below, filled(0, dtype, vec), col))
    cols = ops.Iota(int32, a.shape, nb + 1)()
    a = ops.Select()(ops.Compare("EQ")(cols, ops.Broadcast(a.shape)(k)),
                     spread(col_k, a.shape, tuple(range(nb + 1))), a)
    vcols = ops.Iota(int32, vs.shape, nb + 1)()
    vs = ops.Select()(ops.Compare("EQ")(vcols, ops.Broadcast(vs.shape)(k)),
                      spread(v, vs.shape, tuple(range(nb + 1))), vs)
    slots = ops.Iota(int32, taus.shape, nb)()
    taus = ops.Select()(ops.Compare("EQ")(slots, ops.Broadcast(taus.shape)(k)),
                        spread(tau, taus.shape, ()), taus)
    return ops.Add()(k, lift(1, int32)), a, vs, taus


def _q_cond(state):
    return ops.Compare("GE")(state[0], lift(0, int32))


def _q_step(state):
    """``Q <- H_k Q``, ``k`` counting down: LAPACK's ``orgqr`` order."""
    k, vs, taus, q = state
    q = _reflect(q, _column(vs, k), _entry(taus, k))
    return ops.Subtract()(k, lift(1, int32)), vs, taus, q


def upper(x: Array) -> Array:
    """``x`` with everything below the main diagonal zeroed."""
    return ops.Select()(triangle_mask(x.shape, lower=False), x, filled(0, x.dtype, x.shape))


def householder_qr(a: Array, complete: bool = False, want_q: bool = True):
    """``(Q, R)`` of a non-empty stack ``(..., M, N)``, ``K = min(M, N)``.

    ``complete``: ``Q`` ``(..., M, M)`` and ``R`` ``(..., M, N)``; else
    ``(..., M, K)`` and ``(..., K, N)``. ``want_q=False`` skips the second
    loop and returns ``(None, R)``.
    """
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    vs, taus = filled(0, a.dtype, batch + (m, k)), filled(0, a.dtype, batch + (k,))
    _, r, vs, taus = ops.While(_qr_cond, _qr_step)(lift(0, int32), a, vs, taus)
    q_cols = m if complete else k
    r = upper(r if q_cols == m else ops.Slice((0,) * a.ndim, batch + (q_cols, n))(r))
    if not want_q:
        return None, r
    rows = ops.Iota(int32, (m, q_cols), 0)()
    eye = lift(ops.Compare("EQ")(rows, ops.Iota(int32, (m, q_cols), 1)()), a.dtype)
    q = ops.Broadcast(batch + (m, q_cols), (len(batch), len(batch) + 1))(eye)
    q = ops.While(_q_cond, _q_step)(lift(k - 1, int32), vs, taus, q)[3]
    return q, r
