"""User-defined derivatives: ``custom_vjp`` and ``custom_jvp``.

A function decorated with one of these runs its own body unless a derivative
transformation sees its arguments; then its given rule stands for the body.
"""

from __future__ import annotations

import functools
from typing import Callable

from hlodsl.context import STATE
from hlodsl.ir.graph import current_builder
from hlodsl.ops._ad import zeros_like_array
from hlodsl.arrays.tree import flatten, unflatten

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
            return convert(self.fun)(*args)
        with Paused(tapes):
            out, residuals = convert(self.fwd)(*args)
        out_leaves, out_tree = flatten(out)
        n_args = len(args)
        bwd, name = convert(self.bwd), self.__name__

        def rule(ct, _out):
            cts = bwd(residuals, unflatten(out_tree, list(ct)))
            if not isinstance(cts, (tuple, list)) or len(cts) != n_args:
                raise TypeError(f"custom_vjp {name!r}: bwd must return a tuple of {n_args} "
                                f"cotangents (one per argument), got {cts!r}")
            flat = []
            for a, c in zip(args, cts):
                a_leaves, _ = flatten(a)
                if c is None:
                    flat += [None] * len(a_leaves)
                else:
                    flat += flatten(c)[0]
            return flat

        for t in tapes:
            t.record(rule, tuple(leaves), tuple(out_leaves))
        return out


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
            return convert(self.fun)(*args)
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
        for o, t in zip(out_leaves, flatten(t_out)[0]):
            trace.set(o, t)
        return out
