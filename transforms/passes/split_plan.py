"""Planning the split: which nodes run in slices, along which dimension, in which loop.

The eXLA paper's Algorithm 1 on hlodsl's staged program. Nodes larger than a
threshold (``large``) seed regions; from a seed sliced along one dimension,
``grow`` follows the data flow both ways with the rules of ``split_rules``:
backwards to the large producers a slice needs (small ones and the
program's inputs are sliced where they are used), forwards to every user
that can be computed in the same slices (so a softmax's row max stays
inside), and stops at reductions over the sliced dimension (a dot's
contraction, a sum or max), which accumulate partial results. Users that need
a region node whole read it from a buffer the loop fills slice by slice.

A reduction's result is complete only after its loop. Region nodes that
depend on one (the second pass over a matrix after a Cholesky of its Gram
matrix, in a sparse GP) run in a later loop that recomputes what it needs:
``levels`` numbers the loops so that each reads only what earlier loops made.
"""

from __future__ import annotations

import attrs

from hlodsl.ir.graph import Computation, Node
from hlodsl.ops import Broadcast, Convert, Copy, Reduce, Reshape, Slice, Transpose
from hlodsl.ir.structural import Constant, GetTupleElement, Parameter, Tuple

from .rewrite import nbytes, users
from .split_rules import REDUCED, accumulation, operand_dims, result_dim, shape_of

__all__ = ["Region", "Loop", "plan", "loops", "large_nodes", "input_views"]

_VIEWS = (Reshape, Transpose, Convert, Copy, Slice, Broadcast, GetTupleElement)


@attrs.define
class Region:
    """Nodes computed in slices along one dimension of size ``extent``."""

    dims: dict[int, int]  # id(node) -> the sliced dimension of its result
    accs: dict[int, tuple]  # id(reduction fed by the region) -> (kind, dims per operand)
    extent: int
    seed: Node
    big: set[int]  # the nodes of the program that must not exist whole (``large_nodes``)
    problems: list[str] = attrs.Factory(list)


@attrs.define
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
    """The nodes (by id) the pass must not materialise: over ``threshold`` bytes, and
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
    """A candidate dimension that the data flow cannot keep (a node needs two)."""


def grow(seed: Node, d: int, use: dict, big: set[int], taken: dict) -> Region:
    """The region of ``seed`` sliced along ``d``; raises ``_Conflict`` where it cannot be."""
    region = Region({id(seed): d}, {}, shape_of(seed.type)[d], seed, big)
    queue = [seed]

    def claim(node: Node, dim: int) -> None:
        if id(node) in taken:
            raise _Conflict(f"{node.op!r} belongs to another split")
        have = region.dims.get(id(node))
        if have is None:
            if id(node) in region.accs:
                raise _Conflict(f"{node.op!r} both reduces and keeps the sliced dimension")
            region.dims[id(node)] = dim
            queue.append(node)
        elif have != dim:
            raise _Conflict(f"{node.op!r} would be sliced along dimensions {have} and {dim}")

    while queue:
        node = queue.pop()
        dim = region.dims[id(node)]
        wanted = operand_dims(node, dim)
        if wanted is None:
            raise _Conflict(f"{node.op!r} -> {node.type} cannot be computed in slices of "
                            f"dimension {dim}")
        for o, od in zip(node.operands, wanted):
            if od is None:
                if id(o) in big:
                    region.problems.append(f"{node.op!r} needs all of {o.type} at once")
            elif id(o) in region.dims or id(o) in big:
                claim(o, od)
        for u in use[id(node)]:
            if u is None:
                continue
            for i, o in enumerate(u.operands):
                if o is not node:
                    continue
                r = result_dim(u, i, dim)
                if isinstance(r, int):
                    claim(u, r)
                elif r == REDUCED:
                    if id(u) in region.dims:
                        raise _Conflict(f"{u.op!r} both reduces and keeps the sliced dimension")
                    region.accs[id(u)] = accumulation(u, i, dim)
                    # A variadic reduction's other operands (an arg-max's indices)
                    # are sliced with this one, in the same loop.
                    if isinstance(u.op, Reduce):
                        for o, od in zip(u.operands, region.accs[id(u)][1]):
                            if od is not None and o is not node:
                                claim(o, od)
                    if id(u) in big:
                        region.problems.append(f"{u.op!r} accumulates all of {u.type}")
                elif id(node) in big:
                    region.problems.append(f"{u.op!r} needs all of {node.type} at once")
    _check_accumulations(region, use)
    return region


def _check_accumulations(region: Region, use: dict) -> None:
    nodes = {id(u): u for n in region.dims for u in use.get(n, ()) if u is not None}
    for key, (kind, dims) in region.accs.items():
        node = nodes[key]
        for o, od in zip(node.operands, dims):
            have = region.dims.get(id(o))
            if have is not None and have != od:
                raise _Conflict(f"{node.op!r} reduces its operands over different dimensions")


def plan(comp: Computation, threshold: int) -> tuple[list[Region], list[str]]:
    """The regions of ``comp``: one per large node not in an earlier region."""
    use = users(comp)
    big = large_nodes(comp, threshold)
    taken: dict[int, int] = {}
    regions, notes = [], []
    seeds = sorted((n for n in comp.nodes if id(n) in big), key=lambda n: -nbytes(n.type))
    for seed in seeds:
        if id(seed) in taken:
            continue
        shape = shape_of(seed.type)
        best, why = None, []
        for d in sorted(range(len(shape)), key=lambda k: -shape[k]):
            if shape[d] < 2:
                continue
            try:
                region = grow(seed, d, use, big, taken)
            except _Conflict as e:
                why.append(f"dimension {d}: {e}")
                continue
            if best is None or _rank(region, threshold) < _rank(best, threshold):
                best = region
            if not region.problems and not _merges_top_k(region):
                break
        if best is None:
            where = f" at {seed.loc}" if seed.loc else ""
            notes.append(f"cannot split {seed.op!r} -> {seed.type}{where}: "
                         + ("; ".join(why) or "no dimension to slice"))
            continue
        for key in best.dims:
            taken[key] = len(regions)
        regions.append(best)
        notes += [f"cannot split: {p}" for p in best.problems]
    return regions, notes


def _merges_top_k(region: Region) -> bool:
    """Whether the region's slices each select a top-k that the loop merges."""
    return any(kind == "topk" for kind, _ in region.accs.values())


