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

Each value may also be given explicitly; an explicit value wins. Every value
read is checked (a ``ValueError`` names the variable and what is wrong in it):
host lists follow SLURM's grammar (``name[1-3,7],other``; ranges that run
forwards, numbers in brackets), job ids are SLURM's (decimal, below 2**32),
``SLURM_PROCID`` lies in ``[0, SLURM_NTASKS)``, Open MPI's URI holds a decimal
job id and an address, and a coordinator is ``host:port`` with a port in
1..65535 and a host name, IPv4 address or ``[IPv6]`` address.

>>> env = {"SLURM_JOB_ID": "4242", "SLURM_NTASKS": "4", "SLURM_PROCID": "1",
...        "SLURM_STEP_NODELIST": "gpu[007-008,010]"}
>>> detect(env)
('slurm', {'coordinator_address': 'gpu007:61586', 'num_processes': 4, 'process_id': 1})
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["HLODSL_ENV", "detect", "first_host", "port_for_job", "split_coordinator"]

#: The variables ``python -m hlodsl.launch`` sets for each process it starts.
HLODSL_ENV = {"coordinator_address": "HLODSL_COORDINATOR",
              "num_processes": "HLODSL_NUM_PROCESSES", "process_id": "HLODSL_PROCESS_ID"}

# Ports for launcher-derived coordinators: the top 4096 of the ephemeral range, as
# jax picks them, so an hlodsl job and a jax job under the same scheduler agree.
_PORT_BASE = 65535 - 2 ** 12 + 1


def port_for_job(job_id: int) -> int:
    """The coordinator port every process of job ``job_id`` derives alike."""
    return _PORT_BASE + job_id % 2 ** 12


def first_host(nodelist: str, variable: str = "SLURM_STEP_NODELIST") -> str:
    """The first host of a SLURM host list (``node[001-004,7],login1`` -> ``node001``).

    The list is checked whole: ``entry ("," entry)*``, an entry being name
    characters and bracket groups ``[ranges]``, a range ``digits`` or
    ``digits-digits`` running forwards.

    >>> first_host("a-b[09-12]-ib,c"), first_host("rack[2-3]n[1-4]"), first_host("solo")
    ('a-b09-ib', 'rack2n1', 'solo')
    >>> first_host("node[5-3]")
    Traceback (most recent call last):
    ValueError: SLURM_STEP_NODELIST='node[5-3]': the range 5-3 runs backwards
    """
    text = nodelist.strip()

    def bad(why: str):
        raise ValueError(f"{variable}={nodelist!r}: {why}")

    if not text:
        bad("an empty SLURM host list")
    entries, entry, k = [], "", 0
    while k < len(text):  # the grammar, read once: entries and their bracket groups
        ch = text[k]
        if ch == "[":
            close = text.find("]", k)
            if close < 0:
                bad("an unclosed '['")
            group = text[k + 1:close]
            if "[" in group:
                bad("a '[' inside brackets")
            first = None
            for part in group.split(","):
                lo, dash, hi = part.partition("-")
                if not lo.isdigit() or (dash and not hi.isdigit()):
                    bad(f"[{group}] holds {part!r}, not numbers or a range of them")
                if dash and int(hi) < int(lo):
                    bad(f"the range {part} runs backwards")
                first = lo if first is None else first
            entry += first
            k = close + 1
        elif ch == "]":
            bad("a ']' without its '['")
        elif ch == ",":
            entries.append(entry)
            entry, k = "", k + 1
        elif ch.isalnum() or ch in "._-":
            entry += ch
            k += 1
        else:
            bad(f"{ch!r} cannot be part of a host name")
    entries.append(entry)
    if any(not e for e in entries):
        bad("an empty entry (two commas, or one at an end)")
    host = entries[0]
    if not _valid_host(host):
        bad(f"its first host {host!r} is not a valid host name")
    return host


