"""Bad input, case by case: every public entry point refuses it with a clear error.

The table of cases is ``tests/corpus_cases.py`` (grouped by area: ops, stdlib,
indexing, linalg, transforms, control, python-flow, nn, weights, introspect,
array, dlpack, pickle). Each case must raise its documented exception type
with a message that (a) names the function or op, (b) names the offending
argument or shows the offending shapes/types and (c) says what is allowed;
a case that expects ``Answers`` must instead return, having checked its own
answer against an oracle (a ``WrongAnswer`` is a silent wrong result).
Never a crash (a Python internal error, an XLA dump), a silent wrong result
or a hang.

Run as a script for the summary by class and area, and the list of cases
that are not clean::

    .venv/bin/python tests/test_bad_input_corpus.py [--area AREA]... [--match TEXT] [--all]
                                                    [--progress]

Each case runs in a worker process (restarted after a hang or a dead
process), so a case stuck inside XLA is reported as a hang, not a stuck run.
"""

from __future__ import annotations

import os
import sys

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    # As tests/conftest.py does, so the script and pytest see the same devices.
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=8").strip()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import inspect  # noqa: E402
import json  # noqa: E402
import queue  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import pytest  # noqa: E402

import hlodsl as hd  # noqa: E402
from corpus_cases import AREAS, CASES, Answers, Case, WrongAnswer  # noqa: E402

#: Seconds a case may run. Inputs are tiny; only a hang gets near this.
TIMEOUT_S = 30

CLASSES = ("clean", "unclear", "wrong-type", "crash", "silent", "hang")

#: Exceptions that only library bugs raise (unless a case expects one, as a
#: missing state_dict key is a KeyError).
INTERNAL_TYPES = (AttributeError, KeyError, NameError, RecursionError, AssertionError,
                  ZeroDivisionError, NotImplementedError, SystemError, StopIteration,
                  IndexError, RuntimeError, OverflowError, MemoryError, hd.XlaCompileError)

#: Text that must never reach a user: XLA's own dumps and hlodsl's admissions (case matters:
#: "ENTRY" is HLO's, "entry" is English).
DUMP = re.compile(r"XLA rejected|(?i:a bug in hlodsl)|\bHloModule\b|\bENTRY\b|stablehlo\.|"
                  r"\bmlir\b|INVALID_ARGUMENT:|INTERNAL:|UNIMPLEMENTED|Traceback \(most recent|"
                  r"maximum recursion depth|'NoneType' object")

#: Python's own complaints, raised from inside the library with no context.
PY_INTERNAL = re.compile(
    r"('\w+' object (is not (iterable|subscriptable|callable)|has no attribute|"
    r"cannot be interpreted as an integer|does not support item assignment)|"
    r"unhashable type|(tuple|list|string) index out of range|unsupported operand type|"
    r"'[<>]=?' not supported between|cannot unpack non-iterable|"
    r"(too many|not enough) values to unpack|invalid literal for int|can only concatenate|"
    r"object of type '\w+' has no len|descriptor '\w+' for|"
    r"int\(\) argument must be|float\(\) argument must be|"
    r"Python int too large|\w+ expected at most|list indices must be|"
    r"can't multiply sequence|could not convert string to)", re.I)

#: An exception of an INTERNAL_TYPES class that hlodsl raised on purpose, with context: it says
#: whose it is ("take_along_axis: ...") or that a feature is missing. Wrong type, not a crash.
DELIBERATE = re.compile(r"^[\w.\[\]]+(\(\))?: |is not implemented|\n  at ")

_LIB_DIRS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), d)
                  + os.sep for d in ("hlodsl", "ops", "stdlib", "transforms"))


class _Hang(BaseException):
    """Raised by the timer; a BaseException so that no ``except Exception`` swallows it."""


@dataclass
class Outcome:
    kind: str  # one of CLASSES
    exc: BaseException | None
    missing: tuple[str, ...] = ()  # the patterns the message did not match
    origin: str = ""  # the innermost library frame that raised, "file:line"

    @property
    def exc_name(self) -> str:
        return "-" if self.exc is None else type(self.exc).__name__

    @property
    def message(self) -> str:
        return "" if self.exc is None else _message(self.exc)


def _message(exc: BaseException) -> str:
    """The text a user reads (a KeyError's str() is the repr of its argument)."""
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        return exc.args[0]
    return str(exc)


def _origin(exc: BaseException) -> str:
    """Where in hlodsl the exception was raised (the innermost library frame)."""
    found = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith(_LIB_DIRS):
            rel = os.path.relpath(frame.filename, os.path.dirname(_LIB_DIRS[0].rstrip(os.sep)))
            found = f"{rel}:{frame.lineno}"
    return found


