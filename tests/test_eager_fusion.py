"""Recorded eager ops (hlodsl.transforms.lazy): the values of running each op at once.

Chains of eager ops are recorded and run as one executable per chain structure;
these tests draw op chains (a DAG over earlier results, arrays and Python numbers),
run them op by op (``eager_fusion`` off) and recorded (compiled at once, and one by
one), and compare the bits. Then what recording must not change: errors at the
call, donation, threads, dead results.
"""

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.transforms import lazy

# name -> (arity, function); floats only unless listed in _INT_OPS
_OPS = {
    "add": (2, lambda a, b: a + b), "sub": (2, lambda a, b: a - b),
    "mul": (2, lambda a, b: a * b), "div": (2, lambda a, b: a / b),
    "max": (2, xp.maximum), "sin": (1, xp.sin), "exp": (1, lambda a: xp.exp(a * 0.25)),
    "tanh": (1, xp.tanh), "neg": (1, lambda a: -a), "sqrt_abs": (1, lambda a: xp.sqrt(xp.abs(a))),
    "square": (1, lambda a: a * a),
}
_INT_OPS = ("add", "sub", "mul", "max", "neg", "square")


@pytest.fixture
def fusion():
    """Recording on, chains compiled the first time they run; settings restored."""
    kept = (hd.config.eager_fusion, hd.config.eager_fusion_repeats, hd.config.eager_fusion_ops)
    lazy.flush()  # what earlier tests left recorded
    hd.config.eager_fusion, hd.config.eager_fusion_repeats = True, 1
    yield
    lazy.flush()
    hd.config.eager_fusion, hd.config.eager_fusion_repeats, hd.config.eager_fusion_ops = kept


