"""Reductions over windows and sorting: reduce-window, select-and-scatter, sort, topk.

Oracles: jax.lax.reduce_window / sort / top_k, jax.grad of a max pool (which
XLA implements with select-and-scatter), and numpy models for
select-and-scatter, multi-operand stable sorts and top-k with ties.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jax import lax

import oracles

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.ops import (Add, And, Compare, Maximum, Multiply, Or, ReduceWindow,
                        SelectAndScatter, Select, Sort, TopK)

COVERED_OPCODES = {"reduce-window", "select-and-scatter", "sort", "topk"}

NUMERIC = [np.float32, np.float64, np.int32, np.int64, np.uint8]
SETTINGS = settings(max_examples=25, deadline=None)


# -- computations, module-level so staged sub-computations and ops are cached --

def add(a, b):
    return Add()(a, b)


def maximum(a, b):
    return Maximum()(a, b)


def ge(a, b):
    return Compare("GE")(a, b)


def le(a, b):
    return Compare("LE")(a, b)


def lt(a, b):
    return Compare("LT")(a, b)


def gt(a, b):
    return Compare("GT")(a, b)


def lt_total(a, b):
    return Compare("LT", "TOTALORDER")(a, b)


def less_generic(a, b):
    return xp.less(a, b)


def key_lt(a, b, *_values):
    return lt(a, b)


def key_gt(a, b, *_values):
    return gt(a, b)


def two_keys_lt(a0, b0, a1, b1, *_values):
    return Or()(lt(a0, b0), And()(Compare("EQ")(a0, b0), lt(a1, b1)))


def argmax(acc_v, acc_i, v, i):
    """Variadic (value, index) maximum; ties keep the lower index."""
    take = Or()(gt(acc_v, v), And()(Compare("EQ")(acc_v, v), lt(acc_i, i)))
    return Select()(take, acc_v, v), Select()(take, acc_i, i)


# -- helpers -------------------------------------------------------------------

def both(f, *arrays):
    """``f`` eagerly and under hd.compile on hlodsl arrays; results as numpy trees."""
    args = [hd.array(a) for a in arrays]
    eager, staged = f(*args), hd.compile(f)(*args)
    as_np = (lambda r: tuple(np.asarray(x) for x in r) if isinstance(r, tuple)
             else np.asarray(r))
    return as_np(eager), as_np(staged), eager, [a.type for a in args]


def assert_types(op, types, result):
    """The shape rule predicts exactly what XLA produced."""
    expect = op.result_type(*types)
    got = tuple(r.type for r in result) if isinstance(result, tuple) else result.type
    assert got == (tuple(expect.elements) if isinstance(expect, hd.TupleType) else expect)


def assert_close(got, want, dtype):
    """Exact for integers and max; sums within a few ulp (XLA may reassociate)."""
    if np.issubdtype(dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=8 * np.finfo(dtype).eps, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


def lowest(dtype):
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


@st.composite
def windows(draw, dilations=True, negative_pads=True, max_rank=3):
    """(shape, window, strides, padding, base_dil, window_dil) with a valid result."""
    rank = draw(st.integers(1, max_rank))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    window = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    lo_pad = -1 if negative_pads else 0
    padding = tuple((draw(st.integers(lo_pad, w - 1)), draw(st.integers(lo_pad, w - 1)))
                    for w in window)
    one = (1,) * rank
    base = tuple(draw(st.integers(1, 2)) for _ in range(rank)) if dilations else one
    wdil = tuple(draw(st.integers(1, 2)) for _ in range(rank)) if dilations else one
    assume(all((n - 1) * b + 1 + lo + hi >= 0 for n, b, (lo, hi) in zip(shape, base, padding)))
    return shape, window, strides, padding, base, wdil


# -- reduce-window -------------------------------------------------------------

@SETTINGS
@given(windows(), st.sampled_from(NUMERIC), st.sampled_from(["add", "max"]), st.integers(0, 99))
def test_reduce_window_matches_lax(win, dtype, kind, seed):
    shape, window, strides, padding, base, wdil = win
    x = np.random.default_rng(seed).integers(0, 50, shape).astype(dtype)
    comp, lax_comp, init = {"add": (add, lax.add, 0),
                            "max": (maximum, lax.max, lowest(dtype))}[kind]
    init = np.asarray(init, dtype)
    op = ReduceWindow(comp, window, strides, padding, base, wdil)
    eager, staged, result, types = both(lambda a, i: op(a, i), x, init)
    want = oracles.reduce_window(jnp.asarray(x), jnp.asarray(init), lax_comp, window, strides,
                                 padding, base, wdil)
    assert eager.dtype == dtype and eager.shape == want.shape
    assert_close(eager, np.asarray(want), dtype)
    assert_close(staged, eager, dtype)
    assert_types(op, types, result)


@SETTINGS
@given(windows(dilations=False), st.integers(0, 99))
def test_variadic_reduce_window_argmax(win, seed):
    shape, window, strides, padding, _, _ = win
    x = np.random.default_rng(seed).integers(0, 4, shape).astype(np.float32)  # many ties
    idx = np.arange(x.size, dtype=np.int32).reshape(shape)
    inits = (np.float32(-np.inf), np.int32(0))
    op = ReduceWindow(argmax, window, strides, padding)
    eager, staged, result, types = both(lambda a, b, i, j: op(a, b, i, j), x, idx, *inits)
    assert isinstance(result, tuple) and len(result) == 2

    def jax_argmax(acc, item):
        take = (acc[0] > item[0]) | ((acc[0] == item[0]) & (acc[1] < item[1]))
        return jnp.where(take, acc[0], item[0]), jnp.where(take, acc[1], item[1])

    want = oracles.reduce_window((jnp.asarray(x), jnp.asarray(idx)), inits, jax_argmax,
                                 window, strides, padding)
    for e, s, w in zip(eager, staged, want):
        np.testing.assert_array_equal(e, np.asarray(w))
        np.testing.assert_array_equal(s, e)
    assert_types(op, types, result)


def test_reduce_window_prints_like_xla():
    x, i = hd.array(np.zeros((4, 5), np.float32)), hd.array(np.float32(0))
    full = ReduceWindow(add, (2, 2), (1, 2), ((1, 0), (0, 1)), (2, 1), (1, 2))
    text = hd.code_hlo(lambda a, b: full(a, b), x, i)
    assert ("window={size=2x2 stride=1x2 pad=1_0x0_1 lhs_dilate=2x1 rhs_dilate=1x2}"
            in text)
    plain = hd.code_hlo(lambda a, b: ReduceWindow(add, (2, 2))(a, b), x, i)
    assert "reduce-window(a, b), window={size=2x2}, to_apply=" in plain
    assert ReduceWindow(add, (2, 2)) == ReduceWindow(add, [2, 2], (1, 1), [(0, 0), (0, 0)])


@pytest.mark.parametrize("kwargs, match", [
    (dict(window_dimensions=(0, 2)), "window_dimensions must be positive"),
    (dict(window_dimensions=(2, 2), window_strides=(1,)), "window_strides needs 2 entries"),
    (dict(window_dimensions=(2,), window_strides=(0,)), "window_strides must be positive"),
    (dict(window_dimensions=(2,), base_dilations=(0,)), "base_dilations must be positive"),
    (dict(window_dimensions=(2,), window_dilations=(1, 1)), "window_dilations needs 1"),
    (dict(window_dimensions=(2,), padding=((1, 2, 3),)), "padding must be"),
    (dict(window_dimensions=(2,), padding=(1, 1)), "padding"),
])
def test_reduce_window_bad_static_operands(kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        ReduceWindow(add, **kwargs)
    assert "ReduceWindow(" in str(info.value)


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("op, args, match", [
    (ReduceWindow(add, (2,)), (np.zeros((3, 4), np.float32), np.float32(0)),
     "window has 1 dimensions for a rank-2"),
    (ReduceWindow(add, (2, 2)), (np.zeros((3, 4), np.float32), np.int32(0)),
     "initial value must be a scalar of its operand's element type"),
    (ReduceWindow(add, (2, 2)), (np.zeros((3, 4), np.float32), np.zeros(2, np.float32)),
     "initial value must be a scalar"),
    (ReduceWindow(add, (2, 2)), (np.zeros((3, 4), np.float32),), "N operands followed by N"),
    (ReduceWindow(add, (2, 2), padding=((-3, -1), (0, 0))),
     (np.zeros((3, 4), np.float32), np.float32(0)), "negative size"),
    (ReduceWindow(ge, (2, 2)), (np.zeros((3, 4), np.float32), np.float32(0)),
     "computation must return f32"),
    (ReduceWindow(add, (2, 2)), (np.zeros((3, 4), np.float32), np.zeros((3, 4), np.int32),
                                 np.float32(0), np.int32(0)), "computation must take 4 scalars"),
    (ReduceWindow(argmax, (2, 2)), (np.zeros((3, 4), np.float32), np.zeros((3, 5), np.int32),
                                    np.float32(0), np.int32(0)), "same shape"),
])
def test_reduce_window_bad_operands(op, args, match, staged):
    arrays = [hd.array(a) for a in args]
    f = hd.compile(lambda *xs: op(*xs)) if staged else (lambda *xs: op(*xs))
    with pytest.raises(hd.ShapeError, match=match) as info:
        f(*arrays)
    assert repr(op) in str(info.value) and str(arrays[0].type) in str(info.value)


def multiply(a, b):
    return Multiply()(a, b)


@pytest.mark.parametrize("shape, window, kwargs", [
    ((3, 3), (5, 5), {}),                                    # the window is larger
    ((3,), (2,), dict(window_dilations=(3,))),               # its dilated span (4) is
    ((3, 3), (1, 1), dict(padding=((-3, 0), (0, 0)))),       # cropped to exactly 0
    ((4,), (2,), dict(padding=((-1, -2),), window_strides=(2,))),
    ((0, 3), (2, 2), {}),                                    # an empty operand
])
def test_reduce_window_with_no_window_that_fits_gives_an_empty_result(shape, window, kwargs):
    # StableHLO defines this (reduce_window C15: is_empty_window gives 0 windows),
    # and lax and XLA agree; only padding that crops past the input is refused.
    x, init = np.ones(shape, np.float32), np.float32(0)
    op = ReduceWindow(add, window, **kwargs)
    eager, staged, result, types = both(lambda a, i: op(a, i), x, init)
    want = np.asarray(oracles.reduce_window(
        jnp.asarray(x), jnp.asarray(init), lax.add, window, op.window_strides, op.padding,
        op.base_dilations, op.window_dilations))
    assert want.size == 0 and eager.shape == staged.shape == want.shape
    assert_types(op, types, result)


def test_select_and_scatter_with_no_window_that_fits_takes_an_empty_source():
    # No window fits (select_and_scatter C2: shape(source) = num_windows = 0), so
    # nothing is scattered: every element keeps init.
    op = SelectAndScatter(ge, add, (5,))
    got = both(lambda a, b, c: op(a, b, c), np.ones(3, np.float32), np.ones(0, np.float32),
               np.float32(7))
    for result in got[:2]:
        np.testing.assert_array_equal(result, np.full(3, 7, np.float32))
    with pytest.raises(hd.ShapeError, match=r"source must have the windowed operand's shape "
                                            r"\(0,\)"):
        op(hd.array(np.ones(3, np.float32)), hd.array(np.ones(1, np.float32)),
           hd.array(np.float32(7)))


@pytest.mark.parametrize("comp, init, dtype, identity", [
    (add, 1.0, np.float32, 0.0), (add, 0.5, np.float64, 0.0), (maximum, 0.0, np.float32, -np.inf),
    (maximum, 0, np.int32, np.iinfo(np.int32).min), (multiply, 2, np.int64, 1),
    (maximum, True, np.bool_, False),
])
def test_reduce_window_refuses_a_known_initial_value_that_is_not_the_identity(
        comp, init, dtype, identity):
    # The initial value is XLA's identity (and the padding value): any other one,
    # when known, is a ShapeError saying so, eagerly and as a staged constant.
    x = hd.array(np.arange(6).reshape(2, 3).astype(dtype))
    other = hd.array(np.asarray(init, dtype))
    op = ReduceWindow(comp, (1, 2), padding=((0, 0), (1, 0)))
    for run in (lambda: op(x, other), lambda: hd.compile(lambda v: op(v, other))(x)):
        with pytest.raises(hd.ShapeError, match="identity") as info:
            run()
        assert repr(op) in str(info.value) and "Pad the operand first" in str(info.value)
    lax_comp = {add: lax.add, maximum: lax.max, multiply: lax.mul}[comp]
    if dtype is np.bool_:
        lax_comp = lax.bitwise_or  # maximum on pred is or
    want = lax.reduce_window(jnp.asarray(np.asarray(x)), jnp.asarray(identity, dtype), lax_comp,
                             (1, 2), (1, 1), ((0, 0), (1, 0)))
    np.testing.assert_array_equal(np.asarray(op(x, hd.array(np.asarray(identity, dtype)))),
                                  np.asarray(want))


# -- select-and-scatter --------------------------------------------------------

def np_select_and_scatter(x, src, init, window, strides, padding, select, scatter):
    """XLA's semantics: per window, keep the selected element unless select() is false."""
    out = np.full(x.shape, init, x.dtype)
    for s in np.ndindex(src.shape):
        best = None
        for w in np.ndindex(window):
            pos = tuple(i * st_ + k - p[0] for i, st_, k, p in zip(s, strides, w, padding))
            if all(0 <= p < n for p, n in zip(pos, x.shape)) and \
                    (best is None or not select(x[best], x[pos])):
                best = pos
        if best is not None:
            out[best] = scatter(out[best], src[s])
    return out


