"""XLA:CPU's options, measured per workload (issue 42): which ones hlodsl should set.

``python -m benchmarks.xla_options [--quick] [--only gpt,rnn,...] [--sets a,b,...]``

Every workload is compiled by ``hd.compile`` once per option set (the set replaces
``runtime.COMPILER_OPTIONS["cpu"]`` while that compile runs: XLA reads these options
per compile, so all sets live in one process) and the compiled variants are timed
interleaved, after checking that they agree. Besides the time (wall and CPU medians),
two counts that no load moves: instructions in the optimised HLO and XLA's temporary
bytes.

The option sets (``SETS``): hlodsl's (YNNPACK for dots only, and the options
``runtime.PROGRAM_RULES`` choose per program: YNNPACK's reductions where the program has
split reductions), the same without those rules, XLA's defaults (what jax runs), the
library fusion types one at a time on top of hlodsl's, oneDNN and XNNPACK for the dots,
no library at all (XLA's own Eigen kernels), 512-bit vectors, and the
concurrency-optimised scheduler.
"""

from __future__ import annotations

import argparse
import contextlib
import os

import numpy as np

from .timing import interleaved

__all__ = ["SETS", "CASES", "run", "main"]

_YNN = "xla_cpu_experimental_ynn_fusion_type"
_T = "LIBRARY_FUSION_TYPE_"
_NO_RULES = "program rules"  # not an XLA option: runtime.PROGRAM_RULES emptied
SETS = {
    "hlodsl": {_YNN: _T + "INDIVIDUAL_DOT"},
    "no program rules": {_YNN: _T + "INDIVIDUAL_DOT", _NO_RULES: "off"},
    "XLA default": {},
    "+reduce": {_YNN: f"{_T}INDIVIDUAL_DOT,{_T}REDUCE"},
    "+eltwise": {_YNN: f"{_T}INDIVIDUAL_DOT,{_T}ELTWISE"},
    "+reduce+eltwise": {_YNN: f"{_T}INDIVIDUAL_DOT,{_T}REDUCE,{_T}ELTWISE"},
    "dot fusions+reduce": {_YNN: f"{_T}DOT,{_T}REDUCE"},
    "+convolution": {_YNN: f"{_T}INDIVIDUAL_DOT,{_T}INDIVIDUAL_CONVOLUTION"},
    "Eigen only": {_YNN: ""},
    # (XLA's bool options are spelled True / False here, not true / 1)
    "oneDNN dots": {_YNN: "", "xla_cpu_use_onednn": "True",
                    "xla_cpu_experimental_onednn_fusion_type": _T + "INDIVIDUAL_DOT"},
    "oneDNN custom calls": {_YNN: "", "xla_cpu_use_onednn": "True",
                            "xla_cpu_experimental_onednn_custom_call": "True"},
    "XNNPACK dots": {_YNN: "", "xla_cpu_experimental_xnn_fusion_type": _T + "INDIVIDUAL_DOT"},
    "no tree reductions": {_YNN: _T + "INDIVIDUAL_DOT",
                           "xla_disable_hlo_passes": "tree_reduction_rewriter"},
    "512-bit vectors": {_YNN: _T + "INDIVIDUAL_DOT", "xla_cpu_prefer_vector_width": "512"},
    "concurrency scheduler": {_YNN: _T + "INDIVIDUAL_DOT",
                              "xla_cpu_enable_concurrency_optimized_scheduler": "True"},
}


@contextlib.contextmanager
def options(opts: dict):
    """``runtime.COMPILER_OPTIONS["cpu"]`` set to ``opts`` while the block runs (and
    ``runtime.PROGRAM_RULES["cpu"]`` emptied where ``opts`` turns the rules off)."""
    from hlodsl import runtime

    opts = dict(opts)
    rules_off = opts.pop(_NO_RULES, None) == "off"
    kept, rules = runtime.COMPILER_OPTIONS.get("cpu"), runtime.PROGRAM_RULES.get("cpu", [])
    runtime.COMPILER_OPTIONS["cpu"] = opts
    if rules_off:
        runtime.PROGRAM_RULES["cpu"] = []
    try:
        yield
    finally:
        runtime.COMPILER_OPTIONS["cpu"] = kept
        runtime.PROGRAM_RULES["cpu"] = rules


