"""``Split``: compute what would not fit in memory in slices, in a loop (the eXLA paper).

Under a memory limit, every node of the staged program larger than a
threshold (an eighth of the limit) must not exist
whole. ``split_plan`` finds the region around each one that can be computed
in slices along one dimension, ending at reductions over that dimension
(dots contracting it, sums, maxima) or at results small enough to keep.
This pass emits each region as a loop over slices (``hd.fori_loop``, one HLO
``while``): inputs are sliced with ``DynamicSlice``, reductions accumulate
their partial results (add, max, min or multiply), and results kept whole are
written slice by slice with ``DynamicUpdateSlice``. A size that the slice
does not divide gets one more, shorter, slice after the loop.

It works on the whole staged program, so ``hd.compile(hd.grad(f),
memory_limit=...)`` splits the backward pass too. It cannot split what no
reduction consumes, a node sliced two ways at once, or ops without a slicing
rule (sort, gather, scatter, convolution, ...): it says so in its report,
and ``hd.compile`` raises ``MemoryLimitError`` with those lines if the program
then does not fit.

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

import attrs
import numpy as np

from hlodsl.arrays.array import Array
from hlodsl.context import STATE
from hlodsl.ir.graph import Builder, Computation, Node
from hlodsl.ir.interpret import apply_node
from hlodsl.ops import (Add, Broadcast, Concatenate, Convert, Dot, DynamicSlice,
                        DynamicUpdateSlice, Iota, Maximum, Minimum, Multiply, Reduce, Reshape, TopK)
from hlodsl.ir.structural import Constant, GetTupleElement, Parameter, Tuple
from hlodsl.transforms.control import fori_loop

from .bodies import in_bodies
from .context import PassContext
from .rewrite import nbytes, parameters_like, root_of
from .split_plan import Loop, input_views, loops, plan
from .split_rules import operand_dims, shape_of, sliced_op
from .top_k import take

__all__ = ["Split"]

_COMBINE = {"add": Add, "max": Maximum, "min": Minimum, "mul": Multiply}


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
        regions, notes = plan(comp, threshold)
        todo = loops(comp, regions)
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
        kept = [r for r in regions if chunks[id(r)] < r.extent]
        todo = loops(comp, kept) if len(kept) < len(regions) else todo
        if not todo:
            return comp, notes
        for lp in todo:
            lp.chunk = chunks[id(lp.region)]
        ctx.estimates.append(fixed + max((lp.chunk + lp.region.extent % lp.chunk) * _row_bytes(lp)
                                         for lp in todo))
        changes = [_describe(lp) for lp in todo] + notes
        return _emit(comp, todo), changes


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
    seed, d = lp.region.seed, lp.region.dims[id(lp.region.seed)]
    n, c = lp.region.extent, lp.chunk
    tail = f" and one of {n % c}" if n % c else ""
    what = []
    if lp.accs:
        what.append(f"accumulates {len(lp.accs)} reduction(s)")
    if lp.exits:
        what.append(f"fills {len(lp.exits)} result(s) slice by slice")
    where = f" at {seed.loc}" if seed.loc else ""
    return (f"{type(seed.op).__name__} -> {seed.type}{where}: {n // c} slices of {c} along "
            f"dimension {d}{tail} (loop {lp.level}, {len(lp.nodes)} instructions; "
            f"{', '.join(what)})")


# -- emission -------------------------------------------------------------------------


def _emit(comp: Computation, todo: list[Loop]) -> Computation:
    views = input_views(comp)
    split = {id(n): lp for lp in todo for n in lp.exits + lp.accs}
    inside = {key for lp in todo for key in lp.region.dims}
    order = {id(n): i for i, n in enumerate(comp.nodes)}
    with Builder(comp.name) as b:
        env: dict[int, object] = {
            id(p): a for p, a in zip(comp.params, parameters_like(b, comp))}
        done: set[int] = set()

        def value(node: Node):
            _demand(node, env, order, split, inside, run)
            return env[id(node)]

        def run(lp: Loop) -> None:
            if id(lp) in done:
                return
            done.add(id(lp))
            for n in _inputs(lp, views):
                value(n)
            _run_loop(lp, env, views)

        for node in comp.nodes:
            if id(node) in inside and id(node) not in split:
                continue  # computed in a loop, or not needed whole
            value(node)
        root = root_of(b, comp, env[id(comp.root)])
    return b.finish(root)


def _demand(node, env, order, split, inside, run) -> None:
    """Give ``node`` its value: its missing ancestors first, in program order."""
    if id(node) in env:
        return
    missing, stack = {}, [node]
    while stack:
        n = stack.pop()
        if id(n) in env or id(n) in missing:
            continue
        missing[id(n)] = n
        if id(n) not in split:
            stack += n.operands
    for n in sorted(missing.values(), key=lambda n: order[id(n)]):
        if id(n) in env:
            continue
        if id(n) in split:
            run(split[id(n)])
            continue
        if id(n) in inside:
            raise AssertionError(f"split: {n!r} is needed whole but no loop gives it")
        _apply(n, [env[id(o)] for o in n.operands], env)


def _apply(node: Node, values: list, env: dict, op=None) -> object:
    previous = STATE.location
    STATE.location = node.loc or previous
    try:
        if op is None or op is node.op:
            out = apply_node(node, values)
        else:
            out = op(*values)
    finally:
        STATE.location = previous
    if env is not None:
        env[id(node)] = out
    return out


def _inputs(lp: Loop, views: set[int]) -> list[Node]:
    """The nodes outside the loop that it reads (views of inputs it recomputes)."""
    dims = lp.region.dims
    seen: dict[int, Node] = {}
    for n in lp.nodes + lp.accs:
        for o in n.operands:
            if id(o) not in dims and id(o) not in views:
                seen.setdefault(id(o), o)
    return list(seen.values())


def _reader(env: dict, views: set[int]):
    """``read(node)``: an outside node's value inside a loop body; views of the
    program's inputs are recomputed there from the inputs themselves."""
    made: dict[int, object] = {}

    def read(node: Node):
        if id(node) not in views or type(node.op) is Parameter:
            return env[id(node)]
        if id(node) not in made:
            made[id(node)] = _apply(node, [read(o) for o in node.operands], None)
        return made[id(node)]

    return read


