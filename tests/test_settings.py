"""hd.config refuses what it does not know, and changes safely while threads compile (issue 40).

A typo (``default_floot``) was accepted and changed nothing; ``memory_limit=0.5``
became 0 bytes; toggling ``linalg_kernels`` while threads staged ``solve`` gave
XLA's "Reduction-region must take 2 parameters": the printer named computations
by ``id()``, which a freed computation's successor could take.
"""

from __future__ import annotations

import gc
import math
import re
import threading
import time

import hlodsl.stdlib as xp
import numpy as np
import pytest

import hlodsl as hd
from hlodsl.introspect.hlo_text import parse_module
from hlodsl.ir import staging


def test_an_unknown_setting_is_refused_with_the_closest_name():
    with pytest.raises(AttributeError, match=r"no setting 'default_floot'; did you mean "
                                             r"'default_float'\?"):
        hd.config.default_floot = "float32"
    with pytest.raises(AttributeError, match=r"did you mean 'compile_cache_size'"):
        hd.config.compile_cach_size  # noqa: B018 (reading a typo is refused too)
    assert not hasattr(hd.config, "default_floot")


@pytest.mark.parametrize("name, value, error", [
    ("compile_cache_size", -3, ValueError), ("compile_cache_size", "big", TypeError),
    ("compile_cache_size", True, TypeError), ("compile_cache_size", 2.0, TypeError),
    ("eager_cache_size", 0, ValueError), ("eager_program_cache_size", 0, ValueError),
    ("eager_module_signatures", -1, ValueError), ("subcomputation_cache_size", None, TypeError),
    ("recompile_warning", 2.5, TypeError), ("recompile_warning", -1, ValueError),
    ("persistent_cache", "no", TypeError), ("eager_trace_cache", 1, TypeError),
    ("persistent_cache_bytes", 0.5, ValueError), ("persistent_cache_bytes", "lots", ValueError),
    ("linalg_kernels", "fast", ValueError), ("default_float", np.float32, TypeError),
    ("default_matmul_precision", "HIGH", ValueError),
    ("untrusted_read_timeout_s", 0, ValueError), ("untrusted_read_timeout_s", math.inf,
                                                  ValueError),
])
def test_an_invalid_value_is_refused_and_the_setting_kept(name, value, error):
    before = getattr(hd.config, name)
    with pytest.raises(error, match=rf"hlodsl.config.{name}"):
        setattr(hd.config, name, value)
    assert getattr(hd.config, name) == before


def test_sizes_take_units():
    before = hd.config.persistent_cache_bytes
    try:
        hd.config.persistent_cache_bytes = "2GiB"
        assert hd.config.persistent_cache_bytes == 2 ** 31
    finally:
        hd.config.persistent_cache_bytes = before


@pytest.mark.parametrize("limit", [0.5, "0.4 B", 1e-9, 0, -1, math.nan, math.inf, True])
def test_a_memory_limit_below_one_byte_or_not_a_number_is_refused(limit):
    with pytest.raises((ValueError, TypeError), match="memory_limit"):
        hd.compile(lambda x: x * 2, memory_limit=limit)(hd.array([1.0]))


def test_changing_a_staging_setting_while_staging_is_refused():
    def f(x):
        hd.config.linalg_kernels = "hlo"
        return x

    before = hd.config.linalg_kernels
    with pytest.raises(RuntimeError, match="cannot change while this thread is staging"):
        hd.compile(f)(hd.array([1.0]))
    assert hd.config.linalg_kernels == before


def test_each_reduction_is_printed_with_its_own_computation(monkeypatch):
    """Deterministic form of the race: sub-computations that are staged afresh each time an
    op asks (as after an eviction) and freed at once must never lend their names."""

    class Forgetful:
        def get(self, key, default=None):
            gc.collect(0)  # the young computations a staging just freed (nodes make cycles)
            return default

        def put(self, key, value):
            return value

    monkeypatch.setattr(staging, "_SUBCOMPUTATIONS", Forgetful())
    A = hd.array(np.eye(4) + 0.1)

    def f(A):
        i = xp.argmax(A, axis=0)  # a reduction over two operands: four parameters
        return xp.sum(A) + xp.max(A) + xp.sum(i.astype(A.dtype)) + xp.prod(A)

    text = hd.code_hlo(f, A)
    module = parse_module(text)
    params = {c.name: sum(i.opcode == "parameter" for i in c.instructions)
              for c in module.computations}
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode == "reduce":
                (_, called), = inst.called()
                assert params[called] == len(inst.operands), (inst.text, params[called])
    np.testing.assert_allclose(hd.compile(f)(A), np.asarray(f(A)))