def operand(rng, shape, padding, dtype):
    """Many ties without padding; distinct values with padding.

    Which of a window's tied elements ``select`` keeps is implementation-defined
    (StableHLO defines the selection as a reduce-window, whose order is). XLA CPU
    rewrites select-and-scatter into a variadic reduce-window plus scatter: without
    padding the first of tied maxima wins (as in jax's max-pool gradient, which
    pads explicitly and then uses an unpadded select-and-scatter); with padding the
    same rewrite may keep a later one. ``test_select_and_scatter_ties_with_padding``
    checks that that choice is still a valid one.
    """
    if any(p != (0, 0) for p in padding):
        return rng.permutation(math.prod(shape)).reshape(shape).astype(dtype)
    return rng.integers(0, 4, shape).astype(dtype)


def test_select_and_scatter_ties_with_padding():
    x = np.float32([[[2, 3], [3, 2]]])
    g = np.float32([[[10, 1]]])
    op = SelectAndScatter(ge, add, (1, 2, 2), padding=((0, 0), (0, 0), (0, 1)))
    for got in both(lambda a, b, c: op(a, b, c), x, g, np.float32(0))[:2]:
        # Window 0 holds the tied 3s at (0,0,1), (0,1,0); window 1 keeps (0,0,1).
        assert got[0, 0, 1] in (11, 1) and got[0, 1, 0] == 11 - got[0, 0, 1]
        assert got.sum() == g.sum() and got[0, 0, 0] == got[0, 1, 1] == 0


