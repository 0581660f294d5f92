"""Array-API linear algebra (``xp.linalg``) against numpy.linalg (and scipy), eagerly and staged.

Every function runs on concrete arrays and under ``hd.compile`` (compiled once
at module level; non-array arguments are static). Factorizations are checked on
hypothesis-drawn well-conditioned matrices ``Q1 diag(s) Q2`` (random orthogonal
``Q1``, ``Q2``, singular values in ``[0.5, 2]``: condition number <= 4, and
pivoting is needed) within a tolerance per element type; LU pivots equal
LAPACK's; determinants of permutation and singular matrices, products of small
integers, diagonals and data movement are exact. Shapes come from a small set
so that compiled executables are reused across examples.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.errors import ShapeError
from hlodsl.stdlib import kernels, linalg as la

from strategies import Domain, arrays

SETTINGS = settings(max_examples=8, deadline=None)
#: (rtol, atol) of results computed through a factorization, per element type.
TOL = {np.float32: (2e-4, 2e-5), np.float64: (1e-10, 1e-12),
       np.complex64: (2e-4, 2e-5), np.complex128: (1e-10, 1e-12)}
FLOATS = (np.float32, np.float64)
#: Stacks of square matrices: batch dims, then (M, M).
SQUARE = ((3, 3), (2, 4, 4))
INTS = Domain(lo=-4, hi=4, step=1.0)

# Numbers such as ord are static arguments (hd.compile traces Python floats otherwise).
STAGED = {name: hd.compile(getattr(la, name), static_argnames=(
    ("ord",) if name in ("vector_norm", "matrix_norm") else ())) for name in (
    "lu_factor", "solve", "inv", "det", "slogdet", "cholesky", "solve_triangular", "tensordot",
    "vecdot", "outer", "cross", "diagonal", "trace", "vector_norm", "matrix_norm",
    "matrix_power", "matmul", "matrix_transpose")}


def both(name, *args, **kwargs):
    """``[eager result, staged result]`` of ``xp.linalg.<name>(*args, **kwargs)``."""
    arrays_ = [hd.array(a) if isinstance(a, np.ndarray) else a for a in args]
    return [getattr(la, name)(*arrays_, **kwargs), STAGED[name](*arrays_, **kwargs)]


def close(got, expected, dtype=None):
    got, expected = np.asarray(got), np.asarray(expected)
    dtype = dtype or expected.dtype.type
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got, expected)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def same(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got, expected)
    np.testing.assert_array_equal(got, expected)


def _orthogonal(rng, shape, dtype):
    z = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        z = z + 1j * rng.standard_normal(shape)
    q, r = np.linalg.qr(z)
    return q * (np.diagonal(r, axis1=-2, axis2=-1) / abs(np.diagonal(r, axis1=-2, axis2=-1)))[
        ..., None, :]


@st.composite
def conditioned(draw, shapes=SQUARE, dtypes=FLOATS, spd=False):
    """A stack of matrices with singular values in [0.5, 2] (``spd``: symmetric positive)."""
    shape = draw(st.sampled_from(shapes))
    dtype = draw(st.sampled_from(dtypes))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    s = rng.uniform(0.5, 2.0, shape[:-1])
    q1 = _orthogonal(rng, shape, dtype)
    q2 = np.conj(np.swapaxes(q1, -1, -2)) if spd else _orthogonal(rng, shape, dtype)
    return ((q1 * s[..., None, :]) @ q2).astype(dtype)


# -- LU, solve, inv, det, slogdet ----------------------------------------------------

@SETTINGS
@given(conditioned())
def test_lu_factor_pivots_as_lapack_and_reconstructs(a):
    lu, piv = np.vectorize(scipy.linalg.lu_factor, signature="(n,n)->(n,n),(n)")(a)
    for got in both("lu_factor", a):
        close(got.lu, lu.astype(a.dtype))
        same(got.pivots, piv.astype(np.int32))
        low = np.tril(np.asarray(got.lu), -1) + np.eye(a.shape[-1], dtype=a.dtype)
        rows = np.take_along_axis(a, np.asarray(got.permutation)[..., None], axis=-2)
        close(low @ np.triu(np.asarray(got.lu)), rows)


@SETTINGS
@given(conditioned(), st.data())
def test_solve_vector_and_matrix_right_hand_sides(a, data):
    m = a.shape[-1]
    b = data.draw(st.sampled_from([(m,), (2,) + a.shape[:-2] + (m, 2)]))
    b = np.random.default_rng(0).standard_normal(b).astype(a.dtype)
    expected = np.linalg.solve(a, b)
    for got in both("solve", a, b):
        close(got, expected)


@SETTINGS
@given(conditioned())
def test_inv(a):
    for got in both("inv", a):
        close(got, np.linalg.inv(a))


@SETTINGS
@given(conditioned())
def test_det_and_slogdet(a):
    sign, logabs = np.linalg.slogdet(a)
    for got in both("det", a):
        close(got, np.linalg.det(a))
    for got in both("slogdet", a):
        assert isinstance(got, la.SlogdetResult)
        same(got.sign, sign)
        close(got.logabsdet, logabs)


def test_complex_factorizations():
    rng = np.random.default_rng(7)
    q1, q2 = (_orthogonal(rng, (2, 3, 3), np.complex128) for _ in range(2))
    a = (q1 * rng.uniform(0.5, 2, (2, 1, 3))) @ q2
    b = (np.arange(6).reshape(3, 2) * (1 - 1j)).astype(np.complex128)
    for got in both("solve", a, b):
        close(got, np.linalg.solve(a, b))
    for got in both("inv", a):
        close(got, np.linalg.inv(a))
    for got in both("det", a):
        close(got, np.linalg.det(a))
    sign, logabs = np.linalg.slogdet(a)
    for got in both("slogdet", a):
        close(got.sign, sign)
        close(got.logabsdet, logabs)


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(FLOATS))
def test_det_of_permutation_and_singular_matrices(seed, dtype):
    rng = np.random.default_rng(seed)
    perms = np.stack([np.eye(4)[rng.permutation(4)] for _ in range(4)])
    # Permutations scaled by powers of 2: every LU step is exact, so is the determinant.
    scales = np.float64([1, -2, 4, 0.5])
    exact = np.concatenate([perms, perms * scales[:, None, None]]).astype(dtype)
    signs = np.round(np.linalg.det(perms))
    expected = np.concatenate([signs, signs * scales ** 4]).astype(dtype)
    for got in both("det", exact):
        same(got, expected)
    for got in both("slogdet", exact):
        same(got.sign, np.sign(expected))
        same(got.logabsdet, np.log(abs(expected)))
    # An exact linear dependence among small integers: zero up to rounding.
    singular = rng.integers(-3, 4, (8, 4, 4)).astype(dtype)
    singular[:, 3] = singular[:, 0] * 2 - singular[:, 1]
    for got in both("det", singular):
        np.testing.assert_allclose(np.asarray(got), 0, atol=TOL[dtype][0] * 100)


def test_det_and_slogdet_of_zero_pivots_are_exact():
    a = np.float64([[[0, 1], [1, 0]], [[1, 2], [2, 4]], [[0, 0], [0, 0]], [[0, 0], [1, 0]]])
    for got in both("det", a):
        same(got, np.float64([-1, 0, 0, 0]))
    for got in both("slogdet", a):
        same(got.sign, np.float64([-1, 0, 0, 0]))
        same(got.logabsdet, np.float64([0, -np.inf, -np.inf, -np.inf]))


def test_empty_matrices_and_batches():
    for shape in ((2, 0, 0), (0, 3, 3)):
        a = np.zeros(shape) + np.eye(shape[-1])
        for got in both("det", a):
            same(got, np.linalg.det(a))
        for got in both("inv", a):
            same(got, np.linalg.inv(a))
        for got in both("solve", a, np.ones(shape[-1])):
            same(got, np.linalg.solve(a, np.ones(shape[-1])))


def test_low_precision_inputs_are_factored_in_float32():
    a = np.float16([[4, 2], [2, 5]])
    assert la.det(hd.array(a)).dtype is hd.float16
    np.testing.assert_allclose(np.asarray(la.det(hd.array(a))), 16)
    assert la.cholesky(hd.array(a)).dtype is hd.float16


# -- cholesky and triangular solves ----------------------------------------------------

@SETTINGS
@given(conditioned(spd=True), st.booleans())
def test_cholesky(a, upper):
    expected = np.linalg.cholesky(a, upper=upper)
    for got in both("cholesky", a, upper=upper):
        close(got, expected)


def test_cholesky_of_an_indefinite_matrix_is_nan_like_jax():
    a = np.float64([[[1, 2], [2, 1]], [[4, 2], [2, 5]]])
    for got in both("cholesky", a):
        got = np.asarray(got)
        assert np.isnan(got[0][np.tril_indices(2)]).all() and got[0, 0, 1] == 0
        np.testing.assert_array_equal(got[1], np.float64([[2, 0], [1, 2]]))


@SETTINGS
@given(conditioned(), st.sampled_from([(True, True, False), (False, True, True),
                                       (True, False, True), (False, False, False)]))
def test_solve_triangular(a, flags):
    lower, left, unit = flags
    m = a.shape[-1]
    b = np.random.default_rng(1).standard_normal(a.shape[:-2] + ((m, 2) if left else (2, m)))
    b = b.astype(a.dtype)
    expected = np.vectorize(
        lambda a_, b_: scipy.linalg.solve_triangular(
            a_ if left else a_.T, b_ if left else b_.T, lower=lower == left,
            unit_diagonal=unit).T if not left else scipy.linalg.solve_triangular(
            a_, b_, lower=lower, unit_diagonal=unit),
        signature="(m,m),(i,j)->(i,j)")(a, b).astype(a.dtype)
    for got in both("solve_triangular", a, b, lower=lower, left=left, unit_diagonal=unit):
        close(got, expected)
    vec = b[(0,) * (b.ndim - 2)][:, 0] if left else b[(0,) * (b.ndim - 2)][0]
    if a.ndim == 2 and left:
        for got in both("solve_triangular", a, vec, lower=lower, unit_diagonal=unit):
            close(got, scipy.linalg.solve_triangular(a, vec, lower=lower,
                                                     unit_diagonal=unit).astype(a.dtype))


# -- products ------------------------------------------------------------------------

@SETTINGS
@given(st.data(), st.sampled_from([hd.int32, hd.float64]))
def test_tensordot(data, dtype):
    x1 = data.draw(arrays(dtype, (2, 3, 4), INTS))
    case = data.draw(st.sampled_from([0, 1, 2, ((0, 2), (2, 0)), ([-1], [0]), ((), ())]))
    shapes = {0: (3,), 1: (4, 2), 2: (3, 4)}
    x2_shape = shapes.get(case) if isinstance(case, int) else \
        ((4, 3, 2) if case == ((0, 2), (2, 0)) else (4,) if case == ([-1], [0]) else (2,))
    x2 = data.draw(arrays(dtype, x2_shape, INTS))
    expected = np.tensordot(x1, x2, axes=case)
    for got in both("tensordot", x1, x2, axes=case):
        same(got, expected)


@SETTINGS
@given(st.data(), st.sampled_from([hd.int32, hd.float32, hd.complex64]))
def test_vecdot_broadcasts_and_conjugates(data, dtype):
    shapes = data.draw(st.sampled_from([((3,), (3,)), ((2, 3), (3,)), ((2, 1, 3), (4, 3)),
                                        ((3, 2), (1, 3, 2))]))
    axis = -2 if shapes[0] == (3, 2) else -1
    x1, x2 = (data.draw(arrays(dtype, s, INTS)) for s in shapes)
    expected = np.vecdot(x1, x2, axis=axis)
    for got in both("vecdot", x1, x2, axis=axis):
        same(got, expected)


@SETTINGS
@given(st.data(), st.sampled_from([hd.int32, hd.float64]))
def test_outer_cross_matmul_transpose(data, dtype):
    u, v = data.draw(arrays(dtype, (3,), INTS)), data.draw(arrays(dtype, (4,), INTS))
    for got in both("outer", u, v):
        same(got, np.outer(u, v))
    a = data.draw(arrays(dtype, (2, 3, 4), INTS))
    b = data.draw(arrays(dtype, (4, 3), INTS))
    for axis, x1, x2 in ((-1, a[..., :3], b[:2, None, :]), (-2, a, b.T)):
        for got in both("cross", x1, x2, axis=axis):
            same(got, np.cross(x1, x2, axis=axis))
    for got in both("matmul", a, b):
        same(got, a @ b)
    for got in both("matrix_transpose", a):
        same(got, np.swapaxes(a, -1, -2))


# -- diagonal, trace, norms, powers -----------------------------------------------------

@SETTINGS
@given(st.data(), st.sampled_from([hd.int8, hd.float32]),
       st.sampled_from([(3, 3), (2, 3, 5)]), st.sampled_from([-1, 0, 2, 5]))
def test_diagonal_and_trace(data, dtype, shape, offset):
    x = data.draw(arrays(dtype, shape, INTS))
    for got in both("diagonal", x, offset=offset):
        same(got, np.linalg.diagonal(x, offset=offset))
    for got in both("trace", x, offset=offset):
        same(got, np.linalg.trace(x, offset=offset))
    for got in both("trace", x, offset=offset, dtype=hd.float64):
        same(got, np.linalg.trace(x, offset=offset, dtype=np.float64))


ORDS = (2, 1, math.inf, -math.inf, 0, 3, -1, 0.5)


@SETTINGS
@given(st.data(), st.sampled_from([hd.float32, hd.float64, hd.complex64]), st.sampled_from(ORDS),
       st.sampled_from([None, 0, -1, (0, 2), (-1, 1)]), st.booleans())
def test_vector_norm(data, dtype, ord, axis, keepdims):
    x = data.draw(arrays(dtype, (2, 3, 4), Domain(lo=-4, hi=4)))
    expected = np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    for got in both("vector_norm", x, axis=axis, keepdims=keepdims, ord=ord):
        got = np.asarray(got)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        # atol: XLA:CPU flushes subnormal results to zero (a norm of 1e-308 reads 0).
        np.testing.assert_allclose(got, expected, rtol=1e-5 if x.dtype.itemsize <= 8 else 1e-12,
                                   atol=np.finfo(got.dtype).tiny)


@SETTINGS
@given(st.data(), st.sampled_from([hd.float32, hd.float64]),
       st.sampled_from(("fro", 1, -1, math.inf, -math.inf)), st.booleans())
def test_matrix_norm(data, dtype, ord, keepdims):
    x = data.draw(arrays(dtype, (2, 3, 4), Domain(lo=-4, hi=4)))
    expected = np.linalg.matrix_norm(x, ord=ord, keepdims=keepdims)
    for got in both("matrix_norm", x, ord=ord, keepdims=keepdims):
        close(got, expected)


@SETTINGS
@given(conditioned(), st.integers(-3, 5))
def test_matrix_power(a, n):
    expected = np.linalg.matrix_power(a, n)
    for got in both("matrix_power", a, n):
        close(got, expected)
    ints = np.int32([[1, 1], [1, 0]])
    if n >= 0:
        for got in both("matrix_power", ints, n):
            same(got, np.linalg.matrix_power(ints, n))


# -- the loop, the namespace and errors ----------------------------------------------------

def test_the_lu_loop_does_not_unroll(monkeypatch):
    # The HLO loop is the fallback where jaxlib's LAPACK targets are absent (not CPU).
    monkeypatch.setattr(kernels, "provider", lambda: "hlo")

    def size(n):
        return len(hd.code_hlo(lambda a, b: la.solve(a, b), hd.array(np.eye(n)),
                               hd.array(np.ones(n))).splitlines())
    assert size(2) == size(40)
    assert "while(" in hd.code_hlo(la.det, hd.array(np.eye(3)))


def test_namespace_holds_the_standards_linalg_functions():
    extension = {"cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
                 "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer",
                 "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace",
                 "vecdot", "vector_norm"}
    assert extension <= set(dir(xp.linalg)) and set(la.__all__) >= extension
    for name in ("matmul", "matrix_transpose", "tensordot", "vecdot"):
        assert getattr(xp, name) is getattr(xp.linalg, name)


@pytest.mark.parametrize("name", ["eigh", "eigvalsh", "svd", "svdvals", "qr", "pinv",
                                  "matrix_rank"])
def test_decompositions_without_lapack_use_the_hlo_fallback(monkeypatch, name):
    # LAPACK-backed on CPU (tests/test_linalg_lapack.py); HLO loops elsewhere
    # (tests/test_linalg_fallback.py).
    monkeypatch.setattr(kernels, "provider", lambda: "hlo")
    text = hd.code_hlo(getattr(la, name), hd.array(np.eye(2)))
    assert "while(" in text and "lapack_" not in text


@pytest.mark.parametrize("ord, want", [(2, 1.0), (-2, 1.0), ("nuc", 2.0)])
def test_matrix_norms_needing_singular_values_work_without_lapack(monkeypatch, ord, want):
    monkeypatch.setattr(kernels, "provider", lambda: "hlo")
    assert float(np.asarray(la.matrix_norm(hd.array(np.eye(2)), ord=ord))) == want


I2 = hd.array(np.eye(2, dtype=np.int32))
F23 = hd.array(np.ones((2, 3)))


@pytest.mark.parametrize("call, error, message", [
    (lambda: la.solve(I2, I2), TypeError, r"solve: needs floating-point .* s32\[2,2\]"),
    (lambda: la.inv(I2), TypeError, "inv: needs floating-point"),
    (lambda: la.det(I2), TypeError, "det: needs floating-point"),
    (lambda: la.slogdet(I2), TypeError, "slogdet: needs floating-point"),
    (lambda: la.cholesky(I2), TypeError, "cholesky: needs floating-point"),
    (lambda: la.vector_norm(I2), TypeError, "vector_norm: needs floating-point"),
    (lambda: la.matrix_power(I2, -1), TypeError, "inv: needs floating-point"),
    (lambda: la.det(F23), ShapeError, r"det: needs a stack of square matrices .* \(2, 3\)"),
    (lambda: la.inv(hd.array(np.ones(3))), ShapeError, r"inv: .*square.*\(3,\)"),
    (lambda: la.solve(hd.array(np.eye(2)), hd.array(np.ones(3))), ShapeError,
     r"solve: x2 must have shape .* \(2, 2\) and \(3,\)"),
    (lambda: la.solve(hd.array(np.ones((2, 2, 2))), hd.array(np.ones((3, 2, 1)))), ShapeError,
     "solve: operands .* cannot be broadcast"),
    (lambda: la.tensordot(F23, F23, axes=1), ShapeError, r"tensordot: contracted axes"),
    (lambda: la.tensordot(F23, F23, axes=3), ValueError, r"tensordot: axes=3"),
    (lambda: la.cross(F23, hd.array(np.ones((3, 2)))), ShapeError,
     r"cross: axis -1 must have size 3"),
    (lambda: la.vecdot(F23, hd.array(np.ones(2))), ShapeError, "vecdot: axis -1 must have"),
    (lambda: la.outer(F23, F23), ShapeError, "outer: needs two vectors"),
    (lambda: la.diagonal(hd.array(np.ones(3))), ShapeError, r"diagonal: needs rank >= 2"),
    (lambda: la.vector_norm(F23, ord="fro"), ValueError, "vector_norm: ord must be a real"),
    (lambda: la.matrix_norm(F23, ord=3), ValueError, "matrix_norm: ord=3 is not supported"),
    (lambda: la.matrix_power(hd.array(np.eye(2)), 1.5), TypeError, "matrix_power: n must be"),
    (lambda: la.solve_triangular(hd.array(np.eye(2)), F23[0:2, 0:2], lower=1), TypeError,
     "solve_triangular: lower must be a bool"),
])
def test_errors_name_the_function_and_shapes(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("a, b", [((2, 3, 4, 5), (5, 6)), ((2, 3, 4, 5), (5,)),
                                  ((4, 5), (2, 3, 5, 6)), ((5,), (2, 3, 5, 6))])
def test_matmul_with_a_two_dimensional_side_does_not_copy_it_per_batch_entry(a, b):
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal(a).astype(np.float32), rng.standard_normal(b).astype(np.float32)
    np.testing.assert_allclose(np.asarray(xp.matmul(hd.array(A), hd.array(B))),
                               np.matmul(A, B), rtol=1e-5, atol=1e-5)
    text = hd.code_hlo(xp.matmul, hd.array(A), hd.array(B))
    assert " broadcast(" not in text and text.count(" dot(") == 1