# -- the workloads: (function for hd.compile, its arguments) ------------------------------

#: The tiny sizes of ``--quick`` (smoke runs).
QUICK = {"gpt": {"vocab": 64, "layers": 1, "batch": 2, "tokens": 8, "width": 32, "heads": 2},
         "resnet": {"batch": 2, "side": 8, "widths": (4, 8), "blocks": 1, "classes": 10}}


def _gpt(quick):
    import hlodsl as hd
    from hlodsl.stdlib import nn

    from . import torch_models as tm
    from .torch_cpu import LR, _hd_step

    size = QUICK["gpt"] if quick else tm.GPT
    HD, opt = tm.hd_layers(), nn.adam(LR)
    p = hd.tree_map(hd.array, tm.gpt_params(size))
    step = _hd_step(lambda p, ids, lab: tm.gpt_loss(HD, p, ids, lab, size["heads"]), opt,
                    donate=False).fn
    return step, (p, opt.init(p), *map(hd.array, tm.gpt_tokens(size)))


def _resnet(quick):
    import hlodsl as hd
    from hlodsl.stdlib import nn

    from . import torch_models as tm
    from .torch_cpu import _hd_step

    size = QUICK["resnet"] if quick else tm.RESNET
    HD, opt = tm.hd_layers(), nn.sgd(0.1)
    p = hd.tree_map(hd.array, tm.resnet_params(size))
    step = _hd_step(lambda p, x, lab: tm.resnet_loss(HD, p, x, lab), opt, donate=False).fn
    return step, (p, opt.init(p), *map(hd.array, tm.resnet_images(size)))


def _rnn(quick):
    import hlodsl as hd
    import hlodsl.stdlib as xp

    from .torch_cpu import rnn_loss

    t, b, h = (20, 2, 8) if quick else (1000, 16, 128)
    rng = np.random.default_rng(2)
    p = {k: hd.array((rng.standard_normal(s) / np.sqrt(h)).astype(np.float32))
         for k, s in (("wx", (h, h)), ("wh", (h, h)), ("b", (h,)))}
    xs = hd.array(rng.standard_normal((t, b, h)).astype(np.float32))
    return (lambda p, xs: rnn_loss(hd.scan, xp, p, xs)), (p, xs)


def _gemm(quick):
    import hlodsl as hd

    n = 64 if quick else 2048
    rng = np.random.default_rng(5)
    a, b = (hd.array(rng.standard_normal((n, n)).astype(np.float32)) for _ in range(2))
    return (lambda a, b: a @ b), (a, b)


def _transformer(quick):
    import hlodsl as hd
    import hlodsl.stdlib as xp

    from .workloads import B, D, F, H, T, _adam, _block, _block_params

    b, t, d, heads, f = (2, 8, 32, 2, 64) if quick else (B, T, D, H, F)
    p = hd.tree_map(hd.array, _block_params(d=d, f=f))
    z = hd.tree_map(lambda a: hd.array(np.zeros(a.shape, np.float32)), p)
    x = hd.array(np.random.default_rng(1).standard_normal((b, t, d)).astype(np.float32))

    def step(p, m, v, x):
        g = hd.grad(lambda p: xp.mean(_block(xp, p, x, heads) ** 2))(p)
        return _adam(xp, None, p, g, m, v, 1)

    return step, (p, z, z, x)


def _mlp(quick):
    import hlodsl as hd

    from .autodiff import _data, _functions

    step = _functions()[2]
    params, x, y = _data()
    return step, ([tuple(map(hd.array, l)) for l in params], hd.array(x), hd.array(y))


def _lstm(quick):
    from .workloads import lstm_setup

    f, _, args, _ = lstm_setup(*((5, 2, 8, 4) if quick else (50, 32, 256, 64)),
                               scale=lambda n: 0.1)
    return f.fn, args


def _fori(quick):
    import hlodsl as hd

    from .control_flow import SIZE, loop_hd

    return loop_hd, (hd.array(np.linspace(-2, 2, SIZE, dtype=np.float32)),)


def _numpy_workload(quick):
    import hlodsl as hd
    import hlodsl.stdlib as xp

    from .numpy_workload import _data, kernel

    return (lambda x, v, M: kernel(x, v, M, xp)), tuple(map(hd.array, _data()))


