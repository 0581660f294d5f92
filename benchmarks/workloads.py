"""Held-out workloads (issue 16): programs written fresh, not tuned for, against peers.

1. ``transformer``: one training step of a transformer block (batch 8, 128 tokens,
   width 256, 8 heads, MLP 1024, Adam), hlodsl against ``jax.jit``: time per step
   and XLA's temporary memory of each compiled step.
2. ``lstm``: an LSTM (hidden 256, batch 32, 50 steps) forward and backward through
   ``scan``, against ``jax.lax.scan`` under ``jax.jit``.
3. ``knn``: the 10 nearest of 200 000 points (dim 32) for 2 000 queries, exact, with
   ``ops.TopK(largest=False)``, against ``jax.lax.top_k`` and faiss-cpu's
   ``IndexFlatL2`` (when installed: the ``bench`` extra).
4. ``eager_loop``: 1 000 eager ops with Python-scalar operands
   (``x = x * 0.99 + 0.01``), against jax eager.
5. ``eager_sweep``: 20 distinct stdlib functions called eagerly (warm), total,
   against jax.numpy's.
6. ``gemm``: a 2048 x 2048 f32 product compiled, against numpy's (OpenBLAS), in
   GFLOP/s terms (time per product).

``python -m benchmarks.workloads [--quick]`` prints these rows alone;
``python -m benchmarks`` includes them.
"""

from __future__ import annotations

import numpy as np

from .foundation import row
from .timing import Settings, compare

__all__ = ["ALL"]

SECTION = "11. held-out workloads"


# -- 1. transformer block training step ------------------------------------------------

B, T, D, H, F = 8, 128, 256, 8, 1024


def _block_params(seed=0, d=D, f=F):
    """The block's weights at width ``d`` and MLP width ``f`` (benchmarks/gpu.py: larger)."""
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    return {"wq": w(d, d), "wk": w(d, d), "wv": w(d, d), "wo": w(d, d),
            "w1": w(d, f), "w2": w(f, d), "g1": np.ones(d, np.float32),
            "g2": np.ones(d, np.float32)}


