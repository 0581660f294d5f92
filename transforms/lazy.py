"""Eager ops recorded until a value is read, then run as one executable per chain.

An eager elementwise op on a small array costs PJRT's execute (about 4 µs of
CPU time here) on top of Python's dispatch; a torch op costs 1 to 2 µs in all.
So an eager op whose compiled module is known already (an operator's
``FastPath`` hit, an eager module's plan: ``hlodsl.transforms.eager``) is
*recorded* instead of run: its result is an array with no buffer yet
("pending"), and the op joins its thread's chain. The chain runs

- when a pending array's value is read: anything that reads ``_buf`` (printing,
  numpy, a compiled call, an op that is not recorded, ``block_until_ready``)
  runs it first (``Array.__getattr__``);
- when it holds ``config.eager_fusion_ops`` ops;
- before an array is donated (its buffer may be a recorded op's input).

Its structure (which compiled entries, how their operands connect, which of
their results are still referenced) is its key. A key seen
``config.eager_fusion_repeats`` times is staged as one program, each op's
function staged again on the results of the ops before it, and compiled once;
before that its ops run one by one (those whose results nothing references are
skipped). Results nothing references any more are not computed.

Values are bit for bit those of running each op at once. XLA, handed several
ops in one module, rewrites across them (``a / b / c`` into ``a / (b * c)``)
and fuses them into one loop, where LLVM contracts a multiply and an add into
one FMA that rounds once: both change the last bits. So each op's result goes
through an ``opt-barrier`` (the algebraic simplifier does not look through it)
and the chain compiles with XLA's ``fusion`` pass off (every instruction its
own loop). Without fusion, an op made of several rounding instructions (a
multiply and an add in one ``floor_divide``) would round differently from its
own, fused, module: only ops whose module has at most one rounding instruction
are recorded (checked once per compiled signature, on XLA's optimised HLO).

Errors are still raised at the user's line: an op is recorded only where its
signature compiled already, so its shape rules have passed; what XLA could
still refuse at run time (memory) is raised where the value is read.
"""

from __future__ import annotations

import re
import threading
import weakref
from sys import getrefcount

from hlodsl.arrays.array import ConsumedBuffer
from hlodsl.arrays.tree import flatten
from hlodsl.cache import BoundedCache
from hlodsl.compilation import call as _call
from hlodsl.compilation.call import Entry
from hlodsl.settings import config

__all__ = ["record", "flush", "flush_all", "stats"]

_new = object.__new__
_MISSING = object()

#: Opcodes that move or re-type values without rounding (``convert`` rounds, but as a
#: function of its one operand, whatever runs around it).
_EXACT = frozenset({
    "parameter", "constant", "broadcast", "bitcast", "reshape", "transpose", "copy",
    "slice", "concatenate", "tuple", "get-tuple-element", "fusion", "iota", "convert",
    "bitcast-convert", "pad", "reverse"})
_OPCODE = re.compile(r"^\s*(?:ROOT\s+)?%\S+\s*=\s*.*?\s([a-z][a-z0-9-]*)\(", re.MULTILINE)

#: Counts, for tests and benchmarks: ops recorded, chains run one op at a time and as
#: one executable, chains compiled.
stats = {"recorded": 0, "one_by_one": 0, "fused": 0, "compiled": 0}

_FUSED = BoundedCache(lambda: config.eager_fusion_cache_size, "compiled eager chains")
_SEEN = BoundedCache(lambda: 4 * config.eager_fusion_cache_size, "eager chain structures")


def _rounding_instructions(text: str) -> int:
    return sum(1 for op in _OPCODE.findall(text) if op not in _EXACT)


def _analyse(entry, fn):
    """``[flops, bytes, fn, alone]`` of ``entry``'s program, result and function if it may
    be recorded (``alone``: see ``_ALONE``), else False (kept on the entry, whose
    function is always ``fn``)."""
    from hlodsl.runtime import cost_analysis

    info = False
    if type(entry) is Entry and entry.single and entry.exe.num_devices == 1:
        t = entry.staged.out_types[0]
        if _rounding_instructions(entry.exe.optimized_hlo()) <= 1:
            cost = cost_analysis(entry.exe)  # (transcendentals are not FLOPs there)
            flops = cost.get("flops", 0.0) if cost else float(t.size)
            info = [max(float(flops), 0.0), t.size * t.dtype.np_dtype.itemsize, fn, 0]
    entry.lazy = info
    return info


#: An op whose result was read alone, before any other op joined it, this many times
#: in a row runs at once for a while (recording it only added to each call): then it
#: is recorded again, in case its calls now come in chains.
_ALONE, _RETRY = 8, 64


