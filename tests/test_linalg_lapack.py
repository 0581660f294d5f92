"""``xp.linalg`` through jaxlib's LAPACK kernels: values against numpy, derivatives against jax.

eigh, eigvalsh, svd, svdvals, qr, pinv, matrix_rank, matrix_norm(2, -2, 'nuc')
and the getrf-backed det/slogdet/solve/inv/lu_factor, on hypothesis-drawn
stacks of matrices (float32, float64, complex64, complex128; M < N, M = N,
M > N), eagerly and under ``hd.compile``. Decompositions are compared in
gauge-invariant terms: reconstruction (``U diag(S) Vh``, ``Q R``,
``V diag(w) V^H``), orthonormality, sorted values against numpy, ``|R|``
against numpy's (LAPACK picks both signs alike). Derivatives (float64 and
complex128) are checked against ``jax.grad``/``jax.jvp`` of the same
functions, with gauge-invariant losses for eigenvectors and singular vectors.
The HLO fallback (for backends without LAPACK targets) is checked by switching
``kernels.provider`` to "hlo".
"""

from __future__ import annotations

import hlodsl.stdlib as xp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hlodsl.stdlib import kernels, lapack
from hlodsl.stdlib import linalg as la
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
from ad_harness import random_array as _random
from hlodsl.errors import ShapeError

pytestmark = pytest.mark.cpu_only(reason="jaxlib's LAPACK kernels are the CPU backend's; "
                                         "tests/test_linalg_fallback.py covers the HLO kernels")

jax.config.update("jax_enable_x64", True)

SETTINGS = settings(max_examples=6, deadline=None)
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
#: (rtol, atol) per element type, for well-conditioned inputs of size <= 5.
TOL = {np.float32: (1e-4, 1e-4), np.float64: (1e-10, 1e-10),
       np.complex64: (1e-4, 1e-4), np.complex128: (1e-10, 1e-10)}
#: (batch, M, N) stacks; few shapes so compiled executables are reused.
SHAPES = ((3, 3), (4, 2), (2, 5), (2, 4, 3), (2, 3, 4), (3, 1, 1))
STATIC = {"svd": ("full_matrices",), "qr": ("mode",), "matrix_norm": ("ord",)}
STAGED = {name: hd.compile(getattr(la, name), static_argnames=STATIC.get(name, ()))
          for name in ("eigh", "eigvalsh", "svd", "svdvals", "qr", "pinv", "matrix_rank",
                       "matrix_norm")}


def both(name, a, **kwargs):
    """``[eager, staged]`` results of ``xp.linalg.<name>(a, **kwargs)``."""
    x = hd.array(a)
    return [getattr(la, name)(x, **kwargs), STAGED[name](x, **kwargs)]


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


@st.composite
def matrices(draw, shapes=SHAPES, dtypes=DTYPES, hermitian=False):
    shape = draw(st.sampled_from(shapes))
    if hermitian:
        shape = shape[:-1] + shape[-2:-1]
    dtype = draw(st.sampled_from(dtypes))
    a = _random(np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1))), shape, dtype)
    return (a + _h(a)).astype(dtype) if hermitian else a


def close(got, want, dtype, scale=1.0):
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol * scale, atol=atol * scale)


def orthonormal_columns(q, dtype):
    q = np.asarray(q)
    close(_h(q) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2),
          dtype, 10)


def real_of(dtype):
    return np.finfo(dtype).dtype.type


# -- values -------------------------------------------------------------------------------

@pytest.mark.compat
@SETTINGS
@given(matrices(hermitian=True))
def test_eigh_reconstructs_with_ascending_eigenvalues(a):
    dtype = a.dtype.type
    want = np.linalg.eigvalsh(a)
    for w, v in both("eigh", a):
        assert isinstance((w, v), tuple) and w.dtype.np_dtype == real_of(dtype)
        close(w, want, dtype, 10)
        assert np.all(np.diff(np.asarray(w), axis=-1) >= 0)
        orthonormal_columns(v, dtype)
        v = np.asarray(v)
        close((v * np.asarray(w)[..., None, :]) @ _h(v), a, dtype, 10)
    for w in both("eigvalsh", a):
        close(w, want, dtype, 10)


def test_eigh_returns_the_array_api_namedtuple():
    out = la.eigh(hd.array(np.eye(2)))
    assert type(out).__name__ == "EighResult" and out._fields == ("eigenvalues", "eigenvectors")