def _program(draw, dtype):
    """A list of steps (op name, operand picks) over a growing pool of values."""
    # Mostly arithmetic on recent results: where XLA, left alone, would contract a
    # multiply and an add into one FMA or rewrite a division across ops.
    names = _INT_OPS if dtype == np.int32 else tuple(_OPS) + ("add", "sub", "mul") * 2
    steps = []
    for k in range(draw(st.integers(1, 14))):
        name = draw(st.sampled_from(names))
        picks = []
        for _ in range(_OPS[name][0]):
            if draw(st.booleans()) and name != "div":
                value = draw(st.integers(-3, 3)) if dtype == np.int32 else \
                    draw(st.floats(-2, 2, allow_nan=False, width=32))
                picks.append(("number", value))
            else:
                picks.append(("value", 1 + k - draw(st.integers(0, 1 + k)) // 2))
        steps.append((name, picks))
    return steps


def _run(steps, inputs, keep):
    """Run ``steps`` on ``inputs``; the values at the positions in ``keep`` (read last)."""
    pool = list(inputs)
    for name, picks in steps:
        args = [v if kind == "number" else pool[v % len(pool)] for kind, v in picks]
        pool.append(_OPS[name][1](*args))
    kept = [pool[i % len(pool)] for i in keep]
    del pool  # the other results die unread: a recorded chain does not compute them
    return [np.asarray(a) for a in kept]


@st.composite
def _case(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32]))
    size = draw(st.sampled_from([1, 7, 64]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    inputs = [(rng.standard_normal(size) * 2).astype(dtype) + (dtype == np.int32)
              for _ in range(2)]
    steps = _program(draw, dtype)
    keep = draw(st.lists(st.integers(0, 20), min_size=1, max_size=3))
    return inputs, steps, keep


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8).tobytes(), a.dtype, a.shape


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # (sets, not state)
@given(case=_case())
def test_recorded_chains_equal_op_by_op_bit_for_bit(fusion, case):
    inputs, steps, keep = case
    hd.config.eager_fusion = False
    with np.errstate(all="ignore"):
        expect = [_bits(a) for a in _run(steps, [hd.array(x) for x in inputs], keep)]
    hd.config.eager_fusion = True
    for repeats in (1, 10**6):  # compiled into one executable; run one op at a time
        hd.config.eager_fusion_repeats = repeats
        _run(steps, [hd.array(x) for x in inputs], keep)  # compiles each op's own module
        lazy.flush()
        before = dict(lazy.stats)
        got = [_bits(a) for a in _run(steps, [hd.array(x) for x in inputs], keep)]
        assert got == expect, (steps, repeats)
        assert lazy.stats.get("failed", 0) == before.get("failed", 0)  # compiled, staged
        if repeats == 1:  # every chain that ran was one executable
            assert lazy.stats["one_by_one"] == before["one_by_one"]


@pytest.mark.parametrize("name, fn", [
    ("multiply then add (one FMA if fused)", lambda a, b, c: a * b + c),
    ("division by a division (a / (b * c) for XLA's simplifier)", lambda a, b, c: a / b / c),
    ("division by a square root (a * rsqrt(b))", lambda a, b, c: a / xp.sqrt(xp.abs(b))),
])
def test_what_xla_would_rewrite_across_ops_keeps_its_bits(fusion, name, fn):
    rng = np.random.default_rng(0)
    a, b, c = (hd.array(rng.standard_normal(256).astype(np.float32)) for _ in range(3))
    hd.config.eager_fusion = False
    expect = np.asarray(fn(a, b, c))
    hd.config.eager_fusion = True
    fn(a, b, c)
    lazy.flush()
    before = lazy.stats["fused"]
    got = np.asarray(fn(a, b, c))
    assert lazy.stats["fused"] == before + 1  # as one executable
    assert np.array_equal(got.view(np.uint32), expect.view(np.uint32)), name


def test_a_long_chain_runs_as_few_executables_with_the_same_bits(fusion):
    x0 = np.linspace(-2, 2, 64, dtype=np.float32)

    def euler(x):
        for _ in range(40):
            x = x + 0.01 * (xp.sin(x) * 0.5 - x * x * 0.1)
        return np.asarray(x)

    hd.config.eager_fusion = False
    expect = euler(hd.array(x0))
    hd.config.eager_fusion = True
    euler(hd.array(x0))  # each op's module compiles (not recorded)
    lazy.flush()
    before = dict(lazy.stats)
    got = euler(hd.array(x0))
    assert np.array_equal(got.view(np.uint32), expect.view(np.uint32))
    ran = lazy.stats["fused"] - before["fused"]
    assert lazy.stats["recorded"] - before["recorded"] == 280
    assert 0 < ran <= 280 // 7  # about 17 ops a chain (< 1000 FLOPs: run inline)


def test_a_shape_error_is_raised_at_the_call_while_ops_are_pending(fusion):
    x = hd.array(np.ones(4, np.float32))
    y = x * 2.0
    y = x * 2.0  # recorded
    assert y._pending is not None
    with pytest.raises(hd.errors.ShapeError, match="cannot be broadcast"):
        y + hd.array(np.ones(3, np.float32))
    np.testing.assert_array_equal(np.asarray(y), np.full(4, 2, np.float32))


def test_donating_an_input_of_a_pending_op_runs_the_chain_first(fusion):
    x = hd.array(np.arange(4, dtype=np.float32))
    double = hd.compile(lambda a: a * 2, donate_argnums=0)
    y = x + 1.0
    y = x + 1.0  # recorded, reads x's buffer
    assert y._pending is not None
    z = double(x)  # donates x: y must have been computed first
    np.testing.assert_array_equal(np.asarray(y), np.arange(4) + 1.0)
    np.testing.assert_array_equal(np.asarray(z), np.arange(4) * 2.0)
    with pytest.raises(hd.DonatedArrayError):
        x + 1.0


def test_another_thread_reads_a_pending_array(fusion):
    x = hd.array(np.arange(8, dtype=np.float64))
    y = x * 3.0
    y = x * 3.0
    assert y._pending is not None
    seen = []
    t = threading.Thread(target=lambda: seen.append(np.asarray(y + 1.0)))
    t.start()
    t.join()
    np.testing.assert_array_equal(seen[0], np.arange(8) * 3.0 + 1)
    assert y._pending is None


def test_off_runs_every_op_at_once(fusion):
    hd.config.eager_fusion = False
    x = hd.array(np.ones(3, np.float32))
    for _ in range(2):
        y = x * 5.0
    assert y._pending is None and y.__dict__["_buf"] is not None
