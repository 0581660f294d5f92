"""Staging: run Python on symbolic arrays and record one computation.

``stage`` runs a whole Python function on symbolic arrays built from abstract
argument types; every op it calls, however deeply nested in Python calls,
lands in one ``Builder``, so the result is one flat computation.
``stage_computation`` does the same for the static callables of Map, Reduce,
Sort, ... (sub-computations on scalars), cached by callable and types.
"""

from __future__ import annotations

import inspect

from hlodsl.arrays.array import Array, Token
from hlodsl.cache import BoundedCache
from hlodsl.settings import config
from hlodsl.context import STATE
from hlodsl.errors import _is_internal, staging_error
from .graph import Builder, Computation, has_side_effect
from hlodsl.arrays.tree import flatten, leaf_paths, unflatten

__all__ = ["stage", "stage_types", "Staged", "stage_computation", "stats"]

#: Counter for tests: how many times a Python function was staged.
stats = {"stagings": 0}


class Staged:
    """A staged function: its entry computation and how to rebuild its results."""

    __slots__ = ("computation", "out_tree", "out_types", "in_types")

    def __init__(self, computation: Computation, out_tree, out_types, in_types):
        self.computation = computation
        self.out_tree = out_tree
        self.out_types = out_types
        self.in_types = in_types


def _arg_names(fn, treedef, n: int) -> list[str]:
    """Parameter names for the printed module, from the Python argument names.

    An array argument keeps its name; the leaves of a structured argument are
    named by their path in it, as the user would write them
    (``params['features'][0]['weight']``, ``state.step``); keyword leaves start
    at the key. The printer turns these into valid HLO identifiers.
    """
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    args_td, kwargs_td = treedef[1]
    names: list[str] = []
    for i, td in enumerate(args_td[1]):
        names += leaf_paths(td, params[i] if i < len(params) else f"arg{i}")
    for key, td in zip(kwargs_td[1], kwargs_td[2]):
        names += leaf_paths(td, str(key))
    return names if len(names) == n else [f"p{i}" for i in range(n)]


def stage(fn, args: tuple, kwargs: dict, name: str | None = None) -> Staged:
    """Stage ``fn(*args, **kwargs)`` into one computation.

    Array leaves of the arguments become parameters (their values are not
    used); every other value is static and passed through as is.
    """
    leaves, treedef = flatten((args, kwargs))
    weak = tuple(getattr(type(a), "_weak", False) for a in leaves)
    return stage_types(fn, treedef, tuple(a.type for a in leaves), name,
                       weak if any(weak) else None)


def stage_types(fn, treedef, in_types: tuple, name: str | None = None,
                weak: tuple | None = None) -> Staged:
    """Stage ``fn`` on symbolic arguments: ``treedef`` of ``(args, kwargs)``, leaf types;
    ``weak`` flags the leaves that are traced Python numbers (``hlodsl.scalars``)."""
    stats["stagings"] += 1
    name = name or getattr(fn, "__name__", "staged")
    try:
        return _stage_types(fn, treedef, in_types, name, weak)
    except RecursionError as e:
        if STATE.builders:  # a nested staging: the outermost one sees the whole recursion
            raise
        raise _recursion_error(name, e) from None


def _stage_types(fn, treedef, in_types: tuple, name: str, weak: tuple | None) -> Staged:
    names = _arg_names(fn, treedef, len(in_types))
    with Builder(name) as b:
        sym = [Array._from_node(b.parameter(t, n)) for t, n in zip(in_types, names)]
        if weak is not None:
            from hlodsl.arrays.scalars import weak_class

            for a, w in zip(sym, weak):
                if w:
                    a.__class__ = weak_class(a.type)
        s_args, s_kwargs = unflatten(treedef, sym)
        out = fn(*s_args, **s_kwargs)
        out_leaves, out_tree = flatten(out)
        # A program run for its side effects (it prints) may return no arrays.
        effects = not out_leaves and any(map(has_side_effect, b.nodes))
        if not out_leaves and not effects:
            _no_arrays(out, name)
        out_nodes = tuple(b.node_of(x) for x in out_leaves)
        root = _root(b, out_nodes, name, force_tuple=effects)
    return Staged(b.finish(root), out_tree, tuple(n.type for n in out_nodes), in_types)


