"""Reverse mode through ``scan`` (and ``fori_loop`` with static bounds).

A ``While`` has no reverse rule: its trip count is data. A scan's length is
static, so its pullback is another scan, run backwards: the forward scan also
stacks the carry each step started from, and step ``k`` of the backward scan
re-runs ``f`` on (carry_k, x_k) under a tape and pulls the carry's and the
output's cotangents back through it (``STATE.recomputing``: its debug prints and
result-less io_callbacks ran in the forward scan, and do not run again). The cotangents of the arrays ``f``
closes over (weights used in the body) are summed over the steps in the
backward scan's carry.

>>> import numpy as np, hlodsl as hd
>>> def power(x):              # x ** 5 by a loop of multiplications
...     return hd.fori_loop(0, 5, lambda i, y: y * x, hd.array(1.0))
>>> hd.grad(power)(hd.array(2.0))          # 5 x ** 4
hlodsl.Array[float64, ()](80.)
>>> hd.compile(hd.grad(power))(hd.array(2.0))
hlodsl.Array[float64, ()](80.)
"""

from __future__ import annotations

from typing import Callable

from hlodsl.ops._ad import zeros_like_array

from .traces import Paused, Tape, differentiable, fresh
from .structures import flatten_lifting, name_of
from hlodsl.ir.graph import current_builder
from hlodsl.context import STATE
from hlodsl.arrays.tree import flatten, unflatten

__all__ = ["scan_with_pullback"]


def scan_with_pullback(forward: Callable, capturing: Callable, f: Callable, init, xs, length,
                       reverse):
    """The scan of ``f``, its pullback recorded on the tapes that see its inputs.

    ``capturing(f, init, xs, length, reverse)`` runs a scan and also returns the
    outside arrays ``f`` used; ``forward`` runs one (eagerly or staged) for the
    pullback. ``None`` when no tape is active here (then the caller runs it).
    """
    builder = current_builder()
    tapes = [t for t in STATE.traces if isinstance(t, Tape) and t.active and t.builder is builder]
    if not tapes:
        return None
    c_leaves, c_tree = flatten_lifting(init)
    x_leaves, x_tree = flatten_lifting(xs)
    nc, nx = len(c_leaves), len(x_leaves)

    def f_saving(carry, x):  # also stack the carry each step starts from
        new, y = f(carry, x)
        return new, (y, carry)

    # One staging of f: the forward scan, which also says what f captures.
    with Paused(tapes):
        (final, (ys, carries)), captured = capturing(f_saving, unflatten(c_tree, c_leaves),
                                                     unflatten(x_tree, x_leaves), length,
                                                     reverse)
    args = tuple(c_leaves + x_leaves + list(captured))
    tapes = [t for t in tapes if t.sees(args)]
    if not tapes:
        return final, ys
    out_leaves = flatten((final, ys))[0]
    ny = len(out_leaves) - nc
    carries = flatten(carries)[0]
    fc = [i for i in range(nc) if differentiable(c_leaves[i])]
    fx = [i for i in range(nx) if differentiable(x_leaves[i])]
    fy = [j for j in range(ny) if differentiable(out_leaves[nc + j])]
    caps = [k for k, c in enumerate(captured) if differentiable(c)]

    def back(state, inp):
        ct_c, ct_caps = state
        carry_k, x_k, ct_y = inp
        with Tape() as tape:
            c_in, x_in = [fresh(a) for a in carry_k], [fresh(a) for a in x_k]
            for i in fc:
                tape.watch(c_in[i])
            for i in fx:
                tape.watch(x_in[i])
            for k in caps:  # f uses these very objects: the tape follows them
                tape.watch(captured[k])
            again, STATE.recomputing = STATE.recomputing, True  # its prints happened
            try:
                new, y = f(unflatten(c_tree, c_in), unflatten(x_tree, x_in))
            finally:
                STATE.recomputing = again
        outs = flatten((new, y))[0]
        cts = [None] * len(outs)
        for n, i in enumerate(fc):
            cts[i] = ct_c[n]
        for n, j in enumerate(fy):
            cts[nc + j] = ct_y[n]
        acc = tape.backward(outs, cts)

        def got(x):
            c = acc.get(id(x))
            return c if c is not None else zeros_like_array(x)

        from hlodsl import ops
        new_caps = [ops.Add()(prev, got(captured[k])) for prev, k in zip(ct_caps, caps)]
        return ([got(c_in[i]) for i in fc], new_caps), [got(x_in[i]) for i in fx]

    back.__qualname__ = f"{name_of(f)}_pullback"

    def rule(ct, _out):
        ct = list(ct)
        start = ([ct[i] for i in fc], [zeros_like_array(captured[k]) for k in caps])
        seq = ([carries[i] for i in range(nc)], list(x_leaves), [ct[nc + j] for j in fy])
        (ct_init, ct_caps), ct_xs = forward(back, start, seq, length, not reverse)
        result = [None] * len(args)
        for n, i in enumerate(fc):
            result[i] = ct_init[n]
        for n, i in enumerate(fx):
            result[nc + i] = ct_xs[n]
        for n, k in enumerate(caps):
            result[nc + nx + k] = ct_caps[n]
        return result

    for t in tapes:
        t.record(rule, args, tuple(out_leaves))
    return final, ys
