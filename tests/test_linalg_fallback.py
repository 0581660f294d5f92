"""``xp.linalg``'s HLO fallback (Jacobi eigh/SVD, Householder QR, the LU loop), run on CPU.

Every test here but the last few runs with ``hd.config.linalg_kernels = "hlo"``
(the ``hlo`` fixture sets and restores it), which is what a backend without
jaxlib's LAPACK targets stages. Values are checked against numpy: eigen- and
singular values directly, vectors through reconstruction, orthonormality and
``|<v_numpy, v_ours>| ~ 1`` where the spectrum is well separated, ``R`` of QR
against numpy's (the reflectors follow LAPACK's sign convention). Derivatives
(float64, complex128) go through decompositions.py's rules on the fallback's
outputs and are checked against ``jax.grad`` of the same functions.
"""

from __future__ import annotations

import hlodsl.stdlib as xp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ad_harness import random_array as _random
from hlodsl import runtime
from hlodsl.ir.target import staging_platform
from hlodsl.stdlib import cusolver, jacobi, kernels, lapack
from hlodsl.stdlib import linalg as la
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
from hlodsl.settings import Config

jax.config.update("jax_enable_x64", True)
# STAGED compiles one signature per drawn shape and element type, on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::hlodsl.errors.RecompileWarning")

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
#: (rtol, atol) per element type, for inputs of size <= 16 with entries of order 1.
TOL = {np.float32: (2e-4, 2e-4), np.float64: (1e-10, 1e-10),
       np.complex64: (2e-4, 2e-4), np.complex128: (1e-10, 1e-10)}
#: (shape, element type) pairs: every size and every type, without their full product.
SQUARE = tuple(zip(((1, 1), (2, 2), (3, 3), (5, 5), (16, 16), (2, 3, 4, 4), (3, 5, 5),
                    (16, 16)), DTYPES * 2))
SHAPES = tuple(zip(((1, 1), (4, 4), (5, 3), (3, 5), (7, 2), (2, 6), (2, 3, 4), (2, 4, 3),
                    (2, 5, 5)), DTYPES * 3))


@pytest.fixture(autouse=True, scope="module")
def hlo_module():
    old = hd.config.linalg_kernels
    hd.config.linalg_kernels = "hlo"
    yield
    hd.config.linalg_kernels = old


@pytest.fixture(autouse=True)
def hlo(hlo_module):
    """``linalg_kernels = "hlo"`` for every test (those of the switch set their own), restored
    at the end of the module. A change empties hlodsl's caches: setting the value it has
    already costs nothing."""
    hd.config.linalg_kernels = "hlo"


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _hermitian(rng, shape, dtype):
    a = _random(rng, shape, dtype)
    return ((a + _h(a)) / 2).astype(dtype)


def close(got, want, dtype, scale=1.0):
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol * scale, atol=atol * scale)


def orthonormal(q, dtype, columns=True):
    q = np.asarray(q)
    g = _h(q) @ q if columns else q @ _h(q)
    close(g, np.broadcast_to(np.eye(g.shape[-1]), g.shape), dtype, 10)


def aligned(ours, theirs, dtype, gaps):
    """``|<v_numpy, v_ours>| ~ 1`` for the columns whose eigenvalue gap is large."""
    dots = np.abs(np.sum(np.conj(np.asarray(theirs)) * np.asarray(ours), axis=-2))
    sep = gaps > 1e-2
    np.testing.assert_allclose(dots[sep], 1, atol=1e3 * TOL[dtype][1])


def _gaps(w):
    d = np.diff(w, axis=-1)
    big = np.full(w.shape[:-1] + (1,), np.inf)
    return np.minimum(np.concatenate([big, d], -1), np.concatenate([d, big], -1))


STAGED = {name: hd.compile(getattr(la, name), static_argnames={"svd": ("full_matrices",),
                                                               "qr": ("mode",)}.get(name, ()))
          for name in ("eigh", "eigvalsh", "svd", "svdvals", "qr")}


