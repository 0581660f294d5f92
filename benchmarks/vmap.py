"""Batching benchmarks: ``hd.vmap`` against ``jax.vmap``, and staging time of nested loops.

1. ``per_example_gradients``: the gradient of a 784-512-512-10 MLP's loss for
   each of 128 examples, ``hd.compile(hd.vmap(hd.grad(loss), in_axes=(None, 0, 0)))``
   against ``jax.jit(jax.vmap(jax.grad(loss), ...))``, per call; and the
   instruction counts of both optimised modules (and whether either loops over
   the batch).
2. ``batched_newton``: a 100-step ``fori_loop`` Newton iteration for sqrt, run
   on 1000 problems at once through vmap, against jax.
3. ``nested_staging``: staging + compiling ``fori_loop``s nested 1 to 5 deep,
   one table row per depth: with each body staged once, the time grows
   linearly with depth (it doubled per level when bodies were staged twice).

``python -m benchmarks.vmap [--quick]`` prints these rows alone.
"""

from __future__ import annotations

import re
import time

import numpy as np

from .foundation import row
from .timing import Settings, compare

__all__ = ["per_example_gradients", "batched_newton", "nested_staging", "ALL"]

SECTION = "9. batching (vmap)"
SIZES = (784, 512, 512, 10)
BATCH = 128
PROBLEMS = 1000
NEWTON_STEPS = 100


def _mlp_params(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((a, b)).astype(np.float32) * np.float32(1 / np.sqrt(a)),
             np.zeros(b, np.float32)) for a, b in zip(SIZES, SIZES[1:])]


def loss_hd(params, x, y):
    import hlodsl.stdlib as xp

    h = x
    for k, (w, b) in enumerate(params):
        h = h @ w + b
        if k < len(params) - 1:
            h = xp.tanh(h)
    return xp.sum((h - y) ** 2)


def loss_jax(params, x, y):
    import jax.numpy as jnp

    h = x
    for k, (w, b) in enumerate(params):
        h = h @ w + b
        if k < len(params) - 1:
            h = jnp.tanh(h)
    return jnp.sum((h - y) ** 2)


def _instructions(text: str) -> int:
    """Instructions of the optimised module's entry computation and everything it calls."""
    return sum(1 for line in text.splitlines() if re.match(r"\s+(ROOT )?\S+ = ", line))


def per_example_gradients(cfg: Settings) -> list[dict]:
    import jax

    import hlodsl as hd

    params = _mlp_params()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.standard_normal((BATCH, SIZES[-1])).astype(np.float32)
    hp = [(hd.array(w), hd.array(b)) for w, b in params]
    jp = jax.device_put(params)
    ours = hd.compile(hd.vmap(hd.grad(loss_hd), in_axes=(None, 0, 0)))
    peer = jax.jit(jax.vmap(jax.grad(loss_jax), in_axes=(None, 0, 0)))
    hx, hy, jx, jy = hd.array(x), hd.array(y), jax.device_put(x), jax.device_put(y)
    got, want = ours(hp, hx, hy), peer(jp, jx, jy)
    for g, w in zip(hd.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-4)
    ns = {"ours": ours, "peer": peer, "hp": hp, "hx": hx, "hy": hy, "jp": jp, "jx": jx,
          "jy": jy, "hd": hd, "jax": jax}
    t = compare({"ours": "hd.tree_leaves(ours(hp, hx, hy))[-1]._buf.block_until_ready()",
                 "peer": "jax.block_until_ready(peer(jp, jx, jy))"}, ns, cfg)
    ours_text = hd.code_hlo(ours, hp, hx, hy, optimize=True)
    from hlodsl import runtime

    peer_text = peer.lower(jp, jx, jy).compile(
        compiler_options=runtime.compiler_options()).as_text()
    n_ours, n_peer = _instructions(ours_text), _instructions(peer_text)
    loops = f"while loops: ours {ours_text.count(' while(')}, jax {peer_text.count(' while(')}"
    case = f"per-example gradients, MLP {'-'.join(map(str, SIZES))}, batch {BATCH}"
    return [row(SECTION, f"{case}, per call", "hd.compile(hd.vmap(hd.grad(loss)))", t["ours"],
                "jax.jit(jax.vmap(jax.grad(loss)))", t["peer"], unit="ms"),
            row(SECTION, f"{case}, optimised HLO instructions ({loops})", "hlodsl", n_ours,
                "jax (same XLA options)", n_peer, unit="count")]


def newton_hd(a):
    import hlodsl as hd

    return hd.fori_loop(0, NEWTON_STEPS, lambda i, x: 0.5 * (x + a / x), a)


def newton_jax(a):
    from jax import lax

    return lax.fori_loop(0, NEWTON_STEPS, lambda i, x: 0.5 * (x + a / x), a)


def batched_newton(cfg: Settings) -> list[dict]:
    import jax

    import hlodsl as hd

    a = np.linspace(1, 1000, PROBLEMS, dtype=np.float32)
    ours, peer = hd.compile(hd.vmap(newton_hd)), jax.jit(jax.vmap(newton_jax))
    ha, ja = hd.array(a), jax.device_put(a)
    np.testing.assert_allclose(np.asarray(ours(ha)), np.asarray(peer(ja)), rtol=1e-6)
    ns = {"ours": ours, "peer": peer, "ha": ha, "ja": ja}
    t = compare({"ours": "ours(ha)._buf.block_until_ready()",
                 "peer": "peer(ja).block_until_ready()"}, ns, cfg)
    return [row(SECTION, f"vmap of a {NEWTON_STEPS}-step fori_loop Newton sqrt, "
                f"{PROBLEMS} problems", "hd.compile(hd.vmap(f))", t["ours"],
                "jax.jit(jax.vmap(f))", t["peer"], unit="ms")]


def _nested(depth: int):
    import hlodsl as hd

    def program(x):
        def body(i, acc):
            return acc * 0.5 + 1.0

        for _ in range(depth - 1):
            body = (lambda inner: lambda i, acc: hd.fori_loop(0, 3, inner, acc))(body)
        return hd.fori_loop(0, 3, body, x)

    return program


def nested_staging(cfg: Settings) -> list[dict]:
    """Staging (and, for comparison, staging + compiling) nested loops, by depth."""
    import hlodsl as hd
    from hlodsl.ir import staging

    x = hd.array(np.float32([1, 2]))
    rows = []
    repeat = 3 if cfg.quick else 9
    for depth in range(1, 6):
        stage_s, total_s = [], []
        for _ in range(repeat):
            fn = _nested(depth)
            start = time.perf_counter()
            staging.stage(fn, (x,), {})
            stage_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            hd.compile(fn)(x)
            total_s.append(time.perf_counter() - start)
        rows.append(row(SECTION, f"staging fori_loops nested {depth} deep (stage only; "
                        "ratio: staging + compile over staging)", "stage", np.median(stage_s),
                        "stage + XLA compile", np.median(total_s), unit="ms"))
    return rows


ALL = (per_example_gradients, batched_newton, nested_staging)


def main(argv=None) -> None:
    from .report import main_of

    main_of("python -m benchmarks.vmap", __doc__, ALL, argv)


if __name__ == "__main__":
    main()