#: PJRT runs a program of fewer FLOPs than this (XLA's cost analysis) on the calling
#: thread, a larger one on its worker thread (a thread switch: tens of µs when the
#: machine is loaded).
_CHEAP = 1000.0


class Chain:
    """One thread's recorded ops: ``records[j] = (entry, operands)``, operands ``i >= 0``
    naming an outside buffer (``ext[i]``) and ``~k`` the result of op ``k``; ``results[j]``
    op ``j``'s result, which holds its chain (``_pending``) and its place there
    (``_index``) until the chain runs.
    """

    __slots__ = ("records", "results", "ext", "classes", "ext_index", "lock", "flops",
                 "__weakref__")

    def __init__(self):
        self.records: list = []  # (the key of a chain is made of these)
        self.results: list = []
        self.ext: list = []  # buffers
        self.classes: list = []  # the array class each was passed as
        self.ext_index: dict = {}  # id(buffer) -> its latest place in ext
        # Another thread may read a pending array. (Not reentrant: nothing that runs under
        # it reads a pending array's value.)
        self.lock = threading.Lock()
        self.flops = 0.0  # of the recorded ops, as XLA's cost analysis counts them

    def flush(self) -> None:
        """Run the recorded ops whose results are referenced, and give them their buffers."""
        with self.lock:  # held while running: a reader in another thread waits for it
            records, results, ext, classes = self.records, self.results, self.ext, self.classes
            if not records:
                return
            self.records, self.results, self.ext, self.classes = [], [], [], []
            self.ext_index = {}
            self.flops = 0.0
            _run(records, results, ext, classes)

    def force(self, array):
        """Run the chain; ``array``'s buffer (``Array.__getattr__``)."""
        self.flush()
        buf = array.__dict__.get("_buf")
        if buf is None:  # cannot happen: a referenced result is always an output
            raise RuntimeError(f"eager chain: {array.type} was not computed")
        return buf


class _Failed:
    """What the results of a chain that raised hold: reading one raises that error again."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error

    def force(self, array):
        raise RuntimeError(f"eager ops recorded for {array.type} failed when they ran: "
                           f"{type(self.error).__name__}: {self.error}") from self.error


class _Local(threading.local):
    chain: Chain | None = None


_LOCAL = _Local()
_CHAINS: weakref.WeakSet = weakref.WeakSet()


def _chain() -> Chain:
    chain = _LOCAL.chain
    if chain is None:
        chain = _LOCAL.chain = Chain()
        _CHAINS.add(chain)
    return chain


def flush() -> None:
    """Run this thread's recorded ops."""
    chain = _LOCAL.chain
    if chain is not None:
        chain.flush()


def flush_all() -> None:
    """Run every thread's recorded ops (before a buffer is donated: it may be an input)."""
    for chain in list(_CHAINS):
        chain.flush()


def record(entry, fn, args) -> object | None:
    """``entry``'s result on the arrays ``args``, recorded (a pending array), or None where
    the op must run now (not a recordable entry, too large, an argument without a value).

    ``fn`` is the function ``entry`` compiled: staged again when the chain compiles.
    """
    info = entry.lazy
    if info is None:
        info = _analyse(entry, fn)
    if info is False or info[1] > config.eager_fusion_bytes:
        return None
    if info[3] >= _ALONE:  # read alone every time lately: run at once, for a while
        info[3] = 0 if info[3] >= _RETRY else info[3] + 1
        return None
    chain = _LOCAL.chain or _chain()
    flops = info[0]
    # A cheap chain stays cheap: it runs before the op that would make it dear; a chain
    # made dear by its first op grows to its length limit.
    if 0.0 < chain.flops < _CHEAP <= chain.flops + flops:
        chain.flush()
    with chain.lock:
        records, ext, classes, index = chain.records, chain.ext, chain.classes, chain.ext_index
        refs = []
        for a in args:
            p = a._pending
            if p is not None:
                if p is not chain:  # another thread's result: the op's own path runs
                    return None  # it (outside our lock)
                refs.append(~a._index)
                continue
            buf = a._buf
            cls = type(a)
            if buf is None or type(buf) is ConsumedBuffer or cls._sharded or buf.is_deleted():
                return None  # the op's own path says what is wrong
            k = id(buf)  # ext holds the buffer: the id stays its own while recorded
            i = index.get(k)
            if i is None or classes[i] is not cls:
                i = index[k] = len(ext)
                ext.append(buf)
                classes.append(cls)
            refs.append(i)
        n = len(records)
        out = _new(entry.out_class)
        out._pending = chain
        out._index = n
        if n:  # not alone: neither this op nor the chain's first
            if info[3]:
                info[3] = 0
            if n == 1:
                records[0][0].lazy[3] = 0
        records.append((entry, tuple(refs)))
        chain.results.append(out)
        chain.flops += flops
        full = n + 1 >= config.eager_fusion_ops
    if full:
        chain.flush()
    return out


