"""Control flow and escape hatches against jax.lax and plain Python loops.

Conditional (predicate and indexed forms), While, Call, OptimizationBarrier,
AfterAll and CustomCall. Each op runs eagerly and under ``hd.compile`` on
hypothesis-drawn shapes and element types; branch, loop and called functions
are written with operators only, so the very same Python functions are
staged by hlodsl and traced by jax (the oracle: lax.cond, lax.switch,
lax.while_loop, lax.fori_loop, lax.optimization_barrier, jnp.linalg.cholesky).
Integer results must match exactly; float results within the stated
per-dtype tolerance (both sides are XLA CPU programs, but fusion may differ).
CustomCall calls jaxlib's LAPACK target ``lapack_?potrf_ffi`` and is checked
against numpy's Cholesky.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import jaxlib.xla_client as xc
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from jax import lax

import hlodsl as hd
from hlodsl import ops, runtime
from hlodsl.ops.custom_call import is_known_target
from hlodsl.runtime import compile_hlo
from hlodsl.arrays.types import ArrayType, TokenType, TupleType

COVERED_OPCODES = {"conditional", "while", "call", "custom-call", "opt-barrier", "after-all"}

DTYPES = [np.float32, np.float64, np.int32, np.int64]
TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}
SETTINGS = settings(max_examples=10, deadline=None)
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)


@st.composite
def arrays(draw, n: int, dtype=None, shape=None):
    """``n`` arrays of one drawn dtype and shape: small integers or floats."""
    dtype = np.dtype(dtype or draw(st.sampled_from(DTYPES)))
    shape = draw(shapes) if shape is None else shape
    if dtype.kind == "i":
        elements = st.integers(-50, 50)
    else:
        elements = st.floats(-4, 4, width=dtype.itemsize * 8)
    return [draw(hnp.arrays(dtype, shape, elements=elements)) for _ in range(n)]


def same(got, want):
    """Same dtype and shape; exact for integers, within ``TOL`` for floats."""
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (got.dtype, want.dtype)
    if got.dtype in TOL:
        np.testing.assert_allclose(got, want, rtol=TOL[got.dtype], atol=TOL[got.dtype])
    else:
        np.testing.assert_array_equal(got, want)


def leaves(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def check(results, want, expect_type):
    """Each result has ``expect_type`` (the op's shape rule) and equals ``want``."""
    types = expect_type.elements if isinstance(expect_type, TupleType) else (expect_type,)
    for got in results:
        assert tuple(g.type for g in leaves(got)) == tuple(types)
        for g, w in zip(leaves(got), leaves(want), strict=True):
            same(g, w)


def instructions(hlo: str) -> int:
    return len(re.findall(r"^\s*(?:ROOT )?\S+ = ", hlo, flags=re.MULTILINE))


# -- the functions staged by hlodsl and traced by jax alike ------------------------------


def scale(x):
    return x * 3 - 1


def mix(xy):
    return xy[0] * xy[1] + xy[0]


def negate_first(t):
    return -t[0]


def square(x):
    return x * x


def difference_and_sum(xy):
    return xy[0] - xy[1], xy[0] + xy[1]


def swap(xy):
    return xy[1], xy[0]


# -- Conditional ----------------------------------------------------------------------


@SETTINGS
@given(arrays(3), st.booleans())
def test_conditional_predicate_form_with_a_tuple_operand_matches_lax_cond(abc, p):
    a, b, c = abc
    op = ops.Conditional(mix, scale)
    want = lax.cond(p, lambda o: mix(o[0]), lambda o: scale(o[1]), ((a, b), c))
    P, A, B, C = hd.array(np.bool_(p)), hd.array(a), hd.array(b), hd.array(c)
    expect = ops.Conditional(mix, scale, operand_sizes=(2, None)).result_type(
        P.type, A.type, B.type, C.type)
    eager = op(P, (A, B), C)
    staged = hd.compile(lambda p, a, b, c: op(p, (a, b), c))(P, A, B, C)
    check([eager, staged], want, expect)


@SETTINGS
@given(arrays(2), st.booleans())
def test_conditional_branches_returning_tuples_match_lax_cond(ab, p):
    op = ops.Conditional(difference_and_sum, swap)
    want = lax.cond(p, difference_and_sum, swap, tuple(ab))
    P, A, B = hd.array(np.bool_(p)), *map(hd.array, ab)
    expect = op.result_type(P.type, TupleType((A.type, B.type)), TupleType((A.type, B.type)))
    assert expect == TupleType((A.type, A.type))
    eager = op(P, (A, B), (A, B))
    staged = hd.compile(lambda p, a, b: op(p, (a, b), (a, b)))(P, A, B)
    check([eager, staged], want, expect)


# Indexed form: branch i gets its own operand, an array or a tuple of arrays.
BRANCHES = [(scale, lambda a, b: a), (mix, lambda a, b: (a, b)),
            (negate_first, lambda a, b: (b,)), (square, lambda a, b: b)]


@SETTINGS
@given(arrays(2), st.integers(1, 4), st.data())
def test_conditional_indexed_form_matches_lax_switch_and_runs_the_last_branch_out_of_range(
        ab, n, data):
    index = data.draw(st.integers(-3, n + 2), label="index")
    fns, operand_of = zip(*BRANCHES[:n])
    op = ops.Conditional(branch_computations=fns)
    # XLA runs the last branch for an index outside [0, n); lax.switch clamps instead.
    k = index if 0 <= index < n else n - 1
    want = lax.switch(k, [lambda o, i=i: fns[i](o[i]) for i in range(n)],
                      [f(*ab) for f in operand_of])
    I, A, B = hd.array(np.int32(index)), *map(hd.array, ab)
    hd_operands = [f(A, B) for f in operand_of]
    eager = op(I, *hd_operands)
    staged = hd.compile(lambda i, a, b: op(i, *[f(a, b) for f in operand_of]))(I, A, B)
    flat = [x.type for o in hd_operands for x in leaves(o)]
    sizes = tuple(len(o) if isinstance(o, tuple) else None for o in hd_operands)
    expect = ops.Conditional(branch_computations=fns, operand_sizes=sizes).result_type(
        I.type, *flat)
    check([eager, staged], want, expect)


def test_conditional_out_of_range_index_runs_the_last_branch():
    x = np.int32([1, -2, 3])
    op = ops.Conditional(branch_computations=(scale, square, negate_first))
    run = hd.compile(lambda i, x: op(i, x, x, (x,)))
    for index, want in [(0, scale(x)), (1, square(x)), (2, -x), (3, -x), (-1, -x),
                        (-(2**31), -x), (2**31 - 1, -x)]:
        I = hd.array(np.int32(index))
        same(op(I, hd.array(x), hd.array(x), (hd.array(x),)), want)
        same(run(I, hd.array(x)), want)


def test_conditional_emits_the_hlo_forms():
    x, p, i = hd.array(np.float32([1, 2])), hd.array(np.bool_(True)), hd.array(np.int32(1))
    text = hd.code_hlo(lambda p, x: ops.Conditional(scale, mix)(p, x, (x, x)), p, x)
    assert re.search(r"conditional\(p, x, tuple\.\d+\), true_computation=scale, "
                     r"false_computation=mix", text)
    text = hd.code_hlo(lambda i, x: ops.Conditional(branch_computations=(scale, square))(
        i, x, x), i, x)
    assert "conditional(i, x, x), branch_computations={scale, square}" in text


def test_conditional_bad_static_operands_fail_at_construction():
    for kwargs in [{}, {"true_computation": scale},
                   {"true_computation": scale, "false_computation": square,
                    "branch_computations": (scale,)},
                   {"branch_computations": ()},
                   {"true_computation": scale, "false_computation": square,
                    "operand_sizes": (None,)},
                   {"branch_computations": (scale,), "operand_sizes": (-1,)}]:
        with pytest.raises(ValueError, match="Conditional"):
            ops.Conditional(**kwargs)
    # A computation that is not callable is the wrong type of static operand.
    for kwargs, field in [({"true_computation": scale, "false_computation": 3},
                           "false_computation"),
                          ({"branch_computations": (scale, "square")}, "branch_computations")]:
        with pytest.raises(TypeError, match=f"Conditional: static operand {field}=.*callable"):
            ops.Conditional(**kwargs)


def _raises_eager_and_staged(op_call, args, *fragments):
    for run in (op_call, hd.compile(op_call)):
        with pytest.raises(hd.ShapeError) as e:
            run(*args)
        for fragment in fragments:
            assert fragment in str(e.value), (fragment, str(e.value))


def test_conditional_shape_errors_name_the_op_the_types_and_the_constraint():
    x = hd.array(np.ones((3, 4), np.float32))
    y = hd.array(np.ones(4, np.float32))
    p, i, i64 = hd.array(np.bool_(True)), hd.array(np.int32(0)), hd.array(np.int64(0))
    pair = ops.Conditional(scale, square)
    _raises_eager_and_staged(lambda i, x: pair(i, x, x), (i, x),
                             "Conditional(true_computation=scale", "(s32[], f32[3,4], f32[3,4])",
                             "predicate must be a pred[]")
    indexed = ops.Conditional(branch_computations=(scale, square))
    for sel in (p, i64):
        _raises_eager_and_staged(lambda s, x: indexed(s, x, x), (sel, x),
                                 "branch index must be a s32[]", str(sel.type))
    _raises_eager_and_staged(lambda p, x, y: pair(p, x, y), (p, x, y),
                             "f32[3,4], f32[4]", "all branches must return the same type",
                             "true_computation returns f32[3,4], false_computation returns f32[4]")
    _raises_eager_and_staged(lambda p, x: pair(p, x), (p, x),
                             "(pred[], f32[3,4])", "2 branches need one operand each")
    _raises_eager_and_staged(lambda p, x, y: pair(p, (x, y), (x, y), x), (p, x, y),
                             "(pred[], (f32[3,4], f32[4]), (f32[3,4], f32[4]), f32[3,4])",
                             "2 branches need one operand each")
    _raises_eager_and_staged(lambda p, x, y: ops.Conditional(scale, mix)(p, x, (y, y)),
                             (p, x, y), "(pred[], f32[3,4], (f32[4], f32[4]))",
                             "true_computation returns f32[3,4], false_computation returns f32[4]")


# -- While --------------------------------------------------------------------------


def below_limit(s):
    return s[0] < s[1]


def step(s):
    return s[0] + 1, s[1], s[2] * 2 - 1


@SETTINGS
@given(arrays(1), st.integers(0, 20))
def test_while_counted_loop_matches_lax_while_fori_and_a_python_loop(xs, n):
    x = xs[0]
    init = (np.int32(0), np.int32(n), x)
    want = lax.while_loop(below_limit, step, init)
    fori = lax.fori_loop(0, n, lambda i, x: x * 2 - 1, x)
    py = x
    for _ in range(n):
        py = py * 2 - 1
    same(want[2], fori)
    same(want[2], py)
    state = tuple(map(hd.array, init))
    op = ops.While(below_limit, step)
    expect = op.result_type(*(s.type for s in state))
    assert expect == TupleType(tuple(s.type for s in state))
    eager = op(*state)
    staged = hd.compile(lambda *s: op(s))(*state)
    check([eager, staged], want, expect)


def sum_below(s):
    return s[0].sum() < s[1]


def grow(s):
    return s[0] * 2 + 1, s[1]


@SETTINGS
@given(st.integers(1, 5).flatmap(lambda k: hnp.arrays(np.int64, k, elements=st.integers(0, 9))),
       st.integers(0, 10_000))
def test_while_data_dependent_loop_matches_lax_while_loop(x, limit):
    init = (x, np.int64(limit))
    want = lax.while_loop(sum_below, grow, init)
    py = x
    while py.sum() < limit:
        py = py * 2 + 1
    same(want[0], py)
    state = tuple(map(hd.array, init))
    op = ops.While(sum_below, grow)
    staged = hd.compile(lambda x, limit: op(x, limit))(*state)
    check([op(*state), staged], want, op.result_type(*(s.type for s in state)))


def halve_until_small(s):
    return s[0].max() > 1


def halve(s):
    return s[0] / 2  # one array: staged as a 1-tuple (tuple_result=True)


def test_while_with_a_one_element_state_returns_a_one_tuple():
    x = np.float64([100, 3, 40])
    (want,) = lax.while_loop(halve_until_small, lambda s: (halve(s),), (x,))
    for run in (ops.While(halve_until_small, halve),
                hd.compile(lambda x: ops.While(halve_until_small, halve)(x))):
        (got,) = run(hd.array(x))
        same(got, want)


def counted_sum(n: int):
    """sum(range(n)) by a loop whose trip count ``n`` is a constant of the module."""
    def f(x):
        cond = lambda s: s[0] < n  # noqa: E731
        body = lambda s: (s[0] + 1, s[1] + s[0].astype(hd.int64))  # noqa: E731
        return ops.While(cond, body)(hd.array(np.int32(0)), x)[1]
    return f


def unrolled_sum(n: int):
    def f(x):
        for i in range(n):
            x = x + i
        return x
    return f


def test_while_module_size_does_not_depend_on_the_trip_count():
    x = hd.array(np.int64(0))
    sizes = {n: instructions(hd.code_hlo(counted_sum(n), x)) for n in (1, 10, 1000)}
    assert len(set(sizes.values())) == 1, sizes
    # The measure sees growth where there is some: a Python loop unrolls.
    assert instructions(hd.code_hlo(unrolled_sum(10), x)) > \
        instructions(hd.code_hlo(unrolled_sum(1), x))
    for n in (1, 10, 1000):
        assert int(hd.compile(counted_sum(n))(x)) == n * (n - 1) // 2
    assert "while(" in hd.code_hlo(counted_sum(1000), x)


def test_while_bad_static_operands_fail_at_construction():
    for args in [(1, step), (below_limit, "step")]:
        with pytest.raises(TypeError, match="While: static operand .*callable"):
            ops.While(*args)


def test_while_shape_errors_name_the_element_that_changed():
    i, n = hd.array(np.int32(0)), hd.array(np.int32(3))
    x = hd.array(np.ones((3, 4), np.float32))
    widen = ops.While(below_limit, lambda s: (s[0] + 1, s[1], s[2].astype(hd.float64)))
    _raises_eager_and_staged(lambda *s: widen(*s), (i, n, x), "While(condition=below_limit",
                             "(s32[], s32[], f32[3,4])",
                             "element 2 is f32[3,4] in the state but f64[3,4]")
    shrink = ops.While(below_limit, lambda s: (s[0] + 1, s[1]))
    _raises_eager_and_staged(lambda *s: shrink(*s), (i, n, x),
                             "the body must return the 3 elements of the state, it returns 2")
    not_pred = ops.While(lambda s: s[2], step)
    _raises_eager_and_staged(lambda *s: not_pred(*s), (i, n, x),
                             "the condition must return pred[], it returns f32[3,4]")
    not_scalar = ops.While(lambda s: s[2] > 0, step)
    _raises_eager_and_staged(lambda *s: not_scalar(*s), (i, n, x),
                             "the condition must return pred[], it returns pred[3,4]")
    with pytest.raises(hd.ShapeError, match="at least one element"):
        ops.While(below_limit, step)()


# -- Call ---------------------------------------------------------------------------


def axpy(a, x, y):
    return a * x + y


def moments(x, y):
    return x + y, x * y, (x - y).sum()


@SETTINGS
@given(arrays(3))
def test_call_matches_the_function_run_by_jax(xs):
    A = [hd.array(x) for x in xs]
    for fn in (axpy, moments):
        args, hd_args = xs[:fn.__code__.co_argcount], A[:fn.__code__.co_argcount]
        op = ops.Call(fn)
        want = jax.jit(fn)(*args)
        staged = hd.compile(lambda *a: op(*a))(*hd_args)
        check([op(*hd_args), staged], want, op.result_type(*(a.type for a in hd_args)))


def test_call_emits_a_call_and_nests():
    x = hd.array(np.float32([1, 2, 3]))

    def outer(x):
        return ops.Call(square)(ops.Call(scale)(x)) + 1

    text = hd.code_hlo(lambda x: ops.Call(outer)(x), x)
    assert re.search(r"call\(x\), to_apply=outer", text)
    assert "to_apply=scale" in text and "to_apply=square" in text
    same(hd.compile(lambda x: ops.Call(outer)(x))(x), scale(np.asarray(x)) ** 2 + 1)


def test_call_errors():
    with pytest.raises(TypeError, match="Call: static operand computation='axpy' .*callable"):
        ops.Call("axpy")
    x, y = hd.array(np.ones((3, 4), np.float32)), hd.array(np.ones(4, np.float32))
    add = ops.Call(lambda a, b: ops.Add()(a, b))
    _raises_eager_and_staged(lambda x, y: add(x, y), (x, y),
                             "Add() cannot be applied to (f32[3,4], f32[4])")
    with pytest.raises(TypeError, match="not an hlodsl Array"):
        ops.Call(mix)((x, y))


# -- OptimizationBarrier --------------------------------------------------------------


@SETTINGS
@given(st.lists(arrays(1), min_size=1, max_size=3))
def test_optimization_barrier_returns_its_operands_like_lax(groups):
    xs = [g[0] for g in groups]
    X = [hd.array(x) for x in xs]
    op = ops.OptimizationBarrier()
    want = lax.optimization_barrier(tuple(xs))
    expect = op.result_type(*(x.type for x in X))
    staged = hd.compile(lambda *xs: op(*xs))(*X)
    check([op(*X), op(tuple(X)), staged], want, expect)
    check([op(*X)], op.reference(*xs), expect)


def test_optimization_barrier_emits_one_tuple_operand_and_needs_an_operand():
    x = hd.array(np.float32([1, 2]))
    text = hd.code_hlo(lambda x: ops.OptimizationBarrier()(x * 2, x)[0] + 1, x)
    assert re.search(r"= \(f32\[2\], f32\[2\]\) opt-barrier\(tuple\.\d+\)", text)
    same(hd.compile(lambda x: ops.OptimizationBarrier()(x * 2, x)[0] + 1)(x), np.float32([3, 5]))
    _raises_eager_and_staged(lambda: ops.OptimizationBarrier()(), (),
                             "OptimizationBarrier() cannot be applied to ()", "at least one")


# -- AfterAll -----------------------------------------------------------------------

# jax registers this typed-FFI target on CPU: a no-op that takes and returns a token.
SINK = ops.CustomCall("dce_sink", TokenType(), has_side_effect=True)


def ordered(x):
    start = ops.AfterAll()()
    first, second = SINK(start), SINK(start)
    done = ops.AfterAll()(first, second, start)
    return ops.OptimizationBarrier()(x, done)[0] * 2


def test_after_all_joins_tokens_in_a_compiled_program_with_token_custom_calls():
    x = hd.array(np.float32([1, 2, 3]))
    same(hd.compile(ordered)(x), np.float32([2, 4, 6]))
    text = hd.code_hlo(ordered, x)
    assert re.search(r"after-all\.\d+ = token\[\] after-all\(\)", text)
    assert re.search(r"token\[\] after-all\(custom-call\.\d+, custom-call\.\d+, after-all\.\d+\)",
                     text)
    # Side-effecting calls are never merged, though op and operand are the same.
    assert text.count('custom_call_target="dce_sink"') == 2
    compile_hlo(text)  # XLA accepts the module as printed
    assert ops.AfterAll().result_type() == TokenType()
    assert ops.AfterAll().result_type(TokenType(), TokenType()) == TokenType()


def test_after_all_is_staged_only_and_takes_tokens_only():
    with pytest.raises(hd.StagingError, match="tokens exist only inside staged programs"):
        ops.AfterAll()()
    x = hd.array(np.ones((3, 4), np.float32))
    with pytest.raises(hd.ShapeError, match=r"AfterAll\(\) cannot be applied to \(f32\[3,4\]\): "
                                            "operands must be tokens"):
        hd.compile(lambda x: ops.OptimizationBarrier()(x, ops.AfterAll()(x))[0])(x)
    with pytest.raises(hd.StagingError, match="can only return arrays"):
        hd.compile(lambda x: ops.AfterAll()())(x)


# -- CustomCall -----------------------------------------------------------------------


def potrf(dtype, n: int, uplo: str, **kwargs):
    """A custom call of the runtime's Cholesky kernel: LAPACK's on a CPU, cuSOLVER's on a
    GPU; both read the buffer column-major and write ``(factor, info)``."""
    out = (ArrayType(dtype, (n, n)), ArrayType(np.int32, ()))
    if runtime.platform() == "gpu":
        return ops.CustomCall("cusolver_potrf_ffi", out, {"lower": uplo == "L"}, **kwargs)
    prefix = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}[np.dtype(dtype)]
    return ops.CustomCall(f"lapack_{prefix}potrf_ffi", out, {"uplo": np.uint8(ord(uplo))},
                          **kwargs)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([np.float32, np.float64]), st.integers(1, 6), st.sampled_from("LU"),
       st.data())
