"""Small helpers on stacks of vectors and matrices, shared by the linalg modules.

Every function takes and returns arrays whose leading dimensions are batch
dimensions; none checks its arguments (their callers have).

>>> import numpy as np, hlodsl as hd
>>> mm(identity(2, hd.float64, (3,)), hd.array(np.ones((3, 2, 1)))).shape
(3, 2, 1)
"""

from __future__ import annotations

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import ComplexFloating, int32

from .broadcasting import broadcast_to
from .elementwise_more import conj, hypot
from .promotion import lift

__all__ = ["filled", "spread", "magnitude", "sum_exact", "identity", "triangle_mask", "mt",
           "adjoint", "mm", "main_diagonal"]


def filled(value, dtype, shape) -> Array:
    """``value`` of element type ``dtype`` broadcast to ``shape``."""
    return ops.Broadcast(shape)(lift(value, dtype))


def spread(x: Array, shape, at) -> Array:
    """``x`` (leading batch dims, then the dims ``at`` of ``shape``) broadcast to ``shape``."""
    nb = x.ndim - len(at)
    return ops.Broadcast(shape, tuple(range(nb)) + tuple(at))(x)


def magnitude(x: Array) -> Array:
    """``|x|`` in the real element type (complex: ``hypot(re, im)``)."""
    if issubclass(x.dtype, ComplexFloating):
        return hypot(ops.Real()(x), ops.Imag()(x))
    return ops.Abs()(x)


def _add(a, b):
    return ops.Add()(a, b)


def sum_exact(x: Array, axis: int) -> Array:
    """Sum over one axis in ``x``'s own element type (no integer widening)."""
    return ops.Reduce(_add, (axis % x.ndim,))(x, lift(0, x.dtype))


def identity(n: int, dtype, batch=()) -> Array:
    """Identity matrices ``batch + (n, n)`` of element type ``dtype``."""
    rows, cols = ops.Iota(int32, (n, n), 0)(), ops.Iota(int32, (n, n), 1)()
    eye = lift(ops.Compare("EQ")(rows, cols), dtype)
    return broadcast_to(eye, batch + (n, n))


def triangle_mask(shape, lower: bool) -> Array:
    n = len(shape)
    rows, cols = ops.Iota(int32, shape, n - 2)(), ops.Iota(int32, shape, n - 1)()
    return ops.Compare("GE" if lower else "LE")(rows, cols)


def mt(x: Array) -> Array:
    """Swap the last two dimensions (the matrix transposes of a stack)."""
    n = x.ndim
    return ops.Transpose(tuple(range(n - 2)) + (n - 1, n - 2))(x)


def adjoint(x: Array) -> Array:
    """The conjugate transposes of a stack of matrices (the transposes, for real ones)."""
    return conj(mt(x))


def mm(a: Array, b: Array) -> Array:
    """Batched matrix product of two stacks with the same batch dimensions."""
    nb = a.ndim - 2
    batch = tuple(range(nb))
    return ops.Dot(lhs_contracting=(nb + 1,), rhs_contracting=(nb,), lhs_batch=batch,
                   rhs_batch=batch)(a, b)


def main_diagonal(x: Array) -> Array:
    """``(..., M, M) -> (..., M)``: a strided slice of the flattened matrices."""
    batch, m = x.shape[:-2], x.shape[-1]
    flat = ops.Reshape(batch + (m * m,))(x)
    nb = len(batch)
    return ops.Slice((0,) * (nb + 1), batch + (m * m,), (1,) * nb + (m + 1,))(flat)
