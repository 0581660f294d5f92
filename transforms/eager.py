"""Control flow called outside staging: the combinator staged as a small module and run.

A combinator (``cond``, ``while_loop``, ``scan``, ``vmap``) called on concrete
arrays, with no derivative being taken, stages itself as a one-program module,
compiles it once per module text and runs it: eager and staged results come
from the same HLO.
"""

from __future__ import annotations

from typing import Callable

from hlodsl.cache import BoundedCache
from hlodsl.context import STATE
from hlodsl.errors import staging_error
from hlodsl.graph import current_builder
from hlodsl.settings import config
from hlodsl.tree import flatten

from .structures import types_of

__all__ = ["eager", "run_eagerly"]

_EXECUTABLES = BoundedCache(lambda: config.eager_program_cache_size,
                            "eager control-flow modules")


def eager() -> bool:
    """Outside staging, with no derivative being taken.

    Under ``hd.grad`` and friends the combinator runs its ops one by one, so
    that the transformation observes them (a compiled module would hide them).
    """
    return current_builder() is None and not STATE.traces


def run_eagerly(impl: Callable, name: str, *args):
    """``impl(*args)`` staged on the arrays in ``args``, compiled (cached by HLO text), run."""
    from hlodsl.compiler import Entry, run_entry
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
    return run_entry(Entry(staged, exe), leaves)


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
