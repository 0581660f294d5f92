"""``xp.linalg``'s cuSOLVER paths run on a CPU, each cuSOLVER call emulated with LAPACK.

What surrounds each cuSOLVER call is hlodsl's own HLO: 0-based pivots and NaN on
failure, cuSOLVER's permutation, the two triangular solves, QR's slicing and
padding of the reflectors, the SVD's ``V -> Vh`` and the slicing of full factors,
geev's unpacking of conjugate pairs, and every derivative rule (the Cholesky's
is new). Here it runs on XLA:CPU: ``kernels.provider`` says "cusolver" and each
cuSOLVER target is replaced by what that kernel computes (``emulate``), written
with jaxlib's LAPACK kernels on the column-major matrices cuSOLVER's layout
constraint gives it (geev's eigenvectors of a real matrix packed as cuSOLVER
packs them). Values are checked against numpy, derivatives against jax.
tests/test_gpu_golden.py checks the calls themselves against jax's; cuSOLVER's
own numerics (and its eigenvector normalisation) only a device can (docs/gpu.md).
"""

from __future__ import annotations

import hlodsl.stdlib as xp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ad_harness import random_array as _random
from hlodsl.stdlib import cusolver, kernels, lapack
from hlodsl.stdlib import linalg as la
from hlodsl.stdlib.lu_loop import permutation
from hlodsl.stdlib.matrices import adjoint, filled

import hlodsl as hd
from hlodsl import ops
from hlodsl.cache import clear_all

pytestmark = pytest.mark.cpu_only(reason="emulates cuSOLVER with jaxlib's LAPACK kernels, "
                                         "which XLA:CPU has")

jax.config.update("jax_enable_x64", True)
TOL = {np.float32: 2e-4, np.float64: 1e-9, np.complex64: 2e-4, np.complex128: 1e-9}
EMULATED = []  # the targets the emulation stood in for, to show it ran


def _packed(w, v):
    """geev's real eigenvectors as cuSOLVER (and LAPACK) pack them: a conjugate pair's
    (positive imaginary part first) as the columns re, im."""
    negative = ops.Compare("LT")(ops.Imag()(w), filled(0, ops.Imag()(w).dtype, w.shape))
    at = tuple(d for d in range(v.ndim) if d != v.ndim - 2)
    negative = ops.Broadcast(v.shape, at)(negative)
    return ops.Select()(negative, ops.Negate()(ops.Imag()(v)), ops.Real()(v))


def emulate(target, operands, out, attributes=None, aliases=None, column_major_layouts=True,
            nonbatch=2, placeholders=()):
    """What cuSOLVER's ``target`` writes for ``operands`` (``cusolver._call``'s signature)."""
    EMULATED.append(target)
    attributes = attributes or {}
    a = operands[0]
    k, f = lapack.to_kernel, lapack.from_kernel
    if target == "cusolver_getrf_ffi":
        raw, ipiv, info = lapack.getrf(k(a))
        result = (f(raw), ipiv, info)
    elif target == "cu_lu_pivots_to_permutation":
        assert out[0].shape == a.shape, "square LU only"
        result = (permutation(a),)
    elif target == "cusolver_potrf_ffi":
        raw, info = lapack._call("potrf", k(a), uplo="L" if attributes["lower"] else "U")
        result = (f(raw), info)
    elif target == "cusolver_geqrf_ffi":
        raw, tau = lapack.geqrf(k(a))
        result = (f(raw), tau)
    elif target == "cusolver_orgqr_ffi":
        result = (f(lapack.orgqr(k(a), operands[1])),)
    elif target == "cusolver_syevd_ffi":
        raw, w, info = lapack.syevd(k(a))
        result = (f(raw), w, info)
    elif target == "cusolver_gesvdj_ffi":
        s, u, vt, info = lapack.gesdd(k(a), "A" if attributes["full_matrices"] else "S")
        result = (a, s, f(u), adjoint(f(vt)), info)
    elif target == "cusolver_geev_ffi":
        w, vr, info = lapack.geev(k(a), vectors=True)
        v = f(vr)
        v = v if v.dtype is a.dtype else _packed(w, v)
        result = (a, w, filled(0, a.dtype, a.shape), v, info)
    else:
        raise NotImplementedError(f"{target} is not emulated")
    assert tuple(r.type for r in result) == tuple(out), (target, result, out)
    return result if len(result) > 1 else result[0]


