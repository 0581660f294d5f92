"""A converted ``if`` (and conditional expression): Python's on a Python value, HLO's on an array.

On a symbolic condition both branches are staged, once each (``Body``); what
each variable becomes after the ``if`` is decided from both branches' values
(``_merge``): arrays of one type are kept, Python numbers beside arrays are
made arrays, equal static values stay static, and anything else is an error
naming the variable and the statement.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from hlodsl.arrays.array import Array
from hlodsl.errors import ShapeError, StagingError, staging_error
from hlodsl.ir.structural import Constant
from hlodsl.arrays.tree import flatten, unflatten

from hlodsl.ir.graph import current_builder

from ..body import Body, ordered_token
from ..structures import flatten_lifting
from .values import (
    Site, Undefined, _fits, _full, _has_arrays, _is_host, _located, _ops, _same_static, _show,
    _symbolic, _truth, _where, undefined,
)

__all__ = ["if_"]


def if_(test, true_fn: Callable, false_fn: Callable, values: tuple, site):
    """A converted ``if``: Python's ``if`` on a Python value, ``hd.cond`` on a symbolic one."""
    if not _symbolic(test):
        return (true_fn if test else false_fn)(*values)
    site = Site._make(site)
    pred = _truth(test, f"the condition of {_where(site)}")
    kind, names, live = site.kind, site.names, site.live
    if kind != "if":  # one result: the value returned, or the expression's value
        def one(fn):
            return lambda *vs: (fn(*vs),)

        true_fn, false_fn = one(true_fn), one(false_fn)
        names, live = ("<return>",), ("<return>",)
    label = f"{site.function}_if{site.line}"
    # Each branch is staged once, into a body of its own; what its variables become
    # (kept arrays, numbers to lift, static values) is decided from both branches'
    # results, and the coercions are then added to the branches that need them.
    staged = []
    for fn, side in ((true_fn, "true"), (false_fn, "false")):
        body = Body(f"{label}_{side}", (), tupled=True)
        staged.append((body, body.run(lambda fn=fn: tuple(fn(*values)))))
    (t_body, t_out), (f_body, f_out) = staged
    plans = [_merge(n, a, b, n in live, site) for n, a, b in zip(names, t_out, f_out)]
    kept = [i for i, p in enumerate(plans) if p[0] in ("keep", "coerce", "lift")]
    results = [p[1] if p[0] == "static" else Undefined(n) for n, p in zip(names, plans)]
    # An ordered effect in a branch: both take the program's token and return their last.
    token = ordered_token(current_builder()) if t_body.threads_token or f_body.threads_token \
        else None
    finished, tree = [], None
    for side, (body, out) in enumerate(staged):
        with body.within():
            leaves, tree = flatten_lifting(tuple(_apply(plans[i], side, out[i]) for i in kept))
        results_ = leaves if token is None else [*leaves, body.last_token(token)]
        finished.append(body.finish(results_, force_tuple=not leaves or token is not None))
    got = []
    if kept or any(c.has_side_effect for c in finished):  # else nothing to run
        got = _ops().Conditional(*finished)(pred, tuple(t_body.captured),
                                            tuple(f_body.captured))
        got = got if isinstance(got, tuple) else (got,)
        if token is not None:
            current_builder().token = got[-1]._node
            got = got[:-1]
    for i, v in zip(kept, unflatten(tree, got)):
        results[i] = v
    return tuple(results) if kind == "if" else results[0]


def _merge(name: str, a, b, live: bool, site):
    """How variable ``name`` leaves a symbolic if whose branches give it ``a`` and ``b``."""
    what = "the value returned" if name == "<return>" else f"variable '{name}'"
    if undefined(a) or undefined(b):
        if undefined(a) and undefined(b) or not live:
            return ("drop",)
        side = "false" if undefined(a) else "true"
        raise staging_error(
            f"{_where(site)}: {what} is assigned only in its {side} branch (and not before "
            f"the if), but it is used after the if. The condition is a symbolic array, so both "
            f"branches become one HLO conditional, which must give '{name}' a value either "
            "way: assign it before the if, or in both branches")
    if isinstance(a, Array) and isinstance(b, Array):
        if a.type == b.type:
            return ("keep",)
    elif isinstance(a, Array) and _is_host(b) and _fits(b, a.type):
        return ("coerce", 1, a.type)
    elif isinstance(b, Array) and _is_host(a) and _fits(a, b.type):
        return ("coerce", 0, b.type)
    elif _is_host(a) and _is_host(b):
        if _same_static(a, b) or isinstance(a, np.ndarray) and isinstance(b, np.ndarray) \
                and a.dtype == b.dtype and np.array_equal(a, b):
            return ("static", a)
        if np.shape(a) == np.shape(b):
            return ("lift", np.result_type(np.asarray(a), np.asarray(b)))
    elif not isinstance(a, Array) and not isinstance(b, Array):
        if _same_static(a, b) and not _has_arrays(a):
            return ("static", a)
        if _has_arrays(a) and _has_arrays(b):
            try:
                (la, ta), (lb, tb) = flatten(a), flatten(b)
            except TypeError:
                pass
            else:
                if ta == tb and [x.type for x in la] == [x.type for x in lb]:
                    return ("keep",)
    if not live:  # unused after the if: it may simply stay unbound
        return ("drop",)
    cls = ShapeError if isinstance(a, Array) or isinstance(b, Array) else StagingError
    raise cls(_located(
        f"{_where(site)}: {what} is {_show(a)} in the true branch but {_show(b)} in the "
        "false branch. The condition is a symbolic array, so both branches become one HLO "
        "conditional, which gives each variable one element type and shape (only arrays and "
        "numbers can differ between the branches)"))


def _apply(plan, side: int, v):
    if plan[0] == "coerce" and plan[1] == side:
        return _full(v, plan[2])
    if plan[0] == "lift":
        return Constant(np.asarray(v, plan[1]))()
    return v