def _block(xp, p, x, heads=H):
    """The block on ``x`` of shape (batch, tokens, width), its sizes read from ``x``."""
    b, t, d = x.shape
    def norm(h, g):
        mu = xp.mean(h, axis=-1, keepdims=True)
        var = xp.mean((h - mu) ** 2, axis=-1, keepdims=True)
        return (h - mu) / xp.sqrt(var + 1e-5) * g

    h = norm(x, p["g1"])
    q, k, v = (xp.reshape(h @ p[n], (b, t, heads, d // heads)) for n in ("wq", "wk", "wv"))
    q, k, v = (xp.permute_dims(a, (0, 2, 1, 3)) for a in (q, k, v))
    s = q @ xp.permute_dims(k, (0, 1, 3, 2)) / np.float32(np.sqrt(d // heads))
    s = s - xp.max(s, axis=-1, keepdims=True)
    a = xp.exp(s)
    a = a / xp.sum(a, axis=-1, keepdims=True)
    o = xp.reshape(xp.permute_dims(a @ v, (0, 2, 1, 3)), (b, t, d))
    x = x + o @ p["wo"]
    h = norm(x, p["g2"])
    return x + xp.maximum(h @ p["w1"], 0) @ p["w2"]


def _adam(xp, grad, p, g, m, v, t):
    lr, b1, b2 = 1e-3, 0.9, 0.999
    m = {k: b1 * m[k] + (1 - b1) * g[k] for k in p}
    v = {k: b2 * v[k] + (1 - b2) * g[k] * g[k] for k in p}
    p = {k: p[k] - lr * (m[k] / (1 - b1 ** t)) / (xp.sqrt(v[k] / (1 - b2 ** t)) + 1e-8)
         for k in p}
    return p, m, v


def _block_step(xp, grad, heads=H):
    """One Adam step of the block on the loss ``mean(block(x) ** 2)``, written with ``xp``
    (``hlodsl.stdlib`` or ``jax.numpy``) and its ``grad`` (``hd.grad`` or ``jax.grad``)."""
    def step(p, m, v, x):
        g = grad(lambda p: xp.mean(_block(xp, p, x, heads) ** 2))(p)
        return _adam(xp, None, p, g, m, v, 1)

    return step


def transformer(cfg: Settings) -> list[dict]:
    import jax
    import jax.numpy as jnp

    import hlodsl as hd
    import hlodsl.stdlib as xp

    params = _block_params()
    x = np.random.default_rng(1).standard_normal((B, T, D)).astype(np.float32)

    step_hd, step_jax = _block_step(xp, hd.grad), _block_step(jnp, jax.grad)

    zeros = {k: np.zeros_like(a) for k, a in params.items()}
    hp = {k: hd.array(a) for k, a in params.items()}
    hz = {k: hd.array(a) for k, a in zeros.items()}
    jp = {k: jax.device_put(a) for k, a in params.items()}
    jz = {k: jax.device_put(a) for k, a in zeros.items()}
    hx, jx = hd.array(x), jax.device_put(x)
    f, jf = hd.compile(step_hd), jax.jit(step_jax)
    ours, theirs = f(hp, hz, hz, hx)[0], jf(jp, jz, jz, jx)[0]
    for k in params:  # Adam's first step moves each weight by about lr = 1e-3 whatever the
        # gradient's size: rounding in a tiny gradient shows at 1e-5 of that step.
        np.testing.assert_allclose(np.asarray(ours[k]), np.asarray(theirs[k]), rtol=2e-4,
                                   atol=1e-5)
    ns = {"f": f, "jf": jf, "hp": hp, "hz": hz, "hx": hx, "jp": jp, "jz": jz, "jx": jx,
          "jax": jax}
    t = compare({"ours": "np.asarray(f(hp, hz, hz, hx)[0]['w2'])",
                 "peer": "jax.block_until_ready(jf(jp, jz, jz, jx))"}, {**ns, "np": np}, cfg)
    ours_mem = f.memory_stats(hp, hz, hz, hx)["temp_size_in_bytes"]
    peer_mem = jf.lower(jp, jz, jz, jx).compile().memory_analysis().temp_size_in_bytes
    case = f"transformer block step B{B} T{T} D{D} {H} heads, Adam"
    return [row(SECTION, case, "hd.compile", t["ours"], "jax.jit", t["peer"], unit="ms"),
            row(SECTION, f"{case}: XLA temp bytes", "hd.compile", ours_mem, "jax.jit",
                peer_mem, unit="bytes")]


# -- 2. LSTM forward and backward through scan ----------------------------------------

HID, BATCH, STEPS, IN = 256, 32, 50, 64


def _lstm_loss(xp, scan, p, xs):
    """Mean square of the hidden states over ``xs`` (steps, batch, input); sizes from ``p``."""
    hid, batch = p["wh"].shape[0], xs.shape[1]

    def cell(carry, x):
        h, c = carry
        z = x @ p["wx"] + h @ p["wh"] + p["b"]
        i, f, g, o = (z[:, k * hid:(k + 1) * hid] for k in range(4))
        sig = lambda a: 1 / (1 + xp.exp(-a))  # noqa: E731
        c = sig(f) * c + sig(i) * xp.tanh(g)
        h = sig(o) * xp.tanh(c)
        return (h, c), h

    zero = xp.zeros((batch, hid), dtype=xp.float32)
    _, hs = scan(cell, (zero, zero), xs)
    return xp.mean(hs ** 2)


def lstm_setup(steps: int, batch: int, hid: int, inp: int, scale=lambda n: 1 / np.sqrt(n)):
    """The LSTM gradient's compiled pair and inputs: ``(f, jf, (hp, hx), (jp, jx))``;
    weights drawn with standard deviation ``scale(fan_in)``."""
    import jax
    import jax.numpy as jnp

    import hlodsl as hd
    import hlodsl.stdlib as xp

    rng = np.random.default_rng(3)
    p = {"wx": (rng.standard_normal((inp, 4 * hid)) * scale(inp)).astype(np.float32),
         "wh": (rng.standard_normal((hid, 4 * hid)) * scale(hid)).astype(np.float32),
         "b": np.zeros(4 * hid, np.float32)}
    xs = rng.standard_normal((steps, batch, inp)).astype(np.float32)
    f = hd.compile(hd.grad(lambda p, xs: _lstm_loss(xp, hd.scan, p, xs)))
    jf = jax.jit(jax.grad(lambda p, xs: _lstm_loss(jnp, jax.lax.scan, p, xs)))
    hp, jp = {k: hd.array(v) for k, v in p.items()}, {k: jax.device_put(v) for k, v in p.items()}
    return f, jf, (hp, hd.array(xs)), (jp, jax.device_put(xs))


def lstm(cfg: Settings) -> list[dict]:
    import jax

    f, jf, (hp, hx), (jp, jx) = lstm_setup(STEPS, BATCH, HID, IN, scale=lambda n: 0.1)
    np.testing.assert_allclose(np.asarray(f(hp, hx)["wh"]), np.asarray(jf(jp, jx)["wh"]),
                               rtol=1e-3, atol=1e-7)
    t = compare({"ours": "np.asarray(f(hp, hx)['wh'])",
                 "peer": "jax.block_until_ready(jf(jp, jx))"},
                {"f": f, "jf": jf, "hp": hp, "hx": hx, "jp": jp, "jx": jx, "jax": jax,
                 "np": np}, cfg)
    return [row(SECTION, f"LSTM {HID} hidden, batch {BATCH}, {STEPS} steps: forward + backward",
                "hd.compile(hd.grad)", t["ours"], "jax.jit(jax.grad)", t["peer"], unit="ms")]


# -- 3. exact kNN -----------------------------------------------------------------------

def knn(cfg: Settings) -> list[dict]:
    import jax

    import hlodsl as hd
    import hlodsl.stdlib as xp

    nq, n, d, k = (200, 20000, 32, 10) if cfg.quick else (2000, 200000, 32, 10)
    rng = np.random.default_rng(4)
    q = rng.standard_normal((nq, d)).astype(np.float32)
    pts = rng.standard_normal((n, d)).astype(np.float32)

    def ours(q, pts):
        dist = (xp.sum(q * q, axis=1)[:, None] - 2 * (q @ xp.matrix_transpose(pts))
                + xp.sum(pts * pts, axis=1)[None, :])
        return hd.ops.TopK(k, largest=False)(dist)[1]

    def peer(q, pts):
        import jax.numpy as jnp

        dist = (jnp.sum(q * q, axis=1)[:, None] - 2 * (q @ pts.T)
                + jnp.sum(pts * pts, axis=1)[None, :])
        return jax.lax.top_k(-dist, k)[1]

    f, jf = hd.compile(ours), jax.jit(peer)
    if not cfg.quick:  # seconds per call: 5 interleaved repeats are enough
        cfg = Settings(False)
        cfg.repeat, cfg.warmup = 5, 1
    hq, hpts, jq, jpts = hd.array(q), hd.array(pts), jax.device_put(q), jax.device_put(pts)
    a, b = np.asarray(f(hq, hpts)), np.asarray(jf(jq, jpts))
    assert np.mean(a == b) > 0.99  # near-ties may swap neighbours
    ns = {"f": f, "jf": jf, "hq": hq, "hp": hpts, "jq": jq, "jp": jpts, "np": np, "jax": jax}
    t = compare({"ours": "np.asarray(f(hq, hp))", "peer": "jax.block_until_ready(jf(jq, jp))"},
                ns, cfg)
    case = f"kNN {nq} queries x {n} points, dim {d}, k {k}"
    rows = [row(SECTION, case, "hd.compile + TopK(largest=False)", t["ours"], "jax.lax.top_k",
                t["peer"], unit="ms")]
    try:
        import faiss
    except ImportError:
        return rows
    index = faiss.IndexFlatL2(d)
    index.add(pts)
    ns.update(index=index, q=q, k=k)
    t = compare({"ours": "np.asarray(f(hq, hp))", "peer": "index.search(q, k)"}, ns, cfg)
    rows.append(row(SECTION, case, "hd.compile + TopK(largest=False)", t["ours"],
                    "faiss IndexFlatL2", t["peer"], unit="ms"))
    return rows


# -- 4, 5. eager loops and an eager sweep ----------------------------------------------

def eager_loop(cfg: Settings) -> list[dict]:
    import jax.numpy as jnp

    import hlodsl as hd

    n = 100 if cfg.quick else 1000
    x0 = np.linspace(0, 1, 256, dtype=np.float32)

    def ours():
        x = hd.array(x0)
        for _ in range(n):
            x = x * 0.99 + 0.01
        return np.asarray(x)

    def peer():
        x = jnp.asarray(x0)
        for _ in range(n):
            x = x * 0.99 + 0.01
        return np.asarray(x)

    np.testing.assert_allclose(ours(), peer(), rtol=1e-5)
    t = compare({"ours": "ours()", "peer": "peer()"}, {"ours": ours, "peer": peer}, cfg)
    return [row(SECTION, f"eager loop: {n} x (x * 0.99 + 0.01), 256 f32", "hlodsl eager",
                t["ours"], "jax eager", t["peer"], unit="ms")]


_SWEEP = ("floor_divide", "hypot", "signbit", "remainder", "logaddexp", "copysign",
          "expm1", "log1p", "trunc", "round", "sign", "square", "sinh", "cosh", "tanh",
          "atan2", "minimum", "maximum", "sqrt", "abs")


def eager_sweep(cfg: Settings) -> list[dict]:
    import jax.numpy as jnp

    import hlodsl.stdlib as xp

    a_np = np.float32([1.5, -2.5, 3.25, 0.5])
    b_np = np.float32([0.5, 2.0, -1.0, 4.0])
    import hlodsl as hd

    a, b = hd.array(a_np), hd.array(b_np)
    ja, jb = jnp.asarray(a_np), jnp.asarray(b_np)
    calls_ours, calls_peer = [], []
    for name in _SWEEP:
        f, g = getattr(xp, name), getattr(jnp, name)
        two = name in ("floor_divide", "hypot", "remainder", "logaddexp", "copysign", "atan2",
                       "minimum", "maximum")
        calls_ours.append((f, (a, b) if two else (a,)))
        calls_peer.append((g, (ja, jb) if two else (ja,)))
        np.testing.assert_allclose(np.asarray(f(*calls_ours[-1][1])),
                                   np.asarray(g(*calls_peer[-1][1])), rtol=1e-6)

    def ours():
        for f, args in calls_ours:
            f(*args)

    def peer():
        for f, args in calls_peer:
            f(*args).block_until_ready()

    t = compare({"ours": "ours()", "peer": "peer()"}, {"ours": ours, "peer": peer}, cfg)
    return [row(SECTION, f"eager sweep: {len(_SWEEP)} stdlib functions, warm, total",
                "hlodsl eager", t["ours"], "jax.numpy eager", t["peer"], unit="ms")]


# -- 6. GEMM against numpy ---------------------------------------------------------------

def gemm(cfg: Settings) -> list[dict]:
    import hlodsl as hd

    n = 512 if cfg.quick else 2048
    rng = np.random.default_rng(5)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    f = hd.compile(lambda a, b: a @ b)
    ha, hb = hd.array(a), hd.array(b)
    np.testing.assert_allclose(np.asarray(f(ha, hb)), a @ b, rtol=1e-3, atol=1e-2)
    t = compare({"ours": "np.asarray(f(ha, hb))", "peer": "a @ b"},
                {"f": f, "ha": ha, "hb": hb, "a": a, "b": b, "np": np}, cfg)
    gflops = 2 * n ** 3 / 1e9
    return [row(SECTION, f"GEMM {n}x{n} f32 ({gflops / t['ours']:.0f} against "
                         f"{gflops / t['peer']:.0f} GFLOP/s)", "hd.compile", t["ours"],
                "numpy (OpenBLAS)", t["peer"], unit="ms")]


ALL = (transformer, lstm, knn, eager_loop, eager_sweep, gemm)


if __name__ == "__main__":
    import sys

    from .report import machine, table
    from .timing import settings

    cfg = settings("--quick" in sys.argv[1:])
    print(f"Machine: {machine()}\n")
    print(table([r for case in ALL for r in case(cfg)]))
