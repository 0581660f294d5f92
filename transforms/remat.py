"""Rematerialisation: ``remat`` (jax's ``checkpoint``) trades compute for memory under ``grad``.

Reverse mode keeps every intermediate a function computes until the backward
pass has used it. ``remat(f)`` keeps only ``f``'s inputs (and what ``policy``
says to save): ``f`` is staged once into a computation, run forward with the
tapes paused, and recorded on each tape as one step whose rule runs the
computation again, under a reverse-mode trace of its own, when the backward
pass reaches it. The recomputation's inputs pass through an
``ops.OptimizationBarrier`` together with the incoming cotangents, so XLA can
neither merge it with the forward pass (CSE) nor schedule it before the
backward pass needs it; the same barrier jax places.

Policies (``checkpoint_policies``) name the values worth saving instead of
recomputing; ``None`` saves nothing:

- ``nothing_saveable``: the same as ``None``;
- ``everything_saveable``: save everything (no recomputation: as without remat);
- ``dots_saveable`` (alias ``checkpoint_dots``): save the results of dots
  (``ops.Dot``), recompute the rest;
- ``dots_with_no_batch_dims_saveable``: the same, for dots without batch
  dimensions only;
- any function ``policy(op) -> bool`` of the op (``hd.ops.*`` instance).

Outside reverse mode (no ``grad``/``vjp`` sees the arguments) ``remat(f)`` is
``f``. Under forward mode it is ``f`` too. A saved value is used for a
first-order derivative; under a second derivative the step recomputes it
(values stay exact, only less is saved).

>>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
>>> block = hd.remat(lambda x: xp.sin(xp.sin(x)))
>>> x = hd.array(np.float32([0.5, 1.0]))
>>> hd.grad(lambda x: xp.sum(block(x)))(x)
hlodsl.Array[float32, (2,)]([0.7786439 , 0.36003947])
"""

from __future__ import annotations

import functools
from typing import Callable

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.context import STATE
from hlodsl.ir.graph import current_builder
from hlodsl.ir.interpret import apply_node, evaluate
from hlodsl.arrays.tree import flatten, unflatten

from .body import Body, ordered_token
from .flow import convert
from .structures import error, flatten_lifting, name_of
from .traces import Paused, Tape, alias, differentiable, fresh

__all__ = ["remat", "checkpoint", "checkpoint_policies"]


class checkpoint_policies:
    """What ``remat`` saves for the backward pass instead of recomputing (jax's names).

    Each is a function of an op (an ``hd.ops`` instance) that says whether its
    result is saved.
    """

    @staticmethod
    def nothing_saveable(op) -> bool:
        return False

    @staticmethod
    def everything_saveable(op) -> bool:
        return True

    @staticmethod
    def dots_saveable(op) -> bool:
        return isinstance(op, ops.Dot)

    checkpoint_dots = dots_saveable

    @staticmethod
    def dots_with_no_batch_dims_saveable(op) -> bool:
        return isinstance(op, ops.Dot) and not op.lhs_batch


def remat(f: Callable, policy: Callable | None = None, *, prevent_cse: bool = True,
          static_argnums: tuple[int, ...] = ()):
    """``f``, whose intermediates ``grad`` recomputes in the backward pass instead of keeping.

    Args:
        f: a function of arrays (and structures of them; other values are
            static) returning arrays or structures of them.
        policy: which results to save rather than recompute: None (nothing),
            one of ``checkpoint_policies``, or a function ``op -> bool``.
        prevent_cse: place the optimization barrier (keep it True unless the
            recomputation sits inside a loop body, which XLA does not merge).
        static_argnums: accepted for jax's signature; non-array arguments are
            always static here.

    Returns:
        A function with ``f``'s signature and values.

    >>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
    >>> layer = hd.checkpoint(lambda W, x: xp.tanh(W @ x),
    ...                       policy=hd.checkpoint_policies.dots_saveable)
    >>> W = hd.array(np.eye(2, dtype=np.float32))
    >>> hd.grad(lambda W: xp.sum(layer(W, hd.array(np.float32([1, 0])))))(W)
    hlodsl.Array[float32, (2, 2)](
      [[0.41997433, 0.        ],
       [1.        , 0.        ]])
    """
    if not callable(f):
        raise error(TypeError, f"remat: f must be a function, got {type(f).__name__}")
    if policy is not None and not callable(policy):
        raise error(TypeError, f"remat: policy must be None or a function of an op (one of "
                               f"hd.checkpoint_policies), got {policy!r}")
    saveable = policy or checkpoint_policies.nothing_saveable
    converted = convert(f)

    @functools.wraps(f)
    def rematerialised(*args, **kwargs):
        builder = current_builder()
        if not any(isinstance(t, Tape) and t.active and t.builder is builder
                   for t in STATE.traces):
            return converted(*args, **kwargs)  # no reverse mode here: nothing to keep
        return _remat_call(converted, name_of(f), saveable, prevent_cse, args, kwargs)

    return rematerialised


checkpoint = remat


