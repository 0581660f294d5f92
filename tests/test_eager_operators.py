"""The operators' eager fast path (hlodsl.transforms.eager.FastPath): a call on a type
signature seen before skips dispatch, and answers exactly as the long way does.

Every check compares a fast-path answer with numpy's (the oracle) and with the
answer of the same call made the long way (the generic itself), over operands
that differ only in what the cache key must tell apart: element type, shape,
weak Python scalars against numpy scalars, ints in and out of an operand's range.
"""

from __future__ import annotations

import numpy as np
import pytest

import hlodsl as hd
from hlodsl import stdlib
from hlodsl.stdlib import operators
from hlodsl.transforms.eager import MISS, FastPath


def _fast_of(method) -> FastPath:
    """The FastPath an operator method closes over."""
    cells = [c.cell_contents for c in method.__closure__ or ()]
    return next(c for c in cells if isinstance(c, FastPath))


def _same(out, expected) -> None:
    np.testing.assert_array_equal(np.asarray(out), expected)
    assert np.asarray(out).dtype == np.asarray(expected).dtype


OPERANDS = [
    (np.float32([1.5, -2.0, 3.0]), np.float32([0.5, 4.0, -1.0])),
    (np.float64([1.5, -2.0, 3.0]), np.float64([0.5, 4.0, -1.0])),   # another dtype
    (np.float32([[1.5, -2.0]]), np.float32([[0.5, 4.0]])),          # another shape
    (np.int32([7, -3, 2]), np.int32([2, 5, -4])),
]


@pytest.mark.parametrize("symbol, np_fn", [("add", np.add), ("mul", np.multiply),
                                           ("sub", np.subtract), ("lt", np.less)])
def test_a_hit_answers_as_the_first_call_for_each_type_and_shape(symbol, np_fn):
    method = getattr(hd.Array, f"__{symbol}__")
    table = _fast_of(method).table
    table.clear()  # what earlier tests in this process left (their signatures, not ours)
    for x, y in OPERANDS * 2:  # the second round hits for every signature
        _same(method(hd.array(x), hd.array(y)), np_fn(x, y))
    ours = {(type(hd.array(x)), type(hd.array(y))) for x, y in OPERANDS}
    assert ours <= set(table) and all(table[k][1] is not None for k in ours)


def test_python_scalars_are_weak_and_their_values_are_not_cached():
    x = np.float16([1.0, 2.0, 4.0])
    a = hd.array(x)
    for value in (0.5, 3.0, -0.25, 1e-3):  # one compiled module, each value passed in
        _same(a * value, x * np.float16(value))
        _same(value - a, np.float16(value) - x)
    # A numpy scalar is strongly typed: promotion to float32, not the weak float16.
    _same(a * np.float32(0.5), x * np.float32(0.5))
    _same(a * 0.5, x * np.float16(0.5))


def test_ints_out_of_the_operands_range_still_raise_after_a_hit():
    a = hd.array(np.int8([1, 2, 3]))
    for _ in range(2):
        _same(a + 100, np.int8([101, 102, 103]))
    with pytest.raises(OverflowError, match="int8"):
        a + 300
    _same(a + -128, np.int8([-127, -126, -125]))


def test_complex_and_bool_operands():
    z = np.complex64([1 + 2j, -3j])
    for _ in range(2):
        _same(hd.array(z) * 2j, z * np.complex64(2j))
        _same(hd.array(np.float32([1, 2])) + True, np.float32([2, 3]))


def test_a_method_added_to_the_generic_after_a_hit_is_taken():
    # A shape no other test uses: the method stays registered (plum cannot remove one).
    x = np.arange(21, dtype=np.float32).reshape(3, 1, 7)
    a = hd.array(x)
    for _ in range(2):
        _same(a - a, x - x)
    seen = []

    @stdlib.subtract.dispatch
    def subtract(p: type(a), q: type(a)):
        seen.append(1)
        return hd.ops.Add()(p, q)  # a user's meaning, to tell it from the stdlib's

    _same(a - a, x + x)
    _same(a - a, x + x)
    assert len(seen) == 2


