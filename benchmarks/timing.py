"""A careful timer: timeit-style loops, warm-up, interleaved repeats, medians.

Statements are timed with :class:`timeit.Timer`, which inlines the statement
in its loop (no wrapper-function call per iteration) and uses
``time.perf_counter``. Each statement is warmed up, its loop count is chosen
so that one repeat lasts about ``target_s``, and the repeats of the two sides
of a comparison are interleaved (ours, peer, ours, peer, ...) so that drift in
the machine's speed hits both alike. The reported time is the median over the
repeats, per call, in seconds.
"""

from __future__ import annotations

import statistics
import time
import timeit

__all__ = ["Settings", "settings", "loop_count", "compare", "time_once", "interleaved"]


class Settings:
    """How long to measure: ``quick`` is a smoke run, the default a real one."""

    def __init__(self, quick: bool):
        self.quick = quick
        #: seconds one repeat of a loop should last
        self.target_s = 0.005 if quick else 0.05
        #: repeats per statement (the median is reported)
        self.repeat = 3 if quick else 21
        #: warm-up calls before anything is timed
        self.warmup = 3 if quick else 200
        #: repetitions of one-shot measurements (staging + compile)
        self.once_repeat = 2 if quick else 15


def settings(quick: bool) -> Settings:
    return Settings(quick)


def _timer(stmt: str, namespace: dict) -> timeit.Timer:
    return timeit.Timer(stmt, globals=namespace, timer=time.perf_counter)


def loop_count(timer: timeit.Timer, target_s: float) -> int:
    """The smallest 1, 2, 5, 10, 20, ... loop count lasting at least ``target_s``."""
    n = 1
    while True:
        for m in (1, 2, 5):
            number = n * m
            if timer.timeit(number) >= target_s:
                return number
        n *= 10


def compare(stmts: dict[str, str], namespace: dict, cfg: Settings) -> dict[str, float]:
    """Median seconds per call of each statement, measured side by side.

    ``stmts`` maps a label to a Python statement evaluated in ``namespace``.
    """
    timers = {k: _timer(s, namespace) for k, s in stmts.items()}
    for t in timers.values():
        t.timeit(cfg.warmup)
    numbers = {k: loop_count(t, cfg.target_s) for k, t in timers.items()}
    samples: dict[str, list[float]] = {k: [] for k in stmts}
    for _ in range(cfg.repeat):
        for k, t in timers.items():
            samples[k].append(t.timeit(numbers[k]) / numbers[k])
    return {k: statistics.median(v) for k, v in samples.items()}


def time_once(fns: dict[str, callable], cfg: Settings) -> dict[str, float]:
    """Median seconds of one call of each (fresh-state) function, interleaved.

    For one-shot work such as staging and compiling: every call must redo the
    whole work (the functions build fresh objects so no cache is hit).
    """
    for f in fns.values():  # warm-up: imports, first-use initialisation
        f()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(cfg.once_repeat):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            samples[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in samples.items()}


def interleaved(fns: dict[str, callable], repeat: int, target_s: float = 0.0,
                warmup: int = 1, cpu: bool = False):
    """Median seconds of one call of each function, calls interleaved (ours, peer, ...;
    each round starting with another function, and every other ``len(fns)`` rounds in
    reverse order: no function always runs right after the same one).

    For calls of milliseconds or more, where ``compare``'s 200 warm-up calls are too
    many: each function is called ``warmup`` times first; a sample is ``n`` calls, ``n``
    chosen per function so that a sample lasts about ``target_s`` (1 with the default).
    With ``cpu``, also the median CPU time of the process per call (all its threads):
    ``(wall, cpu)``. On a machine other jobs load, CPU time moves much less than wall
    time (a thread waiting for a core is not charged), at the price of counting every
    thread's work (two busy threads for 1 ms: 2 ms).

    >>> seen = []
    >>> _ = interleaved({"a": lambda: seen.append("a"), "b": lambda: seen.append("b")},
    ...                 repeat=4, warmup=0)
    >>> "".join(seen)
    'abbabaab'
    """
    numbers = {}
    for k, f in fns.items():
        t0 = time.perf_counter()
        for _ in range(warmup):
            f()
        one = (time.perf_counter() - t0) / max(warmup, 1)
        numbers[k] = max(1, round(target_s / one)) if one > 0 else 1
    walls: dict[str, list[float]] = {k: [] for k in fns}
    cpus: dict[str, list[float]] = {k: [] for k in fns}
    order = list(fns)
    for r in range(repeat):
        # Each round starts with another side, and every other len(fns) rounds run in
        # reverse: a side whose library leaves threads spinning after its call (OpenBLAS,
        # OpenMP) would otherwise always slow the same neighbour.
        turn = order[r % len(order):] + order[:r % len(order)]
        for k in (turn[::-1] if (r // len(order)) % 2 else turn):
            f = fns[k]
            n = numbers[k]
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(n):
                f()
            walls[k].append((time.perf_counter() - t0) / n)
            cpus[k].append((time.process_time() - c0) / n)
    wall = {k: statistics.median(v) for k, v in walls.items()}
    return (wall, {k: statistics.median(v) for k, v in cpus.items()}) if cpu else wall
