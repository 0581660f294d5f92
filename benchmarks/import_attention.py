"""A jax attention imported into hlodsl and compiled under a memory limit.

``hd.from_jax(attention, q, k, v)`` imports jax's lowering of a plain softmax
attention (``softmax(q k^T / sqrt(d)) v``, whose n x n score matrix is its
largest temporary); ``hd.compile(..., memory_limit=...)`` splits it. Reported:
XLA's temporary bytes of jax's own compiled program (``memory_analysis``),
of the imported program as written, and of it under the limit, all known
without running; then, unless ``--no-run``, jax's program and the split one
each run once in a fresh process, which reports its peak RSS, and the split
result's largest difference from jax's is printed::

    python -m benchmarks.import_attention                  # n=16384, d=64, 256MiB
    python -m benchmarks.import_attention --n 4096 --limit 16MiB

NOTE: for n >= 4096 XLA:CPU's ``memory_analysis`` of jax's program reports no
temporary bytes at all (measured with jax 0.10.2), although one call grows
the process by the whole score matrix: the peak RSS is the honest figure there.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import hlodsl as hd


def attention(q, k, v):
    s = q @ k.T / jnp.sqrt(jnp.float32(q.shape[-1]))
    return jax.nn.softmax(s, axis=-1) @ v


def _inputs(n: int, d: int):
    rng = np.random.default_rng(0)
    return [rng.normal(size=(n, d)).astype(np.float32) for _ in range(3)]


def _peak(config: str, n: int, d: int, limit: str) -> None:
    """Run one configuration once and print its peak RSS (and save its result)."""
    q, k, v = _inputs(n, d)
    if config == "jax":
        out = np.asarray(jax.jit(attention)(q, k, v))
    else:
        ours = [hd.array(a) for a in (q, k, v)]
        out = np.asarray(hd.compile(hd.from_jax(attention, q, k, v), memory_limit=limit)(*ours))
    np.save(f"/tmp/import_attention_{config}.npy", out)
    print(f"{config}: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--limit", default="256MiB")
    parser.add_argument("--no-run", action="store_true")
    parser.add_argument("--peak", choices=["jax", "hlodsl"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peak:
        return _peak(args.peak, args.n, args.d, args.limit)
    q, k, v = _inputs(args.n, args.d)
    start = time.perf_counter()
    f = hd.from_jax(attention, q, k, v)
    print(f"import: {time.perf_counter() - start:.2f} s")
    ours = [hd.array(a) for a in (q, k, v)]
    mib = 2.0 ** 20
    jax_temp = jax.jit(attention).lower(q, k, v).compile().memory_analysis().temp_size_in_bytes
    naive = hd.compile(f).memory_stats(*ours)["temp_size_in_bytes"]
    split = hd.compile(f, memory_limit=args.limit)
    temp = split.memory_stats(*ours)["temp_size_in_bytes"]
    print(f"n={args.n} d={args.d}: scores {args.n * args.n * 4 / mib:.0f} MiB")
    print(f"jax.jit temp:                       {jax_temp / mib:10.1f} MiB")
    print(f"imported, as written, temp:         {naive / mib:10.1f} MiB")
    print(f"imported, memory_limit={args.limit} temp: {temp / mib:10.1f} MiB")
    print(split.report(*ours))
    if not args.no_run:
        for config in ("jax", "hlodsl"):
            subprocess.run([sys.executable, "-m", "benchmarks.import_attention", "--peak", config,
                            "--n", str(args.n), "--d", str(args.d), "--limit", args.limit],
                           check=True)
        got, want = (np.load(f"/tmp/import_attention_{c}.npy") for c in ("hlodsl", "jax"))
        print(f"max |hlodsl - jax| = {np.abs(got - want).max():.3g} "
              f"(max |jax| = {np.abs(want).max():.3g})")


if __name__ == "__main__":
    main()
