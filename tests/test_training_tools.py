"""A training loop's everyday tools: waiting on results, schedules, clipping (issue 30).

Schedules and clipping are checked against optax (a test-only oracle) over
100 compiled steps, with one compile for all of them.
"""

import numpy as np
import pytest

import hlodsl as hd
from hlodsl import runtime
from hlodsl.stdlib import nn

optax = pytest.importorskip("optax", reason="optax is the oracle of schedules and clipping "
                                            "(the 'test' extra installs it)")
jnp = pytest.importorskip("jax.numpy")


# -- block_until_ready ---------------------------------------------------------------

class _Recording:
    """A stand-in device buffer that records being waited on."""

    def __init__(self, buf):
        self.buf, self.waited = buf, 0

    def block_until_ready(self):
        self.waited += 1
        return self.buf.block_until_ready()


def _recorded(x):
    rec = _Recording(x._buf)
    x._buf = rec
    return rec


def test_block_until_ready_waits_on_the_buffer_and_returns_the_array():
    x = hd.array(np.float32([1, 2])) * 2
    rec = _recorded(x)
    assert x.block_until_ready() is x
    assert rec.waited == 1


def test_block_until_ready_on_a_symbolic_array_is_the_array_itself():
    f = hd.compile(lambda x: x.block_until_ready() * 2)
    np.testing.assert_array_equal(np.asarray(f(hd.array(np.float32([1, 2])))), [2, 4])


def test_tree_block_until_ready_waits_on_every_array_leaf():
    a, b = hd.array(np.float32([1])) + 1, hd.array(np.int32(3)) + 1
    recs = [_recorded(a), _recorded(b)]
    tree = {"params": [a, (b, "static")], "n": 3}
    assert hd.block_until_ready(tree) is tree
    assert [r.waited for r in recs] == [1, 1]


# -- schedules against optax's ---------------------------------------------------------

SCHEDULES = {
    "constant": (lambda m: m.constant(0.01),
                 lambda: optax.constant_schedule(0.01)),
    "linear": (lambda m: m.linear(0.02, 0.001, 60, transition_begin=10),
               lambda: optax.linear_schedule(0.02, 0.001, 60, transition_begin=10)),
    "cosine_decay": (lambda m: m.cosine_decay(0.02, 70, alpha=0.1, exponent=2.0),
                     lambda: optax.cosine_decay_schedule(0.02, 70, alpha=0.1, exponent=2.0)),
    "exponential": (lambda m: m.exponential(0.05, 7, 0.8, transition_begin=5),
                    lambda: optax.exponential_decay(0.05, 7, 0.8, transition_begin=5)),
    "exponential-staircase": (
        lambda m: m.exponential(0.05, 7, 0.8, staircase=True, end_value=0.01),
        lambda: optax.exponential_decay(0.05, 7, 0.8, staircase=True, end_value=0.01)),
    "exponential-growing": (
        lambda m: m.exponential(0.001, 10, 1.5, end_value=0.01),
        lambda: optax.exponential_decay(0.001, 10, 1.5, end_value=0.01)),
    "piecewise_constant": (
        lambda m: m.piecewise_constant(0.05, {20: 0.5, 50: 0.1, 80: 2.0}),
        lambda: optax.piecewise_constant_schedule(0.05, {20: 0.5, 50: 0.1, 80: 2.0})),
    "warmup_cosine": (
        lambda m: m.warmup_cosine(0.0, 0.05, warmup_steps=15, decay_steps=90, end_value=1e-3),
        lambda: optax.warmup_cosine_decay_schedule(0.0, 0.05, 15, 90, end_value=1e-3)),
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_values_equal_optax(name):
    ours, theirs = SCHEDULES[name][0](nn.schedules), SCHEDULES[name][1]()
    staged = hd.compile(lambda t: ours(t))
    steps = range(130)
    got = np.array([float(staged(hd.array(np.int32(t)))) for t in steps])
    want = np.array([float(theirs(jnp.int32(t))) for t in steps])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-7)
    assert staged.cache_size() == 1
    assert float(ours(17)) == pytest.approx(float(theirs(17)), abs=1e-7)  # eagerly, from an int


