"""The paper's replica experiment, simulated on host devices: a data-parallel
training step at a fixed per-device batch on R = 1, 2, 4, 8 devices.

For each R, hlodsl (``hd.compile`` with in/out shardings) and ``jax.jit`` with the
same shardings compile the same step (a 256-512-512-10 MLP, SGD, batch 64 per
device, f32); the table gives, from each partitioned executable, XLA's per-device
FLOPs, the bytes its collectives move per step (their results' sizes, read off
the optimised HLO), its collective and instruction counts, and the median wall
time of a step. Per-device FLOPs and bytes must not grow with R, and hlodsl must
need no more collectives than jax. On a 2-core machine the 8 "devices" share two
cores: wall time means nothing past R = 2 (it is reported, not interpreted).

``python -m benchmarks.scaling [--quick]`` prints the table (it sets
``--xla_force_host_platform_device_count=8`` itself when run as a script).
"""

from __future__ import annotations

import os
import re
import sys

if __name__ == "__main__" and "xla_force_host_platform_device_count" not in \
        os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=8").strip()

import numpy as np  # noqa: E402

__all__ = ["run", "measure", "collective_bytes"]

SIZES = (256, 512, 512, 10)
PER_DEVICE_BATCH = 64
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute",
               "all-to-all")
_BYTES = {"f32": 4, "f64": 8, "bf16": 2, "f16": 2, "s32": 4, "u32": 4, "pred": 1, "s64": 8}


def collective_bytes(hlo: str) -> tuple[int, int]:
    """(number of collectives, bytes their results hold) in optimised HLO text."""
    count = total = 0
    for line in hlo.splitlines():
        m = re.match(r"\s*(?:ROOT )?%?\S+ = (.+?) (" + "|".join(COLLECTIVES) +
                     r")(?:-start)?\(", line)
        if not m:
            continue
        count += 1
        for dt, dims in re.findall(r"(\w+)\[([\d,]*)\]", m.group(1)):
            n = int(np.prod([int(d) for d in dims.split(",") if d])) if dims else 1
            total += n * _BYTES.get(dt, 4)
    return count, total


def _instructions(hlo: str) -> int:
    entry = hlo[hlo.index("\nENTRY"):]
    return sum(1 for ln in entry.splitlines()[1:] if " = " in ln)


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((a, b)).astype(np.float32) / np.float32(np.sqrt(a)),
             np.zeros(b, np.float32)) for a, b in zip(SIZES, SIZES[1:])]


def _data(r: int):
    rng = np.random.default_rng(1)
    n = PER_DEVICE_BATCH * r
    return (rng.standard_normal((n, SIZES[0])).astype(np.float32),
            rng.standard_normal((n, SIZES[-1])).astype(np.float32))


def hd_step(params, x, y):
    import hlodsl as hd
    import hlodsl.stdlib as xp

    def loss(params):
        h = x
        for k, (w, b) in enumerate(params):
            h = h @ w + b
            if k < len(params) - 1:
                h = xp.tanh(h)
        return xp.mean((h - y) ** 2)

    g = hd.grad(loss)(params)
    return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, g)]


def jax_step(params, x, y):
    import jax
    import jax.numpy as jnp

    def loss(params):
        h = x
        for k, (w, b) in enumerate(params):
            h = h @ w + b
            if k < len(params) - 1:
                h = jnp.tanh(h)
        return jnp.mean((h - y) ** 2)

    g = jax.grad(loss)(params)
    return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, g)]


def measure(r: int, repeats: int = 20) -> dict:
    """One row: hlodsl and jax on the first ``r`` devices."""
    import time

    import jax
    from jax.sharding import NamedSharding as JNS, PartitionSpec as JP

    import hlodsl as hd
    from hlodsl import runtime

    params, (x, y) = _params(), _data(r)
    mesh = hd.make_mesh((r,), ("batch",))
    rep, batch = hd.NamedSharding(mesh, hd.P()), hd.NamedSharding(mesh, hd.P("batch"))
    p_sh = [(rep, rep) for _ in params]
    step = hd.compile(hd_step, in_shardings=(p_sh, batch, batch), out_shardings=p_sh)
    entry = step.entry(params, x, y)
    hlo = entry.exe.optimized_hlo()
    cost = runtime.cost_analysis(entry.exe)

    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:r]), ("batch",))
    jrep, jbatch = JNS(jmesh, JP()), JNS(jmesh, JP("batch"))
    jp_sh = [(jrep, jrep) for _ in params]
    jstep = jax.jit(jax_step, in_shardings=(jp_sh, jbatch, jbatch), out_shardings=jp_sh)
    jcompiled = jstep.lower(params, x, y).compile()
    jhlo = jcompiled.as_text()
    jcost = jcompiled.cost_analysis()
    jcost = jcost[0] if isinstance(jcost, list) else jcost

    hp = [(hd.device_put(w, rep), hd.device_put(b, rep)) for w, b in params]
    hx, hy = hd.device_put(x, batch), hd.device_put(y, batch)
    jpar = jax.device_put(params, jp_sh)
    jx, jy = jax.device_put(x, jbatch), jax.device_put(y, jbatch)
    times = {"hlodsl": [], "jax": []}
    for _ in range(repeats):  # interleaved
        t = time.perf_counter()
        out = step(hp, hx, hy)
        np.asarray(out[-1][1])
        times["hlodsl"].append(time.perf_counter() - t)
        t = time.perf_counter()
        jout = jstep(jpar, jx, jy)
        jax.block_until_ready(jout)
        times["jax"].append(time.perf_counter() - t)
    ncoll, nbytes = collective_bytes(hlo)
    jcoll, jbytes = collective_bytes(jhlo)
    return {"R": r, "flops": cost.get("flops", float("nan")),
            "jax_flops": jcost.get("flops", float("nan")),
            "bytes_comm": nbytes, "jax_bytes_comm": jbytes,
            "collectives": ncoll, "jax_collectives": jcoll,
            "instructions": _instructions(hlo), "jax_instructions": _instructions(jhlo),
            "time_s": float(np.median(times["hlodsl"])),
            "jax_time_s": float(np.median(times["jax"]))}


def run(quick: bool = False) -> list[dict]:
    from hlodsl import runtime

    rs = [r for r in (1, 2, 4, 8) if r <= runtime.device_count()]
    return [measure(r, repeats=3 if quick else 30) for r in rs]


def table(rows: list[dict]) -> str:
    head = ("| R | FLOPs/device hlodsl | jax | bytes communicated/step hlodsl | jax | "
            "collectives hlodsl | jax | instructions hlodsl | jax | step ms hlodsl | jax | "
            "hlodsl/jax |\n|" + "---|" * 12)
    lines = [head]
    for r in rows:
        lines.append(
            f"| {r['R']} | {r['flops']:.4g} | {r['jax_flops']:.4g} | {r['bytes_comm']} | "
            f"{r['jax_bytes_comm']} | {r['collectives']} | {r['jax_collectives']} | "
            f"{r['instructions']} | {r['jax_instructions']} | {r['time_s'] * 1e3:.2f} | "
            f"{r['jax_time_s'] * 1e3:.2f} | {r['time_s'] / r['jax_time_s']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    quick = "--quick" in sys.argv[1:]
    from benchmarks.report import machine  # noqa: E402

    print(f"Machine: {machine()}\n")
    print(table(run(quick)))
