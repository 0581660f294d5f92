"""What a Python function's staged program depends on, as a hashable key.

Control flow called eagerly (``hd.fori_loop``, ``hd.scan``, ``hd.while_loop``,
``hd.cond``, ``hd.switch``, ``hd.vmap``) stages the user's function into a small
module and runs it. Staging a three-op loop body costs about 2 ms, more than
running a 1000-step loop, so eager loops cache the staged program. The rule:
a cached program is reused only when every value the function can read while
staging is provably the same as when it was staged; anything else is staged
again (correct and slower beats fast and wrong). A function stages from

- its code (and the code of the lambdas and comprehensions inside it),
- its default arguments and the values in its closure cells,
- the global names its code reads, and the attributes its code names of the
  modules among them (a user module's nested modules too),
- the attributes of the user classes it reaches (every entry of the class
  ``__dict__`` along the method resolution order, since a method may read
  ``cls.x`` by a name the body never spells),
- the functions it reaches through those, recursively.

Values are keyed exactly (``tree.static_key``) when immutable: numbers, strings,
tuples. Concrete hlodsl arrays are immutable and are keyed by identity; the
key holds them, so an id is never reused while the entry lives. A plum
function is keyed by identity and its number of registered methods
(registering a method is a new key). Functions, classes and modules of the
*pure libraries* (hlodsl, numpy but not ``numpy.random``, math, operator,
functools, itertools, builtins and a few more: ``_PURE_MODULES``) are keyed by
identity, with the module attributes the code names (so a monkeypatched
``np.pi`` is a new key). Everything else has no key and the function is
staged at every call:

- any value that could change without its identity changing: a list, a dict,
  a numpy array, an instance of a class (but a frozen dataclass or attrs
  instance is keyed by its class and its field values);
- anything from another installed package or another standard-library module
  (``random``, ``time``, ``os``, ``numpy.random``, ...): it may be impure,
  so a body calling ``np.random.rand()`` or ``time.time()`` draws again;
- the builtins that read or write state the key cannot see (``print``,
  ``open``, ``input``, ``globals``, ``vars``, ``setattr``, ``eval``, ...).

hlodsl's own wrappers (the loop body ``fori_loop`` builds around the user's)
declare what they wrap in ``__fingerprint__``.

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
>>> fingerprint((lambda x: x * np.random.rand(),)) is None
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
_BY_IDENTITY = (types.MethodWrapperType, type(Ellipsis), type(NotImplemented),
                types.MemberDescriptorType, types.GetSetDescriptorType,
                types.WrapperDescriptorType, types.MethodDescriptorType)

#: Modules (and their submodules) whose functions and classes are pure as far as
#: staging sees: keyed by identity. ``_IMPURE_MODULES`` carves exceptions out.
_PURE_MODULES = ("hlodsl", "numpy", "ml_dtypes", "math", "cmath", "operator", "_operator",
                 "functools", "_functools", "itertools", "builtins", "plum", "attr", "attrs",
                 "typing", "numbers", "collections", "_collections", "enum", "abc", "_abc",
                 "dataclasses", "types")
_IMPURE_MODULES = ("numpy.random",)
#: Builtins that read or change state a key cannot see (the module namespace, files,
#: the terminal, attributes set by name) or have effects a cached program would skip.
_IMPURE_BUILTINS = frozenset({"print", "input", "open", "exec", "eval", "globals",
                              "locals", "vars", "setattr", "delattr", "__import__",
                              "breakpoint", "exit", "quit"})
#: Class ``__dict__`` entries that do not change what a body stages (the field tables of
#: dataclasses and attrs classes are made with the class; the methods made from them and
#: the instances' values are keyed themselves).
_CLASS_METADATA = frozenset({"__doc__", "__module__", "__qualname__", "__annotations__",
                             "__firstlineno__", "__static_attributes__", "__dict__",
                             "__weakref__", "__orig_bases__", "__parameters__", "_abc_impl",
                             "__dataclass_fields__", "__dataclass_params__", "__attrs_attrs__",
                             "__attrs_props__"})


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
    from hlodsl.arrays.array import _TYPES as array_classes
    from hlodsl.arrays.tree import static_key

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
    if t is types.BuiltinFunctionType:
        if not isinstance(v.__self__, (types.ModuleType, type(None))):
            # a builtin method bound to an object (d.get): keyed by that object
            return ("bound", v.__name__, _value(v.__self__, depth, held, seen))
        if v.__module__ == "builtins" and v.__name__ in _IMPURE_BUILTINS:
            raise _Unkeyable
        return _pure_identity(v, held)  # math.sin is; time.time is not
    if isinstance(v, type):
        return _class(v, depth, held, seen)
    if isinstance(v, types.ModuleType):
        # Reached where no code names its attributes (a class attribute, a tuple): which
        # of them the function reads is unknown. (Globals and cells are keyed in _function.)
        raise _Unkeyable
    if isinstance(v, _BY_IDENTITY):
        return _identity(v, held)
    plum = _plum_function()
    if isinstance(v, plum):
        return ("plum", _identity(v, held), len(v._pending), len(v._resolved))
    from hlodsl.compilation.compiler import Compiled

    if isinstance(v, Compiled):  # inlined when staged: what it stages is its function's
        return ("compiled", _value(v.fn, depth, held, seen))
    from hlodsl.ir.op import HloOp

    if isinstance(v, HloOp):  # frozen, hashed and compared by its static operands' keys
        return ("op", v)
    if callable(v) and _pure_name(t.__module__):  # numpy's ufuncs and dispatchers
        return _pure_identity(v, held)
    fields = _frozen_fields(v)
    if fields is not None:  # a frozen dataclass or attrs instance: its class and its values
        return ("frozen", _class(t, depth + 1, held, seen),
                tuple(_value(getattr(v, f), depth + 1, held, seen) for f in fields))
    raise _Unkeyable


def _frozen_fields(v: Any) -> tuple[str, ...] | None:
    """The field names of a frozen dataclass or attrs instance that holds nothing else, or
    None (a mutable instance; attributes set around the fields)."""
    import dataclasses

    import attrs

    t = type(v)
    if dataclasses.is_dataclass(t) and t.__dataclass_params__.frozen:
        names = tuple(f.name for f in dataclasses.fields(t))
    elif attrs.has(t) and getattr(t.__setattr__, "__name__", "") == "_frozen_setattrs":
        names = tuple(f.name for f in attrs.fields(t))
    else:
        return None
    extra = set(getattr(v, "__dict__", ())) - set(names)
    return None if extra else names


def _function(fn: types.FunctionType, depth: int, held: list, seen: set) -> tuple:
    if id(fn) in seen:  # recursion (a function naming itself): its code is already keyed
        return ("recursive", id(fn))
    declared = getattr(fn, "__fingerprint__", None)
    if declared is not None:  # a wrapper made by hlodsl: its code and what it wraps
        return ("wrapper", fn.__code__, _value(declared, depth + 1, held, seen))
    if _library(fn):
        return _library_function(fn, depth, held, seen)
    if depth > _MAX_DEPTH:
        raise _Unkeyable
    seen = seen | {id(fn)}
    code = fn.__code__
    glob = fn.__globals__
    names = _global_names(code)
    parts: list = [code]
    for name in names:
        if name in glob:
            g = glob[name]
            if isinstance(g, types.ModuleType):
                parts.append((name, _module(g, held),
                              _module_attributes(g, names, depth, held, seen, set())))
            else:
                parts.append((name, _value(g, depth + 1, held, seen)))
        elif not hasattr(builtins, name):
            parts.append((name, "unbound"))  # a NameError now, maybe a value later
        elif name in _IMPURE_BUILTINS:
            raise _Unkeyable
    for module_name in _imports(code):  # `import time` inside the body: a local, not a global
        mod = _module_named(module_name)
        if mod is None:  # not imported yet: nothing to key it by before the call
            raise _Unkeyable
        parts.append((module_name, _module(mod, held),
                      _module_attributes(mod, names, depth, held, seen, set())))
    parts.append(_value(fn.__defaults__ or (), depth + 1, held, seen))
    if fn.__kwdefaults__:
        parts.append(tuple(sorted((k, _value(x, depth + 1, held, seen))
                                  for k, x in fn.__kwdefaults__.items())))
    for cell in fn.__closure__ or ():
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell: a name bound later in the enclosing scope
            raise _Unkeyable from None
        if isinstance(contents, types.ModuleType):  # `import m` in the enclosing function
            parts.append((_module(contents, held),
                          _module_attributes(contents, names, depth, held, seen, set())))
        else:
            parts.append(_value(contents, depth + 1, held, seen))
    return tuple(parts)


def _library_function(fn: types.FunctionType, depth: int, held: list, seen: set) -> tuple:
    """A pure library's function by identity; the user's functions it closes over too.

    ``hd.grad(f)`` is a closure of hlodsl's around the user's ``f``: were it keyed
    by identity alone, ``f`` reading a changed global would not be seen. A
    library's other cell values (its settings, its caches) are its own.
    """
    # The module that defined it (functools.wraps copies the wrapped function's __module__)
    if not _pure_name(fn.__globals__.get("__name__")):
        raise _Unkeyable  # another package's or an impure standard module's function
    key = _identity(fn, held)
    if not fn.__closure__:
        return key
    wrapped = []
    for cell in fn.__closure__:
        try:
            contents = cell.cell_contents
        except ValueError:
            continue
        if callable(contents) and not isinstance(contents, type):
            wrapped.append(_value(contents, depth + 1, held, seen))
    return (key, tuple(wrapped))


def _class(cls: type, depth: int, held: list, seen: set) -> tuple:
    """A class by identity and, for a user's class, the contents of its ``__dict__``s.

    A class is mutable: ``Cfg.scale = 100`` keeps its identity. Every entry
    along the method resolution order is keyed (not only the names the body
    spells: a method reached through it may read ``cls.other``), so a changed
    attribute is a new key and a mutable one (a list) leaves the body unkeyed.
    """
    if _pure_name(cls.__module__):
        return _identity(cls, held)
    if _library_module(_module_named(cls.__module__)):
        raise _Unkeyable  # another package's class: its attributes are not ours to trust
    if id(cls) in seen:
        return ("recursive", id(cls))
    if depth > _MAX_DEPTH:
        raise _Unkeyable
    seen = seen | {id(cls)}
    parts: list = [_identity(cls, held), _value(type(cls), depth + 1, held, seen)]
    for klass in cls.__mro__:
        if _pure_name(klass.__module__):
            parts.append(_identity(klass, held))
            continue
        if klass is not cls and _library_module(_module_named(klass.__module__)):
            raise _Unkeyable
        parts.append(tuple((name, _class_entry(v, depth + 1, held, seen))
                           for name, v in vars(klass).items() if name not in _CLASS_METADATA))
    return ("class", tuple(parts))


def _class_entry(v: Any, depth: int, held: list, seen: set) -> Any:
    t = type(v)
    if t is staticmethod or t is classmethod:
        return (t, _value(v.__func__, depth, held, seen))
    if t is property:
        return (t, _value(v.fget, depth, held, seen), _value(v.fset, depth, held, seen),
                _value(v.fdel, depth, held, seen))
    return _value(v, depth, held, seen)


def _module(mod: types.ModuleType, held: list) -> tuple:
    """A module by identity (its attributes are keyed where the code names them), unless it
    belongs to a library that is not known to be pure (``time``, ``random``, ``os``)."""
    if _library_module(mod) and not _pure_name(mod.__name__):
        raise _Unkeyable
    return _identity(mod, held)


@functools.lru_cache(maxsize=4096)
def _global_names(code: types.CodeType) -> tuple[str, ...]:
    """Every name ``code`` and the code objects nested in it may look up: its names, and
    the identifiers among its string constants (``getattr(mod, "factor")``)."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names.update(_global_names(c))
        elif type(c) is str and c.isidentifier():
            names.add(c)
    return tuple(sorted(names))


