"""Smoke test of the benchmark suite: every row runs and gives sane times.

No timing assertions: speed is reported by ``python -m benchmarks``, not tested.
"""

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `benchmarks` is a top-level folder, not installed
    sys.path.insert(0, str(ROOT))

import benchmarks  # noqa: E402


def test_quick_run_gives_positive_finite_times():
    rows = benchmarks.run(quick=True)
    assert rows
    for r in rows:
        for key in ("ours_s", "peer_s", "ratio"):
            assert math.isfinite(r[key]) and r[key] > 0, (key, r)
    table = benchmarks.table(rows)
    assert table.count("\n|") == len(rows) + 1  # header rule + one line per row


def test_soak_quick_run_gives_finite_growth_and_a_table():
    """``python -m benchmarks.soak --quick`` in this process: tiny counts, no memory claims."""
    import json

    from benchmarks import soak

    import hlodsl as hd

    cache_size = hd.config.compile_cache_size
    cfg = soak.Config(calls=200, eager_calls=100, warmup=10, traced_calls=50, shapes=2,
                      in_process=True)
    lines = []
    result = soak.run(cfg, out=lines.append)
    assert hd.config.compile_cache_size == cache_size  # restored
    rows = result["rows"]
    assert rows and lines
    for r in rows:
        assert math.isfinite(r["ours_v"]) and math.isfinite(r["peer_v"]), r
        assert r["ratio"] is None or math.isfinite(r["ratio"]), r
    sections = {r["section"].split(",")[0] for r in rows}
    assert sections == {"compiled", "eager", "diagnosis", "compile + del"}
    for s in result["soaks"]:  # the RSS series: one sample after warm-up, then every n/10
        assert len(s.rss) == 11 and all(v > 0 for v in s.rss)
    table = soak.table(rows)
    assert table.count("\n|") == len(rows) + 1  # header rule + one line per row

    # one compile-retention run as the full benchmark's child process does it (here)
    child = soak._retention_here("hlodsl", 2, "gc", 1)
    assert child.cached == 1 and child.base > 0
    assert json.loads(json.dumps(soak.dataclasses.asdict(child)))["side"] == "hlodsl"


def test_torch_cpu_quick_run_checks_and_times_every_workload():
    """``python -m benchmarks.torch_cpu --quick``: each peer checked equal, then timed."""
    from benchmarks import torch_cpu

    results = torch_cpu.run(quick=True, log=None)
    assert [r["case"].split(",")[0].split(" ")[0] for r in results] == \
        ["GPT", "ResNet", "eager", "RNN", "GEMM", "transformer", "VGG19"]
    for r in results:
        for side, t in {**r["times"], **r["cpu"]}.items():
            assert math.isfinite(t) and t >= 0, (r["case"], side, t)
        assert "hlodsl" in r["times"] or r["skipped"], r
    assert all("torch eager" in r["times"] for r in results[:-1])
    table = torch_cpu.table(results)
    assert table.count("\n|") >= len(results) + 1


def test_xla_options_and_time_split_quick_runs():
    """The XLA-options comparison and the time split by category, on tiny sizes."""
    from benchmarks import time_split, xla_options

    rows = xla_options.run(quick=True, only={"rnn"}, sets={"+reduce"}, log=None)
    assert [r["set"] for r in rows] == ["hlodsl", "+reduce"]
    assert rows[0]["ratio"] == 1.0 and rows[1]["instructions"] > 0
    (split,) = time_split.run({"rnn"}, runs=2, quick=True, log=None)
    assert sum(split["ours"].values()) > 0 and sum(split["theirs"].values()) > 0
    assert set(split["ours"]) <= set(time_split.CATEGORIES)


def test_interleaved_varies_which_side_runs_after_which():
    """``timing.interleaved``: each round starts with another side, every other len(sides)
    rounds run in reverse, so no side always follows the same one (numpy's and torch's
    threads spin for a while after a call, slowing whichever side comes next)."""
    from benchmarks.timing import interleaved

    seen = []
    sides = {k: (lambda k=k: seen.append(k)) for k in "abc"}
    times = interleaved(sides, repeat=6, warmup=0)
    assert set(times) == set("abc") and all(t >= 0 for t in times.values())
    rounds = ["".join(seen[i:i + 3]) for i in range(0, 18, 3)]
    assert rounds == ["abc", "bca", "cab", "cba", "acb", "bac"]
    after = {(seen[i], seen[i + 1]) for i in range(len(seen) - 1)}
    assert {("a", "b"), ("c", "b")} <= after  # b follows two different sides
