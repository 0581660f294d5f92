"""Walkers: a call's arrays gathered by code written for the structure of its arguments.

A compiled call whose argument is a nested structure (``{"layer0": {"w": W,
"b": b}, ...}``, lists, tuples, registered classes) must find its arrays and
the rest of its signature without ``hlodsl.tree``'s walk, which spends a
Python call, a type dispatch and a treedef node per container. When a call
with such arguments is first seen, ``gatherer`` writes one function for the
plan (``call.Layout``) of their structure: straight-line code, no loop, no
call per container. For ``f(params, x)`` with ``params = {"layer0": {"w": W,
"b": b}, ...}``:

    def gather(values):
        leaves = []
        parts = []
        try:
            v0 = values[0]
            if not (type(v0) is dict and tuple(v0) == K1): return leaves, None
            c1, c2, ... = v0.values()
            if not (type(c1) is dict and tuple(c1) == K2 and ...): return leaves, None
            leaves += (*c1.values(), *c2.values(), ...)
            leaves += values[1:2]
        except (TypeError, ValueError):     # a container of another length
            return leaves, None
        return leaves, (*parts, *map(type, leaves))

It gathers the arrays in ``hlodsl.tree``'s order, with ``parts`` what else of
the signature the structure does not fix (the keys of a top-level dict of
arrays, static values, registered classes' aux data), and returns ``None`` in
their place where a nested argument is not structured (container kinds,
lengths, dict keys and their order) as the one it was written for: such calls
find another plan, or take the general path. Together with the arrays'
classes, the structure and ``parts`` determine the signature the general path
finds, which is how ``call.Layout`` keys its compiled entries.

>>> import numpy as np, hlodsl as hd
>>> a = hd.array(np.float32([1, 2]))
>>> walk = walker({"l0": {"w": a, "b": a}, "n": [a, 3]})
>>> leaves, parts = [], []
>>> walk({"l0": {"w": a, "b": a}, "n": [a, 4]}, leaves, parts), len(leaves), parts
(True, 3, [4])
>>> walk({"l0": [a, a], "n": [a, 4]}, [], []), walk({"l0": {"b": a, "w": a}, "n": [a, 4]}, [], [])
(False, False)
"""

from __future__ import annotations

from keyword import iskeyword

from hlodsl.arrays.array import _TYPES as _ARRAY_CLASSES
from hlodsl.arrays.pytrees import NODES
from hlodsl.arrays.tree import static_key

__all__ = ["walker", "gatherer", "nested", "rebuilder", "ARRAYS", "DICT", "STATIC", "NUMBER",
           "TREE"]

#: Segment kinds of a plan (``call.Layout``): arrays at positions [i, j); the values of
#: the dict of arrays at i; a static value at i (int, str, bool, None); a Python number
#: at i (a traced scalar); a nested structure at i, structured as the segment's third item.
ARRAYS, DICT, STATIC, NUMBER, TREE = 0, 1, 2, 3, 4
#: Static values a walker keys by value after checking their type (which fixes it).
_STATIC = (int, str, bool)
#: How deep, and how many containers, a walker is written for (past that: the general path).
_MAX_DEPTH, _MAX_NODES = 32, 4096


class _Unsupported(Exception):
    """A value the walkers do not cover (namedtuples, attrs, dicts of non-string keys, ...)."""


def nested(value) -> bool:
    """Whether ``value`` is a container a walker may cover (a dict whose values are not
    all arrays, a list, a tuple, an instance of a registered class)."""
    t = type(value)
    if t is dict:
        return not all(type(v) in _ARRAY_CLASSES for v in value.values())
    return t is list or t is tuple or t in NODES


def gatherer(segments: tuple):
    """``gather(values) -> (leaves, parts and the leaves' classes, or None)`` written for
    ``segments`` (``((kind, i, j), ...)``, a nested value in place of ``j`` for ``TREE``),
    or None where a nested value holds something walkers do not cover."""
    writer = _Writer()
    lines: list[str] = []
    for kind, i, j in segments:
        if kind is ARRAYS:
            lines.append(f"leaves += values[{i}:{j}]")
        elif kind is DICT:
            lines += [f"d{i} = values[{i}]", f"parts.append(tuple(d{i}))",
                      f"leaves += d{i}.values()"]
        elif kind is STATIC:
            lines.append(f"parts.append(values[{i}])")
        elif kind is NUMBER:
            writer.traced_scalars()
            lines.append(f"leaves.append(_ts(values[{i}]))")
        else:
            lines.append(f"v{i} = values[{i}]")
            try:
                lines += writer.tree(j, f"v{i}", "return leaves, None")
            except (_Unsupported, RecursionError):
                return None
    source = ("def gather(values):\n    leaves = []\n    parts = []\n    try:\n"
              + "".join(f"        {line}\n" for line in lines)
              + "    except (TypeError, ValueError):  # a container of another length\n"
              "        return leaves, None\n"
              "    return leaves, (*parts, *map(type, leaves))\n")
    try:
        return _define(source, "gather", writer.constants)
    except (SyntaxError, RecursionError, MemoryError):  # past the parser's limits
        return None


