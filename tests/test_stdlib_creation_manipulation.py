"""Array-API creation and manipulation functions against numpy, eagerly and staged.

Every function runs on concrete arrays and under ``hd.compile`` and must equal
numpy bit for bit (same element type, shape and values): these functions only
create and move elements. The one exception is staged floating ``arange`` and
``linspace``, where XLA may contract ``i * step + start`` into a fused
multiply-add (one rounding instead of numpy's two): those are checked eagerly
exactly and staged to within a few ulp.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hlodsl as hd
from hlodsl.stdlib.creation import (
    arange, asarray, empty, empty_like, eye, full, full_like, linspace, meshgrid, ones,
    ones_like, tril, triu, zeros, zeros_like,
)
from hlodsl.stdlib.manipulation import (
    concat, expand_dims, flip, moveaxis, permute_dims, repeat, reshape, roll, squeeze, stack,
    tile, unstack, where,
)

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float16, ml_dtypes.bfloat16,
          np.float32, np.float64, np.complex64]
NUMERIC = DTYPES[1:]
SETTINGS = settings(max_examples=15, deadline=None)
dtypes = st.sampled_from(DTYPES)
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)
nonempty = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)


def _data(shape, dtype, offset=0):
    """Distinct values (a permuted or misplaced element shows), exact in every dtype."""
    k = np.arange(int(np.prod(shape))) + offset
    if np.dtype(dtype) == np.bool_:
        return (k % 3 == 1).reshape(shape)
    return (k % 100 - 7).astype(dtype).reshape(shape)


def _same(got, expected):
    got = np.asarray(got)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got, expected)
    np.testing.assert_array_equal(got, expected)


def _both(f, args, expected):
    """``f(*args)`` eagerly and compiled, each equal to ``expected`` (an array or a sequence)."""
    returns_nothing = isinstance(expected, (list, tuple)) and not expected
    staged = [] if returns_nothing else [hd.compile(f)(*args)]  # a program returns arrays
    for got in (f(*args), *staged):
        if isinstance(expected, (list, tuple)):
            assert type(got) is type(expected) and len(got) == len(expected)
            for g, e in zip(got, expected):
                _same(g, e)
        else:
            _same(got, expected)


def _close_staged(f, expected):
    """Staged creation within a few ulp of numpy (XLA may fuse a multiply-add)."""
    got = np.asarray(hd.compile(f)())
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if np.issubdtype(expected.dtype, np.inexact) and expected.size:
        eps = float(ml_dtypes.finfo(expected.dtype).eps)
        scale = float(np.abs(expected.astype(np.complex128)).max())
        np.testing.assert_allclose(got.astype(np.complex128), expected.astype(np.complex128),
                                   rtol=0, atol=4 * eps * scale)
    else:
        np.testing.assert_array_equal(got, expected)


# -- creation ----------------------------------------------------------------------

def test_asarray_takes_numpy_defaults_and_passes_arrays_through():
    x = hd.array(np.float32([1, 2]))
    assert asarray(x) is x and asarray(x, dtype=hd.float32) is x
    _same(asarray(x, dtype=np.int32), np.int32([1, 2]))
    for obj in ([[1, 2], [3, 4]], 2.5, True, 3, 1 + 2j, [1.0, 2], np.uint16([7, 8]),
                np.float16(1.5), [[True], [False]]):
        _same(asarray(obj), np.asarray(obj))
        _same(hd.compile(lambda: asarray(obj))(), np.asarray(obj))
        if not isinstance(obj, complex):  # numpy refuses complex to float too
            _same(asarray(obj, dtype=hd.float32), np.asarray(obj, dtype=np.float32))
    _same(asarray(hd.array(np.complex64([0, 1j])), dtype=hd.pred), np.array([False, True]))
    with pytest.raises(ValueError, match="copy=False"):
        asarray(x, dtype=hd.float64, copy=False)


def test_asarray_stacks_lists_holding_arrays_symbolic_ones_too():
    a, b = np.float32([1, 2]), np.float32([3, 4])
    f = lambda x, y: asarray([[x, y], [y, x]])  # noqa: E731
    _both(f, (hd.array(a), hd.array(b)), np.asarray([[a, b], [b, a]]))
    g = lambda x: asarray([x, 2.0, 3], dtype=hd.float64)  # noqa: E731
    _both(g, (hd.array(np.float32(1)),), np.float64([1, 2, 3]))


@SETTINGS
@given(shapes, st.sampled_from([None, *DTYPES]), st.data())
def test_full_zeros_ones_empty_match_numpy(shape, dtype, data):
    fill = data.draw(st.sampled_from([True, 3, -2, 2.5, 1 + 2j, np.float32(0.5)]))
    if dtype is not None and np.issubdtype(np.dtype(dtype), np.unsignedinteger) \
            and isinstance(fill, int):
        fill = abs(fill)
    if dtype is not None and not np.issubdtype(np.dtype(dtype), np.complexfloating) \
            and isinstance(fill, complex):
        fill = 4.0
    cases = [(lambda: full(shape, fill, dtype), np.full(shape, fill, dtype)),
             (lambda: zeros(shape, dtype), np.zeros(shape, dtype)),
             (lambda: ones(shape, dtype=dtype), np.ones(shape, dtype)),
             (lambda: empty(shape, dtype), np.zeros(shape, dtype))]
    for f, expected in cases:
        _both(f, (), expected)


@SETTINGS
@given(shapes, dtypes, st.sampled_from([None, np.int16, np.float32, np.bool_]))
def test_like_functions_take_shape_and_dtype_from_their_argument(shape, dtype, new):
    a = _data(shape, dtype)
    fill = 1 if dtype == np.bool_ or new == np.bool_ else 5
    for f, expected in [(lambda x: zeros_like(x, dtype=new), np.zeros_like(a, new)),
                        (lambda x: ones_like(x, new), np.ones_like(a, new)),
                        (lambda x: empty_like(x, new), np.zeros_like(a, new)),
                        (lambda x: full_like(x, fill, dtype=new), np.full_like(a, fill, new))]:
        _both(f, (hd.array(a),), expected)


def test_full_broadcasts_array_fill_values_symbolic_ones_too():
    v = np.float32([1, 2, 3])
    _both(lambda x: full((2, 3), x), (hd.array(v),), np.full((2, 3), v))
    _both(lambda x: full(4, x, dtype=hd.int32), (hd.array(np.float32(2.5)),),
          np.full(4, 2, np.int32))
    _same(full_like(hd.array(np.int32([1, 2])), 2.5), np.full_like(np.int32([1, 2]), 2.5))


numbers = st.one_of(st.integers(-30, 30), st.floats(-30, 30, allow_nan=False).map(
    lambda v: round(v, 3)))
steps = st.one_of(st.integers(-4, 4).filter(bool), st.sampled_from([0.25, -0.5, 0.1, 1.7, -3.3]))


@settings(max_examples=40, deadline=None)
@given(numbers, st.none() | numbers, steps,
       st.sampled_from([None, np.int8, np.uint8, np.int32, np.int64, np.float16,
                        ml_dtypes.bfloat16, np.float32, np.float64, np.complex64]))
def test_arange_matches_numpy_length_dtype_and_values(start, stop, step, dtype):
    args = (start,) if stop is None else (start, stop, step)
    try:
        with np.errstate(all="ignore"):
            expected = np.arange(*args, dtype=dtype)
    except (OverflowError, ValueError) as e:  # e.g. -1 in uint8: we refuse it the same way
        with pytest.raises(type(e)):
            arange(*args, dtype=dtype)
        return
    if expected.size > 200:
        return  # long ranges only cost compiles
    _same(arange(*args, dtype=dtype), expected)
    _close_staged(lambda: arange(*args, dtype=dtype), expected)


def test_arange_corner_cases():
    _same(arange(5), np.arange(5))
    _same(arange(5, 1), np.arange(5, 1))                      # empty
    _same(arange(2, dtype=hd.pred), np.arange(2, dtype=bool))
    _same(arange(np.float32(1), 4), np.arange(np.float32(1), 4))  # float64, as numpy
    _same(arange(0, 1, 0.1), np.arange(0, 1, 0.1))
    _same(arange(hd.array(np.int64(3))), np.arange(3))        # concrete 0-d arrays are static
    for bad, err in [((1, 2, 0), "step must not be zero"), ((0, float("inf")), "not finite"),
                     ((1 + 2j,), "static real number"), ((5, 0, -1, hd.pred), "at most 2")]:
        with pytest.raises((ValueError, TypeError), match=err):
            arange(*bad)


@settings(max_examples=40, deadline=None)
@given(numbers, numbers, st.integers(0, 12), st.booleans(),
       st.sampled_from([None, np.int32, np.uint8, np.int64, np.float16, ml_dtypes.bfloat16,
                        np.float32, np.complex128, np.bool_]))
def test_linspace_matches_numpy(start, stop, num, endpoint, dtype):
    expected = np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
    f = lambda: linspace(start, stop, num, dtype=dtype, endpoint=endpoint)  # noqa: E731
    _same(f(), expected)
    _close_staged(f, expected)


def test_linspace_with_complex_and_numpy_scalar_bounds():
    for start, stop in [(1 + 2j, -3 + 0.5j), (np.float32(0.1), np.float32(2.3))]:
        expected = np.linspace(start, stop, 7)
        _same(linspace(start, stop, 7), expected)
        _close_staged(lambda: linspace(start, stop, 7), expected)
    with pytest.raises(ValueError, match="num must be non-negative"):
        linspace(0, 1, -1)


@SETTINGS
@given(st.integers(0, 4), st.none() | st.integers(0, 4), st.integers(-5, 5),
       st.sampled_from([None, np.bool_, np.int32, np.float32, np.complex64]))
def test_eye_matches_numpy(n, m, k, dtype):
    _both(lambda: eye(n, m, k=k, dtype=dtype), (), np.eye(n, m, k=k, dtype=dtype or float))


@SETTINGS
@given(hnp.array_shapes(min_dims=2, max_dims=3, min_side=0, max_side=4), dtypes,
       st.integers(-4, 4))
def test_tril_and_triu_match_numpy(shape, dtype, k):
    a = _data(shape, dtype)
    _both(lambda x: tril(x, k=k), (hd.array(a),), np.tril(a, k=k))
    _both(lambda x: triu(x, k), (hd.array(a),), np.triu(a, k=k))


@SETTINGS
@given(st.lists(st.integers(0, 3), min_size=0, max_size=3), st.sampled_from(["xy", "ij"]),
       st.sampled_from([np.int32, np.float64]))
def test_meshgrid_matches_numpy(sizes, indexing, dtype):
    xs = [_data((n,), dtype, offset=i) for i, n in enumerate(sizes)]
    expected = tuple(np.meshgrid(*xs, indexing=indexing))  # a tuple since 2025.12
    _both(lambda *a: meshgrid(*a, indexing=indexing), [hd.array(x) for x in xs], expected)


# -- manipulation ----------------------------------------------------------------

@SETTINGS
@given(nonempty, st.lists(st.sampled_from([np.int8, np.int32, np.float32, np.bool_]),
                          min_size=1, max_size=3), st.data())
def test_concat_matches_numpy_and_promotes(shape, dts, data):
    axis = data.draw(st.sampled_from([None, *range(-len(shape), len(shape))]))
    arrays = []
    for i, dt in enumerate(dts):
        s = list(shape)
        if axis is not None:
            s[axis] = data.draw(st.integers(0, 3))
        arrays.append(_data(tuple(s), dt))
    expected = _as_promoted(np.concatenate(arrays, axis=axis), dts)
    _both(lambda *xs: concat(xs, axis=axis), [hd.array(a) for a in arrays], expected)


def _as_promoted(expected: np.ndarray, dts) -> np.ndarray:
    """numpy's result in hlodsl's promoted type: numpy widens an integer with a float
    (int32 with float32 to float64), hlodsl keeps the float type (data_types.py)."""
    want = hd.stdlib.result_type(*[np.dtype(d) for d in dts]).np_dtype
    return expected.astype(want)


@SETTINGS
@given(shapes, st.integers(1, 3), st.sampled_from([np.uint8, np.float16, np.complex64]),
       st.data())
def test_stack_and_unstack_match_numpy(shape, count, dtype, data):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    arrays = [_data(shape, dtype, offset=i) for i in range(count)]
    _both(lambda *xs: stack(list(xs), axis=axis), [hd.array(a) for a in arrays],
          np.stack(arrays, axis=axis))
    if shape:
        uaxis = data.draw(st.integers(-len(shape), len(shape) - 1))
        a = arrays[0]
        expected = tuple(np.moveaxis(a, uaxis, 0))
        _both(lambda x: unstack(x, axis=uaxis), (hd.array(a),), expected)


@SETTINGS
@given(shapes, dtypes, st.data())
def test_reshape_expand_dims_and_squeeze_match_numpy(shape, dtype, data):
    a = _data(shape, dtype)
    target = data.draw(st.permutations(list(shape) + [1]).map(tuple))
    if target and a.size:
        hole = data.draw(st.integers(0, len(target) - 1))
        target = target[:hole] + (-1,) + target[hole + 1:]
    _both(lambda x: reshape(x, target), (hd.array(a),), np.reshape(a, target))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    _both(lambda x: expand_dims(x, axis=axis), (hd.array(a),), np.expand_dims(a, axis))
    axes = (0, -1) if len(shape) else (0, 1)
    _both(lambda x: expand_dims(x, axis=axes), (hd.array(a),), np.expand_dims(a, axes))
    ones = tuple(d for d, n in enumerate(shape) if n == 1)
    squeezable = data.draw(st.sampled_from([None, ones, *ones]))
    _both(lambda x: squeeze(x, axis=squeezable), (hd.array(a),), np.squeeze(a, squeezable))


@SETTINGS
@given(shapes, dtypes, st.data())
def test_permute_dims_and_moveaxis_match_numpy(shape, dtype, data):
    a = _data(shape, dtype)
    perm = data.draw(st.permutations(range(len(shape))))
    _both(lambda x: permute_dims(x, perm), (hd.array(a),), np.transpose(a, perm))
    if shape:
        k = data.draw(st.integers(1, len(shape)))
        src = data.draw(st.permutations(range(-len(shape), 0)))[:k]
        dst = data.draw(st.permutations(range(len(shape))))[:k]
        _both(lambda x: moveaxis(x, src, dst), (hd.array(a),), np.moveaxis(a, src, dst))
        _both(lambda x: moveaxis(x, src[0], dst[0]), (hd.array(a),),
              np.moveaxis(a, src[0], dst[0]))


@SETTINGS
@given(shapes, dtypes, st.data())
def test_flip_and_roll_match_numpy(shape, dtype, data):
    a = _data(shape, dtype)
    axes = data.draw(st.none() | st.lists(st.integers(0, len(shape) - 1), unique=True).map(
        tuple) if shape else st.none())
    _both(lambda x: flip(x, axis=axes), (hd.array(a),), np.flip(a, axes))
    shift = data.draw(st.integers(-7, 7))
    _both(lambda x: roll(x, shift), (hd.array(a),), np.roll(a, shift))
    if shape:
        raxes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1,
                                   max_size=3).map(tuple))
        shifts = tuple(data.draw(st.integers(-5, 5)) for _ in raxes)
        _both(lambda x: roll(x, shifts, axis=raxes), (hd.array(a),), np.roll(a, shifts, raxes))
        _both(lambda x: roll(x, shift, axis=raxes), (hd.array(a),), np.roll(a, shift, raxes))


@SETTINGS
@given(shapes, dtypes, st.data())
def test_tile_and_repeat_match_numpy(shape, dtype, data):
    a = _data(shape, dtype)
    reps = data.draw(st.integers(0, 2) | st.lists(st.integers(0, 3), max_size=4).map(tuple))
    _both(lambda x: tile(x, reps), (hd.array(a),), np.tile(a, reps))
    r = data.draw(st.integers(0, 3))
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1)) if shape else None
    _both(lambda x: repeat(x, r, axis=axis), (hd.array(a),), np.repeat(a, r, axis=axis))
    n = a.size if axis is None else shape[axis]
    counts = tuple(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    _both(lambda x: repeat(x, counts, axis=axis), (hd.array(a),),
          np.repeat(a, counts, axis=axis))


def _promotes(a, b) -> bool:
    try:
        return bool(np.result_type(a, b))
    except TypeError:  # bfloat16 has no numpy promotion with integers
        return False


PROMOTABLE = [(a, b) for a in DTYPES for b in DTYPES if _promotes(a, b)]


@SETTINGS
@given(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3),
       st.sampled_from(PROMOTABLE), st.sampled_from([np.bool_, np.int32]))
def test_where_broadcasts_and_promotes_like_numpy(shapes_, dts, cdt):
    cs, s1, s2 = shapes_.input_shapes
    c = _data(cs, cdt) if cdt == np.bool_ else (_data(cs, cdt) % 2)
    x1, x2 = _data(s1, dts[0]), _data(s2, dts[1], offset=1)
    _both(lambda c_, a, b: where(c_, a, b), (hd.array(c), hd.array(x1), hd.array(x2)),
          _as_promoted(np.where(c, x1, x2), dts))


def test_where_with_python_scalars_is_weakly_typed():
    c = np.array([True, False, True])
    x = np.float32([1, 2, 3])
    _both(lambda c_, a: where(c_, a, 0), (hd.array(c), hd.array(x)), np.where(c, x, np.float32(0)))
    _both(lambda c_: where(c_, 1, 2.5), (hd.array(c),), np.where(c, 1, 2.5))
    _both(lambda a: where(True, a, 0), (hd.array(x),), x)


# -- errors ----------------------------------------------------------------------

X = hd.array(np.zeros((2, 3), np.float32))
ERRORS = [
    (lambda: reshape(X, (4, -1)), ValueError, r"reshape: cannot reshape .*\(4, -1\)"),
    (lambda: reshape(X, (-1, -1)), ValueError, "one -1"),
    (lambda: reshape(X, (5,)), ValueError, "6 elements"),
    (lambda: squeeze(X, 0), ValueError, "cannot squeeze axis 0 .* size is 2"),
    (lambda: expand_dims(X, 4), ValueError, "expand_dims: axis 4 is out of range for rank 3"),
    (lambda: concat([X, hd.array(np.zeros((3, 3)))], axis=1), hd.ShapeError,
     r"concat: shapes must agree except along axis 1, got f32\[2,3\], f64\[3,3\]"),
    (lambda: concat([hd.array(np.float32(1))]), ValueError, "rank-0"),
    (lambda: concat(X), TypeError, "tuple or list of arrays"),
    (lambda: concat([]), ValueError, "at least one array"),
    (lambda: stack([X, hd.array(np.zeros(3))]), hd.ShapeError, "same shape"),
    (lambda: permute_dims(X, (0, 0)), ValueError, "repeated axis"),
    (lambda: permute_dims(X, (0,)), ValueError, "name each of the 2 dimensions"),
    (lambda: moveaxis(X, (0, 1), 0), ValueError, "same number of axes"),
    (lambda: roll(X, (1, 2, 3), axis=(0, 1)), ValueError, "same length"),
    (lambda: tile(X, -1), ValueError, "non-negative"),
    (lambda: repeat(X, (1, 2), axis=1), ValueError, "2 repeats for 3 elements"),
    (lambda: repeat(X, 1.5), TypeError, "repeats must be a static int"),
    (lambda: where(hd.array(np.ones(4, bool)), X, 0), hd.ShapeError, "where: operands"),
    (lambda: unstack(hd.array(np.float32(1))), ValueError, "rank-0"),
    (lambda: zeros((2, -1)), ValueError, "negative dimension"),
    (lambda: zeros("ab"), TypeError, "shape must be a static int"),
    (lambda: full(3, "a"), TypeError, "fill_value must be a number"),
    (lambda: tril(hd.array(np.ones(3))), ValueError, "tril: needs an array of rank >= 2"),
    (lambda: meshgrid(X), ValueError, "meshgrid: expects 1-D arrays"),
    (lambda: meshgrid(hd.array(np.ones(3)), indexing="yx"), ValueError, "'xy' or 'ij'"),
    (lambda: asarray(["a"]), TypeError, "no XLA element type"),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_bad_arguments_raise_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_static_arguments_may_not_be_symbolic():
    n = hd.array(np.int64(3))
    with pytest.raises(TypeError, match="arange: start is a symbolic array"):
        hd.compile(lambda n: arange(n))(n)
    with pytest.raises(hd.StagingError, match="symbolic"):
        hd.compile(lambda n: zeros(n))(n)
