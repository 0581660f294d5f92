"""``hd.profile``: where the time of a compiled program goes, measured, by source line.

``code_hlo(...).summary()`` estimates FLOPs and bytes per Python line; this
runs the compiled program ``runs`` times under XLA's profiler and reports the
time XLA's runtime itself records for each instruction of the optimised
module (on XLA:CPU one event per thunk, named by the instruction it runs: a
fusion, a ``dot``, a ``while``, a copy; on a device, its kernels). The events
are attributed to Python lines through the metadata of the optimised module
(``grad of file:line`` included, as in ``summary()``):

- an instruction runs from its start to its completion (XLA:CPU hands dots
  and convolutions to its intra-op threads: the thunk executor records where
  each completes); where instructions overlap, each moment is shared among
  those in flight, and a ``while``/``call`` keeps only the moments none of
  its body's instructions runs. The shares of a run add up to the time some
  instruction was in flight. A busy machine makes some runs slower: only the
  middle half of the runs, by that total, counts, and an instruction's
  **time** is its mean share over them;
- a **fusion** is timed as a whole (XLA runs it as one loop); its time is
  shared among the lines of the instructions fused into it in proportion to
  their estimated FLOPs (their count where none does arithmetic). That split
  is an estimate; ``by_instruction()`` shows the measured fusions unsplit;
- the **total** is the mean of those runs' totals (the rows of the tables add
  up to it), and ``wall`` the mean time of the middle half of plain calls (``block_until_ready`` included),
  measured before profiling: their difference is the runtime's own overhead
  (dispatch, waiting for results) and the moments no instruction was in
  flight. The profiler slows the calls it watches, outside the instructions:
  their wall time is not the comparison.

>>> import numpy as np, hlodsl as hd
>>> w = hd.array(np.ones((64, 64), np.float32))
>>> p = hd.profile(lambda w: (w @ w).sum(), w, runs=3)
>>> p.runs, p.total_ns > 0, p.wall_ns > 0
(3, True, True)
>>> sum(i.time_ns for i in p.instructions) > 0
True
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import NamedTuple

from hlodsl.compilation.compiler import Compiled
from hlodsl.compilation.compiler import compile as compile_fn
from .hlo_text import HloModule, Instruction, flops, line_costs, parse_module
from .hlo_text import source_label
from .introspect_html import Table, _esc, _code_of, human
from hlodsl.runtime.jaxlib_compat import XlaEvent, profile_events
from hlodsl.runtime import copy_buffer, platform
from hlodsl.arrays.array import Array
from hlodsl.arrays.tree import block_until_ready, flatten, unflatten

__all__ = ["profile", "Profile", "InstructionTime", "LineTime"]


class InstructionTime(NamedTuple):
    """The measured time of one instruction of the optimised module, per run."""

    name: str             # as in the optimised module (``add_multiply_fusion.3``)
    opcode: str           # ``fusion``, ``dot``, ``while``, ...
    time_ns: float        # the mean over the middle half of the runs
    events: float         # how many times it ran per run (a while body's: once per trip)
    lines: tuple          # the source labels its time is shared among


class LineTime(NamedTuple):
    """What one Python line costs: measured time, and the estimates of ``summary()``."""

    label: str
    file: str | None
    line: int | None
    time_ns: float
    instructions: int
    flops: int
    bytes: int


def _ns(value: float) -> str:
    """``1234.5`` ns -> ``'1.23 us'``."""
    for step, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if value >= step:
            v = value / step
            return f"{v:.{0 if v >= 100 else 1 if v >= 10 else 2}f} {unit}"
    return f"{value:.0f} ns"


def _key(inst: Instruction):
    src = inst.source
    return (src, inst.grad_order) if src else (None, 0)


def _label(key) -> str:
    src, grad = key
    return source_label(src[0], src[1], grad) if src else "(no source)"


def _fused(inst: Instruction, comps: dict, depth: int = 0):
    """``(instruction, computation)`` of everything fused into ``inst`` (nested fusions too)."""
    for _, name in inst.called():
        comp = comps.get(name)
        if comp is None or depth > 16:
            continue
        for sub in comp.instructions:
            if sub.opcode == "parameter":
                continue
            yield sub, comp
            if sub.opcode == "fusion":
                yield from _fused(sub, comps, depth + 1)


def _split(inst: Instruction, comps: dict) -> dict:
    """How ``inst``'s time is shared among source lines: ``{line key: weight}`` summing to 1.

    A fusion's share of each fused line follows the line's estimated FLOPs (its
    instruction count where the fusion does no arithmetic); an instruction
    without sourced fused instructions goes to its own line.
    """
    if inst.opcode == "fusion":
        weights: dict = defaultdict(float)
        counts: dict = defaultdict(float)
        for sub, comp in _fused(inst, comps):
            if sub.opcode == "fusion" or sub.source is None:
                continue
            weights[_key(sub)] += flops(sub, comp)
            counts[_key(sub)] += 1
        use = weights if sum(weights.values()) > 0 else counts
        total = sum(use.values())
        if total > 0:
            return {k: v / total for k, v in use.items() if v}
    return {_key(inst): 1.0}


#: Instructions that run others (their events enclose those of their computations).
_CONTAINERS = frozenset({"while", "conditional", "call"})


def _attributed(events: list[XlaEvent], containers: set) -> list[tuple[XlaEvent, float]]:
    """Each event with its share of its run's time line.

    Instructions overlap in time (XLA:CPU runs independent thunks on several
    threads, and a ``while`` encloses its body's): each moment of a run is
    shared equally among the instructions in flight then, containers getting
    only the moments none of their instructions runs. The shares of a run add
    up to the time some instruction was in flight.
    """
    by_run: dict = defaultdict(list)
    for e in events:
        by_run[e.run].append(e)
    out = []
    for group in by_run.values():
        share = [0.0] * len(group)
        marks = sorted([(e.start_ns, 1, k) for k, e in enumerate(group)]
                       + [(e.end_ns, 0, k) for k, e in enumerate(group)])
        active: set = set()
        last = None
        for t, starts, k in marks:
            if active and t > last:
                workers = [a for a in active if group[a].instruction not in containers] \
                    or list(active)
                for a in workers:
                    share[a] += (t - last) / len(workers)
            last = t
            if starts:
                active.add(k)
            else:
                active.discard(k)
        out.extend(zip(group, share))
    return out


def _middle(values) -> list:
    """The keys (of a dict) or indices (of a list) of the middle half of ``values``: the
    runs a busy machine disturbed least in either direction (at least one)."""
    keys = list(values) if isinstance(values, dict) else list(range(len(values)))
    keys.sort(key=lambda k: values[k])
    quarter = len(keys) // 4
    return keys[quarter:len(keys) - quarter]


class Profile:
    """Measured time per instruction and per Python line of one compiled program.

    ``summary()`` is the table by source line (time, share of the measured
    total, and ``summary()``'s estimated instructions, FLOPs and bytes);
    ``by_instruction()`` the table by instruction of the optimised module. It
    prints as text and renders as HTML in Jupyter.
    """

    def __init__(self, name: str, module: HloModule, events: list[XlaEvent], runs: int,
                 wall_ns: float, device: bool):
        self.name, self.module, self.runs, self.wall_ns = name, module, runs, wall_ns
        self.device = device
        comps = module.by_name()
        found = {i.name: i for c in module.computations for i in c.instructions}
        per_run: dict = defaultdict(lambda: defaultdict(float))  # instruction -> run -> ns
        counts: dict = defaultdict(int)
        totals: dict = defaultdict(float)  # run -> ns
        containers = {i.name for i in found.values() if i.opcode in _CONTAINERS}
        for e, own in _attributed(events, containers):
            per_run[e.instruction][e.run] += own
            counts[e.instruction] += 1
            totals[e.run] += own
        n = max(1, len(totals))
        kept = _middle(totals)
        #: The time all instructions ran per call: the mean over the middle half of the runs.
        self.total_ns = sum(totals[r] for r in kept) / len(kept) if kept else 0.0
        rows = []
        for name_, times in per_run.items():
            inst = found.get(name_)
            runs_ = [times.get(r, 0.0) for r in kept]
            split = _split(inst, comps) if inst is not None else {(None, 0): 1.0}
            rows.append((InstructionTime(name_, inst.opcode if inst else "?",
                                         sum(runs_) / max(1, len(runs_)), counts[name_] / n,
                                         tuple(_label(k) for k in split)), split))
        rows.sort(key=lambda r: -r[0].time_ns)
        self._split = rows
        #: Every instruction that ran, the longest first.
        self.instructions: list[InstructionTime] = [r[0] for r in rows]

    def lines(self) -> list[LineTime]:
        """Measured time per Python source line (fusions split by estimated FLOPs), with
        ``summary()``'s estimates beside it; the longest first."""
        time_of: dict = defaultdict(float)
        for inst, split in self._split:
            for key, weight in split.items():
                time_of[_label(key)] += inst.time_ns * weight
        costs = {r.label: r for r in line_costs(self.module)}
        out = []
        for label in set(time_of) | set(costs):
            c = costs.get(label)
            out.append(LineTime(label, c.file if c else None, c.line if c else None,
                                time_of.get(label, 0.0), c.instructions if c else 0,
                                c.flops if c else 0, c.bytes if c else 0))
        return sorted(out, key=lambda r: (-r.time_ns, -r.flops, r.label))

    def summary(self, limit: int | None = 40) -> Table:
        """The table by Python source line, the longest first."""
        rows = self.lines()
        measured = sum(r.time_ns for r in rows) or 1.0
        shown = rows if limit is None else rows[:limit]
        text, cells = [], []
        for r in shown:
            share = r.time_ns / measured
            code = _code_of(r)
            values = [_ns(r.time_ns), f"{share:.0%}", r.instructions, human(r.flops),
                      human(r.bytes, "B")]
            text.append([r.label, *values, code[:60]])
            label = _esc(r.label)
            if r.label.startswith("grad of"):
                label = f'<span class="hd-grad">{label}</span>'
            title = f' title="{_esc(r.file)}:{r.line}"' if r.file else ""
            bar = f'<span class="hd-bar" style="width:{max(1, round(60 * share))}px"></span>'
            cells.append([f"<span{title}>{label}</span>", values[0], f"{bar} {values[1]}",
                          *map(str, values[2:]), _esc(code)])
        more = len(rows) - len(shown)
        title = (f"Measured time by Python source line: {self._headline()}"
                 + (f" (the {len(shown)} longest of {len(rows)} lines)" if more else ""))
        return Table(["source", "time", "share", "instructions", "FLOPs", "bytes", "code"],
                     text, title, left={0, 6}, html_cells=cells)

    def by_instruction(self, limit: int | None = 40) -> Table:
        """The table by instruction of the optimised module (fusions unsplit)."""
        rows = self.instructions
        measured = sum(r.time_ns for r in rows) or 1.0
        shown = rows if limit is None else rows[:limit]
        text = [[r.name, r.opcode, _ns(r.time_ns), f"{r.time_ns / measured:.0%}",
                 f"{r.events:g}", ", ".join(r.lines)[:70]] for r in shown]
        more = len(rows) - len(shown)
        return Table(["instruction", "opcode", "time", "share", "runs/call", "source lines"],
                     text, f"Measured time by instruction: {self._headline()}"
                     + (f" (the {len(shown)} longest of {len(rows)})" if more else ""),
                     left={0, 1, 5})

    def _headline(self) -> str:
        return (f"{self.name}, {_ns(self.total_ns)} measured per call (the middle half of "
                f"{self.runs} runs on {'the device' if self.device else platform()}), "
                f"{_ns(self.wall_ns)} wall time of a plain call")

    def __str__(self) -> str:
        return str(self.summary())

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return self.summary()._repr_html_()


#: Rounds of plain and profiled calls (see ``profile``).
_ROUNDS = 5


def profile(f, *args, runs: int = 20, **kwargs) -> Profile:
    """Run ``f`` compiled ``runs`` times under XLA's profiler: measured time per
    instruction and per Python source line (see the module's docstring).

    ``f`` is compiled as ``hd.compile`` does (an ``hd.compile``d function uses its
    own cache entry). A warm-up call comes first, then ``runs`` plain calls
    timed (``wall_ns``) and ``runs`` calls under the profiler, alternating in
    five rounds. A function compiled with ``donate_argnums`` runs each call on
    copies of the donated arguments (made before the call is timed), so they
    stay readable.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.ones((256, 256), np.float32))
    >>> table = hd.profile(lambda x: (x @ x).sum(), x, runs=2).summary()
    >>> table.title  # doctest: +ELLIPSIS
    'Measured time by Python source line: <lambda>, ... measured per call (the middle ...'
    >>> table.header
    ['source', 'time', 'share', 'instructions', 'FLOPs', 'bytes', 'code']
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"profile: runs must be a positive int (how many calls to "
                         f"measure), got {runs!r}")
    if not callable(f):
        raise TypeError(f"profile: f must be a callable (the function to run), got "
                        f"{type(f).__name__}; call it as profile(f, *args, runs=N)")
    compiled = f if isinstance(f, Compiled) else compile_fn(f)
    entry = compiled.entry(*args, **kwargs)
    module = parse_module(entry.exe.optimized_hlo())
    fresh = _fresh_arguments(compiled, args, kwargs)

    def call(arguments):
        block_until_ready(compiled(*arguments[0], **arguments[1]))

    call(fresh())  # warm: the first run of an executable touches its memory first
    # Plain and profiled calls alternate in rounds, so that a machine busy with other
    # work for a while slows both sides of the comparison alike.
    rounds = [runs // _ROUNDS + (k < runs % _ROUNDS) for k in range(_ROUNDS)]
    walls: list[int] = []
    events: list[XlaEvent] = []
    device = False
    for n in filter(None, rounds):
        for _ in range(n):
            arguments = fresh()  # (copies of donated arguments: made before the clock)
            start = time.perf_counter_ns()
            call(arguments)
            walls.append(time.perf_counter_ns() - start)

        def measured(n=n):
            for arguments in [fresh() for _ in range(n)]:
                call(arguments)

        more, device = profile_events(measured)
        events += more
    wall = sum(walls[k] for k in _middle(walls)) / len(_middle(walls))
    ours = [e for e in events if e.module == module.name] or events
    if not ours:
        raise RuntimeError(
            f"profile({compiled.name}): XLA's profiler recorded no per-instruction events on "
            f"{platform()} (this runtime does not name its events by HLO instruction); "
            "nothing can be attributed to source lines")
    return Profile(compiled.name, module, ours, runs, wall, device)


def _fresh_arguments(compiled: Compiled, args: tuple, kwargs: dict):
    """``() -> (args, kwargs)`` for one call: the arguments themselves, or, where
    ``compiled`` donates some (``donate_argnums``), those with a copy of each array the
    call would take over, so that every call runs and the caller's arrays stay readable."""
    if not compiled.donates:
        return lambda: (args, kwargs)
    positions, names = compiled._donate

    def copied(value):
        leaves, tree = flatten(value)
        return unflatten(tree, [Array._from_buffer(copy_buffer(a._buf), a.type)
                                if isinstance(a, Array) else a for a in leaves])

    def fresh():
        return (tuple(copied(a) if i in positions else a for i, a in enumerate(args)),
                {k: copied(v) if k in names else v for k, v in kwargs.items()})

    return fresh
