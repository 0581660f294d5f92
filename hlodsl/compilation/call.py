"""A compiled call, whole: from the arguments to the result arrays, in one module.

Once a signature of ``hd.compile(f)`` is compiled, a call of it runs here and
in the runtime only:

1. The classes of the top-level arguments pick a *plan*, made when a call with
   those classes was first seen. For arrays alone, the classes are the whole
   signature (an array class fixes element type and shape), so the plan is the
   compiled entry itself.
2. Otherwise the plan knows where the arrays are: top-level arguments, the
   values of top-level dicts, Python numbers (traced scalars, ``hlodsl.scalars``),
   which arguments are static values, and, for a nested argument (dicts of
   dicts, lists, tuples, registered classes), a *walker* written for its
   structure (``hlodsl.compilation.walkers``). It gathers the leaves and the
   rest of the signature key (dict keys, static values, the leaves' classes)
   with no general walk over the structure and no type dispatch per leaf.
3. The leaves' device buffers go to PJRT's execute (``hlodsl.runtime``); the
   outputs come back as arrays of the classes the signature fixed.

Arguments of any other structure (namedtuples, attrs instances, dicts of
non-string keys, numpy arrays), or of another structure than the walker's,
take the general path: ``hlodsl.tree`` flattens them, and the signature is
looked up by the whole structure.

>>> import numpy as np, hlodsl as hd
>>> f = hd.compile(lambda p, x: p["w"] @ x + p["b"])
>>> p = {"w": hd.array(np.eye(2, dtype=np.float32)), "b": hd.array(np.float32([1, 2]))}
>>> f(p, hd.array(np.float32([3, 4])))
hlodsl.Array[float32, (2,)]([4., 6.])
>>> f._plans[(dict, type(p["b"]))].segments   # a dict at 0, then arrays from 1 to 2
((1, 0, 1), (0, 1, 2))
"""

from __future__ import annotations

from hlodsl.arrays.array import _TYPES as _ARRAY_CLASSES
from hlodsl.arrays.array import ConsumedBuffer, array_class
from .bindings import moved
from .walkers import ARRAYS, DICT, NUMBER, STATIC, TREE, gatherer, nested, rebuilder
from hlodsl.context import STATE
from hlodsl.errors import DonatedArrayError, staging_error
from hlodsl.ir.printer import module_text
from hlodsl.runtime import Executable, compile_hlo, is_deleted
from hlodsl.arrays.tree import LEAF, children_of, unflatten

__all__ = ["Entry", "DonatingEntry", "CallTable", "Layout", "run_entry", "any_sharded",
           "use_sharding", "forget", "before_donation"]

_new = object.__new__

# What compiles programs over several devices (hlodsl.transforms.sharded): a
# module with sharding annotations, a compile given shardings, and a call whose
# arguments are sharded arrays. The transformations layer hands it in.
_SHARDED: list = []


def use_sharding(runner) -> None:
    """Make ``runner`` what compiles and runs partitioned programs: it has
    ``build(staged, name, in_shardings, out_shardings) -> Entry`` and
    ``run(entry, leaves)`` (an unpartitioned entry called on sharded arrays)."""
    _SHARDED[:] = [runner]


# What runs before a call donates buffers (hlodsl.transforms.lazy: the recorded eager ops,
# whose inputs may be among them), handed in by the transformations layer.
_BEFORE_DONATION: list = []


def before_donation(fn) -> None:
    """Make ``fn()`` run before every call that donates argument buffers."""
    _BEFORE_DONATION[:] = [fn]


def any_sharded(leaves) -> bool:
    """Whether some argument is a sharded array (its class says so: no buffer lookups)."""
    return any(getattr(type(a), "_sharded", False) for a in leaves)


def run_entry(entry, leaves):
    """``entry.run(leaves)``, partitioned over the mesh of sharded arguments if any."""
    if any_sharded(leaves):
        return _SHARDED[0].run(entry, leaves)
    return entry.run(leaves)


