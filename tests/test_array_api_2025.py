"""What the array API's 2024.12 and 2025.12 revisions changed, checked against numpy, jax
and the standard's own special-case tables.

``isin`` against ``numpy.isin`` (ties, NaN, signed zeros, scalars, mixed
types, eagerly and staged); the tuples ``meshgrid``, ``broadcast_arrays`` and
``info.devices()`` return; ``broadcast_shapes``' ``ValueError``; the
``floor_divide`` special cases with infinities, as the standard lists them;
``linalg.eig``/``eigvals`` on hypothesis-drawn stacks of matrices (eigenvalues
against numpy's, ``A V = V diag(w)``, LAPACK's normalisation) and their
derivatives against ``jax.jvp``/``jax.grad`` of jax's ``eig``.
"""

from __future__ import annotations

import hlodsl.stdlib as xp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
from ad_harness import random_array
from hlodsl.errors import ShapeError
from strategies import Domain, arrays, shapes

jax.config.update("jax_enable_x64", True)

SETTINGS = settings(max_examples=10, deadline=None)
pytestmark = pytest.mark.filterwarnings("ignore::hlodsl.errors.RecompileWarning")


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


# -- the namespace --------------------------------------------------------------------------

def test_version_is_2025_12_and_older_versions_are_accepted():
    x = hd.array(np.float32([1, 2]))
    assert xp.__array_api_version__ == "2025.12"
    for version in ("2023.12", "2024.12", "2025.12"):
        assert x.__array_namespace__(api_version=version) is xp


ADDED_2024_12 = "count_nonzero cumulative_prod diff nextafter reciprocal take_along_axis".split()
ADDED_2025_12 = "broadcast_shapes isin".split()


@pytest.mark.parametrize("name", ADDED_2024_12 + ADDED_2025_12 + ["linalg.eig", "linalg.eigvals"])
def test_names_added_since_2023_12_exist(name):
    owner, _, attr = name.rpartition(".")
    assert hasattr(getattr(xp, owner) if owner else xp, attr)


def test_sequences_of_arrays_are_tuples():
    a, b = hd.array(np.int32([1, 2, 3])), hd.array(np.float32([4, 5]))
    grid = xp.meshgrid(a, b)
    assert type(grid) is tuple and [g.shape for g in grid] == [(2, 3), (2, 3)]
    assert type(hd.compile(lambda a, b: xp.meshgrid(a, b, indexing="ij"))(a, b)) is tuple
    both = xp.broadcast_arrays(hd.array(np.int8([[1], [2]])), b)
    assert type(both) is tuple and [x.shape for x in both] == [(2, 2), (2, 2)]
    info = xp.__array_namespace_info__()
    assert info.devices() == (info.default_device(),)


# -- broadcast_shapes -----------------------------------------------------------------------

@SETTINGS
@given(st.lists(shapes(0, 4, min_side=0, max_side=3), max_size=4))
def test_broadcast_shapes_matches_numpy(drawn):
    try:
        want = np.broadcast_shapes(*drawn)
    except ValueError:
        with pytest.raises(ValueError, match="broadcast_shapes: operands"):
            xp.broadcast_shapes(*drawn)
    else:
        assert xp.broadcast_shapes(*drawn) == want


def test_broadcast_shapes_raises_value_error_not_type_error():
    with pytest.raises(ValueError, match=r"\(2, 3\), \(4,\)") as caught:
        xp.broadcast_shapes((2, 3), (4,))
    assert not isinstance(caught.value, TypeError)
    # Mismatched operands of other functions stay ShapeError (a TypeError).
    with pytest.raises(ShapeError):
        xp.add(hd.array(np.ones(3)), hd.array(np.ones(4)))


# -- isin -----------------------------------------------------------------------------------

TIES = Domain(lo=-3, hi=3, step=1.0, special=True)
ISIN_DTYPES = (hd.pred, hd.int8, hd.uint8, hd.int32, hd.int64, hd.float32, hd.float64)
STAGED_ISIN = hd.compile(xp.isin, static_argnames=("invert",))


@SETTINGS
@given(st.sampled_from(ISIN_DTYPES), st.sampled_from(ISIN_DTYPES),
       shapes(0, 3, min_side=0, max_side=4), shapes(0, 2, min_side=0, max_side=5),
       st.booleans(), st.data())
def test_isin_matches_numpy(t1, t2, s1, s2, invert, data):
    if {t1, t2} == {hd.int64, hd.uint8} or xp.result_type(t1, t2) in (hd.uint64,):
        t2 = t1
    a1, a2 = data.draw(arrays(t1, s1, TIES)), data.draw(arrays(t2, s2, TIES))
    want = np.isin(a1, a2, invert=invert)
    for f in (xp.isin, STAGED_ISIN):
        _same(f(hd.array(a1), hd.array(a2), invert=invert), want)