@SETTINGS
@given(matrices(), st.booleans())
def test_svd_reconstructs_with_orthonormal_factors(a, full):
    dtype = a.dtype.type
    m, n = a.shape[-2:]
    k = min(m, n)
    u_np, s_np, vh_np = np.linalg.svd(a, full_matrices=full)
    for u, s, vh in both("svd", a, full_matrices=full):
        assert (u.shape, s.shape, vh.shape) == (u_np.shape, s_np.shape, vh_np.shape)
        assert s.dtype.np_dtype == real_of(dtype)
        close(s, s_np, dtype, 10)
        orthonormal_columns(u, dtype)
        orthonormal_columns(_h(np.asarray(vh)), dtype)
        u, vh = np.asarray(u)[..., :k], np.asarray(vh)[..., :k, :]
        close((u * np.asarray(s)[..., None, :]) @ vh, a, dtype, 10)
    for s in both("svdvals", a):
        close(s, s_np, dtype, 10)


@SETTINGS
@given(matrices(), st.sampled_from(["reduced", "complete"]))
def test_qr_reconstructs_with_upper_r(a, mode):
    dtype = a.dtype.type
    q_np, r_np = np.linalg.qr(a, mode=mode)
    for q, r in both("qr", a, mode=mode):
        assert (q.shape, r.shape) == (q_np.shape, r_np.shape)
        q, r = np.asarray(q), np.asarray(r)
        orthonormal_columns(q, dtype)
        assert np.all(np.tril(r, -1) == 0)
        close(q @ r, a, dtype, 10)
        close(abs(r), abs(r_np), dtype, 10)  # LAPACK's signs, as numpy's


@SETTINGS
@given(matrices())
def test_pinv_rank_and_singular_value_norms(a):
    dtype = a.dtype.type
    for got in both("pinv", a):
        close(got, np.linalg.pinv(a), dtype, 100)
    for got in both("matrix_rank", a):
        np.testing.assert_array_equal(np.asarray(got), np.linalg.matrix_rank(a))
        assert got.dtype is hd.int64
    for ord in (2, -2, "nuc"):
        for got in both("matrix_norm", a, ord=ord):
            close(got, np.linalg.norm(a, ord=ord, axis=(-2, -1)), dtype, 10)


def test_rank_deficient_matrices_and_rtol():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 2)) @ rng.standard_normal((2, 2, 4))  # rank 2
    for got in both("matrix_rank", x):
        np.testing.assert_array_equal(np.asarray(got), [2, 2])
    np.testing.assert_allclose(np.asarray(la.pinv(hd.array(x))), np.linalg.pinv(x), atol=1e-10)
    d = np.diag([1.0, 1e-3, 1e-8])
    assert int(la.matrix_rank(hd.array(d), rtol=1e-4)) == 2
    assert int(la.matrix_rank(hd.array(d))) == 3
    np.testing.assert_array_equal(
        np.asarray(la.matrix_rank(hd.array(np.stack([d, d])), rtol=hd.array([1e-2, 1e-4]))),
        [1, 2])
    np.testing.assert_allclose(np.asarray(la.pinv(hd.array(d), rtol=1e-4)),
                               np.linalg.pinv(d, rcond=1e-4))


def test_float16_is_computed_in_float32():
    a = np.float16([[2, 1], [1, 2]])
    w, v = la.eigh(hd.array(a))
    assert (w.dtype, v.dtype) == (hd.float16, hd.float16)
    np.testing.assert_allclose(np.asarray(w), [1, 3])
    assert la.svd(hd.array(a)).S.dtype is hd.float16


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 3), (3, 0), (0, 3, 3), (1, 1)])
def test_empty_and_degenerate_shapes(shape):
    a = np.ones(shape)
    for full in (True, False):
        u, s, vh = la.svd(hd.array(a), full_matrices=full)
        u_np, s_np, vh_np = np.linalg.svd(a, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (u_np.shape, s_np.shape, vh_np.shape)
        np.testing.assert_allclose(np.asarray(s), s_np)
    for mode in ("reduced", "complete"):
        q, r = la.qr(hd.array(a), mode=mode)
        q_np, r_np = np.linalg.qr(a, mode=mode)
        assert (q.shape, r.shape) == (q_np.shape, r_np.shape)
        np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a)
    if shape[-1] == shape[-2]:
        w, v = la.eigh(hd.array(a))
        assert (w.shape, v.shape) == (shape[:-1], shape)
        np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a))