@SETTINGS
@given(windows(dilations=False, negative_pads=False), st.sampled_from([np.float32, np.float64]),
       st.integers(0, 99))
def test_select_and_scatter_is_the_max_pool_gradient(win, dtype, seed):
    shape, window, strides, padding, _, _ = win
    x = operand(np.random.default_rng(seed), shape, padding, dtype)
    rng = np.random.default_rng(seed + 1)

    def pool(a):
        return lax.reduce_window(a, -jnp.inf, lax.max, window, strides, padding)

    out_shape = jax.eval_shape(pool, jnp.asarray(x)).shape
    g = rng.standard_normal(out_shape).astype(dtype)
    want = jax.jit(lambda a, ct: jax.vjp(pool, a)[1](ct)[0])(x, g)  # one compile, not many
    op = SelectAndScatter(ge, add, window, strides, padding)
    eager, staged, result, types = both(lambda a, b, c: op(a, b, c), x, g, np.zeros((), dtype))
    assert_close(eager, np.asarray(want), dtype)
    assert_close(staged, eager, dtype)
    ref = np_select_and_scatter(x, g, 0, window, strides, padding, np.greater_equal, np.add)
    assert_close(eager, ref, dtype)
    assert_types(op, types, result)


@SETTINGS
@given(windows(dilations=False, negative_pads=False), st.sampled_from([np.int32, np.uint8]),
       st.integers(0, 99))
