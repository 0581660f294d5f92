"""Python control flow on symbolic arrays, converted to HLO (hlodsl.flow) against eager runs.

The oracle is the very same Python function run eagerly on concrete arrays,
where ``if``/``while``/``for`` are ordinary Python: ``hd.compile`` must give
the same results, with the conditions drawn by hypothesis so that every
branch and several trip counts are taken. Also: static control flow stays
Python (no conditional or while in the module), calls into user helpers and
methods are converted, the module does not grow with the trip count, the
errors name the variable and the statement's line, and source lines survive
into the HLO metadata.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.transforms import flow

SETTINGS = settings(max_examples=12, deadline=None)
vectors = hnp.arrays(np.float32, 3, elements=st.floats(-8, 8, width=32))


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (got, want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def hlo(fn, *args) -> str:
    return str(hd.code_hlo(flow.convert(fn), *args))


# -- functions under test (module level: each is converted and compiled once) ------------


def classify(x):
    s = xp.sum(x)
    if s > 4:
        y = x * 2
    elif s < -4:
        y = -x
        z = y + 1  # a temporary of one branch, unused after the if
        y = z - 1
    else:
        y = x + 1
    return y


def nested(x):
    s = xp.sum(x)
    scale = xp.ones((), dtype=x.dtype)
    label = 1.0
    if s > 0:
        if xp.max(x) > 3:
            scale = scale * 10
            label = 10.0
        else:
            y = x * scale  # noqa: F841 (unused after: not carried)
            scale = scale * 2
            label = 2.0
    return x * scale, label


def sign_of(x):
    if xp.sum(x) > 0:
        return x
    elif xp.sum(x) < -1:
        return -x
    return x * 0


def logic(x):
    s = xp.sum(x)
    if s > 0 and not s > 5 or xp.min(x) < -7:
        return x + 100
    return x


def pick(x):
    return x * 2 if xp.sum(x) > 0 else x - 1


def newton_sqrt(a):
    x = a
    err = xp.max(a)
    while err > 1e-5:
        nx = 0.5 * (x + a / x)
        err = xp.max(xp.abs(nx - x))
        x = nx
    return x


def power_loop(x, n):
    acc = x * 0 + 1
    for i in range(n):
        acc = acc * x
    return acc


def strided(x, lo, hi, step):
    acc = x
    k = 0
    for i in range(lo, hi, step):
        acc = acc * 0.5 + 1
        k = k + 1
    return acc, k


def first_over(x, limit):
    steps = 0
    while True:
        if xp.sum(x) > limit:
            break
        x = x * 2
        steps = steps + 1
    return x, steps


def odd_sum(x, n):
    total = x * 0
    for i in range(n):
        if i % 2 == 0:
            continue
        total = total + x * xp.asarray(i, dtype=x.dtype)
    return total


def _helper_scale(v):
    if xp.sum(v) > 0:
        return v * 10
    return v


class Model:
    def __init__(self, k):
        self.__k = k  # name-mangled: the converted method must still find it

    def apply(self, v):
        if xp.sum(v) < 0:
            v = v * self.__k
        return v


def calls_helpers(x):
    return _helper_scale(x) + Model(3.0).apply(x)


def static_flag(x, flag):
    if flag:
        y = x * 2
    else:
        y = x + 1
    for i in range(3):  # a static range: unrolled as in plain Python
        y = y + i
    return y


def loop_from(x, n, start):
    for i in range(start, start + 0 * start + n):
        x = x * 0.5 + 1
    return x


STAGED = {f: hd.compile(f) for f in (classify, nested, sign_of, logic, pick, newton_sqrt,
                                     power_loop, strided, first_over, odd_sum, calls_helpers)}


# -- results equal eager Python -------------------------------------------------------------


@SETTINGS
@given(vectors)
def test_if_elif_else_nested_and_returns_match_eager(v):
    x = hd.array(v)
    for f in (classify, sign_of, logic, pick, calls_helpers):
        same(STAGED[f](x), f(x))
    got, want = STAGED[nested](x), nested(x)
    same(got[0], want[0])
    same(got[1], np.float64(want[1]))  # Python floats that differ by branch: an f64[]


def test_the_converted_if_is_one_hlo_conditional():
    x = hd.array(np.float32([1, 2, 3]))
    text = hlo(classify, x)
    assert text.count("conditional(") == 2  # if and elif
    assert "classify_if" in text  # computations named after the function and line


@SETTINGS
@given(hnp.arrays(np.float32, 3, elements=st.floats(0.0625, 100, width=32)))
def test_while_newton_iteration_until_tolerance(v):
    a = hd.array(v)
    same(STAGED[newton_sqrt](a), newton_sqrt(a))
    np.testing.assert_allclose(np.asarray(STAGED[newton_sqrt](a)), np.sqrt(v), rtol=1e-4)


@SETTINGS
@given(vectors, st.integers(-2, 6))
def test_for_over_a_symbolic_range(v, n):
    x = hd.array(v)
    same(STAGED[power_loop](x, hd.array(np.int32(n))), power_loop(x, n))


@SETTINGS
@given(st.integers(-6, 6), st.integers(-6, 6), st.sampled_from([1, 2, 3, -1, -2]))
def test_range_with_static_steps_and_symbolic_bounds(lo, hi, step):
    x = hd.array(np.float32([1, 2]))
    got = STAGED[strided](x, hd.array(np.int32(lo)), hd.array(np.int32(hi)), step)
    want = strided(x, lo, hi, step)
    same(got[0], want[0])
    assert int(np.asarray(got[1])) == want[1] == len(range(lo, hi, step))


@SETTINGS
@given(hnp.arrays(np.float32, 2, elements=st.floats(0.5, 4, width=32)),
       st.floats(0, 200, width=32))
def test_break_in_a_while_true_loop(v, limit):
    x, lim = hd.array(v), hd.array(np.float32(limit))
    got, want = STAGED[first_over](x, lim), first_over(x, lim)
    same(got[0], want[0])
    assert int(np.asarray(got[1])) == want[1]
    assert "while(" in hlo(first_over, x, lim)


@SETTINGS
@given(st.integers(0, 7))
def test_continue_in_a_symbolic_for_loop(n):
    x = hd.array(np.float32([1, -2]))
    want = odd_sum(x, hd.array(np.int32(n)))  # eagerly: Python loop on a concrete bound
    same(STAGED[odd_sum](x, hd.array(np.int32(n))), want)


def test_break_in_a_for_loop_over_a_symbolic_range():
    def until_big(x, n):
        for i in range(n):
            if xp.sum(x) > 50:
                break
            x = x * 3
        return x

    f = hd.compile(until_big)
    x = hd.array(np.float32([1, 1]))
    for n in (0, 2, 10):
        same(f(x, hd.array(np.int32(n))), until_big(x, n))


def test_while_else_and_loop_target_used_after_the_loop():
    def last_index(x, n):
        i = -1
        for i in range(n):
            x = x + 1
        while xp.sum(x) > 100:
            x = x / 2
        else:
            x = x + 0.5
        return x, i

    f = hd.compile(last_index)
    x = hd.array(np.float32([1, 2]))
    for n in (0, 3):
        got, want = f(x, hd.array(np.int32(n))), last_index(x, n)
        same(got[0], want[0])
        assert int(np.asarray(got[1])) == want[1]


def test_python_numbers_in_branches_and_loops_take_the_arrays_type():
    def f(x):
        s = 0.0  # weak, like a Python scalar in x + 0.0: becomes f32 through the loop
        i = 0
        while i < xp.sum(x):
            s = s + x[0]
            i = i + 1
        y = 0.0 if s > 10 else x[1]
        return s, y

    x = hd.array(np.float32([3, 4]))
    got, want = hd.compile(f)(x), f(x)
    assert got[0].dtype == hd.float32 and got[1].dtype == hd.float32
    same(got[0], want[0])
    same(got[1], np.float32(want[1]))


def test_helpers_and_methods_are_converted_once():
    x = hd.array(np.float32([-1, 2, 3]))
    hlo_text = hlo(calls_helpers, x)
    assert hlo_text.count("conditional(") == 2
    assert flow.convert(_helper_scale) is flow.convert(_helper_scale)
    f = hd.compile(calls_helpers)
    assert f.staged_fn is f.staged_fn


# -- static control flow stays Python ------------------------------------------------------


def test_static_control_flow_is_unchanged():
    x = hd.array(np.float32([1, 2]))
    for flag in (True, False):
        text = hlo(static_flag, x, flag)
        assert "conditional(" not in text and "while(" not in text
        same(hd.compile(static_flag)(x, flag), static_flag(x, flag))
    assert hlo(static_flag, x, True).count("add(") == 3  # three unrolled additions


def test_python_semantics_of_unbound_and_global_variables_are_kept():
    def maybe(flag):
        if flag:
            y = 1
        return y

    conv = flow.convert(maybe)
    assert conv(True) == 1
    with pytest.raises(UnboundLocalError):
        conv(False)

    def bump(x, flag):
        global _COUNTER
        if flag:
            _COUNTER = _COUNTER + 1
        return x

    globals()["_COUNTER"] = 0
    flow.convert(bump)(1, True)
    assert _COUNTER == 1  # noqa: F821


def test_functions_without_source_are_left_alone():
    namespace: dict = {}
    exec("def g(x):\n    return x + 1\n", namespace)
    assert flow.convert(namespace["g"]) is namespace["g"]
    lam = eval("lambda x: x")  # a lambda without source (a lambda in a file is converted)
    assert flow.convert(lam) is lam
    assert flow.convert(xp.sum) is xp.sum
    assert flow.convert(len) is len


def test_instruction_count_does_not_depend_on_the_trip_count():
    x = hd.array(np.float32([1, 2]))
    n = hd.array(np.int32(5))
    sizes = {len(hlo(loop_from, x, n, start).splitlines()) for start in (1, 10, 1000)}
    assert len(sizes) == 1
    f = hd.compile(power_loop)
    f(x, hd.array(np.int32(3)))
    f(x, hd.array(np.int32(300)))
    assert f.cache_size() == 1


def test_source_lines_reach_the_hlo_metadata():
    x = hd.array(np.float32([1, 2]))
    text = str(hd.code_hlo(flow.convert(classify), x, metadata=True))
    line = classify.__code__.co_firstlineno
    multiply = next(ln for ln in text.splitlines() if " multiply(" in ln)
    assert f"source_line={line + 3}" in multiply  # y = x * 2, inside the branch


# -- errors ----------------------------------------------------------------------------------


def _line_of(fn, text: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


def test_variable_assigned_in_only_one_branch():
    def f(x):
        if xp.sum(x) > 0:
            y = x
        return y

    line = _line_of(f, "if xp.sum")
    with pytest.raises(hd.StagingError, match=rf"the if at test_flow_conversion.py:{line}: "
                                              r"variable 'y' is assigned only in its true"):
        hd.compile(f)(hd.array(np.float32([1])))


def test_branches_giving_different_types():
    def f(x):
        if xp.sum(x) > 0:
            y = x
        else:
            y = x[:1]
        return y

    with pytest.raises(hd.ShapeError, match=r"variable 'y' is f32\[2\] in the true branch but "
                                            r"f32\[1\] in the false branch"):
        hd.compile(f)(hd.array(np.float32([1, 2])))


def test_shape_change_in_a_loop():
    def f(x):
        while xp.sum(x) < 100:
            x = xp.concat([x, x])
        return x

    line = _line_of(f, "while")
    with pytest.raises(hd.ShapeError, match=rf"the while loop at test_flow_conversion.py:{line}:"
                                            r" variable 'x' is f32\[2\] before an iteration "
                                            r"and f32\[4\] after it"):
        hd.compile(f)(hd.array(np.float32([1, 2])))


def test_return_inside_a_symbolic_loop_or_if_is_rejected_clearly():
    def f(x):
        while xp.sum(x) < 100:
            if xp.sum(x) > 50:
                return x
            x = x * 2
        return x

    line = _line_of(f, "while")
    with pytest.raises(hd.StagingError, match=rf"the while loop at test_flow_conversion.py:"
                                              rf"{line} contains a `return`, which hlodsl "
                                              "cannot convert"):
        hd.compile(f)(hd.array(np.float32([1, 2])))
    assert np.asarray(flow.convert(f)(hd.array(np.float32([1, 2])))).tolist() == [32, 64]

    def g(x):
        if xp.sum(x) > 0:
            x = x + 1
            if xp.max(x) > 5:
                return x
        x = x * 2
        return x

    with pytest.raises(hd.StagingError, match=r"has a `return` that is not the last statement"):
        hd.compile(g)(hd.array(np.float32([1, 2])))


def test_variable_first_assigned_in_a_symbolic_loop_and_used_after():
    def f(x):
        while xp.sum(x) < 10:
            x = x * 2
            last = x
        return last

    with pytest.raises(hd.StagingError, match=r"variable 'last' is assigned in the loop and "
                                              r"used after it, but it has no value before"):
        hd.compile(f)(hd.array(np.float32([1, 2])))


def test_non_scalar_condition_and_opt_out():
    def f(x):
        if x > 0:
            x = -x
        return x

    with pytest.raises(hd.StagingError, match=r"is a symbolic array pred\[2\]: only a scalar"):
        hd.compile(f)(hd.array(np.float32([1, 2])))
    with pytest.raises(hd.StagingError, match=r"(?s)Python `if`/`while`/`and`/`or`/`bool\(\)` "
                                             r"needs.*in sign_of .*convert=False\) converts "
                                             r"nothing.*hd\.cond.*xp\.where.*hd\.while_loop"):
        hd.compile(sign_of, convert=False)(hd.array(np.float32([1, 2])))


def test_unconvertible_code_says_why_and_names_the_alternatives():
    namespace: dict = {"xp": xp}
    exec("def g(x):\n    if xp.sum(x) > 0:\n        return x\n    return -x\n", namespace)
    with pytest.raises(hd.StagingError, match=r"(?s)in g \(<string>:2\).*source it can "
                                             r"read.*python -c, stdin or exec.*hd\.cond"):
        hd.compile(namespace["g"])(hd.array(np.float32([1, 2])))


# -- functions reached through transformations are converted too ---------------------------

def _signed_square_sum(x):
    if xp.sum(x) > 0:
        y = x * x
    else:
        y = -x
    return xp.sum(y)


def _step_down_above_five(i, c):
    if c > 5:
        c = c - 1.0
    return c + 1.0


def test_functions_given_to_transformations_and_control_flow_are_converted():
    x = hd.array(np.float32([1, 2]))
    np.testing.assert_array_equal(np.asarray(hd.compile(lambda v: hd.grad(_signed_square_sum)(v))(x)), [2, 4])
    np.testing.assert_array_equal(np.asarray(hd.compile(lambda v: hd.grad(_signed_square_sum)(v))(-x)), [-1, -1])
    assert float(hd.compile(lambda v: hd.jvp(_signed_square_sum, (v,), (v,))[1])(x)) == 10
    assert float(hd.compile(lambda v: hd.cond(xp.sum(v) > 0, _signed_square_sum,
                                              _signed_square_sum, v))(x)) == 5
    assert float(hd.compile(lambda v: hd.fori_loop(0, 9, _step_down_above_five,
                                                   xp.sum(v)))(x)) == 6
    assert float(hd.compile(lambda v: hd.vmap(_signed_square_sum)(v))(x[None])[0]) == 5


def _countdown(x):
    """Recurses under an ``if`` on a symbolic value: staging both branches never ends."""
    if xp.sum(x) > 0:
        return _countdown(x - 1.0)
    return x


@pytest.mark.parametrize("how", ["compile", "eager cond"])
def test_recursion_under_a_symbolic_if_is_a_staging_error_naming_the_function(how):
    x = hd.array(np.float32([1, 2]))
    call = (lambda: hd.compile(_countdown)(x)) if how == "compile" else (
        lambda: hd.cond(hd.array(True), _countdown, lambda v: v, x))
    with pytest.raises(hd.StagingError) as info:
        call()
    message = str(info.value)
    assert "_countdown" in message and "recurs" in message
    assert "hd.while_loop" in message  # what to write instead
