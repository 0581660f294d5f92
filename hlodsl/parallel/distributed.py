"""One program over the devices of several processes (and hosts), through PJRT's
distributed runtime.

Each process calls ``initialize`` first; from then on ``hd.devices()`` lists
every process's devices, a mesh may span them, and a compiled program with
shardings over such a mesh runs as one SPMD program, each process feeding
and holding the shards on its own devices. Collectives between processes on
CPU go through gloo (the runtime's own implementation); nothing here moves
data itself. ``python -m hlodsl.launch -n 2 script.py`` starts local runs.

>>> import hlodsl as hd
>>> hd.distributed.process_count(), hd.distributed.process_index()
(1, 0)
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from . import clusters, rendezvous
from hlodsl import runtime
from hlodsl.arrays.sharding import NamedSharding

__all__ = ["initialize", "launcher", "shutdown", "process_index", "process_count", "local_devices",
           "make_array_from_process_local_data", "ENV"]

#: Environment variables ``initialize()`` reads first when called without arguments
#: (``python -m hlodsl.launch`` sets them); SLURM's and Open MPI's come next
#: (hlodsl.parallel.clusters).
ENV = clusters.HLODSL_ENV


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, *, timeout_s: float = 60) -> None:
    """Join ``num_processes`` processes that meet at ``coordinator_address``
    (``host:port``; process 0 serves it). Must run before anything else uses
    hlodsl's runtime.

    Missing arguments come from the launcher's environment, as
    ``jax.distributed.initialize()`` finds them: ``python -m hlodsl.launch``'s
    ``HLODSL_COORDINATOR`` / ``HLODSL_NUM_PROCESSES`` / ``HLODSL_PROCESS_ID``,
    else SLURM's (``srun``), else Open MPI's (``mpirun``); see hlodsl.clusters.
    Every value is checked first (``ValueError`` naming it; ``timeout_s`` a
    finite number of seconds, at least 1).

    The processes meet in Python before jax joins them
    (``hlodsl.parallel.rendezvous``): a process that never comes makes each of
    the others raise within ``timeout_s`` (``TimeoutError``, or ``RuntimeError``
    in one the coordinator sent away), naming the missing ones. A process that
    dies after the meeting still ends the others through jax's runtime, as jax
    does: they stop with its error after about ``timeout_s`` seconds (their
    process exits; it cannot be caught).
    """
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or \
            not math.isfinite(timeout_s) or timeout_s < 1:
        raise ValueError(f"distributed.initialize: timeout_s must be a finite number of "
                         f"seconds, at least 1, got {timeout_s!r}")
    deadline = time.monotonic() + timeout_s
    given = {"coordinator_address": coordinator_address, "num_processes": num_processes,
             "process_id": process_id}
    missing = [k for k, v in given.items() if v is None]
    if missing:
        found = clusters.detect(os.environ)
        launcher, values = found if found is not None else (None, {})
        for key in missing:
            if key not in values:
                where = (f"the {launcher} environment does not give it" if launcher else
                         "no launcher's environment was found (hlodsl.launch's "
                         "HLODSL_* variables, SLURM's or Open MPI's)")
                raise ValueError(f"distributed.initialize: {key} not given and {where}; "
                                 f"pass it, or set ${ENV[key]}")
            given[key] = values[key]
    address = str(given["coordinator_address"])
    try:
        n, pid = int(given["num_processes"]), int(given["process_id"])
    except ValueError:
        raise ValueError(f"distributed.initialize: num_processes and process_id must be "
                         f"integers, got {given['num_processes']!r}, {given['process_id']!r}") \
            from None
    if n < 1 or not 0 <= pid < n:
        raise ValueError(f"distributed.initialize: process_id {pid} is not in [0, {n})")
    host, port = clusters.split_coordinator(address, "distributed.initialize: "
                                                     "coordinator_address")
    if runtime.started():
        raise RuntimeError("hd.distributed.initialize must run before anything else uses "
                           "the runtime (no arrays or compiled functions yet) in this process")
    rendezvous.meet(host, port, n, pid, deadline)
    # Every process is here: jax's join takes about a second (the timeout now only
    # bounds how long a process that dies from here on keeps the others waiting).
    runtime.initialize_distributed(address, n, pid, math.ceil(timeout_s))


def launcher() -> str | None:
    """Which launcher's environment this process runs in (``"hlodsl"``, ``"slurm"``,
    ``"open-mpi"``), or None: whether ``initialize()`` without arguments has a group
    to join.

    >>> launcher() in (None, "hlodsl", "slurm", "open-mpi")
    True
    """
    found = clusters.detect(os.environ)
    return found[0] if found else None


def shutdown() -> None:
    """Leave the group (at exit this happens by itself)."""
    runtime.shutdown_distributed()


def process_index() -> int:
    """This process's index in the group (0 without ``initialize``)."""
    return runtime.process_index()


def process_count() -> int:
    """How many processes the group has (1 without ``initialize``)."""
    return runtime.process_count()


def local_devices() -> list:
    """This process's devices (``hd.Device``; ids index ``hd.devices()``)."""
    from hlodsl.arrays.array import Device

    return [Device(runtime.platform(), i) for i in runtime.local_device_ids()]


def make_array_from_process_local_data(sharding: NamedSharding, local_data,
                                       global_shape: tuple[int, ...] | None = None):
    """The global array laid out as ``sharding`` whose part on this process's devices is
    ``local_data`` (each process passes its own part: e.g. its slice of the batch).

    Without ``global_shape``, the local data is taken to be this process's share of
    dimensions split across processes (the data-parallel batch): its shape times
    the number of processes' blocks along each split dimension.
    """
    from hlodsl.arrays.array import array_class, sharded_class

    if not isinstance(sharding, NamedSharding):
        raise TypeError(f"make_array_from_process_local_data: expected a hd.NamedSharding, "
                        f"got {sharding!r}")
    local = np.asarray(local_data)
    if global_shape is None:
        global_shape = _global_shape(sharding, local.shape)
    global_shape = tuple(int(n) for n in global_shape)
    sharding.check(global_shape, "make_array_from_process_local_data")
    try:
        buf = runtime.from_process_local_data(sharding, local, global_shape)
    except ValueError as e:
        raise ValueError(f"make_array_from_process_local_data: local data of shape "
                         f"{local.shape} does not fit {sharding!r} for global shape "
                         f"{global_shape}: {e}") from None
    from hlodsl.arrays.types import ArrayType
    from hlodsl.arrays.dtypes import element_type

    t = ArrayType(element_type(local.dtype), global_shape)
    cls = sharded_class(t) if runtime.is_sharded(buf) else array_class(t)
    a = object.__new__(cls)
    a._buf, a._node = buf, None
    return a


def _global_shape(sharding: NamedSharding, local_shape) -> tuple[int, ...]:
    """The global shape when each process holds the blocks of its own devices."""
    mine = set(runtime.local_device_ids())
    flat = sharding.mesh.device_ids.reshape(-1).tolist()
    shape = []
    for d, n in enumerate(local_shape):
        blocks_here = {sharding.block(p, len(local_shape))[d] for p, dev in enumerate(flat)
                       if dev in mine}
        shape.append(n * sharding.parts(d) // max(len(blocks_here), 1))
    return tuple(shape)
