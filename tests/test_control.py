"""Control-flow combinators (hd.cond, switch, while_loop, fori_loop, scan) against oracles.

Every combinator runs eagerly and under ``hd.compile`` on hypothesis-drawn
arrays and is checked against a plain Python reference (on numpy arrays) and
against its ``jax.lax`` twin: the functions given to the combinators use
operators only, so the very same Python functions are staged by hlodsl and
traced by jax. Integer results must match exactly, floats within a per-dtype
tolerance (loops accumulate a few roundings; XLA may fuse differently).
Also: nested structures, closures over symbolic values of the enclosing
program (passed to the ops as extra operands), nesting, a module size that
does not grow with the trip count, and the errors.
"""

from __future__ import annotations

import re
from collections import namedtuple

import attrs
import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from jax import lax

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.transforms import control, eager

DTYPES = [np.float32, np.float64, np.int32, np.int64]
TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}
SETTINGS = settings(max_examples=8, deadline=None)
shapes = hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4)


@st.composite
def arrays(draw, n: int, dtype=None, shape=None):
    """``n`` numpy arrays of one drawn dtype and shape: small integers or floats."""
    dtype = np.dtype(dtype or draw(st.sampled_from(DTYPES)))
    shape = draw(shapes) if shape is None else shape
    elements = st.integers(-20, 20) if dtype.kind == "i" else \
        st.floats(-4, 4, width=dtype.itemsize * 8)
    return [draw(hnp.arrays(dtype, shape, elements=elements)) for _ in range(n)]


