"""Emitting a split plan, and checking it first: one walk, two interpretations.

``emit`` stages the program again in order: a node outside every loop is
its op applied again; a loop's exit or reduction, when something needs it,
runs its loop (``hd.fori_loop``) after the values the loop reads. ``check``
walks the plan in exactly that order on *types* instead of values: a loop
that would read a value no earlier loop or outside node gives (its own
result, a region node nobody fills), a slice whose type the op's shape rule
does not give, a value filled slice by slice that cannot be, raise
``PlanError`` naming the region, which ``Split`` then declines (computes
whole). So what ``emit`` runs has been walked once already: a plan the
planner got wrong is a region not split, never an error inside the pass.

Inside a loop every operand of a region node comes one of three ways
(``sources``): *slice* (a region node sliced as the reader needs it: this
slice's value), *read* (a value that exists whole: outside the loop, an
earlier loop's exit or reduction, or a view of the inputs recomputed here),
or *cut* (such a whole value, sliced with ``DynamicSlice``).

>>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
>>> from hlodsl.ir.staging import stage
>>> from hlodsl.transforms.passes.split_plan import loops, plan
>>> x = hd.array(np.ones((64, 2)))
>>> comp = stage(lambda x: xp.sum(xp.exp(-(x @ xp.matrix_transpose(x))), axis=0), (x,),
...              {}).computation
>>> todo = loops(comp, plan(comp, threshold=8192)[0])
>>> check(comp, todo, {id(lp.region): (16,) for lp in todo})   # walks, or raises PlanError
>>> todo[0].chunk = 16
>>> sum(type(n.op).__name__ == "While" for n in emit(comp, todo).nodes)
1
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.array import Array
from hlodsl.arrays.types import ArrayType, TupleType
from hlodsl.context import STATE
from hlodsl.ir.graph import Builder, Computation, Node
from hlodsl.ir.interpret import apply_node
from hlodsl.ir.structural import Constant, GetTupleElement, Parameter, Tuple
from hlodsl.ops import (Add, Broadcast, Concatenate, Convert, DynamicSlice, DynamicUpdateSlice,
                        Iota, Maximum, Minimum, Multiply, Reshape)
from hlodsl.transforms.control import fori_loop

from .rewrite import parameters_like, root_of
from .split_plan import Loop, Region, input_views
from .split_rules import shape_of, sliced_op
from .top_k import take

__all__ = ["emit", "check", "PlanError", "sources"]

_COMBINE = {"add": Add, "max": Maximum, "min": Minimum, "mul": Multiply}


class PlanError(Exception):
    """A region of the plan that cannot be emitted as planned (``check`` raises it)."""

    def __init__(self, region: Region, why: str):
        super().__init__(why)
        self.region, self.why = region, why


def sources(region: Region, node: Node) -> list[tuple[Node, int | None, str]]:
    """Per operand of a region node: (operand, dimension its slice needs, how it comes:
    'slice' from this loop, 'read' whole, or 'cut' from a whole value)."""
    out = []
    for o, od in zip(node.operands, region.wanted(node)):
        kind = "slice" if region.direct(o, od) else "read" if od is None else "cut"
        out.append((o, od, kind))
    return out


def _inputs(lp: Loop, views: set[int]) -> list[Node]:
    """The nodes outside the loop that it reads (views of inputs it recomputes)."""
    seen: dict[int, Node] = {}
    for n in lp.nodes + lp.accs:
        for o, _, kind in sources(lp.region, n):
            if kind != "slice" and id(o) not in views:
                seen.setdefault(id(o), o)
    return list(seen.values())


class _Walk:
    """The order of emission: outside nodes in program order, each loop when something
    needs what it gives, after the values it reads. ``backend`` applies nodes and
    runs loops (on values, or on types)."""

    def __init__(self, comp: Computation, todo: list[Loop], backend):
        self.comp, self.backend = comp, backend
        self.views = input_views(comp)
        self.split = {id(n): lp for lp in todo for n in lp.exits + lp.accs}
        self.inside = {key: lp.region for lp in todo for key in lp.region.dims}
        self.order = {id(n): i for i, n in enumerate(comp.nodes)}
        self.env: dict[int, object] = {}
        self.running: set[int] = set()
        self.done: set[int] = set()

    def walk(self) -> None:
        for node in self.comp.nodes:
            if id(node) in self.inside and id(node) not in self.split:
                continue  # computed in a loop, or not needed whole
            self.value(node)

    def value(self, node: Node):
        self.demand(node)
        return self.env[id(node)]

    def run(self, lp: Loop) -> None:
        if id(lp) in self.done:
            return
        if id(lp) in self.running:
            raise PlanError(lp.region, "a loop would read what it computes itself")
        self.running.add(id(lp))
        for n in _inputs(lp, self.views):
            self.value(n)
        self.backend.loop(lp, self)
        self.running.discard(id(lp))
        self.done.add(id(lp))

    def demand(self, node: Node) -> None:
        """Give ``node`` its value: its missing ancestors first, in program order."""
        env = self.env
        if id(node) in env:
            return
        missing, stack = {}, [node]
        while stack:
            n = stack.pop()
            if id(n) in env or id(n) in missing:
                continue
            missing[id(n)] = n
            if id(n) not in self.split:
                stack += n.operands
        for n in sorted(missing.values(), key=lambda n: self.order[id(n)]):
            if id(n) in env:
                continue
            if id(n) in self.split:
                self.run(self.split[id(n)])
                if id(n) not in env:
                    raise PlanError(self.split[id(n)].region, f"its loop did not give {n!r}")
                continue
            if id(n) in self.inside:
                raise PlanError(self.inside[id(n)],
                                f"{n!r} is needed whole but no loop fills it")
            env[id(n)] = self.backend.apply(n, [env[id(o)] for o in n.operands])

    def read(self, lp: Loop, node: Node, made: dict):
        """An outside node's value inside ``lp``; views of the program's inputs are
        recomputed there from the inputs themselves (XLA would copy them otherwise)."""
        if id(node) not in self.views or type(node.op) is Parameter:
            if id(node) not in self.env:
                raise PlanError(lp.region, f"a loop reads {node!r} before it exists")
            return self.env[id(node)]
        if id(node) not in made:
            made[id(node)] = self.backend.apply(
                node, [self.read(lp, o, made) for o in node.operands])
        return made[id(node)]


# -- checking: the walk on types --------------------------------------------------------------


def _sliced(t, d: int, size: int):
    if isinstance(t, TupleType):
        return TupleType(tuple(_sliced(e, d, size) for e in t.elements))
    shape = list(t.shape)
    shape[d] = size
    return attrs.evolve(t, shape=tuple(shape))


def _result_type(node: Node, op, types: list):
    if type(op) is Tuple:
        return TupleType(tuple(types))
    if type(op) is GetTupleElement:
        return types[0].elements[op.index]
    return op.result_type(*types)


class _Types:
    """``check``'s backend: values are types; a loop is checked for each slice size."""

    def __init__(self, sizes: dict[int, tuple[int, ...]]):
        self.sizes = sizes  # id(region) -> slice sizes to check

    def apply(self, node: Node, types: list):
        return node.type

    def loop(self, lp: Loop, walk: _Walk) -> None:
        r = lp.region
        for c in self.sizes.get(id(r), (1,)):
            self._slice(lp, walk, c)
        for n in lp.exits:
            if not isinstance(n.type, ArrayType):
                raise PlanError(r, f"{n!r} is read whole but a tuple cannot be filled slice by "
                                   "slice")
            walk.env[id(n)] = n.type
        for a in lp.accs:
            walk.env[id(a)] = a.type

    def _operands(self, lp: Loop, walk: _Walk, node: Node, ct: dict, made: dict, c: int):
        r = lp.region
        types = []
        for o, od, kind in sources(r, node):
            if kind == "slice":
                if id(o) not in ct:
                    raise PlanError(r, f"{node!r} reads a slice of {o!r} that its loop does "
                                       "not compute")
                types.append(ct[id(o)])
                continue
            t = walk.read(lp, o, made)
            if kind == "cut":
                if not isinstance(t, ArrayType) or t.shape[od] != r.extent:
                    raise PlanError(r, f"{node!r} would slice {o!r} along dimension {od}, "
                                       f"whose extent is not {r.extent}")
                t = _sliced(t, od, c)
            types.append(t)
        return types

    def _slice(self, lp: Loop, walk: _Walk, c: int) -> None:
        r = lp.region
        ct: dict[int, object] = {}
        made: dict[int, object] = {}
        for n in lp.nodes:
            d = r.dims[id(n)]
            if shape_of(n.type)[d] != r.extent:
                raise PlanError(r, f"{n!r} has no dimension {d} of extent {r.extent}")
            types = self._operands(lp, walk, n, ct, made, c)
            want = _sliced(n.type, d, c)
            try:
                got = _result_type(n, sliced_op(n, d, c), types)
            except Exception as e:  # noqa: BLE001 -- the shape rule's answer is the check
                raise PlanError(r, f"a slice of {n!r} is not well typed: {e}") from None
            if got != want:
                raise PlanError(r, f"a slice of {c} of {n!r} would be {got}, not {want}")
            ct[id(n)] = want
        for a in lp.accs:
            types = self._operands(lp, walk, a, ct, made, c)
            if r.accs[id(a)][0] == "topk":
                continue
            try:
                got = _result_type(a, a.op, types)
            except Exception as e:  # noqa: BLE001 -- the shape rule's answer is the check
                raise PlanError(r, f"a partial {a!r} is not well typed: {e}") from None
            if got != a.type:
                raise PlanError(r, f"a partial {a!r} would be {got}, not {a.type}")


