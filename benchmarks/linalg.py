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
``python -m benchmarks`` includes them. ``python -m benchmarks.linalg
--kernels hlo [--quick]`` times the HLO fallback instead (Jacobi eigh and
SVD, Householder QR: what a backend without LAPACK runs), staged with
``hlodsl.config.linalg_kernels = "hlo"``, against the LAPACK path and numpy
at n = 50 and 200, with the Jacobi sweeps each needed.
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


def _sweeps(name: str, a: np.ndarray) -> float:
    """Jacobi sweeps (rounds / (n - 1)) the fallback's loop runs on ``a``."""
    from hlodsl.stdlib import jacobi

    import hlodsl as hd

    n = a.shape[-1]
    loop = jacobi._eigh_loop if name == "eigh" else jacobi._svd_loop
    rounds = hd.compile(lambda x: loop(x, True)[2])(hd.array(a))
    return int(np.asarray(rounds)) / (n - 1)


def linalg_fallback(cfg: Settings) -> list[dict]:
    """eigh, svd (reduced) and qr of float64 n x n: the HLO fallback, LAPACK and numpy."""
    import hlodsl.stdlib as xp

    import hlodsl as hd

    la, rows, old = xp.linalg, [], hd.config.linalg_kernels
    cases = [("eigh", la.eigh, "np.linalg.eigh(a)", _symmetric),
             ("svd", lambda a: la.svd(a, full_matrices=False),
              "np.linalg.svd(a, full_matrices=False)", lambda rng, n: rng.standard_normal((n, n))),
             ("qr", la.qr, "np.linalg.qr(a)", lambda rng, n: rng.standard_normal((n, n)))]
    try:
        for n in (50, 200):
            rng = np.random.default_rng(n)
            for name, fn, peer, make in cases:
                a = make(rng, n)
                ha = hd.array(a)
                # The switch is read when a function is staged: each compiles under its own.
                hd.config.linalg_kernels = "hlo"
                f_hlo = hd.compile(fn)
                _to_numpy(f_hlo(ha))
                hd.config.linalg_kernels = "auto"
                f_lapack = hd.compile(fn)
                _to_numpy(f_lapack(ha))
                t = compare({"hlo": "to_numpy(f_hlo(ha))", "lapack": "to_numpy(f_lapack(ha))",
                             "peer": peer},
                            {"f_hlo": f_hlo, "f_lapack": f_lapack, "ha": ha, "a": a, "np": np,
                             "to_numpy": _to_numpy}, _heavy(cfg))
                note = f"{name} {n}x{n}: LAPACK path {t['lapack'] * 1e3:.3g} ms"
                if name != "qr":
                    note += f"; {_sweeps(name, a):.1f} sweeps"
                rows.append(row("12b. linalg HLO fallback", f"{name} {n}x{n} f64",
                                "hd.compile (HLO loops)", t["hlo"], "numpy.linalg", t["peer"],
                                unit="ms", note=note))
    finally:
        hd.config.linalg_kernels = old
    return rows


FALLBACK = (linalg_fallback,)


if __name__ == "__main__":
    import sys

    from .report import machine, table
    from .timing import settings

    argv = sys.argv[1:]
    cfg = settings("--quick" in argv)
    hlo = "--kernels" in argv and argv[argv.index("--kernels") + 1:][:1] == ["hlo"]
    print(f"Machine: {machine()}\n")
    print(table([r for case in (FALLBACK if hlo else ALL) for r in case(cfg)]))
