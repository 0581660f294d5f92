"""One program over several processes on this machine, through PJRT's distributed
runtime: ``python -m hlodsl.launch`` starts them, each with 2 CPU devices."""

import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hlodsl.launch import host_environment

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
    """The same training run in one process over its 8 host devices (on the CPU, as the
    launched processes run: on a GPU machine it ran in TF32 on the GPU)."""
    path = tmp_path_factory.mktemp("dp") / "one.npz"
    env = host_environment(8)
    env.pop("HLODSL_COORDINATOR", None)
    subprocess.run([sys.executable, str(EXAMPLE), str(path)], check=True, env=env, cwd=ROOT,
                   capture_output=True, timeout=240)
    return np.load(path)


def test_the_one_process_reference_runs_where_the_launched_processes_run(monkeypatch):
    monkeypatch.setenv("HLODSL_PLATFORM", "gpu")  # what .ci/device exports
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=x --xla_force_host_platform_device_count=3")
    env = host_environment(8)
    assert env["HLODSL_PLATFORM"] == "cpu"
    assert env["XLA_FLAGS"] == "--xla_dump_to=x --xla_force_host_platform_device_count=8"
    assert host_environment(2, cpu=False)["HLODSL_PLATFORM"] == "gpu"  # --coordinator runs


@pytest.mark.compat
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


# -- joining from a scheduler's environment (hlodsl.parallel.clusters) -----------------------------
# Each test starts the processes itself with the variables srun, mpirun or a second
# host's launcher would set, all on this machine (loopback), 2 CPU devices each.

WHO = ROOT / "tests" / "distributed" / "who.py"


def _free_port_in(low: int, high: int) -> int:
    import socket

    for port in range(low, high):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port")


