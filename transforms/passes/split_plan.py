"""Planning the split: which nodes run in slices, along which dimension, in which loop.

The eXLA paper's Algorithm 1 on hlodsl's staged program. Nodes larger than a
threshold (``large``) seed regions; from a seed sliced along one dimension,
``grow`` follows the data flow both ways with the rules of ``split_rules``:
backwards to the large producers a slice needs (small ones and the
program's inputs are sliced where they are used), forwards to every user
that can be computed in the same slices (so a softmax's row max stays
inside), and stops at reductions over the sliced dimension (a dot's
contraction, a sum or max), which accumulate partial results.

**One role per node.** A plan is a partition: every node of the program is
in at most one region, either computed in slices there (``Region.dims``) or
accumulated there (``Region.accs``); a later region treats the nodes of an
earlier one as values from outside. Inside a region, an operand edge is
*direct* when the operand is a region node sliced along the dimension the
reader needs: the slice is passed on. Any other read of a region node (whole,
or along another dimension, or by a reduction over a dimension it keeps) goes
*through memory*: the node is an *exit*, filled slice by slice by its loop,
and the reader runs in a later loop that reads it whole or slices it again.
So growth never gives a node two roles; what it cannot keep in slices costs
bytes that exist whole, and ``grow`` chooses, by those bytes, which forward
steps to take (``_search``): following ``h -> h @ Wk`` from the rows of
attention's scores would make the scores accumulate; not following it keeps
``k`` whole instead (64 KiB rather than 1 MiB).

**Levels.** A reduction's result, or an exit, is complete only after its
loop. ``levels`` numbers loops so that each reads only what earlier loops
made: a region node's level is the largest of its direct operands' levels and
of the levels after which its other operands exist whole (``avail``); a loop
(region, level) recomputes the lower-level region nodes it needs directly.
``split_emit.check`` verifies the plan before anything is emitted.

>>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
>>> from hlodsl.ir.staging import stage
>>> x = hd.array(np.ones((64, 2)))
>>> comp = stage(lambda x: xp.sum(xp.exp(-(x @ xp.matrix_transpose(x))), axis=0), (x,),
...              {}).computation
>>> (region,), whole, notes = plan(comp, threshold=64 * 64 * 8 // 4)
>>> str(region.seed.type), region.dim, len(region.dims), whole  # the scores, by rows
('f64[64,64]', 0, 3, [])
>>> [region.nodes[k].op for k in region.accs]                   # the column sums add up
[Reduce(computation=add, dimensions=(0,))]
>>> [(lp.level, len(lp.nodes), len(lp.accs)) for lp in loops(comp, [region])]
[(0, 3, 1)]
"""

from __future__ import annotations

import attrs

from hlodsl.ir.graph import Computation, Node
from hlodsl.ops import Broadcast, Convert, Copy, Reduce, Reshape, Slice, Transpose, While
from hlodsl.ir.structural import Constant, GetTupleElement, Parameter, Tuple

from .rewrite import nbytes, users
from .split_rules import REDUCED, accumulation, operand_dims, result_dim, shape_of

__all__ = ["Region", "Loop", "plan", "loops", "levels", "large_nodes", "input_views", "describe"]

_VIEWS = (Reshape, Transpose, Convert, Copy, Slice, Broadcast, GetTupleElement)

#: Rounds of the search over forward steps not taken, and candidates tried per round.
_ROUNDS, _CANDIDATES = 3, 6


