"""The special functions (``xp.special``) against ``jax.jit`` of ``jax.scipy.special``.

``python -m benchmarks.special_functions [n]`` prints a Markdown table: the best
of five calls of each compiled function on ``n`` elements (default 10**6) of f32
and f64, hlodsl's time, jax's and the ratio. Both run on the same CPU in this
process; jax expands the same CHLO functions with XLA's own decompositions.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def _best(f, *args, repeats: int = 5) -> float:
    np.asarray(f(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.asarray(f(*args))
        times.append(time.perf_counter() - start)
    return min(times)


def rows(n: int = 10**6) -> list[tuple[str, str, float, float]]:
    """(function, dtype, hlodsl seconds, jax seconds) for every function and dtype."""
    import hlodsl.stdlib as xp
    import jax
    import jax.numpy as jnp
    import jax.scipy.special as js

    import hlodsl as hd

    cases = [("erfc", xp.special.erfc, js.erfc, 1), ("erfinv", xp.special.erfinv, js.erfinv, 1),
             ("gammaln", xp.special.gammaln, js.gammaln, 1),
             ("digamma", xp.special.digamma, js.digamma, 1), ("i0e", xp.special.i0e, js.i0e, 1),
             ("i1e", xp.special.i1e, js.i1e, 1), ("gammainc", xp.special.gammainc, js.gammainc, 2)]
    rng = np.random.default_rng(0)
    out = []
    for dtype in (np.float32, np.float64):
        x = rng.uniform(0.1, 10, n).astype(dtype)
        a = rng.uniform(0.1, 10, n).astype(dtype)
        for name, ours, theirs, arity in cases:
            args = (x / dtype(10.5),) if name == "erfinv" else (a, x)[2 - arity:]
            mine = _best(hd.compile(ours), *(hd.array(v) for v in args))
            peer = _best(jax.jit(theirs), *(jnp.asarray(v) for v in args))
            out.append((name, np.dtype(dtype).name, mine, peer))
    return out


def table(measured) -> str:
    lines = ["| function | dtype | hlodsl ms | jax.jit ms | ratio |", "|---|---|---|---|---|"]
    for name, dtype, mine, peer in measured:
        lines.append(f"| {name} | {dtype} | {mine * 1e3:.2f} | {peer * 1e3:.2f} | "
                     f"{mine / peer:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(rows(int(sys.argv[1]) if len(sys.argv) > 1 else 10**6)))
