"""Soak benchmark: does memory grow with the number of calls? hlodsl against jax.

``python -m benchmarks.soak [--quick]`` (issue 12) runs, side by side in one
process, the same functions through hlodsl and through jax:

1. **compiled calls**, ``--calls`` (10^5) of each: ``W @ x + b`` (``W`` 64x64,
   ``x`` and ``b`` of length 64, float32), a 3-op elementwise
   ``x * y + x - y`` on 64x64 float32, and ``W @ x + b`` taking one
   dict-of-arrays argument (the structure-flattening path): ``hd.compile(f)``
   against ``jax.jit(f)``;
2. **eager ops**, ``--eager-calls`` (10^4): ``x * y`` on 64x64 float32 hlodsl
   arrays (the stdlib operator, a cached one-op module) against jax's eager
   ``x * y`` on jax arrays;
3. **Python-level growth**: the same calls under ``tracemalloc``, which counts
   every byte Python allocates and has not freed, by source line;
4. **compile retention**: one ``hd.compile``d function called on ``--shapes``
   (200) distinct shapes, with ``hd.config.compile_cache_size`` at its default
   and at a value above the number of shapes, then ``del f; gc.collect()``:
   MiB held, MiB that ``del`` returns, MiB left; ``jax.jit`` of the same
   function as the peer. Each of these runs in a fresh process of its own
   (``--in-process`` runs them here, one after the other: then one run reuses
   the heap another freed, and the numbers depend on the order).

How growth is measured. Inputs are made once and each case is warmed up
(``--warmup`` calls) first. The process RSS (resident pages, from
``/proc/self/statm``; ``resource.getrusage``'s max RSS elsewhere, a
high-water mark only) is sampled every ``calls / 10`` calls, after waiting for
the last result, in three ways, each its own run of the case:

- ``no gc``: RSS as is, no collection forced: what a long loop sees;
- ``gc.collect()`` before each sample: memory that a collection frees is not
  counted (note that jax hooks ``gc.callbacks``: every collection, even
  Python's automatic young-generation ones, also runs jaxlib's
  ``collect_garbage``, which frees the Python objects that jaxlib's threads
  released without the GIL);
- ``gc.collect()`` and glibc's ``malloc_trim(0)``: the heap's free pages go
  back to the kernel, so what remains is held by live allocations, and the
  difference to the previous row is retention by the allocator.

The growth per call is ``(RSS at the last call - RSS at call calls / 5) /
(4 calls / 5)``: the first fifth lets the heap settle. One page (4 KiB) over
the measured calls, or the readings' scatter if larger, is the resolution;
the ratio hlodsl/jax is shown only where jax's growth is above it (a ratio to
zero means nothing).

5. **diagnosis** (on compiled ``W @ x + b``): the growth without gc when
   jaxlib's ``collect_garbage()`` runs every 1024 calls, and the Python
   objects left with 20 more frames on the caller's stack and with jaxlib's
   tracebacks switched off: what hlodsl leaves per call until the next
   collection is a record of the Python stack that jaxlib's
   ``execute_sharded`` takes (docs/benchmarks.md, "Soak").
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import dataclasses
import datetime
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
import warnings

import numpy as np

__all__ = ["rss_bytes", "rss_source", "malloc_trim", "Soak", "soak", "python_growth",
           "Retention", "compile_retention", "Config", "run", "table", "main"]

MiB = 2 ** 20
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: sampling modes: label in the table, whether to gc.collect(), whether to malloc_trim
MODES = {"nogc": ("RSS, no gc", False, False),
         "gc": ("RSS after gc.collect()", True, False),
         "trim": ("RSS after gc.collect() + malloc_trim", True, True)}


# -- reading the process's memory ---------------------------------------------------

def _statm_rss() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def rss_source() -> str:
    """Where ``rss_bytes`` reads: ``/proc/self/statm`` (Linux) or ``getrusage`` max RSS."""
    return "/proc/self/statm" if _statm_rss() is not None else "getrusage max RSS"


def rss_bytes() -> int:
    """The resident set size of this process now, in bytes.

    Falls back on ``resource.getrusage``'s maximum RSS (a high-water mark: it
    shows growth, never a return) where ``/proc`` is not there.
    """
    rss = _statm_rss()
    if rss is not None:
        return rss
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def _libc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _libc_trim()


def malloc_trim() -> bool:
    """Give the heap's free memory back to the kernel (glibc); False where unavailable."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