@attrs.define(eq=False)
class Region:
    """Nodes computed in slices along one dimension of size ``extent``."""

    seed: Node
    extent: int
    big: set[int]  # the nodes of the program that should not exist whole (``large_nodes``)
    views: set[int] = attrs.Factory(set)  # views of the inputs (``input_views``): fused, free
    dims: dict[int, int] = attrs.Factory(dict)  # id(node) -> the sliced dimension of its result
    accs: dict[int, tuple] = attrs.Factory(dict)  # id(reduction) -> (kind, dims per operand)
    nodes: dict[int, Node] = attrs.Factory(dict)  # id -> node, for dims and accs
    via: dict[int, tuple[int, bool]] = attrs.Factory(dict)  # id -> (id(from), forwards)
    cuts: frozenset = frozenset()  # forward steps (id(node), id(user)) not taken
    exits: dict[int, str] = attrs.Factory(dict)  # id(sliced node) -> who reads it whole
    whole: dict[int, tuple[int, str, Node]] = attrs.Factory(dict)  # id -> (bytes, why, node)
    saved: int = 0  # bytes of large nodes that never exist whole
    depth: int = 1  # loops it takes, counted within the region (``_assess``)

    @property
    def dim(self) -> int:
        return self.dims[id(self.seed)]

    def wanted(self, node: Node) -> list[int | None]:
        """Per operand of a region node, the dimension its slice needs (None: whole)."""
        if id(node) in self.dims:
            return operand_dims(node, self.dims[id(node)])
        return list(self.accs[id(node)][1])

    def direct(self, operand: Node, od: int | None) -> bool:
        """Whether a region node reads ``operand`` as the slice this region computes."""
        return od is not None and self.dims.get(id(operand)) == od

    def whole_bytes(self) -> int:
        """Bytes of the large values this region leaves whole (its cost)."""
        return sum(w[0] for w in self.whole.values())


@attrs.define(eq=False)
class Loop:
    """One loop: the region nodes it computes, and what it gives the rest of the program."""

    region: Region
    level: int
    nodes: list[Node]  # region nodes computed per slice, in program order
    exits: list[Node]  # region nodes the program needs whole (filled slice by slice)
    accs: list[Node]  # reductions accumulated over the slices
    chunk: int = 0


def input_views(comp: Computation) -> set[int]:
    """The nodes (by id) computed from the program's inputs and constants by views alone
    (reshapes, transposes, conversions, slices, broadcasts): a loop recomputes
    them from its inputs rather than reading them, since XLA would copy a value
    a loop reads into the loop's state (measured: a transposed 40 MB input)."""
    out: set[int] = set()
    for n in comp.nodes:
        if isinstance(n.op, (Parameter, Constant)) or (
                isinstance(n.op, _VIEWS) and all(id(o) in out for o in n.operands)):
            out.add(id(n))
    return out


def large_nodes(comp: Computation, threshold: int) -> set[int]:
    """The nodes (by id) the pass should not materialise: over ``threshold`` bytes, and
    computed: not the program's inputs, views of them (reshapes, transposes,
    conversions, slices) or its results, which exist whole anyway."""
    inputs: set[int] = set()
    results = comp.root.operands if isinstance(comp.root.op, Tuple) else (comp.root,)
    inputs.update(id(r) for r in results)  # they exist whole anyway, as outputs
    out = set()
    for n in comp.nodes:
        if id(n) in inputs:
            continue
        op = n.op
        if isinstance(op, (Parameter, Constant)) or (
                isinstance(op, _VIEWS) and all(id(o) in inputs for o in n.operands)
                and nbytes(n.type) <= max(nbytes(o.type) for o in n.operands)):
            inputs.add(id(n))
        elif nbytes(n.type) > threshold and not isinstance(op, Tuple):
            out.add(id(n))
    return out


class _Conflict(Exception):
    """A candidate dimension the seed cannot be sliced along."""


# -- growing one region -------------------------------------------------------------------


