"""Second derivatives of the LAPACK-backed linalg functions, against jax.

Each function is a scalar of one matrix (a gauge-invariant one for eigh, svd and qr:
sign flips of a singular/eigen vector pair leave v**4 unchanged), written once in
hlodsl.stdlib and once in jax.numpy. Checked: forward-over-reverse (``hd.hvp``,
batched and f32) and reverse-over-reverse (``grad`` of ``<grad f, V>``), against
``jax.jvp(jax.grad(f))``. Before the fix in ``factorizations.linear_rules``,
hvp raised (the LAPACK call has no rule) and reverse-over-reverse silently dropped
the derivative of residuals (A^-1, eigenvectors, singular vectors): det, slogdet,
solve, eigvalsh, svdvals and the 2/nuclear norms were wrong by O(1).
"""

from __future__ import annotations

import hlodsl.stdlib as xp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlodsl as hd

jax.config.update("jax_enable_x64", True)


def _sym(m, lib):
    return (m + lib.swapaxes(m, -1, -2)) / 2 if lib is jnp else (m + xp.matrix_transpose(m)) / 2


def _functions(lib):
    la, S = lib.linalg, lib.sum
    return {
        "det": (lambda A: S(la.det(A)), (4, 4)),
        "slogdet": (lambda A: S(la.slogdet(A)[1]), (4, 4)),
        "solve": (lambda A: S(la.solve(A, lib.ones(A.shape[:-1] + (2,), dtype=A.dtype)) ** 2),
                  (4, 4)),
        "inv": (lambda A: S(la.inv(A) ** 2), (4, 4)),
        "cholesky": (lambda A: S(la.cholesky(_sym(A, lib) + 4 * lib.eye(4, dtype=A.dtype)) ** 3),
                     (4, 4)),
        "eigvalsh": (lambda A: S(la.eigvalsh(_sym(A, lib)) ** 3), (4, 4)),
        "eigh": (lambda A: S(la.eigh(_sym(A, lib))[0] ** 2) + S(la.eigh(_sym(A, lib))[1] ** 4),
                 (4, 4)),
        "svdvals": (lambda A: S(la.svdvals(A) ** 3), (5, 3)),
        "svd": (lambda A: S(la.svd(A, full_matrices=False)[1] ** 2)
                + S(la.svd(A, full_matrices=False)[0] ** 4)
                + S(la.svd(A, full_matrices=False)[2] ** 4), (5, 3)),
        "qr": (lambda A: S(la.qr(A)[0] ** 4) + S(la.qr(A)[1] ** 4), (5, 3)),
        "pinv": (lambda A: S(la.pinv(A) ** 2), (5, 3)),
        "matrix_norm_2": (lambda A: S(la.matrix_norm(A, ord=2)), (5, 3)),
        "matrix_norm_nuc": (lambda A: S(la.matrix_norm(A, ord="nuc")), (5, 3)),
    }


HD, JAX = _functions(xp), _functions(jnp)


def _point(name, batch, dtype, seed=0):
    rng = np.random.default_rng(seed)
    shape = HD[name][1]
    a = rng.normal(size=batch + shape)
    if shape[0] == shape[1]:
        a = a + 3 * np.eye(*shape)  # well conditioned
    return a.astype(dtype), rng.normal(size=a.shape).astype(dtype)


def _want(name, a, v):
    a64, v64 = a.astype(np.float64), v.astype(np.float64)
    return np.asarray(jax.jvp(jax.grad(JAX[name][0]), (a64,), (v64,))[1])


def _check(got, want, rtol):
    err = np.abs(np.asarray(got, np.float64) - want).max() / np.abs(want).max()
    assert err <= rtol, f"relative error {err:.3g}"


@pytest.mark.parametrize("name", sorted(HD))
def test_hvp_batched_f64(name):
    a, v = _point(name, (2,), np.float64)
    _check(hd.hvp(HD[name][0], (hd.array(a),), (hd.array(v),)), _want(name, a, v), 1e-12)


@pytest.mark.parametrize("name", ["det", "slogdet", "solve", "eigvalsh", "svdvals",
                                  "matrix_norm_nuc"])  # the ones that were wrong
def test_reverse_over_reverse_f64(name):
    a, v = _point(name, (), np.float64, seed=1)
    f, vv = HD[name][0], hd.array(v)
    got = hd.grad(lambda x: xp.sum(hd.grad(f)(x) * vv))(hd.array(a))
    _check(got, _want(name, a, v), 1e-12)


@pytest.mark.parametrize("name", sorted(HD))
def test_hvp_f32(name):
    a, v = _point(name, (), np.float32, seed=2)
    _check(hd.hvp(HD[name][0], (hd.array(a),), (hd.array(v),)), _want(name, a, v), 2e-3)


# -- the HLO kernels (a backend without LAPACK's targets, linalg_kernels="hlo") ----------
# The factorization is the LU while loop there: its pivot search (an argmax) and its
# data-dependent trip count must never be differentiated, and no LAPACK target may
# appear (before the fix: det/slogdet's derivatives called LAPACK, which a GPU has
# not; hvp of solve/inv raised on the argmax, their reverse mode on the while loop).

@pytest.fixture
def hlo_kernels():
    old = hd.config.linalg_kernels
    hd.config.linalg_kernels = "hlo"
    yield
    hd.config.linalg_kernels = old


@pytest.mark.parametrize("name", ["det", "slogdet", "solve", "inv"])
def test_second_derivatives_with_the_hlo_kernels(name, hlo_kernels):
    f = HD[name][0]
    a, v = _point(name, (2,), np.float64)
    hvp = hd.compile(lambda x, t: hd.hvp(f, (x,), (t,)))
    _check(hvp(hd.array(a), hd.array(v)), _want(name, a, v), 1e-12)
    assert "lapack_" not in str(hd.code_hlo(hvp, hd.array(a), hd.array(v)))
    if name in ("det", "solve"):  # reverse over reverse: the residual A^-1's derivative
        a1, v1 = _point(name, (), np.float64, seed=1)
        vv = hd.array(v1)
        got = hd.grad(lambda x: xp.sum(hd.grad(f)(x) * vv))(hd.array(a1))
        _check(got, _want(name, a1, v1), 1e-12)