def test_staging_and_derivatives_take_the_long_way():
    a = hd.array(np.float32([1.0, 2.0]))
    _ = a * a, a * a  # a hit eagerly
    f = hd.compile(lambda x: x * x)
    _same(f(a), np.float32([1.0, 4.0]))
    assert "multiply" in hd.code_hlo(f, a)
    g = hd.grad(lambda x: stdlib.sum(x * x))(a)
    _same(g, np.float32([2.0, 4.0]))
    fast = _fast_of(hd.Array.__mul__)
    with hd.ir.graph.Builder("probe"):
        assert fast((a, a)) is MISS


def test_a_symbolic_array_that_escaped_is_refused_after_a_hit():
    a = hd.array(np.float32([1.0, 2.0]))
    _ = a + a, a + a
    escaped = []
    hd.compile(lambda x: escaped.append(x) or x)(a)
    with pytest.raises(Exception, match="escaped|symbolic"):
        escaped[0] + a


def test_unary_operators_and_equality():
    x = np.float32([1.0, -2.0, 0.0])
    a = hd.array(x)
    for _ in range(2):
        _same(-a, -x)
        _same(abs(a), np.abs(x))
        _same(a == a, x == x)
        _same(a != 0.0, x != 0)
        _same(~hd.array(np.int16([1, -2])), ~np.int16([1, -2]))
    assert _fast_of(hd.Array.__neg__).table


def test_a_generic_without_an_eager_module_is_never_fast():
    fast = FastPath(stdlib.matmul)
    m = hd.array(np.eye(2, dtype=np.float32))
    stdlib.matmul(m, m)
    assert fast.learn((m, m)) is False
    assert fast((m, m)) is MISS
    assert operators.FastPath is FastPath


def test_a_hit_follows_a_change_of_the_default_float():
    a = hd.array(np.int32([1, 2]))
    for _ in range(2):
        _same(a * 0.5, np.float64([0.5, 1.0]))
    hd.config.default_float = "float32"
    try:
        for _ in range(2):
            _same(a * 0.5, np.float32([0.5, 1.0]))
    finally:
        hd.config.default_float = "float64"
    _same(a * 0.5, np.float64([0.5, 1.0]))


def test_the_fast_path_table_is_bounded():
    fast = _fast_of(hd.Array.__truediv__)
    fast.table.clear()  # bounded when it grows: start below the small bound set here
    kept = hd.config.eager_module_signatures
    hd.config.eager_module_signatures = 2  # a small bound: few compiles
    try:
        limit = 4 * hd.config.eager_module_signatures
        for n in range(1, limit + 3):  # more shapes than the table keeps
            x = np.arange(1, n + 1, dtype=np.float32)
            _same(hd.array(x) / hd.array(x), x / x)
            assert 0 < len(fast.table) <= limit
    finally:
        hd.config.eager_module_signatures = kept


def test_a_jax_array_with_an_hlodsl_array_is_an_hlodsl_array_in_either_order():
    import jax.numpy as jnp

    a = hd.array(np.float32([1, 2]))
    j = jnp.asarray(np.float32([3, 4]))
    for got, want in [(a + j, [4, 6]), (j + a, [4, 6]), (j - a, [2, 2]), (a * j, [3, 8]),
                      (j / a, [3, 2]), (j @ a, 11), (j ** a, [3, 16]), (j < a, [0, 0]),
                      (j == a, [0, 0]), (a != j, [1, 1])]:
        assert isinstance(got, hd.Array), type(got)
        np.testing.assert_array_equal(np.asarray(got), want)
    assert isinstance(hd.compile(lambda x: j * x + x)(a), hd.Array)  # a constant, staged
    assert type(jnp.asarray(a)) is type(j)  # jax still reads one for its own functions
