"""Where a process group's coordinator is, read from the launcher's environment.

``hd.distributed.initialize()`` called without arguments finds its three values
(coordinator ``host:port``, number of processes, this process's id) the way
``jax.distributed.initialize()`` does, from the first of these that is present:

- ``hlodsl.launch``: ``HLODSL_COORDINATOR``, ``HLODSL_NUM_PROCESSES``,
  ``HLODSL_PROCESS_ID`` (also set by hand for any other launcher);
- SLURM (``srun``): ``SLURM_NTASKS``, ``SLURM_PROCID``; the coordinator is the
  first host of ``SLURM_STEP_NODELIST`` (or ``SLURM_JOB_NODELIST``) at a port
  derived from ``SLURM_JOB_ID``, so every task computes the same address;
- Open MPI (``mpirun``): ``OMPI_COMM_WORLD_SIZE``, ``OMPI_COMM_WORLD_RANK``; the
  coordinator is the launcher's host from ``OMPI_MCA_orte_hnp_uri`` at a port
  derived from the job id in it.

Each value may also be given explicitly; an explicit value wins.

>>> env = {"SLURM_JOB_ID": "4242", "SLURM_NTASKS": "4", "SLURM_PROCID": "1",
...        "SLURM_STEP_NODELIST": "gpu[007-008,010]"}
>>> detect(env)
('slurm', {'coordinator_address': 'gpu007:61586', 'num_processes': 4, 'process_id': 1})
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["HLODSL_ENV", "detect", "first_host", "port_for_job"]

#: The variables ``python -m hlodsl.launch`` sets for each process it starts.
HLODSL_ENV = {"coordinator_address": "HLODSL_COORDINATOR",
              "num_processes": "HLODSL_NUM_PROCESSES", "process_id": "HLODSL_PROCESS_ID"}

# Ports for launcher-derived coordinators: the top 4096 of the ephemeral range, as
# jax picks them, so an hlodsl job and a jax job under the same scheduler agree.
_PORT_BASE = 65535 - 2 ** 12 + 1


def port_for_job(job_id: int) -> int:
    """The coordinator port every process of job ``job_id`` derives alike."""
    return _PORT_BASE + job_id % 2 ** 12


def first_host(nodelist: str) -> str:
    """The first host of a SLURM host list (``node[001-004,7],login1`` -> ``node001``).

    >>> first_host("a-b[09-12]-ib,c"), first_host("rack[2-3]n[1-4]"), first_host("solo")
    ('a-b09-ib', 'rack2n1', 'solo')
    """
    nodelist = nodelist.strip()
    if not nodelist:
        raise ValueError("an empty SLURM host list")
    host, depth = [], 0
    for ch in nodelist:  # the first entry: up to a comma outside brackets
        if ch == "," and depth == 0:
            break
        depth += (ch == "[") - (ch == "]")
        host.append(ch)
    entry = "".join(host)
    # Each bracket group contributes its first number, zero padding kept.
    return re.sub(r"\[([^\],\-]+)[^\]]*\]", lambda m: m.group(1), entry)


def _slurm(env: Mapping[str, str]) -> dict | None:
    if "SLURM_JOB_ID" not in env or "SLURM_PROCID" not in env:
        return None
    nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
    out: dict = {"num_processes": env.get("SLURM_NTASKS") or env.get("SLURM_NPROCS"),
                 "process_id": env["SLURM_PROCID"]}
    if nodes:
        out["coordinator_address"] = f"{first_host(nodes)}:{port_for_job(int(env['SLURM_JOB_ID']))}"
    return out


def _open_mpi(env: Mapping[str, str]) -> dict | None:
    if "OMPI_COMM_WORLD_SIZE" not in env or "OMPI_COMM_WORLD_RANK" not in env:
        return None
    out: dict = {"num_processes": env["OMPI_COMM_WORLD_SIZE"],
                 "process_id": env["OMPI_COMM_WORLD_RANK"]}
    uri = env.get("OMPI_MCA_orte_hnp_uri")
    if uri:  # "<jobid>.<vpid>;tcp://<ip>[,<ip>...]:<port>"; the job id is a multiple of 2^12
        ip = re.search(r"tcp://([^,:;]+)|tcp6://\[([^\]]+)\]", uri)
        if ip is None:
            raise ValueError(f"distributed.initialize: cannot read the launcher's address from "
                             f"OMPI_MCA_orte_hnp_uri={uri!r}")
        job = int(uri.split(".", 1)[0]) // 2 ** 12
        host = ip.group(1) or f"[{ip.group(2)}]"
        out["coordinator_address"] = f"{host}:{port_for_job(job)}"
    return out


def _hlodsl(env: Mapping[str, str]) -> dict | None:
    found = {k: env[v] for k, v in HLODSL_ENV.items() if v in env}
    return found or None


#: Detectors in the order they are tried; the first that finds its launcher wins.
DETECTORS = (("hlodsl", _hlodsl), ("slurm", _slurm), ("open-mpi", _open_mpi))


def detect(env: Mapping[str, str]) -> tuple[str, dict] | None:
    """``(launcher, values)`` from the first launcher whose variables ``env`` has, or
    None. ``values`` holds those of the three it could read (numbers as ``int``)."""
    for name, find in DETECTORS:
        values = find(env)
        if values is None:
            continue
        for key in ("num_processes", "process_id"):
            if values.get(key) is not None:
                try:
                    values[key] = int(values[key])
                except ValueError:
                    raise ValueError(f"distributed.initialize: {key} from the {name} "
                                     f"environment must be an integer, got {values[key]!r}") \
                        from None
        return name, {k: values[k] for k in HLODSL_ENV if values.get(k) is not None}
    return None