def test_custom_call_to_lapack_potrf_matches_cholesky(dtype, n, uplo, data):
    m = data.draw(hnp.arrays(dtype, (n, n), elements=st.floats(-2, 2, width=32)), label="m")
    a = (m @ m.T + n * np.eye(n)).astype(dtype)
    want = np.linalg.cholesky(a)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}
    np.testing.assert_allclose(jnp.linalg.cholesky(a), want, **tol)  # the oracles agree
    op = potrf(dtype, n, uplo)
    A = hd.array(a)
    assert op.result_type(A.type) == op.out_type
    eager = op(A)
    staged = hd.compile(lambda a: op(a))(A)
    for factor, info in (eager, staged):
        assert (factor.type, info.type) == tuple(op.out_type.elements)
        assert int(info) == 0
        # The target sees the row-major matrix as its transpose (LAPACK is
        # column-major): uplo=U leaves L in the lower triangle, L leaves L^T above.
        got = np.tril(factor) if uplo == "U" else np.triu(factor).T
        np.testing.assert_allclose(got, want, **tol)


def test_custom_call_operand_layouts_reach_the_target():
    rng = np.random.default_rng(0)
    m = rng.standard_normal((4, 4))
    a = m @ m.T + 4 * np.eye(4)
    # Only the lower triangle holds the matrix: the target must read it column-major.
    b = np.tril(a) + np.triu(np.full((4, 4), 100.0), 1)
    column_major = potrf(np.float64, 4, "L", operand_layouts=[(0, 1)])
    for run in (column_major, hd.compile(lambda b: column_major(b))):
        factor, info = run(hd.array(b))
        assert int(info) == 0
        np.testing.assert_allclose(np.triu(factor).T, np.linalg.cholesky(a), rtol=1e-10)
    _, info = potrf(np.float64, 4, "L")(hd.array(b))  # row-major: it reads the garbage
    assert int(info) != 0
    text = hd.code_hlo(lambda b: column_major(b)[0], hd.array(b))
    assert f'custom_call_target="{column_major.target}", operand_layout_constraints=' \
           "{f64[4,4]{0,1}}, api_version=API_VERSION_TYPED_FFI, backend_config=" \
           f"{column_major.backend_config}" in text