def grow(seed: Node, d: int, use: dict, big: set[int], owner: dict,
         cuts: frozenset = frozenset(), views: frozenset | set = frozenset()) -> Region:
    """The region of ``seed`` sliced along ``d``, without the forward steps in ``cuts``.

    Nodes of earlier regions (``owner``) are never taken. The steps forward
    from the seed and its forward successors are taken first (the main
    chain: a softmax after the scores), then those forward from the nodes a
    slice needs (side branches: ``h @ Wk`` from the rows of ``h``), so that a
    node reached both ways takes its role from the main chain.
    """
    if operand_dims(seed, d) is None:
        raise _Conflict(f"{seed.op!r} -> {seed.type} cannot be computed in slices of "
                        f"dimension {d}")
    region = Region(seed, shape_of(seed.type)[d], big, views, cuts=cuts)
    main: list[Node] = []
    side: list[Node] = []

    def free(node: Node) -> bool:
        key = id(node)
        return key not in region.dims and key not in region.accs and key not in owner

    def needs(node: Node) -> None:
        """Take in the large producers the slices of ``node`` need (and theirs)."""
        stack = [node]
        while stack:
            n = stack.pop()
            for o, od in zip(n.operands, region.wanted(n)):
                if od is None or not free(o) or id(o) not in big:
                    continue
                if operand_dims(o, od) is None or shape_of(o.type)[od] != region.extent:
                    continue
                add(o, od, (id(n), False))
                side.append(o)
                stack.append(o)

    def add(node: Node, dim: int, how) -> None:
        region.dims[id(node)] = dim
        region.nodes[id(node)] = node
        if how is not None:
            region.via[id(node)] = how

    add(seed, d, None)
    needs(seed)
    main.append(seed)
    while main or side:
        is_main = bool(main)
        n = main.pop(0) if main else side.pop(0)
        dn = region.dims[id(n)]
        for u in use[id(n)]:
            if u is None or not free(u) or (id(n), id(u)) in cuts:
                continue
            for i, o in enumerate(u.operands):
                if o is not n:
                    continue
                r = result_dim(u, i, dn)
                if isinstance(r, int):
                    if operand_dims(u, r) is not None and \
                            shape_of(u.type)[r] == region.extent:
                        add(u, r, (id(n), True))
                        (main if is_main else side).append(u)
                        needs(u)
                    break
                if r == REDUCED:
                    region.accs[id(u)] = accumulation(u, i, dn)
                    region.nodes[id(u)] = u
                    region.via[id(u)] = (id(n), True)
                    if isinstance(u.op, Reduce):  # a variadic reduction's other operands
                        for o2, od in zip(u.operands, region.accs[id(u)][1]):
                            if (od is not None and free(o2)
                                    and operand_dims(o2, od) is not None
                                    and shape_of(o2.type)[od] == region.extent):
                                add(o2, od, (id(u), False))
                                side.append(o2)
                                needs(o2)
                    needs(u)
                    break
    _assess(region, use)
    return region


def _assess(region: Region, use: dict) -> None:
    """The region's exits, the large values it leaves whole and the bytes it saves."""
    members = region.nodes
    region.exits.clear()
    region.whole.clear()
    for key in region.dims:
        node = members[key]
        for u in use[key]:
            if u is None:
                region.exits[key] = "the program's result"
                break
            if id(u) not in members:
                region.exits[key] = f"{u.op!r}"
                break
            if any(o is node and not region.direct(o, od)
                   for o, od in zip(u.operands, region.wanted(u))):
                region.exits[key] = f"{u.op!r} (in a later loop)"
                break
    for key, who in region.exits.items():
        if key in region.big:
            n = members[key]
            region.whole[key] = (nbytes(n.type), f"{who} needs all of {n.type} at once", n)
    for key in region.accs:
        if key in region.big:
            n = members[key]
            region.whole[key] = (nbytes(n.type), f"{n.op!r} accumulates all of {n.type}", n)
    for key, u in members.items():
        for o in u.operands:
            if id(o) not in members and id(o) in region.big and id(o) not in region.whole:
                region.whole[id(o)] = (nbytes(o.type), f"{u.op!r} needs all of {o.type} at once",
                                       o)
    # A broadcast of an input or a constant is no saving: XLA fuses it into its readers.
    region.saved = sum(nbytes(members[k].type) for k in region.dims
                       if k in region.big and k not in region.exits and k not in region.views)
    region.depth = 1 + max((_local_level(region, n, {}) for n in members.values()), default=0)


def _local_level(region: Region, node: Node, memo: dict) -> int:
    """The loop level of a region node counting only the region's own reads through
    memory (the levels of ``levels``, without the rest of the program)."""
    key = id(node)
    if key not in memo:
        memo[key] = 0
        lv = 0
        for o, od in zip(node.operands, region.wanted(node)):
            if id(o) in region.nodes:
                direct = region.direct(o, od)
                lv = max(lv, _local_level(region, o, memo) + (not direct))
        memo[key] = lv
    return memo[key]


def _cost(region: Region) -> tuple[int, int, int, int]:
    """Bytes left whole first, then fewer loops, more bytes saved, fewer steps not taken."""
    return region.whole_bytes(), region.depth, -region.saved, len(region.cuts)