@pytest.fixture(autouse=True)
def cusolver_emulated(monkeypatch):
    clear_all()  # nothing staged before (with LAPACK) may be reused
    monkeypatch.setattr(kernels, "provider", lambda: "cusolver")
    monkeypatch.setattr(cusolver, "_call", emulate)
    EMULATED.clear()
    yield
    clear_all()


def close(got, want, dtype, scale=1.0):
    np.testing.assert_allclose(np.asarray(got), want, rtol=TOL[dtype] * scale,
                               atol=TOL[dtype] * scale)


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _spd(rng, shape, dtype):
    m = _random(rng, shape, dtype)
    return (m @ _h(m) + shape[-1] * np.eye(shape[-1])).astype(dtype)


@pytest.mark.parametrize("dtype, shape", [(np.float64, (4, 4)), (np.complex64, (2, 3, 3))])
def test_lu_solve_inv_det_and_slogdet(dtype, shape):
    rng = np.random.default_rng(0)
    a = _random(rng, shape, dtype)
    b = _random(rng, shape[:-1] + (2,), dtype)
    A, B = hd.array(a), hd.array(b)
    close(la.solve(A, B), np.linalg.solve(a, b), dtype, 10)
    close(hd.compile(la.inv)(A), np.linalg.inv(a), dtype, 10)
    close(la.det(A), np.linalg.det(a), dtype, 10)
    sign, logabs = la.slogdet(A)
    close(sign, np.linalg.slogdet(a)[0], dtype, 10)
    close(logabs, np.linalg.slogdet(a)[1], dtype, 10)
    lu, _, perm = la.lu_factor(A)
    low = np.tril(np.asarray(lu), -1) + np.eye(shape[-1])
    rows = np.take_along_axis(a, np.asarray(perm)[..., None], axis=-2)
    close(low @ np.triu(np.asarray(lu)), rows, dtype, 10)
    assert {"cusolver_getrf_ffi", "cu_lu_pivots_to_permutation"} <= set(EMULATED)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_cholesky_and_its_failure(dtype):
    rng = np.random.default_rng(1)
    a = _spd(rng, (2, 4, 4), dtype)
    garbage = np.triu(np.full((4, 4), 100.0), 1).astype(dtype)  # only the lower triangle is read
    close(la.cholesky(hd.array(a + garbage)), np.linalg.cholesky(a), dtype, 10)
    close(la.cholesky(hd.array(a), upper=True), _h(np.linalg.cholesky(a)), dtype, 10)
    bad = np.stack([a[0], -np.eye(4, dtype=dtype)])
    out = np.asarray(la.cholesky(hd.array(bad)))
    close(out[0], np.linalg.cholesky(a[0]), dtype, 10)
    assert np.isnan(out[1][np.tril_indices(4)]).all()  # (above: zero, as jax's)
    assert "cusolver_potrf_ffi" in EMULATED


@pytest.mark.parametrize("dtype, shape", [(np.float64, (5, 5)), (np.complex128, (2, 4, 4))])
def test_eigh_and_eigvalsh(dtype, shape):
    a = _spd(np.random.default_rng(2), shape, dtype)
    w, v = la.eigh(hd.array(a))
    close(w, np.linalg.eigvalsh(a), dtype, 10)
    v = np.asarray(v)
    close(v @ (np.asarray(w)[..., None] * _h(v)), a, dtype, 100)
    close(la.eigvalsh(hd.array(a)), np.linalg.eigvalsh(a), dtype, 10)


