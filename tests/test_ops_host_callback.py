"""HostCallback, the op under hd.pure_callback/io_callback/debug_print, against numpy.

The op is applied directly, eagerly (the function just runs) and under
``hd.compile`` (a custom call of jaxlib's Python-callback target), to arrays
of every kind of element type the runtime hands to Python (floats, bfloat16,
integers, bools, complex), and checked against the numpy function it calls;
also with an explicit token (``ordered=True``) and under ``vmap`` for each
``vmap_method``. The public functions are tested in tests/test_callbacks.py.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hlodsl as hd
from hlodsl import ops
from hlodsl.arrays.types import ArrayType

COVERED_OPCODES = {"host-callback"}

DTYPES = [np.float32, np.float64, ml_dtypes.bfloat16, np.int8, np.int64, np.uint32, np.bool_,
          np.complex64]


def _flip_and_total(x, y):
    """The host function: numpy's own results, of the operands' types."""
    return [np.flip(x), np.asarray(x.size + y.sum(), y.dtype)]


@st.composite
def operands(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3))
    x = draw(hnp.arrays(np.float32, shape, elements=st.integers(-3, 3))).astype(dtype)
    y = draw(hnp.arrays(np.int32, (2,), elements=st.integers(-9, 9)))
    return x, y


@settings(max_examples=10, deadline=None)
@given(operands())
def test_host_callback_equals_the_numpy_function_eager_and_compiled(xy):
    x, y = xy
    op = ops.HostCallback(_flip_and_total, (ArrayType(x.dtype, x.shape), ArrayType(y.dtype, ())))
    want = _flip_and_total(x, y)
    for run in (op, hd.compile(lambda a, b: op(a, b))):
        got = run(hd.array(x), hd.array(y))
        assert [np.asarray(g).dtype for g in got] == [w.dtype for w in want]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)


def test_an_ordered_call_takes_and_returns_a_token():
    seen = []
    op = ops.HostCallback(lambda v: seen.append(v.tolist()), (), ordered=True,
                          has_side_effect=True)

    def f(x):
        token = ops.AfterAll()()
        (token,) = op(token, x)
        op(token, x + 1)
        return x

    hd.compile(f)(hd.array(np.int32([1, 2])))
    assert seen == [[1, 2], [2, 3]]
    with pytest.raises(TypeError, match="tokens exist only inside staged programs"):
        op(hd.array(np.int32(1)))


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_the_batch_rule_equals_a_loop_over_examples(method):
    calls = []

    def host(a, b):
        calls.append((a.shape, b.shape))
        return [a * b]

    op = ops.HostCallback(host, (ArrayType(np.float32, (2,)),), vmap_method=method)
    xs, w = np.float32([[1, 2], [3, 4], [5, 6]]), np.float32([10, 100])
    got = hd.vmap(lambda a, b: op(a, b)[0], in_axes=(0, None))(hd.array(xs), hd.array(w))
    np.testing.assert_array_equal(np.asarray(got), xs * w)
    want = {"sequential": [((2,), (2,))] * 3, "expand_dims": [((3, 2), (1, 2))],
            "broadcast_all": [((3, 2), (3, 2))]}[method]
    assert calls == want
