"""``Split``: compute what would not fit in memory in slices, in a loop (the eXLA paper).

Under a memory limit, every node of the staged program larger than a
threshold (an eighth of the limit) should not exist whole. ``split_plan``
finds the region around each one that can be computed in slices along one
dimension, ending at reductions over that dimension (dots contracting it,
sums, maxima) or at values read whole, which its loop fills slice by slice
for a later loop or the rest of the program; every node has one role in one
region. ``split_emit`` emits each region's loops (``hd.fori_loop``, one HLO
``while`` each): inputs are sliced with ``DynamicSlice``, reductions
accumulate their partial results (add, max, min or multiply), and values
read whole are written slice by slice with ``DynamicUpdateSlice``. A size
that the slice does not divide gets one more, shorter, slice after the loop.

Before emitting, ``split_emit.check`` walks the plan as emission would, on
types; a region it refuses is declined (computed whole) and reported, so a
plan the planner got wrong is a value not split, never an error in the pass.

It works on the whole staged program, so ``hd.compile(hd.grad(f),
memory_limit=...)`` splits the backward pass too. What it leaves whole (read
whole by every slice, an op without a slicing rule: sort, scatter,
convolution, ...) it says in its report, and ``hd.compile`` raises
``MemoryLimitError`` naming those values if the program then does not fit.

>>> import numpy as np, hlodsl as hd
>>> import hlodsl.stdlib as xp
>>> def kernel_sum(x):                    # (n, n) intermediate, (n,) result
...     return xp.sum(xp.exp(-(x[:, None] - x[None, :]) ** 2), axis=1)
>>> x = hd.array(np.linspace(0, 1, 3000))
>>> f = hd.compile(kernel_sum, memory_limit="8MiB")
>>> f.memory_stats(x)["temp_size_in_bytes"] <= 8 * 2**20
True
>>> bool(np.allclose(f(x), hd.compile(kernel_sum)(x)))
True
"""

from __future__ import annotations

from hlodsl.ir.graph import Computation, Node
from hlodsl.ir.structural import GetTupleElement, Tuple
from hlodsl.ops import Dot, Reduce, TopK

from .bodies import in_bodies
from .context import PassContext
from .rewrite import nbytes
from .split_emit import PlanError, check, emit
from .split_plan import Loop, Region, describe, input_views, loops, plan

__all__ = ["Split"]


