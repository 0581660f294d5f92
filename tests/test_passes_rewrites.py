"""The rewriting passes: MatrixChain and Distances change the program, never the result."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.transforms.passes import Distances, MatrixChain

FEW = settings(max_examples=12, deadline=None)
sizes = st.integers(1, 40)


def arrays(seed: int, *shapes, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [hd.array(rng.normal(size=s).astype(dtype)) for s in shapes]


def same(fn, args, passes, rtol):
    """``fn`` with ``passes`` equals ``fn`` as written; returns the rewritten one."""
    rewritten = hd.compile(fn, passes=passes)
    for got, want in zip(np.atleast_1d(rewritten(*args)), np.atleast_1d(hd.compile(fn)(*args))):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol,
                                   atol=rtol * max(1.0, float(np.abs(np.asarray(want)).max())))
    return rewritten


# -- MatrixChain ------------------------------------------------------------------------


@FEW
@given(p=st.lists(sizes, min_size=4, max_size=6), left=st.booleans(), right=st.booleans(),
       seed=st.integers(0, 99))
def test_chains_of_any_shape_keep_their_result(p, left, right, seed):
    shapes = [(p[i], p[i + 1]) for i in range(len(p) - 1)]
    if left:
        shapes[0] = (p[1],)
    if right:
        shapes[-1] = (p[-2],)
    args = arrays(seed, *shapes)

    def chain(*ms):
        out = ms[0]
        for m in ms[1:]:
            out = out @ m
        return out

    same(chain, args, [MatrixChain()], 1e-12)


def test_a_b_v_runs_as_two_matrix_vector_products():
    a, b, v = arrays(0, (64, 64), (64, 64), (64,))
    f = same(lambda a, b, v: a @ b @ v, (a, b, v), [MatrixChain()], 1e-12)
    assert "((0 1) 2) -> (0 (1 2))" in f.report(a, b, v)
    assert "f64[64,64] dot(" not in hd.code_hlo(f, a, b, v)


def test_a_chain_already_cheapest_is_left_alone():
    a, b, v = arrays(0, (64, 64), (64, 64), (64,))
    f = hd.compile(lambda a, b, v: a @ (b @ v), passes=[MatrixChain()])
    assert "nothing changed" in f.report(a, b, v)


def test_a_product_read_twice_is_not_recomputed():
    a, b, v = arrays(0, (64, 64), (64, 64), (64,))
    f = hd.compile(lambda a, b, v: (a @ b @ v, a @ b), passes=[MatrixChain()])
    assert "nothing changed" in f.report(a, b, v)


def test_gradients_through_a_reordered_chain():
    a, b, v = arrays(1, (20, 30), (30, 25), (25,))
    loss = hd.grad(lambda a, b, v: xp.sum((a @ b @ v) ** 2), argnums=(0, 1, 2))
    for got, want in zip(hd.compile(loss, passes=[MatrixChain()])(a, b, v),
                         hd.compile(loss)(a, b, v)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)


# -- Distances --------------------------------------------------------------------------


def sq_dist(x, y):
    return xp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)


@FEW
@given(n=sizes, m=sizes, d=st.integers(1, 16), seed=st.integers(0, 99),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_squared_distances_as_a_dot_equal_the_naive_form(n, m, d, seed, dtype):
    x, y = arrays(seed, (n, d), (m, d), dtype=dtype)
    f = same(sq_dist, (x, y), [Distances()], 1e-5 if dtype is np.float32 else 1e-12)
    if min(n, m, d) > 1:  # broadcasting stages size-1 dimensions as reshapes: another form
        assert "one dot" in f.report(x, y)
        assert f"[{n},{m},{d}]" not in hd.code_hlo(f, x, y)
    assert np.all(np.asarray(f(x, y)) >= 0)


@pytest.mark.parametrize("fn", [
    lambda x, y: xp.sum((y[None, :, :] - x[:, None, :]) ** 2, axis=-1),
    lambda x, y: xp.sum((x[:, None, :] - y[None, :, :]) * (x[:, None, :] - y[None, :, :]), 2),
    lambda x, y: xp.exp(-sq_dist(x, y) / 2) @ xp.ones(y.shape[0]),
], ids=["reversed", "d times d", "inside a kernel"])
def test_the_forms_it_matches(fn):
    x, y = arrays(2, (30, 4), (20, 4))
    assert "one dot" in same(fn, (x, y), [Distances()], 1e-12).report(x, y)


def test_batched_distances():
    x, y = arrays(3, (3, 30, 4), (3, 20, 4))
    fn = lambda x, y: xp.sum((x[:, :, None, :] - y[:, None, :, :]) ** 2, axis=-1)  # noqa: E731
    assert "one dot" in same(fn, (x, y), [Distances()], 1e-12).report(x, y)


@pytest.mark.parametrize("fn, shapes", [
    (lambda x, y: xp.sum((x - y) ** 2, axis=-1), ((30, 4), (30, 4))),
    (lambda x, y: xp.sum((x[:, None, :] - y[None, :, :]) ** 3, axis=-1), ((30, 4), (20, 4))),
    (lambda x, y: xp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=0), ((30, 4), (20, 4))),
    (lambda x, y: xp.max((x[:, None, :] - y[None, :, :]) ** 2, axis=-1), ((30, 4), (20, 4))),
], ids=["elementwise", "cube", "sum over a free axis", "max"])
def test_what_it_leaves_alone(fn, shapes):
    args = arrays(4, *shapes)
    assert "nothing changed" in same(fn, args, [Distances()], 0).report(*args)


def test_integer_distances_stay_exact():
    x = hd.array(np.arange(12, dtype=np.int32).reshape(4, 3))
    assert "nothing changed" in same(sq_dist, (x, x), [Distances()], 0).report(x, x)


def test_gradients_through_rewritten_distances():
    x, y = arrays(5, (15, 3), (10, 3))
    loss = hd.grad(lambda x, y: xp.sum(xp.exp(-sq_dist(x, y))), argnums=(0, 1))
    for got, want in zip(hd.compile(loss, passes=[Distances()])(x, y), hd.compile(loss)(x, y)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-12)
