"""The generic functions of the foundation: broadcast, mapreduce, matmul, operators."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hlodsl as hd
import hlodsl.stdlib as xp
from platform_rules import platform_tol

FLOATS = st.sampled_from([np.float32, np.float64])


def _both(f, *args, scale=None):
    """f run eagerly and compiled; the results must agree.

    Exactly for integers; within a few ulp for floats, since XLA's algebraic
    simplifier may rewrite a staged expression (x / s becomes x * (1 / s)). A dot's
    ``scale`` (``|a| @ |b|``) bounds the difference where the platform sums its products
    in another order eagerly than compiled (``PLATFORM_TOL``'s "matmul summation").
    """
    eager = np.asarray(f(*args))
    staged = np.asarray(hd.compile(f)(*args))
    bound = platform_tol("matmul summation", eager.dtype) if scale is not None else None
    if bound is not None:
        assert np.all(np.abs(staged - eager) <= bound * scale), (staged, eager)
    elif np.issubdtype(eager.dtype, np.inexact):
        np.testing.assert_allclose(staged, eager, rtol=4 * np.finfo(eager.dtype).eps, atol=0)
    else:
        np.testing.assert_array_equal(eager, staged)
    return eager


@settings(max_examples=20, deadline=None)
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4), FLOATS,
       st.sampled_from(["+", "-", "*", "/"]))
def test_arithmetic_operators_broadcast_like_numpy(shapes, dtype, op):
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(0.5, 2, s).astype(dtype) for s in shapes.input_shapes)
    f = {"+": lambda x, y: x + y, "-": lambda x, y: x - y,
         "*": lambda x, y: x * y, "/": lambda x, y: x / y}[op]
    got = _both(f, hd.array(a), hd.array(b))
    assert got.shape == shapes.result_shape and got.dtype == dtype
    np.testing.assert_allclose(got, f(a, b), rtol=1e-6)


def test_python_scalars_are_weakly_typed():
    x = hd.array(np.float32([1, 2]))
    assert (x + 1).dtype is hd.float32 and (2.5 * x).dtype is hd.float32
    assert (hd.array(np.int32([1])) + 1).dtype is hd.int32
    assert (hd.array(np.int32([1])) + 1.5).dtype is hd.float64
    np.testing.assert_array_equal(np.asarray(1 - x), [0, -1])


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 3).flatmap(lambda r: hnp.array_shapes(min_dims=r, max_dims=r, max_side=4)),
       FLOATS, st.data())
def test_sum_and_mapreduce_match_numpy(shape, dtype, data):
    a = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    axis = data.draw(st.sampled_from([None] + list(range(len(shape)))))
    got = _both(lambda x: xp.sum(x, axis=axis), hd.array(a))
    np.testing.assert_allclose(got, a.sum(axis=axis), rtol=1e-5, atol=1e-6)
    sq = _both(lambda x: xp.mapreduce(lambda v: v * v, xp.add, x, axis=axis), hd.array(a))
    np.testing.assert_allclose(sq, (a * a).sum(axis=axis), rtol=1e-5, atol=1e-6)


def test_reductions_with_known_identities_and_keepdims():
    a = np.float32([[1, -2, 3], [4, 5, -6]])
    A = hd.array(a)
    np.testing.assert_array_equal(np.asarray(xp.max(A, axis=1)), a.max(axis=1))
    np.testing.assert_array_equal(np.asarray(xp.min(A, axis=0)), a.min(axis=0))
    np.testing.assert_array_equal(np.asarray(xp.prod(A)), a.prod())
    np.testing.assert_allclose(np.asarray(xp.mean(A, axis=1, keepdims=True)),
                               a.mean(axis=1, keepdims=True))
    assert xp.sum(hd.array(np.int8([100, 100]))).dtype is hd.int64  # no int8 overflow
    with pytest.raises(TypeError, match="pass init="):
        xp.mapreduce(None, lambda u, v: u * v + 1, A)


def test_mapreduce_with_a_user_reduction_and_init():
    A = hd.array(np.float32([1, 2, 3]))
    out = xp.mapreduce(None, lambda u, v: xp.maximum(u, v * 2), A, init=0.0)
    assert float(out) == 6.0  # fold: max(0, 2), max(2, 4), max(4, 6)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([(3,), (2, 3), (4, 2, 3)]), st.sampled_from([(3,), (3, 2), (4, 3, 5)]))
def test_matmul_dispatches_on_rank_like_numpy(sa, sb):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    got = _both(lambda x, y: x @ y, hd.array(a), hd.array(b), scale=np.abs(a) @ np.abs(b))
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def test_broadcast_uses_map_for_python_callables_and_hlo_ops_for_stdlib_functions():
    x = hd.array(np.float32([1, 2, 3]))
    text = str(hd.code_hlo(lambda x: xp.broadcast(lambda a, b: a * b + 1, x, 2.0), x))
    assert " map(" in text
    text = str(hd.code_hlo(lambda x: xp.broadcast(xp.multiply, x, 2.0), x))
    assert " map(" not in text and " multiply(" in text
    np.testing.assert_array_equal(np.asarray(xp.broadcast(lambda a, b: a * b + 1, x, 2.0)),
                                  [3, 5, 7])


def test_array_methods():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    A = hd.array(a)
    np.testing.assert_array_equal(np.asarray(A.T), a.T)
    np.testing.assert_array_equal(np.asarray(A.reshape(3, -1)), a.reshape(3, 2))
    np.testing.assert_array_equal(np.asarray(A.astype(hd.int32)), a.astype(np.int32))
    np.testing.assert_array_equal(np.asarray(A.sum(axis=0)), a.sum(axis=0))
    np.testing.assert_array_equal(np.asarray(-A), -a)
    np.testing.assert_array_equal(np.asarray(A < 2), a < 2)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, -1, -2])
def test_a_python_int_power_is_multiplications_and_so_is_its_derivative(n):
    # HLO power need not be exact (XLA:GPU's f64 power(3, 1) is not 3, so d(x**2) was
    # 5.999999999999999 at 3): x ** n for a Python int n is jax's integer_pow.
    x = np.float64([3.0, -0.5, 1.25])
    got = _both(lambda a: a ** n, hd.array(x))
    np.testing.assert_allclose(got, x ** n, rtol=1e-15)
    grad = hd.grad(lambda a: xp.sum(a ** n))
    np.testing.assert_allclose(np.asarray(grad(hd.array(x))), n * x ** (n - 1.0), rtol=1e-15)
    assert " power(" not in str(hd.code_hlo(grad, hd.array(x)))
    if n == 2:
        assert float(grad(hd.array(np.float64([3.0])))[0]) == 6.0  # exactly
    ints = np.int32([2, -3, 5])
    if n >= 0:  # numpy's integer ** negative integer is an error; HLO power keeps it
        np.testing.assert_array_equal(np.asarray(hd.array(ints) ** n), ints ** n)
    assert (hd.array(np.bool_([True])) ** 2).dtype is hd.int64  # bool: numpy's promotion
