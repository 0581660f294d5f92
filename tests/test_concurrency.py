"""Threads: staging, compiling, eager ops and derivatives from several threads at once.

Staging state (the builders being staged into, the active derivative tapes) is
per thread, and the caches threads share take locks: every result is right,
nothing comes back symbolic, and nothing deadlocks (every join has a timeout).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import runtime

THREADS = 8
TIMEOUT = 300  # seconds: a deadlock fails the test instead of hanging the suite


def _run_threads(target, n: int = THREADS) -> list:
    """Run ``target(i, barrier)`` in ``n`` threads; their results, or the first error."""
    barrier = threading.Barrier(n)
    results: list = [None] * n
    errors: list = []

    def run(i):
        try:
            results[i] = target(i, barrier)
        except BaseException as e:  # noqa: BLE001 (reported below, in the test's thread)
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread did not finish: deadlock?"
    if errors:
        raise errors[0]
    return results


def _concrete(x) -> np.ndarray:
    assert isinstance(x, hd.Array) and not hd.is_symbolic(x), f"got {x!r}"
    return np.asarray(x)


def test_threads_compile_different_functions():
    def work(i, barrier):
        x = hd.array(np.arange(4, dtype=np.float32))
        f = hd.compile(lambda a: xp.sum(a * (i + 1)) + i)
        barrier.wait()
        return [float(_concrete(f(x))) for _ in range(3)]

    for i, got in enumerate(_run_threads(work)):
        assert got == [6.0 * (i + 1) + i] * 3


@pytest.mark.compat
def test_threads_call_one_compiled_function_that_compiles_once():
    f = hd.compile(lambda a, b: a @ b + 1)
    before = runtime.stats["compiles"]

    def work(i, barrier):
        a = hd.array(np.full((3, 3), i, np.float32))
        b = hd.array(np.eye(3, dtype=np.float32))
        barrier.wait()  # every thread misses the cache at the same moment
        return [_concrete(f(a, b)) for _ in range(20)]

    for i, outs in enumerate(_run_threads(work)):
        for out in outs:
            np.testing.assert_array_equal(out, np.full((3, 3), i + 1, np.float32))
    assert runtime.stats["compiles"] - before == 1 and f.cache_size() == 1


@pytest.mark.compat
def test_eager_ops_in_some_threads_while_others_stage():
    def slow_program(a):
        for k in range(300):  # long enough to overlap with the eager threads
            a = a + np.float32(k % 3)
        return a

    def work(i, barrier):
        x = hd.array(np.float32([1, 2]))
        barrier.wait()
        if i % 2:
            f = hd.compile(slow_program)
            return ("staged", _concrete(f(x)))
        outs = []
        for k in range(60):
            outs.append(_concrete(x * np.float32(k)))
        return ("eager", outs)

    for kind, value in _run_threads(work):
        if kind == "staged":
            np.testing.assert_array_equal(value, [1 + 300, 2 + 300])
        else:
            for k, v in enumerate(value):
                np.testing.assert_array_equal(v, [k, 2 * k])


def test_derivatives_in_threads_do_not_see_each_others_tapes():
    def work(i, barrier):
        x = hd.array(np.float64([1.0, 2.0]))
        barrier.wait()
        if i % 2:
            return ("grad", [_concrete(hd.grad(lambda v: xp.sum(v ** 3) * i)(x))
                             for _ in range(5)])
        return ("eager", [_concrete(xp.sin(x) * 2.0) for _ in range(20)])

    for i, (kind, values) in enumerate(_run_threads(work)):
        for v in values:
            want = 3 * np.float64([1, 4]) * i if kind == "grad" else np.sin([1.0, 2.0]) * 2
            np.testing.assert_allclose(v, want)


def test_control_flow_and_conversion_from_threads():
    def clip(x, limit):
        while xp.max(xp.abs(x)) > limit:
            x = x / 2
        return x

    def work(i, barrier):
        x = hd.array(np.float32([8.0 * (i + 1), -3.0]))
        f = hd.compile(clip)
        barrier.wait()
        loops = hd.fori_loop(0, i + 1, lambda k, acc: acc + 1.0, hd.array(np.float32(0)))
        return _concrete(f(x, 1.0)), float(_concrete(loops))

    for i, (clipped, loops) in enumerate(_run_threads(work)):
        assert np.max(np.abs(clipped)) <= 1.0 and loops == i + 1


@pytest.mark.parametrize("rounds", [3])
def test_eviction_under_concurrent_compiles(rounds, monkeypatch):
    monkeypatch.setattr(hd.config, "eager_cache_size", 4)  # evictions while threads insert

    def work(i, barrier):
        barrier.wait()
        outs = []
        for r in range(rounds):
            for n in range(1, 6):
                x = hd.array(np.ones(n + i, np.float32))
                outs.append(float(_concrete(xp.sum(x * 2))))
        return outs

    for i, outs in enumerate(_run_threads(work)):
        assert outs == [2.0 * (n + i) for _ in range(rounds) for n in range(1, 6)]