def test_select_and_scatter_min_select_max_scatter(win, dtype, seed):
    shape, window, strides, padding, _, _ = win
    x = operand(np.random.default_rng(seed), shape, padding, dtype)
    rng = np.random.default_rng(seed + 1)
    out_shape = jax.eval_shape(lambda a: lax.reduce_window(a, 0, lax.add, window, strides,
                                                           padding), x).shape
    src = rng.integers(0, 100, out_shape).astype(dtype)
    init = np.asarray(7, dtype)
    op = SelectAndScatter(le, maximum, window, strides, padding)
    eager, staged, result, types = both(lambda a, b, c: op(a, b, c), x, src, init)
    ref = np_select_and_scatter(x, src, init, window, strides, padding, np.less_equal,
                                np.maximum)
    np.testing.assert_array_equal(eager, ref)
    np.testing.assert_array_equal(staged, eager)
    assert_types(op, types, result)


def test_select_and_scatter_prints_like_xla():
    x, g, i = (hd.array(np.zeros(s, np.float32)) for s in ((4, 5), (2, 2), ()))
    text = hd.code_hlo(lambda a, b, c: SelectAndScatter(ge, add, (2, 2), (2, 2))(a, b, c),
                       x, g, i)
    assert "select-and-scatter(a, b, c), window={size=2x2 stride=2x2}, select=" in text
    assert ", scatter=" in text


