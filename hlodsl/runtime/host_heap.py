"""XLA:CPU's temporaries kept in the C heap between calls (glibc's malloc options).

Each call of an XLA:CPU program allocates its temporaries as one block (a
ResNet training step's: 55 MB) and frees it when the call ends. glibc's malloc
hands any block over 32 MiB (its largest ``M_MMAP_THRESHOLD``) to ``mmap`` and
unmaps it on ``free``, so every call faults the block in again, page by page,
and the kernel zeroes each page: 9,000-15,000 page faults and 20-30 ms of
system time per step of ``benchmarks.torch_cpu``'s GPT and ResNet. torch's
tensors are each small enough for glibc to recycle.

``keep(limit)`` asks glibc to take every block from the heap (``M_MMAP_MAX`` 0),
to keep up to ``limit`` bytes of freed memory at its top for the next
allocation (``M_TRIM_THRESHOLD``), and to give every thread the one main heap
(``M_ARENA_MAX`` 1): XLA runs a program on its worker threads, and a worker's
own heap (at most 64 MiB each) that grew for a block is unmapped when the block
is freed, whatever the trim threshold. ``keep(0)`` puts glibc's defaults back
(arenas: 8 per core, glibc's own count).

hlodsl applies ``hlodsl.config.host_heap_keep`` when it starts XLA's client
(``runtime.backend()``, before XLA's threads exist: a thread keeps the heap it
first allocated from) and before each compile for a CPU (``apply``), so a
change takes effect at the next compile, its arena count only for threads
that start later. Where jax started the client first, the workers keep their
own heaps and blocks over 64 MiB stay mapped afresh. The price: memory freed
in the middle of the heap stays in the process until it is allocated again
(``release_host_memory`` returns it), as with any caching allocator. Other C
libraries (musl, macOS) have no such options: ``keep`` returns False there and
nothing changes.

>>> keep(256 << 20) in (True, False)
True
"""

from __future__ import annotations

import functools
import os

from hlodsl.settings import config

__all__ = ["keep", "apply"]

_M_TRIM_THRESHOLD, _M_MMAP_MAX, _M_ARENA_MAX = -1, -4, -8
# glibc's defaults (its dynamic thresholds aside): 128 KiB trimmed, 65,536 mappings
_DEFAULT_TRIM, _DEFAULT_MMAP_MAX = 128 * 1024, 65536
_applied: list = [None]  # the limit last applied


@functools.cache
def _mallopt():
    import ctypes

    try:
        return ctypes.CDLL(None).mallopt  # glibc's; musl and macOS have none
    except (OSError, AttributeError):
        return None


def keep(limit: int) -> bool:
    """Keep freed heap memory up to ``limit`` bytes and map no block on its own (0:
    glibc's defaults); False where the C library has no ``mallopt``."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    if limit:
        ok = (mallopt(_M_MMAP_MAX, 0) and mallopt(_M_TRIM_THRESHOLD, min(limit, 2**31 - 1))
              and mallopt(_M_ARENA_MAX, 1))
    else:
        ok = (mallopt(_M_MMAP_MAX, _DEFAULT_MMAP_MAX)
              and mallopt(_M_TRIM_THRESHOLD, _DEFAULT_TRIM)
              and mallopt(_M_ARENA_MAX, 8 * (os.cpu_count() or 1)))
    return bool(ok)


def apply() -> None:
    """``keep(config.host_heap_keep)`` where it changed since it was last applied (0 at
    first: nothing to undo, glibc's own dynamic thresholds stay)."""
    limit = config.host_heap_keep
    if _applied[0] != limit:
        before, _applied[0] = _applied[0], limit
        if limit or before:
            keep(limit)
