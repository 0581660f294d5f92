"""The public generics of hlodsl.stdlib, and calls none of their methods takes.

Shared by tests/test_dispatch_errors.py and the bad-input corpus (tests/corpus_cases.py).
"""

from __future__ import annotations

import importlib
import pkgutil

import plum

import hlodsl.stdlib as xp
from hlodsl.ir.dispatcher import methods

__all__ = ["Opaque", "public_generics", "no_method_arities"]


class Opaque:
    """A type no generic has a method for (and that implements no operator)."""


def public_generics() -> dict[str, plum.Function]:
    """Every generic a module of hlodsl.stdlib exports (xp.add, xp.linalg.inv, nn.relu, ...)."""
    found = {}
    modules = [xp] + [importlib.import_module(m.name)
                      for m in pkgutil.walk_packages(xp.__path__, "hlodsl.stdlib.")
                      if not m.name.rsplit(".", 1)[-1].startswith("_")]
    for mod in modules:
        for name in dir(mod):
            obj = getattr(mod, name)
            if not name.startswith("_") and isinstance(obj, plum.Function):
                found.setdefault(obj.__name__, obj)
    return found


def no_method_arities(generic) -> list[int]:
    """The numbers of Opaque arguments that no method of ``generic`` takes."""
    most = max((len(m.signature.types) for m in methods(generic)), default=0)
    return [k for k in range(most + 2)
            if getattr(generic.resolve_method((Opaque(),) * k)[0], "__hlodsl_no_method__", False)]
