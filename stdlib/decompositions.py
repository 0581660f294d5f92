"""Eigen-, singular value and QR decompositions (LAPACK or HLO loops), and what is built on them.

``eigh``, ``eigvalsh``, ``svd``, ``svdvals``, ``qr``, ``pinv`` and
``matrix_rank`` of ``xp.linalg`` (re-exported there), batched over leading
dimensions, for float32/float64/complex64/complex128 (float16 and bfloat16
are computed in float32). XLA has no instruction for them: on CPU they call
jaxlib's LAPACK kernels (``syevd``/``heevd``, ``gesdd``, ``geqrf`` +
``orgqr``/``ungqr``; see ``stdlib/lapack.py``), on a GPU cuSOLVER's as jax
does (``syevd``, ``gesvdj``/``gesvd``, ``geqrf`` + ``orgqr``;
``stdlib/cusolver.py``); on another backend, or with
``hlodsl.config.linalg_kernels = "hlo"``, HLO ``while`` loops: parallel
cyclic Jacobi for ``eigh`` and (one-sided, after a Householder QR) the SVD
(``stdlib/jacobi.py``), Householder reflections for ``qr``
(``stdlib/householder.py``); docs/linalg.md compares them. Where LAPACK
reports a failure (``info != 0``: the eigen- or SVD iteration did not
converge), or the matrix holds an inf or NaN, that matrix's results are NaN,
as in jax.

Derivatives (forward and reverse) come from the standard formulas, as jax's:

- ``eigh``/``eigvalsh``: the input is used as its Hermitian part
  ``(x + x^H) / 2`` (gradients are Hermitian); eigenvector derivatives divide
  by eigenvalue gaps, so they are inf/NaN for a degenerate spectrum
  (eigenvalues alone are fine).
- ``svd``: ``full_matrices=False`` (or square input); derivatives divide by
  ``s_i^2 - s_j^2`` and by ``s_i``: repeated or zero singular values give
  inf/NaN in ``U``/``Vh`` derivatives. The derivative of ``U``/``Vh`` is that of
  the gauge LAPACK picks (as in jax), so only gauge-invariant functions (``S``,
  ``U diag(S) Vh``, ``|U|``, ...) have meaningful gradients.
- ``qr``: ``mode='reduced'`` with ``M >= N`` (or square input); ``R`` must be
  invertible.

>>> import numpy as np, hlodsl as hd
>>> eigvalsh(hd.array(np.float64([[2, 1], [1, 2]])))
hlodsl.Array[float64, (2,)]([1., 3.])
>>> svdvals(hd.array(np.float64([[3, 0], [0, -4]])))
hlodsl.Array[float64, (2,)]([4., 3.])
"""

from __future__ import annotations

import functools
from collections import namedtuple

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import ComplexFloating, int32, int64
from hlodsl.errors import ShapeError

from . import cusolver, kernels, lapack, reductions, statistics
from .elementwise import divide, greater, isfinite, multiply
from .elementwise_more import _real, conj
from .factorizations import (
    _factorable, _real_dtype, _split_columns, check_square, linear_rules, solve_triangular,
)
from .householder import householder_qr, upper
from .jacobi import jacobi_eigh, jacobi_svd
from .manipulation import fail, where
from .matrices import adjoint, filled, identity, main_diagonal, mm, spread
from .promotion import lift

__all__ = ["eigh", "eigvalsh", "svd", "svdvals", "qr", "pinv", "matrix_rank",
           "EighResult", "SVDResult", "QRResult"]

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])


def check_matrices(what: str, x: Array) -> None:
    """``ShapeError`` naming ``what`` unless ``x`` is a stack of matrices."""
    if x.ndim < 2:
        raise fail(ShapeError, f"{what}: needs rank >= 2 (a stack of matrices (..., M, N)), "
                               f"got shape {x.shape}")


def _prepare(what: str, x: Array, square: bool) -> Array:
    """``x`` checked (and float16/bfloat16 in float32); ``linalg_kernels`` checked too."""
    (a,) = _factorable(what, x)
    check_square(what, a) if square else check_matrices(what, a)
    kernels.provider()  # linalg_kernels='lapack' on a GPU (say) raises here, in what's name
    return a


