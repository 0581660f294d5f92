"""Where a training step's time goes, hlodsl (``hd.profile``) beside torch (``torch.profiler``).

``python -m benchmarks.time_split [--only gpt,resnet,rnn] [--runs 10]``

For the GPT and ResNet steps of ``benchmarks.torch_cpu`` (and the RNN forward), the
measured time is split into the same categories on both sides: GEMMs (dots, ``mm``),
convolutions, attention (its products, softmax and masks), normalisation (layer and
batch norm), activations, the loss, the optimizer, copies and transposes (data
movement the program adds: XLA's ``copy``/``transpose`` fusions, torch's ``copy_``,
``contiguous``, ``_to_copy``), and the rest. hlodsl's instructions are put in a
category by what they are (a dot, a convolution, a fusion whose root is a copy or a
transpose) and otherwise by the model line they come from (``hd.profile`` maps each
to its Python line, derivative included); torch's profiler events by operator name,
every operator under ``optimizer.step`` counted as the optimizer. Both are times of one
call in which one operation runs at a time on the calling thread or its workers: on a
loaded machine both sides slow, and the shares mean more than the milliseconds.
"""

from __future__ import annotations

import argparse
import linecache
import os
from collections import defaultdict

__all__ = ["CATEGORIES", "hlodsl_split", "torch_split", "run", "table", "main"]

CATEGORIES = ("GEMM", "convolution", "attention", "normalisation", "activation", "loss",
              "optimizer", "copy/transpose", "other")  # other: residual adds, bias sums, ...

# A model line (its code, as hd.profile labels it) -> category, first match wins.
_LINE = (("causal_attention", "attention"), ("layer_norm", "normalisation"),
         ("batch_norm", "normalisation"), ("gelu", "activation"), ("relu", "activation"),
         ("cross_entropy", "loss"), ("opt.update", "optimizer"), ("conv", "convolution"),
         ("linear", "GEMM"), ("@", "GEMM"), ("tanh", "activation"))


def _category_of_line(path: str | None, line: int | None) -> str:
    code = linecache.getline(path, line) if path and line else ""
    for key, cat in _LINE:
        if key in code:
            return cat
    return "other"


def _kind(inst, comps) -> str | None:
    """A category an instruction has by what it is, or None (then: by its line)."""
    if inst.opcode in ("dot", "convolution"):
        return "GEMM" if inst.opcode == "dot" else "convolution"
    if inst.opcode in ("copy", "transpose"):
        return "copy/transpose"
    if inst.opcode == "fusion":
        ops = [sub.opcode for _, name in inst.called() if name in comps
               for sub in comps[name].instructions]
        if "convolution" in ops:
            return "convolution"
        if "dot" in ops:
            return "GEMM"
        root = next((comps[name].instructions[-1].opcode for _, name in inst.called()
                     if name in comps and comps[name].instructions), None)
        if root in ("copy", "transpose") or inst.name.startswith(("copy", "transpose")):
            return "copy/transpose"
    return None


def hlodsl_split(fn, args, runs: int = 10) -> tuple[dict, float]:
    """``({category: ns per call}, wall ns)`` of ``hd.compile(fn)(*args)`` (``hd.profile``)."""
    import hlodsl as hd

    p = hd.profile(hd.compile(fn), *args, runs=runs)
    comps = p.module.by_name()
    found = {i.name: i for c in p.module.computations for i in c.instructions}
    out: dict = defaultdict(float)
    for inst, split in p._split:
        kind = _kind(found[inst.name], comps) if inst.name in found else None
        if kind is not None:
            out[kind] += inst.time_ns
            continue
        for (src, _), weight in split.items():
            out[_category_of_line(*(src or (None, None))[:2])] += inst.time_ns * weight
    return dict(out), p.wall_ns


_TORCH = (("log_softmax", "loss"), ("nll_loss", "loss"), ("cross_entropy", "loss"),
          ("scaled_dot_product", "attention"), ("softmax", "attention"),
          ("convolution", "convolution"), ("conv2d", "convolution"),
          ("layer_norm", "normalisation"), ("batch_norm", "normalisation"),
          ("gelu", "activation"), ("relu", "activation"), ("threshold_backward", "activation"),
          ("tanh", "activation"), ("mm", "GEMM"), ("matmul", "GEMM"), ("linear", "GEMM"),
          ("rnn", "GEMM"), ("copy_", "copy/transpose"), ("contiguous", "copy/transpose"),
          ("_to_copy", "copy/transpose"), ("clone", "copy/transpose"),
          ("transpose", "copy/transpose"), ("permute", "copy/transpose"))