def test_custom_call_reports_a_failed_factorisation_through_its_info_result():
    factor, info = potrf(np.float32, 3, "L")(hd.array(-np.eye(3, dtype=np.float32)))
    assert int(info) == 1


def test_custom_call_pure_calls_are_shared_and_side_effecting_ones_are_not():
    x = hd.array(np.float64(4))

    def twice(op):
        return lambda x: ops.Add()(op(x), op(x))

    pure = ops.CustomCall("some_target", ArrayType(np.float64, ()))
    effect = ops.CustomCall("some_target", ArrayType(np.float64, ()), has_side_effect=True)
    assert hd.code_hlo(twice(pure), x).count("custom-call(") == 1
    assert hd.code_hlo(twice(effect), x).count("custom-call(") == 2
    assert "custom_call_has_side_effect=true" in hd.code_hlo(twice(effect), x)


def test_custom_call_result_layouts_read_a_column_major_factor_as_written():
    """Declared column-major (as LAPACK writes and as jax's modules say), the factor
    comes back as numpy's lower Cholesky factor; XLA copies it to row-major."""
    a = np.array([[4.0, 2.0, 0.5], [2.0, 5.0, 1.0], [0.5, 1.0, 3.0]])
    op = potrf(np.float64, 3, "L", operand_layouts=((0, 1),), result_layouts=((0, 1), None))
    text = hd.code_hlo(lambda a: op(a)[0], hd.array(a))
    assert "(f64[3,3]{0,1}, s32[]) custom-call(" in text
    factor = hd.compile(lambda a: op(a)[0])(hd.array(a))
    np.testing.assert_allclose(np.tril(np.asarray(factor)), np.linalg.cholesky(a), rtol=1e-12)
    with pytest.raises(ValueError, match="one layout"):
        potrf(np.float64, 3, "L", result_layouts=((0, 1),))
    with pytest.raises(ValueError, match="does not fit"):
        potrf(np.float64, 3, "L", result_layouts=((0,), None))


