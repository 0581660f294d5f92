"""``BlockedTopK`` against XLA's own ``topk`` and ``jax.lax.top_k``, on long rows.

Each size runs the three side by side, interleaved (median of ``--repeats``
rounds), and checks that the two hlodsl programs give the same values and
indices. The kNN benchmark (``benchmarks.memory``) measures the pass inside
the memory pipeline; this one measures the selection alone.

``python -m benchmarks.top_k [--repeats 5]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

#: (rows, row length, k): a kNN slice's shapes, and one long row per query.
SIZES = [(10_000, 6_250, 10), (625, 100_000, 10), (100, 1_000_000, 10), (100, 1_000_000, 100)]


def _seconds(call) -> float:
    t = time.perf_counter()
    call()
    return time.perf_counter() - t


def measure(rows: int, n: int, k: int, repeats: int) -> dict[str, float]:
    """Median seconds of XLA's topk, the two-round one and jax's, interleaved."""
    import jax

    import hlodsl as hd
    from hlodsl import ops
    from hlodsl.transforms.passes import BlockedTopK

    x = np.random.default_rng(0).normal(size=(rows, n)).astype(np.float32)
    hx, jx = hd.array(x), jax.device_put(x)
    plain = hd.compile(ops.TopK(k), passes=[])
    blocked = hd.compile(ops.TopK(k), passes=[BlockedTopK()])
    peer = jax.jit(lambda x: jax.lax.top_k(x, k))
    for a, b in zip(plain(hx), blocked(hx), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    calls = {"xla topk": lambda: np.asarray(plain(hx)[1]),
             "two rounds": lambda: np.asarray(blocked(hx)[1]),
             "jax.lax.top_k": lambda: np.asarray(peer(jx)[1])}
    times: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():
        call()  # warm-up: compiles
    for _ in range(repeats):
        for name, call in calls.items():
            times[name].append(_seconds(call))
    return {name: statistics.median(ts) for name, ts in times.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.top_k",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    from .report import machine

    print(f"Machine: {machine()}\n")
    print("| rows x n, k | XLA topk | two rounds | jax.lax.top_k | two rounds / XLA topk "
          "| two rounds / jax |")
    print("|---|---:|---:|---:|---:|---:|")
    for rows, n, k in SIZES:
        t = measure(rows, n, k, args.repeats)
        per = 1e9 / (rows * n)
        print(f"| {rows:,} x {n:,}, k={k} | {t['xla topk'] * per:.2f} ns/el "
              f"| {t['two rounds'] * per:.2f} ns/el | {t['jax.lax.top_k'] * per:.2f} ns/el "
              f"| {t['two rounds'] / t['xla topk']:.2f} "
              f"| {t['two rounds'] / t['jax.lax.top_k']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
