"""Memory-safe compilation benchmarks: five workloads larger than memory, run under a limit.

Each configuration runs in a fresh process (so its peak RSS is its own) and
reports the time of a call after a warm-up call (the median of ``--repeats``),
XLA's temporary bytes (hlodsl: ``Compiled.memory_stats``; jax:
``memory_analysis`` of the compiled executable, known without running), the
peak RSS, and the largest relative difference from the reference
configuration's result (naive hlodsl where it fits, else the split one).
Each process starts with an empty persistent compile cache (``HLODSL_CACHE_DIR``).
Peak RSS is also read at four points of each run (``/proc/self/status``'s
``VmHWM``, the high-water mark so far): after importing the library, after
making the inputs, after compiling, and after the first call; ``--json``
keeps them (``rss_stages``) with the current RSS after compiling (what the
executables hold once compiled).

Configurations:

- ``hlodsl-limit``: ``hd.compile(f, memory_limit=--limit)`` (MatrixChain,
  Distances, Split, BlockedTopK);
- ``hlodsl``: ``hd.compile(f)`` as written;
- ``hlodsl-from-jax``: the jax model imported through ``hd.from_jax`` (jax
  lowers it; every op after that is hlodsl's) and compiled with
  ``memory_limit=--limit``;
- ``jax.jit``: the same model in jax.numpy, as written;
- ``faiss``: ``faiss.IndexFlatL2`` exact search (kNN);
- ``keops``: a pykeops ``LazyTensor`` reduction on the CPU (kernel mat-vec).

A naive configuration whose compiled program would need more than
``--max-naive`` of temporary memory is compiled but not run: its row gives
the bytes it would need. ``python -m benchmarks.memory --size fits`` runs the
sizes where the naive programs fit (for time ratios), ``--size full`` those
of the issue; ``--workloads knn,chain`` picks workloads.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from .memory_models import SIZES, hd_models, inputs, jax_models

__all__ = ["run_one", "main"]

WORKLOADS = ("kernel_matvec", "knn", "sgpr", "attention", "chain")
PEERS = {"knn": ("faiss",), "kernel_matvec": ("keops",)}
GiB = 2 ** 30


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _status_mib(field: str) -> float | None:
    """``VmHWM`` (peak RSS so far) or ``VmRSS`` (RSS now) of this process, None off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class _Stages:
    """The peak RSS so far at named points of one run (the breakdown of the peak)."""

    def __init__(self):
        self.marks: dict[str, float | None] = {}

    def __call__(self, name: str) -> None:
        hwm = _status_mib("VmHWM")
        self.marks[name] = _rss_mib() if hwm is None else hwm
        if name == "compile":  # what stays held once compiling is over
            self.marks["compile_now"] = _status_mib("VmRSS")


def _time(call, repeats: int, mark=None) -> tuple[float, object]:
    """Median time of ``repeats`` calls after a warm-up one; ``repeats=0``: the first
    call alone, compile included (for runs of many minutes)."""
    t = time.perf_counter()
    out = call()  # warm-up: compiles
    if mark is not None:
        mark("first_call")
    if repeats == 0:
        return time.perf_counter() - t, out
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _host(out):
    """Results as numpy arrays (forcing the computation to finish)."""
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in _host(o)]
    return [np.asarray(out)]


def _hlodsl(workload, args, limit, max_naive, repeats, mark, from_jax=False):
    import hlodsl as hd

    k = SIZES["knn"]["full"]["k"]
    if from_jax:  # jax lowers its own model on the inputs' shapes; hlodsl compiles it
        fn = hd.from_jax(jax_models(k)[workload], *args)
    else:
        fn = hd_models(k)[workload]
    f = hd.compile(fn, memory_limit=limit)
    hargs = [hd.array(a) for a in args]
    args.clear()  # hd.array copied them: hold the inputs once, as the peers do
    temp = f.memory_stats(*hargs)["temp_size_in_bytes"]
    mark("compile")
    row = {"temp_bytes": temp, "report": f.report(*hargs) if limit else ""}
    if limit:  # the cost model's estimate, XLA's count and the number of compiles
        row["note"] = row["report"].splitlines()[-1]
    if limit is None and temp > max_naive:
        row["note"] = "not run: needs more than --max-naive"
        return row, None
    t, out = _time(lambda: _host(f(*hargs)), repeats, mark)
    return dict(row, time_s=t), out


