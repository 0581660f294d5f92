"""The pass pipeline: passes run over a staged program between staging and printing.

A pass is a callable ``pass_(computation, context) -> (computation, changes)``
with a ``name``: it takes the staged entry computation and gives a new one and
a list of lines saying what it changed (empty: nothing). ``run_passes`` runs a
sequence of them and keeps a ``Report`` per pass. ``compile_with_passes`` is
what ``hd.compile(f, passes=..., memory_limit=...)`` compiles a signature with:
it runs the passes, compiles, and under a memory limit checks XLA's count of
temporary bytes, asking the passes for smaller pieces (``context.attempt``)
until the program fits or no pass can do better.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from hlodsl import runtime
from hlodsl.errors import MemoryLimitError
from hlodsl.ir.graph import Computation
from hlodsl.ops import While
from hlodsl.settings import format_bytes
from hlodsl.ir.structural import Parameter, Tuple
from hlodsl.ir.staging import Staged

from .context import Pass, PassContext
from .distances import Distances
from .matrix_chain import MatrixChain
from .rewrite import nbytes
from .split import Split
from .top_k import BlockedTopK

__all__ = ["Pass", "PassContext", "Report", "MemoryReport", "run_passes", "compile_with_passes",
           "default_passes", "MAX_ATTEMPTS"]

#: Compiles tried under a memory limit before giving up. The first is sized by the
#: passes' cost model; each later one (a fallback) asks them for smaller pieces.
MAX_ATTEMPTS = 4


@attrs.frozen
class Report:
    """What one pass did: its name, a line per change, nodes before and after."""

    name: str
    changes: tuple[str, ...]
    nodes_before: int
    nodes_after: int

    def __str__(self) -> str:
        head = f"{self.name}: {self.nodes_before} -> {self.nodes_after} instructions"
        if not self.changes:
            return head + ", nothing changed"
        return head + "".join(f"\n  {c}" for c in self.changes)


def run_passes(staged: Staged, passes: Sequence[Pass], ctx: PassContext
               ) -> tuple[Staged, tuple[Report, ...]]:
    """``staged`` after each pass in turn, and what each one changed."""
    comp = staged.computation
    reports = []
    for p in passes:
        before = len(comp.nodes)
        comp, changes = p(comp, ctx)
        reports.append(Report(getattr(p, "name", type(p).__name__), tuple(changes), before,
                              len(comp.nodes)))
    return Staged(comp, staged.out_tree, staged.out_types, staged.in_types), tuple(reports)


def default_passes(memory_limit: int | None) -> tuple[Pass, ...]:
    """The passes ``hd.compile`` runs for a memory limit (none without one)."""
    if memory_limit is None:
        return ()
    return (MatrixChain(), Distances(), Split(), BlockedTopK())


def compile_with_passes(staged: Staged, passes, memory_limit: int | None,
                        build: Callable[[Staged], object]):
    """The compiled entry of ``staged`` after ``passes`` (None: ``default_passes``).

    Under ``memory_limit``, the entry's temporary bytes (XLA's compiled memory
    statistics) must fit: otherwise the passes run again with a higher
    ``attempt`` (smaller pieces), and past ``MAX_ATTEMPTS`` or when nothing
    changes any more this raises ``MemoryLimitError`` naming the largest
    tensors of the program and what the passes said about them.
    """
    passes = default_passes(memory_limit) if passes is None else tuple(passes)
    previous, shrink, entry, temps = None, 1.0, None, []
    for attempt in range(MAX_ATTEMPTS if memory_limit is not None else 1):
        ctx = PassContext(memory_limit, attempt, shrink)
        rewritten, reports = run_passes(staged, passes, ctx)
        text_key = [r.changes for r in reports]
        if previous is not None and text_key == previous:
            break  # the passes could do no better than last time
        previous = text_key
        entry = None  # drop the executable that went over before compiling the next
        entry = build(rewritten)
        entry.reports = reports
        if memory_limit is None:
            return entry
        # NOTE: under a limit the process's peak counts too: the heap XLA's compile
        # freed stays resident otherwise (the sparse GP of benchmarks/memory.py at
        # n=50,000: 930 MiB resident after the compile, 619 MiB trimmed).
        runtime.release_host_memory()
        temp = entry.exe.memory_stats()["temp_size_in_bytes"]
        temps.append(temp)
        estimate = max(ctx.estimates) if ctx.estimates else None
        entry.reports = reports + (MemoryReport(memory_limit, estimate, temp, attempt + 1),)
        if temp <= memory_limit:
            return entry
        # The fallback: the model was wrong by temp / estimate; aim lower by that much.
        shrink *= min(0.5, 0.8 * memory_limit / temp)
    raise MemoryLimitError(_over_limit(staged.computation, reports, temps, memory_limit,
                                       ctx.whole))


@attrs.frozen
class MemoryReport:
    """The last line of ``f.report()`` under a limit: the cost model's estimate of
    XLA's temporary bytes, XLA's own count, and how many compiles it took."""

    limit: int
    estimate: int | None  # None: no pass sized anything
    temp: int
    compiles: int

    def __str__(self) -> str:
        said = "no estimate" if self.estimate is None else \
            f"estimated {format_bytes(self.estimate)}"
        return (f"memory: {said}, XLA's temp {format_bytes(self.temp)} under "
                f"memory_limit={format_bytes(self.limit)}, {self.compiles} compile(s)")


def _over_limit(comp: Computation, reports, temps: list[int], limit: int,
                whole: list[tuple[int, str]]) -> str:
    """What a ``MemoryLimitError`` says: XLA's count, the smallest of the compiles tried,
    the values the passes left whole (largest first, and why), the program's largest."""
    # The user's own large values (not the loop state a pass made, nor the inputs).
    values = sorted((n for n in comp.nodes if type(n.op) not in (Parameter, Tuple, While)),
                    key=lambda n: -nbytes(n.type))
    # Those over a quarter of the limit; if none is (and nothing stayed whole), the
    # largest: the error always names what to look at.
    big = [n for n in values if nbytes(n.type) > limit // 4][:3] or \
        ([] if whole else values[:3])
    name = comp.name
    tried = (f" (the smallest temp of the {len(temps)} compile(s) tried: "
             f"{format_bytes(min(temps))})")
    lines = [f"{name}: the program needs {format_bytes(temps[-1])} of temporary memory (XLA's "
             f"count){tried}, over memory_limit={format_bytes(limit)}, and the passes could "
             "not split it further."]
    kept: dict[str, int] = {}
    for size, line in sorted(whole, key=lambda w: -w[0]):
        kept.setdefault(line, size)
    for line, size in list(kept.items())[:4]:
        alone = " -- alone not under the limit" if size >= limit else ""
        lines.append(f"  stays whole ({format_bytes(size)}){alone}: {line}")
    if sum(kept.values()) < temps[-1] // 2:
        # What the passes left whole does not explain XLA's count: the results do (they
        # exist whole; XLA may also keep a temporary copy, in another layout).
        results = comp.root.operands if type(comp.root.op) is Tuple else (comp.root,)
        for n in sorted(results, key=lambda n: -nbytes(n.type))[:2]:
            if nbytes(n.type) > limit // 4:
                where = f" at {n.loc}" if n.loc else ""
                lines.append(f"  a result: {type(n.op).__name__} -> {n.type} "
                             f"({format_bytes(nbytes(n.type))}){where}: results are not split "
                             "(they exist whole), and XLA may keep a temporary copy of one")
    for n in big:
        where = f" at {n.loc}" if n.loc else ""
        lines.append(f"  largest: {type(n.op).__name__} -> {n.type} "
                     f"({format_bytes(nbytes(n.type))}){where}")
    said = [c for r in reports for c in r.changes if "cannot split" in c]
    lines += [f"  {c}" for c in said[:5]]
    lines.append("Raise the limit, or give the program a reduction (a dot, sum, max, top_k) "
                 "that consumes the large tensor, so that it can be computed in pieces.")
    return "\n".join(lines)