def _failed(info: Array, a: Array) -> Array:
    """``info``, made nonzero where ``a``'s matrix holds an inf or NaN.

    LAPACK does not always notice: without vectors, ``syevd`` of
    ``[[nan, 0], [0, 1]]`` returns ``[0, -0]`` with ``info = 0`` (numpy's too).
    """
    bad = statistics.any(ops.Not()(isfinite(a)), axis=(-2, -1))
    return ops.Select()(bad, filled(-1, int32, info.shape), info)


def _hermitian_part(x: Array) -> Array:
    return ops.Multiply()(ops.Add()(x, adjoint(x)), filled(0.5, x.dtype, x.shape))


def _eye_like(x: Array) -> Array:
    return identity(x.shape[-1], x.dtype, x.shape[:-2])


def _columns(v: Array, shape) -> Array:
    """``v`` (``(..., K)``) as ``shape``: entry ``j`` down column ``j``."""
    return spread(v, shape, (len(shape) - 1,))


def _rows(v: Array, shape) -> Array:
    return spread(v, shape, (len(shape) - 2,))


# -- eigh, eigvalsh ------------------------------------------------------------------------

def _eigh_primal(a: Array) -> EighResult:
    kind = kernels.provider()
    if kind == "hlo":
        w, v = jacobi_eigh(_hermitian_part(a))
        info = _failed(filled(0, int32, a.shape[:-2]), a)
        return EighResult(lapack.nan_where_failed(info, w), lapack.nan_where_failed(info, v))
    if kind == "cusolver":  # the column-major layout makes the kernel read h itself
        v, w, info = cusolver.syevd(_hermitian_part(a))
        info = _failed(info, a)
        return EighResult(lapack.nan_where_failed(info, w), lapack.nan_where_failed(info, v))
    # The kernel reads the row-major matrix as its transpose, conj(h): the same
    # eigenvalues, conjugated eigenvectors.
    raw, w, info = lapack.syevd(_hermitian_part(a))
    v, info = conj(lapack.from_kernel(raw)), _failed(info, a)
    return EighResult(lapack.nan_where_failed(info, w), lapack.nan_where_failed(info, v))


def _eigh_tangent(args, out, _, tangents) -> EighResult:
    w, v = out
    vdv = mm(mm(adjoint(v), _hermitian_part(tangents[0])), v)
    eye = identity(vdv.shape[-1], w.dtype, vdv.shape[:-2])
    gaps = ops.Add()(eye, ops.Subtract()(_columns(w, vdv.shape), _rows(w, vdv.shape)))
    f = ops.Subtract()(ops.Divide()(filled(1, w.dtype, gaps.shape), gaps), eye)  # 1/(w_j - w_i)
    return EighResult(_real(main_diagonal(vdv)), mm(v, ops.Multiply()(lift(f, v.dtype), vdv)))


def _eigvalsh_primal(a: Array) -> Array:
    kind = kernels.provider()
    if kind == "hlo":
        w, _ = jacobi_eigh(_hermitian_part(a), vectors=False)
        return lapack.nan_where_failed(_failed(filled(0, int32, a.shape[:-2]), a), w)
    if kind == "cusolver":  # (cuSOLVER's syevd FFI always computes the vectors, as jax's)
        _, w, info = cusolver.syevd(_hermitian_part(a))
    else:
        _, w, info = lapack.syevd(_hermitian_part(a), vectors=False)
    return lapack.nan_where_failed(_failed(info, a), w)


def _eigvalsh_tangent(args, w, v, tangents) -> Array:
    return _real(main_diagonal(mm(mm(adjoint(v), _hermitian_part(tangents[0])), v)))


_eigh_rules = linear_rules(_eigh_primal, lambda args, out: None, _eigh_tangent)
# Residuals through the differentiable eigh/svd, not their primals: second derivatives
# differentiate them too (a bare LAPACK call would count as a constant).
_eigvalsh_rules = linear_rules(_eigvalsh_primal, lambda args, out: _eigh_rules(args[0])[1],
                               _eigvalsh_tangent)


