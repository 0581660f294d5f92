"""``hd.associative_scan`` against ``jax.lax.associative_scan``: cumulative sums and products,
a linear recurrence on pairs, max, reverse, axes other than 0, odd and even lengths, a
dict of leaves; staged equals eager; gradients against jax.grad; vmap against a loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp


def compose(f, g):  # x -> a x + b, applied f then g
    return f[0] * g[0], g[0] * f[1] + g[1]


COMBINERS = {
    "cumsum": (lambda a, b: a + b, lambda a, b: a + b, 1),
    "cumprod": (lambda a, b: a * b, lambda a, b: a * b, 1),
    "max": (xp.maximum, jnp.maximum, 1),
    "recurrence": (compose, compose, 2),
}


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(sorted(COMBINERS)), n=st.integers(1, 9),
       rest=st.lists(st.integers(1, 3), max_size=2), data=st.data())
def test_matches_jax(kind, n, rest, data):
    ours, theirs, arity = COMBINERS[kind]
    shape = list(rest)
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    shape.insert(axis % (len(shape) + 1), n)
    reverse = data.draw(st.booleans())
    rng = np.random.default_rng(n)
    elems = tuple(rng.uniform(0.5, 1.5, shape) for _ in range(arity))
    elems = elems[0] if arity == 1 else elems
    # Staged: one compile per example, instead of one per op and shape eagerly.
    scan = hd.compile(lambda e: hd.associative_scan(ours, e, reverse=reverse, axis=axis))
    got = scan(hd.tree_map(hd.array, elems))
    # jax's reverse=True fails on a negative axis (lax.rev): it gets the axis counted from 0.
    want = jax.jit(lambda e: jax.lax.associative_scan(theirs, e, reverse=reverse,
                                                      axis=axis % len(shape)))(elems)
    for g, w in zip(hd.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)


def test_dict_of_leaves_staged_and_integer_and_boolean_types():
    x = {"s": np.arange(7, dtype=np.int32), "m": np.array([0, 0, 1, 0, 0, 1, 0], bool)}
    fn = lambda a, b: {"s": a["s"] + b["s"], "m": a["m"] | b["m"]}  # noqa: E731
    got = hd.compile(lambda x: hd.associative_scan(fn, x))(hd.tree_map(hd.array, x))
    np.testing.assert_array_equal(np.asarray(got["s"]), np.cumsum(x["s"]))
    np.testing.assert_array_equal(np.asarray(got["m"]), np.logical_or.accumulate(x["m"]))


@pytest.mark.parametrize("n,reverse", [(6, False), (7, True)])
def test_gradient_of_a_recurrence_matches_jax(n, reverse):
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0.5, 1.0, (n, 2)), rng.standard_normal((n, 2))

    def loss(a, b):
        return xp.sum(hd.associative_scan(compose, (a, b), reverse=reverse, axis=0)[1] ** 2)

    def loss_jax(a, b):
        return jnp.sum(jax.lax.associative_scan(compose, (a, b), reverse=reverse)[1] ** 2)

    got = hd.compile(hd.grad(loss, argnums=(0, 1)))(hd.array(a), hd.array(b))
    want = jax.jit(jax.grad(loss_jax, argnums=(0, 1)))(a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10)


def test_vmap_equals_a_loop():
    x = np.random.default_rng(4).standard_normal((3, 5))
    got = hd.vmap(lambda r: hd.associative_scan(lambda a, b: a + b, r))(hd.array(x))
    np.testing.assert_allclose(np.asarray(got), np.cumsum(x, axis=1), rtol=1e-12)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="associative_scan: the leaves have different sizes"):
        hd.associative_scan(compose, (hd.array(np.ones(3)), hd.array(np.ones(4))))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        hd.associative_scan(lambda a, b: a + b, hd.array(np.ones((2, 2))), axis=2)
    with pytest.raises(TypeError, match="must keep each leaf's type"):
        hd.associative_scan(lambda a, b: xp.sum(a + b), hd.array(np.ones(3)))