@pytest.mark.parametrize("call, error, message", [
    (lambda: la.eigh(hd.array(np.ones((2, 3)))), ShapeError,
     r"eigh: needs a stack of square matrices .*\(2, 3\)"),
    (lambda: la.eigvalsh(hd.array(np.ones(3))), ShapeError, r"eigvalsh: .*square.*\(3,\)"),
    (lambda: la.svd(hd.array(np.ones(3))), ShapeError, r"svd: needs rank >= 2 .*\(3,\)"),
    (lambda: la.svdvals(hd.array(np.ones(3))), ShapeError, r"svdvals: needs rank >= 2"),
    (lambda: la.qr(hd.array(np.ones(3))), ShapeError, r"qr: needs rank >= 2"),
    (lambda: la.pinv(hd.array(np.ones(3))), ShapeError, r"pinv: needs rank >= 2"),
    (lambda: la.matrix_rank(hd.array(np.ones(3))), ShapeError, r"matrix_rank: needs rank >= 2"),
    (lambda: la.svd(hd.array(np.eye(2, dtype=np.int32))), TypeError,
     r"svd: needs floating-point .* s32\[2,2\]"),
    (lambda: la.eigh(hd.array(np.eye(2, dtype=np.int32))), TypeError, "eigh: needs floating"),
    (lambda: la.qr(hd.array(np.eye(2)), mode="r"), ValueError,
     "qr: mode must be 'reduced' or 'complete', got 'r'"),
    (lambda: la.svd(hd.array(np.eye(2)), full_matrices=1), TypeError,
     "svd: full_matrices must be a bool"),
    (lambda: la.matrix_norm(hd.array(np.ones((0, 3))), ord=2), ValueError,
     r"matrix_norm: ord=2 is undefined for empty matrices \(shape \(0, 3\)\)"),
])
def test_errors_name_the_function_and_shapes(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_failed_factorizations_are_nan_filled():
    info = hd.array(np.int32([0, 3]))
    x = hd.array(np.ones((2, 2, 2)))
    got = np.asarray(lapack.nan_where_failed(info, x))
    assert np.all(got[0] == 1) and np.all(np.isnan(got[1]))
    w, v = la.eigh(hd.array(np.full((2, 2), np.nan)))
    assert np.all(np.isnan(np.asarray(w))) and np.all(np.isnan(np.asarray(v)))


@pytest.mark.compat
def test_staged_modules_call_the_lapack_targets():
    a = hd.array(np.eye(3))
    for fn, target in ((la.det, "lapack_dgetrf_ffi"), (la.inv, "lapack_dtrsm_ffi"),
                       (la.eigh, "lapack_dsyevd_ffi"), (la.svd, "lapack_dgesdd_ffi"),
                       (la.qr, "lapack_dorgqr_ffi")):
        assert target in hd.code_hlo(fn, a)
    assert "lapack_zheevd_ffi" in hd.code_hlo(la.eigvalsh, hd.array(np.eye(2, dtype=complex)))
    # det reads the transpose LAPACK sees for free: no transpose, no while loop.
    text = hd.code_hlo(la.det, a)
    assert "transpose(" not in text and "while(" not in text


# -- the HLO fallback and the LU-backed functions ------------------------------------------

@pytest.mark.compat
@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_lu_functions_agree_with_and_without_lapack(monkeypatch, dtype):
    rng = np.random.default_rng(1)
    a = _random(rng, (2, 4, 4), dtype)
    b = _random(rng, (2, 4, 3), dtype)
    want = {"det": np.linalg.det(a), "inv": np.linalg.inv(a), "solve": np.linalg.solve(a, b)}
    for lapack_on in (True, False):
        monkeypatch.setattr(kernels, "provider", lambda on=lapack_on: "lapack" if on else "hlo")
        close(la.det(hd.array(a)), want["det"], dtype, 10)
        close(la.inv(hd.array(a)), want["inv"], dtype, 10)
        close(la.solve(hd.array(a), hd.array(b)), want["solve"], dtype, 10)
        close(la.slogdet(hd.array(a)).logabsdet, np.linalg.slogdet(a)[1], dtype, 10)
        f = la.lu_factor(hd.array(a))
        low = np.tril(np.asarray(f.lu), -1) + np.eye(4)
        rows = np.take_along_axis(a, np.asarray(f.permutation)[..., None], axis=-2)
        close(low @ np.triu(np.asarray(f.lu)), rows, dtype, 10)
        text = hd.code_hlo(la.solve, hd.array(a), hd.array(b))
        assert ("lapack_" in text) == lapack_on and ("while(" in text) != lapack_on


def test_decompositions_fall_back_to_hlo_loops(monkeypatch):
    # tests/test_linalg_fallback.py checks the fallback itself (Jacobi, Householder)
    monkeypatch.setattr(kernels, "provider", lambda: "hlo")
    for name in ("eigh", "eigvalsh", "svd", "svdvals", "qr", "pinv", "matrix_rank"):
        text = hd.code_hlo(getattr(la, name), hd.array(np.eye(2)))
        assert "while(" in text and "lapack_" not in text


def test_solve_broadcasts_and_takes_vectors():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 1, 4, 4))
    b = rng.standard_normal((2, 4, 5))
    close(la.solve(hd.array(a), hd.array(b)), np.linalg.solve(a, b), np.float64, 10)
    v = rng.standard_normal(4)
    close(la.solve(hd.array(a[0, 0]), hd.array(v)), np.linalg.solve(a[0, 0], v), np.float64, 10)