@dispatch
def eigh(x: Array):
    """Eigen-decomposition of Hermitian matrices: ``EighResult(eigenvalues, eigenvectors)``.

    ``x``: ``(..., M, M)``, used as ``(x + x^H) / 2``; eigenvalues ``(..., M)``
    (real, ascending), eigenvectors ``(..., M, M)`` (columns, orthonormal), so
    ``x = V diag(w) V^H``. LAPACK's ``syevd``/``heevd`` on CPU, cuSOLVER's
    ``syevd`` on a GPU, else Jacobi in HLO.

    >>> import numpy as np, hlodsl as hd
    >>> w, v = eigh(hd.array(np.float64([[2, 1], [1, 2]])))
    >>> w
    hlodsl.Array[float64, (2,)]([1., 3.])
    >>> np.round(np.abs(np.asarray(v)), 6)
    array([[0.707107, 0.707107],
           [0.707107, 0.707107]])
    """
    dtype = x.dtype
    w, v = _eigh_rules(_prepare("eigh", x, square=True))
    return EighResult(lift(w, _real_dtype(dtype)), lift(v, dtype))


@dispatch
def eigvalsh(x: Array):
    """The eigenvalues (real, ascending) of Hermitian ``(..., M, M)``: ``(..., M)``.

    >>> import numpy as np, hlodsl as hd
    >>> eigvalsh(hd.array(np.complex128([[2, 1j], [-1j, 2]])))
    hlodsl.Array[float64, (2,)]([1., 3.])
    """
    dtype = x.dtype
    return lift(_eigvalsh_rules(_prepare("eigvalsh", x, square=True)), _real_dtype(dtype))


# -- svd, svdvals --------------------------------------------------------------------------

def _empty_svd(a: Array, full: bool) -> SVDResult:
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    s = filled(0, _real_dtype(a.dtype), batch + (k,))
    if full:
        return SVDResult(identity(m, a.dtype, batch), s, identity(n, a.dtype, batch))
    return SVDResult(filled(0, a.dtype, batch + (m, k)), s, filled(0, a.dtype, batch + (k, n)))


def _svd_primal(a: Array, full: bool) -> SVDResult:
    if a.size == 0:
        return _empty_svd(a, full)
    kind = kernels.provider()
    if kind == "hlo":
        info = _failed(filled(0, int32, a.shape[:-2]), a)
        return SVDResult(*(lapack.nan_where_failed(info, r) for r in jacobi_svd(a, full=full)))
    if kind == "cusolver":
        s, u, vt, info = cusolver.svd(a, full)
        info = _failed(info, a)
    else:
        s, u, vt, info = lapack.gesdd(lapack.to_kernel(a), "A" if full else "S")
        u, vt, info = lapack.from_kernel(u), lapack.from_kernel(vt), _failed(info, a)
    return SVDResult(*(lapack.nan_where_failed(info, r) for r in (u, s, vt)))


def _svd_tangent(args, out, _, tangents) -> SVDResult:
    """jax's ``svd_jvp_rule``, for the reduced factors (``K = min(M, N)``)."""
    da = tangents[0]
    u, s, vh = out
    m, n = da.shape[-2:]
    if u.shape[-1] != vh.shape[-2]:
        raise fail(NotImplementedError, f"xp.linalg.svd: derivatives need full_matrices=False "
                                        f"for a non-square matrix (shape {da.shape}): the "
                                        "extra columns of U or rows of Vh are not unique")
    v, ut = adjoint(vh), adjoint(u)
    ds_mat = mm(mm(ut, da), v)  # (..., K, K)
    kk, c = ds_mat.shape, ds_mat.dtype
    ds = _real(main_diagonal(ds_mat))
    s_j, s_i = _columns(s, kk), _rows(s, kk)
    eye = identity(kk[-1], s.dtype, kk[:-2])
    diffs = ops.Multiply()(ops.Add()(s_j, s_i), ops.Subtract()(s_j, s_i))
    f = lift(ops.Subtract()(ops.Divide()(filled(1, s.dtype, kk), ops.Add()(diffs, eye)), eye), c)
    dss = ops.Multiply()(lift(s_j, c), ds_mat)
    sds = ops.Multiply()(lift(s_i, c), ds_mat)
    zero = lift(ops.Compare("EQ")(s, filled(0, s.dtype, s.shape)), s.dtype)
    s_inv = ops.Subtract()(ops.Divide()(filled(1, s.dtype, s.shape), ops.Add()(s, zero)), zero)
    diag_inv = ops.Multiply()(eye, _columns(s_inv, kk))
    half = ops.Multiply()(filled(0.5, c, kk), ops.Subtract()(ds_mat, adjoint(ds_mat)))
    du = mm(u, ops.Add()(ops.Multiply()(f, ops.Add()(dss, adjoint(dss))),
                         ops.Multiply()(half, lift(diag_inv, c))))
    dv = mm(v, ops.Multiply()(f, ops.Add()(sds, adjoint(sds))))
    if m > n:
        dav = mm(da, v)
        du = ops.Add()(du, ops.Divide()(ops.Subtract()(dav, mm(u, mm(ut, dav))),
                                        lift(_columns(s, dav.shape), c)))
    if n > m:
        dahu = mm(adjoint(da), u)
        dv = ops.Add()(dv, ops.Divide()(ops.Subtract()(dahu, mm(v, mm(vh, dahu))),
                                        lift(_columns(s, dahu.shape), c)))
    return SVDResult(du, ds, adjoint(dv))