# -- eigh, eigvalsh -------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype", SQUARE)
def test_eigh_against_numpy(shape, dtype):
    a = _hermitian(np.random.default_rng(sum(shape)), shape, dtype)
    w_np, v_np = np.linalg.eigh(a)
    for w, v in (la.eigh(hd.array(a)), STAGED["eigh"](hd.array(a))):
        assert np.asarray(w).dtype == np.finfo(dtype).dtype and np.asarray(v).dtype == dtype
        close(w, w_np, dtype, shape[-1])
        w, v = np.asarray(w), np.asarray(v)
        assert np.all(np.diff(w, axis=-1) >= 0)
        orthonormal(v, dtype)
        close((v * w[..., None, :]) @ _h(v), a, dtype, shape[-1])
        aligned(v, v_np, dtype, _gaps(w_np))
    close(la.eigvalsh(hd.array(a)), w_np, dtype, shape[-1])
    close(STAGED["eigvalsh"](hd.array(a)), w_np, dtype, shape[-1])


def test_eigh_uses_only_the_hermitian_part():
    a = _random(np.random.default_rng(3), (4, 4), np.complex128)
    close(la.eigvalsh(hd.array(a)), np.linalg.eigvalsh((a + _h(a)) / 2), np.complex128)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_repeated_eigenvalues(dtype):
    q, _ = np.linalg.qr(_random(np.random.default_rng(4), (6, 6), dtype))
    want = np.array([1, 1, 2, 2, 2, -3.0])
    a = ((q * want) @ _h(q)).astype(dtype)
    w, v = la.eigh(hd.array(a))
    close(w, np.sort(want), dtype, 10)
    orthonormal(v, dtype)
    w, v = np.asarray(w), np.asarray(v)
    close((v * w) @ _h(v), a, dtype, 10)


@pytest.mark.parametrize("n", [1, 4, 5])
def test_identity_and_diagonal_input_need_no_rounds(n):
    d = np.arange(n, 0, -1).astype(np.float64)
    for a in (np.eye(n), np.diag(d)):
        even = np.pad(a, (0, n % 2))  # as jacobi_eigh pads an odd n
        rounds = hd.compile(lambda x: jacobi._eigh_loop(x, True)[2])(hd.array(even))
        assert int(np.asarray(rounds)) == 0
        w, v = la.eigh(hd.array(a))
        np.testing.assert_array_equal(np.asarray(w), np.sort(np.diag(a)))
        np.testing.assert_array_equal(np.abs(np.asarray(v)), np.eye(n)[:, np.argsort(np.diag(a))])
    u, s, _ = la.svd(hd.array(np.diag(d)))
    np.testing.assert_array_equal(np.asarray(s), d)
    np.testing.assert_array_equal(np.abs(np.asarray(u)), np.eye(n))


@pytest.mark.parametrize("dtype, scale", [(np.float32, 1e25), (np.float32, 1e-25),
                                          (np.complex64, 1e30), (np.float64, 1e200),
                                          (np.float64, 1e-200)])
