"""Python numbers passed to compiled functions: traced as scalar parameters, not static.

A learning rate or a temperature changes from call to call; were it part of the
signature, every new value would stage and compile the program again. So a
Python ``float`` or ``complex`` argument (anywhere in the arguments' tuples,
lists and dicts; not inside attrs instances or namedtuples, whose numbers are
configuration, such as an op's epsilon, and stay static) becomes a *weakly
typed* scalar parameter, as in JAX: an f64 or
c128 scalar that takes the element type of the arrays it meets (``x * lr``
stays float32 for a float32 ``x``). A numpy scalar (``np.float32(0.1)``) becomes
a scalar parameter of its own type. ``int`` and ``bool`` stay static: they size
shapes, count loops and pick branches. ``hd.compile(f, static_argnums=...,
static_argnames=...)`` keeps the numbers in those arguments static (arrays
there are still arrays: an array is never part of a signature by value).

>>> import numpy as np, hlodsl as hd
>>> f = hd.compile(lambda x, lr: x * lr)
>>> x = hd.array(np.float32([1, 2]))
>>> [f(x, lr).dtype for lr in (0.1, 0.2, 0.3)], f.compiles
([float32, float32, float32], 1)
"""

from __future__ import annotations

import inspect

import numpy as np

from hlodsl.cache import BoundedCache
from .dtypes import default_inexact, element_type
from .pytrees import NODES

__all__ = ["weak_class", "is_weak", "traced_scalar", "lift_arguments", "static_positions"]

_TRACED = (float, complex)

_WEAK_CLASSES: dict = {}


def weak_class(t) -> type:
    """The class of weakly typed scalars of type ``t`` (a subclass of its array class,
    same name: dispatch sees the same type, promotion sees a Python number)."""
    from .array import marked_class

    return marked_class(t, "_weak", _WEAK_CLASSES)


def is_weak(x) -> bool:
    """Whether ``x`` is a weakly typed scalar (a traced Python number)."""
    return getattr(type(x), "_weak", False)


# Arrays are immutable, so the scalar arrays of recent values are shared between calls
# (a device transfer saved per call for a learning rate that does not change).
_ARRAYS = BoundedCache(256, "traced Python scalars")


def traced_scalar(value):
    """``value`` (a Python float/complex/int, or a numpy scalar) as the array a compiled
    function receives for it: weakly typed for a Python number."""
    t = type(value)
    if t is float:  # the common case, keyed without numpy
        # By the float itself (one dict read: eager loops call this per op), except where
        # equal floats differ (0.0 and -0.0) or a float is not equal to itself (nan): by
        # its hex spelling there. No other key of the cache is a float.
        key = value if value and value == value else value.hex()
        hit = _ARRAYS._data.get(key)
        if hit is not None:  # (before the import below: it costs as much as this lookup)
            hit[1] = True
            return hit[0]
    else:
        key = None
    from .array import array

    weak = t in _TRACED or t is int
    host = np.asarray(value)
    if t in _TRACED:  # a Python number: of hlodsl.config.default_float's width
        host = host.astype(default_inexact(element_type(host.dtype)).np_dtype, copy=False)
    key = key or (weak, host.dtype, host.tobytes())  # not .str: "<V1" names many ml_dtypes
    out = _ARRAYS.get(key)
    if out is None:
        a = array(host)
        if weak:
            w = object.__new__(weak_class(a.type))
            w._buf, w._node = a._buf, None
            a = w
        out = _ARRAYS.put(key, a)
    return out


def _traced(x) -> bool:
    t = type(x)
    return t in _TRACED or (isinstance(x, np.generic) and
                            isinstance(x, (np.floating, np.complexfloating)))


def _lift(x):
    """``x`` with its traced scalars replaced by arrays (the same object if none)."""
    if _traced(x):
        return traced_scalar(x)
    t = type(x)
    if t is tuple or t is list:
        new = [_lift(v) for v in x]
        return x if all(a is b for a, b in zip(new, x)) else t(new)
    if t is dict:
        new = {k: _lift(v) for k, v in x.items()}
        return x if all(new[k] is v for k, v in x.items()) else new
    node = NODES.get(t)
    if node is not None:  # a registered class: its numbers trace, as hlodsl.tree's do
        children, aux = node.flatten(x)
        new = [_lift(v) for v in children]
        return x if all(a is b for a, b in zip(new, children)) else node.unflatten(aux,
                                                                                 tuple(new))
    return x


def lift_arguments(args: tuple, kwargs: dict, static_pos: frozenset, static_names: frozenset):
    """``(args, kwargs)`` with every traced scalar outside static arguments an array."""
    new_args = tuple(a if i in static_pos else _lift(a) for i, a in enumerate(args))
    if not kwargs:
        return new_args, kwargs
    return new_args, {k: v if k in static_names else _lift(v) for k, v in kwargs.items()}


def static_positions(fn, name: str, static_argnums, static_argnames, kind: str = "static"):
    """``(positions, names)`` of the static arguments: argnums, and argnames mapped to
    positions through ``fn``'s signature (keyword uses keep the name). ``kind`` names
    the options in errors (``"donate"``: ``donate_argnums``, read the same way)."""
    nums = () if static_argnums is None else (
        (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums))
    names = () if static_argnames is None else (
        (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames))
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise TypeError(f"compile({name}): {kind}_argnums must be ints, got {static_argnums!r}")
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"compile({name}): {kind}_argnames must be strings, got "
                        f"{static_argnames!r}")
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    known = {p.name for p in params}
    has_var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    for n in names:
        if params and n not in known and not has_var_kw:
            raise ValueError(f"compile({name}): {kind}_argnames names {n!r}, which is not a "
                             f"parameter of {name}{inspect.signature(fn)}")
    pos = {i if i >= 0 else len(positional) + i for i in nums}
    pos |= {positional.index(n) for n in names if n in positional}
    names_all = set(names) | {positional[i] for i in pos if 0 <= i < len(positional)}
    return frozenset(pos), frozenset(names_all)


def static_hint(value, name: str) -> str:
    """The end of an error message about a traced Python number that had to be static:
    how to make it static (empty for any other value)."""
    if getattr(type(value), "_weak", False) and getattr(value, "_buf", 1) is None:
        arg = _argument_name(value) or name
        return (f"; {name} is a Python number passed to a compiled function, which traces "
                f"it (its value is known only when the program runs): make that argument "
                f"static with hd.compile(..., static_argnames=('{arg}',)) or static_argnums")
    return ""


def _argument_name(value) -> str | None:
    """The compiled function's parameter a traced number came in as (its top-level name)."""
    node = value._node
    builder = node.builder
    for param, pname in zip(builder.params, builder.param_names):
        if param is node:
            return pname.split(".")[0].split("[")[0]
    return None