def walker(value):
    """A function ``walk(v, leaves, parts) -> bool`` for values structured as ``value``
    (the code ``gatherer`` writes for one nested argument), or None where ``value``
    holds something walkers do not cover."""
    writer = _Writer()
    try:
        lines = writer.tree(value, "v", "return False")
    except (_Unsupported, RecursionError):
        return None
    source = ("def walk(v, leaves, parts):\n    try:\n"
              + "".join(f"        {line}\n" for line in lines)
              + "    except (TypeError, ValueError):  # a container of another length\n"
              "        return False\n    return True\n")
    try:
        return _define(source, "walk", writer.constants)
    except (SyntaxError, RecursionError, MemoryError):
        return None


def _define(source: str, name: str, constants: dict):
    """The function ``name`` that ``source`` defines, with ``constants`` as its globals."""
    namespace = {**constants, "__name__": __name__}  # profilers name this module
    exec(compile(source, f"<hlodsl {name}>", "exec"), namespace)  # noqa: S102
    fn = namespace[name]
    fn.source = source
    return fn


def rebuilder(out_tree, classes: tuple):
    """``outs -> results`` written for a compiled program's result structure ``out_tree``
    (nested dicts, lists, tuples, registered classes, static values): each output buffer
    becomes an array of its class where the structure holds it, with no call per leaf.
    None for structures it does not cover (namedtuples, attrs instances).

    >>> import numpy as np, hlodsl as hd
    >>> from hlodsl.arrays.tree import flatten
    >>> a = hd.array(np.float32([1, 2]))
    >>> leaves, tree = flatten({"l0": {"w": a, "n": 3}, "l1": [a]})
    >>> rebuilder(tree, (type(a), type(a)))([a._buf, a._buf])["l0"]
    {'w': hlodsl.Array[float32, (2,)]([1., 2.]), 'n': 3}
    """
    from hlodsl.arrays.pytrees import PYTREE
    from hlodsl.arrays.tree import LEAF, _Static

    lines: list[str] = []
    constants: dict = {"_new": object.__new__}
    count = iter(range(len(classes)))

    def expr(td) -> str:
        if td is LEAF:
            k = next(count)
            constants[f"C{k}"] = classes[k]
            lines.append(f"a{k} = _new(C{k}); a{k}._buf = outs[{k}]; a{k}._node = None")
            return f"a{k}"
        if isinstance(td, _Static):
            name = f"S{len(constants)}"
            constants[name] = td.value
            return name
        kind = td[0]
        if kind is dict and len(td) == 3:  # string keys (others have a fourth item)
            return "{" + "".join(f"{k!r}: {expr(c)}, " for k, c in zip(td[1], td[2])) + "}"
        if kind is list:
            return "[" + "".join(f"{expr(c)}, " for c in td[1]) + "]"
        if kind is tuple:
            return "(" + "".join(f"{expr(c)}, " for c in td[1]) + ")"
        if kind is PYTREE:
            name = f"U{len(constants)}"
            constants[name], constants[f"{name}a"] = td[1].unflatten, td[2].value
            return f"{name}({name}a, (" + "".join(f"{expr(c)}, " for c in td[3]) + "))"
        raise _Unsupported

    try:
        result = expr(out_tree)
    except _Unsupported:
        return None
    if len(lines) > _MAX_NODES:
        return None
    source = ("def rebuild(outs):\n" + "".join(f"    {line}\n" for line in lines)
              + f"    return {result}\n")
    try:
        return _define(source, "rebuild", constants)
    except (SyntaxError, RecursionError, MemoryError):  # nested past the parser's limits
        return None


