"""Array-API searching, sorting and statistical functions against numpy, eagerly and staged.

Every function runs on concrete arrays and under ``hd.compile`` (each public
function compiled once at module level, its non-array arguments static, so
examples that repeat a signature reuse the executable). Searching, sorting,
counting, logical reductions and cumulative sums and products of values on a
small integer grid are exact; ``var``/``std`` are compared within a tolerance
per element type. Values are drawn with many ties and with NaN, ±inf and -0.0
for floats, so stability, first-occurrence and NaN rules are exercised.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
from hlodsl.stdlib.searching import (
    argmax, argmin, argsort, count_nonzero, nonzero, searchsorted, sort, top_k,
)
from hlodsl.stdlib.statistics import all, any, cumulative_prod, cumulative_sum, std, var

from strategies import Domain, arrays, shapes

REAL = (hd.pred, hd.int8, hd.uint8, hd.int32, hd.int64, hd.float16, hd.bfloat16, hd.float32,
        hd.float64)
NUMERIC = REAL[1:]
FLOATS = (hd.float16, hd.bfloat16, hd.float32, hd.float64)
#: Few distinct values (ties), plus NaN, ±inf and -0.0 for floats.
TIES = Domain(lo=-3, hi=3, step=1.0, special=True)
#: Finite values on the integer grid: sums and products of a few are exact everywhere.
GRID = Domain(lo=-3, hi=3, step=1.0)
SETTINGS = settings(max_examples=25, deadline=None)

# correction is a static argument (hd.compile traces Python floats otherwise).
STAGED = {f.__name__: hd.compile(f, static_argnames=(
    ("correction",) if f in (var, std) else ())) for f in (
    argmax, argmin, sort, argsort, top_k, searchsorted, count_nonzero, nonzero, var, std, all,
    any, cumulative_sum, cumulative_prod)}


@st.composite
def data(draw, dtypes, domain=TIES, min_rank=1, max_rank=3, min_side=1):
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(shapes(min_rank, max_rank, min_side=min_side, max_side=4))
    return draw(arrays(dtype, shape, domain))


def _oracle_input(x: np.ndarray) -> np.ndarray:
    # numpy's sort and arg-reductions of ml_dtypes' bfloat16 do not know its NaNs.
    return x.astype(np.float32) if x.dtype == ml_dtypes.bfloat16 else x


def _same(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got, expected)
    # assert_array_equal does not see bfloat16 NaNs as equal: compare them as float32.
    np.testing.assert_array_equal(_oracle_input(got), _oracle_input(expected))


def _both(name, f, x, expected, *args, **kwargs):
    """``f(x, ...)`` eagerly and staged, each exactly ``expected`` (or a tuple of them)."""
    for got in (f(hd.array(x), *args, **kwargs), STAGED[name](hd.array(x), *args, **kwargs)):
        if isinstance(expected, tuple):
            assert isinstance(got, tuple) and len(got) == len(expected)
            for g, e in zip(got, expected):
                _same(g, e)
        else:
            _same(got, expected)


def _axis(draw, ndim, none=True):
    choices = list(range(-ndim, ndim)) + ([None] if none else [])
    return draw(st.sampled_from(choices))


def _axes(draw, ndim):
    """None, one axis, or a tuple of distinct axes (negative allowed)."""
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    picked = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
    return tuple(a - ndim if draw(st.booleans()) else a for a in picked)


# -- argmax and argmin ----------------------------------------------------------------

@SETTINGS
@given(x=data(REAL), choice=st.data())
def test_argmax_argmin(x, choice):
    axis = _axis(choice.draw, x.ndim)
    keepdims = choice.draw(st.booleans())
    ref = _oracle_input(x)
    _both("argmax", argmax, x, np.argmax(ref, axis=axis, keepdims=keepdims), axis, keepdims)
    _both("argmin", argmin, x, np.argmin(ref, axis=axis, keepdims=keepdims), axis, keepdims)


def test_argmax_nan_and_ties():
    x = np.float32([1, np.nan, 5, np.nan, 5])
    _both("argmax", argmax, x, np.int64(1))
    _both("argmin", argmin, x, np.int64(1))
    x = np.float32([-np.inf, -np.inf, 2, 2])
    _both("argmax", argmax, x, np.int64(2))
    _both("argmin", argmin, x, np.int64(0))
    _both("argmax", argmax, np.uint8([0, 255, 255]), np.int64(1))


# -- sort and argsort ---------------------------------------------------------------------

def _argsort_reference(x, axis, descending):
    """numpy's stable argsort; descending keeps ties in order (array_api_compat's way)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    flipped = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    return x.shape[axis] - 1 - flipped