def _const(value) -> Array:
    return Constant(np.asarray(value))()


def _starts(offset, dim: int, rank: int) -> list:
    zero = _const(np.int32(0))
    return [offset if k == dim else zero for k in range(rank)]


def _slice(x: Array, dim: int, offset, size: int) -> Array:
    shape = list(x.type.shape)
    shape[dim] = size
    return DynamicSlice(tuple(shape))(x, *_starts(offset, dim, len(shape)))


def _chunk_values(lp: Loop, env: dict, views: set[int], offset, size: int) -> list:
    """The loop's results for the slice of ``size`` at ``offset``: exits' slices,
    then the reductions' partial results."""
    dims = lp.region.dims
    read = _reader(env, views)
    cv: dict[int, object] = {}
    for n in lp.nodes:
        d = dims[id(n)]
        values = []
        for o, od in zip(n.operands, operand_dims(n, d)):
            if id(o) in dims:
                values.append(cv[id(o)])
            else:
                values.append(read(o) if od is None else _slice(read(o), od, offset, size))
        out = _apply(n, values, None, sliced_op(n, d, size))
        if type(n.op) is Iota and n.op.iota_dimension == d:
            shift = Broadcast(shape_of(out.type), ())(Convert(out.type.dtype)(offset))
            out = Add()(out, shift)
        cv[id(n)] = out
    parts = [cv[id(n)] for n in lp.exits]
    for a in lp.accs:
        _, adims = lp.region.accs[id(a)]
        values = []
        for o, od in zip(a.operands, adims):
            if id(o) in dims:
                values.append(cv[id(o)])
            else:
                values.append(read(o) if od is None else _slice(read(o), od, offset, size))
        if lp.region.accs[id(a)][0] == "topk":
            parts.append(_top_k_part(a, values[0], offset))
        else:
            parts.append(_apply(a, values, None))
    return parts