def _svdvals_primal(a: Array) -> Array:
    if a.size == 0:
        return filled(0, _real_dtype(a.dtype), a.shape[:-2] + (min(a.shape[-2:]),))
    kind = kernels.provider()
    if kind == "hlo":
        s = jacobi_svd(a, vectors=False)[1]
        return lapack.nan_where_failed(_failed(filled(0, int32, a.shape[:-2]), a), s)
    if kind == "cusolver":
        s, _, _, info = cusolver.svd(a, full_matrices=True, compute_uv=False)
    else:
        s, _, _, info = lapack.gesdd(lapack.to_kernel(a), "N")
    return lapack.nan_where_failed(_failed(info, a), s)


def _svdvals_tangent(args, s, factors, tangents) -> Array:
    u, vh = factors
    return _real(main_diagonal(mm(mm(adjoint(u), tangents[0]), adjoint(vh))))


@functools.cache
def _svd_rules(full: bool):
    return linear_rules(lambda a: _svd_primal(a, full), lambda args, out: None, _svd_tangent)


_svdvals_rules = linear_rules(
    _svdvals_primal, lambda args, out: _svd_rules(False)(args[0])[::2], _svdvals_tangent)


@dispatch
def svd(x: Array, full_matrices: bool = True):
    """Singular value decomposition ``x = U diag(S) Vh``: ``SVDResult(U, S, Vh)``.

    ``x``: ``(..., M, N)``, ``K = min(M, N)``; ``S``: ``(..., K)`` real,
    descending; ``full_matrices=True``: ``U`` ``(..., M, M)``, ``Vh`` ``(..., N, N)``;
    ``False``: ``(..., M, K)`` and ``(..., K, N)``. LAPACK's ``gesdd`` on CPU,
    cuSOLVER's ``gesvdj`` (``gesvd`` above 1024 rows or columns) on a GPU, else
    one-sided Jacobi in HLO.
    Derivatives need ``full_matrices=False`` unless ``M == N`` (module docstring).

    >>> import numpy as np, hlodsl as hd
    >>> u, s, vh = svd(hd.array(np.float64([[0, 2], [1, 0], [0, 0]])), full_matrices=False)
    >>> s, u.shape, vh.shape
    (hlodsl.Array[float64, (2,)]([2., 1.]), (3, 2), (2, 2))
    """
    if not isinstance(full_matrices, bool):
        raise fail(TypeError, f"svd: full_matrices must be a bool, got {full_matrices!r}")
    dtype = x.dtype
    u, s, vh = _svd_rules(full_matrices)(_prepare("svd", x, square=False))
    return SVDResult(lift(u, dtype), lift(s, _real_dtype(dtype)), lift(vh, dtype))


@dispatch
def svdvals(x: Array):
    """The singular values of ``(..., M, N)``: ``(..., min(M, N))``, real, descending.

    >>> import numpy as np, hlodsl as hd
    >>> svdvals(hd.array(np.float32([[0, 2], [1, 0]])))
    hlodsl.Array[float32, (2,)]([2., 1.])
    """
    dtype = x.dtype
    return lift(_svdvals_rules(_prepare("svdvals", x, square=False)), _real_dtype(dtype))


# -- qr --------------------------------------------------------------------------------------

