"""Reverse mode through scan and fori_loop (static trip count), against jax.

The pullback of a scan is a reverse scan that re-runs the body under a tape
(transforms/scan_ad.py); these tests check it against jax.grad of jax.lax.scan /
fori_loop on a small RNN whose body closes over its weights, eagerly and
compiled, forwards and reversed, and that a loop with a data-dependent trip
count is refused in reverse mode with a message saying what to use.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp


def rnn_loss(W, h0, xs, np, scan, reverse):
    def step(h, x):  # closes over W: its cotangent is summed over the steps
        h = np.tanh(W @ h + x)
        return h, np.sum(h * h)

    h, ys = scan(step, h0, xs, reverse=reverse)
    return np.sum(ys * ys) + np.sum(h)


def ours(W, h0, xs, reverse):
    return rnn_loss(W, h0, xs, xp, hd.scan, reverse)


def theirs(W, h0, xs, reverse):
    return rnn_loss(W, h0, xs, jnp, jax.lax.scan, reverse)


GRAD = hd.grad(ours, argnums=(0, 1, 2))
STAGED = hd.compile(GRAD)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**16), steps=st.integers(0, 6), reverse=st.booleans())
def test_grad_of_an_rnn_scan_equals_jax(seed, steps, reverse):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((3, 3)) * 0.5
    h0, xs = rng.standard_normal(3), rng.standard_normal((steps, 3))
    expected = jax.grad(theirs, argnums=(0, 1, 2))(W, h0, xs, reverse)
    args = (hd.array(W), hd.array(h0), hd.array(xs), reverse)
    for got in (GRAD(*args), STAGED(*args)):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-12, atol=1e-12)


def test_grad_through_fori_loop_with_an_integer_counter_in_the_carry():
    def f(x):
        return hd.fori_loop(0, 5, lambda i, y: y * x + xp.sin(y), hd.array(1.0))

    def fj(x):
        return jax.lax.fori_loop(0, 5, lambda i, y: y * x + jnp.sin(y), 1.0)

    expected = jax.grad(fj)(0.7)
    assert abs(float(hd.grad(f)(hd.array(0.7))) - expected) < 1e-12
    assert abs(float(hd.compile(hd.grad(f))(hd.array(0.7))) - expected) < 1e-12
    # forward mode goes through the While op's jvp rule instead
    assert abs(float(hd.jvp(f, (hd.array(0.7),), (hd.array(1.0),))[1]) - expected) < 1e-12


def test_the_backward_loop_does_not_unroll():
    def loss(x, n):
        return xp.sum(hd.fori_loop(0, n, lambda i, y: xp.sin(y) * x, x))

    x = hd.array(np.ones(4))
    sizes = {len(str(hd.code_hlo(hd.grad(loss), x, n)).splitlines()) for n in (3, 300)}
    assert len(sizes) == 1


def test_reverse_mode_through_a_data_dependent_loop_is_refused_clearly():
    def f(x):
        return hd.while_loop(lambda y: xp.sum(y) < 10.0, lambda y: y * 2.0, x)

    with pytest.raises(NotImplementedError, match="fori_loop|scan"):
        hd.grad(lambda x: xp.sum(f(x)))(hd.array(np.ones(2)))


def test_a_training_loop_of_n_steps_is_one_executable_and_equals_stepping_eagerly():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(32, 3))
    y = X @ np.float64([1.0, -2.0, 0.5])

    def loss(w, X, y):
        r = X @ w - y
        return xp.mean(r * r)

    def step(w, X, y):
        return w - 0.1 * hd.grad(loss)(w, X, y)

    @hd.compile
    def train(X, y, steps):
        return hd.fori_loop(0, steps, lambda i, w: step(w, X, y), xp.zeros(3))

    before = hd.runtime.stats["compiles"]
    w = train(hd.array(X), hd.array(y), 50)
    assert hd.runtime.stats["compiles"] == before + 1
    expected = hd.array(np.zeros(3))
    for _ in range(50):  # the same steps, each its own compiled call
        expected = STEP(expected, hd.array(X), hd.array(y))
    np.testing.assert_allclose(np.asarray(w), np.asarray(expected), rtol=1e-12, atol=1e-14)
    # and the training loop itself is differentiable in its data (reverse through fori_loop)
    g = hd.grad(lambda y: xp.sum(train.fn(hd.array(X), y, 5)))(hd.array(y))

    def train_jax(y):
        def jstep(i, w):
            return w - 0.1 * jax.grad(lambda w: jnp.mean((X @ w - y) ** 2))(w)
        return jnp.sum(jax.lax.fori_loop(0, 5, jstep, jnp.zeros(3)))

    np.testing.assert_allclose(np.asarray(g), jax.grad(train_jax)(y), rtol=1e-10, atol=1e-12)


STEP = hd.compile(lambda w, X, y: w - 0.1 * hd.grad(
    lambda w: xp.mean((X @ w - y) * (X @ w - y)))(w))
