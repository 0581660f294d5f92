"""Structure mapping: nested tuples, lists, dicts, attrs instances and registered
classes (``hd.register_pytree_node``, ``hd.register_dataclass``: ``pytrees``) of arrays.

``flatten`` splits a structure into its array leaves and a hashable ``treedef``
that records everything else, including non-array values (which staging treats
as static: they are part of the compile signature). The paper maps such
structures to XLA tuples; we flatten them to the parameters and results of the
entry computation.

>>> import hlodsl as hd
>>> leaves, tree = flatten({"w": hd.array([1.0]), "n": 3})
>>> len(leaves), unflatten(tree, leaves)["n"]
(1, 3)
"""

from __future__ import annotations

import dataclasses
import functools
import struct
import types

import attrs
import numpy as np

from .array import _TYPES as _ARRAY_CLASSES
from .array import Array, Token
from .pytrees import NODES, PYTREE
from .types import ArrayType

__all__ = ["flatten", "unflatten", "flat_treedef", "LEAF", "tree_leaves", "tree_map",
           "block_until_ready", "abstract", "children_of", "with_children", "PYTREE",
           "is_jax_array",
           "static_key", "leaf_paths", "compared_by_identity", "has_identity_static"]

LEAF = "*"

_FLOAT = struct.Struct("<d")
_COMPLEX = struct.Struct("<dd")


def static_key(value) -> tuple:
    """A hashable key equal for two values exactly when they are the same value.

    Python's ``==`` is not that: ``0.0 == -0.0`` (yet ``1 / x`` tells them
    apart) and ``nan != nan``. A compile signature keyed by ``==`` would run
    the program staged for ``0.0`` on ``-0.0``, and never hit for ``nan``.
    Here numbers compare by type and bit pattern, containers element by
    element, and any other value by its own ``==`` (with its type).

    >>> static_key(0.0) == static_key(-0.0), static_key(float("nan")) == static_key(float("nan"))
    (False, True)
    >>> static_key(1) == static_key(True), static_key((1.0, 2)) == static_key((1.0, 2))
    (False, True)
    """
    t = type(value)
    if t is int or t is str or t is bool or value is None:  # the common cases, first
        return (t, value)
    if t is tuple and all(type(v) is int for v in value):  # dimension numbers, shapes
        return (t, value)
    if t is float:
        return (t, _FLOAT.pack(value))
    if t is complex:
        return (t, _COMPLEX.pack(value.real, value.imag))
    if isinstance(value, np.generic):
        return (t, value.dtype.str, value.tobytes())
    if isinstance(value, tuple):  # namedtuples and other tuple subclasses keep their type
        return (t, tuple(static_key(v) for v in value))
    if isinstance(value, frozenset):
        return (t, frozenset(static_key(v) for v in value))
    return (t, value)


# Values whose identity is their value: nothing about them that staging reads can change
# while they keep it (a function's code and closure are keyed by what calls it, not here).
_IDENTITY_IS_VALUE = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                      types.ModuleType, types.CodeType, functools.partial)


def compared_by_identity(value) -> bool:
    """Whether a static value is keyed by its identity though its contents can change.

    A plain object compares and hashes by identity (``object.__eq__``), so a
    signature keyed by it stays the same after ``k.n = 5``: the staged program
    keeps the old ``k.n``. Values with their own ``__eq__``/``__hash__`` (frozen
    dataclasses, numbers, strings) are keyed by value; functions, classes and
    modules are what they are, and a value without attributes (``None``, an
    ``object()`` sentinel) has nothing to change.

    >>> class K: n = 1
    >>> compared_by_identity(K()), compared_by_identity(K), compared_by_identity((1, 2))
    (True, False, False)
    >>> compared_by_identity(None), compared_by_identity(object())
    (False, False)
    """
    t = type(value)
    if isinstance(value, _IDENTITY_IS_VALUE) or not (
            t.__eq__ is object.__eq__ and t.__hash__ is object.__hash__):
        return False
    # Only state can go stale: None, Ellipsis and object() sentinels hold none.
    return hasattr(value, "__dict__") or any(getattr(k, "__slots__", ()) for k in t.__mro__)


