"""A numpy-style workload written once against the array API, run three ways.

Pairwise squared distances of 1000 points in 64 dimensions, a row softmax of
their negatives (an attention-like kernel), then a matmul chain with a
1000x1000 matrix: written with the array-API functions of the namespace it
is given, and run as ``hd.compile`` of ``hlodsl.stdlib``, ``jax.jit`` of
``jax.numpy`` and plain ``numpy`` (eager, float32 throughout).
"""

from __future__ import annotations

import numpy as np

from .foundation import row
from .timing import Settings, compare

__all__ = ["workload", "ALL"]

N, D = 1000, 64


def kernel(x, v, M, xp):
    """softmax(-|x_i - x_j|^2) @ v, then two products with M: one array-API program."""
    sq = xp.sum(x * x, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * (x @ xp.matrix_transpose(x))
    logits = -d2
    logits = logits - xp.max(logits, axis=1, keepdims=True)
    w = xp.exp(logits)
    w = w / xp.sum(w, axis=1, keepdims=True)
    return (w @ M) @ (M @ v)


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((N, D)) * 0.1).astype(np.float32)
    v = rng.standard_normal((N, D)).astype(np.float32)
    M = (rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float32)
    return x, v, M


def workload(cfg: Settings) -> list[dict]:
    import jax
    import jax.numpy as jnp

    import hlodsl as hd
    import hlodsl.stdlib as xp

    x, v, M = _data()

    class NumpyNamespace:  # numpy spells matrix_transpose as .T
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def matrix_transpose(a):
            return np.swapaxes(a, -1, -2)

    ns = {
        "f": hd.compile(lambda x, v, M: kernel(x, v, M, xp)),
        "jf": jax.jit(lambda x, v, M: kernel(x, v, M, jnp)),
        "nf": lambda x, v, M: kernel(x, v, M, NumpyNamespace()),
        "a": tuple(hd.array(t) for t in (x, v, M)),
        "ja": tuple(jax.device_put(t) for t in (x, v, M)),
        "na": (x, v, M),
    }
    ours = np.asarray(ns["f"](*ns["a"]))
    np.testing.assert_allclose(ours, np.asarray(ns["jf"](*ns["ja"])), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(ours, ns["nf"](*ns["na"]), rtol=2e-3, atol=2e-3)
    # Two separate comparisons: numpy's BLAS threads keep spinning for a while
    # after a matmul, and on 2 cores they slowed whichever XLA run came next
    # (measured: hlodsl/jax 1.22-1.53 when numpy ran in the same interleaving,
    # 1.04 without it).
    ours = "f(*a)._buf.block_until_ready()"
    t = compare({"ours": ours, "jax": "jf(*ja).block_until_ready()"}, ns, cfg)
    u = compare({"ours": ours, "numpy": "nf(*na)"}, ns, cfg)
    case = f"pairwise distances + softmax + matmul chain, {N}x{N} f32"
    return [row("7. numpy workload", case, "hd.compile(stdlib)", t["ours"],
                "jax.jit(jax.numpy)", t["jax"], unit="ms"),
            row("7. numpy workload", case, "hd.compile(stdlib)", u["ours"],
                "numpy (eager)", u["numpy"], unit="ms")]


ALL = (workload,)