def _vgg19(quick):
    from .vgg19 import gradient_setup

    (params, x), _, f, _, _ = gradient_setup(1)
    return f.fn, (params, x)


CASES = {"gpt": _gpt, "resnet": _resnet, "rnn": _rnn, "gemm": _gemm,
         "transformer": _transformer, "mlp": _mlp, "lstm": _lstm, "fori_loop": _fori,
         "numpy_workload": _numpy_workload, "vgg19": _vgg19}


def _instructions(text: str) -> int:
    return sum(1 for line in text.splitlines() if " = " in line and "ENTRY" not in line)


def _leaves(tree):
    import hlodsl as hd

    return [np.asarray(a) for a in hd.tree_leaves(tree)]


def run(quick: bool = False, only=None, sets=None, log=print) -> list[dict]:
    """One row per (workload, option set): times (s), instructions, temp bytes, the load."""
    import hlodsl as hd

    rows = []
    for name, build in CASES.items():
        if only and name not in only or (quick and name == "vgg19"):
            continue
        fn, args = build(quick)
        compiled, counts, ref = {}, {}, None
        for label, opts in SETS.items():
            if sets and label not in sets and label != "hlodsl":
                continue
            with options(opts):
                f = hd.compile(fn)
                try:
                    out = _leaves(f(*args))
                except Exception as e:  # an option this XLA refuses for this program
                    counts[label] = f"failed: {type(e).__name__}: {str(e)[:60]}"
                    continue
            exe = f.entry(*args).exe
            counts[label] = (_instructions(exe.optimized_hlo()),
                             exe.memory_stats()["temp_size_in_bytes"])
            if ref is None:
                ref = out
            # The same program, other kernels: all results together, by norm (Adam's
            # first step is about lr * sign(g): a tiny g's rounding may flip a sign).
            a, b = (np.concatenate([v.astype(np.float64).ravel() for v in o]) for o in (out, ref))
            assert np.linalg.norm(a - b) <= 1e-3 * (np.linalg.norm(b) or 1.0), (name, label)
            compiled[label] = f
        load = os.getloadavg()[0]

        def call(f):
            return lambda: hd.block_until_ready(f(*args))

        wall, cpu = interleaved({k: call(f) for k, f in compiled.items()},
                                3 if quick else (5 if name == "vgg19" else 9),
                                0.0 if quick else 0.2, cpu=True)
        for label, c in counts.items():
            row = {"case": name, "set": label, "load": (load, os.getloadavg()[0])}
            if isinstance(c, str):
                row["failed"] = c
            else:
                row.update(wall=wall[label], cpu=cpu[label], instructions=c[0], temp=c[1],
                           ratio=wall[label] / wall["hlodsl"],
                           cpu_ratio=cpu[label] / cpu["hlodsl"])
            rows.append(row)
            if log:
                log(_line(row))
    return rows


def _line(r: dict) -> str:
    if "failed" in r:
        return f"| {r['case']} | {r['set']} | {r['failed']} | | | | | | |"
    return (f"| {r['case']} | {r['set']} | {r['wall'] * 1e3:.3g} ms | {r['ratio']:.2f} | "
            f"{r['cpu'] * 1e3:.3g} ms | {r['cpu_ratio']:.2f} | {r['instructions']} | "
            f"{r['temp']} | {r['load'][0]:.1f}, {r['load'][1]:.1f} |")


HEADER = ("| workload | XLA options | time | / hlodsl's | CPU time | / hlodsl's | instructions | "
          "temp bytes | load |\n|---|---|---:|---:|---:|---:|---:|---:|---:|")


def main(argv=None) -> None:
    from .report import machine

    parser = argparse.ArgumentParser(prog="python -m benchmarks.xla_options",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    parser.add_argument("--only", default="", help=f"comma-separated: {', '.join(CASES)}")
    parser.add_argument("--sets", default="", help=f"comma-separated: {', '.join(SETS)}")
    args = parser.parse_args(argv)
    print(f"Machine: {machine()}\n\n{HEADER}", flush=True)
    run(args.quick, set(filter(None, args.only.split(","))),
        set(filter(None, args.sets.split(","))), log=lambda s: print(s, flush=True))


if __name__ == "__main__":
    main()
