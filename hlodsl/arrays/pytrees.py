"""User classes as structures: ``hd.register_pytree_node`` and ``hd.register_dataclass``.

jax's two registrations, with jax's signatures. A registered class is a node of
a structure, as a dict or a tuple is: ``hd.compile``, the derivatives, ``vmap``,
the loops, ``hd.save``/``hd.load``, ``hd.export`` and ``tree_map`` see through
it to the arrays its flatten function returns (its *children*), and keep what
else it returns (its *aux data*, hashable) as part of the structure: a compiled
function is staged once per aux value, as for any static value.

>>> import dataclasses, numpy as np, hlodsl as hd
>>> @hd.register_dataclass
... @dataclasses.dataclass
... class Linear:
...     w: hd.Array
...     b: hd.Array
...     act: str = dataclasses.field(default="tanh", metadata=dict(static=True))
>>> layer = Linear(hd.array(np.ones((2, 2), np.float32)), hd.array(np.zeros(2, np.float32)))
>>> hd.tree_leaves(layer)[1]
hlodsl.Array[float32, (2,)]([0., 0.])
>>> hd.compile(lambda l, x: l.w @ x + l.b)(layer, hd.array(np.float32([1, 2])))
hlodsl.Array[float32, (2,)]([3., 3.])

A class is registered once, as jax's registry wants, and only the class
itself is a node (not its subclasses).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from .array import Array, Token

__all__ = ["register_pytree_node", "register_dataclass", "Node", "node_of", "PYTREE",
           "NodeText"]


class _Marker:
    """The first item of a registered node's treedef (as ``dict`` is of a dict's)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "PYTREE"


PYTREE = _Marker()


class Node:
    """How one registered class flattens: ``flatten(obj) -> (children, aux)`` and
    ``unflatten(aux, children) -> obj``, and the names of its children for paths
    (``fields``: dataclass data fields, or None: children by index)."""

    __slots__ = ("cls", "flatten", "unflatten", "fields", "meta")

    def __init__(self, cls: type, flatten: Callable, unflatten: Callable,
                 fields: tuple[str, ...] | None = None, meta: tuple[str, ...] = ()):
        self.cls, self.flatten, self.unflatten = cls, flatten, unflatten
        self.fields, self.meta = fields, meta

    @property
    def name(self) -> str:
        """``module.QualName``: what exported programs call the class."""
        return f"{self.cls.__module__}.{self.cls.__qualname__}"

    def child_path(self, path: str, i: int) -> str:
        """Child ``i``'s path after ``path``, as ``jax.tree_util.keystr`` writes it."""
        if self.fields is not None:
            return f"{path}.{self.fields[i]}"
        return f"{path}[<flat index {i}>]"

    def __repr__(self) -> str:
        return f"pytree node {self.cls.__qualname__}"


class NodeText:
    """A registered node shown by its class and children, without running its unflatten
    function (``tree.unflatten(..., node=NodeText)``: structures of types in messages)."""

    __slots__ = ("text",)

    def __init__(self, node: Node, aux, children: tuple):
        if node.fields is not None:
            inner = [f"{k}={v!r}" for k, v in zip(node.fields, children)] + \
                    [f"{k}={v!r}" for k, v in zip(node.meta, aux)]
        else:
            inner = [repr(c) for c in children] + ([f"aux={aux!r}"] if aux is not None else [])
        self.text = f"{node.cls.__qualname__}({', '.join(inner)})"

    def __repr__(self) -> str:
        return self.text


#: Registered classes: class -> Node (``hlodsl.tree`` reads it on every flatten).
NODES: dict[type, Node] = {}

#: Classes that are structures by themselves: registering them would be ambiguous.
_BUILTIN = (tuple, list, dict, type(None))


def node_of(cls: type) -> Node | None:
    """The registration of ``cls`` (exactly that class), or None."""
    return NODES.get(cls)


def _check_new(cls, who: str) -> None:
    if not isinstance(cls, type):
        raise TypeError(f"{who}: nodetype must be a class, got {type(cls).__name__} {cls!r}")
    if cls in NODES:
        raise ValueError(f"{who}: {cls.__qualname__} is registered already (a class is "
                         "registered once, as in jax)")
    if cls in _BUILTIN or issubclass(cls, (Array, Token)):
        raise ValueError(f"{who}: {cls.__qualname__} is a structure or an array of hlodsl "
                         "already; register your own classes")


