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
