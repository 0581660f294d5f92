"""``BlockedTopK``: the top k of long rows in two rounds gives the op's own result, bit for bit.

The rewritten program is compared with the same program compiled without
the pass (XLA's topk: the oracle), on hypothesis-drawn shapes, k, order and
element types, with values drawn from a few to make ties (of elements and of
group maxima), NaNs of both signs, signed zeros and infinities. Values are
compared as bits and indices exactly. Then the pass in the memory pipeline:
a kNN under a limit, a top-k inside a scan body, and the gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops
from hlodsl.transforms.passes import BlockedTopK, Distances, Split
from hlodsl.transforms.passes.top_k import group_size

FEW = settings(max_examples=6, deadline=None)
ANY_LENGTH = [BlockedTopK(min_length=0)]

_SPECIAL = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf])


def bits(a: np.ndarray) -> np.ndarray:
    """The elements' bits (NaN payloads and signs, signed zeros kept)."""
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def drawn(rng, dtype: str, shape: tuple, distinct: int, special: bool) -> np.ndarray:
    """Values from ``distinct`` small integers (ties), floats with some special values."""
    x = rng.integers(-distinct, distinct, size=shape)
    if dtype.startswith("int"):
        return x.astype(dtype)
    x = (x * 0.25).astype(dtype)
    if special:
        hit = rng.random(shape) < 0.05
        x[hit] = rng.choice(_SPECIAL, size=int(hit.sum())).astype(dtype)
    return x


def assert_same(got, want) -> None:
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(bits(np.asarray(g)), bits(np.asarray(w)))


@FEW
@given(dtype=st.sampled_from(["float32", "float64", "float16", "int32", "int64"]),
       lead=st.lists(st.integers(1, 3), max_size=2), extra=st.integers(0, 2000),
       k=st.integers(1, 8), largest=st.booleans(), distinct=st.sampled_from([2, 5, 1000]),
       special=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_two_rounds_equal_xla_top_k_bit_for_bit(dtype, lead, extra, k, largest, distinct,
                                                special, seed):
    n = 8 * 32 * k + extra  # long enough for the pass (round 2 under an eighth of the row)
    x = hd.array(drawn(np.random.default_rng(seed), dtype, tuple(lead) + (n,), distinct,
                       special))
    top = ops.TopK(k, largest)
    blocked = hd.compile(top, passes=ANY_LENGTH)
    report = blocked.report(x)
    assert "2 rounds" in report, report  # the rewrite happened (else this tests nothing)
    assert_same(blocked(x), hd.compile(top)(x))


@pytest.mark.parametrize("largest", [True, False])
def test_ties_across_groups_keep_the_lowest_indices(largest):
    """Every group's maximum is the same value: the k answers are the first k
    occurrences, in whichever groups they lie (the short last group included)."""
    n, k = 4096 + 17, 6
    x = np.zeros((2, n), np.float32)
    x[:, ::97] = 1.0 if largest else -1.0  # one per group or so, all tied
    x[1, -3:] = 2.0 if largest else -2.0  # the best of row 1 are in the short last group
    top = ops.TopK(k, largest)
    blocked = hd.compile(top, passes=ANY_LENGTH)
    assert "and one of" in blocked.report(hd.array(x))
    assert_same(blocked(hd.array(x)), hd.compile(top)(hd.array(x)))
    np.testing.assert_array_equal(np.asarray(blocked(hd.array(x))[1])[0], np.arange(k) * 97)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_negative_and_mixed_sign_rows(dtype, largest):
    """Negative floats order backwards as integers: the keys must flip them."""
    import ml_dtypes

    rng = np.random.default_rng(7)
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    rows = np.stack([-np.abs(rng.normal(size=5000)), rng.normal(size=5000)]).astype(np_dtype)
    top = ops.TopK(7, largest)
    blocked = hd.compile(top, passes=[BlockedTopK()])
    assert "2 rounds" in blocked.report(hd.array(rows))
    assert_same(blocked(hd.array(rows)), hd.compile(top)(hd.array(rows)))


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_a_later_group_with_a_larger_maximum_does_not_win_a_tie(dtype):
    """Group 1 holds the best (9) and a 3; group 0 holds 5 and a 3 at a lower index:
    the third answer is group 0's 3, though group 1 was chosen first."""
    x = np.zeros((1, 8192), dtype)
    x[0, [0, 1, 32, 33]] = [5, 3, 9, 3]
    top = ops.TopK(3)
    blocked = hd.compile(top, passes=ANY_LENGTH)
    assert "groups of 32" in blocked.report(hd.array(x))
    values, indices = blocked(hd.array(x))
    np.testing.assert_array_equal(np.asarray(indices), [[32, 0, 1]])
    np.testing.assert_array_equal(np.asarray(values), np.array([[9, 5, 3]], dtype))


def test_short_rows_and_unsupported_types_are_left_alone():
    f = hd.compile(ops.TopK(4), passes=[BlockedTopK()])
    assert "nothing changed" in f.report(hd.array(np.ones((3, 1000), np.float32)))
    u = hd.compile(ops.TopK(4), passes=ANY_LENGTH)
    assert "nothing changed" in u.report(hd.array(np.ones((3, 5000), np.uint32)))


def test_group_size_is_a_power_of_two_near_the_balance_point():
    for n, k in [(6250, 10), (10 ** 5, 10), (10 ** 6, 10), (10 ** 6, 100), (5000, 1)]:
        g = group_size(n, k)
        assert g >= 32 and g & (g - 1) == 0
        assert 0.75 * (n / k) ** 0.5 / 1.5 <= g or g == 32


def sq_dist(a, b):
    return xp.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)