def _candidates(region: Region, use: dict) -> list[tuple[int, int]]:
    """Forward steps whose absence might leave fewer bytes whole: for each large value
    the region leaves whole (largest first), the steps that gave its readers in
    the region their role, and the one that brought it in."""
    out: list[tuple[int, int]] = []

    def step(key: int) -> None:
        how = region.via.get(key)
        if how is not None and how[1] and (how[0], key) not in out:
            out.append((how[0], key))

    for key in sorted(region.whole, key=lambda k: -region.whole[k][0]):
        for u in use.get(key, ()):
            if u is not None and id(u) in region.nodes:
                step(id(u))
        step(key)
    return out


def _search(seed: Node, d: int, use: dict, big: set[int], owner: dict, views: set[int]
            ) -> Region:
    """The region of ``seed`` along ``d`` with the fewest bytes left whole: grown with
    every forward step, then without the steps that cost most (a few rounds)."""
    best = grow(seed, d, use, big, owner, views=views)
    for _ in range(_ROUNDS):
        if not best.whole:
            break
        improved = best
        for edge in _candidates(best, use)[:_CANDIDATES]:
            region = grow(seed, d, use, big, owner, best.cuts | {edge}, views)
            if _cost(region) < _cost(improved):
                improved = region
        if improved is best:
            break
        best = improved
    return best


# -- the plan -----------------------------------------------------------------------------


def describe(node: Node) -> str:
    """A value as the report names it: its op, type and the user's line."""
    where = f" at {node.loc}" if node.loc else ""
    return f"{type(node.op).__name__} -> {node.type}{where}"


def plan(comp: Computation, threshold: int
         ) -> tuple[list[Region], list[tuple[int, str]], list[str]]:
    """The regions of ``comp`` (one per large node not in an earlier region), the large
    values that stay whole (bytes, what and why), and a line for each
    (``cannot split: ...``)."""
    use = users(comp)
    big = large_nodes(comp, threshold)
    views = input_views(comp)
    owner: dict[int, Region] = {}
    regions, whole, notes = [], [], []
    seeds = sorted((n for n in comp.nodes if id(n) in big), key=lambda n: -nbytes(n.type))
    for seed in seeds:
        if id(seed) in owner:
            continue
        shape = shape_of(seed.type)
        best, why = None, []
        for d in sorted(range(len(shape)), key=lambda k: -shape[k]):
            if shape[d] < 2:
                continue
            try:
                region = _search(seed, d, use, big, owner, views)
            except _Conflict as e:
                why.append(f"dimension {d}: {e}")
                continue
            if region.saved == 0:
                said = "; ".join(w[1] for w in region.whole.values()) or \
                    "no large value stays in slices"
                why.append(f"dimension {d}: {said}")
                continue
            if best is None or _rank(region, threshold) < _rank(best, threshold):
                best = region
            if not region.whole and not _merges_top_k(region):
                break
        if best is None:
            where = f" at {seed.loc}" if seed.loc else ""
            said = "; ".join(why) or (
                "a loop's state (its carried values, a scan's stacked outputs) exists whole: "
                "loop bodies are split per iteration" if isinstance(seed.op, While)
                else "no dimension to slice")
            notes.append(f"cannot split {seed.op!r} -> {seed.type}{where}: {said}")
            whole.append((nbytes(seed.type), f"{describe(seed)}: not split ({said})"))
            continue
        for key in best.nodes:
            owner[key] = best
        regions.append(best)
        for size, why, node in best.whole.values():
            notes.append(f"cannot split: {why}")
            whole.append((size, f"{describe(node)}: {why} (in the split of "
                                f"{describe(best.seed)} along dimension {best.dim})"))
    return regions, whole, notes


def _merges_top_k(region: Region) -> bool:
    """Whether the region's slices each select a top-k that the loop merges."""
    return any(kind == "topk" for kind, _ in region.accs.values())