def _jax(workload, args, max_naive, repeats, mark):
    import jax

    fn = jax.jit(jax_models(SIZES["knn"]["full"]["k"])[workload])
    jargs = [jax.device_put(a) for a in args]
    args.clear()
    temp = fn.lower(*jargs).compile().memory_analysis().temp_size_in_bytes
    mark("compile")
    if temp > max_naive:
        return {"temp_bytes": temp, "note": "not run: needs more than --max-naive"}, None
    t, out = _time(lambda: _host(jax.block_until_ready(fn(*jargs))), repeats, mark)
    return {"temp_bytes": temp, "time_s": t}, out


def _faiss(args, k, repeats, mark):
    import faiss

    q, p = args
    index = faiss.IndexFlatL2(p.shape[1])
    index.add(p)
    t, (dist, idx) = _time(lambda: index.search(q, k), repeats, mark)
    return {"time_s": t, "temp_bytes": 0}, [dist, idx.astype(np.int64)]


def _keops(args, repeats, mark):
    from pykeops.numpy import LazyTensor

    x, v, ls = args
    xi, xj = LazyTensor(x[:, None, :]), LazyTensor(x[None, :, :])
    kernel = (-((xi - xj) ** 2).sum(-1) / (2 * float(ls) ** 2)).exp()
    t, out = _time(lambda: (kernel @ v[:, None]).ravel(), repeats, mark)
    return {"time_s": t, "temp_bytes": 0}, [out]


def scaled(workload: str, size_name: str, scale: float) -> dict:
    """The sizes of ``workload``, its counts (points, sequence, inducing points) times ``scale``."""
    size = dict(SIZES[workload][size_name])
    for key in ("n", "q", "p", "s", "m"):
        if key in size:
            size[key] = max(int(size[key] * scale), 2 * size.get("k", 2))
    return size


def run_one(workload: str, impl: str, size_name: str, limit: int | None, max_naive: int,
            repeats: int, save: str | None = None, scale: float = 1.0) -> dict:
    """One configuration in this process: its row (and its result saved to ``save``)."""
    mark = _Stages()
    _import(impl)
    mark("import")
    size = scaled(workload, size_name, scale)
    args = list(inputs(workload, size))
    input_mib = sum(np.asarray(a).nbytes for a in args) / 2 ** 20
    mark("inputs")
    if impl in ("hlodsl-limit", "hlodsl", "hlodsl-from-jax"):
        row, out = _hlodsl(workload, args, None if impl == "hlodsl" else limit, max_naive,
                           repeats, mark, from_jax=impl == "hlodsl-from-jax")
    elif impl == "jax.jit":
        row, out = _jax(workload, args, max_naive, repeats, mark)
    elif impl == "faiss":
        row, out = _faiss(args, size["k"], repeats, mark)
    elif impl == "keops":
        row, out = _keops(args, repeats, mark)
    else:
        raise ValueError(impl)
    if out is not None and save:
        np.savez(save, *out)
    return dict(row, workload=workload, impl=impl, size=size_name, dims=size, rss_mib=_rss_mib(),
                inputs_mib=input_mib, rss_stages=mark.marks)


def _import(impl: str) -> None:
    """Import what ``impl`` runs on before anything else: the baseline of its peak RSS."""
    if impl.startswith("hlodsl"):
        import hlodsl  # noqa: F401 (imports jax and jaxlib too)
    if impl in ("jax.jit", "hlodsl-from-jax"):
        import jax

        # The models are float64 where the workload is (jax narrows to float32 without).
        jax.config.update("jax_enable_x64", True)
    elif impl == "faiss":
        import faiss  # noqa: F401
    elif impl == "keops":
        import pykeops.numpy  # noqa: F401