@pytest.mark.parametrize("kwargs, match", [
    (dict(window_dimensions=(0,)), "window_dimensions must be positive"),
    (dict(window_dimensions=(2,), window_strides=(1, 1)), "window_strides needs 1"),
    (dict(window_dimensions=(2,), padding=((-1, 0),)), "padding must be non-negative"),
])
def test_select_and_scatter_bad_static_operands(kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        SelectAndScatter(ge, add, **kwargs)
    assert "SelectAndScatter(" in str(info.value)


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("op, shapes, dtypes, match", [
    (SelectAndScatter(ge, add, (2, 2), (2, 2)), ((4, 5), (2, 3), ()), "fff",
     r"source must have the windowed operand's shape \(2, 2\)"),
    (SelectAndScatter(ge, add, (2,)), ((4, 5), (3, 5), ()), "fff", "window has 1 dimensions"),
    (SelectAndScatter(ge, add, (2, 2), (2, 2)), ((4, 5), (2, 2), ()), "fif",
     "same element type"),
    (SelectAndScatter(ge, add, (2, 2), (2, 2)), ((4, 5), (2, 2), (1,)), "fff", "scalar"),
    (SelectAndScatter(add, add, (2, 2), (2, 2)), ((4, 5), (2, 2), ()), "fff",
     r"select must return pred\[\]"),
    (SelectAndScatter(ge, ge, (2, 2), (2, 2)), ((4, 5), (2, 2), ()), "fff",
     "scatter must return f32"),
    (SelectAndScatter(argmax, add, (2, 2), (2, 2)), ((4, 5), (2, 2), ()), "fff",
     "must each take two scalars"),
])
def test_select_and_scatter_bad_operands(op, shapes, dtypes, match, staged):
    arrays = [hd.array(np.zeros(s, {"f": np.float32, "i": np.int32}[d]))
              for s, d in zip(shapes, dtypes)]
    f = hd.compile(lambda *xs: op(*xs)) if staged else (lambda *xs: op(*xs))
    with pytest.raises(hd.ShapeError, match=match) as info:
        f(*arrays)
    assert repr(op) in str(info.value) and "f32[4,5]" in str(info.value)


# -- sort ------------------------------------------------------------------------

@st.composite
def sort_case(draw, max_rank=3):
    rank = draw(st.integers(1, max_rank))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(rank))
    return shape, draw(st.integers(0, rank - 1)), draw(st.integers(0, 99))