def has_identity_static(treedef) -> bool:
    """Whether some static value in ``treedef`` is ``compared_by_identity``."""
    if isinstance(treedef, _Static):
        return compared_by_identity(treedef.value)
    return type(treedef) is tuple and any(has_identity_static(c) for c in treedef)


class _Static:
    """A non-array value inside a structure: compared and hashed by ``static_key``."""

    __slots__ = ("value", "_key")

    def __init__(self, value):
        self.value = value
        try:
            self._key = static_key(value)
            hash(self._key)
        except TypeError:
            raise TypeError(_unhashable(value)) from None

    def __eq__(self, other):
        return isinstance(other, _Static) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return f"static({self.value!r})"


def _unhashable(value) -> str:
    """Why ``value`` cannot be a static value, and what to do instead."""
    name = type(value).__name__
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (f"a {name} instance is a dataclass that is not registered as a pytree, so "
                "hlodsl would take it as a static value (part of the compile signature), "
                f"which must be hashable, and it is not: {shown}. To pass the arrays it "
                f"holds, register the class: hd.register_dataclass({name}) (or decorate it "
                "with @hd.register_dataclass; fields declared with "
                "dataclasses.field(metadata=dict(static=True)) stay static), as "
                "jax.tree_util.register_dataclass. To pass it as a static value, make it "
                "hashable: @dataclasses.dataclass(frozen=True), holding no arrays")
    hint = "" if type(value).__module__ == "builtins" else (
        f" (to pass the arrays a {name} holds, register the class as a structure: "
        f"hd.register_pytree_node({name}, flatten, unflatten))")
    return (f"a static (non-array) argument of type {name} must be hashable, since its "
            f"value is part of the compile signature: {shown}{hint}")


def _aux(node, aux) -> _Static:
    """A registered node's aux data as a static value (hashable: the signature keys on it)."""
    try:
        return _Static(aux)
    except TypeError:
        shown = repr(aux) if len(repr(aux)) <= 60 else repr(aux)[:57] + "..."
        raise TypeError(f"the aux data that {node.cls.__qualname__}'s flatten function "
                        f"returns must be hashable (compiled programs are keyed by it, as "
                        f"static values are), got {type(aux).__name__} {shown}: return a "
                        "tuple instead of a list, a frozenset instead of a set") from None


def flatten(x, leaves: list | None = None):
    """``(leaves, treedef)``; numpy and jax arrays become hlodsl arrays (leaves)."""
    if leaves is None:
        leaves = []
        return leaves, _flatten(x, leaves)
    return _flatten(x, leaves)


def flatten_traced(x) -> tuple[list, object]:
    """``flatten``, with Python floats and complex numbers and numpy scalars as leaves
    (traced scalar arrays, ``hlodsl.scalars``): what a compiled function's call keys on."""
    leaves: list = []
    return leaves, _flatten(x, leaves, True)


def _flatten(x, leaves: list, traced: bool = False):
    t = type(x)
    # Every concrete array class is in array._TYPES: a dict lookup, where
    # isinstance(x, Array) goes through plum's Python __instancecheck__ (about 1 us).
    if t in _ARRAY_CLASSES or t is Token:
        leaves.append(x)
        return LEAF
    if t is tuple or t is list:
        return (t, _children(x, leaves, traced))
    if t is dict:
        keys = tuple(x)
        children = _children(x.values(), leaves, traced)
        if all(type(k) is str for k in keys):
            return (dict, keys, children)
        # Keys compare exactly too (0.0 and -0.0 are different keys of a signature).
        return (dict, keys, children, tuple(static_key(k) for k in keys))
    node = NODES.get(t)
    if node is not None:  # a registered class (hd.register_pytree_node): its numbers trace
        children, aux = node.flatten(x)
        return (PYTREE, node, _aux(node, aux), tuple([_flatten(c, leaves, traced)
                                                      for c in children]))
    if isinstance(x, (Array, Token)):  # an array of a class made elsewhere
        leaves.append(x)
        return LEAF
    if isinstance(x, np.ndarray):
        from .array import array

        leaves.append(array(x))
        return LEAF
    if is_jax_array(x):  # an array too (immutable, so adopted without a copy), not a static
        from .array import array

        leaves.append(array(x))
        return LEAF
    # Numbers inside namedtuples and attrs instances stay static (configuration, such as
    # an op's epsilon): only plain tuples, lists and dicts trace theirs (scalars.py).
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # namedtuple
        return (t, tuple([_flatten(v, leaves) for v in x]))
    if attrs.has(t):
        names = tuple(f.name for f in attrs.fields(t))
        return (attrs, t, names, tuple([_flatten(getattr(x, n), leaves) for n in names]))
    if traced and (t is float or t is complex or isinstance(x, (np.floating,
                                                               np.complexfloating))):
        from .scalars import traced_scalar

        leaves.append(traced_scalar(x))
        return LEAF
    return _Static(x)


