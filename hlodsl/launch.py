"""Start a script as cooperating processes: all of them on this machine, or this
host's share of a group that spans several hosts.

    python -m hlodsl.launch -n 2 [--devices-per-process 2] script.py [args...]
    python -m hlodsl.launch -n 8 --coordinator host0:7777 --process-id 2 --process-id 3 \
        script.py [args...]

Each process gets the ``HLODSL_COORDINATOR``, ``HLODSL_NUM_PROCESSES`` and
``HLODSL_PROCESS_ID`` environment variables, so that
``hd.distributed.initialize()`` with no arguments joins the group. Without
``--coordinator``, all ``n`` processes start here and meet on 127.0.0.1 at a
free port, each on ``--devices-per-process`` CPU devices. With it, the
processes named by ``--process-id`` (all ``n`` if none is named) start here
and meet the others at that address, on the default platform (GPU where
present; ``--devices-per-process`` still sets the CPU device count). Under
SLURM or Open MPI no launcher is needed: each task's
``hd.distributed.initialize()`` reads the scheduler's environment
(hlodsl.clusters). Output lines are prefixed with ``[i]``. If a process
fails, the others are stopped after ``--grace`` seconds and the launcher exits
with the first failure's status.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import socket
import subprocess
import sys
import threading
import time

__all__ = ["main", "launch", "host_environment"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pump(stream, prefix: str, out) -> None:
    for line in iter(stream.readline, ""):
        out.write(f"{prefix}{line}")
        out.flush()


def host_environment(devices: int, cpu: bool = True, base=None) -> dict[str, str]:
    """The environment (``base``, default ``os.environ``) of a process that runs hlodsl on
    ``devices`` CPU devices of this machine: XLA_FLAGS forcing the host device count and,
    with ``cpu``, ``HLODSL_PLATFORM=cpu`` (processes on one machine share no GPU; a run
    meant to equal theirs must be on the CPU as well).

    >>> env = host_environment(4, base={"XLA_FLAGS": "--xla_force_host_platform_device_count=8"})
    >>> env["HLODSL_PLATFORM"], env["XLA_FLAGS"]
    ('cpu', '--xla_force_host_platform_device_count=4')
    """
    env = dict(os.environ if base is None else base)
    flags = re.sub(r"--xla_force_host_platform_device_count=\d+", "", env.get("XLA_FLAGS", ""))
    env["XLA_FLAGS"] = " ".join((flags + f" --xla_force_host_platform_device_count={devices}")
                                .split())
    if cpu:
        env["HLODSL_PLATFORM"] = "cpu"
    return env


def launch(argv: list[str], n: int, devices_per_process: int = 2, grace_s: float = 10.0,
           out=None, coordinator: str | None = None,
           process_ids: list[int] | None = None) -> int:
    """Run ``python argv...`` as processes ``process_ids`` (default all) of a group of
    ``n`` meeting at ``coordinator`` (default: here, on a free loopback port, all on
    the CPU); returns the exit status (0 if all passed)."""
    out = out or sys.stdout
    local = coordinator is None
    if local:
        coordinator = f"127.0.0.1:{_free_port()}"
    ids = list(range(n)) if process_ids is None else list(process_ids)
    bad = [i for i in ids if not 0 <= i < n]
    if bad or len(set(ids)) != len(ids):
        raise ValueError(f"hlodsl.launch: process ids {ids} must be distinct and in [0, {n})")
    base = host_environment(devices_per_process, cpu=local)
    procs, pumps = [], []
    for i in ids:
        env = dict(base, HLODSL_COORDINATOR=coordinator, HLODSL_NUM_PROCESSES=str(n),
                   HLODSL_PROCESS_ID=str(i))
        p = subprocess.Popen([sys.executable, *argv], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        t = threading.Thread(target=_pump, args=(p.stdout, f"[{i}] ", out), daemon=True)
        t.start()
        procs.append(p)
        pumps.append(t)
    status, failed_at, first = 0, None, None
    while True:
        codes = [p.poll() for p in procs]
        bad = [(i, c) for i, c in zip(ids, codes) if c not in (None, 0)]
        if bad and failed_at is None:
            (first, status), failed_at = bad[0], time.monotonic()
        if all(c is not None for c in codes):
            break
        if failed_at is not None and time.monotonic() - failed_at > grace_s:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        time.sleep(0.05)
    for t in pumps:
        t.join(timeout=5)
    if status:
        out.write(f"hlodsl.launch: process {first} exited first, with status {status}; "
                  f"the others had {grace_s:g} s to finish before being stopped\n")
    return status


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hlodsl.launch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--num-processes", type=int, required=True,
                        help="processes in the whole group")
    parser.add_argument("--coordinator", metavar="HOST:PORT",
                        help="where the group meets (process 0 serves it); default: "
                             "every process here, on 127.0.0.1")
    parser.add_argument("--process-id", type=int, action="append", dest="process_ids",
                        metavar="I", help="start process I here (repeatable; default all)")
    parser.add_argument("--devices-per-process", type=int, default=2)
    parser.add_argument("--grace", type=float, default=10.0,
                        help="seconds the others get after one process fails")
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(args)
    if ns.num_processes < 1:
        parser.error("-n must be at least 1")
    if ns.devices_per_process < 1:
        parser.error(f"--devices-per-process must be at least 1, got {ns.devices_per_process}")
    if not math.isfinite(ns.grace) or ns.grace < 0:
        parser.error(f"--grace must be a finite number of seconds, at least 0, got {ns.grace}")
    if ns.coordinator is not None:
        from hlodsl.parallel.clusters import split_coordinator

        try:
            split_coordinator(ns.coordinator, "--coordinator")
        except ValueError as e:
            parser.error(str(e))
    if ns.process_ids is not None and ns.coordinator is None:
        parser.error("--process-id starts part of a group: give --coordinator too")
    try:
        return launch([ns.script, *ns.script_args], ns.num_processes, ns.devices_per_process,
                      ns.grace, coordinator=ns.coordinator, process_ids=ns.process_ids)
    except ValueError as e:
        parser.error(str(e))


if __name__ == "__main__":
    sys.exit(main())