def test_custom_call_backend_config_text():
    op = ops.CustomCall("t", ArrayType(np.float32, ()),
                        {"flag": True, "k": np.int8(-3), "n": 7, "scale": np.float32(0.5),
                         "name": 'a"b'})
    assert op.backend_config == ('{flag = true, k = -3 : i8, n = 7 : i64, '
                                 'scale = 5.00000000000000000e-01 : f32, name = "a\\"b"}')
    legacy = ops.CustomCall("t", ArrayType(np.float32, ()), 'opaque "bytes"',
                            api_version="original")
    assert legacy.api_version == "API_VERSION_ORIGINAL"
    attrs = legacy.attributes((), legacy.out_type, None)
    assert attrs == ['custom_call_target="t"', "api_version=API_VERSION_ORIGINAL",
                     'backend_config="opaque \\"bytes\\""']
    # XLA's own HLO parser accepts both spellings (the targets are never looked up).
    for o in (op, legacy):
        xc.hlo.hlo_module_from_text(hd.code_hlo(o, hd.array(np.float32(1))))
    # A typed-FFI target is looked up when compiling: the attributes compile.
    sink = ops.CustomCall("dce_sink", TokenType(), op.backend_config, has_side_effect=True)
    compile_hlo(hd.code_hlo(lambda x: ops.OptimizationBarrier()(x, sink(ops.AfterAll()()))[0],
                            hd.array(np.float32(1))))


