"""Small helpers the ops' derivative rules share (constants, sums over dimensions).

Rules live in each op's module (``@vjp_rule.dispatch``); these are the
building blocks they have in common, written with ops only. The ops are looked
up by opcode (``hlodsl.ir.op.op_class``), not imported: the op modules import this
one, so it sits below all of them.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from hlodsl.arrays.array import Array, array
from hlodsl.ir.op import op_class
from hlodsl.ir.rules import transformations

__all__ = ["full_like", "zeros_like_array", "sum_to", "add", "mul", "neg", "sub", "div",
           "sum_dims", "conj_if_complex", "inexact", "put", "vjp_through", "jvp_through"]


def zeros_like_array(x: Array) -> Array:
    """An array of zeros of ``x``'s type (eager or staged, wherever x lives)."""
    return full_like(x, 0)


def full_like(x: Array, value) -> Array:
    """``value`` in ``x``'s type, broadcast to ``x``'s shape (a constant when staged)."""
    scalar = array(np.asarray(value, x.dtype.np_dtype))
    return op_class("broadcast")(x.shape)(scalar) if x.shape else scalar


def add(a: Array, b: Array) -> Array:
    return op_class("add")()(a, b)


def sub(a: Array, b: Array) -> Array:
    return op_class("subtract")()(a, b)


def mul(a: Array, b: Array) -> Array:
    return op_class("multiply")()(a, b)


def div(a: Array, b: Array) -> Array:
    return op_class("divide")()(a, b)


def neg(a: Array) -> Array:
    return op_class("negate")()(a)


def _add_scalars(a, b):
    return op_class("add")()(a, b)


def sum_dims(x: Array, dims: tuple[int, ...]) -> Array:
    """Sum of ``x`` over ``dims`` (the transpose of a broadcast along them)."""
    if not dims:
        return x
    zero = array(np.zeros((), x.dtype.np_dtype))
    return op_class("reduce")(_add_scalars, tuple(sorted(dims)))(x, zero)


def sum_to(ct: Array, shape: tuple[int, ...]) -> Array:
    """Undo a numpy-style broadcast of ``shape`` to ``ct.shape``: sum, then reshape."""
    if ct.shape == tuple(shape):
        return ct
    lead = ct.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and ct.shape[lead + i] != 1)
    return op_class("reshape")(tuple(shape))(sum_dims(ct, dims))


def conj_if_complex(x: Array) -> Array:
    from hlodsl.arrays.dtypes import ComplexFloating
    if issubclass(x.dtype, ComplexFloating):
        real, imag = op_class("real")()(x), op_class("imag")()(x)
        return op_class("complex")()(real, neg(imag))
    return x


# -- differentiating a function with its integer arguments held fixed ----------
# (the rules of ops that hold functions: Call, Conditional, While, batch norm)

def inexact(x) -> bool:
    """Whether ``x`` has a floating or complex element type (it can carry a derivative)."""
    from hlodsl.arrays.dtypes import Inexact
    return issubclass(x.dtype, Inexact)


def put(args, positions, values) -> list:
    """A copy of ``args`` with ``args[positions[i]]`` replaced by ``values[i]``."""
    full = list(args)
    for i, v in zip(positions, values):
        full[i] = v
    return full


def vjp_through(fn: Callable, args, ct) -> list:
    """Cotangents of ``fn``'s arguments (None for integer ones) at ``args``, for ``ct``."""
    moving = [i for i, a in enumerate(args) if inexact(a)]
    cts: list = [None] * len(args)
    if moving:
        _, pullback = transformations.vjp(lambda *xs: fn(*put(args, moving, xs)),
                          *(args[i] for i in moving))
        for i, c in zip(moving, pullback(ct)):
            cts[i] = c
    return cts


def jvp_through(fn: Callable, args, tangents) -> tuple:
    """``(fn(*args), tangent of the result)``; a None tangent is zero, integers have none."""
    moving = [i for i, a in enumerate(args) if inexact(a)]
    ts = tuple(tangents[i] if tangents[i] is not None else zeros_like_array(args[i])
               for i in moving)
    return transformations.jvp(lambda *xs: fn(*put(args, moving, xs)),
               tuple(args[i] for i in moving), ts)