def test_settings_change_while_threads_compile():
    """Three threads stage and run solve + inv (staged again after every change) while the
    main thread changes linalg_kernels and default_matmul_precision four times: no error,
    no deadlock, every result right. (The printer's race itself is the test above;
    before it, 4 such threads for 60 s gave 2-4 errors per 1000 calls.)"""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4)) + 4 * np.eye(4)
    b = rng.normal(size=(4,))
    want = np.linalg.solve(a, b) + np.sum(np.linalg.inv(a))
    A, B = hd.array(a), hd.array(b)
    errors, calls, done = [], [0] * 3, threading.Event()

    def work(k):
        while not done.is_set():
            try:
                got = hd.compile(lambda A, b: xp.linalg.solve(A, b) + xp.sum(xp.linalg.inv(A)))(
                    A, B)
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-8)
                calls[k] += 1
            except Exception as e:  # noqa: BLE001 (collected: the test reports them all)
                errors.append(f"{type(e).__name__}: {str(e)[:200]}")

    kernels, precision = hd.config.linalg_kernels, hd.config.default_matmul_precision
    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    try:
        for k in range(4):
            time.sleep(0.2)
            if k % 2:
                hd.config.default_matmul_precision = ("default", "highest")[k // 2 % 2]
            else:
                hd.config.linalg_kernels = ("hlo", "auto")[k // 2 % 2]
        time.sleep(0.2)
    finally:
        done.set()
        for t in threads:
            t.join(120)
        hd.config.linalg_kernels, hd.config.default_matmul_precision = kernels, precision
    assert not any(t.is_alive() for t in threads), "a thread did not finish: deadlock?"
    assert not errors, errors[:5]
    assert all(calls), calls


def test_default_float_changes_while_threads_compile():
    """A type-changing setting: a program is staged under one value or the other, whole."""
    errors, done = [], threading.Event()

    def work():
        while not done.is_set():
            try:
                got = hd.compile(lambda: xp.ones(3) * 0.5 + xp.zeros(3))()
                assert got.dtype in (hd.float32, hd.float64)
                assert re.fullmatch(r"float(32|64)", got.dtype.__name__)
            except Exception as e:  # noqa: BLE001
                errors.append(f"{type(e).__name__}: {str(e)[:200]}")

    before = hd.config.default_float
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for k in range(6):
            time.sleep(0.1)
            hd.config.default_float = ("float32", "float64")[k % 2]
    finally:
        done.set()
        for t in threads:
            t.join(60)
        hd.config.default_float = before
    assert not errors, errors[:5]


def test_a_change_waits_for_the_stagings_in_flight():
    """Deterministic: while one thread is inside a staging, a change in another thread waits
    for it (and a program is never staged half under each value)."""
    inside, release = threading.Event(), threading.Event()
    seen = []

    def f(x):
        inside.set()
        release.wait(30)
        seen.append(hd.config.linalg_kernels)  # the value its staging began with
        return x * 2

    before = hd.config.linalg_kernels
    other = "hlo" if before != "hlo" else "auto"
    stager = threading.Thread(target=lambda: hd.compile(f)(hd.array([1.0])))
    stager.start()
    assert inside.wait(30)
    changer = threading.Thread(target=setattr, args=(hd.config, "linalg_kernels", other))
    changer.start()
    changer.join(0.5)
    assert changer.is_alive()  # waiting for the staging
    release.set()
    stager.join(30)
    changer.join(30)
    try:
        assert not changer.is_alive() and seen == [before]
        assert hd.config.linalg_kernels == other
    finally:
        hd.config.linalg_kernels = before
