"""``nn.logsumexp`` and ``nn.one_hot`` against jax.nn; the random draws ``randint``,
``permutation``, ``categorical``, ``bernoulli``, ``choice`` by their statistics (hlodsl's
generator is not jax's, so values cannot match: ranges, shapes, dtypes, permutations being
permutations, and frequencies by chi-square with fixed keys and a generous bound); ``vmap``
over a batch of keys equal to a Python loop over them (the RngBitGenerator batch rule)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import hlodsl as hd
from hlodsl import ops
from hlodsl.stdlib import nn

INF = np.inf
ROWS = np.array([[1.0, 2.0, 3.0], [0.0, -INF, 5.0], [-INF, -INF, -INF], [1e3, 1e3, -1e3]])


# -- logsumexp and one_hot -------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": (0, 1)},
    {"axis": 1, "b": np.array([1.0, 2.0, 0.5])},
    {"axis": 1, "b": np.array([1.0, -2.0, 0.5]), "return_sign": True},
], ids=repr)
def test_logsumexp_matches_jax_with_inf_rows(kwargs):
    b = kwargs.pop("b", None)
    # Staged and jitted: one compile each, rather than one per op and shape eagerly.
    got = hd.compile(lambda x, b: nn.logsumexp(x, b=b, **kwargs))(
        hd.array(ROWS), None if b is None else hd.array(b))
    want = jax.jit(lambda x, b: jax.nn.logsumexp(x, b=b, **kwargs))(ROWS, b)
    for g, w in zip(hd.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)


def test_logsumexp_gradient_is_softmax_and_zero_at_minus_inf():
    f = lambda x: (nn.logsumexp(x, axis=1) * hd.array(np.arange(1.0, 5.0))).sum()  # noqa
    f_jax = lambda x: (jax.nn.logsumexp(x, axis=1) * np.arange(1.0, 5.0)).sum()  # noqa
    got = np.asarray(hd.compile(hd.grad(f))(hd.array(ROWS)))
    want = np.asarray(jax.jit(jax.grad(f_jax))(ROWS))
    # Finite (0 at -inf) where a row has a finite element; NaN (as jax's) for an all -inf row.
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    assert np.isfinite(got[[0, 1, 3]]).all() and got[1, 1] == 0


@pytest.mark.parametrize("axis,dtype", [(-1, None), (0, hd.float32), (1, hd.int32)])
def test_one_hot_matches_jax(axis, dtype):
    x = np.array([[0, 2, 3], [-1, 1, 2]], np.int32)  # 3 and -1 are out of range: zeros
    got = nn.one_hot(hd.array(x), 3, dtype=dtype, axis=axis)
    want = jax.nn.one_hot(x, 3, dtype=dtype.np_dtype if dtype else jnp.float64, axis=axis)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# -- draws: ranges, shapes, permutations, frequencies -----------------------------------------

def _chi2_ok(counts, probs) -> bool:
    counts = np.asarray(counts, np.float64)
    return stats.chisquare(counts, counts.sum() * np.asarray(probs)).pvalue > 1e-4


def test_randint_range_dtype_bounds_and_uniformity():
    x = np.asarray(nn.randint(nn.key(0), (4000,), -3, 5, dtype=hd.int32))
    assert x.dtype == np.int32 and x.min() == -3 and x.max() == 4
    assert _chi2_ok(np.bincount(x + 3), np.full(8, 1 / 8))
    lo = hd.array(np.int32([0, 10, 7]))
    y = np.asarray(nn.randint(nn.key(1), (500, 3), lo, 12))
    assert ((y >= [0, 10, 7]) & (y < 12)).all()
    assert (np.asarray(nn.randint(nn.key(2), (5,), 4, 4)) == 4).all()  # empty range: minval


def test_permutation_is_a_permutation():
    p = np.asarray(nn.permutation(nn.key(0), 50))
    assert sorted(p.tolist()) == list(range(50)) and (p != np.arange(50)).any()
    x = np.arange(12).reshape(3, 4)
    rows = np.asarray(nn.permutation(nn.key(1), hd.array(x), axis=1))
    assert sorted(map(tuple, rows.T.tolist())) == sorted(map(tuple, x.T.tolist()))
    ind = np.asarray(nn.permutation(nn.key(2), hd.array(np.tile(np.arange(20), (3, 1))),
                                    axis=1, independent=True))
    assert all(sorted(r.tolist()) == list(range(20)) for r in ind)
    assert len({tuple(r) for r in ind.tolist()}) == 3  # each row shuffled on its own
    first = np.asarray([nn.permutation(nn.key(s), 3)[0].item() for s in range(600)])
    assert _chi2_ok(np.bincount(first, minlength=3), np.full(3, 1 / 3))


def test_categorical_frequencies_and_shapes():
    probs = np.array([0.1, 0.6, 0.3])
    logits = hd.array(np.log(np.stack([probs, probs[::-1]])).astype(np.float32))
    draws = np.asarray(nn.categorical(nn.key(0), logits, shape=(3000, 2)))
    assert draws.shape == (3000, 2)
    assert _chi2_ok(np.bincount(draws[:, 0], minlength=3), probs)
    assert _chi2_ok(np.bincount(draws[:, 1], minlength=3), probs[::-1])
    along0 = nn.categorical(nn.key(1), hd.array(np.zeros((3, 5), np.float32)), axis=0)
    assert along0.shape == (5,) and (np.asarray(along0) < 3).all()
    with pytest.raises(ValueError, match="categorical: shape.*must end with.*batch shape"):
        nn.categorical(nn.key(0), logits, shape=(4, 3))


def test_bernoulli_frequency_and_default_shape():
    p = hd.array(np.float32([0.2, 0.7]))
    draws = np.asarray(nn.bernoulli(nn.key(0), p, (4000, 2)))
    assert draws.dtype == np.bool_
    for j, q in enumerate([0.2, 0.7]):
        assert _chi2_ok([(~draws[:, j]).sum(), draws[:, j].sum()], [1 - q, q])
    assert nn.bernoulli(nn.key(1), p).shape == (2,) and nn.bernoulli(nn.key(1)).shape == ()


def test_choice_with_and_without_replacement_and_probabilities():
    a = hd.array(np.arange(10.0) * 10)
    d = np.asarray(nn.choice(nn.key(0), a, (4, 2)))
    assert d.shape == (4, 2) and np.isin(d, np.arange(10.0) * 10).all()
    u = np.asarray(nn.choice(nn.key(1), 7, (7,), replace=False))
    assert sorted(u.tolist()) == list(range(7))
    p = np.array([0.5, 0.1, 0.0, 0.4])
    w = np.asarray(nn.choice(nn.key(2), 4, (4000,), p=hd.array(p)))
    assert (w != 2).all() and _chi2_ok(np.bincount(w, minlength=4)[[0, 1, 3]], p[[0, 1, 3]])
    nr = np.asarray(nn.choice(nn.key(3), 4, (3,), replace=False, p=hd.array(p)))
    assert len(set(nr.tolist())) == 3 and 2 not in nr.tolist()
    rows = np.asarray(nn.choice(nn.key(4), hd.array(np.arange(6).reshape(2, 3)), (5,), axis=1))
    assert rows.shape == (2, 5) and (rows[1] == rows[0] + 3).all()
    with pytest.raises(ValueError, match="cannot draw 5 elements from 4 without replacement"):
        nn.choice(nn.key(0), 4, (5,), replace=False)


# -- vmap over a batch of keys -------------------------------------------------------------------

DRAWS = {
    "normal": lambda k: nn.normal(k, (3,)),
    "split": lambda k: nn.split(k, 3)[2],
    "randint": lambda k: nn.randint(k, (4,), 0, 100),
    "permutation": lambda k: nn.permutation(k, 6),
    "categorical": lambda k: nn.categorical(k, hd.array(np.zeros((2, 5), np.float32))),
    "bits": lambda k: ops.RngBitGenerator("three_fry", (2, 3), hd.uint32)(k)[1],
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_vmap_over_keys_equals_a_loop(name):
    draw = DRAWS[name]
    keys = [nn.key(s) for s in range(3)]
    batch = hd.array(np.stack([np.asarray(k) for k in keys]))
    loop = np.stack([np.asarray(draw(k)) for k in keys])
    np.testing.assert_array_equal(np.asarray(hd.vmap(draw)(batch)), loop)
    if name == "normal":  # staged, and with the keys' batch axis last
        np.testing.assert_array_equal(np.asarray(hd.compile(hd.vmap(draw))(batch)), loop)
        by_column = hd.array(np.asarray(batch).T.copy())
        np.testing.assert_array_equal(np.asarray(hd.vmap(draw, in_axes=1)(by_column)), loop)
