"""Rendering: the Markdown table of rows, and a description of the machine."""

from __future__ import annotations

import os
import platform

__all__ = ["table", "machine"]

_SCALE = {"µs": 1e6, "ms": 1e3, "s": 1.0}


def _fmt(seconds: float, unit: str) -> str:
    if unit not in _SCALE:  # a count (instructions, bytes), not a time
        return f"{seconds:.0f} {unit}"
    v = seconds * _SCALE[unit]
    return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"


def table(rows: list[dict]) -> str:
    """A Markdown table: section, case, hlodsl, its time, peer, its time, ratio."""
    lines = ["| section | case | hlodsl | time | peer | time | hlodsl/peer |",
             "|---|---|---|---:|---|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['section']} | {r['case']} | {r['ours']} | {_fmt(r['ours_s'], r['unit'])} "
            f"| {r['peer']} | {_fmt(r['peer_s'], r['unit'])} | {r['ratio']:.2f} |"
        )
    notes = [f"- {r['section']}: {r['note']}" for r in rows if r.get("note")]
    return "\n".join(lines + ([""] + notes if notes else []))


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def machine() -> str:
    """One line: CPU, core count, load, Python, jax/jaxlib/plum versions, XLA platform."""
    import jax
    import jaxlib
    import plum

    from hlodsl import runtime

    cpu = platform.processor() or _cpu_model() or platform.machine()
    try:
        load = "load average %.2f %.2f %.2f; " % os.getloadavg()
    except OSError:
        load = ""
    return (f"{cpu}, {os.cpu_count()} cores; {load}Python {platform.python_version()}; "
            f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, plum {plum.__version__}; "
            f"XLA platform {runtime.platform()}")


def main_of(prog: str, doc: str, cases, argv=None) -> None:
    """``python -m benchmarks.<module> [--quick]``: run ``cases`` and print their table."""
    import argparse

    from .timing import settings

    parser = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    cfg = settings(parser.parse_args(argv).quick)
    print(f"Machine: {machine()}\n")
    print(table([r for case in cases for r in case(cfg)]))
