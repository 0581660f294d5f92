"""The ``memory_limit`` contract on many generated programs: a tool, not a test (issue 39).

Draws ``N`` fresh programs (tests/memory_programs.py), checks the contract on
each (runs under the limit with the unlimited program's answer, or raises
``MemoryLimitError``) and, instead of stopping at the first failure, counts
every outcome and groups the failures by class (exception type and the
innermost line of hlodsl that raised it; wrong answers; temps over the
limit). Each class is shown with the shortest program that still fails the
same way (prefixes of the failing program, tried in turn)::

    python tests/stress_memory_limit.py 2000
    python tests/stress_memory_limit.py 300 --variants plain,grad --out /tmp/runs.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("HLODSL_CACHE_DIR", "")  # no persistent cache, as in the suite
warnings.simplefilter("ignore")  # recompile warnings: every example is a new signature

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # as the suite runs it (tests/conftest.py)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.errors import UnsatisfiedAssumption  # noqa: E402

import memory_programs as mp  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SLOW_S = 300  # an example taking longer is counted as slow and abandoned


class Slow(Exception):
    pass


def _alarm(signum, frame):
    raise Slow(f"over {SLOW_S} s")


def signature(e: BaseException) -> str:
    """A failure's class: the exception type and the innermost hlodsl line that raised it."""
    if isinstance(e, mp.ContractBroken):
        text = str(e)
        return "wrong answer" if "differs from" in text else \
            "over the limit" if text.startswith("ran with XLA temp") \
            else "contract: " + text.splitlines()[0][:60]
    where = ""
    for fr in reversed(traceback.extract_tb(e.__traceback__)):
        path = Path(fr.filename).resolve()
        if ROOT in path.parents and "tests" not in path.parts:
            where = f"{path.relative_to(ROOT)}:{fr.lineno} ({fr.name})"
            break
    msg = re.sub(r"\d{6,}", "N", str(e).splitlines()[0] if str(e) else "")
    msg = re.sub(r"%\d+", "%N", msg)
    msg = re.sub(r"\[[\d,]+\]", "[..]", msg)[:90]
    return f"{type(e).__name__} at {where}: {msg}"


def classify(program: mp.Program, require_range: bool = True) -> tuple[str, object]:
    """The outcome of one program: ('fits'|'limit_error'|'out of range'|failure class, detail)."""
    signal.alarm(SLOW_S)
    try:
        out = mp.check(program, require_range=require_range)
        return out.kind, out
    except UnsatisfiedAssumption:
        return "out of range", None
    except Slow as e:
        return "slow", e
    except Exception as e:  # noqa: BLE001 -- every failure is counted, not raised
        return "FAIL " + signature(e), e
    finally:
        signal.alarm(0)


def shrink(program: mp.Program, kind: str) -> mp.Program:
    """The shortest prefix of ``program`` (ending at one value) that fails as ``kind``;
    then, the same with the plain variant where that still fails so."""
    best = program
    for upto in range(1, len(program.hd_lines) + 1):
        name = program.hd_lines[upto - 1].split(" = ")[0]
        cand = program.truncated(upto, (name,))
        if classify(cand, require_range=False)[0] == kind:
            best = cand
            break
    if best.variant != "plain":
        for variant in ("plain", "grad"):
            cand = mp.attrs.evolve(best, variant=variant)
            if variant != best.variant and classify(cand, require_range=False)[0] == kind:
                return cand
    return best


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, nargs="?", default=200)
    ap.add_argument("--variants", default=",".join(sorted(set(mp.VARIANTS))))
    ap.add_argument("--out", default=None, help="a JSON line per program")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args(argv)
    variants = tuple(args.variants.split(","))
    signal.signal(signal.SIGALRM, _alarm)
    counts: collections.Counter = collections.Counter()
    by_rewrite: collections.Counter = collections.Counter()
    by_variant: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures: dict[str, list] = collections.defaultdict(list)
    log = open(args.out, "w") if args.out else None
    start = time.perf_counter()
    done = [0]

    @settings(max_examples=args.n, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(mp.programs(variants=variants))
    def run(program):
        kind, detail = classify(program)
        if kind == "out of range":
            counts[kind] += 1
            return
        done[0] += 1
        if kind == "fits":
            kind = "fits (rewritten)" if detail.rewrote else "fits (as written)"
            by_rewrite[" + ".join(detail.rewrites) or "no pass changed it"] += 1
        counts[kind.split(" at ")[0] if kind.startswith("FAIL") else kind] += 1
        by_variant[program.variant][kind if not kind.startswith("FAIL") else "FAIL"] += 1
        if kind.startswith("FAIL"):
            failures[kind].append(program)
        if log:
            row = {"variant": program.variant, "kind": kind, "dtype": program.dtype,
                   "lines": len(program.hd_lines)}
            if detail is not None and hasattr(detail, "naive"):
                row.update(naive=detail.naive, limit=detail.limit, temp=detail.temp,
                           seconds=round(detail.seconds, 2), rewrites=list(detail.rewrites))
            if kind == "limit_error":  # what the MemoryLimitError said stayed too large
                row["message"] = "\n".join(detail.message.splitlines()[:8])
                row["program"] = str(program)
            if kind.startswith("FAIL"):
                row["program"] = str(program)
                row["error"] = "".join(traceback.format_exception_only(
                    type(detail), detail))[-2000:]
            log.write(json.dumps(row) + "\n")
            log.flush()
        if done[0] % 25 == 0:
            print(f"[{done[0]} programs, {time.perf_counter() - start:.0f} s] "
                  f"{dict(counts)}", flush=True)

    if args.seed is not None:  # hypothesis draws from its own seed, not random's
        from hypothesis import seed

        run = seed(args.seed)(run)
    run()
    total = sum(v for k, v in counts.items() if k != "out of range")
    print(f"\n{total} programs checked in {time.perf_counter() - start:.0f} s "
          f"({counts['out of range']} drawn outside {mp.NAIVE_MIN} B .. {mp.NAIVE_MAX} B "
          "naive temp, not counted)")
    for k, v in sorted(counts.items(), key=lambda kv: -kv[1]):
        if k != "out of range":
            print(f"  {v:5d}  {k}")
    print("ran under the limit, by the passes that changed the program:")
    for k, v in by_rewrite.most_common():
        print(f"  {v:5d}  {k}")
    print("by variant:")
    for var, c in sorted(by_variant.items()):
        print(f"  {var:9s} {dict(c)}")
    for kind, progs in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        smallest = min(progs, key=lambda p: (len(p.hd_lines), p.variant != "plain"))
        if not args.no_shrink:
            smallest = shrink(smallest, kind)
        print(f"\n== {len(progs)} x {kind}\n{smallest}")
    if log:
        log.close()
    bad = sum(len(p) for p in failures.values())
    print(f"\n{bad} internal errors or wrong answers" if bad else "\nno failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
