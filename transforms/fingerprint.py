"""What a Python function's staged program depends on, as a hashable key.

Control flow called eagerly (``hd.fori_loop``, ``hd.scan``, ``hd.while_loop``,
``hd.cond``, ``hd.switch``) stages the user's function into a small module and
runs it. Staging a three-op loop body costs about 2 ms, more than running a
1000-step loop, so eager loops cache the staged program. The cache key must
change whenever the function could stage something else, or a call would
silently run an old program. A function stages from

- its code (and the code of the lambdas and comprehensions inside it),
- its default arguments and the values in its closure cells,
- the global names its code reads (and, for a global module, the module's
  attributes its code names: ``xp.sin`` monkeypatched is a new key),
- the functions it reaches through those, recursively.

Values are keyed exactly (``tree.static_key``) when immutable: numbers, strings,
tuples. Concrete hlodsl arrays are immutable and are keyed by identity; the
key holds them, so an id is never reused while the entry lives. Modules,
classes and builtins are keyed by identity, a plum function by identity and
its number of registered methods (registering a method is a new key); functions
of hlodsl and installed packages by identity. hlodsl's own wrappers (the loop
body ``fori_loop`` builds around the user's) declare what they wrap in
``__fingerprint__``. Any
other value (a list, a dict, a numpy array, an object with attributes) could
change without its identity changing: the function then has no key and is
staged at every call, as before.

>>> import numpy as np, hlodsl as hd
>>> scale = 2.0
>>> def f(x):
...     return x * scale
>>> k = fingerprint((f,))
>>> scale = 3.0
>>> fingerprint((f,)) == k
False
>>> table = [1.0]
>>> fingerprint((lambda x: x * table[0],)) is None
True
"""

from __future__ import annotations

import builtins
import functools
import types
from typing import Any

import numpy as np

from .flow.conversion import _LIBRARY_DIRS

__all__ = ["fingerprint"]

_MAX_DEPTH = 6
_SIMPLE = (int, float, complex, str, bytes, bool, type(None), np.generic)
_BY_IDENTITY = (types.BuiltinFunctionType, types.ModuleType, type, types.MethodWrapperType,
                type(Ellipsis), type(NotImplemented))


class _Unkeyable(Exception):
    """A value the staged program may depend on that could change in place."""


def fingerprint(fns: tuple, held: list | None = None) -> tuple | None:
    """A key for the programs ``fns`` stage, or None when one of them has none.

    ``held`` collects the objects keyed by identity (concrete arrays) so that
    the caller can keep them alive as long as the key is in use.
    """
    held = [] if held is None else held
    try:
        return tuple(_value(f, 0, held, set()) for f in fns)
    except (_Unkeyable, RecursionError):
        return None


def _value(v: Any, depth: int, held: list, seen: set) -> Any:
    from hlodsl.array import _TYPES as array_classes
    from hlodsl.tree import static_key

    t = type(v)
    if isinstance(v, _SIMPLE):
        return static_key(v)
    if t in array_classes:
        if v._buf is None:  # symbolic: belongs to some staging, not a constant
            raise _Unkeyable
        return _identity(v, held)
    if t is tuple or t is frozenset:
        return (t, tuple(_value(x, depth, held, seen) for x in v))
    if t is types.FunctionType:
        return _function(v, depth, held, seen)
    if t is types.MethodType:
        return ("method", _value(v.__func__, depth, held, seen),
                _value(v.__self__, depth, held, seen))
    if t is functools.partial:
        return ("partial", _value(v.func, depth, held, seen),
                _value(v.args, depth, held, seen),
                tuple(sorted((k, _value(x, depth, held, seen)) for k, x in v.keywords.items())))
    if t is types.BuiltinFunctionType and not isinstance(v.__self__, (types.ModuleType,
                                                                       type(None))):
        # a builtin method bound to an object (d.get): keyed by that object
        return ("bound", v.__name__, _value(v.__self__, depth, held, seen))
    if isinstance(v, _BY_IDENTITY):
        return _identity(v, held)
    plum = _plum_function()
    if isinstance(v, plum):
        return ("plum", _identity(v, held), len(v._pending), len(v._resolved))
    from hlodsl.compiler import Compiled

    if isinstance(v, Compiled):  # compiled functions cache by signature, as here
        return ("compiled", _identity(v, held))
    from hlodsl.op import HloOp

    if isinstance(v, HloOp):  # frozen, hashed and compared by its static operands' keys
        return ("op", v)
    raise _Unkeyable


