"""``linalg.eig`` and ``linalg.eigvals``: eigen-decomposition of general (non-symmetric) matrices.

Array API 2025.12. Eigenvalues and eigenvectors of a real or complex
``(..., M, M)`` are complex (complex64 for float32/float16/bfloat16 input,
complex128 for float64), in LAPACK's order (unspecified by the standard);
the eigenvectors are the columns of unit 2-norm whose largest-magnitude entry
is real (LAPACK's normalisation, numpy's and jax's too). On CPU jaxlib's
LAPACK kernel ``geev`` computes them (``stdlib/lapack.py``), on a GPU
cuSOLVER's ``geev`` as jax calls it (cuSOLVER 11.7.1 or newer;
``stdlib/cusolver.py``); XLA has no instruction for a non-symmetric
eigenproblem and there is no HLO fallback yet, so another backend (or
``hlodsl.config.linalg_kernels = "hlo"``) gets a ``NotImplementedError``. A matrix holding an inf or NaN, or one where the QR
iteration did not converge, gives NaN results, as in jax.

Derivatives (forward and reverse, as jax's rules) hold where the eigenvalues
are distinct: ``dw = diag(V^-1 dA V)``; the eigenvectors' derivative divides
by eigenvalue gaps (inf/NaN for a repeated eigenvalue) and follows LAPACK's
normalisation, as ``jax.lax.linalg.eig(..., enable_eigvec_derivs=True)``
does, so only functions of ``V`` invariant under its gauge, or losses that
account for that normalisation, have meaningful gradients. ``eigvals``'
derivative needs only distinct-enough eigenvalues for ``V`` to be invertible.

>>> import numpy as np, hlodsl as hd
>>> eigvals(hd.array(np.float64([[0, -1], [1, 0]])))   # a rotation: +-i
hlodsl.Array[complex128, (2,)]([0.+1.j, 0.-1.j])
"""

from __future__ import annotations

from collections import namedtuple

from hlodsl import ops, runtime
from hlodsl.arrays.array import Array
from hlodsl.ir.dispatcher import dispatch

from . import cusolver, kernels, lapack
from .decompositions import _failed, _prepare
from .elementwise_more import _real, conj
from .factorizations import linear_rules, solve
from .manipulation import fail
from .matrices import filled, identity, main_diagonal, mm, spread
from .promotion import lift
from .reductions import sum
from .searching import argmax

__all__ = ["eig", "eigvals", "EigResult"]

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def _geev(a: Array, vectors: bool):
    what = f"linalg.{'eig' if vectors else 'eigvals'} of {a.type}"
    kind = kernels.provider()
    if kind == "hlo":
        raise fail(NotImplementedError, f"{what}: a non-symmetric eigenproblem needs jaxlib's "
                                        "LAPACK (CPU) or cuSOLVER (GPU) kernels "
                                        "(hlodsl.config.linalg_kernels 'auto'); there is no "
                                        "HLO fallback yet")
    if a.size == 0:  # LAPACK rejects a 0 x 0 matrix (its leading dimension must be >= 1)
        cdtype = lapack.complex_dtype(a.dtype)
        return filled(0, cdtype, a.shape[:-1]), filled(0, cdtype, a.shape)
    if kind == "cusolver":
        if not kernels.geev_supported():
            raise fail(NotImplementedError, f"{what}: cuSOLVER's geev needs cuSOLVER 11.7.1 "
                                            f"or newer, this GPU has {runtime.cusolver_version()}")
        w, vr, info = cusolver.geev(a, vectors=vectors)
        info = _failed(info, a)
        return lapack.nan_where_failed(info, w), \
            None if vr is None else lapack.nan_where_failed(info, vr)
    w, vr, info = lapack.geev(lapack.to_kernel(a), vectors=vectors)
    info = _failed(info, a)
    return lapack.nan_where_failed(info, w), lapack.nan_where_failed(info, lapack.from_kernel(vr))


def _eig_primal(a: Array) -> EigResult:
    return EigResult(*_geev(a, vectors=True))


