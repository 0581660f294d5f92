"""User-defined derivatives: ``custom_vjp`` and ``custom_jvp``.

A function decorated with one of these runs its own body unless a derivative
transformation sees its arguments; then its given rule stands for the body.
Called while a body is staged that transformations may run again node by node
(a ``vmap``, a ``cond`` branch, a loop body), the call stays one node holding
its rules (``transforms/custom_calls.py``), so they apply there too.
"""

from __future__ import annotations

import functools
from typing import Callable

from hlodsl.arrays.array import Array
from hlodsl.context import STATE
from hlodsl.ir.graph import current_builder
from hlodsl.ops._ad import zeros_like_array
from hlodsl.arrays.tree import flatten, unflatten

from .custom_calls import Rules, staged_call
from .flow.conversion import convert
from .traces import JvpTrace, Paused, Tape, differentiable

__all__ = ["custom_vjp", "custom_jvp"]


class custom_vjp:
    """A function with a user-given reverse-mode derivative.

    ``fwd(*args) -> (out, residuals)`` runs instead of the function when a
    derivative is being taken; ``bwd(residuals, ct)`` returns one cotangent per
    positional argument (``None`` for zero). Forward mode differentiates the
    function's own body.

    >>> import numpy as np, hlodsl as hd
    >>> import hlodsl.stdlib as xp
    >>> @hd.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> def fwd(x):
    ...     return x, None
    >>> def bwd(res, ct):
    ...     return (xp.clip(ct, -1.0, 1.0),)
    >>> _ = clip_gradient.defvjp(fwd, bwd)
    >>> hd.grad(lambda x: xp.sum(clip_gradient(x) * 5.0))(hd.array([1.0, 2.0]))
    hlodsl.Array[float64, (2,)]([1., 1.])
    """

    def __init__(self, fun: Callable):
        # update_wrapper first: it copies a wrapped custom_vjp/custom_jvp's own
        # attributes (its fun among them) into ours, so that both can be stacked.
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = self.bwd = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> "custom_vjp":
        self.fwd, self.bwd = fwd, bwd
        return self

    def __call__(self, *args):
        if self.fwd is None:
            raise TypeError(f"custom_vjp {self.__name__!r}: call defvjp(fwd, bwd) first")
        leaves, tree = flatten(args)
        builder = current_builder()
        tapes = [t for t in STATE.traces if isinstance(t, Tape) and t.active
                 and t.builder is builder and t.sees(leaves)]
        if not tapes:
            out = _as_node(self, _VjpRules(self, tree), leaves, tree)
            return convert(self.fun)(*args) if out is None else out
        with Paused(tapes):
            out, residuals = convert(self.fwd)(*args)
        out_leaves, out_tree = flatten(out)

        def rule(ct, _out):
            return _cotangents(self, args, residuals, unflatten(out_tree, list(ct)))

        for t in tapes:
            t.record(rule, tuple(leaves), tuple(out_leaves))
        return out


def _cotangents(f: custom_vjp, args: tuple, residuals, ct) -> list:
    """``f.bwd``'s cotangents of ``args``, one per array leaf (None: zero)."""
    n_args = len(args)
    cts = convert(f.bwd)(residuals, ct)
    if not isinstance(cts, (tuple, list)) or len(cts) != n_args:
        raise TypeError(f"custom_vjp {f.__name__!r}: bwd must return a tuple of {n_args} "
                        f"cotangents (one per argument), got {cts!r}")
    flat = []
    for a, c in zip(args, cts):
        a_leaves, _ = flatten(a)
        if c is None:
            flat += [None] * len(a_leaves)
        else:
            flat += flatten(c)[0]
    return flat


def _as_node(f, rules: Rules, leaves: list, tree):
    """``f(*args)`` as one node of the body being staged, if one is (else None): a body
    that transformations may run again node by node, where ``f``'s rules must stay."""
    builder = current_builder()
    if builder is None or not builder.replayable or not leaves \
            or not all(isinstance(x, Array) for x in leaves):
        return None
    if any(t.active and t.builder is builder and t.sees(leaves) for t in STATE.traces):
        return None  # a derivative of this very call is being taken: the caller's path

    def fun(*xs):
        out_leaves, rules.out_tree = flatten(convert(f.fun)(*unflatten(tree, list(xs))))
        return tuple(out_leaves)

    outs = staged_call(f.__name__, fun, leaves, rules)
    return None if outs is None else unflatten(rules.out_tree, list(outs))


