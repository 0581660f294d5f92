"""``python -m benchmarks.gpu``: its rows run at their rehearsal sizes, a failing row is
reported without losing the others, and the JSON holds what the table shows.

No timing assertions (speed is reported, not tested). VGG19 is left out: even at batch 1
its 224x224 forward and backward take a minute on two cores (``.ci/device``'s rehearsal
runs it: docs/gpu.md).
"""

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `benchmarks` is a top-level folder, not installed
    sys.path.insert(0, str(ROOT))

from benchmarks import gpu  # noqa: E402

CHEAP = ("dense", "gemm", "lstm", "attention", "sdpa", "linalg")


@pytest.fixture(scope="module")
def quick():
    return gpu.run(quick=True, rows=CHEAP)


def test_quick_rows_give_positive_finite_times(quick):
    assert quick["errors"] == {}
    assert quick["device"].startswith(("cpu", "gpu", "cuda"))
    cases = [r["case"] for r in quick["rows"]]
    # one row each, two for GEMM (bf16, f32), ten for linalg
    assert len(cases) == 1 + 2 + 1 + 1 + 1 + 10, cases
    assert any("bf16" in c for c in cases) and any("cholesky" in c for c in cases)
    for r in quick["rows"]:
        for key in ("ours_s", "peer_s", "ratio"):
            assert math.isfinite(r[key]) and r[key] > 0, (key, r)


def test_attention_row_reports_it_ran_under_its_limit(quick):
    (case,) = [r["case"] for r in quick["rows"] if "XLA temp" in r["case"]]
    limit = gpu.SIZES["quick"]["attention_limit"]
    assert f"memory_limit={limit!r}" in case
    ours = float(case.split("XLA temp ")[1].split(" MiB")[0])
    assert ours <= 32  # MiB: the limit (XLA's own count, known before running)


def test_peak_by_device_kind():
    assert gpu.peak_tflops("NVIDIA H100 80GB HBM3", "bf16") == 989.0
    assert gpu.peak_tflops("NVIDIA H100 PCIe", "f32") == 378.0  # not the SXM part's
    assert gpu.peak_tflops("NVIDIA H200", "f32") == 494.0
    assert gpu.peak_tflops("cpu", "bf16") is None


def test_a_failing_row_is_reported_and_the_rest_still_run(monkeypatch, capsys, tmp_path):
    def broken(cfg, size):
        raise ValueError("no such kernel\nsecond line")

    monkeypatch.setitem(gpu.ROWS, "broken", broken)
    out = tmp_path / "bench.json"
    with pytest.raises(SystemExit) as stop:
        gpu.main(["--quick", "--rows", "broken,dense", "--json", str(out)])
    assert stop.value.code == 1
    printed = capsys.readouterr()
    assert "FAILED broken: ValueError: no such kernel" in printed.out
    assert "dense 10x10 f32" in printed.out and "Device: " in printed.out
    assert "[benchmarks.gpu] broken: FAILED" in printed.err
    saved = json.loads(out.read_text())
    assert saved["errors"] == {"broken": "ValueError: no such kernel"}
    assert [r["case"] for r in saved["rows"]] == ["dense 10x10 f32, per call"]


def test_unknown_rows_are_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        gpu.main(["--rows", "gemm,fft"])
    assert "unknown rows ['fft']" in capsys.readouterr().err
