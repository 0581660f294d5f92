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
from hlodsl.ir.dispatcher import cached_method
from hlodsl.errors import staging_error
from hlodsl.ir.graph import current_builder, has_side_effect
from hlodsl.ir.target import live_platform
from hlodsl.arrays.scalars import traced_scalar
from hlodsl.settings import config, staging_share
from hlodsl.arrays.tree import flatten, has_identity_static, unflatten

from .lazy import record
from .structures import types_of

__all__ = ["eager", "run_eagerly", "eager_module", "FastPath", "MISS"]

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
    from hlodsl.compilation.compiler import Entry, run_entry
    from hlodsl.ir.staging import stage_types

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
    with staging_share():  # staged, compiled and cached under the same settings
        try:
            with live_platform():  # it runs here: staged for this runtime's platform
                staged = stage_types(_with_arrays(impl), treedef, types_of(leaves),
                                     f"eager_{name}")
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
    from hlodsl.ir.printer import module_text
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
        if not flatten(out)[0] and not any(map(has_side_effect, current_builder().nodes)):
            raise _NoArrays(out)  # nothing to run (a program that prints still runs)
        return out

    return staged


# -- stdlib functions called eagerly: one cached module per signature -----------------------
# An elementwise function made of several ops (floor_divide: 8) ran op by op eagerly,
# a one-op module each: 550 us against jax's 7. Staged as one compiled module per
# signature it is one call. Python floats are traced (hlodsl.arrays.scalars), and so are
# Python ints that fit every integer operand: a loop of x * 0.99 or x + i compiles once.

def eager_module(impl: Callable, name: str) -> Callable:
    """``impl`` (a function of array-like operands) that, called eagerly on at least one
    concrete array, runs as one compiled module per signature; while staging or under a
    derivative, ``impl`` itself (its ops are staged or observed one by one)."""
    import functools

    from hlodsl.arrays.array import _TYPES as array_classes
    from hlodsl.compilation.compiler import Compiled

    compiled: list = []

    @functools.wraps(impl)
    def run(*args):
        state = STATE
        if state.builders or state.traces:
            return impl(*args)
        if compiled and config.eager_fusion:
            # Arrays only, a signature compiled already: recorded (hlodsl.transforms.lazy)
            plan = compiled[0]._plans.get(tuple(map(type, args)))
            if type(plan) is list:
                for a in args:
                    if a._node is not None:  # escaped its staging: the long way says so
                        break
                else:
                    out = record(plan[0], impl, args)
                    if out is not None:
                        plan[1] = True
                        return out
        arrays = [a for a in args if type(a) in array_classes]
        # No array (only numbers), or a symbolic one that escaped its staging: the impl
        # itself runs (and says what is wrong). (``_node``, not ``_buf``: a recorded
        # result has no buffer yet, and reading it would run its chain.)
        if not arrays or any(a._node is not None for a in arrays):
            return impl(*args)
        lifted = _lift_ints(args)
        if lifted is None:  # an int that does not fit an operand's type: impl says so
            return impl(*args)
        if not compiled:
            c = Compiled(impl, name=f"eager_{name}", convert=False,
                         cache_size=config.eager_module_signatures)
            c.warn_recompiles = False
            compiled.append(c)
        c = compiled[0]
        if config.eager_fusion:
            plan = c._plans.get(tuple(map(type, lifted)))
            if type(plan) is list:  # a signature compiled already: record the op
                out = record(plan[0], impl, lifted)
                if out is not None:
                    plan[1] = True
                    return out
        return c(*lifted)

    run.eager_compiled = compiled  # what FastPath calls once plum has chosen ``run``
    return run


# -- operators on arrays: straight to the compiled module after the first call -------------
# ``a + b`` went: operator -> plum's dispatch of ``add`` -> eager_module's ``run`` (which
# arrays, which numbers, do the ints fit) -> Compiled. Once a type signature has run,
# FastPath remembers plum's decision and how each argument is passed, and goes straight
# to the Compiled: the checks that depend on values (a symbolic array, an int out of
# range) stay, and any method added to the generic since sends the call the long way.

MISS = object()  # FastPath's "take the long way" (None is a value an operator may return)

_ARRAY, _NUMBER, _INT = 0, 1, 2