def host(tree):
    """hlodsl / jax arrays in a structure -> numpy arrays, structure kept (dicts by key)."""
    if isinstance(tree, dict):
        return {k: host(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(host(v) for v in tree) if not hasattr(tree, "_fields") else \
            type(tree)(*(host(v) for v in tree))
    if attrs.has(type(tree)):
        return attrs.evolve(tree, **{f.name: host(getattr(tree, f.name))
                                     for f in attrs.fields(type(tree))})
    return np.asarray(tree)


def same(got, want):
    """Same structure; every leaf the same dtype and shape; exact ints, floats within TOL."""
    got, want = host(got), host(want)
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), (got, want)
        for k in want:
            same(got[k], want[k])
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            same(g, w)
    elif attrs.has(type(want)):
        assert type(got) is type(want)
        for f in attrs.fields(type(want)):
            same(getattr(got, f.name), getattr(want, f.name))
    else:
        assert (got.dtype, got.shape) == (want.dtype, want.shape), (got, want)
        if got.dtype in TOL:
            np.testing.assert_allclose(got, want, rtol=TOL[got.dtype], atol=TOL[got.dtype])
        else:
            np.testing.assert_array_equal(got, want)


def hd_tree(tree):
    """numpy leaves -> hlodsl arrays, structure kept."""
    return jax.tree_util.tree_map(hd.array, tree)


# -- functions staged by hlodsl and traced by jax alike -------------------------------


def mix(a, b):
    return {"sum": a + b, "pair": (a * b, a)}


def unmix(a, b):
    return {"sum": a - b, "pair": (b, b * 2)}


BRANCHES = [lambda a, b: a + b, lambda a, b: a * b - a, lambda a, b: b, lambda a, b: -a]


class Carry(namedtuple("Carry", "k acc")):
    """A namedtuple carry: an int32 counter and an accumulator."""


@attrs.frozen
class State:
    x: object
    steps: object


def while_cond(s):
    return s["i"] < s["n"]


def while_body(s):
    return {"i": s["i"] + 1, "n": s["n"], "x": s["x"] * 2 - s["i"].astype(s["x"].dtype)}


def fori_body(i, c):
    return Carry(c.k + i, c.acc * 2 + c.k.astype(c.acc.dtype))


def scan_f(c, x):
    a, b = x
    new = {"acc": c["acc"] + a * b, "k": c["k"] + 1}
    return new, (c["acc"] - b, a)


# Compiled once, so hypothesis examples of one signature reuse the executable.
COND = hd.compile(lambda p, a, b: hd.cond(p, mix, unmix, a, b))
SWITCH = hd.compile(lambda i, a, b, n: hd.switch(i, BRANCHES[:n], a, b))
WHILE = hd.compile(lambda s: hd.while_loop(while_cond, while_body, s))
FORI = hd.compile(lambda lo, hi, c: hd.fori_loop(lo, hi, fori_body, c))
SCAN = hd.compile(lambda c, xs, reverse: hd.scan(scan_f, c, xs, reverse=reverse))


# -- cond and switch ------------------------------------------------------------------


@SETTINGS
@given(arrays(2), st.booleans())
def test_cond_matches_python_and_lax_cond_on_nested_results(ab, p):
    a, b = ab
    want = (mix if p else unmix)(a, b)
    P, A, B = hd.array(np.bool_(p)), hd.array(a), hd.array(b)
    same(hd.cond(P, mix, unmix, A, B), want)
    same(COND(P, A, B), want)
    same(lax.cond(p, mix, unmix, a, b), want)


@SETTINGS
@given(arrays(2), st.integers(1, 4), st.data())
def test_switch_clamps_the_index_like_lax_switch(ab, n, data):
    a, b = ab
    index = data.draw(st.integers(-3, n + 2), label="index")
    want = BRANCHES[min(max(index, 0), n - 1)](a, b)
    I, A, B = hd.array(np.int32(index)), hd.array(a), hd.array(b)
    same(hd.switch(I, BRANCHES[:n], A, B), want)
    same(SWITCH(I, A, B, n), want)
    same(lax.switch(index, BRANCHES[:n], a, b), want)


def test_switch_takes_any_integer_index_and_clamps_before_narrowing():
    a, b = np.int64([1, 2]), np.int64([10, 20])
    A, B = hd.array(a), hd.array(b)
    # 2**32 would wrap to 0 if narrowed to int32 before clamping
    for index, k in [(np.uint8(200), 2), (np.int64(2**32), 2), (np.int64(-2**40), 0),
                     (np.int16(1), 1)]:
        want = BRANCHES[k](a, b)
        same(hd.switch(hd.array(index), BRANCHES[:3], A, B), want)
        same(hd.compile(lambda i, a, b: hd.switch(i, BRANCHES[:3], a, b))(
            hd.array(index), A, B), want)


def test_static_predicate_and_index_just_call_the_branch():
    calls = []

    def branch(tag):
        return lambda: calls.append(tag) or tag

    assert hd.cond(True, branch("t"), branch("f")) == "t"
    assert hd.cond(np.bool_(False), branch("t"), branch("f")) == "f"
    assert hd.switch(7, [branch(0), branch(1)]) == 1
    assert hd.switch(-1, [branch(0), branch(1)]) == 0
    assert calls == ["t", "f", 1, 0]


def test_cond_with_no_operands_and_only_constants_runs_a_conditional():
    one, two = hd.array(np.float32([1, 1])), hd.array(np.float32([2, 2]))
    f = hd.compile(lambda p: hd.cond(p, lambda: one, lambda: two))
    for p, want in [(True, one), (False, two)]:
        same(f(hd.array(p)), want)
        same(hd.cond(hd.array(p), lambda: one, lambda: two), want)
    assert "conditional(" in hd.code_hlo(f.fn, hd.array(True))


def test_structures_without_arrays_pass_through():
    p = hd.array(True)
    assert hd.cond(p, lambda: None, lambda: None) is None
    assert hd.compile(lambda p: (hd.cond(p, lambda: None, lambda: None), p))(p)[0] is None
    x = hd.array(np.float32([1, 2]))
    out = hd.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, None, s[2] * 2),
                        (hd.array(np.int32(0)), None, x))
    same(out[0], np.int32(3))
    assert out[1] is None
    same(out[2], np.float32([8, 16]))
    assert hd.fori_loop(0, 3, lambda i, c: c, {}) == {}


def test_python_scalars_in_operands_and_results_are_lifted():
    x = hd.array(np.float64([1, 2]))
    got = hd.cond(hd.array(True), lambda v, k: (v * k, 1.0), lambda v, k: (v, 2.0), x, 3.0)
    same(got, (np.float64([3, 6]), np.float64(1.0)))


# -- while_loop and fori_loop ---------------------------------------------------------