def _run_group(envs: list[dict], argvs: list[list[str]] | None = None) -> list[str]:
    """Start one process per environment (added to a clean copy of ours) running
    ``who.py`` (or ``argvs[i]``); their outputs, once all have passed."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("HLODSL_", "SLURM_", "OMPI_"))}
    base.update(XLA_FLAGS="--xla_force_host_platform_device_count=2", HLODSL_PLATFORM="cpu")
    argvs = argvs or [[str(WHO)]] * len(envs)
    procs = [subprocess.Popen([sys.executable, *argv], env={**base, **env}, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for env, argv in zip(envs, argvs)]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=180)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
    return outs


def _check(outs: list[str], n: int) -> None:
    total = float(sum(2 * (i + 1) for i in range(n)))
    for i, out in enumerate(outs):
        assert f"process {i} of {n}: {2 * n} devices, sum {total}" in out, out[-2000:]


@pytest.mark.compat
def test_initialize_reads_slurm_environment():
    from hlodsl.parallel.clusters import port_for_job

    port = _free_port_in(port_for_job(0), port_for_job(0) + 4096)
    job = port - port_for_job(0) + 4096 * 7  # srun's job id: any whose port is free
    envs = [{"SLURM_JOB_ID": str(job), "SLURM_NTASKS": "2", "SLURM_PROCID": str(i),
             "SLURM_STEP_NODELIST": "localhost", "SLURM_LOCALID": str(i)} for i in range(2)]
    _check(_run_group(envs), 2)


def test_initialize_reads_open_mpi_environment():
    from hlodsl.parallel.clusters import port_for_job

    port = _free_port_in(port_for_job(0), port_for_job(0) + 4096)
    job = (port - port_for_job(0)) * 4096  # mpirun's job ids are multiples of 2^12
    uri = f"{job}.0;tcp://127.0.0.1,10.0.0.9:40000"
    envs = [{"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": str(i),
             "OMPI_COMM_WORLD_LOCAL_RANK": str(i), "OMPI_MCA_orte_hnp_uri": uri} for i in range(2)]
    _check(_run_group(envs), 2)


def test_launch_starts_each_hosts_share_of_a_group():
    """Two launchers, as on two hosts, each starting its own process of one group."""
    port = _free_port_in(20000, 30000)
    argv = ["-m", "hlodsl.launch", "-n", "2", "--coordinator", f"127.0.0.1:{port}"]
    outs = _run_group([{}, {}], [[*argv, "--process-id", str(i), str(WHO)] for i in range(2)])
    for i, out in enumerate(outs):
        assert f"[{i}] process {i} of 2" in out, out[-2000:]
    _check(outs, 2)


def test_launch_refuses_a_process_id_without_a_coordinator():
    out = subprocess.run([sys.executable, "-m", "hlodsl.launch", "-n", "2", "--process-id", "1",
                          str(WHO)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 2 and "give --coordinator too" in out.stderr


@pytest.mark.parametrize("env, message", [
    ({"SLURM_JOB_ID": "1", "SLURM_PROCID": "0", "SLURM_NTASKS": "2"},
     "coordinator_address not given and the slurm environment does not give it"),
    ({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "x"},
     "process_id from the open-mpi environment must be an integer, got 'x'"),
    ({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0",
      "OMPI_MCA_orte_hnp_uri": "12.0;udp://nowhere"}, "cannot read the launcher's address"),
])
def test_an_incomplete_scheduler_environment_is_a_clear_error(monkeypatch, env, message):
    import hlodsl as hd

    for var in list(os.environ):
        if var.startswith(("HLODSL_", "SLURM_", "OMPI_")):
            monkeypatch.delenv(var)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValueError, match=re.escape(message)):
        hd.distributed.initialize()


@pytest.mark.parametrize("nodelist, host", [
    ("node07", "node07"), ("node[001-004,7]", "node001"), ("a-b[09-12]-ib,c", "a-b09-ib"),
    ("rack[2-3]n[1-4],x[5]", "rack2n1"), ("login1,node[3-4]", "login1"), ("n[8,2]", "n8"),
])
def test_the_first_host_of_a_slurm_host_list(nodelist, host):
    from hlodsl.parallel.clusters import first_host

    assert first_host(nodelist) == host


def test_explicit_values_win_over_the_environment():
    from hlodsl.parallel.clusters import detect

    env = {"HLODSL_PROCESS_ID": "1", "SLURM_JOB_ID": "5", "SLURM_PROCID": "0",
           "SLURM_NTASKS": "4", "SLURM_STEP_NODELIST": "h[1-4]"}
    # hlodsl.launch's variables come first; a launcher that set only some of them
    # still decides (values are never mixed from two launchers).
    assert detect(env) == ("hlodsl", {"process_id": 1})
    del env["HLODSL_PROCESS_ID"]
    assert detect(env) == ("slurm", {"coordinator_address": "h1:61445", "num_processes": 4,
                                     "process_id": 0})
    assert detect({}) is None


# -- a bad environment, a bad timeout, a process that never comes (issue 40) -----------------

@pytest.mark.parametrize("env, message", [
    ({"SLURM_STEP_NODELIST": "node["}, r"SLURM_STEP_NODELIST='node\[': an unclosed '\['"),
    ({"SLURM_STEP_NODELIST": "node[5-3]"}, r"the range 5-3 runs backwards"),
    ({"SLURM_STEP_NODELIST": "node[a-b]"}, r"\[a-b\] holds 'a-b', not numbers"),
    ({"SLURM_STEP_NODELIST": "no de1"}, r"' ' cannot be part of a host name"),
    ({"SLURM_STEP_NODELIST": "node]1["}, r"a '\]' without its '\['"),
    ({"SLURM_STEP_NODELIST": "[1-2]"}, r"its first host '1' is not a valid host name"),
    ({"SLURM_JOB_ID": "1" * 30}, r"SLURM_JOB_ID='1{30}': must be"),
    ({"SLURM_JOB_ID": "0"}, r"SLURM_JOB_ID='0': must be at least 1 and below 4294967296"),
    ({"SLURM_JOB_ID": str(2 ** 32)}, r"must be at least 1 and below 4294967296"),
    ({"SLURM_JOB_ID": "12a"}, r"SLURM_JOB_ID='12a': must be a decimal number"),
    ({"SLURM_NTASKS": "-2", "SLURM_PROCID": "5"}, r"SLURM_NTASKS='-2': must be a decimal"),
    ({"SLURM_NTASKS": "2", "SLURM_PROCID": "5"}, r"SLURM_PROCID='5': must be below "
                                                 r"SLURM_NTASKS='2'"),
])
def test_a_malformed_slurm_environment_names_the_variable(env, message):
    from hlodsl.parallel.clusters import detect

    base = {"SLURM_JOB_ID": "4242", "SLURM_NTASKS": "2", "SLURM_PROCID": "0",
            "SLURM_STEP_NODELIST": "node[1-2]"}
    with pytest.raises(ValueError, match=message):
        detect({**base, **env})


@pytest.mark.parametrize("uri, message", [
    ("12x.0;tcp://10.0.0.1:4000", r"its job id '12x' must be a decimal number"),
    ("4096.0;tcp://999.1.1.1:4000", r"'999.1.1.1' is not a host name or address"),
])
def test_a_malformed_open_mpi_uri_names_the_variable(uri, message):
    from hlodsl.parallel.clusters import detect

    with pytest.raises(ValueError, match=message):
        detect({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0",
                "OMPI_MCA_orte_hnp_uri": uri})


@pytest.mark.parametrize("timeout", [-5, 0, 0.5, math.nan, math.inf, True, "10"])
def test_a_timeout_that_is_not_a_finite_number_of_seconds_is_refused_at_once(timeout):
    import hlodsl as hd

    start = time.monotonic()
    with pytest.raises(ValueError, match="timeout_s must be a finite number of seconds"):
        hd.distributed.initialize("127.0.0.1:1", 2, 1, timeout_s=timeout)
    assert time.monotonic() - start < 1


@pytest.mark.parametrize("address, message", [
    ("host:99999", "the port must be in 1..65535"), ("ho st:80", "is not a host name"),
    ("localhost", "must be host:port"), ("[zz]:80", "not an IPv6 address"),
])
def test_a_malformed_coordinator_is_refused(address, message):
    import hlodsl as hd

    with pytest.raises(ValueError, match=re.escape(message)):
        hd.distributed.initialize(address, 2, 1, timeout_s=5)


@pytest.mark.parametrize("args, message", [
    (["--coordinator", "host:99999"], "the port must be in 1..65535"),
    (["--coordinator", "ho st:80"], "is not a host name"),
    (["--devices-per-process", "0"], "--devices-per-process must be at least 1"),
    (["--grace", "nan"], "--grace must be a finite number"),
    (["--grace", "-1"], "--grace must be a finite number"),
])
def test_launch_checks_its_arguments(capsys, args, message):
    from hlodsl.launch import main

    with pytest.raises(SystemExit) as e:
        main(["-n", "2", *args, str(WHO)])
    assert e.value.code == 2 and message in capsys.readouterr().err


JOIN = """
import sys, time, hlodsl as hd
n, pid, port, timeout = map(float, sys.argv[1:])
start = time.monotonic()
try:
    hd.distributed.initialize(f"127.0.0.1:{int(port)}", int(n), int(pid), timeout_s=timeout)
    print("joined", flush=True)