# -- derivatives against jax ----------------------------------------------------------------

RNG = np.random.default_rng(11)


def _rand(shape, dtype):
    return _random(RNG, shape, dtype)


def _check_grad(f, jf, *args):
    nums = tuple(range(len(args)))
    got = hd.grad(f, argnums=nums)(*map(hd.array, args))
    want = jax.grad(jf, argnums=nums)(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-7, atol=1e-9)


DIFF = (np.float64, np.complex128)


def _loss(x, w):
    """A real scalar from ``x``: ``sum(re(x * w))``, in hlodsl or jax."""
    if isinstance(x, hd.Array):
        return xp.sum(xp.real(x * w))
    return jnp.sum(jnp.real(x * w))


@pytest.mark.parametrize("dtype", DIFF)
def test_lu_derivatives(dtype):
    a = _rand((2, 3, 3), dtype) + 3 * np.eye(3)
    b = _rand((2, 3, 2), dtype)
    w = _rand((2, 3, 3), dtype)
    _check_grad(lambda a: _loss(la.det(a), w[:, 0, 0]),
                lambda a: _loss(jnp.linalg.det(a), w[:, 0, 0]), a)
    _check_grad(lambda a: _loss(la.inv(a), w), lambda a: _loss(jnp.linalg.inv(a), w), a)
    _check_grad(lambda a, b: _loss(la.solve(a, b), w[..., :2]),
                lambda a, b: _loss(jnp.linalg.solve(a, b), w[..., :2]), a, b)
    _check_grad(lambda a: xp.sum(la.slogdet(a).logabsdet),
                lambda a: jnp.sum(jnp.linalg.slogdet(a)[1]), a)
    _check_grad(lambda a: _loss(la.slogdet(a).sign, w[:, 0, 0]),
                lambda a: _loss(jnp.linalg.slogdet(a)[0], w[:, 0, 0]), a)
    # solve with a vector right-hand side, broadcast against a stack of matrices
    _check_grad(lambda a, b: _loss(la.solve(a, b), w[..., 0]),
                lambda a, b: _loss(jnp.linalg.solve(a, b[:, None])[..., 0], w[..., 0]),
                a, b[0, :, 0])


@pytest.mark.parametrize("dtype", DIFF)
@pytest.mark.parametrize("n", [4, 5])  # odd n: the HLO fallback's Jacobi adds a dummy index
def test_eigh_derivatives(dtype, n):
    a = _rand((2, n, n), dtype)
    c = RNG.standard_normal(n)
    w = _rand((2, n, n), dtype)

    def vectors(x, lib):  # V diag(c) V^H: independent of each eigenvector's phase
        _, v = (la.eigh if lib is xp else jnp.linalg.eigh)(x)
        return _loss(lib.matmul(v * c, lib.conj(lib.matrix_transpose(v)) if lib is xp
                                else jnp.conj(jnp.swapaxes(v, -1, -2))), w)

    _check_grad(lambda x: xp.sum(la.eigh(x).eigenvalues * c),
                lambda x: jnp.sum(jnp.linalg.eigh(x)[0] * c), a)
    _check_grad(lambda x: xp.sum(la.eigvalsh(x) * c),
                lambda x: jnp.sum(jnp.linalg.eigvalsh(x) * c), a)
    _check_grad(lambda x: vectors(x, xp), lambda x: vectors(x, jnp), a)