#: A host name (RFC 1123 labels) or an IPv4 address.
_HOST = re.compile(r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                   r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")


def _valid_host(host: str) -> bool:
    """A host name (RFC 1123), or an IPv4 address: all digits only as a dotted quad."""
    if not _HOST.fullmatch(host):
        return False
    if host.replace(".", "").isdigit():
        parts = host.split(".")
        return len(parts) == 4 and all(int(p) <= 255 for p in parts)
    return True


def split_coordinator(address, where: str = "coordinator_address") -> tuple[str, int]:
    """``(host, port)`` of ``host:port``, the host a name, IPv4 or ``[IPv6]`` address.

    >>> split_coordinator("node7:1234"), split_coordinator("[::1]:80")
    (('node7', 1234), ('[::1]', 80))
    >>> split_coordinator("host:99999")
    Traceback (most recent call last):
    ValueError: coordinator_address='host:99999': the port must be in 1..65535
    """
    text = str(address)
    host, colon, port = text.rpartition(":")
    if not colon or not host:
        raise ValueError(f"{where}={text!r}: must be host:port")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"{where}={text!r}: the port must be in 1..65535")
    if host.startswith("["):
        import ipaddress

        try:
            ipaddress.IPv6Address(host[1:-1] if host.endswith("]") else "!")
        except ValueError:
            raise ValueError(f"{where}={text!r}: {host} is not an IPv6 address in "
                             "brackets") from None
    elif not _valid_host(host):
        raise ValueError(f"{where}={text!r}: {host!r} is not a host name or address")
    return host, int(port)


def _decimal(env: Mapping[str, str], name: str, low: int, high: int | None = None) -> int:
    text = env[name].strip()
    if not text.isdigit() or (high is not None and len(text) > 20):
        raise ValueError(f"{name}={env[name]!r}: must be a decimal number")
    value = int(text)
    if value < low or (high is not None and value >= high):
        upper = f" and below {high}" if high is not None else ""
        raise ValueError(f"{name}={env[name]!r}: must be at least {low}{upper}")
    return value


def _slurm(env: Mapping[str, str]) -> dict | None:
    if "SLURM_JOB_ID" not in env or "SLURM_PROCID" not in env:
        return None
    job = _decimal(env, "SLURM_JOB_ID", 1, 2 ** 32)  # SLURM's job ids are uint32
    tasks_var = "SLURM_NTASKS" if env.get("SLURM_NTASKS") else "SLURM_NPROCS"
    out: dict = {"process_id": _decimal(env, "SLURM_PROCID", 0)}
    if env.get(tasks_var):
        out["num_processes"] = _decimal(env, tasks_var, 1)
        if out["process_id"] >= out["num_processes"]:
            raise ValueError(f"SLURM_PROCID={env['SLURM_PROCID']!r}: must be below "
                             f"{tasks_var}={env[tasks_var]!r}")
    var = "SLURM_STEP_NODELIST" if env.get("SLURM_STEP_NODELIST") else "SLURM_JOB_NODELIST"
    if env.get(var):
        out["coordinator_address"] = f"{first_host(env[var], var)}:{port_for_job(job)}"
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
        job_text = uri.split(".", 1)[0]
        if not job_text.isdigit() or len(job_text) > 20:
            raise ValueError(f"OMPI_MCA_orte_hnp_uri={uri!r}: its job id {job_text!r} must be "
                             "a decimal number")
        job = int(job_text) // 2 ** 12
        host = ip.group(1) or f"[{ip.group(2)}]"
        address = f"{host}:{port_for_job(job)}"
        split_coordinator(address, "OMPI_MCA_orte_hnp_uri's address")
        out["coordinator_address"] = address
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
        n, pid = values.get("num_processes"), values.get("process_id")
        if n is not None and n < 1:
            raise ValueError(f"distributed.initialize: num_processes from the {name} "
                             f"environment must be at least 1, got {n}")
        if pid is not None and (pid < 0 or n is not None and pid >= n):
            raise ValueError(f"distributed.initialize: process_id from the {name} environment "
                             f"is {pid}, not in [0, {n if n is not None else 'n'})")
        if values.get("coordinator_address") is not None:
            split_coordinator(values["coordinator_address"],
                              f"the coordinator from the {name} environment")
        return name, {k: values[k] for k in HLODSL_ENV if values.get(k) is not None}
    return None