def test_custom_call_unknown_target_is_an_xla_compile_error():
    op = ops.CustomCall("no_such_target", ArrayType(np.float32, (2,)))
    with pytest.raises(hd.XlaCompileError, match="no_such_target"):
        op(hd.array(np.float32([1, 2])))


def test_custom_call_bad_static_operands_fail_at_construction():
    f32 = ArrayType(np.float32, ())
    for args in [("t", "f32[]"), ("t", (f32, "s32[]"))]:  # not a type: the wrong type
        with pytest.raises(TypeError, match="CustomCall.*out_type must be an ArrayType"):
            ops.CustomCall(*args)
    for args, kwargs in [(("", f32), {}),
                         (("t", f32), {"api_version": "API_VERSION_BOGUS"}),
                         (("t", f32, "uplo = 76 : ui8"), {}),
                         (("t", f32, {"x": [1, 2]}), {}), (("t", f32, {"x": float("nan")}), {}),
                         (("t", f32), {"operand_layouts": [(0, 0)]})]:
        with pytest.raises(ValueError, match="CustomCall"):
            ops.CustomCall(*args, **kwargs)


# What a target writes: hlodsl.stdlib.lapack registers the result types of the LAPACK
# kernels it calls, and every CustomCall of those targets is checked against them.

_F32 = np.float32


