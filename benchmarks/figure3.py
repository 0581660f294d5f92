"""Figure 3 of the XLA.jl paper for hlodsl's VGG19: HLO instructions by opcode.

``python -m benchmarks.figure3 [--batch N] [--layout NHWC]`` counts, for the
VGG19 forward pass (``models.vgg19(params, x)``, 224x224 float32) and its
backward pass (the gradient of ``sum(vgg19(params, x))`` with respect to the
parameters, ``hd.grad``), the instructions of each opcode in the entry
computation (E) and in all computations (T), at three stages:

- ``emitted``: the module as hlodsl prints it (``hd.code_hlo(f, ...)``), the
  paper's "Unopt";
- ``unfused``: after XLA:CPU's HLO pipeline up to, not including, its
  ``fusion`` pass (simplification, layout assignment and everything the CPU
  backend runs before fusing), the paper's "Opt" ("a pipeline similar to that
  used by the CPU backend, but without HLO fusion"); XLA's dump of the module
  before the pass named ``fusion`` (``--xla_dump_hlo_pass_re=^fusion$``),
  with YNNPACK library-call outlining off
  (``--xla_cpu_experimental_ynn_fusion_type=``) so that no op is wrapped in a
  library fusion either;
- ``fused``: the module XLA:CPU compiles with default flags
  (``hd.code_hlo(f, ..., optimize=True)``): the fused computations' bodies
  are counted in T.

``--layout NHWC`` counts the channels-last network instead
(``models.vgg19(params, x, data_format="NHWC")`` on NHWC images, with
``models.vgg19_to_channels_last`` parameters, and the jax peer in NHWC/HWIO).

XLA reads ``XLA_FLAGS`` once, when the backend starts, so the XLA stages are
compiled in child processes. ``compare`` directions are counted separately
(``compare-GT``, ...), as the paper's ``less-than`` etc.

>>> counts = count_instructions('''HloModule m
... add { a = f32[] parameter(0)
... b = f32[] parameter(1)
... ROOT s = f32[] add(a, b) }''')
>>> counts.computations, sum(counts.total.values())
(1, 3)
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile
from typing import NamedTuple

__all__ = ["Counts", "count_instructions", "collect", "table", "PAPER", "main"]

#: The paper's totals (figure 1): (entry, total) per pass and stage.
PAPER = {("forward", "emitted"): (183, 361), ("forward", "unfused"): (130, 242),
         ("backward", "emitted"): (577, 2775), ("backward", "unfused"): (362, 925)}

STAGES = ("emitted", "unfused", "fused")
PASSES = ("forward", "backward")
_SHORT = {"forward": "fwd", "backward": "bwd"}


class Counts(NamedTuple):
    """Instructions by opcode in the entry computation and in all computations."""

    entry: collections.Counter
    total: collections.Counter
    computations: int


def _opcode(rhs: str) -> str:
    """The opcode of an instruction's right-hand side ``type opcode(operands), attrs``."""
    if rhs.startswith("("):  # a tuple type: skip to its closing parenthesis
        depth = 0
        for i, c in enumerate(rhs):
            depth += (c == "(") - (c == ")")
            if depth == 0:
                break
        rhs = rhs[i + 1:].lstrip()
    else:
        rhs = rhs.split(None, 1)[1]
    op = re.match(r"[\w\-]+", rhs).group(0)
    if op == "compare":
        direction = re.search(r"direction=(\w+)", rhs)
        op += f"-{direction.group(1)}" if direction else ""
    return op