class Split:
    """The splitting pass; does nothing without a memory limit."""

    name = "split"

    def __call__(self, comp: Computation, ctx: PassContext) -> tuple[Computation, list[str]]:
        if ctx.memory_limit is None:
            return comp, []
        # Loop and branch bodies first: a body's large values are the program's too.
        comp, inner = in_bodies(comp, lambda body: self(body, ctx))
        comp, changes = self._split(comp, ctx)
        return comp, inner + changes

    def _split(self, comp: Computation, ctx: PassContext) -> tuple[Computation, list[str]]:
        """Split the large values of ``comp`` itself (not those of its bodies)."""
        threshold = max(ctx.memory_limit // 8, 1)
        regions, whole, notes = plan(comp, threshold)
        ctx.whole.extend(whole)
        todo = _checked(comp, regions, notes, ctx.whole)
        if not todo:
            return comp, notes
        # A retry follows a compile over the limit: the same plan, smaller slices.
        target = int(TARGET * ctx.memory_limit * ctx.shrink)
        fixed = _fixed_bytes(comp, todo)
        room = max(target - fixed, 1)
        chunks: dict[int, int] = {}
        for lp in todo:  # every loop of a region takes the region's slices (0: all at once)
            n = lp.region.extent
            allowed = _chunk(comp, lp, room // _row_bytes(lp)) or n
            chunks[id(lp.region)] = min(chunks.get(id(lp.region), n), allowed)
        live = _regions(todo)
        kept = [r for r in live if chunks[id(r)] < r.extent]
        if len(kept) < len(live):
            todo = _checked(comp, kept, notes, ctx.whole)
        while todo:
            for lp in todo:
                lp.chunk = chunks[id(lp.region)]
            sizes = {id(r): (chunks[id(r)], r.extent % chunks[id(r)] or chunks[id(r)])
                     for r in _regions(todo)}
            try:
                check(comp, todo, sizes)
                break
            except PlanError as e:
                todo = _checked(comp, _decline(_regions(todo), e, notes, ctx.whole), notes,
                                ctx.whole)
        if not todo:
            return comp, notes
        ctx.estimates.append(fixed + max((lp.chunk + lp.region.extent % lp.chunk) * _row_bytes(lp)
                                         for lp in todo))
        changes = [_describe(lp) for lp in todo] + notes
        return emit(comp, todo), changes


def _regions(todo: list[Loop]) -> list[Region]:
    out: dict[int, Region] = {}
    for lp in todo:
        out.setdefault(id(lp.region), lp.region)
    return list(out.values())


def _decline(regions: list[Region], e: PlanError, notes: list[str], whole: list
             ) -> list[Region]:
    """``regions`` without the one ``check`` refused, with a line saying why."""
    line = f"declined: {describe(e.region.seed)} along dimension {e.region.dim}: {e.why}"
    notes.append(line)
    whole.append((nbytes(e.region.seed.type), line))
    return [r for r in regions if r is not e.region]


def _checked(comp: Computation, regions: list[Region], notes: list[str], whole: list
             ) -> list[Loop]:
    """The loops of ``regions`` once ``check`` accepts them; a region it refuses is
    declined (its values computed whole), and the rest checked again."""
    regions = list(regions)
    while regions:
        todo = loops(comp, regions)
        try:
            check(comp, todo)
            return todo
        except PlanError as e:
            regions = _decline(regions, e, notes, whole)
    return []


#: The share of the limit the cost model aims at: XLA's count strays from it both ways.
TARGET = 0.7


def _materialised(lp: Loop) -> list[Node]:
    """The loop's values XLA writes to memory per slice, as its fusion works on CPU:
    a dot's result and operands, a reduction's or top-k's result, the operand of
    a long or column reduction (``_long``), and a value the program reads whole.
    Elementwise ops (a kernel's exp, a difference's square) fuse into the op that
    reads them, whatever their size."""
    inside = {id(n) for n in lp.nodes}
    out: dict[int, Node] = {}
    for n in lp.nodes + lp.accs:
        reads = isinstance(n.op, (Dot, TopK)) or (isinstance(n.op, Reduce) and _long(n))
        if reads:
            out.update((id(o), o) for o in n.operands if id(o) in inside)
        if id(n) in inside and isinstance(n.op, (Dot, Reduce, TopK)):
            out[id(n)] = n
    out.update((id(n), n) for n in lp.exits)
    return list(out.values())


def _long(reduce: Node) -> bool:
    """Whether XLA:CPU writes a reduction's operand out: measured so where it reduces
    over 64 elements or more, or over a dimension other than the minor one; a short
    row reduction (a distance's sum over coordinates) fuses its producers."""
    shape = reduce.operands[0].type.shape
    count = 1
    for d in reduce.op.dimensions:
        count *= shape[d]
    return count >= 64 or len(shape) - 1 not in reduce.op.dimensions


def _row_bytes(lp: Loop) -> int:
    """Bytes one index of the sliced dimension costs in a slice (the model's slope).

    Calibrated on the kernel mat-vec, kernel sums, attention, kNN and sparse-GP
    programs and their gradients (tests/test_passes_split.py): XLA's temp grew
    by 0.5 to 1.1 times this per index of the slice. It is at least a quarter
    of the region's largest value, fused or not, so that a value the model
    misses cannot take the whole limit."""
    n = max(lp.region.extent, 1)
    largest = max((nbytes(x.type) for x in lp.nodes), default=0)
    counted = sum(nbytes(x.type) for x in _materialised(lp))
    return max(counted, largest // 4, 1) // n or 1


def _fixed_bytes(comp: Computation, todo: list[Loop]) -> int:
    """Bytes that do not shrink with the slices (the model's intercept): the loops'
    state (values filled slice by slice, accumulators; not the program's
    results, which XLA does not count as temporary) and the largest value
    computed outside the loops (XLA reuses the buffers of the others)."""
    results = {id(r) for r in (comp.root.operands if isinstance(comp.root.op, Tuple)
                               else (comp.root,))}
    # The program's results are no temporaries, even where a loop fills them.
    state = sum(nbytes(x.type) for lp in todo for x in lp.exits + lp.accs
                if id(x) not in results)
    inside = {id(n) for lp in todo for n in lp.nodes + lp.exits + lp.accs}
    skip = inside | input_views(comp) | results
    outside = [nbytes(n.type) for n in comp.nodes if id(n) not in skip
               and not isinstance(n.op, (Tuple, GetTupleElement))]
    return state + max(outside, default=0)


def _chunk(comp: Computation, lp: Loop, chunk: int) -> int:
    """How much of the sliced dimension one iteration computes (0: all fits at once).

    ``chunk`` is what the cost model allows; a top-k merged over slices needs
    slices of at least k (the last one may be shorter). A size within a factor
    2 that divides the dimension is preferred, to save the shorter last slice
    (for a top-k, one that is a multiple of 32 first: ``BlockedTopK``'s groups);
    otherwise the slice and that last one together take what the model allows.
    """
    region = lp.region
    n = region.extent
    least = max([1] + [x.op.k for x in comp.nodes if region.accs.get(id(x), ("",))[0] == "topk"])
    chunk = max(chunk, least)
    if chunk >= n:
        return 0
    exact = [c for c in range(chunk, max(chunk // 2, least) - 1, -1) if n % c == 0]
    if least > 1:  # slices BlockedTopK can cut into whole groups (no short one to append)
        exact = [c for c in exact if c % 32 == 0] + exact
    if exact:
        return exact[0]
    # The shorter last slice runs after the loop, in buffers of its own (measured):
    # the slices and that one must fit together.
    return next((c for c in range(chunk, least - 1, -1) if c + n % c <= chunk), least)


def _describe(lp: Loop) -> str:
    seed, d = lp.region.seed, lp.region.dim
    n, c = lp.region.extent, lp.chunk
    tail = f" and one of {n % c}" if n % c else ""
    what = []
    if lp.accs:
        what.append(f"accumulates {len(lp.accs)} reduction(s)")
    if lp.exits:
        what.append(f"fills {len(lp.exits)} result(s) slice by slice")
    return (f"{describe(seed)}: {n // c} slices of {c} along "
            f"dimension {d}{tail} (loop {lp.level}, {len(lp.nodes)} instructions; "
            f"{', '.join(what)})")
