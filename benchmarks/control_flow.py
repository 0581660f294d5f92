"""Control-flow benchmarks: a 1000-step ``fori_loop`` in hlodsl and in jax.

The loop is ``x = 0.9 * x + 0.1 * sin(x)`` on 1000 float32, 1000 steps, with
static bounds (one HLO ``while`` whatever the trip count):

1. ``loop_percall``: the compiled function per call, blocked on the result:
   ``hd.compile`` of a function calling ``hd.fori_loop`` against ``jax.jit``
   of the same function calling ``lax.fori_loop``.
2. ``loop_compile``: staging + compiling (first call of a fresh
   ``hd.compile``) against ``jax.jit(...).lower(...).compile()`` of a fresh
   function.
3. ``loop_eager``: ``hd.fori_loop`` called outside any compiled function
   (it stages and runs its own small module, compiled once) against
   ``lax.fori_loop`` called eagerly.

``python -m benchmarks.control_flow [--quick]`` prints these rows alone.
"""

from __future__ import annotations

import numpy as np

from .foundation import row
from .timing import Settings, compare, time_once

__all__ = ["loop_percall", "loop_compile", "loop_eager", "ALL"]

STEPS = 1000
SIZE = 1000


def step_hd(i, x):
    from hlodsl.stdlib import sin

    return 0.9 * x + 0.1 * sin(x)


def step_jnp(i, x):
    import jax.numpy as jnp

    return 0.9 * x + 0.1 * jnp.sin(x)


def loop_hd(x):
    import hlodsl as hd

    return hd.fori_loop(0, STEPS, step_hd, x)


def loop_jax(x):
    from jax import lax

    return lax.fori_loop(0, STEPS, step_jnp, x)


def _namespace() -> dict:
    import jax

    import hlodsl as hd

    host = np.linspace(-2, 2, SIZE, dtype=np.float32)
    return {"hd": hd, "lax": jax.lax, "x": hd.array(host), "jx": jax.device_put(host),
            "step_hd": step_hd, "step_jnp": step_jnp, "STEPS": STEPS}


def _check(ours, peer) -> None:
    """Same result on both sides before anything is timed."""
    np.testing.assert_allclose(np.asarray(ours), np.asarray(peer), rtol=1e-5, atol=1e-6)


SECTION = "6. control flow"
CASE = f"fori_loop {STEPS} steps, x = 0.9x + 0.1 sin(x), {SIZE} f32"


def loop_percall(cfg: Settings) -> list[dict]:
    import jax

    import hlodsl as hd

    ns = _namespace()
    ns["f"], ns["jf"] = hd.compile(loop_hd), jax.jit(loop_jax)
    _check(ns["f"](ns["x"]), ns["jf"](ns["jx"]))
    t = compare({"ours": "f(x)._buf.block_until_ready()",
                 "peer": "jf(jx).block_until_ready()"}, ns, cfg)
    return [row(SECTION, f"{CASE}, compiled, per call", "hd.compile", t["ours"],
                "jax.jit + lax.fori_loop", t["peer"])]


def loop_compile(cfg: Settings) -> list[dict]:
    import jax

    import hlodsl as hd

    ns = _namespace()

    def ours():
        hd.compile(lambda x: loop_hd(x))(ns["x"])._buf.block_until_ready()

    def peer():
        # A fresh function object each time, so no jax tracing/lowering cache hits.
        jax.jit(lambda x: loop_jax(x)).lower(ns["jx"]).compile()

    t = time_once({"ours": ours, "peer": peer}, cfg)
    return [row(SECTION, f"{CASE}, staging + compile", "hd.compile(f)(x), first call",
                t["ours"], "jax.jit(f).lower().compile()", t["peer"], unit="ms")]


def loop_eager(cfg: Settings) -> list[dict]:
    ns = _namespace()
    _check(ns["hd"].fori_loop(0, STEPS, step_hd, ns["x"]),
           ns["lax"].fori_loop(0, STEPS, step_jnp, ns["jx"]))
    t = compare({"ours": "hd.fori_loop(0, STEPS, step_hd, x)._buf.block_until_ready()",
                 "peer": "lax.fori_loop(0, STEPS, step_jnp, jx).block_until_ready()"},
                ns, cfg)
    return [row(SECTION, f"{CASE}, eager call", "hd.fori_loop", t["ours"],
                "lax.fori_loop (eager)", t["peer"], unit="ms")]


ALL = (loop_percall, loop_compile, loop_eager)


def main(argv=None) -> None:
    from .report import main_of

    main_of("python -m benchmarks.control_flow", __doc__, ALL, argv)


if __name__ == "__main__":
    main()
