"""Staging the functions given to control flow: captured arrays, eager modules, structures.

The combinators of ``hlodsl.control`` stage Python functions into HLO
sub-computations. A sub-computation cannot use values of the program around
it, so ``discover`` stages a function once with a capturing ``Builder`` to
find the outside arrays it uses; the op then gets them as extra operands and
``bind`` points the function at them when the op stages it for real.
``run_eagerly`` runs a combinator called outside staging as a small module,
compiled once per module text. The rest turns structures of arrays into
leaves and says where a leaf sits when a check fails.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.graph import Builder
>>> from hlodsl.types import ArrayType
>>> with Builder("outer") as b:
...     x = hd.Array._from_node(b.parameter(ArrayType(hd.float32, (2,))))
...     tree, types, captured = discover(lambda: {"x": x, "k": 1.0}, "f", ())
...     leaves, init = flatten_lifting({"x": x, "n": (x, 3)})
>>> show(tree, types), captured[0] is x
("{'x': f32[2], 'k': f64[]}", True)
>>> leaf_paths(init, "init")
["init['x']", "init['n'][0]", "init['n'][1]"]
>>> check_carry("while_loop", "body_fn", "init", init, types_of(leaves), tree, types)
Traceback (most recent call last):
    ...
hlodsl.errors.ShapeError: while_loop: body_fn must return the structure of init {...}, it ...
  at ...
"""

from __future__ import annotations

from typing import Any, Callable

import attrs
import numpy as np

from hlodsl.array import Array
from .traces import link
from hlodsl.cache import BoundedCache
from hlodsl.settings import config
from hlodsl.errors import ShapeError, staging_error, user_location
from hlodsl.graph import Builder, current_builder
from hlodsl.structural import Constant
from hlodsl.tree import LEAF, _Static, flatten, unflatten

__all__ = ["discover", "bind", "union", "eager", "run_eagerly", "error", "name_of", "rename",
           "types_of", "flatten_lifting", "leaf_paths", "show", "check_carry"]


# -- staging a function that may capture arrays from outside ----------------------------


def discover(call: Callable, name: str, in_types: tuple):
    """Stage ``call`` on symbolic leaves once: ``(out treedef, out types, captured)``.

    ``captured`` lists the arrays from outside that ``call`` used, in first-use
    order: symbolic arrays of the enclosing computations, and concrete arrays
    that a derivative being taken depends on (other concrete arrays stay
    constants). They are the very objects ``call`` used, so autodiff can
    follow them. The staged nodes are thrown away: the op stages the function
    again as its sub-computation, with the captured arrays as extra operands
    (see ``bind``).
    """
    found: dict[tuple, tuple] = {}

    def capture(x):
        if x._node is None and not _watched(x):
            return None
        hit = found.get(_key(x))
        if hit is None:
            hit = found[_key(x)] = (x, b.parameter(x.type))
        return hit[1]

    with Builder(name, capture) as b:
        params = [Array._from_node(b.parameter(t)) for t in in_types]
        leaves, tree = flatten_lifting(call(*params))
        for x in leaves:
            if not isinstance(x, Array):
                raise error(TypeError, f"{name} returned a {type(x).__name__}; the functions "
                                       "given to control flow return arrays")
            b.node_of(x)  # a captured array returned as is is captured too
    return tree, types_of(leaves), [x for x, _ in found.values()]


def bind(values, captured: list) -> None:
    """Inside a sub-computation being staged: each captured array reads its operand.

    The function still uses the captured objects themselves (its closures), so
    derivative transformations staging it are told that each one stands for
    its operand.
    """
    table = {_key(a): v._node for a, v in zip(captured, values)}
    builder = current_builder()
    for a, v in zip(captured, values):
        link(a, v)

    def capture(x):
        hit = table.get(_key(x))
        if hit is None and x._node is not None:  # staged differently the second time
            raise staging_error(f"a symbolic array {x.type} from '{x._node.builder.name}' "
                                f"was used inside '{builder.name}' but not while it was "
                                "first staged: control-flow functions must stage the same "
                                "way every time")
        return hit  # None for a concrete array: a constant

    builder.capture = capture


def _key(x: Array) -> tuple:
    # A symbolic value may be wrapped by several Array objects; a concrete one is its object.
    return ("node", id(x._node)) if x._node is not None else ("array", id(x))


def _watched(x: Array) -> bool:
    """Whether an active derivative transformation depends on the concrete array ``x``."""
    from hlodsl.context import STATE

    return any(t.active and t.sees((x,)) for t in STATE.traces)


def union(*lists) -> list:
    """The captured arrays of several functions, each value once, in first-use order."""
    seen: dict[tuple, Array] = {}
    for arrays in lists:
        for a in arrays:
            seen.setdefault(_key(a), a)
    return list(seen.values())


# -- eager execution: stage the combinator as a small module ---------------------------

_EXECUTABLES = BoundedCache(lambda: config.eager_program_cache_size,
                            "eager control-flow modules")


def eager() -> bool:
    """Outside staging, with no derivative being taken.

    Under ``hd.grad`` and friends the combinator runs its ops one by one, so
    that the transformation observes them (a compiled module would hide them).
    """
    from hlodsl.context import STATE

    return current_builder() is None and not STATE.traces


def run_eagerly(impl: Callable, name: str, *args):
    """``impl(*args)`` staged on the arrays in ``args``, compiled (cached by HLO text), run."""
    from hlodsl.compiler import Entry
    from hlodsl.printer import module_text
    from hlodsl.runtime import compile_hlo
    from hlodsl.staging import stage_types

    leaves, treedef = flatten((args, {}))
    for a in leaves:
        if getattr(a, "_buf", None) is None:
            raise staging_error(f"{name}: a symbolic array {a.type} escaped the function "
                                "being staged and was passed outside of staging")
    try:
        staged = stage_types(_with_arrays(impl), treedef, types_of(leaves), f"eager_{name}")
    except _NoArrays as e:  # e.g. branches returning None: nothing to run
        return e.value
    # Keyed without source metadata, so one function called from several lines
    # compiles once; the executable keeps the first caller's lines.
    key = module_text(staged.computation, f"eager_{name}", metadata=False)
    exe = _EXECUTABLES.get(key)
    if exe is None:
        exe = compile_hlo(module_text(staged.computation, f"eager_{name}"),
                          out_types=[(t.shape, t.dtype.np_dtype) for t in staged.out_types])
        exe = _EXECUTABLES.put(key, exe)
    return Entry(staged, exe).run(leaves)


class _NoArrays(Exception):
    def __init__(self, value):
        self.value = value


def _with_arrays(impl: Callable) -> Callable:
    def staged(*args):
        out = impl(*args)
        if not flatten(out)[0]:
            raise _NoArrays(out)
        return out

    return staged


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
        if td[0] is dict:
            return (dict, td[1], tuple(map(walk, td[2])), *td[3:])
        if td[0] is attrs:
            return (*td[:3], tuple(map(walk, td[3])))
        return (td[0], tuple(map(walk, td[1])))

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
        else:
            for k, c in enumerate(td[1]):
                walk(c, f"{path}[{k}]")

    walk(tree, root)
    return out


def show(tree, types) -> str:
    """A structure with its leaves shown as types: ``(f32[3], {'n': s32[]})``."""
    return repr(unflatten(tree, [_TypeText(t) for t in types]))


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