# -- one compiled signature --------------------------------------------------------------

class Entry:
    """One compiled signature: the executable and how to make arrays of its outputs."""

    __slots__ = ("staged", "exe", "out_classes", "out_class", "out_tree", "single",
                 "rebuild", "name", "described", "reports", "partitioned", "plans",
                 "unused_donations", "lazy")

    def __init__(self, staged, exe: Executable):
        self.lazy = None  # hlodsl.transforms.lazy: (elements, bytes) if recordable, or False
        self.described: dict | None = None  # argument path -> what this signature holds
        self.reports: tuple = ()  # what the passes over the staged program changed
        self.partitioned: dict | None = None  # argument shardings -> partitioned entry
        self.plans: list = []  # (table, key, layout): where calls find this entry
        self.unused_donations: tuple = ()  # donated leaves no result could reuse
        self.staged = staged
        self.exe = exe  # exe.execute: PJRT's execute and the result handlers (disarmed
        # in a forked child, so read at every call)
        self.name = staged.computation.name
        self.out_classes = tuple(array_class(t) for t in staged.out_types)
        self.out_class = self.out_classes[0] if self.out_classes else None
        self.out_tree = staged.out_tree
        self.single = len(self.out_classes) == 1 and _is_leaf(staged.out_tree)
        self.rebuild = _rebuilder(staged.out_tree, self.out_classes)

    @classmethod
    def build(cls, staged, name: str, donated: tuple[int, ...] = ()) -> Entry:
        """Print ``staged`` as a module, compile it and make the cache entry.

        ``donated`` are leaf indices whose buffers the program may take over: each
        is paired with a result of its element type and shape (``aliases``).
        """
        from hlodsl.arrays.types import ArrayType

        if not all(isinstance(t, ArrayType) for t in staged.out_types):
            raise staging_error(f"{name}: a staged program can only return arrays, not "
                                f"{', '.join(str(t) for t in staged.out_types)} "
                                "(tokens stay inside the program)")
        out_types = [(t.shape, t.dtype.np_dtype) for t in staged.out_types]
        pairs, unused = aliases(staged, donated)
        text = module_text(staged.computation, name, aliases=pairs)
        if "xla.sdy." in text:  # sharding annotations: a program over a mesh
            return _SHARDED[0].build(staged, name, None, None)
        entry = (DonatingEntry if pairs else cls)(staged, compile_hlo(text, out_types=out_types))
        if pairs:
            entry.donate(tuple(p for _, p in pairs), name)
        entry.unused_donations = unused
        return entry

    def run(self, leaves) -> object:
        """The results of the program on the arrays ``leaves`` (one per parameter)."""
        try:
            outs = self.exe.execute([a._buf for a in leaves])
        except Exception:
            diagnose(self.name, leaves)  # a symbolic or donated argument: say so
            raise
        if self.single:
            a = _new(self.out_class)
            a._buf = outs[0]
            a._node = None
            return a
        return self.rebuild(outs)


class DonatingEntry(Entry):
    """A signature whose program takes over some argument buffers (``donate_argnums``):
    after a call, the arrays that held them read as donated (``DonatedArrayError``)."""

    __slots__ = ("donated", "consumed")

    def donate(self, donated: tuple[int, ...], name: str) -> None:
        self.donated = donated  # leaf indices, each aliased to a result
        self.consumed = ConsumedBuffer(name)

    def run(self, leaves) -> object:
        for flush in _BEFORE_DONATION:
            flush()
        bufs = [a._buf for a in leaves]
        ids = list(map(id, bufs))
        for j in self.donated:
            if ids.count(ids[j]) > 1:
                diagnose(self.name, leaves)
                raise ValueError(
                    f"{self.name}: the donated argument {self.path(j)} is also passed as "
                    f"{self.path(next(i for i, b in enumerate(ids) if b == ids[j] and i != j))}"
                    ": a buffer handed over to the results cannot be read by the same call "
                    "(pass a copy, or do not donate it)")
        try:
            outs = self.exe.execute(bufs)
        except Exception:
            diagnose(self.name, leaves)
            raise
        consumed = self.consumed
        for j in self.donated:
            leaves[j]._buf = consumed
        if self.single:
            a = _new(self.out_class)
            a._buf = outs[0]
            a._node = None
            return a
        return self.rebuild(outs)

    def path(self, j: int) -> str:
        """Argument leaf ``j`` as the user wrote it (``params['w']``)."""
        return repr(self.staged.computation.param_names[j])


