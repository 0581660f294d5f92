"""Replay StableHLO's interpreter tests (``stablehlo/tests/interpret/*.mlir``) through hlodsl.ops.

A developer tool, not collected by pytest (tests/test_stablehlo_replay.py tests it)::

    .venv/bin/python tests/stablehlo_replay.py /path/to/stablehlo [--json out.json] [-k pat] [-v]

The path is a StableHLO checkout, a directory of .mlir files, or a bare git
directory (read with ``git show HEAD:...``; ``--rev`` picks another commit).
Nothing of StableHLO's is stored here: the files are read at run time.

Each case (one ``// -----`` split; the interpreter runs its ``@main`` or its
only function) is staged as ONE ``hd.compile``d function: every
``stablehlo.constant`` becomes a parameter (so XLA cannot fold the ops under
test), every op one hlodsl op call, and the values the ``check.*`` ops read
come back as its results, compared here as the StableHLO checker does:
exact for ``expect_eq``; ``|actual - expected| <= tolerance`` (default 1e-4,
NaN matching NaN) per element and per complex part for ``expect_almost_eq``;
a ULP distance for ``expect_close``. Each case lands in exactly one of
``pass``, ``fail``, ``error``, ``unsupported-type``, ``unsupported-op``, ``parse``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# interpreter.run_parallel cases run on several CPU devices, which XLA makes only if
# asked before jax (under hlodsl) is imported (tests/conftest.py does the same).
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=8").strip()

from stablehlo_replay_ops import (
    Context,
    constants_of,
    run_ops,
    unsupported_in,
)
from stablehlo_replay_parser import Case, parse_cases
from stablehlo_replay_values import Unsupported, dense

import hlodsl as hd

__all__ = ["KINDS", "load_files", "main", "replay_case", "replay_text"]

KINDS = ("pass", "fail", "error", "unsupported-type", "unsupported-op", "parse")
INTERPRET_DIR = "stablehlo/tests/interpret"
DEFAULT_TOLERANCE = 1e-4  # check.expect_almost_eq's default (stablehlo/tests/CheckOps.td)


def load_files(path: str, rev: str = "HEAD") -> list[tuple[str, str]]:
    """``(name, text)`` of every interpreter test .mlir file under ``path``."""
    root = Path(path)
    if (root / "HEAD").is_file() and (root / "objects").is_dir():  # a bare git directory
        git = ["git", "-C", str(root)]
        names = subprocess.run(git + ["ls-tree", "-r", "--name-only", rev, INTERPRET_DIR],
                               check=True, capture_output=True, text=True).stdout.split()
        return [(n[len(INTERPRET_DIR) + 1:], subprocess.run(
            git + ["show", f"{rev}:{n}"], check=True, capture_output=True, text=True).stdout)
            for n in names if n.endswith(".mlir")]
    if (root / INTERPRET_DIR).is_dir():
        root = root / INTERPRET_DIR
    files = sorted(root.rglob("*.mlir")) if root.is_dir() else [root]
    return [(str(f.relative_to(root)) if root.is_dir() else f.name, f.read_text())
            for f in files]


def _result(case: Case, kind: str, reason: str = "", **extra) -> dict:
    return {"file": case.file, "case": case.name, "line": case.line, "kind": kind,
            "reason": reason, **extra}


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}")).astype(np.int64)


def _ulp(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """ULP distance as stablehlo's CheckOps.cpp counts it (NaN vs NaN: 0)."""
    if actual.dtype.kind == "c":
        return np.maximum(_ulp(actual.real, expected.real), _ulp(actual.imag, expected.imag))
    af, ef = np.abs(actual), np.abs(expected)
    a, e = _bits(af), _bits(ef)
    diff = np.where(np.signbit(actual) != np.signbit(expected), a + e, np.abs(a - e))
    finite = np.isfinite(actual.astype(np.float64)) & np.isfinite(expected.astype(np.float64))
    both_nan = np.isnan(actual.astype(np.float64)) & np.isnan(expected.astype(np.float64))
    same = _bits(actual) == _bits(expected)
    return np.where(same | both_nan, 0, np.where(finite, diff, np.iinfo(np.int64).max))


def _almost(actual: np.ndarray, expected: np.ndarray, tol: float) -> np.ndarray:
    if actual.dtype.kind == "c":
        return _almost(actual.real, expected.real, tol) & _almost(actual.imag, expected.imag, tol)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    with np.errstate(invalid="ignore"):
        close = np.abs(a - e) <= tol
    return (a == e) | (np.isnan(a) & np.isnan(e)) | close