def test_isin_scalars_and_values():
    x = hd.array(np.int16([[1, 2], [3, 4]]))
    _same(xp.isin(x, 3), np.array([[False, False], [True, False]]))
    _same(xp.isin(3, x), np.bool_(True))
    _same(xp.isin(7, x, invert=True), np.bool_(True))
    # Value equality: NaN is in nothing, -0.0 is 0.0, int 2 is float 2.0.
    f = hd.array(np.float64([np.nan, -0.0, 2.0, 2.5]))
    _same(xp.isin(f, hd.array(np.float32([np.nan, 0.0, 2.0]))), np.array([False, True, True, False]))
    _same(xp.isin(f, hd.array(np.int32([2]))), np.array([False, False, True, False]))
    _same(xp.isin(f, hd.array(np.float64([]))), np.zeros(4, bool))
    with pytest.raises(TypeError, match="isin: x1 or x2 must be an array"):
        xp.isin(1, 2)


# -- floor_divide's special cases (2024.12 on: floor(x1 / x2) where one operand is infinite) --

INF = np.inf
#: (x1, x2, result) from the standard's list for floor_divide.
FLOOR_DIVIDE_CASES = [
    (np.nan, 1.0, np.nan), (1.0, np.nan, np.nan), (INF, -INF, np.nan), (-INF, INF, np.nan),
    (0.0, -0.0, np.nan), (0.0, 2.0, 0.0), (-0.0, 2.0, -0.0), (0.0, -2.0, -0.0),
    (-0.0, -2.0, 0.0), (2.0, 0.0, INF), (2.0, -0.0, -INF), (-2.0, 0.0, -INF), (-2.0, -0.0, INF),
    (INF, 3.0, INF), (INF, -3.0, -INF), (-INF, 3.0, -INF), (-INF, -3.0, INF),
    (3.0, INF, 0.0), (3.0, -INF, -0.0), (-3.0, INF, -0.0), (-3.0, -INF, 0.0),
    (7.0, 2.0, 3.0), (-7.0, 2.0, -4.0), (7.0, -2.0, -4.0), (1e300, 1e-300, INF),
]


def _same_float(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    number = ~np.isnan(want)  # signed zeros and infinities too (a NaN's sign is free)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_floor_divide_special_cases_follow_the_standard(dtype):
    cases = [c for c in FLOOR_DIVIDE_CASES if dtype is np.float64 or abs(c[0]) != 1e300]
    x1, x2, want = (np.array(col, dtype) for col in zip(*cases))
    a, b = hd.array(x1), hd.array(x2)
    _same_float(xp.floor_divide(a, b), want)
    _same_float(a // b, want)
    _same_float(hd.compile(lambda a, b: a // b)(a, b), want)
    c = a
    c //= b
    _same_float(c, want)
    # numpy pairs // with % instead: it differs on the infinite cases only.
    with np.errstate(all="ignore"):
        theirs = np.floor_divide(x1, x2)
    differ = ((theirs != want) | (np.signbit(theirs) != np.signbit(want))) & ~np.isnan(want)
    assert set(zip(x1[differ].tolist(), x2[differ].tolist())) <= {
        (INF, 3.0), (INF, -3.0), (-INF, 3.0), (-INF, -3.0), (3.0, -INF), (-3.0, INF)}


@SETTINGS
@given(st.sampled_from([hd.float32, hd.float64]), shapes(1, 2), st.data())
def test_floor_divide_finite_matches_numpy(dtype, shape, data):
    finite = Domain(lo=-64, hi=64, nonzero=True)
    a, b = data.draw(arrays(dtype, shape, finite)), data.draw(arrays(dtype, shape, finite))
    _same_float(xp.floor_divide(hd.array(a), hd.array(b)), np.floor_divide(a, b))


# -- linalg.eig / eigvals -------------------------------------------------------------------

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
TOL = {np.float32: 2e-4, np.float64: 1e-10, np.complex64: 2e-4, np.complex128: 1e-10}
EIG_SHAPES = ((3, 3), (2, 4, 4), (1, 1), (2, 2, 2))
STAGED_EIG = hd.compile(xp.linalg.eig)
STAGED_EIGVALS = hd.compile(xp.linalg.eigvals)


@st.composite
def general_matrices(draw):
    shape, dtype = draw(st.sampled_from(EIG_SHAPES)), draw(st.sampled_from(DTYPES))
    return random_array(np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1))), shape, dtype)


def _sorted(w):
    return np.sort_complex(np.asarray(w).astype(np.complex128))


@SETTINGS
@given(general_matrices())
def test_eig_matches_numpy_and_decomposes(a):
    dtype = a.dtype.type
    tol = TOL[dtype] * max(1.0, np.abs(a).max())
    complex_type = np.result_type(dtype, np.complex64)
    want = np.linalg.eigvals(a)
    for w, v in (xp.linalg.eig(hd.array(a)), STAGED_EIG(hd.array(a))):
        w, v = np.asarray(w), np.asarray(v)
        assert w.dtype == v.dtype == complex_type and w.shape == a.shape[:-1] and v.shape == a.shape
        np.testing.assert_allclose(_sorted(w), _sorted(want), atol=10 * tol)
        np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=10 * tol)
        # LAPACK's normalisation: unit columns whose largest-magnitude entry is real.
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, atol=tol)
        big = np.take_along_axis(v, np.abs(v).argmax(-2)[..., None, :], -2)
        np.testing.assert_allclose(big.imag, 0, atol=tol)
    for w in (xp.linalg.eigvals(hd.array(a)), STAGED_EIGVALS(hd.array(a))):
        assert np.asarray(w).dtype == complex_type
        np.testing.assert_allclose(_sorted(w), _sorted(want), atol=10 * tol)