def _raised_in_library(exc: BaseException) -> bool:
    """Whether the innermost frame is hlodsl's (not the user's function, not the call itself)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and frames[-1].filename.startswith(_LIB_DIRS)


def _expected_names(case: Case) -> str:
    exp = case.expected if isinstance(case.expected, tuple) else (case.expected,)
    return "/".join(e.__name__ for e in exp)


def _run(call):
    """Call ``call()`` under a timer (main thread only); the exception or None, and hung."""
    use_timer = threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGALRM")
    if use_timer:
        def on_alarm(signum, frame):
            raise _Hang()

        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, TIMEOUT_S)
    try:
        call()
    except _Hang:
        return None, True
    except Exception as e:  # noqa: BLE001 (every exception is what is being classified)
        return e, False
    finally:
        if use_timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return None, False


def classify(case: Case) -> Outcome:
    exc, hung = _run(case.call)
    if hung:
        return Outcome("hang", None)
    if case.expected is Answers:  # it must answer, and checks its answer itself
        if exc is None:
            return Outcome("clean", None)
        if isinstance(exc, WrongAnswer):
            return Outcome("silent", exc, origin=_origin(exc))
    if exc is None:
        return Outcome("silent", None)
    message, origin = _message(exc), _origin(exc)
    first_line = message.strip().splitlines()[0] if message.strip() else ""
    if DUMP.search(message) or not message.strip():
        return Outcome("crash", exc, origin=origin)
    if isinstance(exc, INTERNAL_TYPES) and not isinstance(exc, case.expected) \
            and not DELIBERATE.search(message):
        return Outcome("crash", exc, origin=origin)
    # Python's own complaint is a crash when it comes out of the library; out of the user's
    # function or the call itself (hash([])) it is what Python says, judged by the patterns.
    if PY_INTERNAL.match(first_line) and _raised_in_library(exc):
        return Outcome("crash", exc, origin=origin)
    if not isinstance(exc, case.expected):
        return Outcome("wrong-type", exc, origin=origin)
    missing = tuple(p for p in case.patterns if not re.search(p, message, re.I | re.S))
    return Outcome("unclear" if missing else "clean", exc, missing, origin)


# -- isolation: a worker process runs the cases --------------------------------------------
#
# A case that hangs inside XLA (C++, where no Python signal gets through) or
# kills the process must be reported as such, not stop the run: the cases run
# in a worker process that the parent restarts after a hang or a death.

_MARK = "@@corpus@@ "


def _worker() -> None:
    """Read case keys on stdin; write one JSON outcome per key on stdout."""
    by_key = {c.key: c for c in CASES}
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr  # whatever the library prints must not mix with the results
    for line in sys.stdin:
        key = line.strip()
        o = classify(by_key[key])
        out.write(_MARK + json.dumps({"key": key, "kind": o.kind, "exc": o.exc_name,
                                      "message": o.message, "missing": list(o.missing),
                                      "origin": o.origin}) + "\n")


@dataclass
class Result:
    """An outcome as the parent sees it (the exception itself stays in the worker)."""

    kind: str
    exc_name: str = "-"
    message: str = ""
    missing: tuple[str, ...] = ()
    origin: str = ""


class Runner:
    """Runs cases by key in a worker process; restarts it after a hang or a crash."""

    #: A fresh worker imports hlodsl and builds the table before its first answer.
    STARTUP_S = 120

    def __init__(self, timeout: float = TIMEOUT_S + 15):
        self.timeout = timeout
        self.proc = None
        self.fresh = False

    def _start(self):
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.fresh = True
        self.lines: queue.Queue = queue.Queue()

        def pump(stream, q):
            for ln in stream:
                if ln.startswith(_MARK):
                    q.put(ln[len(_MARK):])
            q.put(None)  # the worker is gone

        threading.Thread(target=pump, args=(self.proc.stdout, self.lines), daemon=True).start()

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def run(self, case: Case) -> Result:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(case.key + "\n")
        self.proc.stdin.flush()
        timeout = self.timeout + (self.STARTUP_S if self.fresh else 0)
        self.fresh = False
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            return Result("hang", message=f"no answer within {timeout:.0f} s")
        if line is None:
            code = self.proc.wait()
            self.proc = None
            self.stderr.seek(0)
            tail = self.stderr.read()[-600:]
            return Result("crash", "process died",
                          f"the process died with exit code {code}: {tail}")
        d = json.loads(line)
        return Result(d["kind"], d["exc"], d["message"], tuple(d["missing"]), d["origin"])


@pytest.fixture(scope="module")
def runner():
    r = Runner()
    yield r
    r.stop()


# -- the spec: one test over the whole table ---------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.key for c in CASES])
def test_bad_input_gets_a_clear_error(case: Case, runner):
    if case.devices > hd.runtime.device_count():  # a GPU machine: its own GPUs only
        pytest.skip(f"needs {case.devices} devices (tests/conftest.py sets XLA_FLAGS)")
    out = runner.run(case)
    assert out.kind == "clean", (
        f"{case.key}: {out.kind}; expected {_expected_names(case)} matching "
        f"{list(case.patterns)}; got {out.exc_name}: {out.message!r}"
        + (f"; missing {list(out.missing)}" if out.missing else "")
        + (f" (raised at {out.origin})" if out.origin else ""))


def _names(code) -> set[str]:
    """The global names a function's code (nested functions included) reads."""
    out = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            out |= _names(const)
    return out