def _eigvals_primal(a: Array) -> Array:
    return _geev(a, vectors=False)[0]


def _projected(v: Array, da: Array) -> Array:
    """``V^-1 dA V``: the perturbation in the eigenbasis."""
    return mm(solve(v, lift(da, v.dtype)), v)


def _eig_tangent(args, out, _, tangents) -> EigResult:
    # Non-degenerate perturbation theory (jax's _eig_vec_jvp): dV = V (F * P) + V diag(c),
    # F_ij = 1 / (w_j - w_i) off the diagonal, c fixing LAPACK's normalisation.
    w, v = out
    p = _projected(v, tangents[0])
    eye = identity(p.shape[-1], w.dtype, p.shape[:-2])
    gaps = ops.Add()(eye, ops.Subtract()(spread(w, p.shape, (p.ndim - 1,)),
                                         spread(w, p.shape, (p.ndim - 2,))))
    f = ops.Subtract()(ops.Divide()(filled(1, w.dtype, gaps.shape), gaps), eye)
    u = mm(v, ops.Multiply()(f, p))
    # Each column keeps unit norm (Re(v_j^H du_j) = 0) and a real largest entry.
    k = argmax(ops.Abs()(v), axis=-2)
    rows = ops.Iota(k.dtype, v.shape, v.ndim - 2)()
    at_k = lift(ops.Compare("EQ")(rows, spread(k, v.shape, (v.ndim - 1,))), v.dtype)
    norm = _real(sum(ops.Multiply()(conj(v), u), axis=-2))
    phase = ops.Divide()(ops.Imag()(sum(ops.Multiply()(at_k, u), axis=-2)),
                         _real(sum(ops.Multiply()(at_k, v), axis=-2)))
    c = ops.Complex()(ops.Negate()(norm), ops.Negate()(phase))
    dv = ops.Add()(u, ops.Multiply()(v, spread(c, v.shape, (v.ndim - 1,))))
    return EigResult(main_diagonal(p), dv)


def _eigvals_tangent(args, w, v, tangents) -> Array:
    return main_diagonal(_projected(v, tangents[0]))


_eig_rules = linear_rules(_eig_primal, lambda args, out: None, _eig_tangent)
# The residual (V) through the differentiable eig, as eigvalsh's: second derivatives see it.
_eigvals_rules = linear_rules(_eigvals_primal, lambda args, out: _eig_rules(args[0])[1],
                              _eigvals_tangent)


@dispatch
def eig(x: Array):
    """Eigenvalues and right eigenvectors of general matrices: ``EigResult(eigenvalues, eigenvectors)``.

    ``x``: ``(..., M, M)`` real or complex floating; eigenvalues ``(..., M)``
    and eigenvectors ``(..., M, M)`` (columns, unit 2-norm, largest entry real)
    are complex of ``x``'s precision, so ``x @ V = V * w[..., None, :]``.
    LAPACK's ``geev`` on CPU, cuSOLVER's on a GPU; derivatives where the eigenvalues are distinct
    (module docstring).

    >>> import numpy as np, hlodsl as hd
    >>> w, v = eig(hd.array(np.float64([[2, 1], [0, 3]])))
    >>> w
    hlodsl.Array[complex128, (2,)]([2.+0.j, 3.+0.j])
    >>> np.round(np.asarray(v).real, 6)
    array([[1.      , 0.707107],
           [0.      , 0.707107]])
    """
    w, v = _eig_rules(_prepare("eig", x, square=True))
    return EigResult(w, v)


@dispatch
def eigvals(x: Array):
    """The eigenvalues (complex, LAPACK's order) of general ``(..., M, M)``: ``(..., M)``.

    >>> import numpy as np, hlodsl as hd
    >>> w = eigvals(hd.array(np.float32([[1, 2], [-2, 1]])))
    >>> w.dtype, np.round(np.sort_complex(np.asarray(w)), 5)
    (complex64, array([1.-2.j, 1.+2.j], dtype=complex64))
    """
    return _eigvals_rules(_prepare("eigvals", x, square=True))