def torch_split(step, runs: int = 10) -> tuple[dict, float]:
    """``({category: ns per call}, wall ns)`` of torch's ``step()`` (self time per operator;
    what runs under a ``record_function("optimizer.step")`` is the optimizer's)."""
    import time

    import torch
    from torch.profiler import ProfilerActivity, profile

    step()
    t0 = time.perf_counter()
    for _ in range(runs):
        step()
    wall = (time.perf_counter() - t0) / runs * 1e9
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(runs):
            step()
    out: dict = defaultdict(float)
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CPU:
            continue
        name, parent, under_opt = e.name, e.cpu_parent, e.name.startswith("Optimizer.step")
        while parent is not None and not under_opt:
            under_opt = parent.name.startswith(("Optimizer.step", "optimizer.step"))
            parent = parent.cpu_parent
        if under_opt:
            cat = "optimizer"
        else:
            cat = next((c for k, c in _TORCH if k in name.lower()), "other")
        out[cat] += e.self_cpu_time_total * 1e3 / runs  # us -> ns, per call
    return dict(out), wall


def _cases(only, quick: bool = False):
    """(name, hlodsl (fn, args), torch step) for the workloads of benchmarks.torch_cpu
    (``quick``: their tiny sizes)."""
    import numpy as np
    import torch

    from . import torch_models as tm
    from .torch_cpu import LR, _torch_params
    from .xla_options import QUICK, _gpt, _resnet, _rnn

    if not only or "gpt" in only:
        TF, gpt = tm.torch_layers(), QUICK["gpt"] if quick else tm.GPT
        tp, leaves = _torch_params(tm.gpt_params(gpt))
        opt = torch.optim.Adam(leaves, lr=LR)
        ids, labels = map(torch.from_numpy, tm.gpt_tokens(gpt))

        def gpt_step():
            opt.zero_grad(set_to_none=True)
            tm.gpt_loss(TF, tp, ids, labels, gpt["heads"]).backward()
            opt.step()

        yield "GPT step (B8 T128 D256, Adam)", _gpt(quick), gpt_step
    if not only or "resnet" in only:
        TF_r, res = tm.torch_layers(), QUICK["resnet"] if quick else tm.RESNET
        tp_r, leaves_r = _torch_params(tm.resnet_params(res))
        opt_r = torch.optim.SGD(leaves_r, lr=0.1)
        x, labels_r = map(torch.from_numpy, tm.resnet_images(res))

        def resnet_step():
            opt_r.zero_grad(set_to_none=True)
            tm.resnet_loss(TF_r, tp_r, x, labels_r).backward()
            opt_r.step()

        yield "ResNet step (batch 32, 32x32, SGD)", _resnet(quick), resnet_step
    if not only or "rnn" in only:
        fn, (p, xs) = _rnn(quick)
        model = torch.nn.RNN(xs.shape[-1], xs.shape[-1])
        tx = torch.from_numpy(np.asarray(xs))

        def rnn_fwd():
            with torch.no_grad():
                (model(tx)[0] ** 2).mean()

        yield "RNN forward (T1000 B16 H128)", (fn, (p, xs)), rnn_fwd


def run(only=None, runs: int = 10, quick: bool = False, log=print) -> list[dict]:
    """One dict per workload: ``ours``/``theirs`` ns per category, both wall times, loads."""
    out = []
    for name, (fn, fargs), step in _cases(only, quick):
        load = os.getloadavg()[0]
        ours, ours_wall = hlodsl_split(fn, fargs, runs)
        theirs, their_wall = torch_split(step, runs)
        out.append({"case": name, "ours": ours, "theirs": theirs, "ours_wall": ours_wall,
                    "their_wall": their_wall, "load": (load, os.getloadavg()[0])})
        if log:
            log(table(out[-1]))
    return out


def table(r: dict) -> str:
    ours, theirs = r["ours"], r["theirs"]
    t_ours, t_theirs = sum(ours.values()) or 1, sum(theirs.values()) or 1
    lines = [f"{r['case']}: hlodsl {r['ours_wall'] / 1e6:.0f} ms a call (profiled "
             f"instructions {t_ours / 1e6:.0f} ms), torch eager {r['their_wall'] / 1e6:.0f} "
             f"ms (profiled operators {t_theirs / 1e6:.0f} ms); load {r['load'][0]:.1f}, "
             f"{r['load'][1]:.1f}",
             "| category | hlodsl | share | torch | share |", "|---|---:|---:|---:|---:|"]
    for cat in CATEGORIES:
        a, b = ours.get(cat, 0.0), theirs.get(cat, 0.0)
        if a or b:
            lines.append(f"| {cat} | {a / 1e6:.1f} ms | {a / t_ours:.0%} | {b / 1e6:.1f} ms | "
                         f"{b / t_theirs:.0%} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    from .report import machine

    parser = argparse.ArgumentParser(prog="python -m benchmarks.time_split",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated: gpt, resnet, rnn")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    print(f"Machine: {machine()}\n")
    run(set(filter(None, args.only.split(","))), args.runs,
        log=lambda s: print(s, flush=True))


if __name__ == "__main__":
    main()
