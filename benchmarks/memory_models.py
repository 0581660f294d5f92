"""The five workloads of ``benchmarks/memory.py``, each written naturally in hlodsl and in jax.

Every model is the textbook form, with the large intermediate the memory
passes must remove: the (n, n) kernel, the (queries, points) distances, the
(m, n) cross-covariance, the (seq, seq) attention scores, the (n, n) product.
"""

from __future__ import annotations

import numpy as np

__all__ = ["hd_models", "jax_models", "inputs", "SIZES"]

#: Full sizes (those of the issue) and smaller ones where the naive programs fit; kNN
#: also at ten times the points (``--size large``).
SIZES = {
    "kernel_matvec": {"full": dict(n=100_000, d=3), "fits": dict(n=10_000, d=3)},
    "knn": {"full": dict(q=10_000, p=1_000_000, d=64, k=10),
            "fits": dict(q=500, p=20_000, d=64, k=10),
            # 2.4 GiB of points, 373 GiB of distances: the "under 2 GiB" size.
            "large": dict(q=10_000, p=10_000_000, d=64, k=10)},
    "sgpr": {"full": dict(n=1_000_000, m=2_000, d=3), "fits": dict(n=20_000, m=500, d=3)},
    "attention": {"full": dict(b=1, h=8, s=32_768, e=64), "fits": dict(b=1, h=8, s=4096, e=64)},
    "chain": {"full": dict(n=8192), "fits": dict(n=8192)},
}


def inputs(workload: str, size: dict) -> tuple[np.ndarray, ...]:
    """Deterministic numpy inputs of ``workload`` at ``size``."""
    rng = np.random.default_rng(0)
    f32 = np.float32
    if workload == "kernel_matvec":
        return (rng.normal(size=(size["n"], size["d"])), rng.normal(size=size["n"]),
                np.float64(0.5))
    if workload == "knn":  # drawn in float32: no float64 copy of 10^7 points at the peak
        return (rng.standard_normal((size["q"], size["d"]), dtype=f32),
                rng.standard_normal((size["p"], size["d"]), dtype=f32))
    if workload == "sgpr":
        x = rng.uniform(-3, 3, size=(size["n"], size["d"]))
        y = np.sin(x).sum(1) + 0.1 * rng.normal(size=size["n"])
        z = rng.uniform(-3, 3, size=(size["m"], size["d"]))
        return np.array([1.0, 1.0, 0.1]), x, y, z
    if workload == "attention":
        shape = (size["b"], size["h"], size["s"], size["e"])
        return tuple(rng.normal(size=shape).astype(f32) for _ in range(4))
    if workload == "chain":
        n = size["n"]
        scale = f32(1 / np.sqrt(n))
        return (rng.normal(size=(n, n)).astype(f32) * scale,
                rng.normal(size=(n, n)).astype(f32) * scale, rng.normal(size=n).astype(f32))
    raise ValueError(workload)


def _sgpr_bound(xp, linalg, params, x, y, z):
    """Titsias' collapsed bound (negated), the n-sized work as sums over n."""
    ls, var, noise = params[0], params[1], params[2]
    m, n = z.shape[0], x.shape[0]

    def k(a, b):
        d2 = xp.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)
        return var * xp.exp(-0.5 * d2 / (ls * ls))

    chol = linalg.cholesky(k(z, z) + 1e-6 * xp.eye(m))
    a = linalg.solve_triangular(chol, k(z, x), lower=True) / xp.sqrt(noise)
    aat = a @ a.T
    lb = linalg.cholesky(xp.eye(m) + aat)
    c = linalg.solve_triangular(lb, a @ y, lower=True) / xp.sqrt(noise)
    bound = -0.5 * n * xp.log(2 * np.pi * noise) - xp.sum(xp.log(xp.diagonal(lb)))
    bound = bound - 0.5 * xp.sum(y * y) / noise + 0.5 * xp.sum(c * c)
    return -(bound - 0.5 * n * var / noise + 0.5 * xp.trace(aat))


def hd_models(k: int = 10) -> dict:
    """The workloads as hlodsl functions (uncompiled)."""
    import hlodsl as hd
    import hlodsl.stdlib as xp

    class _Linalg:
        cholesky = staticmethod(xp.linalg.cholesky)

        @staticmethod
        def solve_triangular(a, b, lower):
            return xp.linalg.solve_triangular(a, b, lower=lower)

    class _Xp:
        def __getattr__(self, name):
            return getattr(xp, name)

        diagonal = staticmethod(xp.linalg.diagonal)
        trace = staticmethod(xp.linalg.trace)

    def kernel_matvec(x, v, ls):
        d2 = xp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
        return xp.exp(-d2 / (2 * ls * ls)) @ v

    def knn(q, p):
        d2 = xp.sum((q[:, None, :] - p[None, :, :]) ** 2, axis=-1)
        values, indices = xp.top_k(-d2, k)
        return -values, indices

    def attention(q, k_, v):
        s = q @ xp.matrix_transpose(k_) / np.float32(np.sqrt(q.shape[-1]))
        p = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
        return (p / xp.sum(p, axis=-1, keepdims=True)) @ v

    def sgpr(params, x, y, z):
        return _sgpr_bound(_Xp(), _Linalg, params, x, y, z)

    return {
        "kernel_matvec": kernel_matvec,
        "knn": knn,
        "sgpr": hd.value_and_grad(sgpr, argnums=(0, 3)),
        "attention": hd.grad(lambda q, k_, v, w: xp.sum(attention(q, k_, v) * w),
                             argnums=(0, 1, 2)),
        "chain": lambda a, b, v: a @ b @ v,
    }


def jax_models(k: int = 10) -> dict:
    """The same workloads in jax.numpy (uncompiled; the benchmark jits them)."""
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    class _Linalg:
        cholesky = staticmethod(jnp.linalg.cholesky)

        @staticmethod
        def solve_triangular(a, b, lower):
            return jsl.solve_triangular(a, b, lower=lower)

    def kernel_matvec(x, v, ls):
        d2 = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
        return jnp.exp(-d2 / (2 * ls * ls)) @ v

    def knn(q, p):
        d2 = jnp.sum((q[:, None, :] - p[None, :, :]) ** 2, axis=-1)
        values, indices = jax.lax.top_k(-d2, k)
        return -values, indices

    def attention(q, k_, v):
        s = q @ jnp.swapaxes(k_, -1, -2) / np.float32(np.sqrt(q.shape[-1]))
        p = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
        return (p / jnp.sum(p, axis=-1, keepdims=True)) @ v

    def sgpr(params, x, y, z):
        return _sgpr_bound(jnp, _Linalg, params, x, y, z)

    return {
        "kernel_matvec": kernel_matvec,
        "knn": knn,
        "sgpr": jax.value_and_grad(sgpr, argnums=(0, 3)),
        "attention": jax.grad(lambda q, k_, v, w: jnp.sum(attention(q, k_, v) * w),
                              argnums=(0, 1, 2)),
        "chain": lambda a, b, v: a @ b @ v,
    }