class FastPath:
    """``generic(*args)``, for a generic whose method is an ``eager_module``, without
    dispatch after the first call for a type signature; ``MISS`` where the long way
    must run (staging, a derivative being taken, a new signature, a value it refuses).

    >>> import hlodsl as hd
    >>> from hlodsl.stdlib import multiply
    >>> fast, x = FastPath(multiply), hd.array([1.0, 2.0])
    >>> fast((x, 3.0)) is MISS
    True
    >>> multiply(x, 3.0) is not None and fast.learn((x, 3.0))
    True
    >>> fast((x, 0.5))
    hlodsl.Array[float64, (2,)]([0.5, 1. ])
    """

    __slots__ = ("generic", "table")

    def __init__(self, generic):
        self.generic = generic
        #: argument types -> (plum's decision, the Compiled, how each argument is
        #: passed (None: all arrays), the range an int argument must fall in, the
        #: Compiled's plans by argument classes (hlodsl.compilation.call), and the key there of an
        #: all-array signature)
        self.table: dict[tuple, tuple] = {}

    def __call__(self, args: tuple):
        state = STATE
        if state.builders or state.traces:
            return MISS
        types = tuple(map(type, args))
        hit = self.table.get(types)
        if hit is None or hit[1] is None or cached_method(self.generic, types) is not hit[0]:
            return MISS
        _, compiled, kinds, lo, hi, cells, key = hit
        if kinds is None:  # arrays only
            for a in args:
                if a._node is not None:  # escaped its staging: the long way says so
                    return MISS
            lifted = args
        else:
            lifted = []
            for a, kind in zip(args, kinds):
                if kind == _ARRAY:
                    if a._node is not None:
                        return MISS
                elif kind == _NUMBER or lo <= a <= hi:
                    a = traced_scalar(a)
                else:  # an int the operands' type cannot hold: the long way raises
                    return MISS
                lifted.append(a)
            # The scalars' classes follow hlodsl.config.default_float: read, not remembered.
            key = tuple(map(type, lifted))
        # The Compiled's own plan of an arrays-only signature (what its __call__ reads
        # first: a cell [entry, used]); a signature it evicted since, or one it plans
        # otherwise, is compiled again or run through the call.
        cell = cells.get(key) if cells is not None else None
        if type(cell) is not list:
            return compiled(*lifted)
        cell[1] = True
        if config.eager_fusion:
            out = record(cell[0], compiled.fn, lifted)
            if out is not None:
                return out
        return cell[0].run(lifted)

    def binary(self, a, b):
        """``__call__((a, b))``, spelled out for two arguments: the operators' path."""
        state = STATE
        if state.builders or state.traces:
            return MISS
        types = (type(a), type(b))
        hit = self.table.get(types)
        if hit is None:
            return MISS
        decision, compiled, kinds, lo, hi, cells, key = hit
        g = self.generic
        # plum's decision is still the one remembered (cached_method, inlined; learn
        # checked that this plum keeps these attributes)
        if compiled is None or g._pending or g._cache.get(types) is not decision:
            return MISS
        if kinds is None:  # arrays only
            if a._node is not None or b._node is not None:  # escaped its staging
                return MISS
        else:
            ka, kb = kinds
            if ka == _ARRAY:
                if a._node is not None:
                    return MISS
            elif ka == _NUMBER or lo <= a <= hi:
                a = traced_scalar(a)
            else:  # an int the operands' type cannot hold: the long way raises
                return MISS
            if kb == _ARRAY:
                if b._node is not None:
                    return MISS
            elif kb == _NUMBER or lo <= b <= hi:
                b = traced_scalar(b)
            else:
                return MISS
            key = (type(a), type(b))
        cell = cells.get(key) if cells is not None else None
        if type(cell) is not list:
            return compiled(a, b)
        cell[1] = True
        if config.eager_fusion:
            out = record(cell[0], compiled.fn, (a, b))
            if out is not None:
                return out
        return cell[0].run((a, b))

    def _bound(self) -> None:
        # Bounded as every cache (it holds no executable, only what to call): past four
        # times the signatures an eager module keeps compiled, it starts again.
        if len(self.table) >= 4 * config.eager_module_signatures:
            self.table.clear()

    def learn(self, args: tuple) -> bool:
        """Remember how a call on ``args`` (just made the long way) runs; whether it can."""
        from hlodsl.arrays.array import _TYPES as array_classes

        if STATE.builders or STATE.traces:
            return False
        types = tuple(map(type, args))
        decision = cached_method(self.generic, types)
        if decision is None:  # plum does not cache these types: ask it every time
            return False
        if not hasattr(self.generic, "_pending"):  # what ``binary`` reads of plum's
            return False
        known = self.table.get(types)
        if known is not None and known[0] is decision:
            return known[1] is not None
        compiled = getattr(decision[0], "eager_compiled", None)
        kinds = tuple(_ARRAY if t in array_classes else _NUMBER if t in (float, complex)
                      else _INT if t is int else None for t in types)
        if not compiled or None in kinds or _ARRAY not in kinds:
            # A user's method, one that is not an eager module, or arguments it does
            # not pass itself: remembered, so that the next call does not ask again.
            self._bound()
            self.table[types] = (decision, None, kinds, 0, 0, None, None)
            return False
        ranges = _integer_ranges(args) + [(-2**63, 2**63 - 1)]
        lo, hi = max(r[0] for r in ranges), min(r[1] for r in ranges)
        self._bound()
        cells = getattr(compiled[0], "_plans", None)  # absent: every hit calls the Compiled
        self.table[types] = (decision, compiled[0], None if set(kinds) == {_ARRAY} else kinds,
                             lo, hi, cells, types)
        return True


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

    from hlodsl.arrays.dtypes import Integer

    return [(int(np.iinfo(a.dtype.np_dtype).min), int(np.iinfo(a.dtype.np_dtype).max))
            for a in args if hasattr(a, "dtype") and isinstance(a.dtype, type)
            and issubclass(a.dtype, Integer)]