def test_every_case_that_makes_a_mesh_says_how_many_devices_it_needs():
    # Off the CPU (no forced host devices) such a case cannot reach its bad input: it is
    # skipped with that reason, not failed on make_mesh's own error.
    meshes = {c.key for c in CASES if _names(c.call.__code__) & {"_mesh2", "_sx"}}
    assert meshes == {c.key for c in CASES if c.devices == 2} and len(meshes) == 9


def test_every_registered_op_is_in_the_corpus():
    covered = Counter(c.op for c in CASES if c.op)
    from hlodsl.ops._catalog import library_ops  # not the ops other tests define

    names = {cls.__name__ for cls in library_ops().values()}
    thin = sorted(n for n in names if covered[n] < 2)
    assert not thin, f"ops with fewer than two bad-input cases: {thin}"


def test_the_corpus_is_large_and_grouped():
    assert len(CASES) >= 300
    assert len({c.key for c in CASES}) == len(CASES), "case ids must be unique"
    assert {"ops", "stdlib", "linalg", "transforms", "control", "python-flow", "nn", "weights",
            "introspect", "array", "dlpack", "pickle"} <= set(AREAS)


# -- the summary -------------------------------------------------------------------------


def _short(text: str, n: int = 150) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 3] + "..."


def _owner_of_op(name: str | None) -> str:
    """The file of an op class (where a silent case's missing check belongs)."""
    if not name:
        return ""
    cls = {c.__name__: c for c in hd.ops.registry().values()}.get(name)
    path = inspect.getsourcefile(cls) if cls is not None else None
    root = os.path.dirname(_LIB_DIRS[0].rstrip(os.sep))
    return os.path.relpath(path, root) if path else ""


def summary(cases=CASES, show_all: bool = False, out=sys.stdout,
            progress: bool = False) -> dict[str, Counter]:
    """Run ``cases``; print the counts by class and area and every case that is not clean."""
    counts: dict[str, Counter] = defaultdict(Counter)
    bad = []
    runner = Runner()
    for case in cases:
        start = time.perf_counter()
        outcome = runner.run(case)
        if progress:
            print(f"{time.perf_counter() - start:7.2f}s {outcome.kind:>10} {case.key}",
                  file=sys.stderr, flush=True)
        counts[case.area][outcome.kind] += 1
        if outcome.kind != "clean" or show_all:
            bad.append((case, outcome))
    runner.stop()
    width = max(len(a) for a in counts) + 2
    print(f"{'area':<{width}}" + "".join(f"{k:>11}" for k in CLASSES) + f"{'total':>8}", file=out)
    total = Counter()
    for area in counts:
        row = counts[area]
        total.update(row)
        print(f"{area:<{width}}" + "".join(f"{row[k]:>11}" for k in CLASSES)
              + f"{sum(row.values()):>8}", file=out)
    print(f"{'all':<{width}}" + "".join(f"{total[k]:>11}" for k in CLASSES)
          + f"{sum(total.values()):>8}", file=out)
    print(file=out)
    for kind in CLASSES[1:] + (("clean",) if show_all else ()):
        rows = [(c, o) for c, o in bad if o.kind == kind]
        if not rows:
            continue
        print(f"== {kind} ({len(rows)})", file=out)
        for c, o in rows:
            where = o.origin or c.owner or _owner_of_op(c.op)
            print(f"  {c.key}  [expected {_expected_names(c)}]"
                  + (f"  @ {where}" if where else ""), file=out)
            if o.exc_name != "-":
                print(f"      got {o.exc_name}: {_short(o.message)}", file=out)
            if o.missing:
                parts = [f"({'abcdefgh'[c.patterns.index(p)]}) {_short(p, 50)}" for p in o.missing]
                print(f"      missing {'; '.join(parts)}", file=out)
        print(file=out)
    return counts


if __name__ == "__main__":
    import argparse

    if sys.argv[1:] == ["--worker"]:
        _worker()
        sys.exit(0)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--area", action="append", help="only these areas (repeatable)")
    parser.add_argument("--match", help="only case ids containing this text")
    parser.add_argument("--all", action="store_true", help="list clean cases too")
    parser.add_argument("--progress", action="store_true", help="time each case on stderr")
    args = parser.parse_args()
    chosen = [c for c in CASES if (not args.area or c.area in args.area)
              and (not args.match or args.match in c.key)]
    summary(chosen, show_all=args.all, progress=args.progress)