class _VjpRules(Rules):
    """A ``custom_vjp``'s rules over its flat arguments (forward: the body's own)."""

    def __init__(self, f: custom_vjp, tree):
        self.f, self.tree, self.name = f, tree, f.__name__

    def vjp(self, leaves: list, ct: list) -> list:
        # The rule's residuals are made again: fwd runs in the backward pass.
        args = unflatten(self.tree, leaves)
        _, residuals = convert(self.f.fwd)(*args)
        return _cotangents(self.f, args, residuals, unflatten(self.out_tree, ct))

    jvp = None


class _JvpRules(Rules):
    """A ``custom_jvp``'s rules over its flat arguments (reverse: the body's own)."""

    vjp = None

    def __init__(self, f: custom_jvp, tree):
        self.f, self.tree, self.name = f, tree, f.__name__

    def jvp(self, leaves: list, tangents: list):
        tangents = [t if t is not None else (zeros_like_array(x) if differentiable(x) else None)
                    for t, x in zip(tangents, leaves)]
        out, t_out = convert(self.f.jvp_fn)(unflatten(self.tree, leaves),
                                            unflatten(self.tree, tangents))
        out_leaves = flatten(out)[0]
        t_leaves = tangent_leaves(out, t_out)
        return out_leaves, [t if differentiable(o) else None for o, t in zip(out_leaves, t_leaves)]


def tangent_leaves(out, t_out) -> list:
    """``t_out`` (shaped as ``out``, None for a zero or absent tangent) as one entry per
    array leaf of ``out``."""
    if isinstance(out, (tuple, list)):
        t_out = [None] * len(out) if t_out is None else t_out
        return [t for o, t in zip(out, t_out) for t in tangent_leaves(o, t)]
    if isinstance(out, dict):
        return [t for k in out for t in tangent_leaves(out[k], None if t_out is None
                                                        else t_out[k])]
    leaves, _ = flatten(out)
    if len(leaves) == 1 and leaves[0] is out:
        return [t_out]
    return tangent_leaves_general(leaves, t_out)


def tangent_leaves_general(leaves: list, t_out) -> list:
    # Other structures (attrs classes): their tangents hold no None in place of an array.
    return flatten(t_out)[0] if t_out is not None else [None] * len(leaves)


class custom_jvp:
    """A function with a user-given forward-mode derivative.

    ``jvp_fn(primals, tangents) -> (out, tangent_out)``; reverse mode
    differentiates through what ``jvp_fn`` computes for the primal output.

    >>> import numpy as np, hlodsl as hd
    >>> import hlodsl.stdlib as xp
    >>> @hd.custom_jvp
    ... def f(x):
    ...     return xp.sin(x)
    >>> _ = f.defjvp(lambda p, t: (xp.sin(p[0]), 2.0 * t[0]))
    >>> hd.jvp(f, (hd.array(0.0),), (hd.array(1.0),))[1]
    hlodsl.Array[float64, ()](2.)
    """

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)  # first, as in custom_vjp
        self.fun = fun
        self.jvp_fn = None

    def defjvp(self, jvp_fn: Callable) -> "custom_jvp":
        self.jvp_fn = jvp_fn
        return self

    def __call__(self, *args):
        leaves, tree = flatten(args)
        builder = current_builder()
        traces = [t for t in STATE.traces if isinstance(t, JvpTrace) and t.active
                  and t.builder is builder and t.sees(leaves)]
        if not traces or self.jvp_fn is None:
            out = None if self.jvp_fn is None else _as_node(self, _JvpRules(self, tree),
                                                            leaves, tree)
            return convert(self.fun)(*args) if out is None else out
        # The innermost forward trace uses the rule; outer transformations (paused
        # ones aside) differentiate through what the rule computes.
        trace = traces[-1]
        tangents = [trace.tangent(x) for x in leaves]
        tangents = [t if t is not None else
                    (zeros_like_array(x) if differentiable(x) else None)
                    for t, x in zip(tangents, leaves)]
        with trace.paused():
            out, t_out = convert(self.jvp_fn)(args, unflatten(tree, tangents))
        out_leaves, _ = flatten(out)
        for o, t in zip(out_leaves, tangent_leaves(out, t_out)):
            trace.set(o, t)
        return out