def _strict_lower(x: Array) -> Array:
    n = x.ndim
    rows, cols = ops.Iota(int32, x.shape, n - 2)(), ops.Iota(int32, x.shape, n - 1)()
    return ops.Select()(ops.Compare("GT")(rows, cols), x, filled(0, x.dtype, x.shape))


def _qr_primal(a: Array, complete: bool) -> QRResult:
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k, nb = min(m, n), len(batch)
    q_cols = m if complete else k
    if a.size == 0:
        q = identity(m, a.dtype, batch) if complete else filled(0, a.dtype, batch + (m, k))
        return QRResult(q, filled(0, a.dtype, batch + (q_cols, n)))
    kind = kernels.provider()
    if kind == "hlo":
        info = _failed(filled(0, int32, batch), a)
        return QRResult(*(lapack.nan_where_failed(info, r) for r in householder_qr(a, complete)))
    if kind == "cusolver":
        return _qr_cusolver(a, complete)
    raw, tau = lapack.geqrf(lapack.to_kernel(a))
    r = upper(lapack.from_kernel(raw))
    if q_cols < m:
        r = ops.Slice((0,) * (nb + 2), batch + (q_cols, n))(r)
    # orgqr expands the reflectors held in the first q_cols columns (column-major:
    # the first m * q_cols elements); Q of M > N with complete needs zero columns more.
    if q_cols < n:
        reflectors = _split_columns(raw, q_cols)[0]
    elif q_cols > n:
        flat = ops.Reshape(batch + (m * n,))(raw)
        flat = ops.Pad((0,) * (nb + 1), (0,) * nb + (m * (q_cols - n),), (0,) * (nb + 1))(
            flat, lift(0, a.dtype))
        reflectors = ops.Reshape(batch + (m, q_cols))(flat)
    else:
        reflectors = raw
    return QRResult(lapack.from_kernel(lapack.orgqr(reflectors, tau)), r)


def _qr_cusolver(a: Array, complete: bool) -> QRResult:
    """jax's GPU QR (``_qr_lowering``): geqrf, then orgqr on the reflectors Q needs."""
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    nb = len(batch)
    r, tau = cusolver.geqrf(a)
    if m < n:
        q = cusolver.orgqr(ops.Slice((0,) * (nb + 2), batch + (m, m))(r), tau)
    elif complete:
        pad = ops.Pad((0,) * (nb + 2), (0,) * (nb + 1) + (m - n,), (0,) * (nb + 2))
        q = cusolver.orgqr(pad(r, lift(0, a.dtype)), tau)
    else:
        q = cusolver.orgqr(r, tau)
        r = ops.Slice((0,) * (nb + 2), batch + (n, n))(r)
    return QRResult(q, upper(r))


def _qr_tangent(args, out, _, tangents) -> QRResult:
    """jax's ``qr_jvp_rule`` for ``M >= N`` and the reduced factors."""
    dx = tangents[0]
    q, r = out
    m, n = dx.shape[-2:]
    if m < n or q.shape[-1] != n:
        raise fail(NotImplementedError, f"xp.linalg.qr: derivatives need mode='reduced' and "
                                        f"M >= N (or a square matrix), got shape {dx.shape} "
                                        f"and Q of shape {q.shape}")
    dx_rinv = solve_triangular(r, dx, lower=False, left=False)  # dx @ r^-1
    qt_dx_rinv = mm(adjoint(q), dx_rinv)
    low = _strict_lower(qt_dx_rinv)
    do = ops.Subtract()(low, adjoint(low))  # skew-Hermitian
    if issubclass(dx.dtype, ComplexFloating):  # the imaginary part of the diagonal
        im = ops.Subtract()(qt_dx_rinv, lift(ops.Real()(qt_dx_rinv), dx.dtype))
        do = ops.Add()(do, ops.Multiply()(_eye_like(im), im))
    dq = ops.Add()(mm(q, ops.Subtract()(do, qt_dx_rinv)), dx_rinv)
    dr = mm(ops.Subtract()(qt_dx_rinv, do), r)
    return QRResult(dq, dr)


@functools.cache
def _qr_rules(complete: bool):
    return linear_rules(lambda a: _qr_primal(a, complete), lambda args, out: None, _qr_tangent)