except (TimeoutError, RuntimeError) as e:
    print(f"{type(e).__name__} after {time.monotonic() - start:.1f} s: {e}", flush=True)
"""


def _run_joiners(n: int, pids: list[int], timeout_s: float):
    port = _free_port_in(20000, 30000)
    procs = [subprocess.Popen([sys.executable, "-c", JOIN, str(n), str(pid), str(port),
                               str(timeout_s)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, cwd=ROOT) for pid in pids]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    return [(p.returncode, out) for p, out in zip(procs, outs)]


def _seconds(out: str) -> float:
    return float(re.search(r"after ([\d.]+) s", out)[1])


def test_a_process_whose_coordinator_never_comes_raises_within_the_timeout():
    """Before: exit 134 ('Terminating process because the JAX distributed service detected
    fatal errors')."""
    [(code, out)] = _run_joiners(2, [1], 3)
    assert code == 0, out[-2000:]
    assert "TimeoutError" in out and "process 1 of 2 found no coordinator" in out, out[-2000:]
    assert _seconds(out) < 3 * 3  # the limit is the contract, not a speed measurement
    assert "Terminating process" not in out


def test_processes_that_met_name_the_one_that_never_joined():
    (code0, out0), (code1, out1) = _run_joiners(3, [0, 1], 4)
    assert code0 == code1 == 0, out0[-2000:] + out1[-2000:]
    assert "TimeoutError" in out0 and "processes [2] of 3 did not reach" in out0, out0[-2000:]
    assert "RuntimeError" in out1 and "processes [2] never joined" in out1, out1[-2000:]
    assert _seconds(out0) < 3 * 4 and _seconds(out1) < 3 * 4


def test_launch_reports_a_process_that_exits_before_joining():
    script = ROOT / "tests" / "distributed" / "leaves_early.py"
    code, log, seconds = _launch(2, script, grace=60)
    assert code != 0
    assert "process 1 exited first, with status 3" in log, log[-3000:]
    assert "[0] TimeoutError" in log and "processes [1] of 2 did not reach" in log, log[-3000:]
    assert "Terminating process" not in log and "Check failed" not in log