@SETTINGS
@given(sort_case(), st.sampled_from(NUMERIC), st.booleans(),
       st.sampled_from([lt, less_generic]))
def test_sort_one_operand_matches_lax(case, dtype, stable, comparator):
    shape, dim, seed = case
    x = np.random.default_rng(seed).integers(0, 100, shape).astype(dtype)
    op = Sort(comparator, dim, stable)
    eager, staged, result, types = both(lambda a: op(a), x)
    np.testing.assert_array_equal(eager, np.asarray(lax.sort(jnp.asarray(x), dimension=dim)))
    np.testing.assert_array_equal(eager, np.sort(x, axis=dim))
    np.testing.assert_array_equal(staged, eager)
    assert_types(op, types, result)


@SETTINGS
@given(sort_case(), st.sampled_from([np.float32, np.int32, np.int64]),
       st.sampled_from(["ascending", "descending"]))
def test_stable_sort_carries_values_and_keeps_ties_in_order(case, dtype, order):
    shape, dim, seed = case
    keys = np.random.default_rng(seed).integers(0, 3, shape).astype(dtype)  # many equal keys
    vals = np.arange(keys.size, dtype=np.int32).reshape(shape)
    op = Sort(key_lt if order == "ascending" else key_gt, dim, is_stable=True)
    eager, staged, result, types = both(lambda k, v: op(k, v), keys, vals)
    perm = np.argsort(keys if order == "ascending" else -keys, axis=dim, kind="stable")
    for got, arr in zip(eager, (keys, vals)):
        np.testing.assert_array_equal(got, np.take_along_axis(arr, perm, dim))
    if order == "ascending":
        want = lax.sort((jnp.asarray(keys), jnp.asarray(vals)), dimension=dim, is_stable=True,
                        num_keys=1)
        for got, w in zip(eager, want):
            np.testing.assert_array_equal(got, np.asarray(w))
    for s, e in zip(staged, eager):
        np.testing.assert_array_equal(s, e)
    assert_types(op, types, result)


@pytest.mark.parametrize("comparator, sign", [(key_lt, 1), (key_gt, -1)])
def test_is_stable_matters_on_long_rows(comparator, sign):
    """Rows of a few elements are insertion-sorted (stable anyway); 2000 elements are not."""
    keys = np.random.default_rng(0).integers(0, 3, (2, 2000)).astype(np.int32)
    vals = np.arange(keys.size, dtype=np.int32).reshape(keys.shape)
    (_, stable), (_, staged), _, _ = both(lambda k, v: Sort(comparator, 1, True)(k, v),
                                          keys, vals)
    want = np.take_along_axis(vals, np.argsort(sign * keys, axis=1, kind="stable"), 1)
    np.testing.assert_array_equal(stable, want)
    np.testing.assert_array_equal(staged, want)
    _, unstable = Sort(comparator, 1)(hd.array(keys), hd.array(vals))
    np.testing.assert_array_equal(np.sort(np.asarray(unstable), 1), np.sort(want, 1))


