"""Autodiff benchmarks: an MLP's gradient module and training step against jax.

The model of the autodiff issue: an MLP 784-512-512-10 with ReLU, batch 128,
float32, mean softmax cross-entropy against one-hot labels. The same Python
function is written once and run with ``hlodsl.stdlib`` or ``jax.numpy``.

1. ``instructions``: HLO instructions of the gradient module after XLA's
   optimisation (all computations; the fused computations' bodies included),
   hlodsl's ``hd.grad`` vs ``jax.grad``. The "times" of these rows are counts.
2. ``training_step``: one SGD step (forward, backward, update), compiled,
   per call: ``hd.compile`` vs ``jax.jit``.
3. ``grad_compile``: staging + compiling that training step, vs jax's
   trace + lower + compile.
"""

from __future__ import annotations

import re

import numpy as np

from .foundation import row
from .timing import Settings, compare, time_once

__all__ = ["instructions", "training_step", "grad_compile", "ALL", "count_instructions"]

SIZES = (784, 512, 512, 10)
BATCH = 128
LR = 0.1


def loss(params, x, y, np):
    """Mean softmax cross-entropy of an MLP with ReLU; ``np`` is the array namespace."""
    h = x
    for i, (W, b) in enumerate(params):
        h = h @ W + b
        if i < len(params) - 1:
            h = np.maximum(h, 0.0)
    m = np.max(h, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(h - m), axis=1, keepdims=True)) + m
    return -np.mean(np.sum(y * (h - lse), axis=1))


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    params = [((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32),
               np.zeros(b, np.float32)) for a, b in zip(SIZES, SIZES[1:])]
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    return params, x, y


def _functions():
    import jax
    import jax.numpy as jnp

    import hlodsl as hd
    import hlodsl.stdlib as xp

    def ours_loss(p, x, y):
        return loss(p, x, y, xp)

    def jax_loss(p, x, y):
        return loss(p, x, y, jnp)

    def ours_step(p, x, y):
        g = hd.grad(ours_loss)(p, x, y)
        return [(W - LR * gW, b - LR * gb) for (W, b), (gW, gb) in zip(p, g)]

    def jax_step(p, x, y):
        g = jax.grad(jax_loss)(p, x, y)
        return [(W - LR * gW, b - LR * gb) for (W, b), (gW, gb) in zip(p, g)]

    return ours_loss, jax_loss, ours_step, jax_step


def count_instructions(hlo_text: str) -> int:
    """Instructions in an HLO module's text: every ``name = type opcode(...)`` line."""
    return sum(1 for line in hlo_text.splitlines()
               if re.match(r"\s*(ROOT\s+)?%?[\w.\-]+\s*=\s*\S.*\(", line))


def instructions(cfg: Settings) -> list[dict]:
    import jax

    import hlodsl as hd

    ours_loss, jax_loss, _, _ = _functions()
    params, x, y = _data()
    hp = [(hd.array(W), hd.array(b)) for W, b in params]
    ours = str(hd.code_hlo(hd.grad(ours_loss), hp, hd.array(x), hd.array(y), optimize=True))
    # The same XLA options on both sides (hlodsl's, runtime.compiler_options()):
    # XLA's pipeline depends on them, and a count compares the two front ends.
    peer = jax.jit(jax.grad(jax_loss)).lower(params, x, y).compile(
        compiler_options=hd.runtime.compiler_options()).as_text()
    return [row("5. autodiff", "MLP 784-512-512-10 b128 grad: HLO instructions after XLA",
                "hd.grad", count_instructions(ours), "jax.grad, hlodsl's XLA options",
                count_instructions(peer), unit="instr")]


def training_step(cfg: Settings) -> list[dict]:
    import jax

    import hlodsl as hd

    _, _, ours_step, jax_step = _functions()
    params, x, y = _data()
    ns = {
        "f": hd.compile(ours_step), "jf": jax.jit(jax_step),
        "p": [(hd.array(W), hd.array(b)) for W, b in params], "x": hd.array(x),
        "y": hd.array(y),
        "jp": jax.device_put(params), "jx": jax.device_put(x), "jy": jax.device_put(y),
    }
    ours_new = ns["f"](ns["p"], ns["x"], ns["y"])
    jax_new = ns["jf"](ns["jp"], ns["jx"], ns["jy"])
    for (a, b), (c, d) in zip(ours_new, jax_new):  # the same step on both sides
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(np.asarray(b), np.asarray(d), rtol=1e-4, atol=1e-6)
    t = compare({"ours": "f(p, x, y)[0][0]._buf.block_until_ready()",
                 "peer": "jf(jp, jx, jy)[0][0].block_until_ready()"}, ns, cfg)
    return [row("5. autodiff", "MLP training step (SGD), per call", "hd.compile",
                t["ours"], "jax.jit", t["peer"], unit="ms")]


def grad_compile(cfg: Settings) -> list[dict]:
    import jax

    import hlodsl as hd

    _, _, ours_step, jax_step = _functions()
    params, x, y = _data()
    hp = [(hd.array(W), hd.array(b)) for W, b in params]
    hx, hy = hd.array(x), hd.array(y)
    jp, jx, jy = jax.device_put(params), jax.device_put(x), jax.device_put(y)

    def ours():
        hd.compile(lambda *a: ours_step(*a))(hp, hx, hy)[0][0]._buf.block_until_ready()

    def peer():
        jax.jit(lambda *a: jax_step(*a)).lower(jp, jx, jy).compile()

    t = time_once({"ours": ours, "peer": peer}, cfg)
    return [row("5. autodiff", "MLP training step: staging + compile",
                "hd.compile(step), first call", t["ours"], "jax.jit(step).lower().compile()",
                t["peer"], unit="ms")]


ALL = (instructions, training_step, grad_compile)