def sample(mode: str) -> int:
    """RSS in ``mode`` (see ``MODES``): as is, after ``gc.collect()``, and after a trim."""
    _, collect, trim = MODES[mode]
    if collect:
        gc.collect()
    if trim:
        malloc_trim()
    return rss_bytes()


def _modes() -> tuple[str, ...]:
    return tuple(m for m in MODES if m != "trim" or _TRIM is not None)


def _block(result) -> None:
    """Wait for a result of either side (a jax array or an hlodsl array)."""
    buf = getattr(result, "_buf", result)
    if hasattr(buf, "block_until_ready"):
        buf.block_until_ready()


# -- one soak: calls, RSS sampled every `every` calls -------------------------------

@dataclasses.dataclass
class Soak:
    """One soak run: the RSS series and the growth per call after the settling fifth."""

    label: str
    mode: str
    calls: list[int]  # call counts at which RSS was sampled (0 = after warm-up)
    rss: list[int]  # bytes
    seconds: float
    measure_from: int

    @property
    def measured_calls(self) -> int:
        return self.calls[-1] - self.measure_from

    @property
    def growth_per_call(self) -> float:
        """Bytes per call between the ``measure_from``-th and the last call."""
        i = self.calls.index(self.measure_from)
        return (self.rss[-1] - self.rss[i]) / self.measured_calls

    @property
    def resolution(self) -> float:
        """The smallest growth per call these readings can tell from none.

        One page over the measured calls (the smallest change of one reading), or
        the readings' scatter, if larger: their range less the net change, which
        is zero for a steady trend and the whole range for readings that jump up
        and down (the allocator's fluctuation).
        """
        measured = self.rss[self.calls.index(self.measure_from):]
        scatter = (max(measured) - min(measured)) - abs(measured[-1] - measured[0])
        return max(_PAGE, scatter) / self.measured_calls

    def series_mib(self) -> str:
        return " ".join(f"{r / MiB:.2f}" for r in self.rss)


def soak(label: str, call, n: int, every: int, warmup: int, mode: str) -> Soak:
    """Call ``call()`` ``n`` times after ``warmup`` calls, sampling RSS every ``every``."""
    r = None
    for _ in range(warmup):
        r = call()
    _block(r)
    del r
    gc.collect()  # every mode starts from a collected heap
    calls, rss = [0], [sample(mode)]
    t0 = time.perf_counter()
    done = 0
    while done < n:
        k = min(every, n - done)
        for _ in range(k):
            r = call()
        _block(r)
        del r
        done += k
        calls.append(done)
        rss.append(sample(mode))
    seconds = time.perf_counter() - t0
    measure_from = calls[min(2, len(calls) - 2)]  # the 2nd sample: 2*10^4 of 10^5
    return Soak(label, mode, calls, rss, seconds, measure_from)


# -- Python-level growth: tracemalloc -----------------------------------------------

def _filters():
    # The harness's own objects (a snapshot alive while the next is taken) are
    # allocated with this file as the innermost frame: left out. tracemalloc's
    # and importlib's own allocations likewise.
    return [tracemalloc.Filter(False, __file__, all_frames=False),
            tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
            tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
            tracemalloc.Filter(False, "<unknown>")]


def _jaxlib_collect_garbage():
    """jaxlib's ``collect_garbage`` (what jax's ``gc.callbacks`` hook calls), or None."""
    try:
        from jax._src.lib import _jax  # version-sensitive (jax 0.10.2)

        return _jax.collect_garbage
    except (ImportError, AttributeError):
        return None


@dataclasses.dataclass
class PyGrowth:
    """What ``n`` calls left allocated at the Python level (tracemalloc)."""

    collected: bool  # gc.collect() before the snapshots
    per_call: float  # bytes per call
    deferred_per_call: float | None  # of which freed by jaxlib's collect_garbage() alone
    lines: list[str]