def aliases(staged, donated: tuple[int, ...]) -> tuple[tuple, tuple[str, ...]]:
    """``(pairs, unused)``: each donated parameter paired with the first result of its
    type not yet taken (``(result index or None, parameter)``), and the paths of the
    donated parameters no result could reuse.

    Rank-0 arrays are never donated: Python numbers in their place are traced as
    scalars whose buffers are shared between calls (``hlodsl.scalars``).
    """
    outs = list(staged.out_types)
    tuple_root = len(outs) != 1  # one result is the root itself, whatever its structure
    taken: set[int] = set()
    pairs, unused = [], []
    for p in donated:
        t = staged.in_types[p]
        if not t.shape:
            continue
        k = next((k for k, o in enumerate(outs) if k not in taken and o == t), None)
        if k is None:
            unused.append(staged.computation.param_names[p])
            continue
        taken.add(k)
        pairs.append((k if tuple_root else None, p))
    return tuple(pairs), tuple(unused)


def diagnose(name: str, leaves) -> None:
    """Raise the clear error for an argument PJRT could not run on, if there is one."""
    for a in leaves:
        buf = getattr(a, "_buf", None)
        if buf is None:
            raise staging_error(f"{name}: a symbolic array {a.type} was passed outside "
                                "staging (it escaped the function being staged)")
        if type(buf) is ConsumedBuffer:
            raise buf.error(f"{name} called on an array {a.type}")
        try:
            gone = is_deleted(buf)
        except Exception:  # not a buffer at all: PJRT's own error says it
            continue
        if gone:
            raise DonatedArrayError(
                f"{name} called on an array {a.type} whose device buffer was donated to a "
                "compiled call (donate_argnums) through another array that shared it")


def _is_leaf(tree) -> bool:
    return tree is LEAF


def _wrap(cls, buf):
    a = _new(cls)
    a._buf = buf
    a._node = None
    return a


def _rebuilder(out_tree, classes: tuple):
    """``outs -> results`` for the structure the program returned: tuples, lists and
    dicts of arrays are made directly, anything else through ``tree.unflatten``."""
    kind = out_tree[0] if type(out_tree) is tuple else None
    children = out_tree[-1] if kind is dict and len(out_tree) == 3 else (
        out_tree[1] if kind in (tuple, list) else None)
    if children is not None and all(_is_leaf(c) for c in children):
        if kind is dict:
            keys = out_tree[1]
            return lambda outs: dict(zip(keys, map(_wrap, classes, outs)))
        return lambda outs: kind(map(_wrap, classes, outs))
    written = rebuilder(out_tree, classes)  # nested: code written for the structure
    if written is not None:
        return written

    def rebuild(outs):
        return unflatten(out_tree, map(_wrap, classes, outs))

    return rebuild


# -- plans: where a call's arrays are, by the classes of its top-level arguments ----------

_STATIC_TYPES = (int, str, bool, type(None))


