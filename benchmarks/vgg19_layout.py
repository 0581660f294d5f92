"""What VGG19's backward layout instructions cost (issue 16, item 6).

XLA:CPU runs convolutions channels-last through Eigen, so the backward pass's
input- and weight-gradient convolutions get their kernels and activations
transposed (docs/vgg19.md counts them: 47 transposes and 63 copies in the
unfused NHWC entry). In the module XLA compiles they become *layout fusions*,
fusions of only transposes, copies, bitcasts and reshapes. This measures the
bytes those fusions write and the time a memory copy of as many bytes takes,
next to the backward pass itself, in one process; and, in child processes
(XLA reads ``XLA_FLAGS`` once), the backward pass with YNNPACK convolutions,
the one XLA:CPU option that changes how convolutions are laid out.

``python -m benchmarks.vgg19_layout [--layout NCHW|NHWC] [--ynn]``
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

from .figure3 import _functions, _opcode

_LAYOUT_OPS = {"parameter", "transpose", "copy", "bitcast", "reshape"}
_BYTES = {"pred": 1, "s8": 1, "u8": 1, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
          "s64": 8, "f64": 8}
YNN_CONV = ("--xla_cpu_experimental_ynn_fusion_type=LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,"
            "LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION")


def _computations(text: str) -> tuple[str, dict[str, list[str]]]:
    """The entry's name and each computation's instruction lines (XLA's printed module)."""
    comps: dict[str, list[str]] = {}
    entry, current = "", None
    for line in text.splitlines():
        m = re.match(r"^(ENTRY )?%?([\w.\-]+) .*\{\s*$", line)
        if m:
            current = m.group(2)
            comps[current] = []
            entry = current if m.group(1) else entry
        elif current and "=" in line and line.strip() != "}":
            comps[current].append(line.strip())
    return entry, comps


def _result_bytes(line: str) -> int:
    m = re.search(r"=\s*(\w+)\[([\d,]*)\]", line)
    if m is None:
        return 0
    dims = [int(d) for d in m.group(2).split(",") if d]
    return int(np.prod(dims, dtype=np.int64)) * _BYTES.get(m.group(1), 4)


def layout_fusions(text: str) -> tuple[int, int]:
    """``(count, bytes written)`` of the entry's transposes, copies and layout-only fusions."""
    entry, comps = _computations(text)
    count = written = 0
    for line in comps[entry]:
        op = _opcode(line.split("=", 1)[1].strip())
        if op == "fusion":
            called = re.search(r"calls=%?([\w.\-]+)", line).group(1)
            ops = {_opcode(b.split("=", 1)[1].strip()) for b in comps.get(called, [])}
            layout_only = ops <= _LAYOUT_OPS and bool(ops & {"transpose", "copy"})
        else:
            layout_only = op in ("transpose", "copy")
        if layout_only:
            count += 1
            written += _result_bytes(line)
    return count, written


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def measure(layout: str, repeat: int = 5) -> dict:
    """Layout fusions of the backward module, a copy of their bytes, and the backward time."""
    import hlodsl as hd

    fns, (params, x) = _functions(1, layout)
    x = hd.array(np.random.default_rng(0).standard_normal(x.shape).astype(np.float32))
    backward = hd.compile(fns["backward"])
    count, written = layout_fusions(str(hd.code_hlo(backward, params, x, optimize=True)))
    src = np.ones(max(written // 4, 1), np.float32)
    dst = np.empty_like(src)
    np.asarray(hd.tree_leaves(backward(params, x))[-1])  # compile and warm up
    copy_ms, backward_ms = [], []
    for _ in range(repeat):  # interleaved, so that load on the machine hits both alike
        copy_ms.append(_median_ms(lambda: np.copyto(dst, src), 1))
        backward_ms.append(_median_ms(
            lambda: np.asarray(hd.tree_leaves(backward(params, x))[-1]), 1))
    return {"layout": layout, "count": count, "MB": written / 1e6,
            "copy_ms": float(np.median(copy_ms)), "backward_ms": float(np.median(backward_ms))}


def main(argv=None) -> None:
    from .report import machine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout", default="NHWC", choices=("NHWC", "NCHW"))
    parser.add_argument("--ynn", action="store_true",
                        help="also time the backward pass with YNNPACK convolutions")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(measure(args.layout)["backward_ms"])
        return
    print(f"Machine: {machine()}\n")
    r = measure(args.layout)
    print(f"VGG19 backward, {r['layout']}, batch 1: {r['count']} layout fusions write "
          f"{r['MB']:.0f} MB; a numpy copy of as many bytes takes {r['copy_ms']:.0f} ms, "
          f"{r['copy_ms'] / r['backward_ms']:.1%} of the backward pass ({r['backward_ms']:.0f} ms)")
    if args.ynn:
        times = {}
        for name, flags in (("default options (YNNPACK dots)", ""),
                            ("YNNPACK dots and convolutions", YNN_CONV)):
            out = subprocess.run([sys.executable, "-m", "benchmarks.vgg19_layout", "--child",
                                  "--layout", args.layout], capture_output=True, text=True,
                                 env=dict(os.environ, XLA_FLAGS=flags), check=True)
            times[name] = float(out.stdout.strip().splitlines()[-1])
        base = times["default options (YNNPACK dots)"]
        for name, ms in times.items():
            print(f"  backward with {name}: {ms:.0f} ms ({ms / base:.2f}x)")


if __name__ == "__main__":
    main()