def python_while(s):
    s = dict(s)
    while s["i"] < s["n"]:
        s = while_body(s)
    return s


@SETTINGS
@given(arrays(1), st.integers(-2, 6))
def test_while_loop_matches_a_python_loop_and_lax_while_loop(x, n):
    (x,) = x
    init = {"i": np.int32(0), "n": np.int32(n), "x": x}
    want = python_while({k: np.asarray(v) for k, v in init.items()})
    H = hd_tree(init)
    same(hd.while_loop(while_cond, while_body, H), want)
    same(WHILE(H), want)
    same(lax.while_loop(while_cond, while_body, init), want)


def python_fori(lo, hi, c):
    for i in range(lo, hi):
        c = fori_body(np.int32(i), c)
    return c


@SETTINGS
@given(arrays(1), st.integers(-3, 3), st.integers(-3, 6), st.booleans())
def test_fori_loop_static_and_dynamic_bounds_match_python_and_lax(acc, lo, hi, dynamic):
    (acc,) = acc
    init = Carry(np.int32(1), acc)
    want = python_fori(lo, hi, Carry(*map(np.asarray, init)))
    H = hd_tree(init)
    bounds = (hd.array(np.int32(lo)), hd.array(np.int32(hi))) if dynamic else (lo, hi)
    same(hd.fori_loop(*bounds, fori_body, H), want)
    same(FORI(*bounds, H), want)
    same(lax.fori_loop(np.int32(lo), np.int32(hi), fori_body, init), want)


def test_fori_loop_mixed_bounds_take_the_array_bounds_type():
    seen = []

    def body(i, c):
        seen.append(i.dtype)
        return c + i

    zero = hd.array(np.int64(0))
    same(hd.fori_loop(2, hd.array(np.int64(5)), body, zero), np.int64(2 + 3 + 4))
    same(hd.fori_loop(hd.array(np.int64(-2)), 1, body, zero), np.int64(-2 - 1 + 0))
    assert set(seen) == {hd.int64}
    same(hd.fori_loop(0, 4, lambda i, c: c + i, hd.array(np.int32(0))), np.int32(6))


def test_fori_loop_static_bounds_go_through_the_one_scan_implementation(monkeypatch):
    lengths = []
    impl = control._scan_impl

    def spy(f, init, xs, length, reverse):
        lengths.append(length)
        return impl(f, init, xs, length, reverse)

    monkeypatch.setattr(control, "_scan_impl", spy)
    x = hd.array(np.float32(1))
    hd.fori_loop(3, 10, lambda i, c: c * 2, x)
    hd.fori_loop(5, 1, lambda i, c: c * 2, x)
    hd.scan(lambda c, _: (c, None), x, length=4)
    hd.fori_loop(hd.array(np.int32(0)), 3, lambda i, c: c * 2, x)  # dynamic: a while loop
    assert lengths == [7, 0, 4]


# -- scan -----------------------------------------------------------------------------


def python_scan(f, c, xs, length, reverse):
    ys = [None] * length
    for k in (reversed(range(length)) if reverse else range(length)):
        c, ys[k] = f(c, jax.tree_util.tree_map(lambda a: a[k], xs))
    stacked = jax.tree_util.tree_map(lambda *ys: np.stack(ys), *ys)
    return c, stacked


@SETTINGS
@given(arrays(3), st.integers(1, 5), st.booleans())
def test_scan_matches_python_and_lax_scan(abc, length, reverse):
    a, b, acc = abc
    xs = (np.stack([a] * length) + np.arange(length, dtype=a.dtype).reshape(
        (length,) + (1,) * a.ndim), np.stack([b] * length))
    init = {"acc": acc, "k": np.int32(0)}
    want = python_scan(scan_f, {k: np.asarray(v) for k, v in init.items()}, xs, length,
                       reverse)
    H, HX = hd_tree(init), hd_tree(xs)
    same(hd.scan(scan_f, H, HX, reverse=reverse), want)
    same(SCAN(H, HX, reverse), want)
    same(lax.scan(scan_f, init, xs, reverse=reverse), want)