@SETTINGS
@given(x=data(REAL), choice=st.data())
def test_sort_argsort(x, choice):
    axis = _axis(choice.draw, x.ndim, none=False)
    descending = choice.draw(st.booleans())
    order = _argsort_reference(_oracle_input(x), axis, descending)
    _both("argsort", argsort, x, order, axis, descending)
    _both("sort", sort, x, np.take_along_axis(x, order, axis), axis, descending)


def test_sort_floats_like_numpy():
    x = np.float64([np.nan, 2, -np.nan, -np.inf, 0.0, -0.0, 2, np.inf])
    _both("sort", sort, x, np.sort(x, kind="stable"))
    _both("argsort", argsort, x, np.argsort(x, kind="stable"))
    _both("argsort", argsort, x, np.int64([0, 2, 7, 1, 6, 4, 5, 3]), -1, True)


# -- top_k ------------------------------------------------------------------------------

@SETTINGS
@given(x=data(NUMERIC), choice=st.data())
def test_top_k(x, choice):
    axis = _axis(choice.draw, x.ndim, none=False)
    k = choice.draw(st.integers(0, x.shape[axis]))
    order = _argsort_reference(_oracle_input(x), axis, descending=True)
    indices = np.take(order, np.arange(k), axis=axis)
    _both("top_k", top_k, x, (np.take_along_axis(x, indices, axis), indices), k, axis)


# -- searchsorted -------------------------------------------------------------------------

@SETTINGS
@given(dtype=st.sampled_from(REAL), n=st.integers(0, 6), choice=st.data())
def test_searchsorted(dtype, n, choice):
    x1 = np.sort(_oracle_input(choice.draw(arrays(dtype, (n,), TIES)))).astype(dtype.np_dtype)
    x2 = choice.draw(arrays(dtype, choice.draw(shapes(0, 2, max_side=3)), TIES))
    side = choice.draw(st.sampled_from(["left", "right"]))
    expected = np.searchsorted(_oracle_input(x1), _oracle_input(x2), side=side)
    hx1, hx2 = hd.array(x1), hd.array(x2)
    for got in (searchsorted(hx1, hx2, side), STAGED["searchsorted"](hx1, hx2, side)):
        _same(got, np.asarray(expected, np.int64))


def test_searchsorted_scalars_and_sorter():
    x1 = np.float32([5, 1, 3, 3])
    sorter = np.argsort(x1, kind="stable")
    for side in ("left", "right"):
        expected = np.searchsorted(x1, np.float32([3, 0, 9]), side=side, sorter=sorter)
        got = searchsorted(hd.array(x1), hd.array(np.float32([3, 0, 9])), side,
                           hd.array(sorter))
        _same(got, expected.astype(np.int64))
        staged = STAGED["searchsorted"](hd.array(x1), hd.array(np.float32([3, 0, 9])), side,
                                        hd.array(sorter))
        _same(staged, expected.astype(np.int64))
    _same(searchsorted(hd.array(np.float32([1, 2, 3])), 2.5), np.int64(2))


# -- count_nonzero and nonzero --------------------------------------------------------------

@SETTINGS
@given(x=data(REAL + (hd.complex64,), max_rank=3), choice=st.data())
def test_count_nonzero(x, choice):
    axis = _axes(choice.draw, x.ndim)
    keepdims = choice.draw(st.booleans())
    expected = np.asarray(np.count_nonzero(x, axis=axis, keepdims=keepdims), np.int64)
    _both("count_nonzero", count_nonzero, x, expected, axis, keepdims)


@SETTINGS
@given(x=data(REAL, min_side=0), size=st.integers(0, 8))
def test_nonzero(x, size):
    expected = tuple(i.astype(np.int64) for i in np.nonzero(x))
    for got, e in zip(nonzero(hd.array(x)), expected, strict=True):
        _same(got, e)
    padded = tuple(np.pad(e[:size], (0, max(0, size - e.size))) for e in expected)
    for got in (nonzero(hd.array(x), size=size), STAGED["nonzero"](hd.array(x), size=size)):
        assert len(got) == len(padded)
        for g, e in zip(got, padded):
            _same(g, e)


def test_nonzero_needs_size_when_staged():
    with pytest.raises(hd.StagingError, match="nonzero.*depends on data.*size="):
        STAGED["nonzero"](hd.array(np.int32([0, 1])))
    with pytest.raises(ValueError, match="nonzero.*rank-0"):
        nonzero(hd.array(np.int32(1)))


# -- var and std ---------------------------------------------------------------------------

_EPS = {np.dtype(np.float16): 2.0 ** -10, np.dtype(ml_dtypes.bfloat16): 2.0 ** -7,
        np.dtype(np.float32): 2.0 ** -23, np.dtype(np.float64): 2.0 ** -52}