def count_instructions(hlo_text: str) -> Counts:
    """Count the instructions of HLO module text by opcode, entry computation vs all.

    Works on the text hlodsl emits and on XLA's printed modules (``%`` names,
    layouts, ``/*index=N*/`` comments, fused computations).

    >>> c = count_instructions('''HloModule m
    ... ENTRY main {
    ...   x = f32[2] parameter(0)
    ...   ROOT y = f32[2] add(x, x)
    ... }''')
    >>> dict(c.entry), c.computations
    ({'parameter': 1, 'add': 1}, 1)
    """
    entry: collections.Counter = collections.Counter()
    total: collections.Counter = collections.Counter()
    n, current, is_entry = 0, False, False
    for line in hlo_text.splitlines():
        s = line.strip()
        # A computation starts at column 0 with a line ending in "{" (one-line
        # bodies "name { ... }" are split at their braces first).
        if not line[:1].isspace() and re.match(r"(ENTRY\s+)?%?[A-Za-z_][\w.\-]*\s*[({]", s) \
                and not s.startswith("HloModule"):
            n, current, is_entry = n + 1, True, s.startswith("ENTRY")
            s = s.split("{", 1)[1].strip() if s.split("(", 1)[0].count("{") else ""
            if not s:
                continue
        if not current:
            continue
        closing = s.endswith("}") and (s == "}" or s.count("{") < s.count("}"))
        body = s[:-1].strip() if closing else s
        m = re.match(r"(ROOT\s+)?%?[\w.\-]+\s*=\s*", body)
        if m:
            op = _opcode(body[m.end():])
            total[op] += 1
            if is_entry:
                entry[op] += 1
        if closing:
            current = False
    return Counts(entry, total, n)


# -- the child process: compile the modules and write their texts --------------------------

def _functions(batch: int, layout: str = "NCHW"):
    import numpy as np

    import hlodsl as hd
    import hlodsl.stdlib as xp
    from hlodsl.stdlib import models, nn

    params = models.vgg19_init(nn.key(0))
    shape = (batch, 3, 224, 224)
    if layout == "NHWC":
        params, shape = models.vgg19_to_channels_last(params), (batch, 224, 224, 3)
    x = hd.array(np.zeros(shape, np.float32))

    def vgg19(p, x):  # the module's name, which the unfused stage's dump filter matches
        return models.vgg19(p, x, data_format=layout)

    def backward(p, x):
        return hd.grad(lambda p, x: xp.sum(vgg19(p, x)))(p, x)

    return {"forward": vgg19, "backward": backward}, (params, x)


def _worker(out: str, stage: str, batch: int, layout: str = "NCHW") -> None:
    """Write ``{out}/{pass}.{stage}.hlo`` for both passes (run with the stage's XLA_FLAGS)."""
    import hlodsl as hd

    fns, args = _functions(batch, layout)
    for name, f in fns.items():
        if stage == "emitted":
            text = hd.code_hlo(f, *args)
        elif stage == "fused":
            text = hd.code_hlo(f, *args, optimize=True)
        else:  # XLA dumps the module before its fusion pass into out/dump
            hd.code_hlo(f, *args, optimize=True)
            dumps = sorted(glob.glob(os.path.join(out, "dump", "*before_fusion.txt")),
                           key=os.path.getmtime)
            with open(dumps[-1]) as fh:
                text = fh.read()
        with open(os.path.join(out, f"{name}.{stage}.hlo"), "w") as fh:
            fh.write(text)
    if stage != "unfused":  # the peer: jax.jit of the same network in jax.lax
        for name, text in _jax_texts(stage, args, layout).items():
            with open(os.path.join(out, f"{name}.{stage}.jax.hlo"), "w") as fh:
                fh.write(text)


def _jax_texts(stage: str, args, layout: str = "NCHW") -> dict[str, str]:
    import functools

    import jax
    import jax.numpy as jnp
    import numpy as np

    from hlodsl import runtime
    from hlodsl.arrays.tree import flatten, unflatten

    from .vgg19 import vgg19_jax

    leaves, tree = flatten(args)
    params, x = unflatten(tree, [np.asarray(a) for a in leaves])
    peer = functools.partial(vgg19_jax, layout=layout)
    fns = {"forward": peer, "backward": jax.grad(lambda p, x: jnp.sum(peer(p, x)))}
    out = {}
    for name, f in fns.items():
        lowered = jax.jit(f).lower(params, x)
        # compiled with hlodsl's XLA options, so that both sides get one configuration
        out[name] = (lowered.as_text(dialect="hlo") if stage == "emitted" else
                     lowered.compile(compiler_options=runtime.compiler_options()).as_text())
    return out


