"""Global and closure variables whose rebinding must recompile a compiled function.

A compiled function reads what it closes over when it is staged: the
executable keeps that, and later calls with the same signature run it. For
most values that is the point (constants, helper functions), but an object
that is configuration, such as an optimiser (``opt = nn.adam(lr=1e-3)``), is
rebound by users who expect the next call to use the new one. Classes
registered with ``watch_rebinding`` (the layers above register theirs, e.g.
``nn.Optimizer``) are such values: ``bindings(fn)`` finds the names through
which ``fn`` reaches instances of them (its globals, its closure cells, and
those of the plain Python functions it names, a few calls deep), and
``moved(found)`` says whether one of those names is now bound to another
object: ``hlodsl.compile`` then stages the function again.

A watched value reached some other way (an attribute, a dict item, an
argument) is not followed: pass it as a static argument then, which is part
of the signature.

>>> class Config: pass
>>> _ = watch_rebinding(Config)
>>> conf = Config()
>>> def f(): return conf
>>> found = bindings(f)
>>> [b.name for b in found], moved(found)
(['conf'], False)
>>> conf = Config()
>>> moved(found)
True
>>> _WATCHED.remove(Config)
"""

from __future__ import annotations

import types
from typing import NamedTuple

__all__ = ["Binding", "bindings", "moved", "watch_rebinding"]

#: The classes whose instances are watched (registered by the layers above).
_WATCHED: list[type] = []

#: How many plain functions deep the search follows (step -> helper -> its helper).
_DEPTH = 4


def watch_rebinding(cls: type) -> type:
    """Register ``cls``: a compiled function that reaches an instance of it through a
    global or closure variable stages again when that variable is rebound."""
    if cls not in _WATCHED:
        _WATCHED.append(cls)
    return cls


class Binding(NamedTuple):
    """A name through which a function reached a watched value when it was staged."""

    scope: object  # the globals dict, or the closure cell
    name: str      # the global's name, or the free variable's
    value: object  # what it was bound to


def _names(code: types.CodeType):
    """The global names ``code`` reads, its nested functions' and comprehensions' too."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def bindings(fn) -> tuple[Binding, ...]:
    """The global and closure variables of ``fn`` (and of the plain functions it names)
    bound to instances of a watched class; empty when none is registered."""
    if not _WATCHED:
        return ()
    watched = tuple(_WATCHED)
    found: list[Binding] = []
    seen: set[int] = set()

    def visit(f, depth: int) -> None:
        if isinstance(f, types.MethodType):
            f = f.__func__
        elif not isinstance(f, types.FunctionType):
            try:  # an hd.compile'd function (or another wrapper) keeps the function
                f = getattr(f, "__wrapped__", None)
            except Exception:  # an object whose attributes fail: nothing to follow
                return
        if not isinstance(f, types.FunctionType) or id(f) in seen or depth > _DEPTH:
            return
        seen.add(id(f))
        if (f.__module__ or "").startswith("hlodsl.") and depth:
            return  # library code: configuration is the user's, not hlodsl's
        values = []
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            try:
                values.append(Binding(cell, name, cell.cell_contents))
            except ValueError:  # a cell not filled yet
                continue
        scope = f.__globals__
        for name in dict.fromkeys(_names(f.__code__)):
            if name in scope:
                values.append(Binding(scope, name, scope[name]))
        for b in values:
            if isinstance(b.value, watched):
                found.append(b)
            elif callable(b.value):
                visit(b.value, depth + 1)

    visit(fn, 0)
    return tuple(found)


def moved(found: tuple[Binding, ...]) -> bool:
    """Whether one of ``found`` is now bound to another object (or unbound)."""
    for scope, name, value in found:
        if isinstance(scope, dict):
            if scope.get(name) is not value:
                return True
        else:
            try:
                if scope.cell_contents is not value:
                    return True
            except ValueError:  # the variable was deleted
                return True
    return False