@pytest.mark.filterwarnings("ignore:Degrees of freedom <= 0")
@SETTINGS
@given(x=data(FLOATS + (hd.int32, hd.complex64), domain=Domain(lo=-4, hi=4)),
       correction=st.sampled_from([0, 1, 1.5]), choice=st.data())
def test_var_std(x, correction, choice):
    axis = _axes(choice.draw, x.ndim)
    keepdims = choice.draw(st.booleans())
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected_var = np.var(wide, axis=axis, ddof=correction, keepdims=keepdims)
    dtype = np.var(x.astype(np.float32) if x.dtype == ml_dtypes.bfloat16 else x).dtype
    dtype = ml_dtypes.bfloat16 if x.dtype == ml_dtypes.bfloat16 else dtype
    atol = 8 * _EPS[np.dtype(dtype)] * 16  # values in [-4, 4]: squares up to 16
    for name, f, expected in (("var", var, expected_var), ("std", std, np.sqrt(expected_var))):
        tol = atol if name == "var" else np.sqrt(atol)
        for got in (f(hd.array(x), axis, correction, keepdims),
                    STAGED[name](hd.array(x), axis, correction, keepdims)):
            got = np.asarray(got)
            assert got.dtype == dtype and got.shape == expected.shape
            np.testing.assert_allclose(got.astype(np.float64), expected, rtol=0, atol=tol)


# -- all and any -----------------------------------------------------------------------------

@SETTINGS
@given(x=data(REAL + (hd.complex64,), min_side=0), choice=st.data())
def test_all_any(x, choice):
    axis = _axes(choice.draw, x.ndim)
    keepdims = choice.draw(st.booleans())
    _both("all", all, x, np.all(x, axis=axis, keepdims=keepdims), axis, keepdims)
    _both("any", any, x, np.any(x, axis=axis, keepdims=keepdims), axis, keepdims)


# -- cumulative sums and products --------------------------------------------------------------

@SETTINGS
@given(x=data(REAL + (hd.complex64,), GRID, max_rank=3, min_side=0), choice=st.data())
def test_cumulative(x, choice):
    axis = _axis(choice.draw, x.ndim, none=x.ndim == 1)
    include_initial = choice.draw(st.booleans())
    dtype = choice.draw(st.sampled_from([None, None, np.float32, np.int64]))
    if x.dtype.kind == "c":
        dtype = None  # numpy would drop the imaginary part
    hdtype = None if dtype is None else hd.dtypes.element_type(dtype)
    ref = _oracle_input(x)
    for name, f, oracle in (("cumulative_sum", cumulative_sum, np.cumulative_sum),
                            ("cumulative_prod", cumulative_prod, np.cumulative_prod)):
        expected = oracle(ref, axis=axis, dtype=dtype, include_initial=include_initial)
        if dtype is None and x.dtype == ml_dtypes.bfloat16:
            expected = expected.astype(ml_dtypes.bfloat16)
        _both(name, f, x, expected, axis, hdtype, include_initial)


def test_cumulative_scalar_and_bool_dtype():
    _same(cumulative_sum(hd.array(np.float32(2))), np.float32([2]))
    x = np.bool_([True, False, True])
    _same(cumulative_sum(hd.array(x), dtype=hd.pred), np.cumulative_sum(x, dtype=bool))
    _same(cumulative_prod(hd.array(x), dtype=hd.pred), np.cumulative_prod(x, dtype=bool))


# -- errors ----------------------------------------------------------------------------------

def test_errors_name_the_function():
    m = hd.array(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="argmax.*empty"):
        argmax(hd.array(np.zeros((2, 0), np.float32)), axis=1)
    with pytest.raises(ValueError, match="argmin: axis 2 is out of range"):
        argmin(m, axis=2)
    with pytest.raises(TypeError, match="sort: needs a real-valued"):
        sort(hd.array(np.complex64([1, 2])))
    with pytest.raises(ValueError, match="argsort: cannot sort a rank-0"):
        argsort(hd.array(np.float32(1)))
    with pytest.raises(ValueError, match=r"top_k: k=4 must lie in \[0, 3\]"):
        top_k(m, 4)
    with pytest.raises(hd.ShapeError, match="searchsorted: x1 must be one-dimensional"):
        searchsorted(m, m)
    with pytest.raises(ValueError, match="searchsorted: side"):
        searchsorted(hd.array(np.float32([1])), 1.0, "middle")
    with pytest.raises(ValueError, match="cumulative_sum: axis is required"):
        cumulative_sum(m)
    with pytest.raises(ValueError, match="var: repeated axis"):
        var(m, axis=(0, 0))
    with pytest.raises(ValueError, match="count_nonzero: axis -3 is out of range"):
        count_nonzero(m, axis=-3)
