"""Run one staged program on several devices at once, each on its own data.

``replicated(f, n)`` stages ``f`` once and runs it on ``n`` devices, as XLA
replicas (``mode="replicas"``) or as SPMD partitions with manual sharding
(``mode="partitions"``): the way to execute programs that use collectives
(all-reduce, all-gather, ...). Each array argument is given as a sequence of
``n`` per-device arrays; the result is a list of ``n`` per-device results.
On CPU, several devices need ``XLA_FLAGS=--xla_force_host_platform_device_count=N``
set before hlodsl (jax) is imported.

For per-device code over partitions, ``hd.shard_map`` supersedes this: it takes
global arrays laid out over a named mesh, and its collectives name mesh axes
(docs/sharding.md). ``replicated`` stays for programs written against XLA
replicas (``mode="replicas"``) and for hand-written device groups.
"""

from __future__ import annotations

import numpy as np

from hlodsl.arrays.array import Array, array
from hlodsl.ir.printer import module_text
from hlodsl.runtime import compile_hlo, device_count, to_device
from hlodsl.ir.staging import stage
from hlodsl.ir.target import live_platform
from hlodsl.arrays.tree import unflatten

__all__ = ["replicated", "Replicated"]


class Replicated:
    """``fn`` staged once per signature and run on ``n`` devices; see :func:`replicated`."""

    def __init__(self, fn, n: int, mode: str = "replicas"):
        if mode not in ("replicas", "partitions"):
            raise ValueError(f"replicated: mode must be 'replicas' or 'partitions', got {mode!r}")
        self.fn, self.n, self.mode = fn, n, mode
        self._cache: dict = {}

    def __call__(self, *per_device_args):
        for i, a in enumerate(per_device_args):
            if len(a) != self.n:
                raise ValueError(f"replicated: argument {i} has {len(a)} per-device values, "
                                 f"expected {self.n}")
        per_device = [[array(a[d]) for a in per_device_args] for d in range(self.n)]
        key = tuple(type(x) for x in per_device[0])
        for d, args in enumerate(per_device):
            if tuple(type(x) for x in args) != key:
                raise TypeError(f"replicated: device {d}'s arguments have types "
                                f"{[x.type for x in args]}, device 0's {[x.type for x in per_device[0]]}")
        entry = self._cache.get(key)
        if entry is None:
            entry = self._cache[key] = self._compile(tuple(per_device[0]))
        exe, staged = entry
        bufs = [[to_device(np.asarray(per_device[d][i]), d) for d in range(self.n)]
                for i in range(len(key))]
        outs = exe.execute_per_device(bufs)
        return [unflatten(staged.out_tree, [Array._from_buffer(o[d], t)
                                            for o, t in zip(outs, staged.out_types)])
                for d in range(self.n)]

    def _compile(self, args):
        if self.n > device_count():
            raise ValueError(f"replicated: {self.n} devices requested, the backend has "
                             f"{device_count()} (on CPU set XLA_FLAGS="
                             "--xla_force_host_platform_device_count=N before importing hlodsl)")
        with live_platform():
            staged = stage(self.fn, args, {}, getattr(self.fn, "__name__", "replicated"))
        partitions = self.mode == "partitions"
        text = module_text(staged.computation, manual_sharding=partitions)
        exe = compile_hlo(text, num_replicas=1 if partitions else self.n,
                          num_partitions=self.n if partitions else 1)
        return exe, staged


def replicated(fn, n: int, mode: str = "replicas") -> Replicated:
    """Stage ``fn`` once and run it on ``n`` devices, each with its own arguments.

    >>> import numpy as np, hlodsl as hd
    >>> f = hd.replicated(lambda x: x * 2, 1)
    >>> f([np.float32([1, 2])])
    [hlodsl.Array[float32, (2,)]([2., 4.])]
    """
    return Replicated(fn, n, mode)
