"""Several processes: joining a group through PJRT's distributed runtime.

>>> process_index(), process_count() >= 1
(0, True)
"""

from __future__ import annotations

import jax

from .client import backend, started

__all__ = ["initialize_distributed", "shutdown_distributed", "process_index", "process_count",
           "local_device_ids"]


def initialize_distributed(coordinator_address: str, num_processes: int, process_id: int,
                           timeout_s: int) -> None:
    """Join a group of processes through PJRT's distributed runtime (jax's coordination
    service), CPU collectives through gloo; before the client starts."""
    if started():
        raise RuntimeError("hd.distributed.initialize must run before anything else uses "
                           "the runtime (no arrays or compiled functions yet) in this process")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator_address,
                               num_processes=num_processes, process_id=process_id,
                               initialization_timeout=timeout_s,
                               heartbeat_timeout_seconds=timeout_s,
                               shutdown_timeout_seconds=timeout_s,
                               # hlodsl.parallel.clusters read the launcher's environment already;
                               # jax's own reading would add requirements of its own.
                               cluster_detection_method="deactivate")


def shutdown_distributed() -> None:
    jax.distributed.shutdown()


def process_index() -> int:
    return backend().process_index()


def process_count() -> int:
    return len({d.process_index for d in backend().devices()})


def local_device_ids() -> list[int]:
    """Indices in ``backend().devices()`` of this process's devices."""
    devs = backend().devices()
    return [devs.index(d) for d in backend().local_devices()]