def _run_loop(lp: Loop, env: dict, views: set[int]) -> None:
    region, c = lp.region, lp.chunk
    full, tail = divmod(region.extent, c)
    kinds = [region.accs[id(a)][0] for a in lp.accs]

    def combine(state, parts, offset):
        out = []
        for n, cur, part in zip(lp.exits, state, parts):
            d = region.dims[id(n)]
            out.append(DynamicUpdateSlice()(cur, part, *_starts(offset, d, len(cur.type.shape))))
        for a, kind, cur, part in zip(lp.accs, kinds, state[len(lp.exits):],
                                      parts[len(lp.exits):]):
            if kind == "topk":
                out.append(_merge_top_k(a, cur, part))
            elif kind == "reduce":
                # A reader of its own: views it makes inside the loop stay there.
                out.append(_merge_reduce(a, cur, part, _reader(env, views)))
            else:
                out.append(_COMBINE[kind]()(cur, part))
        return tuple(out)

    # The first slice starts the state (no identity element needed: top-k has none).
    zero = _const(np.int32(0))
    first = _chunk_values(lp, env, views, zero, c)
    state = tuple(DynamicUpdateSlice()(_filled(n.type, 0), part,
                                       *_starts(zero, region.dims[id(n)], len(n.type.shape)))
                  for n, part in zip(lp.exits, first)) + tuple(first[len(lp.exits):])

    def body(i, state):
        offset = Multiply()(i, _const(np.int32(c)))
        return combine(state, _chunk_values(lp, env, views, offset, c), offset)

    if full > 1:
        state = fori_loop(1, full, body, state)
    if tail:
        offset = _const(np.int32(full * c))
        state = combine(state, _chunk_values(lp, env, views, offset, tail), offset)
    for n, v in zip(lp.exits + lp.accs, state):
        env[id(n)] = v


def _top_k_part(node: Node, x: Array, offset) -> tuple[Array, Array]:
    """A slice's best ``k`` (all of it when shorter), indices counted from the start."""
    k, last = node.op.k, len(x.type.shape) - 1
    if x.type.shape[last] > k:
        values, idx = node.op(x)
    else:
        values = x
        idx = Iota(np.int32, x.type.shape, last)()
    return values, Add()(idx, Broadcast(idx.type.shape, ())(offset))


def _merge_top_k(node: Node, best: tuple, part: tuple) -> tuple[Array, Array]:
    """The best ``k`` of the best so far and a slice's: top-k of the two side by side
    (the earlier first, so ties keep the lower index), indices taken by position."""
    last = len(best[0].type.shape) - 1
    values = Concatenate(last)(best[0], part[0])
    idx = Concatenate(last)(best[1], part[1])
    top, pos = node.op(values)
    return top, take(idx, pos)


def _merge_reduce(node: Node, best, part, read) -> object:
    """The reduction of the partial results so far and a slice's, by the node's own
    computation: the two side by side along a new last dimension, reduced over it
    (the earlier first), with the node's initial values."""
    n = len(node.operands) // 2
    best, part = (best, part) if n > 1 else ((best,), (part,))
    rank = len(best[0].type.shape)
    pairs = [Concatenate(rank)(*(Reshape(x.type.shape + (1,))(x) for x in (b, p)))
             for b, p in zip(best, part)]
    inits = [read(o) for o in node.operands[n:]]
    return attrs.evolve(node.op, dimensions=(rank,))(*pairs, *inits)


def _filled(t, value) -> Array:
    return Broadcast(t.shape, ())(_const(np.asarray(value, t.dtype.np_dtype)))

