"""Start a script as n cooperating processes on this machine (loopback only).

    python -m hlodsl.launch -n 2 [--devices-per-process 2] script.py [args...]

Each process gets the ``HLODSL_COORDINATOR`` (127.0.0.1 and a free port),
``HLODSL_NUM_PROCESSES`` and ``HLODSL_PROCESS_ID`` environment variables, so
that ``hd.distributed.initialize()`` with no arguments joins the group, and
``XLA_FLAGS`` giving it ``--devices-per-process`` CPU devices. Output lines
are prefixed with ``[i]``. If a process fails, the others are stopped after
``--grace`` seconds and the launcher exits with the first failure's status.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import threading
import time

__all__ = ["main", "launch"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pump(stream, prefix: str, out) -> None:
    for line in iter(stream.readline, ""):
        out.write(f"{prefix}{line}")
        out.flush()


def launch(argv: list[str], n: int, devices_per_process: int = 2, grace_s: float = 10.0,
           out=None) -> int:
    """Run ``python argv...`` as ``n`` processes; returns the exit status (0 if all passed)."""
    out = out or sys.stdout
    port = _free_port()
    flags = re.sub(r"--xla_force_host_platform_device_count=\d+", "",
                   os.environ.get("XLA_FLAGS", ""))
    procs, pumps = [], []
    for i in range(n):
        env = dict(os.environ, HLODSL_COORDINATOR=f"127.0.0.1:{port}",
                   HLODSL_NUM_PROCESSES=str(n), HLODSL_PROCESS_ID=str(i),
                   XLA_FLAGS=(flags + f" --xla_force_host_platform_device_count="
                              f"{devices_per_process}").strip(),
                   HLODSL_PLATFORM="cpu")
        p = subprocess.Popen([sys.executable, *argv], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        t = threading.Thread(target=_pump, args=(p.stdout, f"[{i}] ", out), daemon=True)
        t.start()
        procs.append(p)
        pumps.append(t)
    status, failed_at, first = 0, None, None
    while True:
        codes = [p.poll() for p in procs]
        bad = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
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
    parser.add_argument("-n", "--num-processes", type=int, required=True)
    parser.add_argument("--devices-per-process", type=int, default=2)
    parser.add_argument("--grace", type=float, default=10.0,
                        help="seconds the others get after one process fails")
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(args)
    if ns.num_processes < 1:
        parser.error("-n must be at least 1")
    return launch([ns.script, *ns.script_args], ns.num_processes, ns.devices_per_process,
                  ns.grace)


if __name__ == "__main__":
    sys.exit(main())