def is_jax_array(x) -> bool:
    """Whether ``x`` is a jax array (the runtime's device buffer type), without importing jax
    for values that cannot be one."""
    if type(x).__module__.split(".", 1)[0] not in ("jax", "jaxlib"):
        return False
    from hlodsl.runtime import is_buffer

    return is_buffer(x)


def _children(values, leaves: list, traced: bool) -> tuple:
    """The treedefs of a container's values; array values inline (no call per leaf:
    this loop is most of a compiled call's Python work for structured arguments)."""
    out = []
    for v in values:
        if type(v) in _ARRAY_CLASSES:
            leaves.append(v)
            out.append(LEAF)
        else:
            out.append(_flatten(v, leaves, traced))
    return tuple(out)


def flat_treedef(n: int):
    """The treedef of ``((a1, ..., an), {})``: n positional array arguments."""
    return (tuple, ((tuple, (LEAF,) * n), (dict, (), ())))


def unflatten(treedef, leaves, *, node=None, statics=None):
    """Rebuild the structure from ``treedef`` and an iterable of leaves.

    ``node(node, aux, children)``, if given, stands in for registered classes'
    unflatten functions (to show a structure of types without running user code).
    ``statics`` (an iterable, in ``static_paths``' order) replaces its non-array values.
    """
    return _unflatten(treedef, iter(leaves), node, None if statics is None else iter(statics))


def _unflatten(td, it, rebuild=None, st=None):
    if td is LEAF:
        return next(it)
    if isinstance(td, _Static):
        return td.value if st is None else next(st)
    kind = td[0]
    if kind is tuple or kind is list:
        return kind([_unflatten(c, it, rebuild, st) for c in td[1]])
    if kind is dict:
        return {k: _unflatten(c, it, rebuild, st) for k, c in zip(td[1], td[2])}
    if kind is PYTREE:
        children = tuple([_unflatten(c, it, rebuild, st) for c in td[3]])
        if rebuild is not None:
            return rebuild(td[1], td[2].value, children)
        return td[1].unflatten(td[2].value, children)
    if kind is attrs:
        cls, names, children = td[1], td[2], td[3]
        obj = object.__new__(cls)
        for n, c in zip(names, children):
            object.__setattr__(obj, n, _unflatten(c, it, rebuild, st))
        if hasattr(cls, "_attrs_cached_hash"):  # attrs' cache_hash slot: not computed yet
            object.__setattr__(obj, "_attrs_cached_hash", None)
        return obj
    # namedtuple
    return kind(*[_unflatten(c, it, rebuild, st) for c in td[1]])


def children_of(td) -> tuple:
    """The treedefs of the children of container treedef ``td`` (none for a leaf or a
    static value), whatever its kind.

    >>> import hlodsl as hd
    >>> children_of(flatten({"w": hd.array([1.0]), "n": 3})[1])
    ('*', static(3))
    """
    if td is LEAF or isinstance(td, _Static):
        return ()
    kind = td[0]
    if kind is dict:
        return td[2]
    if kind is attrs or kind is PYTREE:
        return td[3]
    return td[1]


def with_children(td, children: tuple):
    """Container treedef ``td`` with its children's treedefs replaced by ``children``."""
    kind = td[0]
    if kind is dict:
        return (dict, td[1], children, *td[3:])
    if kind is attrs or kind is PYTREE:
        return (*td[:3], children)
    return (kind, children)


def leaf_paths(treedef, base: str) -> list[str]:
    """The path of every leaf of ``treedef`` as Python would write it, after ``base``.

    Dict keys as subscripts, sequence items by index, attrs fields and
    namedtuple fields as attributes: the names users wrote for their arrays.

    >>> import hlodsl as hd
    >>> a = hd.array([1.0])
    >>> leaf_paths(flatten({"layers": [{"w": a}, (a, 2)]})[1], "params")
    ["params['layers'][0]['w']", "params['layers'][1][0]"]
    """
    out: list[str] = []
    _paths(treedef, base, out)
    return out


