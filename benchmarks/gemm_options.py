"""XLA:CPU's dot kernels against numpy's OpenBLAS on one GEMM (issue 16).

XLA:CPU can hand a dot to Eigen, YNNPACK, XNNPACK or oneDNN, chosen by
``XLA_FLAGS``, which XLA reads once per process: each option runs in its own
child process, interleaving ``hd.compile``'s GEMM with ``numpy``'s in it.

``python -m benchmarks.gemm_options [--n 2048]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

_YNN = "--xla_cpu_experimental_ynn_fusion_type="
OPTIONS = {
    "YNNPACK dots (hlodsl's default)": "",
    "Eigen (library fusions off)": _YNN,
    "YNNPACK dot fusions": _YNN + "LIBRARY_FUSION_TYPE_DOT",
    "XNNPACK dots": _YNN + " --xla_cpu_experimental_xnn_fusion_type="
                           "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT",
    "oneDNN": _YNN + " --xla_cpu_use_onednn=true --xla_cpu_experimental_onednn_fusion_type="
                     "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT",
}


def measure(n: int, repeat: int = 9) -> tuple[float, float]:
    """Median seconds of ``a @ b`` (n x n, f32): hd.compile, numpy; interleaved."""
    import hlodsl as hd

    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    b = np.ascontiguousarray(a.T)
    f = hd.compile(lambda x, y: x @ y)
    ha, hb = hd.array(a), hd.array(b)
    np.testing.assert_allclose(np.asarray(f(ha, hb)), a @ b, rtol=1e-3, atol=1e-2)
    ours, peer = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        np.asarray(f(ha, hb))
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        a @ b
        peer.append(time.perf_counter() - t)
    return float(np.median(ours)), float(np.median(peer))


def main(argv=None) -> None:
    from .report import machine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(*measure(args.n))
        return
    print(f"Machine: {machine()}\n")
    print(f"| XLA:CPU dot option, GEMM {args.n}x{args.n} f32 | hd.compile | numpy | "
          "hlodsl / numpy | GFLOP/s hlodsl | numpy |")
    print("|---|---:|---:|---:|---:|---:|")
    flops = 2 * args.n ** 3 / 1e9
    for name, flags in OPTIONS.items():
        run = subprocess.run([sys.executable, "-m", "benchmarks.gemm_options", "--child",
                              "--n", str(args.n)], capture_output=True, text=True,
                             env=dict(os.environ, XLA_FLAGS=flags))
        if run.returncode:
            print(f"| {name} | failed: {run.stderr.strip().splitlines()[-1][:80]} | | | | |")
            continue
        ours, peer = map(float, run.stdout.split()[-2:])
        print(f"| {name} | {ours * 1e3:.1f} ms | {peer * 1e3:.1f} ms | {ours / peer:.2f} | "
              f"{flops / ours:.0f} | {flops / peer:.0f} |")


if __name__ == "__main__":
    main()
