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
from hlodsl.scalars import traced_scalar
from hlodsl.settings import config
from hlodsl.tree import flatten, has_identity_static, unflatten

from .structures import types_of

__all__ = ["eager", "run_eagerly"]

_EXECUTABLES = BoundedCache(lambda: config.eager_program_cache_size,
                            "eager control-flow modules")
# Staged programs by what staging them depends on (run_eagerly), with the objects
# their keys name by identity.
_TRACES = BoundedCache(lambda: config.eager_program_cache_size, "eager control-flow traces")


def eager() -> bool:
    """Outside staging, with no derivative being taken.

    Under ``hd.grad`` and friends the combinator runs its ops one by one, so
    that the transformation observes them (a compiled module would hide them).
    """
    return current_builder() is None and not STATE.traces


def run_eagerly(impl: Callable, name: str, *args):
    """``impl(*args)`` staged on the arrays in ``args``, compiled (cached by HLO text), run.

    The staged program is also cached by what staging it depends on (the
    functions in ``args`` by ``fingerprint``, the other arguments' structure and
    array types), so a warm call skips staging; a function without a
    fingerprint (it reads a list, a dict, an object) is staged at every call.
    """
    from hlodsl.compiler import Entry, run_entry
    from hlodsl.staging import stage_types

    leaves, treedef = flatten((args, {}))
    for a in leaves:
        if getattr(a, "_buf", None) is None:
            raise staging_error(f"{name}: a symbolic array {a.type} escaped the function "
                                "being staged and was passed outside of staging")
    key, held = _trace_key(impl, name, unflatten(treedef, leaves)[0], leaves) \
        if config.eager_trace_cache else (None, ())
    if key is not None:
        hit = _TRACES.get(key)
        if hit is not None:
            return run_entry(hit[0], leaves)
    try:
        staged = stage_types(_with_arrays(impl), treedef, types_of(leaves), f"eager_{name}")
    except _NoArrays as e:  # e.g. branches returning None: nothing to run
        return e.value
    entry = Entry(staged, _executable(staged, name))
    if key is not None:
        _TRACES.put(key, (entry, held))
    return run_entry(entry, leaves)


def _trace_key(impl: Callable, name: str, args: tuple, leaves: list):
    """``(key, held)`` for the program ``impl(*args)`` stages, or ``(None, ())``.

    ``args`` holds ``leaves`` (already arrays), so flattening it again copies nothing.
    """
    from .fingerprint import fingerprint

    fns = [a for a in args if _function_like(a)]
    if not fns:
        return None, ()
    held: list = []
    fp = fingerprint(tuple(fns), held)
    if fp is None:
        return None, ()
    structure = flatten(tuple(None if _function_like(a) else a for a in args))[1]
    try:
        hash(structure)
    except TypeError:  # an unhashable static value among the arguments
        return None, ()
    if has_identity_static(structure):  # an object the body may read, changed in place
        return None, ()
    return (impl, name, fp, structure, tuple(type(a) for a in leaves)), held


def _function_like(a) -> bool:
    """A function argument (or a tuple of branches): keyed by fingerprint, not identity."""
    if type(a) is tuple:
        return bool(a) and all(callable(f) and not hasattr(f, "_buf") for f in a)
    return callable(a) and not hasattr(a, "_buf")


def _executable(staged, name: str):
    from hlodsl.printer import module_text
    from hlodsl.runtime import compile_hlo

    # Keyed without source metadata, so one function called from several lines
    # compiles once; the executable keeps the first caller's lines.
    key = module_text(staged.computation, f"eager_{name}", metadata=False)
    exe = _EXECUTABLES.get(key)
    if exe is None:
        exe = compile_hlo(module_text(staged.computation, f"eager_{name}"),
                          out_types=[(t.shape, t.dtype.np_dtype) for t in staged.out_types])
        exe = _EXECUTABLES.put(key, exe)
    return exe


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


# -- stdlib functions called eagerly: one cached module per signature -----------------------
# An elementwise function made of several ops (floor_divide: 8) ran op by op eagerly,
# a one-op module each: 550 us against jax's 7. Staged as one compiled module per
# signature it is one call. Python floats are traced (hlodsl.scalars), and so are
# Python ints that fit every integer operand: a loop of x * 0.99 or x + i compiles once.

def eager_module(impl: Callable, name: str) -> Callable:
    """``impl`` (a function of array-like operands) that, called eagerly on at least one
    concrete array, runs as one compiled module per signature; while staging or under a
    derivative, ``impl`` itself (its ops are staged or observed one by one)."""
    import functools

    from hlodsl.array import _TYPES as array_classes
    from hlodsl.compiler import Compiled

    compiled: list = []

    @functools.wraps(impl)
    def run(*args):
        state = STATE
        if state.builders or state.traces:
            return impl(*args)
        arrays = [a for a in args if type(a) in array_classes]
        # No array (only numbers), or a symbolic one that escaped its staging: the impl
        # itself runs (and says what is wrong).
        if not arrays or any(a._buf is None for a in arrays):
            return impl(*args)
        lifted = _lift_ints(args)
        if lifted is None:  # an int that does not fit an operand's type: impl says so
            return impl(*args)
        if not compiled:
            c = Compiled(impl, name=f"eager_{name}", convert=False,
                         cache_size=config.eager_module_signatures)
            c.warn_recompiles = False
            compiled.append(c)
        return compiled[0](*lifted)

    return run


def _lift_ints(args):
    """``args`` with Python numbers as traced weak scalars (so the compiled function's
    positional-arrays fast path takes the call), or None if an int does not fit the
    integer type of an array operand (the impl raises OverflowError for it)."""
    out = []
    ints = None
    for a in args:
        t = type(a)
        if t is float or t is complex:
            a = traced_scalar(a)
        elif t is int:
            if ints is None:
                ints = _integer_ranges(args)
            if not all(lo <= a <= hi for lo, hi in ints) or not -2**63 <= a < 2**63:
                return None
            a = traced_scalar(a)
        out.append(a)
    return tuple(out)


def _integer_ranges(args) -> list[tuple[int, int]]:
    import numpy as np

    from hlodsl.dtypes import Integer

    return [(int(np.iinfo(a.dtype.np_dtype).min), int(np.iinfo(a.dtype.np_dtype).max))
            for a in args if hasattr(a, "dtype") and isinstance(a.dtype, type)
            and issubclass(a.dtype, Integer)]