class Layout:
    """How calls whose top-level arguments have given classes hold their arrays.

    ``segments`` is ``((kind, i, j), ...)`` over the top-level values (positional,
    then keyword), or None when some argument has a structure only ``hlodsl.tree``
    walks: such calls take the general path. ``gather(values) -> (leaves, key)`` is
    code written for the segments (``hlodsl.compilation.walkers``): the arrays of a
    call in ``hlodsl.tree``'s order, and what of the signature the top-level classes
    do not say (None: a nested argument is not structured as the one it was written
    for). ``table`` maps that key to the cells ``[entry, used]`` of the compiled
    cache. Calls whose nested arguments have other structures (with the same
    top-level classes) find theirs among ``others``, layouts of their own.
    """

    __slots__ = ("segments", "gather", "table", "key", "others", "primary")

    #: How many other structures of nested arguments one layout keeps plans for.
    MAX_OTHERS = 8

    def __init__(self, key, values: tuple, static: frozenset, primary: Layout | None = None):
        self.key = key
        self.table: dict = {}
        segments = _segments(values, static)
        self.gather = None if segments is None else gatherer(segments)
        # (a nested value's structure is in the code: the segments keep no value)
        self.segments = None if self.gather is None else tuple(
            (kind, i, None if kind is TREE else j) for kind, i, j in segments)
        self.others: list[Layout] = []
        self.primary = primary  # the layout this one is among the others of

    def other(self, values: tuple) -> tuple[list, list | None]:
        """``(leaves, cell)`` of a call whose nested arguments are not structured as
        this layout's walkers', by the other layouts' (cell None: not found)."""
        for layout in self.others:
            leaves, rest = layout.gather(values)
            cell = layout.table.get(rest)
            if cell is not None:
                return leaves, cell
        return [], None


def _segments(values: tuple, static: frozenset):
    segments: list = []
    for i, v in enumerate(values):
        t = type(v)
        if t in _ARRAY_CLASSES:
            if segments and segments[-1][0] is ARRAYS and segments[-1][2] == i:
                segments[-1] = (ARRAYS, segments[-1][1], i + 1)
            else:
                segments.append((ARRAYS, i, i + 1))
        elif nested(v):
            if i in static:
                return None
            segments.append((TREE, i, v))
        elif t is dict and all(type(k) is str for k in v):
            segments.append((DICT, i, i + 1))
        elif t in _STATIC_TYPES:
            segments.append((STATIC, i, i + 1))
        elif (t is float or t is complex) and i not in static:
            segments.append((NUMBER, i, i + 1))
        else:
            return None
    return tuple(segments)