@FEW
@given(nq=st.integers(20, 60), n=st.integers(5000, 12000), k=st.integers(1, 10),
       seed=st.integers(0, 99))
def test_knn_under_a_limit_selects_as_without_the_pass(nq, n, k, seed):
    """The memory pipeline's kNN: the same split program with and without the pass."""
    rng = np.random.default_rng(seed)
    q = hd.array(rng.normal(size=(nq, 8)).astype(np.float32))
    p = hd.array(rng.normal(size=(n, 8)).astype(np.float32))
    knn = lambda q, p: xp.top_k(-sq_dist(q, p), k)  # noqa: E731
    limit = nq * n * 4 // 2
    with_pass = hd.compile(knn, memory_limit=limit, passes=[Distances(), Split(), BlockedTopK()])
    report = with_pass.report(q, p)
    assert "slices of" in report and "2 rounds" in report, report
    assert_same(with_pass(q, p), hd.compile(knn, memory_limit=limit,
                                            passes=[Distances(), Split()])(q, p))
    want = np.argsort(((np.asarray(q)[:, None] - np.asarray(p)[None]) ** 2).sum(-1), axis=1,
                      kind="stable")
    np.testing.assert_array_equal(np.asarray(with_pass(q, p)[1]), want[:, :k])


def test_knn_is_sliced_along_the_queries_so_each_row_selects_once():
    q = hd.array(np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32))
    p = hd.array(np.random.default_rng(1).normal(size=(20000, 8)).astype(np.float32))
    f = hd.compile(lambda q, p: xp.top_k(-sq_dist(q, p), 5), memory_limit=64 * 20000)
    report = f.report(q, p)
    assert "along dimension 0" in report and "2 rounds" in report, report


def test_a_top_k_in_a_scan_body_is_rewritten():
    def f(x):
        def step(c, row):
            v, i = ops.TopK(3)(row * c)
            return c + v[0], i
        return hd.scan(step, np.float32(1), x)

    x = hd.array(np.random.default_rng(2).normal(size=(3, 8192)).astype(np.float32))
    blocked = hd.compile(f, passes=[BlockedTopK()])
    assert "in the body of While" in blocked.report(x)
    assert_same(blocked(x), hd.compile(f)(x))  # (carry, the indices of each step)


@settings(max_examples=3, deadline=None)
@given(n=st.integers(4096, 9000), k=st.integers(1, 6), seed=st.integers(0, 99))
def test_gradient_through_the_rewritten_top_k(n, k, seed):
    rng = np.random.default_rng(seed)
    x = hd.array(rng.normal(size=(2, n)))
    w = hd.array(rng.normal(size=(2, k)))
    loss = hd.grad(lambda x, w: xp.sum(xp.top_k(x * x, k)[0] * w))
    blocked = hd.compile(loss, passes=[BlockedTopK()])
    assert "2 rounds" in blocked.report(x, w)
    got, want = np.asarray(blocked(x, w)), np.asarray(hd.compile(loss)(x, w))
    np.testing.assert_array_equal(got, want)
    assert np.count_nonzero(got) <= 2 * k  # only the selected elements get a gradient
