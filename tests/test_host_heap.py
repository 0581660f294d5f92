"""XLA:CPU's temporaries kept in the C heap between calls (hlodsl.runtime.host_heap).

With ``config.host_heap_keep`` (the default), a program whose temporaries are one
block over glibc's 32 MiB mapping threshold no longer maps and faults that block in
at every call: page faults of the median call, which no machine load moves, drop
to a small fraction (a call now and then still grows the heap). 0 puts glibc's choices back. Runs in a child process: malloc's options are
the process's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import hlodsl as hd
from hlodsl.runtime import host_heap

glibc = pytest.mark.skipif(host_heap._mallopt() is None, reason="glibc's malloc options")

CHILD = r"""
import json, resource, sys
import numpy as np
import hlodsl as hd, hlodsl.stdlib as xp
hd.config.host_heap_keep = int(sys.argv[1])

def f(x):  # temporaries: two 24 MiB arrays live at once, one block of XLA's
    y = xp.sin(x) * 2.0
    z = xp.cos(y) + x
    return xp.sum(y * z), xp.sum(z * z)

x = hd.array(np.ones((6 << 20,), np.float32))
g = hd.compile(f)
g(x)[0].block_until_ready()
temp = g.memory_stats(x)["temp_size_in_bytes"]
for _ in range(8):  # the heap settles (the results of the last call are still held)
    g(x)[0].block_until_ready()
faults = []
for _ in range(12):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    g(x)[0].block_until_ready()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
faults = sorted(faults)[6]  # the median call: the heap still grows now and then
print(json.dumps({"faults": faults, "temp": temp}))
"""


def faults_per_call(keep: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(keep)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "HLODSL_CACHE_DIR": ""})
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@glibc
def test_kept_temporaries_are_not_faulted_in_at_every_call():
    kept, mapped = faults_per_call(256 << 20), faults_per_call(0)
    assert mapped["temp"] > 32 << 20  # over glibc's largest mapping threshold
    pages = mapped["temp"] / 4096
    assert mapped["faults"] > 0.5 * pages  # mapped afresh: every page faulted again
    assert kept["faults"] < 0.1 * pages


def test_the_setting_takes_sizes_and_zero_and_refuses_the_rest():
    before = hd.config.host_heap_keep
    try:
        hd.config.host_heap_keep = "64MiB"
        assert hd.config.host_heap_keep == 64 << 20
        hd.config.host_heap_keep = 0
        assert hd.config.host_heap_keep == 0
        with pytest.raises(ValueError, match="host_heap_keep"):
            hd.config.host_heap_keep = -1
        with pytest.raises(TypeError, match="host_heap_keep"):
            hd.config.host_heap_keep = True
    finally:
        hd.config.host_heap_keep = before


def test_apply_calls_mallopt_only_when_the_setting_changed(monkeypatch):
    calls = []
    monkeypatch.setattr(host_heap, "keep", calls.append)
    monkeypatch.setattr(host_heap, "_applied", [None])
    before = hd.config.host_heap_keep
    try:
        hd.config.host_heap_keep = 0
        host_heap.apply()
        assert calls == []  # 0 at first: glibc's own dynamic thresholds stay
        hd.config.host_heap_keep = 1 << 20
        host_heap.apply()
        host_heap.apply()
        hd.config.host_heap_keep = 0
        host_heap.apply()
        assert calls == [1 << 20, 0]
    finally:
        hd.config.host_heap_keep = before