@dispatch
def qr(x: Array, mode: str = "reduced"):
    """QR decomposition ``x = Q R``: ``QRResult(Q, R)``, ``Q`` orthonormal columns, ``R`` upper.

    ``x``: ``(..., M, N)``, ``K = min(M, N)``; ``mode='reduced'``: ``Q``
    ``(..., M, K)``, ``R`` ``(..., K, N)``; ``'complete'``: ``(..., M, M)`` and
    ``(..., M, N)``. Householder QR (LAPACK's ``geqrf``, ``orgqr``/``ungqr``)
    on CPU, cuSOLVER's on a GPU, else the same reflectors in HLO; the signs of
    ``R``'s diagonal are LAPACK's (as numpy's) on each.

    >>> import numpy as np, hlodsl as hd
    >>> q, r = qr(hd.array(np.float64([[3, 1], [4, 2]])))
    >>> r
    hlodsl.Array[float64, (2, 2)](
      [[-5. , -2.2],
       [ 0. ,  0.4]])
    """
    if mode not in ("reduced", "complete"):
        raise fail(ValueError, f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    dtype = x.dtype
    q, r = _qr_rules(mode == "complete")(_prepare("qr", x, square=False))
    return QRResult(lift(q, dtype), lift(r, dtype))


# -- built on the SVD ---------------------------------------------------------------------

def _cutoff(s: Array, shape, rtol) -> Array:
    """``rtol * max(S)`` per matrix, shape ``(..., 1)``; ``rtol=None``: ``max(M, N) * eps``."""
    if rtol is None:
        rtol = max(shape[-2:]) * float(np.finfo(s.dtype.np_dtype).eps)
    if s.shape[-1]:
        biggest = reductions.max(s, axis=-1, keepdims=True)
    else:
        biggest = filled(0, s.dtype, s.shape[:-1] + (1,))
    if isinstance(rtol, Array):
        rtol = lift(ops.Reshape(rtol.shape + (1,))(rtol) if rtol.ndim else rtol, s.dtype)
    else:
        rtol = lift(rtol, s.dtype)
    return multiply(rtol, biggest)


@dispatch
def matrix_rank(x: Array, rtol=None):
    """The rank of each matrix of ``(..., M, N)``: singular values above ``rtol * max(S)``.

    ``rtol``: a float or an array broadcastable to ``(...)``; ``None``:
    ``max(M, N) * eps`` of ``x``'s precision. The result is int64.

    >>> import numpy as np, hlodsl as hd
    >>> matrix_rank(hd.array(np.float64([[1, 2], [2, 4]])))
    hlodsl.Array[int64, ()](1)
    """
    _prepare("matrix_rank", x, square=False)  # errors in matrix_rank's name
    s = svdvals(x)
    keep = greater(s, _cutoff(s, x.shape, rtol))
    return reductions.sum(lift(keep, int64), axis=-1)


@dispatch
def pinv(x: Array, rtol=None):
    """The Moore-Penrose pseudo-inverse of ``(..., M, N)``: ``(..., N, M)``, by the SVD.

    Singular values at or below ``rtol * max(S)`` count as zero (``rtol`` as in
    ``matrix_rank``). Differentiable through ``svd`` (distinct singular values).

    >>> import numpy as np, hlodsl as hd
    >>> pinv(hd.array(np.float64([[2, 0], [0, 0]])))
    hlodsl.Array[float64, (2, 2)](
      [[0.5, 0. ],
       [0. , 0. ]])
    """
    _prepare("pinv", x, square=False)
    u, s, vh = svd(x, full_matrices=False)
    keep = greater(s, _cutoff(s, x.shape, rtol))
    s_inv = where(keep, divide(1, where(keep, s, 1)), 0)  # no 1/0 even where unused
    uh = adjoint(u)
    return mm(adjoint(vh), ops.Multiply()(lift(_rows(s_inv, uh.shape), uh.dtype), uh))


def singular_value_norm(x: Array, ord) -> Array:
    """``matrix_norm`` for ``ord`` 2 (largest), -2 (smallest) or ``'nuc'`` (sum) of svdvals."""
    s = svdvals(x)
    if ord == "nuc":
        return reductions.sum(s, axis=-1)
    if s.shape[-1] == 0:
        raise fail(ValueError, f"matrix_norm: ord={ord} is undefined for empty matrices "
                               f"(shape {x.shape})")
    return (reductions.max if ord == 2 else reductions.min)(s, axis=-1)