def _run_worker(out: str, stage: str, batch: int, layout: str = "NCHW") -> None:
    env = dict(os.environ)
    if stage == "unfused":
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + f" --xla_dump_to={out}/dump"
                            " --xla_dump_hlo_pass_re=^fusion$"
                            " --xla_dump_hlo_module_re=^(vgg19|backward)$"
                            " --xla_cpu_experimental_ynn_fusion_type=").strip()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([sys.executable, "-m", "benchmarks.figure3", "--worker", out, stage,
                    str(batch), layout], check=True, env=env, cwd=root)


def collect(batch: int = 1, stages=STAGES, layout: str = "NCHW") -> dict[tuple[str, str], Counts]:
    """``{(pass, stage): Counts}`` for VGG19's forward and backward passes.

    Each stage is compiled in a child process (XLA reads its flags at start-up).
    ``layout`` is the network's data format, "NCHW" (torch's) or "NHWC".
    """
    counts = {}
    with tempfile.TemporaryDirectory() as out:
        for stage in stages:
            _run_worker(out, stage, batch, layout)
            for name in PASSES:
                with open(os.path.join(out, f"{name}.{stage}.hlo")) as fh:
                    counts[(name, stage)] = count_instructions(fh.read())
                jax_file = os.path.join(out, f"{name}.{stage}.jax.hlo")
                if os.path.exists(jax_file):
                    with open(jax_file) as fh:
                        counts[(name, stage, "jax")] = count_instructions(fh.read())
    return counts


def table(counts: dict[tuple[str, str], Counts]) -> str:
    """The figure as a Markdown table: opcode rows, (pass, stage, E/T) columns, totals."""
    cols = [(p, s) for p in PASSES for s in STAGES if (p, s) in counts]
    ops = collections.Counter()
    for k in cols:
        ops.update(counts[k].total)
    names = [f"{_SHORT[p]} {s}" for p, s in cols]
    head = "| opcode | " + " | ".join(f"{n} E | {n} T" for n in names) + " |"
    lines = [head, "|---|" + "---:|" * (2 * len(cols))]
    for op, _ in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])):
        cells = [f"{counts[k].entry[op]} | {counts[k].total[op]}" for k in cols]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    totals = [f"**{sum(counts[k].entry.values())}** | **{sum(counts[k].total.values())}**"
              for k in cols]
    lines.append("| **total** | " + " | ".join(totals) + " |")
    paper = [" | ".join(map(str, PAPER[k])) if k in PAPER else "- | -" for k in cols]
    lines.append("| paper (XLA.jl) | " + " | ".join(paper) + " |")
    peer = [f"{sum(counts[k + ('jax',)].entry.values())} | "
            f"{sum(counts[k + ('jax',)].total.values())}" if k + ("jax",) in counts else "- | -"
            for k in cols]
    lines.append("| jax.jit, same network | " + " | ".join(peer) + " |")
    lines.append("| computations | " + " | ".join(f"- | {counts[k].computations}"
                                                  for k in cols) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.figure3",
                                     description="VGG19's HLO instruction counts by opcode "
                                                 "(the XLA.jl paper's figure 3)")
    parser.add_argument("--batch", type=int, default=1, help="images per batch (default 1)")
    parser.add_argument("--layout", choices=("NCHW", "NHWC"), default="NCHW",
                        help="activation layout: NCHW/OIHW (torch's, default) or "
                             "NHWC/HWIO (channels last)")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        out, stage, batch, layout = args.worker
        _worker(out, stage, int(batch), layout)
        return
    from . import machine

    counts = collect(args.batch, layout=args.layout)
    print(f"Machine: {machine()}")
    print(f"VGG19 ({args.layout}), 224x224 float32, batch {args.batch}; E = entry "
          "computation, T = all computations\n")
    print(table(counts))


if __name__ == "__main__":
    main()