@pytest.mark.parametrize("dtype, shape, full", [
    (np.float64, (2, 5, 3), False), (np.complex128, (3, 6), True),
    (np.float64, (40, 36), False),  # above 32 x 32: Jacobi's econ mode
    (np.complex64, (2, 3, 5), False),
])
def test_svd_svdvals_pinv_and_lstsq(dtype, shape, full):
    rng = np.random.default_rng(3)
    a = _random(rng, shape, dtype)
    u, s, vh = la.svd(hd.array(a), full_matrices=full)
    m, n = shape[-2:]
    k = min(m, n)
    assert u.shape[-1] == (m if full else k) and vh.shape[-2] == (n if full else k)
    close(s, np.linalg.svd(a, compute_uv=False), dtype, 10)
    u, vh = np.asarray(u)[..., :k], np.asarray(vh)[..., :k, :]
    close(u @ (np.asarray(s)[..., None] * vh), a, dtype, 100)
    close(_h(u) @ u, np.broadcast_to(np.eye(k), u.shape[:-2] + (k, k)), dtype, 100)
    close(la.svdvals(hd.array(a)), np.linalg.svd(a, compute_uv=False), dtype, 10)
    close(la.pinv(hd.array(a)), np.linalg.pinv(a), dtype, 100)
    if len(shape) == 2:
        b = _random(rng, (m, 2), dtype)
        close(la.lstsq(hd.array(a), hd.array(b)).solution, np.linalg.lstsq(a, b)[0], dtype, 100)
    assert "cusolver_gesvdj_ffi" in EMULATED


@pytest.mark.parametrize("dtype, shape, mode", [
    (np.float64, (5, 3), "reduced"), (np.float64, (5, 3), "complete"),
    (np.complex128, (2, 3, 5), "reduced"), (np.float32, (4, 4), "complete"),
])
def test_qr(dtype, shape, mode):
    a = _random(np.random.default_rng(4), shape, dtype)
    q, r = (np.asarray(x) for x in la.qr(hd.array(a), mode=mode))
    want_q, want_r = np.linalg.qr(a, mode=mode)
    assert q.shape == want_q.shape and r.shape == want_r.shape
    close(np.abs(r), np.abs(want_r), dtype, 10)  # LAPACK's reflectors: numpy's signs
    close(q @ r, a, dtype, 10)
    close(np.triu(r), r, dtype)
    assert {"cusolver_geqrf_ffi", "cusolver_orgqr_ffi"} <= set(EMULATED)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eig_unpacks_conjugate_pairs(dtype):
    rng = np.random.default_rng(5)
    a = _random(rng, (2, 5, 5), dtype)
    a[1] = np.array([[0, -1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 2, 0, 0], [0, 0, 0, 1, -3],
                     [0, 0, 0, 3, 1]], dtype)  # two conjugate pairs and a real eigenvalue
    w, v = (np.asarray(x) for x in la.eig(hd.array(a)))
    close(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(a)), dtype, 10)
    close(a @ v, v * w[..., None, :], dtype, 100)
    close(np.linalg.norm(v, axis=-2), np.ones(w.shape), dtype, 10)
    close(np.sort_complex(np.asarray(la.eigvals(hd.array(a)))), np.sort_complex(w), dtype, 10)
    assert "cusolver_geev_ffi" in EMULATED


# -- derivatives, against jax (whose CPU kernels are LAPACK's) ------------------------------

def _grad_pair(ours, theirs, *args):
    # compiled, one module each (op-by-op eager gradients compile every op on its own)
    nums = tuple(range(len(args)))
    got = hd.compile(hd.grad(ours, argnums=nums))(*(hd.array(x) for x in args))
    want = jax.jit(jax.grad(theirs, argnums=nums))(*args)
    return [np.asarray(x) for x in got], [np.asarray(x) for x in want]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_gradients_of_the_lu_functions_match_jax(dtype):
    rng = np.random.default_rng(6)
    a, b = _random(rng, (2, 3, 3), dtype), _random(rng, (2, 3, 2), dtype)
    for ours, theirs, args in (
            (lambda a, b: xp.sum(xp.real(la.solve(a, b))),
             lambda a, b: jnp.sum(jnp.real(jnp.linalg.solve(a, b))), (a, b)),
            (lambda a: xp.sum(xp.real(la.inv(a))), lambda a: jnp.sum(jnp.real(jnp.linalg.inv(a))),
             (a,)),
            (lambda a: xp.sum(la.slogdet(a).logabsdet),
             lambda a: jnp.sum(jnp.linalg.slogdet(a)[1]), (a,))):
        got, want = _grad_pair(ours, theirs, *args)
        for g_, w_ in zip(got, want):  # (hlodsl's complex convention is jax's)
            close(g_, w_, dtype, 100)
    if not np.iscomplexobj(a):
        got, want = _grad_pair(lambda a: xp.sum(la.det(a)), lambda a: jnp.sum(jnp.linalg.det(a)), a)
        close(got[0], want[0], dtype, 100)