_HLO_TYPE = re.compile(r"\b([a-z]+\d+)\[([\d,]*)\]")


def _hlo_types(text: str) -> list[ArrayType]:
    """The array types written in HLO text, in order (``(f32[2,2], s32[])``)."""
    names = {"f32": np.float32, "f64": np.float64, "c64": np.complex64,
             "c128": np.complex128, "s32": np.int32}
    return [ArrayType(names[t], tuple(int(d) for d in dims.split(",") if d))
            for t, dims in _HLO_TYPE.findall(text)]


@pytest.mark.parametrize("declared", [
    "(f32[64,64], s32[])",  # the repro: the kernel writes 2x2, the rest was garbage
    "(f32[2,2], s32[3])",   # info: one per matrix
    "(f32[4,2,2], s32[4])",  # a batch the operand does not have
    "(f32[1,1], s32[])",    # smaller: the kernel would write past it
])
def test_custom_call_of_a_lapack_target_must_declare_what_the_kernel_writes(declared):
    op = ops.CustomCall("lapack_spotrf_ffi", tuple(_hlo_types(declared)),
                        {"uplo": np.uint8(ord("L"))})
    x = hd.array(4 * np.eye(2, dtype=_F32))
    _raises_eager_and_staged(lambda x: op(x)[0], (x,), "CustomCall(target='lapack_spotrf_ffi'",
                             "(f32[2,2])", "lapack_spotrf_ffi writes (f32[2,2], s32[]) for these "
                             f"operands, but out_type declares {declared}",
                             "uninitialised memory")