def test_huge_and_tiny_entries(dtype, scale):
    # ||A||^2 and the column norms^2 would overflow or underflow without scaling
    rng = np.random.default_rng(8)
    h = _hermitian(rng, (5, 5), dtype)
    a = (_random(rng, (4, 3), dtype) * scale).astype(dtype)
    close(la.eigvalsh(hd.array((h * scale).astype(dtype))) / scale, np.linalg.eigvalsh(h), dtype, 10)
    u, s, vh = la.svd(hd.array(a), full_matrices=False)
    close(np.asarray(s) / scale, np.linalg.svd(a / scale, compute_uv=False), dtype, 10)
    orthonormal(u, dtype)
    close(np.asarray(u) * (np.asarray(s) / scale) @ np.asarray(vh), a / scale, dtype, 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sweeps_stay_well_under_the_cap(dtype):
    for n in (8, 16):
        a = _hermitian(np.random.default_rng(n), (n, n), dtype)
        rounds = hd.compile(lambda x: jacobi._eigh_loop(x, True)[2])(hd.array(a))
        assert 0 < int(np.asarray(rounds)) <= 10 * (n - 1)
        w = hd.compile(lambda x: jacobi._svd_loop(x, True)[2])(hd.array(a))
        assert 0 < int(np.asarray(w)) <= 10 * (n - 1)


# -- svd, svdvals ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype", SHAPES)
@pytest.mark.parametrize("full", [False, True])
def test_svd_against_numpy(shape, dtype, full):
    a = _random(np.random.default_rng(sum(shape)), shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    s_np = np.linalg.svd(a, compute_uv=False)
    u_np, _, vh_np = np.linalg.svd(a, full_matrices=False)
    for u, s, vh in (la.svd(hd.array(a), full_matrices=full),
                     STAGED["svd"](hd.array(a), full_matrices=full)):
        assert u.shape == shape[:-2] + ((m, m) if full else (m, k))
        assert vh.shape == shape[:-2] + ((n, n) if full else (k, n))
        close(s, s_np, dtype, 10)
        u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
        orthonormal(u, dtype)
        orthonormal(vh, dtype, columns=False)
        close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, 10)
        aligned(u[..., :k], u_np, dtype, _gaps(-s_np))
        aligned(_h(vh)[..., :k], _h(vh_np), dtype, _gaps(-s_np))
    close(la.svdvals(hd.array(a)), s_np, dtype, 10)
    close(STAGED["svdvals"](hd.array(a)), s_np, dtype, 10)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
@pytest.mark.parametrize("shape", [(6, 6), (7, 5), (4, 7), (5, 5)])
def test_rank_deficient_svd_keeps_orthonormal_vectors(shape, dtype):
    rng = np.random.default_rng(5)
    m, n = shape
    a = (_random(rng, (m, 2), dtype) @ _random(rng, (2, n), dtype)).astype(dtype)
    for full in (False, True):
        u, s, vh = la.svd(hd.array(a), full_matrices=full)
        close(s, np.linalg.svd(a, compute_uv=False), dtype, 10)
        assert np.all(np.asarray(s)[2:] < 1e3 * TOL[dtype][1])
        orthonormal(u, dtype)
        orthonormal(vh, dtype, columns=False)
        k = min(m, n)
        u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
        close((u[:, :k] * s) @ vh[:k], a, dtype, 10)
    zero = np.zeros(shape, dtype)
    u, s, vh = la.svd(hd.array(zero))
    np.testing.assert_array_equal(np.asarray(s), 0)
    orthonormal(u, dtype)
    orthonormal(vh, dtype, columns=False)
    assert int(np.asarray(la.matrix_rank(hd.array(a)))) == 2


def test_pinv_rank_and_norms_through_the_fallback():
    a = _random(np.random.default_rng(6), (2, 5, 3), np.float64)
    close(la.pinv(hd.array(a)), np.linalg.pinv(a), np.float64, 10)
    np.testing.assert_array_equal(np.asarray(la.matrix_rank(hd.array(a))), [3, 3])
    for ord in (2, -2, "nuc"):
        close(la.matrix_norm(hd.array(a), ord=ord), np.linalg.norm(a, ord=ord, axis=(-2, -1)),
              np.float64, 10)


# -- qr ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype", SHAPES)
def test_qr_against_numpy(shape, dtype):
    a = _random(np.random.default_rng(sum(shape) + 1), shape, dtype)
    for mode, q, r in (("reduced", *la.qr(hd.array(a))),
                       ("complete", *STAGED["qr"](hd.array(a), mode="complete"))):
        q_np, r_np = np.linalg.qr(a, mode=mode)
        assert q.shape == q_np.shape and r.shape == r_np.shape
        q, r = np.asarray(q), np.asarray(r)
        orthonormal(q, dtype)
        np.testing.assert_array_equal(np.tril(r, -1), 0)
        close(q @ r, a, dtype, 10)
        close(r, r_np, dtype, 10)  # LAPACK's sign convention, as numpy's


def test_qr_of_rank_deficient_and_zero_columns():
    a = np.float64([[1, 0, 2], [1, 0, 2], [1, 0, 2]])
    q, r = la.qr(hd.array(a))
    q, r = np.asarray(q), np.asarray(r)
    orthonormal(q, np.float64)
    close(q @ r, a, np.float64)
    close(np.abs(r), np.abs(np.linalg.qr(a)[1]), np.float64)


# -- NaN, empty, errors ------------------------------------------------------------------------

def test_nan_input_gives_nan_for_that_matrix_only():
    a = np.stack([np.eye(3), np.eye(3) * 2])
    a[1, 0, 1] = a[1, 1, 0] = np.nan
    for out in (la.eigh(hd.array(a)), la.svd(hd.array(a)), la.qr(hd.array(a)),
                (la.eigvalsh(hd.array(a)),), (la.svdvals(hd.array(a)),)):
        for x in out:
            x = np.asarray(x)
            assert np.all(np.isnan(x[1])) and not np.any(np.isnan(x[0]))
    assert np.all(np.isnan(np.asarray(la.eigvalsh(hd.array(np.float64([[np.inf, 0], [0, 1]]))))))


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 3), (3, 0)])
def test_empty_matrices(shape):
    a = hd.array(np.zeros(shape))
    assert la.svd(a).S.shape == shape[:-2] + (0,)
    assert la.qr(a).Q.shape == shape[:-2] + (shape[-2], min(shape[-2:]))
    if shape[-1] == shape[-2]:
        assert la.eigvalsh(a).shape == shape[:-1]