class CallTable:
    """The call side of a compiled function; ``hlodsl.compilation.compiler.Compiled`` derives from it.

    ``_plans`` maps the classes of a call's top-level arguments (and its keyword
    names) to a cell ``[entry, used]`` of the compiled cache (arrays only) or to a
    ``Layout``. The subclass provides ``staged_fn``, ``_lock``, ``_entries`` (the
    compiled cache, whose ``on_evict`` calls ``forget``), ``_bindings`` and
    ``_forget_staged`` (``hlodsl.bindings``: the variables staging read, and dropping
    every signature when one was rebound), ``_general(args, kwargs) ->
    (leaves, key, cell)`` (the general path: flatten, look up, compile on a miss) and
    ``_static_values(args, kwargs)`` (the positions of the top-level values that are
    static).
    """

    def __call__(self, *args, **kwargs):
        if STATE.builders:  # (current_builder() inlined: this is the call path)
            # Called from inside another staged function: inline it, so nested
            # calls flatten into the enclosing module.
            return self.staged_fn(*args, **kwargs)
        if self._bindings and moved(self._bindings):  # a variable staging read was rebound
            self._forget_staged()
        if kwargs:
            values = (*args, *kwargs.values())
            key = (tuple(kwargs), *map(type, values))
        else:
            values = args
            key = tuple(map(type, args))
        plan = self._plans.get(key)
        if type(plan) is list:  # arrays only: their classes are the signature
            # Entry.run, inlined: this is every arrays-only call's path, and a method
            # call is a measurable part of a call that costs a few microseconds.
            plan[1] = True
            entry = plan[0]
            try:
                outs = entry.exe.execute([a._buf for a in values])
            except Exception:
                diagnose(entry.name, values)
                raise
            if entry.single:
                a = _new(entry.out_class)
                a._buf = outs[0]
                a._node = None
                return a
            return entry.rebuild(outs)
        if plan is not None and plan.segments is not None:
            leaves, rest = plan.gather(values)
            cell = plan.table.get(rest)
            if cell is None and plan.others:  # another structure of nested arguments
                leaves, cell = plan.other(values)
            if cell is not None:
                cell[1] = True
                return cell[0].run(leaves)
        leaves, signature, cell = self._general(args, kwargs)
        self._learn(plan, key, values, leaves, signature, cell, args, kwargs)
        return cell[0].run(leaves)

    def _learn(self, plan, key, values: tuple, leaves: list, signature, cell, args,
               kwargs) -> None:
        """Make the next call like this one find ``cell`` by its plan."""
        entry = cell[0]
        with self._lock:
            if self._entries.slot(signature) is not cell:
                return  # not (or no longer) cached: nothing would forget the plan
            if plan is None:
                if type(entry) is Entry and len(leaves) == len(values) and \
                        all(a is b for a, b in zip(leaves, values)):
                    self._plans[key] = cell
                    entry.plans.append((self._plans, key, None))
                    return
                plan = Layout(key, values, self._static_values(args, kwargs))
                self._plans[key] = plan
            if plan.segments is None:
                return
            if _keys_not_all_strings(signature[0]):
                return  # keys equal across types (1 == 1.0): calls take the general path
            mine, rest = plan.gather(values)
            if rest is None or not _same(mine, leaves):
                # Another structure (a nested argument the walkers were not written for, a
                # dict of arrays now holding a structure): a layout of its own.
                other = _other_layout(plan, values, leaves,
                                      self._static_values(args, kwargs))
                if other is None:
                    if rest is not None:  # not the arrays hlodsl.arrays.tree finds (numpy
                        plan.segments = None  # arrays, say): such calls take the general path
                    return
                plan = other
                mine, rest = plan.gather(values)
            plan.table[rest] = cell
            entry.plans.append((plan.table, rest, plan))


def _same(mine: list, leaves: list) -> bool:
    return len(mine) == len(leaves) and all(a is b for a, b in zip(mine, leaves))


def _other_layout(plan: Layout, values: tuple, leaves: list,
                  static: frozenset) -> Layout | None:
    """The layout among ``plan``'s others that gathers exactly ``leaves`` from ``values``,
    made if there is room (None: there is not, or no layout covers the values)."""
    for layout in plan.others:
        mine, rest = layout.gather(values)
        if rest is not None and _same(mine, leaves):
            return layout
    if len(plan.others) >= Layout.MAX_OTHERS:
        return None
    layout = Layout(plan.key, values, static, primary=plan)
    if layout.segments is None:
        return None
    mine, rest = layout.gather(values)
    if rest is None or not _same(mine, leaves):
        return None
    plan.others.append(layout)
    return layout


def _keys_not_all_strings(treedef) -> bool:
    """Whether a dict in ``treedef`` has keys other than strings (its node has a fourth
    item, the keys' ``static_key``s): keys such as ``1``, ``1.0`` and ``True`` are equal,
    so a plan keyed by the keys themselves would take one for another."""
    if type(treedef) is not tuple:
        return False
    if treedef[0] is dict and len(treedef) == 4:
        return True
    return any(_keys_not_all_strings(c) for c in children_of(treedef))


def forget(plans: dict, entry) -> None:
    """Drop the plans that lead to an evicted ``entry`` (its cache's ``on_evict``);
    ``plans`` is the compiled function's table of plans."""
    for table, key, layout in entry.plans:
        cell = table.get(key)
        if cell is not None and type(cell) is list and cell[0] is entry:
            del table[key]
        if layout is None or layout.table:
            continue
        if layout.primary is not None and layout in layout.primary.others:
            layout.primary.others.remove(layout)
            layout = layout.primary
        if plans.get(layout.key) is layout and not layout.table and not layout.others:
            del plans[layout.key]
    entry.plans.clear()