@pytest.mark.parametrize("dtype", DIFF)
@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 3), (2, 3, 5)])
def test_svd_and_qr_derivatives(dtype, shape):
    a = _rand(shape, dtype)
    k = min(shape[-2:])
    c = RNG.standard_normal(k)
    w = _rand(shape, dtype)

    def usv(x, lib):  # U diag(c) Vh and S: independent of the singular vectors' phases
        u, s, vh = (la.svd if lib is xp else jnp.linalg.svd)(x, full_matrices=False)
        return _loss(lib.matmul(u * c, vh), w) + lib.sum(s * c)

    _check_grad(lambda x: usv(x, xp), lambda x: usv(x, jnp), a)
    _check_grad(lambda x: xp.sum(la.svdvals(x) * c),
                lambda x: jnp.sum(jnp.linalg.svd(x, compute_uv=False) * c), a)
    _check_grad(lambda x: _loss(la.pinv(x), w.swapaxes(-1, -2)),
                lambda x: _loss(jnp.linalg.pinv(x), w.swapaxes(-1, -2)), a)
    _check_grad(lambda x: xp.sum(la.matrix_norm(x, ord="nuc")),
                lambda x: jnp.sum(jnp.linalg.norm(x, ord="nuc", axis=(-2, -1))), a)
    if shape[-2] >= shape[-1]:
        wr = _rand(shape[:-2] + (k, shape[-1]), dtype)
        _check_grad(lambda x: _loss(la.qr(x).Q, w) + _loss(la.qr(x).R, wr),
                    lambda x: _loss(jnp.linalg.qr(x)[0], w) + _loss(jnp.linalg.qr(x)[1], wr), a)


@pytest.mark.compat
def test_forward_mode_matches_jax():
    a = _rand((2, 4, 4), np.float64)
    t = _rand((2, 4, 4), np.float64)
    h = a + np.swapaxes(a, -1, -2)
    for f, jf, x in ((la.det, jnp.linalg.det, a), (la.inv, jnp.linalg.inv, a),
                     (la.eigvalsh, jnp.linalg.eigvalsh, h), (la.svdvals, jnp.linalg.svdvals, a)):
        got = hd.jvp(f, (hd.array(x),), (hd.array(t),))[1]
        np.testing.assert_allclose(np.asarray(got), jax.jvp(jf, (x,), (t,))[1], rtol=1e-8,
                                   atol=1e-10)


def test_derivatives_staged_match_eager():
    a = _rand((2, 3, 3), np.float64)
    g = hd.grad(lambda x: xp.sum(la.svdvals(x)) + xp.sum(la.det(x)))
    np.testing.assert_allclose(np.asarray(hd.compile(g)(hd.array(a))), np.asarray(g(hd.array(a))),
                               rtol=1e-12)


def test_unsupported_derivatives_say_why():
    a = hd.array(_rand((4, 2), np.float64))
    with pytest.raises(NotImplementedError, match="svd: derivatives need full_matrices=False"):
        hd.grad(lambda x: xp.sum(la.svd(x).U))(a)
    with pytest.raises(NotImplementedError, match="qr: derivatives need mode='reduced' and M >= N"):
        hd.grad(lambda x: xp.sum(la.qr(x).R))(hd.array(_rand((2, 4), np.float64)))


# -- vmap ---------------------------------------------------------------------------------

@pytest.mark.compat
def test_vmap_uses_the_kernels_native_batching():
    a = _rand((3, 4, 4), np.float64)
    b = _rand((3, 4), np.float64)
    h = a + np.swapaxes(a, -1, -2)
    np.testing.assert_allclose(np.asarray(hd.vmap(la.det)(hd.array(a))), np.linalg.det(a))
    np.testing.assert_allclose(np.asarray(hd.vmap(la.solve)(hd.array(a), hd.array(b))),
                               np.linalg.solve(a, b[..., None])[..., 0])
    np.testing.assert_allclose(np.asarray(hd.vmap(la.eigvalsh)(hd.array(h))),
                               np.linalg.eigvalsh(h))
    np.testing.assert_allclose(np.asarray(hd.vmap(la.svdvals)(hd.array(a))),
                               np.linalg.svd(a, compute_uv=False))
    q, r = hd.vmap(la.qr)(hd.array(a))
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-12)
    # an unbatched matrix with batched right-hand sides: the kernel gets it broadcast
    x = hd.vmap(lambda v: la.solve(hd.array(a[0]), v))(hd.array(b))
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a[0], b.T).T)
