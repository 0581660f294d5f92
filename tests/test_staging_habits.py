"""Staging as users expect it (issue 17): introspection shows what compile runs,
Python numbers are traced, static arguments by name or position, and mixed
integer/float arithmetic keeps the float type."""

import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import runtime


def halve_until_small(x):
    while xp.sum(x) > 1:
        x = x / 2
    return x


def test_code_hlo_of_python_control_flow_is_what_compile_runs():
    x = hd.array(np.float32([3, 4]))
    compiled = hd.compile(halve_until_small)
    assert str(hd.code_hlo(halve_until_small, x)) == str(hd.code_hlo(compiled, x))
    assert "while(" in str(hd.code_hlo(halve_until_small, x))
    assert "While(" in str(hd.code_typed(halve_until_small, x))
    np.testing.assert_allclose(np.asarray(compiled(x)), [0.375, 0.5])


def test_a_hundred_learning_rates_compile_once():
    x = hd.array(np.float32([1, 2]))
    step = hd.compile(lambda x, lr: x - lr * x)
    before = runtime.stats["compiles"]
    for k in range(100):
        out = step(x, 0.01 * k)
        assert out.dtype is hd.float32  # a Python float is weakly typed
    np.testing.assert_allclose(np.asarray(out), np.float32([1, 2]) * (1 - 0.99), rtol=1e-6)
    assert step.compiles == 1 and runtime.stats["compiles"] - before == 1


def test_traced_numbers_inside_structures_and_numpy_scalars():
    f = hd.compile(lambda x, hp: x * hp["scale"] + hp["shift"][0])
    x = hd.array(np.float32([1, 2]))
    a = f(x, {"scale": 2.0, "shift": [0.5]})
    b = f(x, {"scale": 3.0, "shift": [1.5]})
    np.testing.assert_array_equal(np.asarray(a), [2.5, 4.5])
    np.testing.assert_array_equal(np.asarray(b), [4.5, 7.5])
    assert f.compiles == 1
    strong = hd.compile(lambda x, s: x * s)(x, np.float64(2))  # numpy scalar: its own type
    assert strong.dtype is hd.float64
    assert hd.compile(lambda x, c: x * c)(x, 1j).dtype is hd.complex64


def test_ints_and_bools_stay_static():
    power = hd.compile(lambda x, n, neg: -x ** n if neg else x ** n)
    x = hd.array(np.float32([2, 3]))
    np.testing.assert_array_equal(np.asarray(power(x, 3, False)), [8, 27])
    np.testing.assert_array_equal(np.asarray(power(x, 2, True)), [-4, -9])
    assert power.compiles == 2


def test_static_argnums_and_argnames_keep_numbers_static():
    fill = hd.compile(lambda x, v: xp.full(x.shape, v, dtype=x.dtype), static_argnums=1)
    x = hd.array(np.float32([0, 0]))
    assert np.asarray(fill(x, 0.5)).tolist() == [0.5, 0.5]
    fill(x, 0.25)
    assert fill.compiles == 2
    named = hd.compile(lambda x, *, v: xp.full(x.shape, v, dtype=x.dtype), static_argnames="v")
    assert np.asarray(named(x, v=1.5)).tolist() == [1.5, 1.5]
    with pytest.raises(ValueError, match="static_argnames names 'w'"):
        hd.compile(lambda x, v: x, static_argnames="w")
    with pytest.raises(TypeError, match="static_argnums must be ints"):
        hd.compile(lambda x, v: x, static_argnums="v")


def test_an_integer_loop_counter_keeps_a_float32_carry():
    def accumulate(x, n):
        acc = x
        for i in range(n):  # n symbolic: the loop is staged, i is an int32 array
            acc = acc + i * x
        return acc

    x = hd.array(np.float32([1, 2]))
    out = hd.compile(accumulate)(x, hd.array(np.int32(4)))
    assert out.dtype is hd.float32
    np.testing.assert_array_equal(np.asarray(out), np.float32([7, 14]))


def test_lambdas_with_conditional_expressions_are_converted():
    x = hd.array(np.float32([1.5, -2.25, 3.0]))
    f = hd.compile(lambda x: x * 2 if xp.sum(x) > 0 and not xp.max(x) > 10 else -x)
    np.testing.assert_array_equal(np.asarray(f(x)), np.float32([3, -4.5, 6]))
    np.testing.assert_array_equal(np.asarray(f(-x)), np.float32([1.5, -2.25, 3]))
    assert f.compiles == 1  # one program, both branches staged
    first, second = (lambda v: v + 1), (lambda v: v - 1 if xp.sum(v) > 0 else v)
    np.testing.assert_array_equal(np.asarray(hd.compile(second)(x)),
                                  np.float32([0.5, -3.25, 2]))
    np.testing.assert_array_equal(np.asarray(hd.compile(first)(x)),
                                  np.float32([2.5, -1.25, 4]))


def test_functions_reached_through_transformations_are_converted():
    def f(x):
        if xp.sum(x) > 0:
            return xp.sum(x * x)
        return xp.sum(x)

    x = hd.array(np.float32([1, 2]))
    np.testing.assert_array_equal(np.asarray(hd.compile(lambda x: hd.grad(f)(x))(x)), [2, 4])
    np.testing.assert_array_equal(np.asarray(hd.compile(lambda x: hd.grad(f)(x))(-x)), [1, 1])


def test_a_traced_number_that_must_be_static_says_how():
    x = hd.array(np.float32([1, 2, 3]))
    with pytest.raises(TypeError, match=r"correction is a Python number passed to a compiled "
                                        r"function.*static_argnames=\('c',\)"):
        hd.compile(lambda x, c: xp.var(x, correction=c))(x, 1.0)
    np.testing.assert_allclose(
        float(hd.compile(lambda x, c: xp.var(x, correction=c), static_argnames="c")(x, 1.0)), 1.0)


def test_numbers_inside_attrs_instances_stay_static():
    # An op is an attrs instance: its epsilon must stay a static operand.
    x = hd.array(np.float32([[1, 2], [3, 5]]))
    scale, offset = hd.array(np.float32([1, 1])), hd.array(np.float32([0, 0]))
    f = hd.compile(lambda op, x, s, o: op(x, s, o)[0])
    a = f(hd.ops.BatchNormTraining(0.01, 1), x, scale, offset)
    b = f(hd.ops.BatchNormTraining(0.02, 1), x, scale, offset)
    assert f.compiles == 2 and not np.allclose(np.asarray(a), np.asarray(b))