def test_scan_without_xs_takes_length_and_zero_length_returns_init():
    x = hd.array(np.float32([1, 2]))

    def double(c, _):
        return c * 2, c

    carry, ys = hd.scan(double, x, None, length=3)
    same((carry, ys), (np.float32([8, 16]), np.float32([[1, 2], [2, 4], [4, 8]])))
    same(hd.compile(lambda x: hd.scan(double, x, length=3))(x), (carry, ys))
    empty = hd.scan(double, x, hd.array(np.zeros((0, 5), np.float32)))
    same(empty, (np.float32([1, 2]), np.zeros((0, 2), np.float32)))
    same(hd.compile(lambda x: hd.scan(double, x, length=0))(x), empty)


def test_scan_carry_may_be_an_attrs_instance_and_ys_none():
    def step(s, x):
        return State(s.x + x, s.steps + 1), None

    xs = hd.array(np.float32([[1, 2], [3, 4], [5, 6]]))
    init = State(hd.array(np.float32([0, 0])), hd.array(np.int32(0)))
    for got in (hd.scan(step, init, xs), hd.compile(lambda s, xs: hd.scan(step, s, xs))(init, xs)):
        same(got[0], State(np.float32([9, 12]), np.int32(3)))
        assert got[1] is None


# -- closures over symbolic values, nesting --------------------------------------------


def test_closures_over_symbolic_values_become_operands():
    x = np.float32([1, 2, 3])

    def program(p, x, n):
        s = xp.sum(x)  # symbolic in the enclosing program, used by every function below
        c = hd.cond(p, lambda: x + s, lambda: x * s)
        w = hd.while_loop(lambda k: k < n + s.astype(hd.int32), lambda k: k + 1, n)
        f = hd.fori_loop(0, 3, lambda i, y: y + s, x)
        _, ys = hd.scan(lambda c, v: (c, v * s), s, x)
        returned = hd.cond(p, lambda: s, lambda: -s)  # a captured array returned as is
        return c, w, f, ys, returned

    want = lambda p: (x + 6 if p else x * 6, np.int32(2 + 6), x + 18, x * 6,  # noqa: E731
                      np.float32(6 if p else -6))
    run = hd.compile(program)
    for p in (True, False):
        args = (hd.array(p), hd.array(x), hd.array(np.int32(2)))
        same(run(*args), want(p))
        same(program(*args), want(p))  # eagerly the closures hold concrete arrays
    text = hd.code_hlo(program, *args)
    assert "conditional(" in text and "while(" in text


def test_nested_combinators_capture_through_every_level():
    def program(x, n):
        s = xp.sum(x)

        def outer(i, acc):
            def inner(k, a):  # captures s (two levels up) and i (one level up)
                return hd.cond(k % 2 == 0, lambda: a + s, lambda: a - i.astype(a.dtype))
            return hd.fori_loop(0, n, inner, acc)
        return hd.fori_loop(0, 3, outer, x)

    def reference(x, n):
        s, acc = x.sum(), x.copy()
        for i in range(3):
            for k in range(n):
                acc = acc + s if k % 2 == 0 else acc - np.float32(i)
        return acc

    x = np.float32([1, -2, 0.5])
    for n in (0, 3, 4):
        want = reference(x, n)
        same(hd.compile(program)(hd.array(x), hd.array(np.int32(n))), want)
        same(program(hd.array(x), hd.array(np.int32(n))), want)


def test_eager_calls_compile_once_per_module_text():
    x = hd.array(np.float32([1, 2]))

    def body(i, y):
        return y * 2

    def made():  # modules put in the bounded cache so far (a full cache evicts one per put)
        return len(eager._EXECUTABLES) + eager._EXECUTABLES.evictions

    hd.fori_loop(0, 5, body, x)
    before = made()
    same(hd.fori_loop(0, 5, body, x), np.float32([32, 64]))
    assert made() == before
    same(hd.fori_loop(0, 6, body, x), np.float32([64, 128]))  # a new trip count: new text
    assert made() == before + 1


def test_module_size_does_not_depend_on_the_trip_count():
    x = hd.array(np.linspace(0, 1, 1000, dtype=np.float32))

    def instructions(n, **kwargs):
        text = hd.code_hlo(lambda x: hd.fori_loop(0, n, lambda i, y: y * 0.9 + xp.sin(y) * 0.1,
                                                   x), x)
        return len(re.findall(r"^\s*(?:ROOT )?\S+ = ", text, flags=re.MULTILINE))

    assert instructions(10) == instructions(1000) == instructions(100_000)


