"""Programs that call Python: ``hd.pure_callback`` / ``io_callback`` against jax's.

1. ``pure_percall``: a compiled function whose one instruction of note is a
   ``pure_callback`` of ``np.sin`` on 1000 float32 (the program calls into
   Python, numpy computes, the result comes back), per call, blocked on the
   result: ``hd.compile`` against ``jax.jit`` of ``jax.pure_callback``.
2. ``io_scan``: a 100-step ``scan`` whose body hands its carry to an ordered
   ``io_callback`` (a token threads the steps), per call: ``hd.compile``
   against ``jax.jit`` of ``lax.scan`` with ``jax.experimental.io_callback``.

Both sides call the same Python functions. ``python -m benchmarks.callbacks
[--quick]`` prints these rows (they are not in ``python -m benchmarks``).
"""

from __future__ import annotations

import numpy as np

from .foundation import row
from .timing import Settings, compare

__all__ = ["pure_percall", "io_scan", "ALL"]

SECTION = "callbacks"
SIZE = 1000
STEPS = 100


def _seen(v):
    """The io_callback's effect: count the calls (cheap, so the call path is timed)."""
    _seen.calls += 1


_seen.calls = 0


def pure_percall(cfg: Settings) -> list[dict]:
    import jax

    import hlodsl as hd

    host = np.linspace(-2, 2, SIZE, dtype=np.float32)
    spec = jax.ShapeDtypeStruct(host.shape, host.dtype)
    ns = {"x": hd.array(host), "jx": jax.device_put(host),
          "f": hd.compile(lambda x: hd.pure_callback(np.sin, spec, x) * 2),
          "jf": jax.jit(lambda x: jax.pure_callback(np.sin, spec, x) * 2)}
    np.testing.assert_allclose(np.asarray(ns["f"](ns["x"])), np.asarray(ns["jf"](ns["jx"])),
                               rtol=1e-6)
    t = compare({"ours": "f(x)._buf.block_until_ready()",
                 "peer": "jf(jx).block_until_ready()"}, ns, cfg)
    return [row(SECTION, f"pure_callback(np.sin) on {SIZE} f32, compiled, per call",
                "hd.compile + hd.pure_callback", t["ours"],
                "jax.jit + jax.pure_callback", t["peer"])]


def io_scan(cfg: Settings) -> list[dict]:
    import jax
    from jax.experimental import io_callback

    import hlodsl as hd

    def step_hd(c, x):
        hd.io_callback(_seen, None, c, ordered=True)
        return c + x, None

    def step_jax(c, x):
        io_callback(_seen, None, c, ordered=True)
        return c + x, None

    xs = np.ones(STEPS, np.float32)
    ns = {"xs": hd.array(xs), "jxs": jax.device_put(xs), "c": hd.array(np.float32(0)),
          "jc": jax.device_put(np.float32(0)),
          "f": hd.compile(lambda c, xs: hd.scan(step_hd, c, xs)[0]),
          "jf": jax.jit(lambda c, xs: jax.lax.scan(step_jax, c, xs)[0])}
    before = _seen.calls
    assert float(ns["f"](ns["c"], ns["xs"])) == float(ns["jf"](ns["jc"], ns["jxs"])) == STEPS
    jax.effects_barrier()
    assert _seen.calls - before == 2 * STEPS
    t = compare({"ours": "f(c, xs)._buf.block_until_ready()",
                 "peer": "jf(jc, jxs).block_until_ready()"}, ns, cfg)
    return [row(SECTION, f"scan of {STEPS} steps, an ordered io_callback each, per call",
                "hd.compile + hd.io_callback", t["ours"], "jax.jit + io_callback",
                t["peer"])]


ALL = (pure_percall, io_scan)


def main(argv=None) -> None:
    from .report import main_of

    main_of("python -m benchmarks.callbacks", __doc__, ALL, argv)


if __name__ == "__main__":
    main()
