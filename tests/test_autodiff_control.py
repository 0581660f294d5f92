"""Derivatives through control-flow ops: conditional, while (forward mode), call, all-reduce.

Conditional pullbacks and tangents are compared with jax.lax.cond / lax.switch,
the forward derivative of a While with jax.jvp of lax.while_loop, Call with the
inlined function, eagerly and under ``hd.compile``. float64 throughout (the
rules add no rounding of their own: rtol = atol = 1e-12).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops
from platform_rules import needs_devices

TOL = dict(rtol=1e-12, atol=1e-12)


def _close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, **TOL)


def _branch_a(t):
    return t[0] * xp.sin(t[1]), xp.astype(t[2], t[0].dtype) + t[1]


def _branch_b(u):
    return u * u, xp.exp(u)


def _branch_c(t):
    return t[1] / (1.0 + t[0] * t[0]), t[0] - t[1]


def _conditional(which, a, b):
    k = hd.array(np.int32(2))
    if isinstance(which, bool):
        return ops.Conditional(_branch_a, _branch_b)(hd.array(np.bool_(which)), (a, b, k), b)
    return ops.Conditional(branch_computations=(_branch_a, _branch_b, _branch_c))(
        hd.array(np.int32(which)), (a, b, k), b, (a, b))


def _conditional_jax(which, a, b):
    branches = [lambda a, b: (a * jnp.sin(b), 2.0 + b), lambda a, b: (b * b, jnp.exp(b)),
                lambda a, b: (b / (1.0 + a * a), a - b)]
    if isinstance(which, bool):
        return lax.cond(which, branches[0], branches[1], a, b)
    # XLA runs the last branch for an out-of-range index (lax.switch would clamp).
    return lax.switch(which if 0 <= which < 3 else 2, branches, a, b)


def _cond_pullback(which, a, b, ct):
    return hd.vjp(lambda a, b: _conditional(which, a, b), a, b)[1](ct)


def _cond_tangent(which, a, b, ta, tb):
    return hd.jvp(lambda a, b: _conditional(which, a, b), (a, b), (ta, tb))[1]


COND_PULLBACK = hd.compile(_cond_pullback)
COND_TANGENT = hd.compile(_cond_tangent)


@settings(max_examples=6, deadline=None)
@given(st.sampled_from([True, False, 0, 1, 2, 7, -1]), st.integers(0, 3))
def test_conditional_vjp_and_jvp(which, n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    ct = (rng.standard_normal(n), rng.standard_normal(n))
    ta, tb = rng.standard_normal(n), rng.standard_normal(n)
    want = jax.vjp(lambda a, b: _conditional_jax(which, a, b), a, b)[1](ct)
    want_t = jax.jvp(lambda a, b: _conditional_jax(which, a, b), (a, b), (ta, tb))[1]
    h = hd.array
    ct_h = (h(ct[0]), h(ct[1]))
    for got in (_cond_pullback(which, h(a), h(b), ct_h), COND_PULLBACK(which, h(a), h(b), ct_h)):
        for g, w in zip(got, want):
            _close(g, w)
    for got in (_cond_tangent(which, h(a), h(b), h(ta), h(tb)),
                COND_TANGENT(which, h(a), h(b), h(ta), h(tb))):
        for g, w in zip(got, want_t):
            _close(g, w)


def test_conditional_second_order():
    def f(x):
        out = ops.Conditional(lambda x: xp.sin(x) * x, lambda x: x)(
            hd.array(np.bool_(True)), x, x)
        return xp.sum(out)

    x, u = np.float64([0.5, -1.0]), np.float64([1.0, 2.0])
    want = jax.jvp(jax.grad(lambda x: jnp.sum(jnp.sin(x) * x)), (x,), (u,))[1]
    _close(hd.hvp(f, (hd.array(x),), (hd.array(u),)), want)


# -- while ----------------------------------------------------------------------------

def _loop(n, a, c):
    def cond(s):
        return s[0] < n

    def body(s):  # c is state: a loop body cannot capture staged values
        i, x, y, c = s
        return i + hd.array(np.int32(1)), xp.sin(x) * y + c, y * 1.1, c

    return ops.While(cond, body)(hd.array(np.int32(0)), a, a, c)[1:3]


def _loop_jax(n, a, c):
    def body(s):
        i, x, y = s
        return i + 1, jnp.sin(x) * y + c, y * 1.1
    return lax.while_loop(lambda s: s[0] < n, body, (0, a, a))[1:]


def _loop_tangent(n, a, c, ta, tc):
    return hd.jvp(lambda a, c: _loop(n, a, c), (a, c), (ta, tc))[1]


LOOP_TANGENT = hd.compile(_loop_tangent)


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 4), st.integers(0, 3))
def test_while_jvp(n, size):
    rng = np.random.default_rng(size)
    a, c, ta, tc = (rng.standard_normal(size) for _ in range(4))
    want = jax.jvp(lambda a, c: _loop_jax(n, a, c), (a, c), (ta, tc))[1]
    h = hd.array
    for got in (_loop_tangent(n, h(a), h(c), h(ta), h(tc)),
                LOOP_TANGENT(n, h(a), h(c), h(ta), h(tc))):
        for g, w in zip(got, want):
            _close(g, w)


def test_while_vjp_is_a_clear_error():
    x = hd.array(np.float64([1.0]))
    with pytest.raises(NotImplementedError, match="data-dependent trip count.*fori_loop"):
        hd.grad(lambda x: xp.sum(_loop(3, x, x)[0]))(x)


# -- call -----------------------------------------------------------------------------

def _body(u, v, k):
    return u * xp.sin(v) + xp.astype(k, u.dtype), xp.cos(u)


def _call(a, b):
    return ops.Call(_body)(a, b, hd.array(np.int32(3)))


def _call_jax(a, b):
    return a * jnp.sin(b) + 3.0, jnp.cos(a)


CALL_PULLBACK = hd.compile(lambda a, b, ct: hd.vjp(_call, a, b)[1](ct))
CALL_TANGENT = hd.compile(lambda a, b, ta, tb: hd.jvp(_call, (a, b), (ta, tb))[1])


def test_call_vjp_jvp_and_second_order():
    rng = np.random.default_rng(3)
    a, b, c0, c1, ta, tb = (rng.standard_normal(4) for _ in range(6))
    h = hd.array
    want = jax.vjp(_call_jax, a, b)[1]((c0, c1))
    for got in (hd.vjp(_call, h(a), h(b))[1]((h(c0), h(c1))),
                CALL_PULLBACK(h(a), h(b), (h(c0), h(c1)))):
        for g, w in zip(got, want):
            _close(g, w)
    want_t = jax.jvp(_call_jax, (a, b), (ta, tb))[1]
    for got in (hd.jvp(_call, (h(a), h(b)), (h(ta), h(tb)))[1],
                CALL_TANGENT(h(a), h(b), h(ta), h(tb))):
        for g, w in zip(got, want_t):
            _close(g, w)

    def loss(a):
        return xp.sum(_call(a, a)[0])

    want_h = jax.jvp(jax.grad(lambda a: jnp.sum(_call_jax(a, a)[0])), (a,), (ta,))[1]
    _close(hd.hvp(loss, (h(a),), (h(ta),)), want_h)


# -- collectives ----------------------------------------------------------------------

def _add(a, b):
    return ops.Add()(a, b)


@needs_devices(2)
def test_all_reduce_sum_pullback_is_the_all_reduce_of_ct():
    def step(x, ct):
        return hd.vjp(lambda x: ops.AllReduce(_add)(x * x), x)[1](ct)[0]

    xs = [np.float64([1.0, 2.0]), np.float64([3.0, -1.0])]
    cts = [np.float64([1.0, 0.0]), np.float64([0.5, 2.0])]
    got = hd.replicated(step, 2)(xs, cts)
    total = cts[0] + cts[1]
    for g, x in zip(got, xs):
        _close(g, 2 * x * total)


def test_gather_scatter_and_permute_are_differentiated_others_raise():
    def step(x):  # reduce-scatter is all-gather's transpose: on one device, ones
        return hd.grad(lambda x: xp.sum(ops.AllGather(0, ((0,),))(x) * 3))(x)

    np.testing.assert_array_equal(np.asarray(hd.replicated(step, 1)([np.float64([1.0])])[0]),
                                  [3.0])

    def other(x):
        return hd.grad(lambda x: xp.sum(ops.AllToAll(0, ((0,),))(x)))(x)

    with pytest.raises(NotImplementedError, match="AllGather, sum ReduceScatter and "
                                                  "CollectivePermute are differentiated"):
        hd.replicated(other, 1)([np.float64([1.0])])
