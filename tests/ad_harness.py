"""What the derivative-rule tests share: an op's pullback and tangent, eager and compiled.

``pullback(op, diff_pos, pick, args, ct)`` is ``hd.vjp`` of ``op(*args)``
with respect to the arguments at ``diff_pos`` (result ``pick`` of a
multi-result op); ``tangent`` is the matching ``hd.jvp``. ``PULLBACK`` and
``TANGENT`` are the same functions under ``hd.compile`` (the op and its static
layout are static arguments: one module per signature).
"""

from __future__ import annotations

import numpy as np

import hlodsl as hd
from hlodsl import ops


def apply_op(op, diff_pos, pick, args, diff):
    """``op(*args)`` with ``args[diff_pos[i]]`` replaced by ``diff[i]``; result ``pick``."""
    full = list(args)
    for i, v in zip(diff_pos, diff):
        full[i] = v
    out = op(*full)
    return out if pick is None else out[pick]


def pullback(op, diff_pos, pick, args, ct):
    diff = [args[i] for i in diff_pos]
    return hd.vjp(lambda *d: apply_op(op, diff_pos, pick, args, d), *diff)[1](ct)


def tangent(op, diff_pos, pick, args, tangents):
    diff = tuple(args[i] for i in diff_pos)
    return hd.jvp(lambda *d: apply_op(op, diff_pos, pick, args, d), diff, tuple(tangents))[1]


PULLBACK = hd.compile(pullback)
TANGENT = hd.compile(tangent)


def random_array(rng, shape, dtype):
    """Standard normal values (real and imaginary parts for complex dtypes); -3..3 for ints."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(-3, 4, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# Scalar computations for Reduce / ReduceWindow / Scatter (module-level: staged once).

def add(a, b):
    return ops.Add()(a, b)


def maximum(a, b):
    return ops.Maximum()(a, b)


def minimum(a, b):
    return ops.Minimum()(a, b)


def multiply(a, b):
    return ops.Multiply()(a, b)
