"""``hd.jacfwd`` and ``hd.jacrev`` against ``jax.jacfwd`` / ``jax.jacrev``: the same output
structure (output leaves outside, differentiated arguments inside), shapes and values, for
int and tuple ``argnums``, ``has_aux``, pytrees in and out, eagerly, staged, and under
``hd.grad`` (a Jacobian inside a derivative)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp

RNG = np.random.default_rng(0)
X = RNG.standard_normal(3)
Y = {"w": RNG.standard_normal(3), "v": RNG.standard_normal((2, 2))}


def f(x, y):
    return {"a": xp.sin(x) * y["w"], "b": (xp.sum(x * x) * y["v"], xp.exp(y["v"]))}


def f_jax(x, y):
    return {"a": jnp.sin(x) * y["w"], "b": (jnp.sum(x * x) * y["v"], jnp.exp(y["v"]))}


def _host(tree):
    return jax.tree_util.tree_map(np.asarray, hd.tree_map(np.asarray, tree))


def _same(got, want):
    got_leaves, got_tree = jax.tree_util.tree_flatten(_host(got))
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,)])
@pytest.mark.parametrize("ours,theirs", [(hd.jacfwd, jax.jacfwd), (hd.jacrev, jax.jacrev)],
                         ids=["jacfwd", "jacrev"])
def test_jacobians_of_pytrees_match_jax(ours, theirs, argnums):
    got = ours(f, argnums=argnums)(hd.array(X), hd.tree_map(hd.array, Y))
    _same(got, theirs(f_jax, argnums=argnums)(X, Y))


@pytest.mark.parametrize("ours,theirs", [(hd.jacfwd, jax.jacfwd), (hd.jacrev, jax.jacrev)],
                         ids=["jacfwd", "jacrev"])
def test_has_aux_returns_the_aux_untouched(ours, theirs):
    def g(x):
        return xp.tanh(x) * 2.0, {"n": xp.sum(x)}

    def g_jax(x):
        return jnp.tanh(x) * 2.0, {"n": jnp.sum(x)}

    jac, aux = ours(g, has_aux=True)(hd.array(X))
    jac_want, aux_want = theirs(g_jax, has_aux=True)(X)
    _same(jac, jac_want)
    _same(aux, aux_want)


@pytest.mark.parametrize("ours", [hd.jacfwd, hd.jacrev], ids=["jacfwd", "jacrev"])
def test_staged_and_under_grad(ours):
    def g(x):
        return xp.sin(x) * x[0]

    def g_jax(x):
        return jnp.sin(x) * x[0]

    staged = hd.compile(ours(g))(hd.array(X))
    np.testing.assert_allclose(np.asarray(staged), jax.jacfwd(g_jax)(X), rtol=1e-12)
    # A Jacobian inside a gradient: the vmap'ed jvp (or pullback) takes x as an input of
    # its body, so the outer derivative reaches it (eagerly too: test_grad_of_jacfwd_eagerly).
    got = hd.compile(hd.grad(lambda x: xp.sum(ours(g)(x) ** 2)))(hd.array(X))
    want = jax.grad(lambda x: jnp.sum(jax.jacfwd(g_jax)(x) ** 2))(X)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_a_scalar_function_and_a_matrix_input():
    A = RNG.standard_normal((2, 3))
    got = hd.jacrev(lambda a: xp.sum(xp.sin(a)))(hd.array(A))
    np.testing.assert_allclose(np.asarray(got), np.cos(A), rtol=1e-12)
    got = hd.jacfwd(lambda a: a @ a.T)(hd.array(A))
    want = jax.jacfwd(lambda a: a @ a.T)(A)
    assert got.shape == (2, 2, 2, 3)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_integer_arguments_and_results_are_refused_with_the_path():
    with pytest.raises(TypeError, match=r"jacfwd.*argument args\[0\].*s32"):
        hd.jacfwd(lambda i: i * 2)(hd.array(np.int32([1, 2])))
    with pytest.raises(TypeError, match=r"jacrev.*result f\(\.\.\.\)\[1\].*s32"):
        hd.jacrev(lambda x: (x, hd.array(np.int32(1))))(hd.array(X))
    with pytest.raises(NotImplementedError, match="holomorphic"):
        hd.jacfwd(lambda x: x, holomorphic=True)


def test_grad_of_jacfwd_eagerly():
    # Eager grad: x is a concrete array the tape follows; jvp inside vmap's body must
    # take it as a body input (a fresh object there was a constant: the gradient was 0).
    got = hd.grad(lambda x: xp.sum(hd.jacfwd(xp.sin)(x)))(hd.array(X[:2]))
    want = jax.grad(lambda x: jnp.sum(jax.jacfwd(jnp.sin)(x)))(X[:2])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
