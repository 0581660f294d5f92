"""One program over several processes on this machine, through PJRT's distributed
runtime: ``python -m hlodsl.launch`` starts them, each with 2 CPU devices."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "data_parallel.py"


def _launch(n, script, *args, grace=10, timeout=240):
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "hlodsl.launch", "-n", str(n), "--grace",
                          str(grace), str(script), *map(str, args)], capture_output=True,
                         text=True, timeout=timeout, cwd=ROOT)
    return out.returncode, out.stdout + out.stderr, time.monotonic() - start


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """The same training run in one process over its 8 host devices."""
    path = tmp_path_factory.mktemp("dp") / "one.npz"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8")
    env.pop("HLODSL_COORDINATOR", None)
    subprocess.run([sys.executable, str(EXAMPLE), str(path)], check=True, env=env, cwd=ROOT,
                   capture_output=True, timeout=240)
    return np.load(path)


@pytest.mark.parametrize("n", [2, 4])
def test_data_parallel_training_across_processes_equals_one_process(n, one_process, tmp_path):
    path = tmp_path / f"{n}.npz"
    code, log, _ = _launch(n, EXAMPLE, path)
    assert code == 0, log
    assert log.count("checksum") == n, log
    assert f"of {n}: {2 * n} devices" in log
    got = np.load(path)
    assert len(got.files) == len(one_process.files) == 4
    for k in one_process.files:
        np.testing.assert_allclose(got[k], one_process[k], rtol=1e-5, atol=1e-7)


def test_a_process_that_dies_makes_the_others_fail_not_hang():
    code, log, seconds = _launch(2, ROOT / "tests" / "distributed" / "dies.py", grace=200)
    assert code != 0
    assert seconds < 120, f"took {seconds:.0f} s"
    assert "process 1 exited first, with status 3" in log
    # process 0 is stopped by the runtime's health check, which says why
    assert "another task died" in log or "unhealthy" in log, log[-3000:]
    assert "unexpected result" not in log


def test_initialize_needs_its_three_values(monkeypatch):
    import hlodsl as hd

    for var in hd.distributed.ENV.values():
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="coordinator_address not given"):
        hd.distributed.initialize()
    with pytest.raises(ValueError, match="process_id 2 is not in"):
        hd.distributed.initialize("127.0.0.1:1", 2, 2)
    with pytest.raises(ValueError, match="host:port"):
        hd.distributed.initialize("localhost", 2, 0)