def python_growth(call, n: int, warmup: int, collect: bool, top: int = 4) -> PyGrowth:
    """Bytes per call that Python allocates and keeps over ``n`` calls, and where.

    Runs under ``tracemalloc`` (25 frames): a snapshot after ``warmup`` calls,
    another after ``n`` more, with ``gc.collect()`` before each when
    ``collect``; the difference, grouped by traceback, is what the calls left
    allocated. Without ``collect``, the memory that jaxlib's
    ``collect_garbage()`` then frees (objects jaxlib's threads released while
    not holding the GIL, kept in jaxlib's list until a collection) is reported
    apart. Each line names the allocation site and the innermost frame of
    hlodsl's own code (``hlodsl/``, ``ops/``, ``stdlib/``) that led to it.
    """
    if tracemalloc.is_tracing():
        raise RuntimeError("python_growth runs its own tracemalloc session")
    jax_collect = _jaxlib_collect_garbage()
    r = None
    for _ in range(warmup):
        r = call()
    _block(r)
    del r
    gc.collect()
    tracemalloc.start(25)
    try:
        tracemalloc.take_snapshot().filter_traces(_filters())  # warms fnmatch's and re's caches
        if collect:
            gc.collect()
        elif jax_collect is not None:
            jax_collect()
        before = tracemalloc.take_snapshot()
        r = None
        for _ in range(n):
            r = call()
        _block(r)
        del r
        if collect:
            gc.collect()
        # Taking a snapshot allocates enough to start an automatic collection, whose
        # gc.callbacks would free jaxlib's deferred objects midway: no collection until
        # they are measured.
        enabled = gc.isenabled()
        gc.disable()
        try:
            after = tracemalloc.take_snapshot()
            deferred = None
            if not collect and jax_collect is not None:
                traced = tracemalloc.get_traced_memory()[0]
                jax_collect()
                deferred = (traced - tracemalloc.get_traced_memory()[0]) / n
        finally:
            if enabled:
                gc.enable()
    finally:
        tracemalloc.stop()
    diff = after.filter_traces(_filters()).compare_to(before.filter_traces(_filters()),
                                                      "traceback")
    total = sum(d.size_diff for d in diff)
    lines = [f"{d.size_diff / n:+.1f} B/call, {d.count_diff:+d} blocks: {_where(d.traceback)}"
             for d in sorted(diff, key=lambda d: -d.size_diff)[:top] if d.size_diff / n >= 0.05]
    return PyGrowth(collect, total / n, deferred, lines)


def _our_dirs() -> tuple[str, ...]:
    import hlodsl as hd

    return tuple(os.path.dirname(m.__file__) + os.sep for m in (hd, hd.ops, hd.stdlib))


def _where(traceback) -> str:
    """``file:line`` of the allocation, and of the innermost hlodsl frame leading to it."""
    frames = list(traceback)  # tracemalloc orders them oldest first
    site = frames[-1]
    dirs = _our_dirs()
    ours = next((f for f in reversed(frames) if f.filename.startswith(dirs)), None)
    text = f"{_short(site.filename)}:{site.lineno}"
    if ours is not None and ours is not site:
        text += f" (from {_short(ours.filename)}:{ours.lineno})"
    return text


def _short(filename: str) -> str:
    """A path relative to the repository or to site-packages."""
    f = filename.replace(os.sep, "/")
    root = ROOT.replace(os.sep, "/")
    if f.startswith(root + "/"):
        return f[len(root) + 1:]
    for marker in ("/site-packages/", "/lib/python3"):
        if marker in f:
            return f.split(marker, 1)[1]
    return f


# -- compile retention: N shapes, then del ------------------------------------------

