"""Rematerialisation: XLA's temporary bytes of a compiled gradient, with and without remat.

A stack of ``--layers`` residual layers ``x + tanh(W2 @ tanh(W1 @ x))`` on
``--size`` x ``--size`` float32 matrices; the loss is ``sum(x ** 2)``. The
gradient with respect to every weight is compiled (never run) by hlodsl and by
jax, each as written, with remat around every layer, and with remat around
groups of ``--group`` layers (``hd.remat`` / ``jax.checkpoint``). Temporary
bytes come from the compiled executables (hlodsl: ``Compiled.memory_stats``;
jax: ``memory_analysis``), in units of one activation (size * size * 4 bytes),
and as a ratio to the same library's plain gradient.

    python -m benchmarks.remat [--layers 16] [--size 128] [--group 4]
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import hlodsl as hd
import hlodsl.stdlib as xp


def _stack_loss(lib, wrap, group):
    """The residual stack's loss written with ``lib`` (``hlodsl.stdlib`` or
    ``jax.numpy``), ``wrap`` (remat or the identity) around each ``group`` of layers."""
    def layer(W, x):
        return lib.tanh(W[1] @ lib.tanh(W[0] @ x)) + x

    def block(Ws, x):
        for W in Ws:
            x = layer(W, x)
        return x

    def loss(Ws, x):
        for i in range(0, len(Ws), group):
            x = wrap(block)(Ws[i:i + group], x)
        return lib.sum(x * x)

    return loss


def _hlodsl(weights, x, wrap, group):
    loss = _stack_loss(xp, wrap, group)
    args = ([(hd.array(a), hd.array(b)) for a, b in weights], hd.array(x))
    return hd.compile(hd.grad(loss)).memory_stats(*args)["temp_size_in_bytes"]


def _jax(weights, x, wrap, group):
    loss = _stack_loss(jnp, wrap, group)
    compiled = jax.jit(jax.grad(loss)).lower(weights, x).compile()
    return compiled.memory_analysis().temp_size_in_bytes


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--group", type=int, default=4)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    n = args.size
    weights = [(rng.standard_normal((n, n)).astype(np.float32) / 16,
                rng.standard_normal((n, n)).astype(np.float32) / 16) for _ in range(args.layers)]
    x = rng.standard_normal((n, n)).astype(np.float32)
    unit = n * n * 4
    rows = [("plain", lambda f: f, 1), ("remat each layer", None, 1),
            (f"remat each {args.group} layers", None, args.group)]
    print(f"{args.layers} layers, {n}x{n} float32, platform {jax.default_backend()}: "
          "XLA temp bytes of the compiled gradient (in activations; ratio to plain)")
    print(f"| {'configuration':24} | {'hlodsl':>15} | {'jax':>15} |")
    print(f"|{'-' * 26}|{'-' * 17}|{'-' * 17}|")
    base = {}
    for name, wrap, group in rows:
        ours = _hlodsl(weights, x, wrap or hd.remat, group)
        theirs = _jax(weights, x, wrap or jax.checkpoint, group)
        base.setdefault("hlodsl", ours)
        base.setdefault("jax", theirs)
        print(f"| {name:24} | {ours / unit:6.1f} ({ours / base['hlodsl']:4.2f}x) | "
              f"{theirs / unit:6.1f} ({theirs / base['jax']:4.2f}x) |")


if __name__ == "__main__":
    main()