def _child(workload, impl, size_name, args, save) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.memory", "--one", workload, impl, size_name,
           "--limit", str(args.limit), "--max-naive", str(args.max_naive),
           "--repeats", str(args.repeats), "--scale", str(args.scale), "--save", save]
    # A cold persistent cache of its own (hlodsl.runtime.disk_cache): loading an executable
    # an earlier run stored would skip the compile and its share of the peak RSS.
    cache = save[:-len(".npz")] + "-xla-cache"
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, HLODSL_CACHE_DIR=cache))
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        return {"workload": workload, "impl": impl, "size": size_name,
                "note": f"failed: {tail[0] if tail else proc.returncode}"[:300]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _error(got: str, want: str) -> float | None:
    """Largest relative difference over the float results (indices: fraction differing)."""
    if not (os.path.exists(got) and os.path.exists(want)):
        return None
    a, b = np.load(got), np.load(want)
    worst = 0.0
    for key in b.files:
        x, y = a[key], b[key]
        if x.shape != y.shape:
            return float("inf")
        if np.issubdtype(y.dtype, np.integer):
            worst = max(worst, float(np.mean(x != y)))
        else:
            scale = max(float(np.abs(y).max(initial=0)), 1e-30)
            worst = max(worst, float(np.abs(x - y).max(initial=0)) / scale)
    return worst


def _fmt_bytes(n) -> str:
    from hlodsl.settings import format_bytes

    return "" if n is None else format_bytes(n)


def _print(rows: list[dict]) -> None:
    print("| workload | sizes | config | time | XLA temp | peak RSS | RSS: imports / inputs / "
          "compiled (held) / 1st call | inputs | rel. diff | hlodsl-limit / this | note |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    base = {(r["workload"], r["size"]): r.get("time_s") for r in rows
            if r["impl"] == "hlodsl-limit"}
    for r in rows:
        t, b = r.get("time_s"), base.get((r["workload"], r["size"]))
        ratio = f"{b / t:.2f}" if t and b else ""
        err, rss, ins = r.get("rel_diff"), r.get("rss_mib"), r.get("inputs_mib")
        dims = ", ".join(f"{k}={v:,}" for k, v in r.get("dims", {}).items())
        st = r.get("rss_stages", {})
        stages = [f"{st[k]:,.0f}" if st.get(k) is not None else "" for k in
                  ("import", "inputs", "compile", "first_call")]
        if st.get("compile_now") is not None:
            stages[2] += f" ({st['compile_now']:,.0f})"
        cells = [r["workload"], dims, r["impl"], "" if t is None else f"{t:.3g} s",
                 _fmt_bytes(r.get("temp_bytes")), "" if rss is None else f"{rss:,.0f} MiB",
                 " / ".join(stages) if st else "",
                 "" if ins is None else f"{ins:,.0f} MiB", "" if err is None else f"{err:.1e}",
                 ratio, r.get("note", "")]
        print("| " + " | ".join(cells) + " |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("fits", "full", "large"), default="fits",
                        help="large: kNN only, 10^4 queries x 10^7 points")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--limit", type=int, default=GiB, help="memory_limit in bytes (1 GiB)")
    parser.add_argument("--max-naive", type=int, default=6 * GiB,
                        help="run naive programs only below this many temporary bytes")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed calls after a warm-up call (0: time the first call alone)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the counts (points, sequence length) by this: a smoke run")
    parser.add_argument("--impls", help="run only these configurations (comma-separated; "
                        "the naive 'hlodsl' one always runs: it is the reference)")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--one", nargs=3, metavar=("WORKLOAD", "IMPL", "SIZE"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--save", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        workload, impl, size_name = args.one
        print(json.dumps(run_one(workload, impl, size_name, args.limit, args.max_naive,
                                 args.repeats, args.save, args.scale)))
        return
    from .report import machine

    print(f"Machine: {machine()}")
    print(f"memory_limit {args.limit / GiB:g} GiB; naive programs run below "
          f"{args.max_naive / GiB:g} GiB of temporaries; median of {args.repeats} call(s) "
          "after a warm-up call; each configuration in its own process\n")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for workload in args.workloads.split(","):
            if args.size not in SIZES[workload]:
                print(f"  {workload}: no size {args.size!r}", file=sys.stderr)
                continue
            impls = (("hlodsl-limit", "hlodsl-from-jax", "hlodsl", "jax.jit")
                     + PEERS.get(workload, ()))
            if args.impls:
                impls = tuple(i for i in impls if i in args.impls.split(",") or i == "hlodsl")
            saved = {}
            for impl in impls:
                saved[impl] = os.path.join(tmp, f"{workload}-{impl}.npz")
                row = _child(workload, impl, args.size, args, saved[impl])
                rows.append(row)
                print(f"  {workload} {impl}: {row.get('time_s', row.get('note'))}",
                      file=sys.stderr, flush=True)
            ref = saved["hlodsl"] if os.path.exists(saved["hlodsl"]) else saved["hlodsl-limit"]
            for row in rows:
                if row["workload"] == workload and row["impl"] in saved and \
                        saved[row["impl"]] != ref:
                    row["rel_diff"] = _error(saved[row["impl"]], ref)
    _print(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