# -- errors ---------------------------------------------------------------------------


def raises_eager_and_staged(fn, args, error, *fragments):
    for run in (fn, hd.compile(fn)):
        with pytest.raises(error) as info:
            run(*args)
        for fragment in fragments:
            assert fragment in str(info.value), (fragment, str(info.value))


X = hd.array(np.float32([1, 2]))
P = hd.array(True)


def test_branches_returning_different_types_name_both():
    raises_eager_and_staged(lambda p, x: hd.cond(p, lambda: x, lambda: x.astype(hd.float64)),
                            (P, X), TypeError, "cond", "true_fn returns f32[2]",
                            "false_fn returns f64[2]")
    raises_eager_and_staged(lambda p, x: hd.cond(p, lambda: (x, x), lambda: [x, x]),
                            (P, X), hd.ShapeError, "(f32[2], f32[2])", "[f32[2], f32[2]]")
    raises_eager_and_staged(
        lambda i, x: hd.switch(i, [lambda: x, lambda: x, lambda: x[:1]]),
        (hd.array(np.int32(0)), X), hd.ShapeError, "branches[0] returns f32[2]",
        "branches[2] returns f32[1]")


def test_a_bad_predicate_or_index_is_rejected():
    raises_eager_and_staged(lambda x: hd.cond(x > 0, lambda: x, lambda: x), (X,),
                            hd.ShapeError, "pred[] (bool scalar)", "pred[2]")
    raises_eager_and_staged(lambda x: hd.cond(x[0], lambda: x, lambda: x), (X,),
                            hd.ShapeError, "got f32[]")
    with pytest.raises(TypeError, match="cond: the predicate must be a bool scalar array or "
                                        "a Python bool, got int"):
        hd.cond(1, lambda: X, lambda: X)
    raises_eager_and_staged(lambda x: hd.switch(x[0], [lambda: x]), (X,), hd.ShapeError,
                            "switch: the index must be an integer scalar array, got f32[]")
    with pytest.raises(ValueError, match="at least one branch"):
        hd.switch(0, [])
    with pytest.raises(TypeError, match="false_fn must be a function, got int"):
        hd.cond(P, lambda: X, 3)


def test_a_loop_body_changing_a_leaf_names_the_leaf_and_both_types():
    raises_eager_and_staged(
        lambda x: hd.while_loop(lambda s: s["n"] < 3,
                                lambda s: {"n": s["n"] + 1, "x": xp.concat([s["x"], s["x"]])},
                                {"n": hd.array(np.int32(0)), "x": x}),
        (X,), hd.ShapeError, "while_loop: body_fn must keep the type",
        "init['x'] is f32[2] in init but f32[4]")
    raises_eager_and_staged(lambda x: hd.fori_loop(0, 3, lambda i, c: (c[0], c[1] * 1.5),
                                                   (x, hd.array(np.int32(1)))),
                            (X,), hd.ShapeError, "fori_loop: body_fn", "init[1] is s32[]",
                            "f64[]")
    raises_eager_and_staged(lambda x: hd.fori_loop(hd.array(np.int32(0)), 3,
                                                   lambda i, c: (c,), x),
                            (X,), hd.ShapeError, "fori_loop: body_fn must return the "
                            "structure of init f32[2], it returns (f32[2],)")
    raises_eager_and_staged(lambda x: hd.scan(lambda c, v: (c[:1], v), x, x),
                            (X,), hd.ShapeError, "scan: f must keep", "init is f32[2]")