def check(comp: Computation, todo: list[Loop], sizes: dict | None = None) -> None:
    """Walk ``todo`` as ``emit`` would, on types; raises ``PlanError`` where it cannot run.

    ``sizes`` gives the slice sizes to check per region (by id; default: 1)."""
    _Walk(comp, todo, _Types(sizes or {})).walk()


# -- emitting: the walk on values -------------------------------------------------------------


class _Values:
    """``emit``'s backend: nodes staged again, loops as ``fori_loop``."""

    def apply(self, node: Node, values: list):
        return _apply(node, values)

    def loop(self, lp: Loop, walk: _Walk) -> None:
        _run_loop(lp, walk)


def emit(comp: Computation, todo: list[Loop]) -> Computation:
    """``comp`` staged again with ``todo``'s loops (a plan ``check`` accepted)."""
    with Builder(comp.name) as b:
        walk = _Walk(comp, todo, _Values())
        walk.env.update((id(p), a) for p, a in zip(comp.params, parameters_like(b, comp)))
        walk.walk()
        root = root_of(b, comp, walk.env[id(comp.root)])
    return b.finish(root)


def _apply(node: Node, values: list, op=None) -> object:
    previous = STATE.location
    STATE.location = node.loc or previous
    try:
        if op is None or op is node.op:
            return apply_node(node, values)
        return op(*values)
    finally:
        STATE.location = previous