# -- derivatives (through decompositions.py's rules) against jax --------------------------------

RNG = np.random.default_rng(11)


# The derivative tests of the LAPACK path run here too, under this module's "hlo" fixture:
# decompositions.py's rules applied to the fallback's outputs, against jax.grad.
from test_linalg_lapack import test_eigh_derivatives, test_svd_and_qr_derivatives  # noqa: E402,F401


def test_forward_mode_and_staged_gradients():
    a = _random(RNG, (2, 4, 4), np.float64)
    t = _random(RNG, (2, 4, 4), np.float64)
    h = a + np.swapaxes(a, -1, -2)
    for f, jf, x in ((la.eigvalsh, jnp.linalg.eigvalsh, h), (la.svdvals, jnp.linalg.svdvals, a)):
        got = hd.jvp(f, (hd.array(x),), (hd.array(t),))[1]
        np.testing.assert_allclose(np.asarray(got), jax.jvp(jf, (x,), (t,))[1], rtol=1e-8,
                                   atol=1e-10)
    g = hd.grad(lambda x: xp.sum(la.svdvals(x)) + xp.sum(la.eigvalsh(x + xp.matrix_transpose(x))))
    np.testing.assert_allclose(np.asarray(hd.compile(g)(hd.array(a))),
                               np.asarray(g(hd.array(a))), rtol=1e-10)


# -- vmap ------------------------------------------------------------------------------------

def test_vmap_of_each():
    a = _random(RNG, (3, 5, 4), np.complex128)
    h = _hermitian(RNG, (3, 5, 5), np.complex128)
    close(hd.vmap(la.eigvalsh)(hd.array(h)), np.linalg.eigvalsh(h), np.complex128)
    w, v = hd.vmap(la.eigh)(hd.array(h))
    w, v = np.asarray(w), np.asarray(v)
    close((v * w[..., None, :]) @ _h(v), h, np.complex128, 10)
    close(hd.vmap(la.svdvals)(hd.array(a)), np.linalg.svd(a, compute_uv=False), np.complex128)
    u, s, vh = hd.vmap(lambda x: la.svd(x, full_matrices=False))(hd.array(a))
    close((np.asarray(u) * np.asarray(s)[..., None, :]) @ np.asarray(vh), a, np.complex128, 10)
    q, r = hd.vmap(la.qr)(hd.array(a))
    close(np.asarray(q) @ np.asarray(r), a, np.complex128, 10)
    close(r, np.linalg.qr(a)[1], np.complex128, 10)
    # vmap under compile, of a function with a batched and an unbatched matrix
    f = hd.compile(hd.vmap(lambda x: la.svdvals(x @ hd.array(a[0].T.conj()))))
    close(f(hd.array(a)), np.linalg.svd(a @ _h(a[0]), compute_uv=False), np.complex128, 10)


