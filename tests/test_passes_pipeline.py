"""The pass pipeline: how compile, code_hlo and Compiled run passes and report them."""

from __future__ import annotations

import numpy as np
import pytest

import hlodsl as hd
from hlodsl import ops
from hlodsl.settings import format_bytes, memory_size
from hlodsl.transforms.passes import rewrite


class ExpLogToIdentity:
    """A pass for the tests: exp(log(x)) -> x."""

    name = "exp-log"

    def __call__(self, comp, ctx):
        changed = []

        def rule(node, values, new):
            if type(node.op) is ops.Exp and type(node.operands[0].op) is ops.Log:
                changed.append(f"exp(log({node.operands[0].operands[0].type}))")
                return new(node.operands[0].operands[0])
            return None

        return rewrite(comp, rule), changed


def exp_log(x):
    return ops.Exp()(ops.Log()(x)) * 2


X = hd.array(np.float32([1, 2, 3]))


def test_a_pass_rewrites_what_the_compiled_function_runs_and_says_so():
    f = hd.compile(exp_log, passes=[ExpLogToIdentity()])
    np.testing.assert_array_equal(np.asarray(f(X)), [2, 4, 6])
    assert f.report(X) == "exp-log: 6 -> 4 instructions\n  exp(log(f32[3]))"
    assert "exponential" not in hd.code_hlo(f, X)
    assert "exponential" in hd.code_hlo(exp_log, X)
    assert "exponential" not in hd.code_hlo(exp_log, X, passes=[ExpLogToIdentity()])


def test_report_without_passes_says_none_ran():
    assert "no passes ran" in hd.compile(exp_log).report(X)


def test_memory_stats_are_xlas_counts_for_the_signature():
    stats = hd.compile(exp_log).memory_stats(X)
    assert stats["argument_size_in_bytes"] == 12 and stats["output_size_in_bytes"] == 12
    assert {"temp_size_in_bytes", "generated_code_size_in_bytes"} <= set(stats)


def test_compile_of_a_compiled_function_with_a_limit_makes_a_new_one():
    f = hd.compile(exp_log)
    assert hd.compile(f) is f
    g = hd.compile(f, memory_limit="1MiB")
    assert g is not f and g.memory_limit == 2**20


@pytest.mark.parametrize("passes, message", [
    ("split", "passes must be a sequence of passes"),
    ([1], "each pass must be callable"),
])
def test_bad_passes_are_refused_at_compile(passes, message):
    with pytest.raises(TypeError, match=message):
        hd.compile(exp_log, passes=passes)


@pytest.mark.parametrize("text, size", [
    ("1GiB", 2**30), ("1.5 GB", 1_500_000_000), ("64 MiB", 64 * 2**20), ("2e3", 2000),
    (4096, 4096), ("512kib", 512 * 1024),
])
def test_memory_sizes_read_units(text, size):
    assert memory_size(text) == size


@pytest.mark.parametrize("bad, error", [
    ("a lot", ValueError), ("-1GiB", ValueError), (0, ValueError), (True, TypeError),
    ([1], TypeError), (float("nan"), ValueError),
])
def test_bad_memory_limits_are_refused_at_compile(bad, error):
    with pytest.raises(error, match="memory_limit"):
        hd.compile(exp_log, memory_limit=bad)


@pytest.fixture
def free_memory(monkeypatch):
    """The device's free memory as the test says (``memory_limit="auto"`` reads it)."""
    from hlodsl import settings

    free = [2**30]
    monkeypatch.setattr(settings, "_FREE_MEMORY", [lambda: free[0]])
    yield free
    hd.config.auto_memory_fraction = 0.8


def test_auto_is_a_fraction_of_the_free_memory(free_memory):
    assert memory_size("auto") == int(0.8 * 2**30) and memory_size(" AUTO ") == memory_size("auto")
    hd.config.auto_memory_fraction = 0.5
    assert memory_size("auto") == 2**29
    for bad in (0, 1.5, "half", True):  # refused when set (hd.config validates), kept 0.5
        with pytest.raises(ValueError, match="auto_memory_fraction: must be a number in"):
            hd.config.auto_memory_fraction = bad
        assert memory_size("auto") == 2**29
    hd.config.auto_memory_fraction = 0.8
    free_memory[0] = 0
    with pytest.raises(ValueError, match="'auto' found no free memory"):
        memory_size("auto")


def test_auto_is_measured_when_each_signature_compiles(free_memory):
    f = hd.compile(exp_log, memory_limit="auto")
    assert f.memory_limit == "auto"
    f(hd.array(np.ones(8, np.float32)))
    free_memory[0] = 2**20
    f(hd.array(np.ones(9, np.float32)))
    limits = [f.report(hd.array(np.ones(n, np.float32))).splitlines()[-1] for n in (8, 9)]
    assert "memory_limit=819.2 MiB" in limits[0] and "memory_limit=819.2 KiB" in limits[1]
    text = hd.code_hlo(exp_log, hd.array(np.ones(8, np.float32)), memory_limit="auto")
    assert text.startswith("HloModule")


def test_the_real_free_memory_is_the_hosts_on_a_cpu():
    from hlodsl import runtime

    if runtime.platform() != "cpu":
        pytest.skip("the device's allocator statistics are read on a GPU")
    with open("/proc/meminfo") as f:
        available = next(int(line.split()[1]) * 1024 for line in f
                         if line.startswith("MemAvailable:"))
    assert abs(runtime.free_memory() - available) < 0.25 * available
    assert 0 < memory_size("auto") <= runtime.free_memory()


def test_format_bytes_picks_a_binary_unit():
    assert [format_bytes(n) for n in (12, 2048, 3 * 2**30)] == ["12 B", "2.0 KiB", "3.0 GiB"]


def test_memory_limit_error_is_a_memory_error():
    assert issubclass(hd.MemoryLimitError, MemoryError)
    assert issubclass(hd.MemoryLimitError, hd.HloDslError)


class _Attempt:
    """A pass for the tests that changes nothing but says which attempt it is."""

    name = "attempt"

    def __call__(self, comp, ctx):
        return comp, [f"attempt {ctx.attempt}"]


class _Exe:
    def __init__(self, temp):
        self.temp = temp

    def memory_stats(self):
        return {"temp_size_in_bytes": self.temp}


class _Entry:
    """What ``build`` gives the pipeline: an executable that says its temporary bytes."""

    def __init__(self, temp):
        self.exe = _Exe(temp)


def test_the_limit_pipeline_frees_the_heap_after_each_compile_and_drops_rejected_ones(
        monkeypatch):
    import weakref

    from hlodsl.ir.staging import stage
    from hlodsl.transforms.passes import pipeline

    staged = stage(exp_log, (X,), {})
    trims, built, alive = [], [], []

    def build(_):
        # The entry of the attempt before (over the limit) must be gone by now.
        alive.append(any(ref() is not None for ref in built))
        entry = _Entry(100 if len(built) < 2 else 10)
        built.append(weakref.ref(entry))
        return entry

    monkeypatch.setattr(pipeline.runtime, "release_host_memory", lambda: trims.append(1))
    entry = pipeline.compile_with_passes(staged, [_Attempt()], 50, build)
    assert entry.exe.temp == 10 and len(built) == 3
    assert len(trims) == 3  # after every compile under the limit
    assert alive == [False, False, False]
    trims.clear()
    pipeline.compile_with_passes(staged, [_Attempt()], None, build)
    assert trims == []  # no limit: the process's peak is not the pipeline's business
