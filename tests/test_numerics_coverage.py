"""Gaps the issue-19 coverage audit found, filled: f32 derivatives and batched
derivatives of the special functions, f32 first derivatives of the LAPACK-backed
linalg functions, and vmap of the complex elementary functions.

Each check is against an oracle (scipy's values, jax's derivatives, numpy) at a few
points: the value tests live in the function's own test file.
"""

from __future__ import annotations

import hlodsl.stdlib as xp
import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
import pytest
import scipy.special as sc

import hlodsl as hd
from hlodsl import ops

jax.config.update("jax_enable_x64", True)

# -- special functions: derivatives in f32 (against the f64 derivative of the oracle) ----

UNARY = [
    (ops.Erf(), jax.grad(jsp.erf), np.float32([-2.3, -0.7, 0.1, 0.9, 3.2])),
    (ops.Erfc(), jax.grad(jsp.erfc), np.float32([-2.3, -0.7, 0.1, 0.9, 3.2])),
    (ops.ErfInv(), jax.grad(jsp.erfinv), np.float32([-0.9, -0.3, 0.2, 0.7])),
    (ops.Lgamma(), jax.grad(jsp.gammaln), np.float32([-2.3, -0.7, 0.1, 0.9, 30.0])),
    (ops.Digamma(), jax.grad(jsp.digamma), np.float32([-2.3, -0.7, 0.1, 0.9, 30.0])),
    (ops.BesselI0e(), jax.grad(jsp.i0e), np.float32([-9, -1, 0.3, 5, 12])),
    (ops.BesselI1e(), jax.grad(jsp.i1e), np.float32([-9, -1, 0.3, 5, 12])),
]


@pytest.mark.parametrize("op, jax_grad, x", UNARY, ids=[u[0].opcode for u in UNARY])
def test_special_function_derivatives_in_f32_batched(op, jax_grad, x):
    # A (2, n) batch through vmap of the gradient, f32 in and out.
    batch = np.stack([x, x[::-1]])
    got = hd.vmap(hd.grad(lambda v: xp.sum(op(v))))(hd.array(batch))
    assert got.dtype is hd.float32
    want = np.vectorize(lambda v: float(jax_grad(float(v))))(batch.astype(np.float64))
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op, fn", [(ops.Igamma(), sc.gammainc), (ops.Igammac(), sc.gammaincc)],
                         ids=["igamma", "igammac"])
def test_incomplete_gamma_derivatives_batched(op, fn, dtype):
    # d/da and d/dx of a (2, 4) batch (series, fraction and Temme's regions) through
    # vmap of the gradient, against central differences of scipy's values.
    a = np.array([[0.5, 2.5, 30.0, 300.0], [4.0, 10.0, 50.0, 1e4]], dtype)
    x = np.array([[0.3, 7.0, 33.0, 290.0], [1.5, 9.0, 45.0, 1.01e4]], dtype)
    rtol = 2e-3 if dtype == np.float32 else 1e-6
    for which in (0, 1):
        def f(u, v):
            return xp.sum(op(u, v))
        got = hd.vmap(hd.grad(f, argnums=which))(hd.array(a), hd.array(x))
        a64, x64 = a.astype(np.float64), x.astype(np.float64)
        h = 1e-6 * (a64 if which == 0 else x64)
        up = fn(a64 + h, x64) if which == 0 else fn(a64, x64 + h)
        down = fn(a64 - h, x64) if which == 0 else fn(a64, x64 - h)
        np.testing.assert_allclose(np.asarray(got), (up - down) / (2 * h), rtol=rtol,
                                   atol=1e-6 if dtype == np.float32 else 1e-10)


# -- LAPACK-backed linalg: first derivatives in f32, batched -----------------------------

