"""A compiled step honours an optimiser rebound after its first call (issue 30, item 3).

The oracle is optax (``optax.adam``/``optax.sgd`` one step from a fresh state,
the same hyperparameters); each test also checks that nothing recompiles
while the optimiser stays bound to the same object.
"""

import numpy as np
import pytest

optax = pytest.importorskip("optax", reason="optax is the oracle of the optimisers "
                            "(the 'test' extra installs it; .ci/compat installs test-core)")

import hlodsl as hd
from hlodsl.compilation.bindings import Binding, bindings, moved
from hlodsl.stdlib import nn

OPT = nn.adam(lr=1e-3)


@hd.compile
def global_step(params, state, grads):
    return OPT.update(grads, state, params)


def _apply(params, state, grads):
    return OPT.update(grads, state, params)


@hd.compile
def helper_step(params, state, grads):
    return _apply(params, state, grads)  # reaches OPT one call deep


@pytest.fixture(scope="module")
def tree():
    rng = np.random.default_rng(0)
    p = {"w": rng.standard_normal(5).astype(np.float32)}
    g = {"w": rng.standard_normal(5).astype(np.float32)}
    return p, g


def _optax_step(optimizer, p, g):
    updates, _ = optimizer.update(g, optimizer.init(p), p)
    return optax.apply_updates(p, updates)["w"]


def _run(step, opt, p, g):
    params = {"w": hd.array(p["w"])}
    new, _ = step(params, opt.init(params), {"w": hd.array(g["w"])})
    return np.asarray(new["w"])


@pytest.mark.parametrize("step", [global_step, helper_step], ids=["global", "helper"])
def test_rebound_global_optimizer_recompiles(step, tree):
    global OPT
    p, g = tree
    saved = OPT
    try:
        OPT = nn.adam(lr=1e-3)
        np.testing.assert_allclose(_run(step, OPT, p, g), _optax_step(optax.adam(1e-3), p, g),
                                   rtol=1e-5, atol=1e-5)
        compiles = step.compiles
        _run(step, OPT, p, g)  # the same optimiser: the cached executable
        assert step.compiles == compiles
        OPT = nn.adam(lr=0.1)
        np.testing.assert_allclose(_run(step, OPT, p, g), _optax_step(optax.adam(0.1), p, g),
                                   rtol=1e-5, atol=1e-5)
        assert step.compiles == compiles + 1 and step.cache_size() == 1
    finally:
        OPT = saved


def test_rebound_closure_optimizer_recompiles(tree):
    p, g = tree
    opt = nn.sgd(0.5)

    @hd.compile
    def step(params, state, grads):
        return opt.update(grads, state, params)

    np.testing.assert_allclose(_run(step, opt, p, g), _optax_step(optax.sgd(0.5), p, g),
                               rtol=1e-6)
    opt = nn.sgd(0.01)  # the closure cell of step now holds another optimiser
    np.testing.assert_allclose(_run(step, opt, p, g), _optax_step(optax.sgd(0.01), p, g),
                               rtol=1e-6)
    # The entry of a compiled function (what code_hlo(optimize=True) and hd.profile
    # read) sees the rebinding too.
    compiles = step.compiles
    opt = nn.sgd(0.3)
    params = {"w": hd.array(p["w"])}
    step.entry(params, opt.init(params), {"w": hd.array(g["w"])})
    assert step.compiles == compiles + 1


def test_bindings_follow_watched_values_only():
    scale = 2.0
    opt = nn.sgd(0.1)

    def f(x):
        return x * scale, opt

    found = bindings(f)
    assert [b.name for b in found] == ["opt"] and isinstance(found[0], Binding)
    assert not moved(found)
    scale = 3.0  # not watched: a number is staged as a constant, as in jax.jit
    assert not moved(found)
    opt = nn.sgd(0.2)
    assert moved(found)
    del opt
    assert moved(found)