def register_pytree_node(nodetype: type, flatten_func: Callable[[Any], tuple],
                         unflatten_func: Callable[[Any, tuple], Any]) -> None:
    """Make instances of ``nodetype`` structures, as ``jax.tree_util.register_pytree_node``.

    Args:
        nodetype: the class (exactly: subclasses are not covered).
        flatten_func: ``obj -> (children, aux_data)``: the values to look into
            (arrays, or structures of them) and a hashable value holding the rest.
        unflatten_func: ``(aux_data, children) -> obj``; ``children`` is a tuple,
            holding arrays (or symbolic arrays, or other leaves) in place of the
            original ones.

    Numbers among the children are traced by ``hd.compile`` (as in a list);
    ``aux_data`` is static: a new value stages the function again. A child's
    path (in checkpoints, parameter names and messages) is
    ``[<flat index i>]``, as ``jax.tree_util.keystr`` writes it.

    >>> import numpy as np, hlodsl as hd
    >>> class Pair:
    ...     def __init__(self, a, b, tag="p"):
    ...         self.a, self.b, self.tag = a, b, tag
    >>> hd.register_pytree_node(Pair, lambda p: ((p.a, p.b), p.tag),
    ...                         lambda tag, ab: Pair(*ab, tag))
    >>> swap = hd.compile(lambda p: Pair(p.b, p.a, p.tag + "!"))
    >>> q = swap(Pair(hd.array(1.0), hd.array(2.0)))
    >>> float(q.a), q.tag
    (2.0, 'p!')
    """
    _check_new(nodetype, "register_pytree_node")
    if not callable(flatten_func) or not callable(unflatten_func):
        raise TypeError(f"register_pytree_node({nodetype.__qualname__}): flatten_func and "
                        "unflatten_func must be callables: obj -> (children, aux_data) and "
                        "(aux_data, children) -> obj")
    NODES[nodetype] = Node(nodetype, flatten_func, unflatten_func)


def register_dataclass(nodetype: type | None = None, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()):
    """Make a dataclass (or a class of named fields) a structure, as
    ``jax.tree_util.register_dataclass``; usable as a decorator.

    Args:
        nodetype: the class.
        data_fields: the fields holding arrays (or structures of them): the
            children. Without ``data_fields``/``meta_fields``, a dataclass's
            fields are data unless declared
            ``dataclasses.field(metadata=dict(static=True))``.
        meta_fields: the fields holding static values (hashable): part of the
            compile signature, as static arguments are.
        drop_fields: dataclass fields left out of both (they must have a default).

    Returns:
        ``nodetype`` itself. Instances are rebuilt with ``nodetype(**fields)``.

    >>> import dataclasses, numpy as np, hlodsl as hd
    >>> @hd.register_dataclass
    ... @dataclasses.dataclass
    ... class State:
    ...     params: dict
    ...     step: int = dataclasses.field(default=0, metadata=dict(static=True))
    >>> hd.tree_map(lambda a: a * 2, State({"w": hd.array([1.0])}, step=3))
    State(params={'w': hlodsl.Array[float64, (1,)]([2.])}, step=3)
    """
    if nodetype is None:  # @register_dataclass(data_fields=..., meta_fields=...)
        return lambda cls: register_dataclass(cls, data_fields, meta_fields, drop_fields)
    who = f"register_dataclass({getattr(nodetype, '__qualname__', nodetype)!s})"
    _check_new(nodetype, who)
    if (data_fields is None) != (meta_fields is None):
        raise TypeError(f"{who}: give both data_fields and meta_fields, or neither (then the "
                        f"dataclass's fields say: data unless metadata static=True); got "
                        f"data_fields={data_fields!r}, meta_fields={meta_fields!r}")
    if data_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(f"{who}: {nodetype.__qualname__} is not a dataclass: give "
                            "data_fields and meta_fields (the attribute names)")
        fields = [f for f in dataclasses.fields(nodetype) if f.name not in drop_fields]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    for what, names in (("data_fields", data_fields), ("meta_fields", meta_fields)):
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise TypeError(f"{who}: {what} must be a sequence of field names, got {names!r}")
    data, meta = tuple(data_fields), tuple(meta_fields)
    if set(data) & set(meta):
        raise ValueError(f"{who}: data_fields and meta_fields overlap: "
                         f"{sorted(set(data) & set(meta))}")
    if dataclasses.is_dataclass(nodetype):
        init = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        if {*data, *meta} != init:
            missing, extra = sorted(init - {*data, *meta}), sorted({*data, *meta} - init)
            raise ValueError(f"{who}: data_fields and meta_fields must name every field of "
                             "the dataclass that __init__ takes, and only those"
                             + (f"; missing {missing} (drop_fields leaves fields out)"
                                if missing else "") + (f"; not fields: {extra}" if extra else ""))

    def flatten(obj):
        return tuple([getattr(obj, n) for n in data]), tuple([getattr(obj, n) for n in meta])

    def unflatten(aux, children):
        return nodetype(**dict(zip(meta, aux)), **dict(zip(data, children)))

    NODES[nodetype] = Node(nodetype, flatten, unflatten, data, meta)
    return nodetype