@dataclasses.dataclass
class Retention:
    """RSS around compiling ``shapes`` signatures of one function and dropping it."""

    side: str  # "hlodsl" or "jax"
    cache_size: int | None  # hd.config.compile_cache_size (None for jax)
    mode: str  # "gc" or "trim"
    shapes: int
    cached: int  # signatures still compiled before del
    base: int
    compiled: int
    deleted: int
    seconds: float

    @property
    def label(self) -> str:
        return "hd.compile" if self.side == "hlodsl" else "jax.jit"

    @property
    def held_mib(self) -> float:
        return (self.compiled - self.base) / MiB

    @property
    def returned_mib(self) -> float:
        return (self.compiled - self.deleted) / MiB

    @property
    def left_mib(self) -> float:
        return (self.deleted - self.base) / MiB


def _fresh_elementwise():
    """A new function object each time (as a user's new function): jax keys its
    compile cache on the function, so ``jax.jit`` of one module-level function
    would share its cache between runs and ``del`` would free nothing."""
    def fn(x, y):
        return x * y + x - y

    return fn


def _jit_cache_size(jf) -> int:
    try:
        return jf._cache_size()  # jax's private count of compiled signatures
    except Exception:  # noqa: BLE001 (version-sensitive; only for the printout)
        return -1


def compile_retention(side: str, shapes: int, offset: int, mode: str,
                      cache_size: int | None = None) -> Retention:
    """Compile ``shapes`` distinct shapes of the elementwise function, then ``del`` it.

    Shapes are ``(offset + 1,)`` ... ``(offset + shapes,)``, so that runs in one
    process never share a shape. The function is a fresh one on both sides;
    RSS is read in ``mode`` (``gc`` or ``trim``, see ``MODES``).
    """
    import jax

    import hlodsl as hd

    saved = hd.config.compile_cache_size
    if cache_size is not None:
        hd.config.compile_cache_size = cache_size
    try:
        sizes = range(offset + 1, offset + shapes + 1)
        host = [(np.full(n, 2, np.float32), np.full(n, 3, np.float32)) for n in sizes]
        if side == "hlodsl":
            args = [(hd.array(a), hd.array(b)) for a, b in host]
            f = hd.compile(_fresh_elementwise(), name="soak_elementwise")
        else:
            args = [(jax.device_put(a), jax.device_put(b)) for a, b in host]
            f = jax.jit(_fresh_elementwise())
        del host
        base = sample(mode)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hd.RecompileWarning)
            r = None
            for a in args:
                r = f(*a)
            _block(r)
            del r
        seconds = time.perf_counter() - t0
        cached = f.cache_size() if side == "hlodsl" else _jit_cache_size(f)
        compiled = sample(mode)
        del f
        deleted = sample(mode)
    finally:
        hd.config.compile_cache_size = saved
    return Retention(side, cache_size if side == "hlodsl" else None, mode, shapes, cached,
                     base, compiled, deleted, seconds)


def _retention_here(side: str, shapes: int, mode: str, cache_size: int | None,
                    offset: int = 0) -> Retention:
    """One retention run after a warm-up run (8 other shapes) of the same side."""
    warm = min(shapes, 8)
    compile_retention(side, warm, offset, "gc")
    return compile_retention(side, shapes, offset + warm, mode, cache_size)


def _retention_child(side: str, shapes: int, mode: str, cache_size: int | None) -> Retention:
    """The same, in a fresh Python process (``python -m benchmarks.soak --child ...``)."""
    cmd = [sys.executable, "-m", "benchmarks.soak", "--child", side, str(shapes), mode,
           str(cache_size if cache_size is not None else 0)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return Retention(**data)


def _retention_python(shapes: int, offset: int, top: int = 4) -> tuple[float, list[str]]:
    """tracemalloc: what Python still holds after compiling ``shapes`` shapes and ``del f``."""
    import hlodsl as hd

    sizes = range(offset + 1, offset + shapes + 1)
    args = [(hd.array(np.full(n, 2, np.float32)), hd.array(np.full(n, 3, np.float32)))
            for n in sizes]
    tracemalloc.start(25)
    try:
        tracemalloc.take_snapshot().filter_traces(_filters())  # warms fnmatch's and re's caches
        gc.collect()
        before = tracemalloc.take_snapshot()
        f = hd.compile(_fresh_elementwise(), name="soak_elementwise")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hd.RecompileWarning)
            for a in args:
                f(*a)
        del f, a
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    diff = after.filter_traces(_filters()).compare_to(before.filter_traces(_filters()),
                                                      "traceback")
    total = sum(d.size_diff for d in diff)
    lines = [f"{d.size_diff / 1024:+.1f} KiB, {d.count_diff:+d} blocks: {_where(d.traceback)}"
             for d in sorted(diff, key=lambda d: -d.size_diff)[:top] if d.size_diff > 0]
    return total, lines


