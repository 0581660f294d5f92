"""The gradient of an imported jax model: jax's derivative (``hd.from_jax``) against the
per-op rules of the same text (``hd.import_hlo``) and ``jax.jit(jax.value_and_grad)``.

A small GPT-like stack (L attention blocks with exact GELU, d x d weights, n
tokens) as in issue 40: its loss is imported twice, once by ``hd.from_jax``
(whose derivatives are jax's own programs, first order keeping jax's
residuals) and once as the bare lowered text by ``hd.import_hlo`` (each op's
own rule: NaN at GELU's 0); each is compiled with ``hd.value_and_grad``.
Reported, each from the same process: time per call (interleaved repeats,
median), XLA's flop count and temporary bytes of each compiled step, whether
its gradient has a NaN, and its largest difference from jax's::

    python -m benchmarks.from_jax_gradients            # d=128, n=256, L=4
    python -m benchmarks.from_jax_gradients --quick
"""

from __future__ import annotations

import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
from hlodsl.transforms.hlo_import import import_hlo

import hlodsl as hd
from hlodsl import runtime

from .timing import compare, settings


def make_loss(d: int, layers: int):
    def loss(params, x):
        h = x
        for i in range(layers):
            q = h @ params[f"w{i}"]
            s = jax.nn.softmax(q @ h.T / np.sqrt(d), axis=-1)
            h = h + jax.nn.gelu(s @ q, approximate=False)
        return jnp.mean(h ** 2)
    return loss


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    d, n, layers = args.d, args.n, args.layers
    params = {f"w{i}": (rng.normal(size=(d, d)) / np.sqrt(d)).astype(np.float32)
              for i in range(layers)}
    x = rng.normal(size=(n, d)).astype(np.float32)
    params["w0"][:, 0] = 0.0  # a column of GELU inputs that are exactly 0: per-op rules NaN
    loss = make_loss(d, layers)
    ours = ({k: hd.array(v) for k, v in params.items()}, hd.array(x))

    exact = hd.compile(hd.value_and_grad(hd.from_jax(loss, params, x)))
    text = runtime.lower_jax(loss, (params, x))[0]
    per_op_fn = import_hlo(text, "loss")
    per_op = hd.compile(hd.value_and_grad(lambda p, x: per_op_fn(*[p[k] for k in sorted(
        p, key=lambda k: int(k[1:]))], x)))
    jg = jax.jit(jax.value_and_grad(loss))
    want = jg(params, x)[1]
    rows = {}
    for label, step in (("from_jax (jax's derivative)", exact), ("import_hlo (per-op rules)", per_op)):
        _, g = step(*ours)
        diff = max(float(np.nanmax(np.abs(np.asarray(g[k]) - np.asarray(want[k]))))
                   for k in params)
        nan = any(np.isnan(np.asarray(g[k])).any() for k in params)
        entry = step.entry(*ours)
        rows[label] = (runtime.cost_analysis(entry.exe)["flops"],
                       step.memory_stats(*ours)["temp_size_in_bytes"] / 2 ** 20, nan, diff)
    compiled = jg.lower(params, x).compile()
    rows["jax.jit(jax.value_and_grad)"] = (compiled.cost_analysis()["flops"],
                                           compiled.memory_analysis().temp_size_in_bytes / 2 ** 20,
                                           False, 0.0)
    namespace = {"exact": exact, "per_op": per_op, "jg": jg, "ours": ours, "params": params,
                 "x": x, "jax": jax}
    times = compare({"from_jax (jax's derivative)": "exact(*ours)[1]['w0'].block_until_ready()",
                     "import_hlo (per-op rules)": "per_op(*ours)[1]['w0'].block_until_ready()",
                     "jax.jit(jax.value_and_grad)": "jax.block_until_ready(jg(params, x))"},
                    namespace, settings(args.quick))
    print(f"d={d} n={n} layers={layers}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'':30s} {'ms/call':>8s} {'vs jax':>7s} {'flops':>9s} {'temp MiB':>9s} {'NaN':>5s} "
          f"{'max |diff|':>10s}")
    base = times["jax.jit(jax.value_and_grad)"]
    for label, (flops, temp, nan, diff) in rows.items():
        print(f"{label:30s} {times[label] * 1e3:8.2f} {times[label] / base:7.2f} {flops:9.3g} "
              f"{temp:9.2f} {nan!s:>5s} {diff:10.2e}")


if __name__ == "__main__":
    main()