def _const(value) -> Array:
    return Constant(np.asarray(value))()


def _starts(offset, dim: int, rank: int) -> list:
    zero = _const(np.int32(0))
    return [offset if k == dim else zero for k in range(rank)]


def _slice(x: Array, dim: int, offset, size: int) -> Array:
    shape = list(x.type.shape)
    shape[dim] = size
    return DynamicSlice(tuple(shape))(x, *_starts(offset, dim, len(shape)))


def _operand_values(lp: Loop, walk: _Walk, node: Node, cv: dict, made: dict, offset, size):
    values = []
    for o, od, kind in sources(lp.region, node):
        if kind == "slice":
            values.append(cv[id(o)])
        else:
            v = walk.read(lp, o, made)
            values.append(v if kind == "read" else _slice(v, od, offset, size))
    return values


def _chunk_values(lp: Loop, walk: _Walk, offset, size: int) -> list:
    """The loop's results for the slice of ``size`` at ``offset``: exits' slices,
    then the reductions' partial results."""
    dims = lp.region.dims
    made: dict[int, object] = {}
    cv: dict[int, object] = {}
    for n in lp.nodes:
        d = dims[id(n)]
        out = _apply(n, _operand_values(lp, walk, n, cv, made, offset, size), sliced_op(n, d, size))
        if type(n.op) is Iota and n.op.iota_dimension == d:
            shift = Broadcast(shape_of(out.type), ())(Convert(out.type.dtype)(offset))
            out = Add()(out, shift)
        cv[id(n)] = out
    parts = [cv[id(n)] for n in lp.exits]
    for a in lp.accs:
        values = _operand_values(lp, walk, a, cv, made, offset, size)
        if lp.region.accs[id(a)][0] == "topk":
            parts.append(_top_k_part(a, values[0], offset))
        else:
            parts.append(_apply(a, values))
    return parts


def _run_loop(lp: Loop, walk: _Walk) -> None:
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
                out.append(_merge_reduce(lp, a, cur, part, walk, {}))
            else:
                out.append(_COMBINE[kind]()(cur, part))
        return tuple(out)

    # The first slice starts the state (no identity element needed: top-k has none).
    zero = _const(np.int32(0))
    first = _chunk_values(lp, walk, zero, c)
    state = tuple(DynamicUpdateSlice()(_filled(n.type, 0), part,
                                       *_starts(zero, region.dims[id(n)], len(n.type.shape)))
                  for n, part in zip(lp.exits, first)) + tuple(first[len(lp.exits):])

    def body(i, state):
        offset = Multiply()(i, _const(np.int32(c)))
        return combine(state, _chunk_values(lp, walk, offset, c), offset)

    if full > 1:
        state = fori_loop(1, full, body, state)
    if tail:
        offset = _const(np.int32(full * c))
        state = combine(state, _chunk_values(lp, walk, offset, tail), offset)
    for n, v in zip(lp.exits + lp.accs, state):
        walk.env[id(n)] = v


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


def _merge_reduce(lp: Loop, node: Node, best, part, walk: _Walk, made: dict) -> object:
    """The reduction of the partial results so far and a slice's, by the node's own
    computation: the two side by side along a new last dimension, reduced over it
    (the earlier first), with the node's initial values."""
    n = len(node.operands) // 2
    best, part = (best, part) if n > 1 else ((best,), (part,))
    rank = len(best[0].type.shape)
    pairs = [Concatenate(rank)(*(Reshape(x.type.shape + (1,))(x) for x in (b, p)))
             for b, p in zip(best, part)]
    inits = [walk.read(lp, o, made) for o in node.operands[n:]]
    return attrs.evolve(node.op, dimensions=(rank,))(*pairs, *inits)


def _filled(t, value) -> Array:
    return Broadcast(t.shape, ())(_const(np.asarray(value, t.dtype.np_dtype)))
