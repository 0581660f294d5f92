"""The nested-tree rows of section 1 (issue 41) in CPU time of the calling thread.

``python -m benchmarks.nested_cpu [repeats]``: for each case of
``benchmarks.foundation.NESTED`` (not blocked), the median microseconds of
``time.thread_time`` per call of ``hd.compile(f)`` and of ``jax.jit(f)``, the
two interleaved repeat by repeat, and their ratio. A loaded machine disturbs
CPU time less than the wall clock that ``python -m benchmarks.foundation``
reports (it still slows both sides: caches, frequency), so under load these
ratios are the steadier ones; on a quiet machine the two agree.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import timeit

import numpy as np


def main(argv=None) -> None:
    import jax

    import hlodsl as hd

    from .foundation import BATCH, NESTED, WIDTH, _nested_params

    argv = sys.argv[1:] if argv is None else argv
    repeats = int(argv[0]) if argv else 21
    x = np.random.default_rng(4).standard_normal((BATCH, WIDTH)).astype(np.float32)
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}; "
          f"{repeats} interleaved repeats; thread CPU time per call, median")
    print("| case | hd.compile µs | jax.jit µs | hlodsl/peer |\n|---|---:|---:|---:|")
    for case, fn, kind in NESTED:
        ns = {"f": hd.compile(fn), "jf": jax.jit(fn), "p": _nested_params(kind, hd.array),
              "jp": _nested_params(kind, jax.device_put), "x": hd.array(x),
              "jx": jax.device_put(x)}
        timers = {k: timeit.Timer(s, globals=ns, timer=time.thread_time)
                  for k, s in (("ours", "f(p, x)"), ("peer", "jf(jp, jx)"))}
        for t in timers.values():
            t.timeit(500)
        samples: dict = {k: [] for k in timers}
        for _ in range(repeats):
            for k, t in timers.items():
                samples[k].append(t.timeit(2000) / 2000)
        ours, peer = (statistics.median(samples[k]) for k in ("ours", "peer"))
        print(f"| {case} | {ours * 1e6:.2f} | {peer * 1e6:.2f} | {ours / peer:.2f} |")
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