def _linalg(lib):
    la, S = lib.linalg, lib.sum
    sym = (lambda m: (m + lib.swapaxes(m, -1, -2)) / 2) if lib is jnp else \
        (lambda m: (m + xp.matrix_transpose(m)) / 2)
    return {
        "det": (lambda A: S(la.det(A)), (3, 3)),
        "slogdet": (lambda A: S(la.slogdet(A)[1]), (3, 3)),
        "inv": (lambda A: S(la.inv(A) ** 2), (3, 3)),
        "solve": (lambda A: S(la.solve(A, lib.ones(A.shape[:-1] + (1,), dtype=A.dtype)) ** 2),
                  (3, 3)),
        "cholesky": (lambda A: S(la.cholesky(sym(A) + 3 * lib.eye(3, dtype=A.dtype)) ** 2),
                     (3, 3)),
        "eigvalsh": (lambda A: S(la.eigvalsh(sym(A)) ** 3), (3, 3)),
        "eigh": (lambda A: S(la.eigh(sym(A))[1] ** 4), (3, 3)),
        "svdvals": (lambda A: S(la.svdvals(A) ** 3), (4, 3)),
        "svd": (lambda A: S(la.svd(A, full_matrices=False)[0] ** 4), (4, 3)),
        "qr": (lambda A: S(la.qr(A)[0] ** 4) + S(la.qr(A)[1] ** 4), (4, 3)),
        "pinv": (lambda A: S(la.pinv(A) ** 2), (4, 3)),
        "matrix_norm_2": (lambda A: S(la.matrix_norm(A, ord=2)), (4, 3)),
        "matrix_norm_nuc": (lambda A: S(la.matrix_norm(A, ord="nuc")), (4, 3)),
    }


HD, JAX = _linalg(xp), _linalg(jnp)


# cholesky, eigh, svd and the nuclear norm: their f32 first derivatives run inside
# tests/test_linalg_second_order.py's f32 Hessian-vector products (kept out for time).
@pytest.mark.parametrize("name", sorted(set(HD) - {"cholesky", "eigh", "svd", "matrix_norm_nuc"}))
def test_linalg_gradients_in_f32_batched(name):
    f, shape = HD[name]
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2,) + shape)
    if shape[0] == shape[1]:
        a = a + 3 * np.eye(*shape)
    got = hd.grad(f)(hd.array(a.astype(np.float32)))
    assert got.dtype is hd.float32
    want = np.asarray(jax.grad(JAX[name][0])(a.astype(np.float32).astype(np.float64)))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-3,
                               atol=1e-4 * np.abs(want).max())


# -- complex elementary functions under vmap ---------------------------------------------

@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_functions_under_vmap(dtype):
    rng = np.random.default_rng(7)
    z = (rng.normal(size=(3, 5)) + 1j * rng.normal(size=(3, 5))).astype(dtype)
    for name, ref in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sinh", np.sinh),
                      ("cosh", np.cosh), ("tanh", np.tanh), ("asin", np.arcsin),
                      ("acosh", np.arccosh), ("atanh", np.arctanh)):
        got = hd.vmap(getattr(xp, name), in_axes=1)(hd.array(z))
        np.testing.assert_allclose(np.asarray(got), ref(z.astype(np.complex128)).T,
                                   rtol=16 * np.finfo(dtype).eps)


# -- fftshift / ifftshift on floats: values and derivatives ------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_fft_shifts_of_floats_and_their_gradients(name, dtype):
    # (tests/test_fft.py checks the index arithmetic on int32.) The gradient of
    # sum(shift(x) * w) is the inverse shift of w: checked against jax.
    rng = np.random.default_rng(11)
    x, w = rng.normal(size=(2, 5, 4)).astype(dtype), rng.normal(size=(2, 5, 4)).astype(dtype)
    axes = (1, 2)
    got = getattr(xp.fft, name)(hd.array(x), axes=axes)
    assert got.dtype is hd.element_type(np.dtype(dtype))
    np.testing.assert_array_equal(np.asarray(got), getattr(np.fft, name)(x, axes=axes))
    grad = hd.grad(lambda v: xp.sum(getattr(xp.fft, name)(v, axes=axes) * hd.array(w)))(
        hd.array(x))
    want = jax.grad(lambda v: jnp.sum(getattr(jnp.fft, name)(v, axes=axes) * w))(x)
    np.testing.assert_array_equal(np.asarray(grad), np.asarray(want))