def _function(fn: types.FunctionType, depth: int, held: list, seen: set) -> tuple:
    if id(fn) in seen:  # recursion (a function naming itself): its code is already keyed
        return ("recursive", id(fn))
    declared = getattr(fn, "__fingerprint__", None)
    if declared is not None:  # a wrapper made by hlodsl: its code and what it wraps
        return ("wrapper", fn.__code__, _value(declared, depth + 1, held, seen))
    if _library(fn):  # hlodsl's and installed packages' functions do not change under us
        return _identity(fn, held)
    if depth > _MAX_DEPTH:
        raise _Unkeyable
    seen = seen | {id(fn)}
    code = fn.__code__
    glob = fn.__globals__
    parts: list = [code]
    for name in _global_names(code):
        if name in glob:
            g = glob[name]
            parts.append((name, _value(g, depth + 1, held, seen)))
            if isinstance(g, types.ModuleType) and not _library_module(g):
                parts.append(_module_attributes(g, code, depth, held, seen))
        elif not hasattr(builtins, name):
            parts.append((name, "unbound"))  # a NameError now, maybe a value later
    parts.append(_value(fn.__defaults__ or (), depth + 1, held, seen))
    if fn.__kwdefaults__:
        parts.append(tuple(sorted((k, _value(x, depth + 1, held, seen))
                                  for k, x in fn.__kwdefaults__.items())))
    for cell in fn.__closure__ or ():
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell: a name bound later in the enclosing scope
            raise _Unkeyable from None
        parts.append(_value(contents, depth + 1, held, seen))
    return tuple(parts)


@functools.lru_cache(maxsize=4096)
def _global_names(code: types.CodeType) -> tuple[str, ...]:
    """Every name ``code`` and the code objects nested in it may look up."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names.update(_global_names(c))
    return tuple(sorted(names))


def _module_attributes(mod: types.ModuleType, code, depth: int, held: list, seen: set) -> tuple:
    # A user module's attributes are looked up at each call; the ones this code names
    # are keyed, so replacing one is a new key, and a mutable one makes the function
    # unkeyable. (Library modules, numpy's or hlodsl's, are keyed by identity only.)
    out = []
    for name in _global_names(code):
        a = mod.__dict__.get(name, _MISSING)
        if a is _MISSING or isinstance(a, types.ModuleType):
            continue
        out.append((name, _value(a, depth + 1, held, seen)))
    return (id(mod), tuple(out))


_MISSING = object()


def _identity(v, held: list) -> tuple:
    held.append(v)  # alive while the key is: its id is not reused
    return ("id", id(v))


def _library(fn: types.FunctionType) -> bool:
    g = fn.__globals__
    if g.get("__hlodsl_user_code__") or fn.__code__.co_filename.startswith("<doctest"):
        return False
    if str(g.get("__name__", "")).partition(".")[0] == "hlodsl":
        return True
    return fn.__code__.co_filename.startswith(_LIBRARY_DIRS)


def _library_module(mod: types.ModuleType) -> bool:
    if mod.__name__.partition(".")[0] == "hlodsl":
        return True
    return str(getattr(mod, "__file__", None) or "<builtin>").startswith(_LIBRARY_DIRS) \
        or getattr(mod, "__file__", None) is None


@functools.lru_cache(maxsize=1)
def _plum_function() -> type:
    import plum

    return plum.Function
