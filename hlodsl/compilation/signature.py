"""What a compile signature records about each argument, by the argument's name and path.

``hd.compile`` keys its cache by the structure of the arguments, the type of
every array in it and the value of every other (static) value. When a call
misses the cache, this module says *where* it differs: each leaf of the
arguments gets a path that names it as the user wrote it (``params['w'][0]``,
``state.step``) and a short text of what the signature holds there.

>>> import numpy as np, hlodsl as hd
>>> def step(params, lr, *, decay=0.5): ...
>>> describe(step, ({"w": hd.array(np.zeros(3, np.float32))}, 0.1), {})
{"params['w']": 'f32[3]', 'lr': 'static 0.1'}
"""

from __future__ import annotations

import inspect

import attrs
import numpy as np

from hlodsl.arrays.array import Array, Token
from hlodsl.arrays.pytrees import NODES
from hlodsl.arrays.tree import compared_by_identity

__all__ = ["describe"]


def describe(fn, args: tuple, kwargs: dict,
             by_identity: list | None = None) -> dict[str, str]:
    """``{path: what the signature holds}`` for every leaf of ``fn(*args, **kwargs)``.

    ``by_identity`` (a list) collects the ``(path, value)`` of every static value
    keyed by its identity though its contents can change (``tree.compared_by_identity``).
    """
    out: dict[str, str] = {}
    for name, value in _named_arguments(fn, args, kwargs):
        _walk(value, name, out, by_identity)
    return out


def _named_arguments(fn, args, kwargs) -> list[tuple[str, object]]:
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):  # no signature, or a call the function will reject
        return [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())
    named = []
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            named += [(f"{name}[{i}]", v) for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named += list(value.items())
        else:
            named.append((name, value))
    return named


def _walk(x, path: str, out: dict, by_identity: list | None) -> None:
    if isinstance(x, (Array, Token)):
        out[path] = str(x.type)
    elif isinstance(x, np.ndarray):
        out[path] = f"numpy {x.dtype}{list(x.shape)}"
    elif type(x) in (tuple, list):
        for i, v in enumerate(x):
            _walk(v, f"{path}[{i}]", out, by_identity)
    elif isinstance(x, tuple) and hasattr(x, "_fields"):
        for k, v in zip(x._fields, x):
            _walk(v, f"{path}.{k}", out, by_identity)
    elif type(x) is dict:
        for k, v in x.items():
            _walk(v, f"{path}[{k!r}]", out, by_identity)
    elif type(x) in NODES:  # a registered class (hd.register_pytree_node)
        node = NODES[type(x)]
        children, aux = node.flatten(x)
        for i, v in enumerate(children):
            _walk(v, node.child_path(path, i), out, by_identity)
        out[f"{path} (aux data)"] = f"static {aux!r}"
    elif attrs.has(type(x)):
        for f in attrs.fields(type(x)):
            _walk(getattr(x, f.name), f"{path}.{f.name}", out, by_identity)
    else:
        out[path] = f"static {x!r}"
        if by_identity is not None and compared_by_identity(x):
            by_identity.append((path, x))