def _remat_call(f, name, saveable, prevent_cse, args, kwargs):
    leaves, tree = flatten((args, kwargs))
    body = Body(f"remat_{name}", tuple(x.type for x in leaves), tupled=False)

    def staged(*xs):
        a, k = unflatten(tree, list(xs))
        return flatten_lifting(f(*a, **k))

    out_leaves, out_tree = body.run(staged)
    for x in out_leaves:
        if not isinstance(x, Array):
            raise error(TypeError, f"remat of {name}: f returned a {type(x).__name__}; it must "
                                   "return arrays (or structures of them)")
    builder = current_builder()
    # An ordered effect in f (hd.debug_print): the step takes the program's token and
    # hands its last one on, as the control-flow combinators do.
    token = ordered_token(builder) if body.threads_token else None
    comp = body.finish(out_leaves if token is None else [*out_leaves, body.last_token(token)],
                       force_tuple=True)
    inputs = [*leaves, *body.captured]

    def results(outs):
        if token is not None:
            builder.token = outs[-1]._node
        return unflatten(out_tree, outs[:len(out_leaves)])

    tapes = [t for t in STATE.traces if isinstance(t, Tape) and t.active
             and t.builder is builder and t.sees(inputs)]
    if not tapes:
        return results(list(evaluate(comp, inputs, apply_node)))
    saved: dict[int, object] = {}

    def forward(node, values):
        out = apply_node(node, values)
        if not isinstance(out, tuple) and node.op is not None and _saveable(saveable, node):
            saved[id(node)] = out
        return out

    with Paused(tapes):
        outs = list(evaluate(comp, inputs, forward))
    saved_nodes = list(saved)

    def rule(ct, _out):
        return _recompute(comp, inputs, saved_nodes, [saved[i] for i in saved_nodes],
                          list(ct), prevent_cse)

    for t in tapes:
        t.record(rule, tuple(inputs), tuple(outs[:len(out_leaves)]))
    return results(outs)


def _saveable(saveable, node) -> bool:
    from hlodsl.ir.structural import Constant, GetTupleElement, Parameter, Tuple

    if isinstance(node.op, (Parameter, Tuple, GetTupleElement, Constant)):
        return False
    return bool(saveable(node.op))


def _recompute(comp, inputs, saved_nodes, saved_values, cts, prevent_cse):
    """The step's rule: the computation run again from its inputs (and the saved values),
    differentiated in reverse mode, at the cotangents ``cts``."""
    n, m = len(inputs), len(saved_values)
    if prevent_cse:
        barred = list(ops.OptimizationBarrier()(*inputs, *saved_values, *cts))
        xs, kept, cts = barred[:n], barred[n:n + m], barred[n + m:]
    else:
        xs, kept = list(inputs), list(saved_values)
    builder = current_builder()
    # Under a second derivative a saved value would be a constant to the outer tapes
    # (it was computed with them paused): recompute everything there instead.
    higher = any(t.active and t.builder is builder for t in STATE.traces)
    reuse = saved_nodes if not higher else []

    def backward(xs, kept, cts):
        return _backward(comp, xs, dict(zip(reuse, kept)), cts)

    probe = next((c for c in cts if differentiable(c)), None)
    if not prevent_cse or builder is None or probe is None:
        return backward(xs, kept, cts)
    # XLA:CPU expands optimization barriers before its CSE pass (cse_barrier_expander),
    # which then merges the recomputation into the forward pass (jax.checkpoint is undone
    # the same way there). A branch is a computation of its own, which CSE never merges
    # across: both branches are the recomputation, chosen by a predicate XLA cannot fold
    # (c == c on a float; false only for NaN, where the other branch is the same).
    from .control import cond

    first = ops.Reshape(())(ops.Slice((0,) * probe.ndim, (1,) * probe.ndim)(probe)) \
        if probe.size else None
    if first is None:
        return backward(xs, kept, cts)
    pred = ops.Compare("EQ")(first, first)
    shapes = [x for x in xs]
    arrays = [i for i, x in enumerate(xs) if isinstance(x, Array)]  # not a token f took

    def branch(xs, kept, cts):
        out = backward(list(xs), list(kept), list(cts))
        return tuple(out[i] if out[i] is not None else _zeros(shapes[i]) for i in arrays)

    got = cond(pred, branch, branch, tuple(xs), tuple(kept), tuple(cts))
    result = [None] * len(xs)
    for i, g in zip(arrays, got):
        result[i] = g if differentiable(xs[i]) else None
    return result


def _zeros(x):
    from hlodsl.ops._ad import zeros_like_array

    return zeros_like_array(x)


def _backward(comp, xs, reuse, cts):
    """Reverse mode through ``comp`` at ``xs`` (nodes in ``reuse`` take the saved values)."""
    with Tape() as tape:
        xs = [alias(x) if differentiable(x) else x for x in xs]
        for x in xs:
            if differentiable(x):
                tape.watch(x)

        def again(node, values):
            hit = reuse.get(id(node))
            if hit is None:
                return apply_node(node, values)
            out = fresh(hit) if hit._buf is not None else hit
            if tape.sees(values):  # the op's own rule, with the recomputed operands
                tape.record_op(node.op, tuple(values), out)
            return out

        again_, STATE.recomputing = STATE.recomputing, True  # f's prints ran forward
        try:
            outs = list(evaluate(comp, xs, again))
        finally:
            STATE.recomputing = again_
    acc = tape.backward(outs, cts)
    return [acc.get(id(x)) if differentiable(x) else None for x in xs]