@SETTINGS
@given(sort_case(max_rank=2), st.sampled_from([np.float64, np.int32, np.uint8]))
def test_lexicographic_sort_on_two_keys_matches_lax_num_keys(case, dtype):
    shape, dim, seed = case
    rng = np.random.default_rng(seed)
    k0, k1 = (rng.integers(0, 3, shape).astype(dtype) for _ in range(2))
    vals = rng.standard_normal(shape).astype(np.float32)
    op = Sort(two_keys_lt, dim, is_stable=True)
    eager, staged, result, types = both(lambda a, b, c: op(a, b, c), k0, k1, vals)
    want = lax.sort(tuple(map(jnp.asarray, (k0, k1, vals))), dimension=dim, is_stable=True,
                    num_keys=2)
    perm = np.lexsort((np.moveaxis(k1, dim, -1), np.moveaxis(k0, dim, -1)), axis=-1)
    for got, w, arr in zip(eager, want, (k0, k1, vals)):
        np.testing.assert_array_equal(got, np.asarray(w))
        np.testing.assert_array_equal(
            got, np.moveaxis(np.take_along_axis(np.moveaxis(arr, dim, -1), perm, -1), -1, dim))
    for s, e in zip(staged, eager):
        np.testing.assert_array_equal(s, e)
    assert_types(op, types, result)


def test_sort_with_nan():
    """XLA sorts NaN last only under a TOTALORDER comparator.

    A FLOAT ``LT`` comparator is not a strict weak order once NaN is present:
    XLA then returns some permutation of the input, not sorted. Under
    ``Compare("LT", "TOTALORDER")`` (-NaN < -inf < ... < -0 < +0 < ... < +inf < NaN)
    the result equals np.sort and lax.sort (for positive NaN and no -0).
    """
    x = np.float32([[1, np.nan, 3, -np.inf, np.nan, 0, 2, np.inf]] * 2)
    total, _, _, _ = both(lambda a: Sort(lt_total, 1, True)(a), x)
    np.testing.assert_array_equal(total, np.sort(x, axis=1))
    np.testing.assert_array_equal(total, np.asarray(lax.sort(jnp.asarray(x), dimension=1)))
    eager, staged, _, _ = both(lambda a: Sort(lt, 1)(a), x)
    for got in (eager, staged):
        np.testing.assert_array_equal(np.sort(got, axis=1), np.sort(x, axis=1))  # a permutation


def test_sort_prints_like_xla():
    x = hd.array(np.zeros((2, 3), np.float32))
    text = hd.code_hlo(lambda a, b: Sort(key_lt, 1, True)(a, b), x, x)
    assert "(f32[2,3], f32[2,3]) sort(a, b), dimensions={1}, is_stable=true, to_apply=" in text
    assert "is_stable" not in hd.code_hlo(lambda a: Sort(lt, 0)(a), x)


def test_sort_bad_static_operands():
    with pytest.raises(ValueError, match=r"Sort\(.*dimension must be non-negative"):
        Sort(lt, -1)


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("op, shapes, match", [
    (Sort(lt, 2), ((3, 4),), "dimension 2 out of range for rank 2"),
    (Sort(key_lt, 0), ((3, 4), (3, 5)), "same shape"),
    (Sort(add, 0), ((3, 4),), r"comparator must return pred\[\], it returns f32\[\]"),
    (Sort(lt, 0), (), "at least one operand"),
    (Sort(lt, 0), ((3, 4), (3, 4)), r"comparator must take 4 scalars \(a0, b0, a1, b1"),
])
def test_sort_bad_operands(op, shapes, match, staged):
    arrays = [hd.array(np.zeros(s, np.float32)) for s in shapes]
    f = hd.compile(lambda *xs: op(*xs)) if staged else (lambda *xs: op(*xs))
    with pytest.raises(hd.ShapeError, match=match) as info:
        f(*arrays)
    assert repr(op) in str(info.value)
    assert all(str(a.type) in str(info.value) for a in arrays)


# -- topk --------------------------------------------------------------------------

@SETTINGS
@given(st.lists(st.integers(1, 4), min_size=0, max_size=2), st.integers(1, 8),
       st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_]),
       st.booleans(), st.data())