def _recursion_error(name: str, exc: RecursionError):
    """A staging error naming the user's function that recursed without end.

    A recursive call under an ``if`` on a symbolic array stages both branches, so
    the recursion never meets its base case: Python's stack runs out somewhere
    inside hlodsl or plum (``__instancecheck__``), which names neither the
    function nor the cause. The recursing function is the user's function with
    the most frames on the unwound stack.
    """
    counts: dict = {}
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if not _is_internal(frame):
            code = frame.f_code
            where = (code.co_name, code.co_filename, code.co_firstlineno)
            counts[where] = counts.get(where, 0) + 1
        tb = tb.tb_next
    culprit = max(counts, key=counts.get) if counts else None
    who = (f"{culprit[0]}() ({culprit[1]}:{culprit[2]})" if culprit and counts[culprit] > 1
           else "a function it calls")
    return staging_error(
        f"staging '{name}' recursed without end in {who}: a recursive call under an `if` "
        "on a symbolic array stages both branches, so the recursion never reaches its "
        "base case. Recurse on a Python value (a static int argument), or write the "
        "repetition as a loop (hd.while_loop, or a Python while on the array)")


def _no_arrays(out, name: str) -> None:
    """A staged function whose result holds no array: say what it returned instead."""
    if isinstance(out, (tuple, list, dict)) and not out:
        return  # an empty structure: _root says it returned no arrays
    shown = repr(out)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    kind = type(out).__name__
    raise staging_error(f"staged function '{name}' returned {'an' if kind[0] in 'aeiou' else 'a'} "
                        f"{kind} ({shown}), not arrays; it must return hlodsl arrays (or "
                        "tuples, lists or dicts of them)")


def _root(b: Builder, nodes: tuple, name: str, force_tuple: bool = False):
    from .structural import Tuple

    if len(nodes) == 1 and not force_tuple:
        return nodes[0]
    if not nodes and not force_tuple:
        raise staging_error(f"staged function '{name}' returned no arrays")
    return b.add(Tuple(), nodes, Tuple().result_type(*(n.type for n in nodes)), None)


_SUBCOMPUTATIONS = BoundedCache(lambda: config.subcomputation_cache_size,
                                "staged sub-computations")


def _check_computation_arity(fn, name: str, arg_types: tuple) -> None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins, plum generics: let the call speak
        return
    try:
        signature.bind(*arg_types)
    except TypeError:
        types = ", ".join(str(t) for t in arg_types)
        raise staging_error(
            f"the computation {name}{signature} given to an op is called with "
            f"{len(arg_types)} argument(s) ({types})") from None


def stage_computation(fn, arg_types: tuple, tuple_result: bool = False) -> Computation:
    """The sub-computation of ``fn`` applied to symbolic values of ``arg_types``.

    A ``TupleType`` parameter reaches ``fn`` as a Python tuple of arrays.
    ``fn`` returns an array or a tuple of arrays (several results become an
    HLO tuple; ``tuple_result=True`` makes even one result a 1-tuple, as
    While bodies need). Cached by ``(fn, arg_types, tuple_result)`` and the platform
    being staged for (``hlodsl.ir.target``): an op's shape rule and its emission both
    ask for it.
    """
    from .op import wrap_node

    if isinstance(fn, Computation):  # staged already (once, by the code that made the op)
        if fn.param_types != tuple(arg_types):
            shown = ", ".join(str(t) for t in arg_types)
            raise staging_error(
                f"the computation {fn.name} takes ({', '.join(str(t) for t in fn.param_types)})"
                f" but the op applies it to ({shown})")
        return fn
    key = (fn, arg_types, tuple_result, STATE.platform)
    comp = _SUBCOMPUTATIONS.get(key)
    if comp is not None:
        return comp
    name = getattr(fn, "__name__", "computation")
    if name == "<lambda>":
        name = "lambda"
    _check_computation_arity(fn, name, arg_types)
    with Builder(name) as b:
        params = [wrap_node(b, b.parameter(t)) for t in arg_types]
        out = fn(*params)
        leaves = list(out) if isinstance(out, (tuple, list)) else [out]
        for x in leaves:
            if not isinstance(x, (Array, Token)):
                raise staging_error(
                    f"the computation {name} given to an op returned a "
                    f"{type(x).__name__}; it must return hlodsl arrays (or tokens)"
                )
        root = _root(b, tuple(b.node_of(x) for x in leaves), name,
                     force_tuple=tuple_result or isinstance(out, (tuple, list)) and len(leaves) != 1)
    return _SUBCOMPUTATIONS.put(key, b.finish(root))