@pytest.mark.parametrize("target, out, args, attributes, message", [
    ("lapack_dpotrf_ffi", "(f32[2,2], s32[])", [np.eye(2, dtype=_F32)], {"uplo": "L"},
     "a must be float64 (the target's element type), got f32[2,2]"),
    ("lapack_spotrf_ffi", "(f32[2,3], s32[])", [np.ones((2, 3), _F32)], {"uplo": "L"},
     "a must be square (..., n, n), got f32[2,3]"),
    ("lapack_spotrf_ffi", "(f32[2,2], s32[])", [np.eye(2, dtype=_F32)], {},
     "needs the attribute uplo, one of L, U"),
    ("lapack_spotrf_ffi", "(f32[2,2], s32[])", [np.eye(2, dtype=_F32)], {"uplo": "X"},
     "needs the attribute uplo, one of L, U as np.uint8(ord(c)), got 88"),
    ("lapack_sgetrf_ffi", "(f32[3], s32[1], s32[])", [np.ones(3, _F32)], {},
     "a must be a stack of matrices with rank >= 2, got f32[3]"),
    ("lapack_strsm_ffi", "f32[2,5]", [np.eye(3, dtype=_F32), np.ones((2, 5), _F32)],
     {"side": "L", "uplo": "L", "trans_x": "N", "diag": "N"},
     "a (f32[3,3]) must be 2 x 2 to solve a x = b for b (f32[2,5])"),
    ("lapack_sorgqr_ffi", "f32[2,3]", [np.ones((2, 3), _F32), np.ones(2, _F32)], {},
     "a (f32[2,3]) and tau (f32[2]) must be (..., M, N) and (..., K) with M >= N >= K"),
    ("lapack_sgeqrf_ffi", "(f32[2,2], f32[2])", [np.ones((2, 2), _F32), np.ones((2, 2), _F32)],
     {}, "takes 1 operand(s) (a), got 2"),
])
def test_custom_call_of_a_lapack_target_refuses_operands_the_kernel_cannot_take(
        target, out, args, attributes, message):
    out = _hlo_types(out)
    op = ops.CustomCall(target, out if len(out) > 1 else out[0],
                        {k: np.uint8(ord(v)) for k, v in attributes.items()})
    arrays = [hd.array(a) for a in args]
    _raises_eager_and_staged(lambda *xs: op(*xs), arrays, f"CustomCall(target='{target}'",
                             f"{target}: {message}")


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("name, f, shape", [
    ("cholesky", jnp.linalg.cholesky, (2, 3, 3)),
    ("lu", lax.linalg.lu, (4, 3)),
    ("qr", jnp.linalg.qr, (2, 5, 3)),
    ("eigh", jnp.linalg.eigh, (4, 4)),
    ("svd full", jnp.linalg.svd, (3, 5)),
    ("svd reduced", lambda a: jnp.linalg.svd(a, full_matrices=False), (2, 5, 3)),
    ("triangular solve", lambda a: lax.linalg.triangular_solve(a, a[..., :2, :], left_side=False),
     (3, 3)),
    ("eig", lambda a: lax.linalg.eig(a, compute_left_eigenvectors=False), (2, 4, 4)),
])
def test_lapack_target_results_are_what_jax_declares(name, f, shape, dtype):
    # jax's own calls of the same kernels (its CPU lowering, on any machine) are the
    # oracle: every custom call of a lapack_ target it emits passes our check as jax
    # declares it.
    _declared_as_jax_declares(f, shape, dtype, "cpu", "lapack_")


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("name, f, shape", [
    ("cholesky", jnp.linalg.cholesky, (2, 3, 3)),
    ("lu", lax.linalg.lu, (4, 3)),
    ("qr", jnp.linalg.qr, (2, 5, 3)),
    ("qr wide", jnp.linalg.qr, (3, 5)),
    ("eigh", jnp.linalg.eigh, (4, 4)),
    ("svd full", jnp.linalg.svd, (3, 5)),
    ("svd reduced", lambda a: jnp.linalg.svd(a, full_matrices=False), (2, 40, 36)),
    ("svd gesvd", lambda a: jnp.linalg.svd(a, full_matrices=False), (1030, 5)),
    ("svd gesvd wide", lambda a: jnp.linalg.svd(a, compute_uv=False), (3, 1030)),
])
def test_cusolver_target_results_are_what_jax_declares(name, f, shape, dtype):
    # The twin for a GPU: jax lowers for CUDA without one (lowering_platforms); eig is
    # left out, as jax picks cusolver_geev_ffi only where it sees cuSOLVER's version
    # (tests/test_gpu_golden.py holds the H200's geev calls).
    _declared_as_jax_declares(f, shape, dtype, "cuda", "cu")