def test_second_derivatives_of_det_and_solve_see_the_inverse():
    # The residual is the differentiable inverse (on cuSOLVER too), so an hvp is whole.
    a = _random(np.random.default_rng(7), (3, 3), np.float64) + 3 * np.eye(3)
    t = _random(np.random.default_rng(8), (3, 3), np.float64)
    for ours, theirs in ((la.det, jnp.linalg.det),
                         (lambda a: xp.sum(la.solve(a, hd.array(np.ones((3, 1))))),
                          lambda a: jnp.sum(jnp.linalg.solve(a, jnp.ones((3, 1)))))):
        got = hd.compile(lambda a, t, f=ours: hd.hvp(f, (a,), (t,)))(hd.array(a), hd.array(t))
        want = jax.jvp(jax.grad(theirs), (a,), (t,))[1]
        close(got, want, np.float64, 1000)


@pytest.mark.parametrize("dtype", [np.complex128])  # (its diagonal's imaginary part is not read)
def test_the_cholesky_derivative_matches_jax_and_reads_the_lower_triangle(dtype):
    rng = np.random.default_rng(9)
    a = _spd(rng, (2, 4, 4), dtype)
    w = _random(rng, (2, 4, 4), dtype)
    got = hd.compile(hd.grad(lambda x, w: xp.sum(xp.real(la.cholesky(x) * w))))(
        hd.array(a), hd.array(w))
    # jax reads (a + a^H) / 2; hlodsl the lower triangle: its cotangent is jax's folded
    # onto that triangle.
    want = np.asarray(jax.grad(lambda x: jnp.sum(jnp.real(jnp.linalg.cholesky(x) * w)))(a))
    folded = np.tril(want + _h(want)) - np.eye(4) * np.real(np.diagonal(want, 0, -2, -1))[..., None, :]
    close(got, np.tril(folded), dtype, 100)
    # forward mode: the tangent of the lower triangle only
    t = np.tril(_random(rng, (2, 4, 4), dtype))
    _, tangent = hd.compile(lambda a, t: hd.jvp(la.cholesky, (a,), (t,)))(hd.array(a),
                                                                           hd.array(t))
    full = t + np.conj(np.swapaxes(np.tril(t, -1), -1, -2))
    _, want_t = jax.jvp(jnp.linalg.cholesky, (a,), (full,))
    close(tangent, want_t, dtype, 100)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eigh_svd_qr_and_eig_derivatives_match_jax(dtype):
    rng = np.random.default_rng(10)
    h = _spd(rng, (2, 4, 4), dtype)
    a = _random(rng, (2, 5, 3), dtype)
    e = _random(rng, (4, 4), dtype)
    w = _random(rng, (2, 3, 3), dtype)
    cases = [
        (lambda x: xp.sum(la.eigvalsh(x) ** 2), lambda x: jnp.sum(jnp.linalg.eigvalsh(x) ** 2), h),
        (lambda x: xp.sum(la.svdvals(x)), lambda x: jnp.sum(jnp.linalg.svd(x, compute_uv=False)),
         a),
        # (R's signs are LAPACK's in both: a loss of R itself is gauge-free here)
        (lambda x: xp.sum(xp.real(la.qr(x).R * hd.array(w))),
         lambda x: jnp.sum(jnp.real(jnp.linalg.qr(x)[1] * w)), a),
        (lambda x: xp.sum(xp.real(la.eigvals(x))),
         lambda x: jnp.sum(jnp.real(jnp.linalg.eigvals(x))), e),
    ]
    for ours, theirs, x in cases:
        got, want = _grad_pair(ours, theirs, x)
        close(got[0], want[0], dtype, 1000)


def test_nothing_but_the_emulation_reached_xla():
    text = hd.code_hlo(la.svd, hd.array(np.eye(3)))
    assert "cusolver" not in text and "lapack_dgesdd_ffi" in text
