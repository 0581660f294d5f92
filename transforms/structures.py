"""Structures of arrays in control flow: leaves, where a leaf sits, and carry checks.

Operands and loop carries are structures (tuples, lists, dicts, namedtuples,
attrs instances, registered classes) of arrays; these helpers turn them into
leaves (Python numbers lifted to constants), name a leaf by its path when a
check fails, and raise errors that end with the user's source line.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.ir.graph import Builder
>>> from hlodsl.arrays.types import ArrayType
>>> with Builder("outer") as b:
...     x = hd.Array._from_node(b.parameter(ArrayType(hd.float32, (2,))))
...     leaves, init = flatten_lifting({"x": x, "n": (x, 3)})
...     out, tree = flatten_lifting({"x": x, "k": 1.0})
>>> show(tree, types_of(out))
"{'x': f32[2], 'k': f64[]}"
>>> leaf_paths(init, "init")
["init['x']", "init['n'][0]", "init['n'][1]"]
>>> check_carry("while_loop", "body_fn", "init", init, types_of(leaves), tree, types_of(out))
Traceback (most recent call last):
    ...
hlodsl.errors.ShapeError: while_loop: body_fn must return the structure of init {...}, it ...
  at ...
"""

from __future__ import annotations

from typing import Any, Callable

import attrs
import numpy as np

from hlodsl.errors import ShapeError, user_location
from hlodsl.ir.structural import Constant
from hlodsl.arrays.pytrees import NodeText
from hlodsl.arrays.tree import (LEAF, PYTREE, _Static, children_of, flatten, unflatten,
                                with_children)

__all__ = ["error", "name_of", "rename", "types_of", "flatten_lifting", "leaf_paths", "show",
           "check_carry"]


def error(cls: type, message: str) -> Exception:
    """An exception of class ``cls`` whose message ends with the user's source line."""
    loc = user_location()
    return cls(f"{message}\n  at {loc}" if loc else message)


def name_of(fn) -> str:
    """A function's name for HLO computation names and messages (``lambda`` for lambdas)."""
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return "lambda" if name == "<lambda>" else name


def rename(wrapper: Callable, fn: Callable) -> Callable:
    """Name a staged wrapper after the user's function (HLO computation names, code_typed)."""
    wrapper.__name__ = wrapper.__qualname__ = name_of(fn)
    return wrapper


def types_of(leaves) -> tuple:
    """The ``ArrayType`` of every leaf."""
    return tuple(a.type for a in leaves)


def flatten_lifting(x) -> tuple[list, Any]:
    """``flatten``, with Python and numpy scalars made arrays (constants)."""
    leaves, tree = flatten(x)
    it, out = iter(leaves), []

    def walk(td):
        if td is LEAF:
            out.append(next(it))
            return LEAF
        if isinstance(td, _Static):
            if isinstance(td.value, (bool, int, float, complex, np.number, np.bool_)):
                out.append(Constant(np.asarray(td.value))())
                return LEAF
            return td
        return with_children(td, tuple(map(walk, children_of(td))))

    tree = walk(tree)
    return out, tree


def leaf_paths(tree, root: str) -> list[str]:
    """Where each leaf sits: ``init[0]['w']``, ``init.W``, ..."""
    out: list[str] = []

    def walk(td, path):
        if td is LEAF:
            out.append(path)
        elif isinstance(td, _Static):
            return
        elif td[0] is dict:
            for k, c in zip(td[1], td[2]):
                walk(c, f"{path}[{k!r}]")
        elif td[0] is attrs:
            for k, c in zip(td[2], td[3]):
                walk(c, f"{path}.{k}")
        elif td[0] is PYTREE:
            for k, c in enumerate(td[3]):
                walk(c, td[1].child_path(path, k))
        else:
            for k, c in enumerate(td[1]):
                walk(c, f"{path}[{k}]")

    walk(tree, root)
    return out


def show(tree, types) -> str:
    """A structure with its leaves shown as types: ``(f32[3], {'n': s32[]})``.

    Registered classes show as ``Name(children)`` (their unflatten functions are
    user code, which may not take types for arrays)."""
    return repr(unflatten(tree, [_TypeText(t) for t in types], node=NodeText))


def check_carry(who, what, root, tree, types, out_tree, out_types) -> None:
    """A ShapeError unless ``what`` returned ``root``'s structure and leaf types."""
    if out_tree != tree:
        raise error(ShapeError, f"{who}: {what} must return the structure of {root} "
                                f"{show(tree, types)}, it returns "
                                f"{show(out_tree, out_types)}")
    for path, old, new in zip(leaf_paths(tree, root), types, out_types):
        if old != new:
            raise error(ShapeError, f"{who}: {what} must keep the type of every leaf of "
                                    f"{root}: {path} is {old} in {root} but {new} in "
                                    f"{what}'s result")


class _TypeText:
    __slots__ = ("text",)

    def __init__(self, t):
        self.text = str(t)

    def __repr__(self) -> str:
        return self.text
