"""``hlodsl.compile``: stage a function once per signature into one XLA executable.

A signature is the structure of the arguments, the type (element type and
shape) of every array in it, and the value of every non-array argument. The
first call with a signature stages the function, prints one HLO module,
compiles it and caches the executable; later calls with that signature only
look the entry up and run it.

>>> import numpy as np, hlodsl as hd
>>> f = hd.compile(lambda x, y: x * y + x)
>>> f(hd.array(np.float32(3)), hd.array(np.float32(4)))
hlodsl.Array[float32, ()](15.)
"""

from __future__ import annotations

import functools

from .flow import convert as _convert
from .graph import current_builder
from .printer import module_text
from .runtime import Executable, compile_hlo
from .staging import Staged, stage
from .tree import LEAF, flatten, unflatten

__all__ = ["compile", "Compiled"]


class Entry:
    """One compiled signature: the executable and how to wrap its outputs."""

    __slots__ = ("staged", "exe", "out_classes", "out_tree", "single")

    def __init__(self, staged: Staged, exe: Executable):
        from .array import array_class

        self.staged = staged
        self.exe = exe
        self.out_classes = tuple(array_class(t) for t in staged.out_types)
        self.out_tree = staged.out_tree
        self.single = staged.out_tree is LEAF

    @classmethod
    def build(cls, staged: Staged, name: str) -> Entry:
        """Print ``staged`` as a module, compile it and make the cache entry."""
        from .errors import staging_error
        from .types import ArrayType

        if not all(isinstance(t, ArrayType) for t in staged.out_types):
            raise staging_error(f"{name}: a staged program can only return arrays, not "
                                f"{', '.join(str(t) for t in staged.out_types)} "
                                "(tokens stay inside the program)")
        out_types = [(t.shape, t.dtype.np_dtype) for t in staged.out_types]
        return cls(staged, compile_hlo(module_text(staged.computation, name),
                                       out_types=out_types))

    def run(self, leaves) -> object:
        outs = self.exe.execute([a._buf for a in leaves])
        if self.single:
            return _wrap(self.out_classes[0], outs[0])
        return unflatten(self.out_tree, map(_wrap, self.out_classes, outs))


def _wrap(cls, buf):
    a = object.__new__(cls)
    a._buf = buf
    a._node = None
    return a


class Compiled:
    """A function staged and compiled per signature; call it like the function."""

    def __init__(self, fn, name: str | None = None, convert: bool = True):
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "compiled")
        self.convert = convert
        self._staged_fn = None
        functools.update_wrapper(self, fn, updated=())
        # Signatures made only of positional arrays: keyed by the argument
        # classes alone, which already determine element types and shapes.
        self._fast: dict[tuple, Entry] = {}
        self._slow: dict[tuple, Entry] = {}

    def __call__(self, *args, **kwargs):
        if current_builder() is not None:
            # Called from inside another staged function: inline it, so nested
            # calls flatten into the enclosing module.
            return self.staged_fn(*args, **kwargs)
        if not kwargs:
            entry = self._fast.get(tuple(map(type, args)))
            if entry is not None:
                return entry.run(args)
        leaves, treedef = flatten((args, kwargs))
        key = (treedef, tuple(type(a) for a in leaves))
        entry = self._slow.get(key)
        if entry is None:
            entry = self._compile(args, kwargs)
            self._slow[key] = entry
            if not kwargs and all(type(a) is type(l) for a, l in zip(args, leaves)) \
                    and len(args) == len(leaves):
                self._fast[tuple(map(type, args))] = entry
        for a in leaves:
            if a._buf is None:
                raise TypeError(f"{self.name}: a symbolic array was passed outside staging")
        return entry.run(leaves)

    @property
    def staged_fn(self):
        """The function staging runs: ``fn`` with its Python control flow converted.

        See ``hlodsl.flow``: an ``if``/``while``/``for i in range(...)`` on a
        symbolic array becomes HLO control flow. Converted once, on first use;
        ``fn`` itself with ``convert=False``.
        """
        if self._staged_fn is None:
            self._staged_fn = _convert(self.fn) if self.convert else self.fn
        return self._staged_fn

    def _compile(self, args, kwargs) -> Entry:
        return Entry.build(stage(self.staged_fn, args, kwargs, self.name), self.name)

    def entry(self, *args, **kwargs) -> Entry:
        """The cache entry for this signature, staging and compiling if needed."""
        leaves, treedef = flatten((args, kwargs))
        key = (treedef, tuple(type(a) for a in leaves))
        entry = self._slow.get(key)
        if entry is None:
            entry = self._slow[key] = self._compile(args, kwargs)
        return entry

    def cache_size(self) -> int:
        return len(self._slow)

    def __repr__(self) -> str:
        return f"<hlodsl.compile({self.name}): {len(self._slow)} signature(s)>"


def compile(fn=None, *, name: str | None = None, convert: bool = True):
    """Stage ``fn`` into one HLO module per signature and run it with XLA.

    Usable as ``compile(f)`` or as a decorator ``@compile``. Arrays in the
    arguments (also inside tuples, lists, dicts and attrs instances) are
    dynamic; every other argument is static and part of the signature.
    Python ``if``/``while``/``for i in range(...)`` on symbolic arrays in ``fn``
    and the functions it calls become HLO control flow (``hlodsl.flow``);
    ``convert=False`` stages ``fn`` exactly as written.
    """
    if fn is None:
        return lambda f: Compiled(f, name, convert)
    if isinstance(fn, Compiled):
        return fn
    return Compiled(fn, name, convert)
