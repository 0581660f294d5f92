"""Linear algebra through LAPACK (issue 19): ``xp.linalg`` compiled, against numpy.linalg.

det, solve (one right-hand side), inv, eigh and svd of a random float64
matrix, n = 500 and n = 8, each one compiled function (``hd.compile``) timed
interleaved with numpy's call on the same matrix; the hlodsl statement
includes handing the result back as a numpy array, as numpy's does. On CPU
both sides end in LAPACK (numpy's bundled OpenBLAS; jaxlib's kernels call
scipy's), so the ratio measures hlodsl's overhead around the kernel: the
copies into column-major order, XLA's dispatch and the result transfer.
The goal for det/solve/inv at n = 500 is a ratio within 1.5.

``python -m benchmarks.linalg [--quick]`` prints these rows alone;
``python -m benchmarks`` includes them.
"""

from __future__ import annotations

import numpy as np

from .foundation import row
from .timing import Settings, compare

__all__ = ["ALL"]

SECTION = "12. linalg through LAPACK"


def _symmetric(rng, n: int) -> np.ndarray:
    m = rng.standard_normal((n, n))
    return m + m.T


def _cases(n: int):
    """(name, hlodsl function, numpy statement, input builder) per case."""
    import hlodsl.stdlib as xp

    la = xp.linalg
    return [
        # Scaled by 1/sqrt(n): the determinant of a 500 x 500 standard normal overflows.
        ("det", la.det, "np.linalg.det(a)", lambda rng: rng.standard_normal((n, n)) / n ** 0.5),
        ("solve", la.solve, "np.linalg.solve(a, b)", lambda rng: rng.standard_normal((n, n))),
        ("inv", la.inv, "np.linalg.inv(a)", lambda rng: rng.standard_normal((n, n))),
        ("eigh", la.eigh, "np.linalg.eigh(a)", lambda rng: _symmetric(rng, n)),
        ("svd", lambda a: la.svd(a, full_matrices=False),
         "np.linalg.svd(a, full_matrices=False)", lambda rng: rng.standard_normal((n, n))),
    ]


def _to_numpy(out):
    return [np.asarray(x) for x in out] if isinstance(out, tuple) else np.asarray(out)


def _heavy(cfg: Settings) -> Settings:
    """``cfg`` with few warm-up calls and repeats: one n = 500 SVD takes ~0.1 s."""
    heavy = Settings(cfg.quick)
    heavy.warmup, heavy.repeat = min(cfg.warmup, 3), min(cfg.repeat, 11)
    return heavy


def linalg(cfg: Settings) -> list[dict]:
    import hlodsl as hd

    rows = []
    for n in (8, 500):
        n_cfg = cfg if n < 100 else _heavy(cfg)
        rng = np.random.default_rng(n)
        b = rng.standard_normal(n)
        for name, fn, peer, make in _cases(n):
            a = make(rng)
            f = hd.compile(fn if name != "solve" else (lambda a, b, fn=fn: fn(a, b)))
            ha, hb = hd.array(a), hd.array(b)
            args = (ha, hb) if name == "solve" else (ha,)
            ours = "to_numpy(f(ha, hb))" if name == "solve" else "to_numpy(f(ha))"
            _to_numpy(f(*args))  # compile outside the timed loops
            t = compare({"ours": ours, "peer": peer},
                        {"f": f, "ha": ha, "hb": hb, "a": a, "b": b, "np": np,
                         "to_numpy": _to_numpy}, n_cfg)
            unit = "ms" if n >= 100 else "µs"
            rows.append(row(SECTION, f"{name} {n}x{n} f64", "hd.compile (LAPACK)", t["ours"],
                            "numpy.linalg", t["peer"], unit=unit))
    return rows


ALL = (linalg,)


if __name__ == "__main__":
    import sys

    from .report import machine, table
    from .timing import settings

    cfg = settings("--quick" in sys.argv[1:])
    print(f"Machine: {machine()}\n")
    print(table([r for case in ALL for r in case(cfg)]))