def _needed(records, live) -> list[bool]:
    """Which ops a referenced result depends on."""
    needed = [False] * len(records)
    for i in live:
        needed[i] = True
    for i in range(len(records) - 1, -1, -1):
        if needed[i]:
            for r in records[i][1]:
                if r < 0:
                    needed[~r] = True
    return needed


def _run(records: list, results: list, ext: list, classes: list) -> None:
    stats["recorded"] += len(records)
    if len(records) == 1:  # one op, read at once (``(a + b).block_until_ready()``): its
        # own executable, no chain to look up or compile
        a = results.pop()
        if getrefcount(a) > 2:  # (``a`` and getrefcount's argument)
            stats["one_by_one"] += 1
            entry, refs = records[0]
            entry.lazy[3] += 1
            _assign([a], _alone, entry.exe.execute, [ext[r] for r in refs])
        return
    # A result referenced from anywhere but ``results`` is live: computed and handed its
    # buffer. (The reference count, not a weak reference per op: a tenth of an op's cost.
    # 2 = ``results`` and getrefcount's argument.)
    live = [i for i in range(len(results)) if getrefcount(results[i]) > 2]
    arrays = [results[i] for i in live]
    results.clear()
    if not live:
        return
    key = (tuple(records), tuple(live))
    exe = _FUSED.get(key)
    if exe is None:
        seen = (_SEEN.get(key) or 0) + 1
        if seen >= config.eager_fusion_repeats:
            _SEEN.pop(key)
            try:
                exe = _compile(records, ext, classes, live)
            except Exception:  # never worse than one by one (the test suite hears of it)
                stats["failed"] = stats.get("failed", 0) + 1
                exe = False
            _FUSED.put(key, exe)
        else:
            _SEEN.put(key, seen)
    if exe:
        stats["fused"] += 1
        _assign(arrays, exe.execute, ext)
    else:
        stats["one_by_one"] += 1
        _assign(arrays, _one_by_one, records, ext, live)


def _assign(arrays: list, run, *args) -> None:
    """Give ``arrays`` the buffers ``run(*args)`` makes; if it raises, each says so when read."""
    try:
        outs = run(*args)
    except BaseException as e:  # (the chain is gone: nothing else could run them)
        failed = _Failed(e)
        for a in arrays:
            a._pending = failed
        raise
    for a, b in zip(arrays, outs):
        a._buf = b
        d = a.__dict__
        del d["_pending"], d["_index"]


def _alone(execute, bufs) -> list:
    return execute(bufs)


def _one_by_one(records, bufs, live) -> list:
    needed = _needed(records, live)
    vals: list = [None] * len(records)
    for i, (entry, refs) in enumerate(records):
        if needed[i]:
            vals[i] = entry.exe.execute([bufs[r] if r >= 0 else vals[~r] for r in refs])[0]
    return [vals[i] for i in live]


def _compile(records, ext, classes, live):
    """The chain staged as one program (an ``opt-barrier`` after each op) and compiled
    with XLA's fusion pass off."""
    from hlodsl.ir.printer import module_text
    from hlodsl.ir.staging import stage_types
    from hlodsl.ops import OptimizationBarrier
    from hlodsl.runtime import compile_hlo

    needed = _needed(records, live)
    barrier = OptimizationBarrier()
    fakes = []
    for buf, cls in zip(ext, classes):
        a = _new(cls)
        a._buf, a._node = buf, None
        fakes.append(a)
    _, treedef = flatten((tuple(fakes), {}))
    weak = tuple(bool(getattr(cls, "_weak", False)) for cls in classes)

    def chain(*xs):
        vals: list = [None] * len(records)
        for i, (entry, refs) in enumerate(records):
            if needed[i]:
                fn = entry.lazy[2]
                vals[i] = barrier(fn(*[xs[r] if r >= 0 else vals[~r] for r in refs]))[0]
        return tuple(vals[i] for i in live)

    staged = stage_types(chain, treedef, tuple(a.type for a in fakes), "eager_chain",
                         weak if any(weak) else None)
    expect = [records[i][0].staged.out_types[0] for i in live]
    if list(staged.out_types) != expect:  # an op staged otherwise than it compiled alone
        raise RuntimeError(f"eager chain: restaged types {staged.out_types} != {expect}")
    stats["compiled"] += 1
    return compile_hlo(module_text(staged.computation, "eager_chain", metadata=False),
                       out_types=[(t.shape, t.dtype.np_dtype) for t in staged.out_types],
                       options={"xla_disable_hlo_passes": "fusion"})


_call.before_donation(flush_all)