# -- the functions, written once for both sides --------------------------------------

def dense(W, x, b):
    return W @ x + b


def elementwise(x, y):
    return x * y + x - y


def dense_dict(p):
    return p["W"] @ p["x"] + p["b"]


def _cases():
    """``(section, case, hlodsl call, jax call)`` for every soak, inputs made once."""
    import jax

    import hlodsl as hd

    rng = np.random.default_rng(0)
    host = {"W": rng.random((64, 64), dtype=np.float32), "x": rng.random(64, dtype=np.float32),
            "b": rng.random(64, dtype=np.float32), "X": rng.random((64, 64), dtype=np.float32),
            "Y": rng.random((64, 64), dtype=np.float32)}
    h = {k: hd.array(v) for k, v in host.items()}
    j = {k: jax.device_put(v) for k, v in host.items()}
    hp = {"W": h["W"], "x": h["x"], "b": h["b"]}
    jp = {"W": j["W"], "x": j["x"], "b": j["b"]}

    f_dense, jf_dense = hd.compile(dense), jax.jit(dense)
    f_elem, jf_elem = hd.compile(elementwise), jax.jit(elementwise)
    f_dict, jf_dict = hd.compile(dense_dict), jax.jit(dense_dict)
    hW, hx, hb, hX, hY = h["W"], h["x"], h["b"], h["X"], h["Y"]
    jW, jx, jb, jX, jY = j["W"], j["x"], j["b"], j["X"], j["Y"]
    cases = [
        ("compiled", "W @ x + b, 64x64 f32", lambda: f_dense(hW, hx, hb),
         lambda: jf_dense(jW, jx, jb)),
        ("compiled", "x * y + x - y, 64x64 f32", lambda: f_elem(hX, hY),
         lambda: jf_elem(jX, jY)),
        ("compiled", "W @ x + b, dict argument", lambda: f_dict(hp), lambda: jf_dict(jp)),
        ("eager", "x * y, 64x64 f32", lambda: hX * hY, lambda: jX * jY),
    ]
    for _, label, ours, peer in cases:  # the same result on both sides first
        np.testing.assert_allclose(np.asarray(ours()), np.asarray(peer()), rtol=1e-5,
                                   atol=1e-5, err_msg=label)
    return cases


def _labels(section: str) -> tuple[str, str]:
    return ("hd.compile", "jax.jit") if section == "compiled" else ("hlodsl x * y", "jax x * y")


# -- the run --------------------------------------------------------------------------

@dataclasses.dataclass
class Config:
    calls: int = 100_000
    eager_calls: int = 10_000
    warmup: int = 2_000
    traced_calls: int = 10_000
    shapes: int = 200
    large_cache: int = 100_000
    in_process: bool = False  # compile retention here rather than in fresh processes

    @classmethod
    def quick(cls) -> Config:
        return cls(calls=1_000, eager_calls=500, warmup=50, traced_calls=200, shapes=4,
                   in_process=True)


def _row(section, case, ours, ours_v, peer, peer_v, unit, resolution=None):
    ratio = ours_v / peer_v if peer_v > (resolution or 0.0) else None
    return {"section": section, "case": case, "ours": ours, "ours_v": ours_v, "peer": peer,
            "peer_v": peer_v, "unit": unit, "resolution": resolution, "ratio": ratio}


