"""The PJRT client: which backend and devices hlodsl runs on, and the fork guard.

>>> platform() in ("cpu", "gpu", "cuda", "rocm", "tpu")
True
"""

from __future__ import annotations

import os
import weakref

import jax
from jax.extend import backend as _jax_backend
import jaxlib.xla_client as xc

from . import jaxlib_compat as compat

__all__ = ["backend", "platform", "device_count", "free_memory", "check_process", "started", "track",
           "versions", "hlo_opcode_enum_names", "x64"]

# NOTE: jax's x64 mode is left as the user set it. With it off, jax narrows 64-bit
# host data to 32 bits in jax.device_put and friends, so host data reaches the
# device through compat.device_put (which asks jaxlib not to narrow), and the
# few jax calls that would narrow run under x64() (jax's thread-local scope).
x64 = jax.enable_x64

_backend = None


def backend():
    """The PJRT client: GPU where a plugin is installed, else CPU.

    ``HLODSL_PLATFORM=cpu`` (or ``gpu``) forces a platform.
    """
    global _backend
    if _forked_from is not None:
        raise _fork_error()
    if _backend is None:
        _backend = _jax_backend.get_backend(os.environ.get("HLODSL_PLATFORM") or None)
    return _backend


# -- fork(): XLA's client runs threads, and a forked child has none of them ---------
# A child that uses a client started before the fork hangs on its first compile
# (measured: forever), and a new client in the child aborts in XLA's mutexes.
# So a child forked after the runtime started refuses every runtime call at
# once, with a message saying what to do instead.

_forked_from: int | None = None
_EXECUTABLES: weakref.WeakSet = weakref.WeakSet()  # to disarm in a forked child


def started() -> bool:
    """Whether an XLA client exists in this process (ours, or one jax made)."""
    return _backend is not None or compat.client_started()


def _fork_error() -> RuntimeError:
    return RuntimeError(
        f"hlodsl cannot run XLA in this process: it was forked (os.fork, or "
        f"multiprocessing's default 'fork' start method on Linux) from process "
        f"{_forked_from} after that process had started XLA, whose threads do not survive "
        "fork(), so arrays and compiled functions made before the fork cannot be used here "
        "and new ones cannot be made. Start worker processes with "
        "multiprocessing.get_context('spawn') or 'forkserver', or fork before using hlodsl")


def _disarmed(*args, **kwargs):
    raise _fork_error()


def _after_fork_in_child() -> None:
    global _forked_from
    if not started():
        return  # nothing ran yet: the child starts its own client on first use
    _forked_from = os.getppid()
    for exe in list(_EXECUTABLES):
        exe.execute = _disarmed


def track(executable) -> None:
    """Register a compiled executable, so a forked child disarms it (see ``backend``)."""
    _EXECUTABLES.add(executable)


def check_process() -> None:
    """Raise the fork error in a child forked after XLA started (see ``backend``)."""
    if _forked_from is not None:
        raise _fork_error()


os.register_at_fork(after_in_child=_after_fork_in_child)


def platform() -> str:
    return backend().platform


def free_memory() -> int:
    """Bytes a program may still take on the first device: on a GPU what its allocator
    has not handed out (``bytes_limit - bytes_in_use`` of the device's memory
    statistics); on the CPU the host's available memory (``MemAvailable`` of
    /proc/meminfo, else the free physical pages)."""
    device = backend().local_devices()[0]
    stats = device.memory_stats() if platform() != "cpu" else None
    if stats and "bytes_limit" in stats:
        return max(0, int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0)))
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def device_count() -> int:
    """All devices, every process's (single-device programs run on this process's first)."""
    return len(backend().devices())


def versions() -> dict[str, str]:
    """The runtime's versions: jax, jaxlib, and the newest StableHLO this jaxlib reads."""
    import jaxlib

    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "stablehlo": compat.stablehlo_version()}


def hlo_opcode_enum_names() -> list[str]:
    """The names of XLA's ``HloOpcode`` enum (``kAdd``, ...) in the installed jaxlib."""
    return [n for n in dir(xc.hlo.HloOpcode) if n.startswith("k")]