@functools.lru_cache(maxsize=4096)
def _imports(code: types.CodeType) -> tuple[str, ...]:
    """The modules ``code`` (and the code nested in it) imports, each package on the way
    (``import a.b`` binds ``a``) as its own entry."""
    import dis

    found: list[str] = []
    for ins in dis.get_instructions(code):
        if ins.opname == "IMPORT_NAME":
            parts = str(ins.argval).split(".")
            found += [".".join(parts[:i + 1]) for i in range(len(parts))]
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            found += _imports(c)
    return tuple(dict.fromkeys(found))


def _module_attributes(mod: types.ModuleType, names: tuple, depth: int, held: list,
                       seen: set, modules: set) -> tuple:
    """The attributes of ``mod`` that the code names, keyed.

    A module's attributes are looked up at each call: replacing one is a new key.
    A user module's are keyed by value (a mutable one leaves the function
    unkeyed); a pure library's by identity (``np.pi`` rebound is a new key); a
    submodule's the same way, and an impure one (``np.random``) leaves the
    function unkeyed.
    """
    from hlodsl.arrays.tree import static_key

    modules.add(id(mod))
    library = _library_module(mod)
    out = []
    for name in names:
        a = mod.__dict__.get(name, _MISSING)
        if a is _MISSING:
            continue
        if isinstance(a, types.ModuleType):
            out.append((name, _module(a, held)))
            if id(a) not in modules:
                out.append(_module_attributes(a, names, depth, held, seen, modules))
        elif not library:
            out.append((name, _value(a, depth + 1, held, seen)))
        elif isinstance(a, _SIMPLE):
            out.append((name, static_key(a)))
        else:
            out.append((name, _identity(a, held)))
    return (id(mod), tuple(out))


