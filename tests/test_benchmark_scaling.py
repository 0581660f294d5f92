"""benchmarks/scaling.py, checked for what it claims (no timing): a data-parallel
step's per-device FLOPs and bytes communicated do not grow with the number of
devices, equal jax's for the same shardings, with no more collectives than jax."""

import sys
from pathlib import Path

import pytest

from hlodsl import runtime

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `benchmarks` is a top-level folder, not installed
    sys.path.insert(0, str(ROOT))

from benchmarks.scaling import collective_bytes, measure  # noqa: E402

pytestmark = pytest.mark.skipif(runtime.device_count() < 8, reason="needs 8 devices")


@pytest.fixture(scope="module")
def rows():
    return {r: measure(r, repeats=1) for r in (1, 2, 8)}


def test_per_device_work_does_not_grow_with_devices(rows):
    for r in (2, 8):
        assert rows[r]["flops"] == pytest.approx(rows[1]["flops"], rel=0.01)
    assert rows[1]["bytes_comm"] == 0
    assert rows[2]["bytes_comm"] == rows[8]["bytes_comm"] > 0


def test_same_work_and_no_more_collectives_than_jax(rows):
    for row in rows.values():
        assert row["flops"] == pytest.approx(row["jax_flops"], rel=0.01)
        assert row["bytes_comm"] == row["jax_bytes_comm"]
        assert row["collectives"] <= row["jax_collectives"]


def test_collective_bytes_reads_results_of_collectives():
    hlo = ("  %a = f32[4,8]{1,0} all-reduce(%x), channel_id=1\n"
           "  %b = (f32[2], s32[3]) all-gather-start(%y)\n  %c = f32[9] add(%p, %q)\n")
    assert collective_bytes(hlo) == (2, 4 * 8 * 4 + 2 * 4 + 3 * 4)