def test_topk_matches_lax_and_numpy(batch, n, dtype, largest, data):
    shape = tuple(batch) + (n,)
    k = data.draw(st.integers(0, n))
    x = np.random.default_rng(data.draw(st.integers(0, 99))).integers(0, 4, shape).astype(dtype)
    op = TopK(k, largest)
    eager, staged, result, types = both(lambda a: op(a), x)
    for got, want in zip(eager, op.reference(x)):  # ties: lower index first
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    if largest:
        for got, want in zip(eager, lax.top_k(jnp.asarray(x), k)):
            np.testing.assert_array_equal(got, np.asarray(want))
    for s, e in zip(staged, eager):
        np.testing.assert_array_equal(s, e)
    assert_types(op, types, result)


def test_topk_of_pred_orders_true_first_and_keeps_ties_in_index_order():
    x = np.array([[False, True, False, True, True], [True, False, False, False, True]])
    for largest in (True, False):
        for k in (0, 2, 5):
            values, indices = TopK(k, largest)(hd.array(x))
            np.testing.assert_array_equal(np.asarray(indices), TopK(k, largest).reference(x)[1])
            if largest:
                want_v, want_i = lax.top_k(jnp.asarray(x), k)
                np.testing.assert_array_equal(np.asarray(values), np.asarray(want_v))
                np.testing.assert_array_equal(np.asarray(indices), np.asarray(want_i))
    np.testing.assert_array_equal(np.asarray(TopK(3, False)(hd.array(x))[1]),
                                  [[0, 2, 1], [1, 2, 3]])


def test_topk_with_nan_and_signed_zero():
    """XLA's topk orders by total order: NaN above +inf, -0 below +0 (as lax.top_k)."""
    x = np.float32([[1, np.nan, -0.0, 3, -np.inf, 0.0, np.nan, 2]])
    values, indices = TopK(8)(hd.array(x))
    want_v, want_i = lax.top_k(jnp.asarray(x), 8)
    np.testing.assert_array_equal(np.asarray(indices), np.asarray(want_i))
    np.testing.assert_array_equal(np.asarray(indices), [[1, 6, 3, 7, 0, 5, 2, 4]])
    np.testing.assert_array_equal(np.signbit(np.asarray(values)), np.signbit(np.asarray(want_v)))
    smallest = np.asarray(TopK(8, largest=False)(hd.array(x))[1])
    np.testing.assert_array_equal(smallest, [[4, 2, 5, 0, 7, 3, 1, 6]])
    # Smallest-first reverses the order by flipping sign bits (xor), not by HLO negate,
    # whose sign of a NaN is the platform's (XLA:GPU kept it: the NaNs came first).
    text = str(hd.code_hlo(lambda a: TopK(8, largest=False)(a), hd.array(x)))
    assert text.count(" xor(") == 2 and " negate(" not in text


def test_topk_prints_like_xla():
    text = hd.code_hlo(lambda a: TopK(3)(a), hd.array(np.zeros((4, 5), np.float32)))
    assert "(f32[4,3], s32[4,3]) topk(a), k=3, largest=true" in text


def test_topk_bad_static_operands():
    with pytest.raises(ValueError, match=r"TopK\(k=-1\): k must be non-negative"):
        TopK(-1)
    # int() and bool() took these silently: TopK(2.5) was TopK(2), TopK(1, "no") largest.
    for bad, match in (((2.5,), "k=2.5"), ((True,), "k=True"), ((1, "no"), "largest='no'")):
        with pytest.raises(TypeError, match=match) as info:
            TopK(*bad)
        assert "TopK" in str(info.value)


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("op, x, match", [
    (TopK(5), np.zeros((3, 4), np.float32), "k=5 exceeds the last dimension's size 4"),
    (TopK(0), np.float32(1), "rank at least 1"),
    (TopK(1), np.zeros((3, 4), np.complex64), "XLA cannot compile a topk of complex"),
    (TopK(1), np.zeros((3, 4), np.complex128), "XLA cannot compile a topk of complex"),
])
def test_topk_bad_operands(op, x, match, staged):
    a = hd.array(x)
    f = hd.compile(lambda v: op(v)) if staged else (lambda v: op(v))
    with pytest.raises(hd.ShapeError, match=match) as info:
        f(a)
    assert repr(op) in str(info.value) and str(a.type) in str(info.value)
