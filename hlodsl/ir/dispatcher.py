"""The project's one ``Dispatcher``: stdlib generics and user methods share it.

It is plum's ``Dispatcher`` with one addition: every generic it makes gets a
last-resort method that takes any arguments and raises
:class:`hlodsl.NoMethodError`, a ``TypeError`` (numpy's and the array API's
contract for arguments of the wrong type) that is also plum's
``NotFoundLookupError``, naming the argument types and the methods there are.

>>> import hlodsl as hd
>>> @hd.dispatch
... def rank_name(A: hd.Matrix) -> str:
...     return "matrix"
>>> rank_name(hd.array([[1.0]]))
'matrix'
>>> try:
...     rank_name("abc")
... except TypeError as e:
...     print(str(e).splitlines()[0])
rank_name: no method for argument types (str); its methods take:
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import plum

from hlodsl.errors import NoMethodError, with_location
from hlodsl.arrays.types import ArrayType

__all__ = ["Dispatcher", "dispatch", "methods", "cached_method"]

#: Marks the last-resort method, so that listings of a generic's methods can leave it out.
_NO_METHOD = "__hlodsl_no_method__"

#: Candidates a NoMethodError lists (plum shows three too).
_MAX_CANDIDATES = 3


class Dispatcher:
    """plum's ``Dispatcher``, whose generics raise ``NoMethodError`` when no method applies.

    NOTE: plum's ``Dispatcher`` and ``Function`` are compiled (mypyc) and cannot
    be subclassed, and its resolver raises its own ``NotFoundLookupError``;
    a method of the most general signature, ``(*args: Any)``, at a precedence
    below every other method's, is the one place a failed lookup can be made a
    ``TypeError``. It costs nothing on the hot path: plum caches the resolution
    per argument types, as for any method.
    """

    def __init__(self, warn_redefinition: bool = False):
        self._plum = plum.Dispatcher(warn_redefinition=warn_redefinition)

    def __call__(self, method: Callable | None = None, /, *, precedence: int = 0):
        """Register ``method`` as a method of the generic of its name (a decorator)."""
        if method is None:
            return functools.partial(self.__call__, precedence=precedence)
        self.abstract(method)  # first, so that a method of the same signature replaces it
        return self._plum(method, precedence=precedence)

    def multi(self, *signatures):
        """Register a method under several signatures (plum's ``Dispatcher.multi``)."""
        register = self._plum.multi(*signatures)

        def decorator(method):
            self.abstract(method)
            return register(method)

        return decorator

    def abstract(self, method: Callable) -> plum.Function:
        """The generic named as ``method`` (made if new, with no methods of its own yet)."""
        generic = self._plum.abstract(method)
        if not _in_class(method) and not getattr(generic, _NO_METHOD, False):
            setattr(generic, _NO_METHOD, True)
            _add_no_method(generic)
        return generic

    def __getattr__(self, name: str):
        if name == "_plum":  # not set yet (copy, unpickling): no recursion through here
            raise AttributeError(name)
        return getattr(self._plum, name)  # functions, classes, clear_cache: plum's own


def _in_class(method: Callable) -> bool:
    """Whether ``method`` is defined in a class body (plum's test: it falls back on the MRO)."""
    parts = method.__qualname__.split(".")
    return len(parts) >= 2 and parts[-2] != "<locals>"


def _add_no_method(generic: plum.Function) -> None:
    def no_method(*args, **kwargs):
        raise NoMethodError(_message(generic, args), generic.__name__, args, generic.methods)

    no_method.__name__ = no_method.__qualname__ = generic.__name__
    no_method.__doc__ = ("Any other arguments: raises ``hlodsl.NoMethodError`` (a "
                         "``TypeError``) naming their types.")
    setattr(no_method, _NO_METHOD, True)
    # Precedence -1: where a method as general as this one also matches (``*args`` with
    # no annotations), that method wins rather than the call being ambiguous.
    generic.register(no_method, plum.Signature(varargs=Any, precedence=-1))


def _message(generic: plum.Function, args: tuple) -> str:
    name = generic.__name__
    types = ", ".join(map(argument_type, args))
    listed = "".join(f"\n    {c}" for c in _candidates(generic, len(args)))
    if not listed:
        return with_location(f"{name}: no method for argument types ({types}); "
                             f"{name} has no methods yet")
    return with_location(f"{name}: no method for argument types ({types}); its methods "
                         f"take:{listed}")


def methods(generic: plum.Function) -> list:
    """``generic``'s methods, without the last-resort one that raises ``NoMethodError``."""
    return [m for m in generic.methods if not getattr(m.implementation, _NO_METHOD, False)]


def _candidates(generic: plum.Function, arity: int) -> list[str]:
    """The signatures of ``generic``'s implementations, those taking ``arity`` arguments first."""
    seen, found = set(), []
    for m in methods(generic):
        impl = m.implementation
        if id(impl) in seen:  # one implementation registers a method per defaulted argument
            continue
        seen.add(id(impl))
        found.append((not _takes(m.signature, arity), f"{generic.__name__}{_signature(impl)}"))
    return [text for _, text in sorted(found, key=lambda f: f[0])][:_MAX_CANDIDATES]


def _takes(signature, arity: int) -> bool:
    return len(signature.types) == arity or (signature.has_varargs
                                             and len(signature.types) <= arity)


def _signature(impl: Callable) -> str:
    try:
        return str(inspect.signature(impl)).replace("hlodsl.", "")
    except (TypeError, ValueError):  # a builtin or a callable object without one
        return "(...)"


def argument_type(value) -> str:
    """The type of ``value`` as an error message names it: ``f32[3]``, ``NoneType``, ...

    >>> import numpy as np
    >>> argument_type(None), argument_type(np.zeros((2, 3), np.float32)), argument_type([1])
    ('NoneType', 'ndarray[float32, (2, 3)]', 'list')
    """
    t = getattr(value, "type", None)
    if isinstance(t, ArrayType):  # an hlodsl array, concrete or symbolic
        return str(t)
    cls = type(value)
    if cls.__module__ == "numpy" and hasattr(value, "shape"):
        return f"{cls.__name__}[{value.dtype}, {value.shape}]"
    if cls.__module__ in ("builtins", "numpy"):
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


dispatch = Dispatcher()


def cached_method(generic: plum.Function, types: tuple):
    """plum's cached decision for arguments of exactly ``types``: the object it keeps
    as ``(implementation, return type)``, or None when it has none or registrations
    are pending (the next call would decide again).

    A caller that remembers the decision and finds the same object later knows no
    method was added since (plum decides again, into a new object, after any
    registration): the eager operators' fast path (``hlodsl.transforms.eager``)
    checks this on every call. With a plum that keeps neither, always None.

    >>> import hlodsl as hd
    >>> from hlodsl.stdlib import add
    >>> x = hd.array([1.0]); _ = add(x, x)
    >>> cached_method(add, (type(x), type(x)))[0].__name__
    'add'
    """
    try:
        if generic._pending:
            return None
        return generic._cache.get(types)
    except AttributeError:  # a plum that caches differently: no fast path, same answers
        return None