# -- the LU-backed functions under "hlo" -------------------------------------------------------

def test_det_under_hlo():
    a = _random(RNG, (2, 4, 4), np.float64)
    close(la.det(hd.array(a)), np.linalg.det(a), np.float64, 10)
    assert "lapack_" not in hd.code_hlo(la.det, hd.array(a))


def test_solve_under_hlo():
    a, b = _random(RNG, (2, 4, 4), np.complex64), _random(RNG, (2, 4, 3), np.complex64)
    close(la.solve(hd.array(a), hd.array(b)), np.linalg.solve(a, b), np.complex64, 10)
    assert "lapack_" not in hd.code_hlo(la.solve, hd.array(a), hd.array(b))


def test_inv_under_hlo():
    a = _random(RNG, (3, 3), np.float32)
    close(la.inv(hd.array(a)), np.linalg.inv(a), np.float32, 10)
    assert "lapack_" not in hd.code_hlo(la.inv, hd.array(a))


# -- the switch ----------------------------------------------------------------------------

def test_staged_modules_are_while_loops_without_lapack():
    a = hd.array(np.eye(4))
    for f in (la.eigh, la.eigvalsh, la.svd, la.svdvals, la.qr):
        text = hd.code_hlo(f, a)
        assert "while(" in text and "lapack_" not in text
    # the module does not grow with the matrix: the loops do not unroll
    size = lambda n: len(hd.code_hlo(la.svd, hd.array(np.eye(n))).splitlines())
    assert size(6) == size(40)


@pytest.mark.cpu_only(reason="'auto' means LAPACK on the CPU (a GPU: the twin below)")
def test_the_default_keeps_lapack_on_cpu():
    assert Config().linalg_kernels == "auto"
    hd.config.linalg_kernels = "auto"
    assert lapack.available() and kernels.provider() == "lapack"
    for f in (la.eigh, la.svd, la.qr, la.det):
        assert "lapack_" in hd.code_hlo(f, hd.array(np.eye(3)))
    hd.config.linalg_kernels = "lapack"
    assert "lapack_" in hd.code_hlo(la.svdvals, hd.array(np.eye(3)))


def test_the_default_uses_cusolver_for_a_gpu():
    """Staged for a GPU ("auto"), here or on one: cuSOLVER's targets, no LAPACK's."""
    hd.config.linalg_kernels = "auto"
    seen = []
    hd.code_hlo(lambda a: seen.append((kernels.provider(), lapack.available())) or a,
                hd.ArrayType(hd.float64, (2,)), platform="gpu")
    assert seen == [("cusolver", False)]
    live = kernels.provider()
    with staging_platform("gpu"):  # outside staging: the runtime's kernels
        assert kernels.provider() == live
    for f in (la.eigh, la.svd, la.qr, la.det, la.cholesky):
        text = hd.code_hlo(f, hd.ArrayType(hd.float64, (3, 3)), platform="gpu")
        assert "cusolver_" in text and "lapack_" not in text
    hd.config.linalg_kernels = "hlo"
    text = hd.code_hlo(la.svdvals, hd.ArrayType(hd.float64, (3, 3)), platform="gpu")
    assert "while(" in text and "cusolver_" not in text


def test_the_default_uses_cusolver_on_gpu():
    if runtime.platform() != "gpu":
        pytest.skip("runs on a GPU: 'auto' means cuSOLVER there (staged for one: the test above)")
    hd.config.linalg_kernels = "auto"
    assert kernels.provider() == "cusolver"
    for f in (la.eigh, la.svd, la.qr, la.det):
        assert "cusolver_" in hd.code_hlo(f, hd.array(np.eye(3)))


def test_the_switch_is_validated():
    with pytest.raises(ValueError, match="linalg_kernels: must be one of 'auto', 'hlo', "
                                         "'lapack', 'cusolver'"):
        hd.config.linalg_kernels = "magma"
    assert hd.config.linalg_kernels == "hlo"