def run(cfg: Config | None = None, quick: bool = False, out=print) -> dict:
    """Run every measurement; prints progress and the RSS series through ``out``.

    Returns ``{"rows": [...], "soaks": [Soak, ...], "python": [(case, PyGrowth hlodsl,
    PyGrowth jax), ...], "retention": [Retention, ...], "retention_python": (bytes,
    lines)}``.
    """
    cfg = cfg or (Config.quick() if quick else Config())
    cases = _cases()
    # Everything made so far (imports, the compiled cases) is long-lived: frozen, it is
    # no longer traversed, so each gc.collect() before a sample takes microseconds, not
    # ~90 ms. Collections still run jax's gc.callbacks hook, and everything made from
    # here on is collected as usual.
    gc.collect()
    gc.freeze()
    try:
        return _run(cfg, cases, out)
    finally:
        gc.unfreeze()


def _run(cfg: Config, cases, out) -> dict:
    import hlodsl as hd

    result = {"rows": [], "soaks": [], "python": [], "retention": []}
    rows = result["rows"]

    # 1-2. RSS soaks, in each sampling mode
    for section, label, ours, peer in cases:
        n = cfg.calls if section == "compiled" else cfg.eager_calls
        every = max(n // 10, 1)
        ours_label, peer_label = _labels(section)
        for mode in _modes():
            mine, theirs = (soak(f"{side}: {label}", call, n, every, cfg.warmup, mode)
                            for side, call in (("hlodsl", ours), ("jax", peer)))
            for s in (mine, theirs):
                result["soaks"].append(s)
                out(f"{section} {s.label} [{MODES[mode][0]}]: {s.growth_per_call:+.3f} B/call "
                    f"over calls {s.measure_from}-{n} ({s.seconds:.1f} s); RSS MiB every "
                    f"{every} calls: {s.series_mib()}")
            rows.append(_row(f"{section}, {MODES[mode][0]}", f"{label}, {n} calls",
                             ours_label, mine.growth_per_call, peer_label,
                             theirs.growth_per_call, "B/call",
                             resolution=max(mine.resolution, theirs.resolution)))

    # 3. Python-level growth: objects kept for good, and objects waiting for a collection
    for section, label, ours, peer in cases:
        n = cfg.traced_calls
        ours_label, peer_label = _labels(section)
        for collect in (False, True):
            mine = python_growth(ours, n, max(cfg.warmup // 10, 1), collect)
            theirs = python_growth(peer, n, max(cfg.warmup // 10, 1), collect)
            result["python"].append((label, mine, theirs))
            how = "after gc.collect()" if collect else "no gc"
            deferred = "" if mine.deferred_per_call is None else (
                f"; jaxlib's collect_garbage() then frees {mine.deferred_per_call:.1f} B/call "
                f"of hlodsl's, {theirs.deferred_per_call:.1f} of jax's")
            out(f"tracemalloc [{how}] {section} {label}: hlodsl {mine.per_call:+.2f} B/call, "
                f"jax {theirs.per_call:+.2f} B/call over {n} calls{deferred}"
                + "".join(f"\n    hlodsl {ln}" for ln in mine.lines)
                + "".join(f"\n    jax    {ln}" for ln in theirs.lines))
            rows.append(_row(f"{section}, Python objects (tracemalloc, {how})",
                             f"{label}, {n} calls", ours_label, mine.per_call, peer_label,
                             theirs.per_call, "B/call", resolution=_PAGE / n))

    _diagnosis(cfg, cases[0], rows, out)

    # 4. compile retention, each run in a fresh process (or here, one after the other)
    saved = hd.config.compile_cache_size
    offset = 0
    for mode in [m for m in _modes() if m != "nogc"]:
        runs = []
        for side, size in (("jax", None), ("hlodsl", saved), ("hlodsl", cfg.large_cache)):
            if cfg.in_process:
                r = _retention_here(side, cfg.shapes, mode, size, offset)
                offset += cfg.shapes + min(cfg.shapes, 8)
            else:
                r = _retention_child(side, cfg.shapes, mode, size)
            result["retention"].append(r)
            runs.append(r)
            out(f"compile + del, {r.label}"
                f"{'' if size is None else f' (compile_cache_size={size})'} [{MODES[mode][0]}]: "
                f"{r.shapes} shapes in {r.seconds:.1f} s, {r.cached} signatures cached; RSS MiB "
                f"before {r.base / MiB:.2f}, after compiling {r.compiled / MiB:.2f}, after del "
                f"{r.deleted / MiB:.2f}")
        peer = runs[0]
        for size, mine in zip((saved, cfg.large_cache), runs[1:]):
            case = f"{cfg.shapes} shapes, compile_cache_size={size} ({mine.cached} kept)"
            for name, attr in (("held after compiling", "held_mib"),
                               ("returned by del", "returned_mib"),
                               ("left after del", "left_mib")):
                rows.append(_row(f"compile + del, {MODES[mode][0]}", f"{case}: {name}",
                                 "hd.compile", getattr(mine, attr), "jax.jit",
                                 getattr(peer, attr), "MiB", resolution=_PAGE / MiB))
    total, lines = _retention_python(cfg.shapes, max(offset, 1000))
    result["retention_python"] = (total, lines)
    out(f"tracemalloc compile + del ({cfg.shapes} shapes, compile_cache_size={saved}): Python "
        f"still holds {total / 1024:+.1f} KiB after del" + "".join(f"\n    {ln}" for ln in lines))
    return result


def _every(call, k: int, hook):
    """``call`` with ``hook()`` run once every ``k`` calls."""
    count = 0

    def wrapped():
        nonlocal count
        count += 1
        if count >= k:
            count = 0
            hook()
        return call()

    return wrapped


def _deeper(depth: int, fn):
    """``fn()`` called from ``depth`` more Python frames."""
    return fn() if depth <= 0 else _deeper(depth - 1, fn)


def _tracebacks_switch():
    """jaxlib's switch for the Python tracebacks it records (``set_tracebacks_enabled``)."""
    try:
        from jax._src.lib import _jax  # version-sensitive (jax 0.10.2)

        return _jax.tracebacks_enabled, _jax.set_tracebacks_enabled
    except (ImportError, AttributeError):
        return None


def _diagnosis(cfg: Config, case, rows: list, out) -> None:
    """Where the growth without gc comes from, on the first case (compiled ``W @ x + b``).

    1. RSS without gc when jaxlib's ``collect_garbage()`` (what jax's
       ``gc.callbacks`` hook runs at every collection) runs every 1024 calls;
    2. Python objects left (no gc) when the call runs 20 Python frames deeper:
       an object recording the Python stack grows with it;
    3. the same with jaxlib's tracebacks switched off (``set_tracebacks_enabled``).
    """
    section, label, ours, peer = case
    ours_label, peer_label = _labels(section)
    jax_collect = _jaxlib_collect_garbage()
    if jax_collect is not None:
        n = cfg.calls
        every = max(n // 10, 1)
        mine, theirs = (soak(f"{side}: {label}, collect_garbage() every 1024 calls",
                             _every(call, 1024, jax_collect), n, every, cfg.warmup, "nogc")
                        for side, call in (("hlodsl", ours), ("jax", peer)))
        for s in (mine, theirs):
            out(f"diagnosis {s.label} [{MODES['nogc'][0]}]: {s.growth_per_call:+.3f} B/call; "
                f"RSS MiB: {s.series_mib()}")
        rows.append(_row(f"diagnosis, {MODES['nogc'][0]}",
                         f"{label}, {n} calls, jaxlib's collect_garbage() every 1024 calls",
                         ours_label, mine.growth_per_call, peer_label, theirs.growth_per_call,
                         "B/call", resolution=max(mine.resolution, theirs.resolution)))
    n = cfg.traced_calls
    warm = max(cfg.warmup // 10, 1)
    variants = [("20 more Python frames on the stack",
                 lambda call: (lambda: _deeper(20, call)), None)]
    switch = _tracebacks_switch()
    if switch is not None:
        variants.append(("jaxlib tracebacks off", lambda call: call, switch))
    for what, wrap, sw in variants:
        was = sw[0]() if sw else None
        try:
            if sw:
                sw[1](False)
            mine, theirs = (python_growth(wrap(call), n, warm, collect=False)
                            for call in (ours, peer))
        finally:
            if sw:
                sw[1](was)
        out(f"diagnosis tracemalloc [no gc] {label}, {what}: hlodsl {mine.per_call:+.2f} B/call, "
            f"jax {theirs.per_call:+.2f} B/call"
            + "".join(f"\n    hlodsl {ln}" for ln in mine.lines))
        rows.append(_row("diagnosis, Python objects (tracemalloc, no gc)",
                         f"{label}, {n} calls, {what}", ours_label, mine.per_call, peer_label,
                         theirs.per_call, "B/call", resolution=_PAGE / n))


def _fmt(v: float, unit: str) -> str:
    if unit == "MiB":
        return f"{v:.2f} MiB"
    return f"{v:+.2f} B/call" if abs(v) < 10 else f"{v:+.0f} B/call"


def table(rows: list[dict]) -> str:
    """Markdown, in the columns of ``benchmarks.table``; a ratio only where it means something."""
    lines = ["| section | case | hlodsl | growth | peer | growth | hlodsl/peer |",
             "|---|---|---|---:|---|---:|---:|"]
    for r in rows:
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}"
        lines.append(f"| {r['section']} | {r['case']} | {r['ours']} | "
                     f"{_fmt(r['ours_v'], r['unit'])} | {r['peer']} | "
                     f"{_fmt(r['peer_v'], r['unit'])} | {ratio} |")
    res = [r["resolution"] for r in rows if r["unit"] == "B/call"]
    if res:
        lines += ["", f"- resolution: one page (4 KiB) over the measured calls, or the scatter "
                      f"of the RSS readings if larger: {min(res):.3f}-{max(res):.3f} B/call here "
                      "(less is no per-call growth); a ratio is shown only where the peer's "
                      "value is above it (—: none)"]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak",
                                     description="Soak benchmark: memory growth per call, "
                                                 "hlodsl against jax (docs/benchmarks.md)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny counts for a smoke run (the numbers mean nothing)")
    d = Config()
    parser.add_argument("--calls", type=int, help=f"compiled calls per soak ({d.calls})")
    parser.add_argument("--eager-calls", type=int, help=f"eager ops per soak ({d.eager_calls})")
    parser.add_argument("--warmup", type=int, help=f"calls before measuring ({d.warmup})")
    parser.add_argument("--traced-calls", type=int,
                        help=f"calls under tracemalloc ({d.traced_calls})")
    parser.add_argument("--shapes", type=int, help=f"shapes compiled then dropped ({d.shapes})")
    parser.add_argument("--in-process", action="store_true", default=None,
                        help="compile-retention runs in this process, not in fresh ones")
    parser.add_argument("--child", nargs=4, metavar=("SIDE", "SHAPES", "MODE", "CACHE"),
                        help=argparse.SUPPRESS)  # one retention run; prints it as JSON
    args = parser.parse_args(argv)
    if args.child:
        side, shapes, mode, cache = args.child
        import hlodsl  # noqa: F401  (imported before the freeze, as in run())

        gc.collect()
        gc.freeze()
        r = _retention_here(side, int(shapes), mode, int(cache) or None)
        print(json.dumps(dataclasses.asdict(r)))
        return
    cfg = Config.quick() if args.quick else Config()
    for k in ("calls", "eager_calls", "warmup", "traced_calls", "shapes", "in_process"):
        if getattr(args, k) is not None:
            setattr(cfg, k, getattr(args, k))
    from .report import machine

    t0 = time.perf_counter()
    result = run(cfg, out=lambda s: print(s, flush=True))
    print()
    print(f"Machine: {machine()}")
    print(f"Date: {datetime.date.today().isoformat()}; RSS from {rss_source()}; malloc_trim "
          f"{'available' if _TRIM is not None else 'unavailable'}; mode "
          f"{'quick (smoke run, the numbers mean nothing)' if args.quick else 'full'}; "
          f"compile retention {'in this process' if cfg.in_process else 'in fresh processes'}; "
          f"took {time.perf_counter() - t0:.1f} s\n")
    print(table(result["rows"]))


if __name__ == "__main__":
    main()