def _equal(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    if actual.dtype.kind in "iub":
        return actual == expected
    if actual.dtype.kind == "c":
        return _equal(actual.real, expected.real) & _equal(actual.imag, expected.imag)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    return (a == e) | (np.isnan(a) & np.isnan(e))


def _show(a: np.ndarray) -> str:
    text = np.array2string(a.astype(np.float64) if a.dtype.kind == "V" else a, threshold=12,
                           separator=", ", max_line_width=10_000)
    return re.sub(r"\s+", " ", text)


def _compare(op, values: list[np.ndarray]) -> str | None:
    """None when the check holds, else what differs."""
    actual = values[0]
    if op.name.endswith("_const"):
        expected = dense(op.literal, op.literal_type)
    else:
        expected = values[1]
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return (f"{op.name} (line {op.line}): got {actual.dtype}{list(actual.shape)}, "
                f"expected {expected.dtype}{list(expected.shape)}")
    if op.name == "check.expect_close":
        limit = int(op.attrs.get("max_ulp_difference", "1"))
        low = int(op.attrs.get("min_ulp_difference", "0"))
        d = _ulp(actual, expected)
        ok = (d <= limit) & (d >= low)
    elif "almost" in op.name:
        ok = _almost(actual, expected, float(op.attrs.get("tolerance", DEFAULT_TOLERANCE)))
    else:
        ok = _equal(actual, expected)
    if np.all(ok):
        return None
    bad = np.argwhere(~np.asarray(ok))[:3].tolist()
    return (f"{op.name} (line {op.line}): expected {_show(expected)}, got {_show(actual)} "
            f"(first differences at {bad})")


def replay_case(case: Case) -> dict:
    """Stage, run and check one parsed case; its classification as a dict."""
    if case.error:
        return _result(case, "parse", case.error)
    all_ops = [op for f in case.funcs.values() for op in f.ops]
    blocker = unsupported_in(all_ops)
    if blocker is None and case.entry.args:
        blocker = Unsupported("unsupported-op", "the entry function takes arguments (--args)")
    if blocker is not None:
        return _result(case, blocker.kind, blocker.reason, xla="not checked")
    consts = [op for f in case.funcs.values() for op in constants_of(f.ops)]
    try:
        arrays = [dense(op.literal, op.literal_type) for op in consts]
    except Unsupported as e:
        return _result(case, e.kind, e.reason, xla="not checked")
    except Exception as e:  # noqa: BLE001 (a literal the harness cannot read)
        return _result(case, "parse", f"constant literal: {type(e).__name__}: {e}")
    ctx = None

    def program(*params):
        nonlocal ctx
        ctx = Context(case.funcs, {id(op): p for op, p in zip(consts, params)})
        returned = run_ops(case.entry.ops, {}, ctx)
        outputs = ctx.outputs if ctx.checks else (ctx.all_values + list(returned))
        outputs = tuple(o for o in outputs if isinstance(o, hd.Array))
        if not outputs:
            raise Unsupported("unsupported-op", "the case computes only tokens, and an "
                              "hlodsl program returns arrays only (tokens stay inside it)")
        return outputs

    # A case that runs programs on several devices runs its entry eagerly: each program
    # is staged whole by hd.replicated, the entry only feeds it constants and checks.
    eager = any(op.name == "interpreter.run_parallel" for op in case.entry.ops)
    try:
        run = program if eager else hd.compile(program, convert=False)
        results = run(*[hd.array(a) for a in arrays])
    except Unsupported as e:
        return _result(case, e.kind, e.reason, xla="not checked")
    except Exception as e:  # noqa: BLE001 (hlodsl refused or XLA failed: the case's outcome)
        where = traceback.extract_tb(e.__traceback__)[-1]
        message = re.sub(r"\s+", " ", str(e))[:600]
        return _result(case, "error", f"{type(e).__name__}: {message}",
                       raised_at=f"{Path(where.filename).name}:{where.lineno}")
    values = [np.asarray(r) for r in results]
    if not ctx.checks:
        return _result(case, "pass", "ran; the case has no check ops", checks=0)
    failures, k = [], 0
    for op, n in ctx.checks:
        problem = _compare(op, values[k:k + n])
        k += n
        if problem:
            failures.append(problem)
    if failures:
        return _result(case, "fail", "; ".join(failures), checks=len(ctx.checks))
    return _result(case, "pass", checks=len(ctx.checks))


def replay_text(text: str, file: str = "<text>", split: bool | None = None) -> list[dict]:
    """Every case of one file's text, replayed."""
    return [replay_case(case) for case in parse_cases(text, file, split)]


def _table(results: list[dict]) -> str:
    per_file: dict[str, Counter] = {}
    for r in results:
        per_file.setdefault(r["file"], Counter())[r["kind"]] += 1
    head = "| file | cases | " + " | ".join(KINDS) + " |"
    lines = [head, "|" + "---|" * (len(KINDS) + 2)]
    total = Counter()
    for file in sorted(per_file):
        c = per_file[file]
        total.update(c)
        lines.append(f"| {file} | {sum(c.values())} | " +
                     " | ".join(str(c[k]) if c[k] else "" for k in KINDS) + " |")
    lines.append(f"| **total** | **{sum(total.values())}** | " +
                 " | ".join(f"**{total[k]}**" for k in KINDS) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", help="StableHLO checkout, bare git dir, or dir of .mlir files")
    parser.add_argument("--rev", default="HEAD", help="commit to read from a bare git dir")
    parser.add_argument("--json", help="write every case's result here")
    parser.add_argument("-k", dest="pattern", help="only cases whose file/name match (regex)")
    parser.add_argument("-v", action="store_true", help="print each case as it runs")
    args = parser.parse_args(argv)
    results = []
    for file, text in load_files(args.path, args.rev):
        for case in parse_cases(text, file):
            if args.pattern and not re.search(args.pattern, f"{file}::{case.name}"):
                continue
            r = replay_case(case)
            results.append(r)
            if args.v:
                print(f"{r['kind']:16} {file}::{case.name} {r['reason'][:200]}", flush=True)
    print(_table(results))
    print()
    for r in results:
        if r["kind"] != "pass":
            print(f"{r['kind']:16} {r['file']}::{r['case']} (line {r['line']}): {r['reason']}")
    if args.json:
        totals = Counter(r["kind"] for r in results)
        Path(args.json).write_text(json.dumps(
            {"source": os.path.abspath(args.path), "rev": args.rev,
             "totals": {k: totals[k] for k in KINDS}, "table": _table(results),
             "cases": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