class _Writer:
    """Collects a walker's code: per depth, the type checks of the containers there and
    the unpacking of their children; the expressions of the parts and of the leaves."""

    def __init__(self):
        self.constants: dict = {"_sk": static_key}
        self.names = 0

    def tree(self, value, e: str, fail: str) -> list[str]:
        """The lines that gather ``value``'s arrays and parts from the expression ``e``,
        running ``fail`` where the value there is structured otherwise."""
        self.levels: list[tuple[list[str], list[str]]] = []
        self.parts: list[str] = []
        self.leaves: list[str] = []  # in hlodsl.tree's order (depth first)
        self.node(value, e, 1, 0)
        lines: list[str] = []
        for checks, assigns in self.levels:  # depth by depth: check the types, then unpack
            if checks:
                lines.append(f"if not ({' and '.join(checks)}): {fail}")
            lines += assigns
        if self.parts:
            lines.append(f"parts += ({', '.join(self.parts)},)")
        if self.leaves:
            lines.append(f"leaves += ({', '.join(self.leaves)},)")
        return lines

    def traced_scalars(self) -> None:
        from hlodsl.arrays.scalars import traced_scalar

        self.constants["_ts"] = traced_scalar

    def fresh(self) -> str:
        self.names += 1
        if self.names > _MAX_NODES:
            raise _Unsupported
        return f"c{self.names}"

    def constant(self, value) -> str:
        """A global name of the written code for ``value`` (one per value: equal dict keys
        of sibling layers are one constant)."""
        for name, known in self.constants.items():
            if known is value or (type(known) is tuple and type(value) is tuple
                                  and known == value):
                return name
        name = f"K{len(self.constants)}"
        self.constants[name] = value
        return name

    def at(self, depth: int) -> tuple[list[str], list[str]]:
        """``(checks, assignments)`` of depth ``depth``."""
        if depth > _MAX_DEPTH:
            raise _Unsupported
        while len(self.levels) <= depth:
            self.levels.append(([], []))
        return self.levels[depth]

    def node(self, x, e: str, traced: int, depth: int) -> None:
        """The code that gathers ``x``'s arrays, read from the expression ``e``."""
        checks = self.at(depth)[0]
        t = type(x)
        if t in _ARRAY_CLASSES:  # its class is keyed with the others: no check here
            self.leaves.append(e)
        elif t is dict:
            if not all(type(k) is str for k in x):
                raise _Unsupported  # keys equal across types (1 == 1.0): the general path
            # The keys, in their order, are the ones written for (a dict of others:
            # another plan), so they need no place in the key.
            checks.append(f"type({e}) is dict and tuple({e}) == {self.constant(tuple(x))}")
            self.children(list(x.values()), f"{e}.values()", traced, depth)
        elif t is list or t is tuple:
            checks.append(f"type({e}) is {t.__name__} and len({e}) == {len(x)}")
            self.children(list(x), e, traced, depth)
        elif t in NODES:
            self.registered(NODES[t], x, e, depth)
        elif (t is float or t is complex) and traced:  # a traced scalar (hlodsl.scalars)
            self.traced_scalars()
            checks.append(f"type({e}) is {t.__name__}")
            self.leaves.append(f"_ts({e})")
        elif t in _STATIC:
            checks.append(f"type({e}) is {t.__name__}")
            self.parts.append(e)
        elif x is None:
            checks.append(f"{e} is None")
        else:
            raise _Unsupported

    def children(self, values: list, e: str, traced: int, depth: int) -> None:
        """The children of a container at ``depth``, read from the iterable ``e``."""
        if all(type(v) in _ARRAY_CLASSES for v in values):
            if values:
                self.leaves.append(f"*{e}")
            return
        names = [self.fresh() for _ in values]
        if names:
            self.at(depth)[1].append(f"{', '.join(names)}, = {e}")
        for v, name in zip(values, names):
            self.node(v, name, traced, depth + 1)

    def registered(self, node, x, e: str, depth: int) -> None:
        checks, assigns = self.at(depth)
        checks.append(f"type({e}) is {self.constant(node.cls)}")
        if node.fields is not None and all(f.isidentifier() and not iskeyword(f)
                                           for f in (*node.fields, *node.meta)):
            # A dataclass: its fields read as its flatten reads them, without the call.
            if node.meta:
                self.parts.append(f"_sk(({', '.join(f'{e}.{f}' for f in node.meta)},))")
            for f in node.fields:
                v = getattr(x, f)
                if type(v) in _ARRAY_CLASSES:
                    self.leaves.append(f"{e}.{f}")
                else:
                    name = self.fresh()
                    assigns.append(f"{name} = {e}.{f}")
                    self.node(v, name, 1, depth + 1)
            return
        children, _ = node.flatten(x)
        ch, aux = self.fresh(), self.fresh()
        assigns.append(f"{ch}, {aux} = {self.constant(node.flatten)}({e})")
        self.parts.append(f"_sk({aux})")
        self.children(list(children), ch, 1, depth)