def _rank(region: Region, threshold: int) -> tuple:
    """Fewer bytes left whole first; then a dimension whose single slice is under the
    threshold; then one with no top-k to merge; then fewer loops (of two that leave
    as much whole, an accumulation XLA can keep in the result's buffer beats a value
    filled for a later loop). Sliced along a top-k's rows,
    each row's top-k runs once, over the whole row (``BlockedTopK``'s best case),
    with no merge per slice: kNN at 10⁴ queries x 10⁵ points under 1 GiB took
    3.1 s so, against 4.9 s sliced along the points (``hd.profile``, loaded machine)."""
    thin = nbytes(region.seed.type) // max(region.extent, 1) <= threshold
    return region.whole_bytes(), not thin, _merges_top_k(region), region.depth, -region.saved


# -- levels and loops ---------------------------------------------------------------------


def levels(comp: Computation, regions: list[Region]) -> tuple[dict, dict]:
    """Per region node its loop level; per node the level after which it exists whole.

    A region node's level is the largest of its direct operands' levels and of
    ``avail`` of its other operands; a reduction's loop is the level so found,
    and its result exists after it (``avail`` = level + 1), as does an exit's.
    Nodes outside every region exist once all their operands do."""
    role = {key: r for r in regions for key in r.nodes}
    level: dict[int, int] = {}
    avail: dict[int, int] = {}
    for n in comp.nodes:
        region = role.get(id(n))
        if region is None:
            avail[id(n)] = max((avail[id(o)] for o in n.operands), default=0)
            continue
        lv = 0
        for o, od in zip(n.operands, region.wanted(n)):
            lv = max(lv, level[id(o)] if region.direct(o, od) else avail[id(o)])
        level[id(n)] = lv
        avail[id(n)] = lv + 1
    return level, avail


def _evict(comp: Computation, regions: list[Region], use: dict) -> None:
    """Take out of the regions the small nodes that would make a later loop for nothing.

    A small region node that reads a reduction's result (``dx = dx_part_1 +
    dx_part_2`` in a gradient) sits one loop level above its region operands;
    kept, it makes a second loop recompute the whole region. Computed outside
    instead, it reads its region operands whole, which are small too (a node
    whose direct operands are large stays: they would have to exist whole).
    """
    while True:
        level, _ = levels(comp, regions)
        late = []
        for r in regions:
            for key in list(r.dims):
                n = r.nodes[key]
                if key in r.big or n is r.seed:
                    continue
                ins = [o for o, od in zip(n.operands, r.wanted(n)) if r.direct(o, od)]
                if level[key] > max((level[id(o)] for o in ins), default=0) and \
                        not any(id(o) in r.big for o in ins):
                    late.append((r, key))
        if not late:
            break
        for r, key in late:
            del r.dims[key]
            del r.nodes[key]
        for r in regions:  # a reduction none of whose operands stayed is computed outside
            for key in [k for k in r.accs
                        if not any(r.direct(o, od) for o, od in
                                   zip(r.nodes[k].operands, r.accs[k][1]))]:
                del r.accs[key]
                del r.nodes[key]
    for r in regions:
        _assess(r, use)


def loops(comp: Computation, regions: list[Region]) -> list[Loop]:
    """The loops computing ``regions``, in an order where each reads only earlier ones."""
    use = users(comp)
    _evict(comp, regions, use)
    level, _ = levels(comp, regions)
    built: dict[tuple[int, int], Loop] = {}

    def loop(region: Region, lvl: int) -> Loop:
        key = (id(region), lvl)
        if key not in built:
            built[key] = Loop(region, lvl, [], [], [])
        return built[key]

    order = {id(n): i for i, n in enumerate(comp.nodes)}
    for r in regions:
        for key in sorted(r.accs, key=order.__getitem__):
            loop(r, level[key]).accs.append(r.nodes[key])
        for key in sorted(r.exits, key=order.__getitem__):
            loop(r, level[key]).exits.append(r.nodes[key])
    for lp in built.values():
        r = lp.region
        need: dict[int, Node] = {}
        stack = list(lp.exits) + [o for a in lp.accs
                                  for o, od in zip(a.operands, r.wanted(a)) if r.direct(o, od)]
        while stack:
            n = stack.pop()
            if id(n) in need:
                continue
            need[id(n)] = n
            stack += [o for o, od in zip(n.operands, r.wanted(n)) if r.direct(o, od)]
        lp.nodes = sorted(need.values(), key=lambda n: order[id(n)])
    return sorted(built.values(), key=lambda lp: (lp.level, order[id(lp.region.seed)]))