def test_loop_function_errors():
    raises_eager_and_staged(lambda x: hd.while_loop(lambda s: s, lambda s: s, x), (X,),
                            hd.ShapeError, "cond_fn must return a pred[]", "returns f32[2]")
    raises_eager_and_staged(lambda x: hd.scan(lambda c, v: c, x, x), (X,), hd.ShapeError,
                            "scan: f must return a pair (carry, y), it returns f32[2]")
    raises_eager_and_staged(lambda x: hd.scan(lambda c, v: (c, v), x, (x, x[:1])), (X,),
                            hd.ShapeError, "one leading size", "xs[0]: f32[2], xs[1]: f32[1]")
    raises_eager_and_staged(lambda x: hd.scan(lambda c, v: (c, v), x, x[0]), (X,),
                            hd.ShapeError, "needs a leading axis", "xs is f32[]")
    raises_eager_and_staged(lambda x: hd.scan(lambda c, v: (c, v), x, x, length=3), (X,),
                            ValueError, "length=3 but the arrays in xs have leading size 2")
    with pytest.raises(ValueError, match="give xs with at least one array, or length"):
        hd.scan(lambda c, v: (c, v), X)
    with pytest.raises(ValueError, match="length must be a non-negative Python int"):
        hd.scan(lambda c, v: (c, v), X, length=-1)
    with pytest.raises(TypeError, match="fori_loop: upper must be an int or an integer scalar "
                                        "array, got float"):
        hd.fori_loop(hd.array(np.int32(0)), 2.5, lambda i, c: c, X)
    with pytest.raises(hd.ShapeError, match="one element type, got s32\\[\\] and s64\\[\\]"):
        hd.fori_loop(hd.array(np.int32(0)), hd.array(np.int64(3)), lambda i, c: c, X)


def test_errors_point_at_the_users_line():
    with pytest.raises(hd.ShapeError) as info:
        hd.compile(lambda p, x: hd.cond(p, lambda: x, lambda: x[:1]))(P, X)
    assert f"{__file__}:" in str(info.value)


def test_a_function_capturing_an_escaped_symbolic_array_is_an_error():
    leaked = []
    hd.compile(lambda x: leaked.append(x) or x)(X)
    with pytest.raises(hd.StagingError, match="escaped"):
        hd.compile(lambda p: hd.cond(p, lambda: leaked[0], lambda: leaked[0]))(P)


@pytest.mark.parametrize("make, derivative", [
    (lambda x: hd.cond(hd.array(True), lambda: x * x, lambda: x), lambda x: 2 * x),
    (lambda x: hd.fori_loop(0, 2, lambda i, y: y * x, x), lambda x: 3 * x**2),
    (lambda x: hd.scan(lambda c, v: (c * v, c), x, xp.stack([x, x]))[0], lambda x: 3 * x**2),
    (lambda x: hd.switch(hd.array(np.int32(1)), [lambda v: v * x, lambda v: v + x * x], x),
     lambda x: 1 + 2 * x),
], ids=["cond", "fori_loop", "scan", "switch"])
def test_reverse_derivatives_see_the_control_flow_and_its_closures(make, derivative):
    # The closures over x must reach the derivative, eagerly and staged: a
    # derivative that misses them would be silently wrong (zero here).
    x = np.float32([1.5, -2])
    f = lambda x: xp.sum(make(x))  # noqa: E731
    for g in (hd.grad(f), hd.compile(hd.grad(f))):
        same(g(hd.array(x)), derivative(x))


@pytest.mark.parametrize("make", [
    lambda x: hd.cond(hd.array(True), lambda: x * x * x, lambda: x),
    lambda x: hd.fori_loop(0, 2, lambda i, y: y * x, x),
    lambda x: hd.fori_loop(0, hd.array(np.int32(2)), lambda i, y: y * x, x),
    lambda x: hd.scan(lambda c, v: (c * v, c), x, xp.stack([x, x]))[0],
    lambda x: hd.scan(lambda c, _: (c * x, c), x, length=2)[0],
], ids=["cond", "fori_loop", "fori_loop_dynamic", "scan", "scan_closure"])
def test_forward_derivatives_follow_the_closures(make):
    # x**3 in every case, mostly with factors reaching the body by closure.
    x, t = np.float32([1.5, -2]), np.float32([1, 0.5])
    f = lambda x: make(x)  # noqa: E731
    run = hd.compile(lambda x, t: hd.jvp(f, (x,), (t,)))
    for got in (hd.jvp(f, (hd.array(x),), (hd.array(t),)), run(hd.array(x), hd.array(t))):
        same(got, (x**3, 3 * x**2 * t))