def _problem(seed: int = 0, dtype=np.float64):
    """Parameters and 100 targets; the gradient of step t is ``p * 0.5 - target_t``,
    large enough early on for clipping to act and small enough later for it not to."""
    rng = np.random.default_rng(seed)
    params = {"w": rng.normal(size=(4, 3)).astype(dtype),
              "layers": [rng.normal(size=(3,)).astype(dtype)]}
    targets = [{"w": (rng.normal(size=(4, 3)) * 3 / (1 + t)).astype(dtype),
                "layers": [(rng.normal(size=(3,)) * 3 / (1 + t)).astype(dtype)]}
               for t in range(100)]
    return params, targets


def _grads(tree_map, params, target):
    return tree_map(lambda p, t: p * 0.5 - t, params, target)


def _run_ours(opt, params, targets, clip):
    @hd.compile
    def step(params, state, target):
        grads = _grads(hd.tree_map, params, target)
        if clip is not None:
            grads = nn.clip_by_global_norm(grads, clip)
        return opt.update(grads, state, params)

    params = hd.tree_map(hd.array, params)
    state = opt.init(params)
    # Eager ops run when a value is read (recorded chains): read them now, so that the
    # compiles counted below are the step's alone.
    hd.tree_map(np.asarray, (params, state))
    before, history = runtime.stats["compiles"], []
    for target in targets:
        params, state = step(params, state, target)
        history.append(hd.tree_map(np.asarray, params))
    return history, runtime.stats["compiles"] - before, step.cache_size()


def _run_optax(tx, params, targets, clip):
    import jax

    if clip is not None:
        tx = optax.chain(optax.clip_by_global_norm(clip), tx)
    params = jax.tree.map(jnp.asarray, params)
    state, history = tx.init(params), []
    for target in targets:
        grads = _grads(jax.tree.map, params, jax.tree.map(jnp.asarray, target))
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
        history.append(jax.tree.map(np.asarray, params))
    return history


def _max_diff(ours, theirs) -> float:
    return max(float(np.max(np.abs(a - b)))
               for o, t in zip(ours, theirs)
               for a, b in zip(hd.tree_leaves(o), [np.asarray(x) for x in
                                                   [t["w"], t["layers"][0]]]))


# float64 parameters: hlodsl's and optax's Adam arrange the bias corrections differently
# (torch's formula and optax's), so in float32 the rounding differs by about an ulp a step:
# measured 4.8e-6 over 100 steps on parameters of size ~1, hence the float32 tolerance.
@pytest.mark.parametrize("name", ["constant", "exponential", "piecewise_constant",
                                  "warmup_cosine"])
@pytest.mark.parametrize("clip", [None, 1.0])
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-6), (np.float32, 2e-5)])
def test_adam_with_a_schedule_and_clipping_equals_optax_over_100_steps_one_compile(
        name, clip, dtype, tol):
    ours_s, theirs_s = SCHEDULES[name]
    params, targets = _problem(dtype=dtype)
    ours, compiles, signatures = _run_ours(nn.adam(ours_s(nn.schedules)), params, targets, clip)
    theirs = _run_optax(optax.adam(theirs_s()), params, targets, clip)
    assert (compiles, signatures) == (1, 1)
    assert _max_diff(ours, theirs) <= tol
    assert _max_diff(ours[-1:], [params]) > 0.1  # the parameters moved


@pytest.mark.parametrize("clip", [None, 0.5])
def test_sgd_momentum_with_a_schedule_equals_optax(clip):
    params, targets = _problem(1)
    ours, compiles, _ = _run_ours(
        nn.sgd(nn.schedules.warmup_cosine(0.0, 0.1, 10, 100), momentum=0.9), params, targets,
        clip)
    theirs = _run_optax(optax.sgd(optax.warmup_cosine_decay_schedule(0.0, 0.1, 10, 100),
                                  momentum=0.9), params, targets, clip)
    assert compiles == 1
    assert _max_diff(ours, theirs) <= 1e-6