def _rank(region: Region, threshold: int) -> tuple[int, bool, bool]:
    """Fewer problems first; then a dimension whose single slice is under the
    threshold; then one with no top-k to merge. Sliced along a top-k's rows,
    each row's top-k runs once, over the whole row (``BlockedTopK``'s best case),
    with no merge per slice: kNN at 10⁴ queries x 10⁵ points under 1 GiB took
    3.1 s so, against 4.9 s sliced along the points (``hd.profile``, loaded machine)."""
    thin = nbytes(region.seed.type) // max(region.extent, 1) <= threshold
    return len(region.problems), not thin, _merges_top_k(region)


def _levels(comp: Computation, where: dict, acc_of: dict) -> dict[int, int]:
    """Per node, the loop level it needs: one more than the loop of each reduction it reads."""
    level: dict[int, int] = {}
    for n in comp.nodes:
        below = [level.get(id(o), 0) for o in n.operands]
        if id(n) in where:
            level[id(n)] = max(below, default=0)
        elif id(n) in acc_of:
            level[id(n)] = max(below, default=0) + 1
        else:
            level[id(n)] = max((lv + (id(o) in where) for o, lv in zip(n.operands, below)),
                               default=0)
    return level


def _evict(comp: Computation, regions: list[Region]) -> None:
    """Take out of the regions the small nodes that would make a later loop for nothing.

    A small region node that reads a reduction's result (``dx = dx_part_1 +
    dx_part_2`` in a gradient) sits one loop level above its region operands;
    kept, it makes a second loop recompute the whole region. Computed outside
    instead, it reads its region operands whole, which are small too.
    """
    while True:
        where = {key: r for r in regions for key in r.dims}
        acc_of = {key: r for r in regions for key in r.accs}
        level = _levels(comp, where, acc_of)
        late = [n for n in comp.nodes if id(n) in where and id(n) not in where[id(n)].big
                and level[id(n)] > max((level[id(o)] for o in n.operands if id(o) in where),
                                       default=0)]
        if not late:
            return
        for n in late:
            del where[id(n)].dims[id(n)]
        node = {id(u): u for u in comp.nodes}
        for r in regions:  # a reduction none of whose operands stayed is computed outside
            r.accs = {k: v for k, v in r.accs.items()
                      if any(id(o) in r.dims for o in node[k].operands)}


def loops(comp: Computation, regions: list[Region]) -> list[Loop]:
    """The loops computing ``regions``, in an order where each reads only earlier ones."""
    _evict(comp, regions)
    use = users(comp)
    where = {key: r for r in regions for key in r.dims}
    acc_of = {key: r for r in regions for key in r.accs}
    level = _levels(comp, where, acc_of)
    built: dict[tuple[int, int], Loop] = {}

    def loop(region: Region, lvl: int) -> Loop:
        key = (id(region), lvl)
        if key not in built:
            built[key] = Loop(region, lvl, [], [], [])
        return built[key]

    for n in comp.nodes:
        if id(n) in acc_of:
            loop(acc_of[id(n)], level[id(n)] - 1).accs.append(n)
    # Exits: region nodes read whole by a node outside (or by the program's result).
    for n in comp.nodes:
        region = where.get(id(n))
        if region is None:
            continue
        outside = [u for u in use[id(n)] if u is None or (id(u) not in region.dims
                                                         and id(u) not in region.accs)]
        if outside:
            loop(region, level[id(n)]).exits.append(n)
    order = {id(n): i for i, n in enumerate(comp.nodes)}
    for lp in built.values():
        need: dict[int, Node] = {}
        stack = list(lp.exits) + [o for a in lp.accs for o in a.operands
                                  if id(o) in lp.region.dims]
        while stack:
            n = stack.pop()
            if id(n) in need:
                continue
            need[id(n)] = n
            stack += [o for o in n.operands if id(o) in lp.region.dims]
        lp.nodes = sorted(need.values(), key=lambda n: order[id(n)])
    return sorted(built.values(), key=lambda lp: (lp.level, order[id(lp.region.seed)]))
