"""Walkers: a nested argument's arrays gathered by code made for its structure.

A compiled call whose argument is a nested structure (``{"layer0": {"w": W,
"b": b}, ...}``, lists, tuples, registered classes) must find its arrays and
the rest of its signature without ``hlodsl.tree``'s walk, which spends a
Python call, a type dispatch and a treedef node per container. When a call
with such an argument is first seen, ``walker(value)`` writes a function for
that structure, straight-line code with no loop and no call per container:

    def walk(v, leaves, parts):
        if type(v) is not dict: return False
        parts.append(tuple(v))              # the keys: part of the signature
        c0, c1 = v.values()
        if type(c0) is not dict: return False
        parts.append(tuple(c0))
        leaves += c0.values()               # all arrays here: their classes are keyed
        ...
        return True

It appends the arrays to ``leaves`` in ``hlodsl.tree``'s order and, to
``parts``, what else the signature holds (dict keys, static values, registered
classes' aux data); it returns False where the value's structure is not the
one it was written for (a call of another structure takes the general path).
Together with the arrays' classes, ``parts`` determine the signature the
general path finds, which is how ``call.Layout`` keys its compiled entries.

>>> import numpy as np, hlodsl as hd
>>> a = hd.array(np.float32([1, 2]))
>>> walk = walker({"l0": {"w": a, "b": a}, "n": [a, 3]})
>>> leaves, parts = [], []
>>> walk({"l0": {"w": a, "b": a}, "n": [a, 4]}, leaves, parts), len(leaves), parts
(True, 3, [('l0', 'n'), ('w', 'b'), 4])
>>> walk({"l0": [a, a], "n": [a, 4]}, [], [])     # another structure
False
"""

from __future__ import annotations

from keyword import iskeyword

from hlodsl.arrays.array import _TYPES as _ARRAY_CLASSES
from hlodsl.arrays.pytrees import NODES
from hlodsl.arrays.tree import static_key

__all__ = ["walker", "nested", "rebuilder"]

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


def walker(value):
    """A function ``walk(v, leaves, parts) -> bool`` for values structured as ``value``,
    or None where ``value`` holds something walkers do not cover."""
    writer = _Writer()
    try:
        writer.node(value, "v", 1, 0)
    except (_Unsupported, RecursionError):
        return None
    lines: list[str] = []
    for checks, assigns in writer.levels:  # depth by depth: check the types, then unpack
        if checks:
            lines.append(f"if not ({' and '.join(checks)}): return False")
        lines += assigns
    if writer.parts:
        lines.append(f"parts += ({', '.join(writer.parts)},)")
    if writer.leaves:
        lines.append(f"leaves += ({', '.join(writer.leaves)},)")
    source = ("def walk(v, leaves, parts):\n    try:\n"
              + "".join(f"        {line}\n" for line in lines)
              + "    except (TypeError, ValueError):  # a container of another length\n"
              "        return False\n    return True\n")
    try:
        return _define(source, "walk", writer.constants)
    except (SyntaxError, RecursionError, MemoryError):  # past the parser's limits
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
        self.levels: list[tuple[list[str], list[str]]] = []
        self.parts: list[str] = []
        self.leaves: list[str] = []  # in hlodsl.tree's order (depth first)
        self.constants: dict = {"_sk": static_key}
        self.names = 0

    def fresh(self) -> str:
        self.names += 1
        if self.names > _MAX_NODES:
            raise _Unsupported
        return f"c{self.names}"

    def constant(self, value) -> str:
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
            checks.append(f"type({e}) is dict")
            self.parts.append(f"tuple({e})")  # the keys, in their order
            self.children(list(x.values()), f"{e}.values()", traced, depth)
        elif t is list or t is tuple:
            checks.append(f"type({e}) is {t.__name__} and len({e}) == {len(x)}")
            self.children(list(x), e, traced, depth)
        elif t in NODES:
            self.registered(NODES[t], x, e, depth)
        elif (t is float or t is complex) and traced:  # a traced scalar (hlodsl.scalars)
            from hlodsl.arrays.scalars import traced_scalar

            self.constants["_ts"] = traced_scalar
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