def test_clip_by_global_norm_equals_optax_on_one_tree():
    rng = np.random.default_rng(2)
    tree = {"a": rng.normal(size=(5, 3)).astype(np.float32),
            "b": [rng.normal(size=(7,)).astype(np.float32)]}
    for max_norm in (0.1, 1.0, 100.0):
        got = nn.clip_by_global_norm(hd.tree_map(hd.array, tree), max_norm)
        want, _ = optax.clip_by_global_norm(max_norm).update(
            {"a": jnp.asarray(tree["a"]), "b": [jnp.asarray(tree["b"][0])]}, None)
        np.testing.assert_allclose(np.asarray(got["a"]), np.asarray(want["a"]), atol=1e-7)
        np.testing.assert_allclose(np.asarray(got["b"][0]), np.asarray(want["b"][0]),
                                   atol=1e-7)
        assert got["a"].dtype is hd.float32
    assert float(nn.global_norm(hd.tree_map(hd.array, tree))) == pytest.approx(
        float(optax.tree.norm(tree)), rel=1e-6)


def test_clip_by_global_norm_takes_an_array_bound_in_a_compiled_step():
    f = hd.compile(lambda g, m: nn.clip_by_global_norm(g, m))
    g = [hd.array(np.float32([6, 8]))]
    for m, want in ((5.0, [3, 4]), (20.0, [6, 8])):
        np.testing.assert_allclose(np.asarray(f(g, hd.array(np.float32(m)))[0]), want,
                                   rtol=1e-6)
    assert f.cache_size() == 1


def test_learning_rate_as_an_array_argument_reuses_the_executable():
    @hd.compile
    def step(params, state, grads, lr):
        return nn.sgd(lr).update(grads, state, params)

    p = {"w": hd.array(np.float32([1, 1]))}
    g = {"w": hd.array(np.float32([1, 2]))}
    state = nn.sgd(0.1).init(p)
    for lr in (0.1, 0.5):
        out, state = step(p, state, g, hd.array(np.float32(lr)))
        np.testing.assert_allclose(np.asarray(out["w"]), [1 - lr, 1 - 2 * lr], rtol=1e-6)
    assert step.cache_size() == 1


def test_array_weight_decay_equals_the_static_one():
    p = {"w": hd.array(np.float32([1, -2]))}
    g = {"w": hd.array(np.float32([0.5, 0.5]))}
    for make in (nn.sgd, nn.adam):
        static = make(0.1, weight_decay=0.01)
        dynamic = make(0.1, weight_decay=hd.array(np.float32(0.01)))
        want, _ = static.update(g, static.init(p), p)
        got, _ = dynamic.update(g, dynamic.init(p), p)
        np.testing.assert_allclose(np.asarray(got["w"]), np.asarray(want["w"]), rtol=1e-6)


@pytest.mark.parametrize("make, message", [
    (lambda: nn.adam(lr=hd.array(np.float32([0.1, 0.2]))), "adam: lr must be a real number"),
    (lambda: nn.sgd(lr=hd.array(True)), "sgd: lr must be a real number"),
    (lambda: nn.schedules.cosine_decay(0.1, 0), "decay_steps must be > 0"),
    (lambda: nn.schedules.exponential(0.1, 0, 0.5), "transition_steps must be > 0"),
    (lambda: nn.schedules.linear(0.1, 0.0, 2.5), "transition_steps must be an int"),
    (lambda: nn.schedules.piecewise_constant(0.1, {3: -1.0}), "scales must be >= 0"),
    (lambda: nn.schedules.join((nn.schedules.constant(1.0),), (3,)), "one boundary fewer"),
    (lambda: nn.schedules.constant(1.0)(1.5), "step count must be an int"),
    (lambda: nn.clip_by_global_norm([hd.array([1.0])], 0.0), "max_norm must be positive"),
    (lambda: nn.clip_by_global_norm([hd.array([True])], 1.0), "numeric array"),
])
def test_bad_hyperparameters_are_refused_with_a_message(make, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make()


def test_a_schedule_returning_a_non_array_is_refused_at_the_update():
    opt = nn.adam(lr=lambda step: "fast")
    p = hd.array(np.float32([1.0]))
    with pytest.raises(TypeError, match="schedule given as lr must return a real scalar"):
        opt.update(p, opt.init(p), p)


def test_a_schedule_returning_a_vector_is_refused_at_the_update():
    opt = nn.sgd(lr=lambda step: hd.array(np.float32([0.1, 0.2])))
    p = hd.array(np.float32([1.0]))
    with pytest.raises(TypeError, match=r"schedule given as lr must return a real scalar array, "
                                        r"got f32\[2\]"):
        opt.update(p, opt.init(p), p)