_MISSING = object()


def _identity(v, held: list) -> tuple:
    held.append(v)  # alive while the key is: its id is not reused
    return ("id", id(v))


def _pure_identity(v, held: list) -> tuple:
    """``v`` by identity if it comes from a pure library (``_PURE_MODULES``)."""
    if not _pure_name(getattr(v, "__module__", None)):
        raise _Unkeyable
    return _identity(v, held)


@functools.lru_cache(maxsize=1024)
def _pure_name(module: str | None) -> bool:
    """Whether the module named ``module`` is one of the pure libraries."""
    if not isinstance(module, str):
        return False

    def within(prefixes):
        return any(module == p or module.startswith(p + ".") for p in prefixes)

    return within(_PURE_MODULES) and not within(_IMPURE_MODULES)


def _module_named(name: str) -> types.ModuleType | None:
    import sys

    return sys.modules.get(name)


def _library(fn: types.FunctionType) -> bool:
    g = fn.__globals__
    if g.get("__hlodsl_user_code__") or fn.__code__.co_filename.startswith("<doctest"):
        return False
    if str(g.get("__name__", "")).partition(".")[0] == "hlodsl":
        return True
    return fn.__code__.co_filename.startswith(_LIBRARY_DIRS)


def _library_module(mod: types.ModuleType | None) -> bool:
    if mod is None or mod.__name__ == "__main__":  # a script's, a notebook's: the user's
        return False
    if mod.__name__.partition(".")[0] == "hlodsl":
        return True
    return str(getattr(mod, "__file__", None) or "<builtin>").startswith(_LIBRARY_DIRS) \
        or getattr(mod, "__file__", None) is None


@functools.lru_cache(maxsize=1)
def _plum_function() -> type:
    import plum

    return plum.Function