def static_paths(treedef, base: str) -> list[tuple[str, object]]:
    """``(path, value)`` of every non-array value of ``treedef``, as ``leaf_paths`` names
    the arrays (the order ``unflatten``'s ``statics`` takes).

    >>> import hlodsl as hd
    >>> static_paths(flatten({"step": 7, "w": hd.array([1.0]), "opt": [None, "adam"]})[1], "t")
    [("t['step']", 7), ("t['opt'][0]", None), ("t['opt'][1]", 'adam')]
    """
    out: list = []
    _paths(treedef, base, [], out)
    return out


def _paths(td, path: str, out: list[str], statics: list | None = None) -> None:
    if isinstance(td, _Static):
        if statics is not None:
            statics.append((path, td.value))
        return
    if td == LEAF:
        out.append(path)
        return
    kind = td[0]
    if kind is tuple or kind is list:
        for i, c in enumerate(td[1]):
            _paths(c, f"{path}[{i}]", out, statics)
    elif kind is dict:
        for k, c in zip(td[1], td[2]):
            _paths(c, f"{path}[{k!r}]", out, statics)
    elif kind is attrs:
        for n, c in zip(td[2], td[3]):
            _paths(c, f"{path}.{n}", out, statics)
    elif kind is PYTREE:
        for i, c in enumerate(td[3]):
            _paths(c, td[1].child_path(path, i), out, statics)
    else:  # namedtuple
        for n, c in zip(kind._fields, td[1]):
            _paths(c, f"{path}.{n}", out, statics)


def tree_leaves(tree) -> list:
    """The arrays of a structure, in ``flatten``'s order.

    >>> import hlodsl as hd
    >>> hd.tree_leaves({"w": hd.array([1.0]), "layers": [(hd.array(2.0), 3)]})
    [hlodsl.Array[float64, (1,)]([1.]), hlodsl.Array[float64, ()](2.)]
    """
    return flatten(tree)[0]


def tree_map(f, tree, *rest):
    """``f`` applied leaf by leaf to structures of arrays of the same nesting.

    Non-array values (static leaves) are kept from ``tree``.

    >>> import hlodsl as hd
    >>> hd.tree_map(lambda a, b: a + b, {"x": hd.array([1.0])}, {"x": hd.array([2.0])})
    {'x': hlodsl.Array[float64, (1,)]([3.])}
    """
    leaves, treedef = flatten(tree)
    others = []
    for other in rest:
        other_leaves, other_def = flatten(other)
        if other_def != treedef:
            raise ValueError(f"tree_map: the structures differ: {treedef} and {other_def}")
        others.append(other_leaves)
    return unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])



def abstract(x):
    """``x`` with every ``ArrayType`` in tuples, lists, dicts and registered classes as an
    array of that type holding no data: staging reads only types (``hd.export``,
    ``hd.code_hlo``)."""
    if isinstance(x, ArrayType):
        return Array._from_buffer(None, x)
    t = type(x)
    if t is tuple or t is list:
        return t(abstract(v) for v in x)
    if t is dict:
        return {k: abstract(v) for k, v in x.items()}
    node = NODES.get(t)
    if node is not None:  # a registered class holding types
        children, aux = node.flatten(x)
        return node.unflatten(aux, tuple(abstract(v) for v in children))
    return x


def block_until_ready(tree):
    """``tree``, once every array in it has been computed (``Array.block_until_ready``).

    Compiled functions return as soon as their work is queued; wait on the
    whole result of a training step (parameters, optimiser state, loss) before
    reading a clock. Non-array values are passed through.

    >>> import hlodsl as hd
    >>> step = hd.compile(lambda p: {"w": p["w"] * 2, "n": p["n"]})
    >>> hd.block_until_ready(step({"w": hd.array([1.0]), "n": 3}))
    {'w': hlodsl.Array[float64, (1,)]([2.]), 'n': 3}
    """
    for leaf in flatten(tree)[0]:
        if isinstance(leaf, Array):
            leaf.block_until_ready()
    return tree