def test_lapack_on_a_backend_without_it_says_so(monkeypatch):
    hd.config.linalg_kernels = "lapack"
    monkeypatch.setattr(runtime, "platform", lambda: "tpu")
    with pytest.raises(NotImplementedError, match="LAPACK kernels exist only on the CPU"):
        lapack.available()
    with pytest.raises(NotImplementedError, match="LAPACK kernels exist only on the CPU"):
        hd.code_hlo(la.det, hd.ArrayType(hd.float64, (2, 2)), platform="gpu")


def test_cusolver_where_there_is_none_says_so():
    hd.config.linalg_kernels = "cusolver"
    if runtime.platform() == "gpu":
        pytest.skip("this machine has the GPU: cuSOLVER is there")
    with pytest.raises(NotImplementedError, match="cuSOLVER kernels exist only on a CUDA GPU"):
        la.eigh(hd.array(np.eye(2)))
    # staged for a GPU it is what is asked for
    assert "cusolver_syevd_ffi" in hd.code_hlo(la.eigh, hd.ArrayType(hd.float64, (2, 2)),
                                               platform="gpu")


def _native():
    """The module of the kernels "auto" stages here, and the routines eigh, svd and qr call."""
    hd.config.linalg_kernels = "auto"
    if kernels.provider() == "cusolver":
        return cusolver, ("syevd", "svd", "geqrf")
    return lapack, ("syevd", "gesdd", "geqrf")


def test_eager_calls_follow_the_switch(monkeypatch):
    calls = []

    def counted(real):
        return lambda *a, **k: calls.append(1) or real(*a, **k)

    module, names = _native()
    for name in names:
        monkeypatch.setattr(module, name, counted(getattr(module, name)))
    a = hd.array(np.float64([[2, 1], [1, 2]]))
    for kernels, used in (("auto", True), ("hlo", False), ("auto", True)):
        hd.config.linalg_kernels = kernels
        calls.clear()
        close(la.eigh(a).eigenvalues, [1, 3], np.float64)
        close(la.svd(a).S, [3, 1], np.float64)
        close(la.qr(a).R, np.linalg.qr(np.asarray(a))[1], np.float64)
        assert bool(calls) == used


def test_compiled_functions_and_eager_vmap_follow_the_switch(monkeypatch):
    calls = []
    module, _ = _native()
    real = module.syevd
    monkeypatch.setattr(module, "syevd", lambda *a, **k: calls.append(1) or real(*a, **k))
    f = hd.compile(lambda a: la.eigvalsh(a) * 2)
    batched = hd.vmap(la.eigvalsh)
    a = hd.array(np.float64([[2, 1], [1, 2]]))
    for kernels, staged in (("auto", True), ("hlo", True), ("auto", True), ("auto", False)):
        hd.config.linalg_kernels = kernels
        calls.clear()
        close(f(a), [2, 6], np.float64)
        # f and the eager vmap are staged again (LAPACK's kernel called while staging,
        # under "auto") exactly when the switch moved
        assert bool(calls) == (staged and kernels == "auto"), kernels
        calls.clear()
        close(batched(hd.array(np.stack([np.asarray(a)] * 3))), [[1, 3]] * 3, np.float64)
        assert bool(calls) == (staged and kernels == "auto"), kernels
    assert f.compiles == 3


# -- hypothesis --------------------------------------------------------------------------------

@settings(max_examples=6, deadline=None)
@given(st.integers(1, 7), st.integers(1, 7), st.sampled_from(DTYPES), st.integers(0, 2 ** 32 - 1))
def test_drawn_sizes(m, n, dtype, seed):
    rng = np.random.default_rng(seed)
    a = _random(rng, (2, m, n), dtype)
    u, s, vh = la.svd(hd.array(a), full_matrices=False)
    close(s, np.linalg.svd(a, compute_uv=False), dtype, 10)
    u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
    close((u * s[..., None, :]) @ vh, a, dtype, 10)
    h = _hermitian(rng, (2, n, n), dtype)
    close(la.eigvalsh(hd.array(h)), np.linalg.eigvalsh(h), dtype, 10)
    q, r = la.qr(hd.array(a))
    close(np.asarray(q) @ np.asarray(r), a, dtype, 10)