def test_eig_of_special_matrices():
    rotation = hd.array(np.float64([[0, -1], [1, 0]]))
    np.testing.assert_allclose(_sorted(xp.linalg.eigvals(rotation)), [-1j, 1j])
    w, v = xp.linalg.eig(hd.array(np.zeros((2, 0, 0), np.float32)))
    assert (w.dtype, w.shape, v.dtype, v.shape) == (hd.complex64, (2, 0), hd.complex64, (2, 0, 0))
    assert xp.linalg.eigvals(hd.array(np.ones((2, 2), np.float16))).dtype == hd.complex64
    bad = np.float64([[[np.nan, 0], [0, 1]], [[2, 0], [0, 3]]])
    w = np.asarray(xp.linalg.eigvals(hd.array(bad)))
    assert np.isnan(w[0]).all() and np.allclose(_sorted(w[1]), [2, 3])
    # vmap batches the LAPACK call natively: the same values as the batched call.
    a = np.random.default_rng(0).standard_normal((3, 4, 4))
    for got, want in zip(hd.vmap(xp.linalg.eig)(hd.array(a)), np.linalg.eig(a)):
        np.testing.assert_allclose(np.asarray(got), want, atol=1e-12)


def test_eig_errors():
    with pytest.raises(ShapeError, match=r"eig: needs a stack of square matrices.*\(2, 3\)"):
        xp.linalg.eig(hd.array(np.ones((2, 3))))
    with pytest.raises(ShapeError, match="eigvals: needs a stack of square matrices"):
        xp.linalg.eigvals(hd.array(np.ones(3)))
    hd.config.linalg_kernels = "hlo"
    try:
        with pytest.raises(NotImplementedError, match=r"linalg.eigvals of f64\[2,2\]: .*LAPACK"):
            xp.linalg.eigvals(hd.array(np.eye(2)))
    finally:
        hd.config.linalg_kernels = "auto"


def _jax_eig(a):
    return jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)


@SETTINGS
@given(st.sampled_from([np.float64, np.complex128]), st.sampled_from([(3, 3), (2, 4, 4)]),
       st.integers(0, 2 ** 32 - 1))
def test_eig_derivatives_match_jax(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    a, da = random_array(rng, shape, dtype), random_array(rng, shape, dtype)
    (w, v), (dw, dv) = hd.jvp(xp.linalg.eig, (hd.array(a),), (hd.array(da),))
    (jw, jv), (jdw, jdv) = jax.jvp(_jax_eig, (a,), (da,))
    for got, want in ((w, jw), (v, jv), (dw, jdw), (dv, jdv)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-7, atol=1e-7)
    _, dw = hd.jvp(xp.linalg.eigvals, (hd.array(a),), (hd.array(da),))
    np.testing.assert_allclose(np.asarray(dw), np.asarray(jdw), rtol=1e-7, atol=1e-7)

    def loss(ns, eig):  # real-valued, from both outputs
        def f(x):
            w, v = eig(x)
            return ns.sum(ns.real(w) ** 2 - ns.imag(w)) + ns.sum(ns.abs(v[..., 0, :]))
        return f

    got, want = hd.grad(loss(xp, xp.linalg.eig))(hd.array(a)), jax.grad(loss(jnp, _jax_eig))(a)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-7, atol=1e-7)


def test_eigvals_gradient_by_central_differences():
    a = np.float64([[1.0, 2.0, 0.5], [-1.0, 0.5, 3.0], [0.25, -2.0, 2.0]])

    def f(x):
        w = xp.linalg.eigvals(x)
        return xp.sum(xp.real(w) ** 3 + xp.imag(w) ** 2)

    got = np.asarray(hd.grad(f)(hd.array(a)))
    eps, want = 1e-6, np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = eps
        want[i] = (float(f(hd.array(a + e))) - float(f(hd.array(a - e)))) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
