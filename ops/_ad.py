"""Small helpers the ops' derivative rules share (constants, sums over dimensions).

Rules live in each op's module (``@vjp_rule.dispatch``); these are the
building blocks they have in common, written with ops only.
"""

from __future__ import annotations

import numpy as np

from hlodsl.array import Array, array
from hlodsl.autodiff import zeros_like_array

__all__ = ["full_like", "zeros_like_array", "sum_to", "add", "mul", "neg", "sub", "div",
           "sum_dims", "conj_if_complex"]


def full_like(x: Array, value) -> Array:
    """``value`` in ``x``'s type, broadcast to ``x``'s shape (a constant when staged)."""
    from .broadcast import Broadcast

    scalar = array(np.asarray(value, x.dtype.np_dtype))
    return Broadcast(x.shape)(scalar) if x.shape else scalar


def add(a: Array, b: Array) -> Array:
    from .binary import Add
    return Add()(a, b)


def sub(a: Array, b: Array) -> Array:
    from .binary import Subtract
    return Subtract()(a, b)


def mul(a: Array, b: Array) -> Array:
    from .binary import Multiply
    return Multiply()(a, b)


def div(a: Array, b: Array) -> Array:
    from .binary import Divide
    return Divide()(a, b)


def neg(a: Array) -> Array:
    from .unary import Negate
    return Negate()(a)


def _add_scalars(a, b):
    from .binary import Add
    return Add()(a, b)


def sum_dims(x: Array, dims: tuple[int, ...]) -> Array:
    """Sum of ``x`` over ``dims`` (the transpose of a broadcast along them)."""
    if not dims:
        return x
    from .reduce import Reduce

    zero = array(np.zeros((), x.dtype.np_dtype))
    return Reduce(_add_scalars, tuple(sorted(dims)))(x, zero)


def sum_to(ct: Array, shape: tuple[int, ...]) -> Array:
    """Undo a numpy-style broadcast of ``shape`` to ``ct.shape``: sum, then reshape."""
    if ct.shape == tuple(shape):
        return ct
    from .reshape import Reshape

    lead = ct.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and ct.shape[lead + i] != 1)
    return Reshape(tuple(shape))(sum_dims(ct, dims))


def conj_if_complex(x: Array) -> Array:
    from hlodsl.dtypes import ComplexFloating
    if issubclass(x.dtype, ComplexFloating):
        from .complex_parts import Complex, Imag, Real
        return Complex()(Real()(x), neg(Imag()(x)))
    return x