def _declared_as_jax_declares(f, shape, dtype, platform: str, prefix: str):
    lowered = jax.jit(f).trace(np.ones(shape, dtype)).lower(lowering_platforms=(platform,))
    text = lowered.as_text(dialect="hlo")
    calls = [ln for ln in text.splitlines() if f'custom_call_target="{prefix}' in ln]
    assert calls, text
    for line in calls:
        target = re.search(r'custom_call_target="(\w+)"', line).group(1)
        assert is_known_target(target), target  # else nothing would check the results
        results = _hlo_types(line.split(" custom-call(")[0].split(" = ", 1)[1])
        operands = _hlo_types(re.search(r"operand_layout_constraints=\{(.*?\})\}",
                                        line).group(1))
        config = re.search(r"backend_config=(\{.*?\})", line)
        op = ops.CustomCall(target, results if len(results) > 1 else results[0],
                            config.group(1) if config else "")
        assert op.result_type(*operands) == op.out_type, line


def test_custom_call_operand_layout_shape_errors():
    op = ops.CustomCall("t", ArrayType(np.float32, ()), operand_layouts=[(1, 0)])
    x, v = hd.array(np.ones((3, 3), np.float32)), hd.array(np.ones(3, np.float32))
    _raises_eager_and_staged(lambda x: op(x, x), (x,), "CustomCall(target='t'",
                             "(f32[3,3], f32[3,3])", "operand_layouts has 1 layouts for 2 operands")
    _raises_eager_and_staged(lambda v: op(v), (v,), "(f32[3])",
                             "operand 0 (f32[3]) does not fit the rank-2 layout (1, 0)")


def test_a_side_effecting_custom_call_stays_in_the_module_when_its_result_is_unused():
    op = potrf(np.float32, 2, "L", has_side_effect=True)

    def f(x):
        op(x)  # result unused: only its side effect would matter
        return x + 1

    x = hd.array(np.eye(2, dtype=np.float32))
    assert "custom-call(" in str(hd.code_hlo(f, x))
    assert "custom-call(" not in str(hd.code_hlo(f, x).replace("custom-call(", "", 1))
    np.testing.assert_array_equal(np.asarray(hd.compile(f)(x)), np.eye(2) + 1)
    pure = potrf(np.float32, 2, "L")
    assert "custom-call(" not in str(hd.code_hlo(lambda v: (pure(v), v + 1)[1], x))
