"""``mapreduce`` (the paper's section 5) and the reductions built on it.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import mapreduce, sum, exp, add
>>> x = hd.array(np.float32([[1, 2], [3, 4]]))
>>> sum(x), sum(x, axis=0)
(hlodsl.Array[float32, ()](10.), hlodsl.Array[float32, (2,)]([4., 6.]))
>>> mapreduce(lambda v: v * v, add, x)
hlodsl.Array[float32, ()](30.)
"""

from __future__ import annotations

import numpy as np

from hlodsl import ops
from hlodsl.array import Array
from hlodsl.dispatcher import dispatch
from hlodsl.dtypes import (
    Bool, Floating, Inexact, Integer, UnsignedInteger, element_type, float64, int64, uint64,
)

from .broadcasting import ELEMENTWISE
from .elementwise import add, divide, maximum, minimum, multiply
from .promotion import lift

__all__ = ["mapreduce", "sum", "prod", "max", "min", "mean", "normalize_axes"]


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """``None`` (all), an int or a tuple of ints (negative allowed) to sorted axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for an array of rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis}")
    return tuple(sorted(out))


def _identity(op, dtype):
    """The neutral element of a known reduction (the paper's mapreduce_empty)."""
    np_dt = dtype.np_dtype
    if op is add:
        return np.zeros((), np_dt)
    if op is multiply:
        return np.ones((), np_dt)
    if op is maximum or op is minimum:
        big = op is minimum
        if issubclass(dtype, Floating):
            return np.asarray(np.inf if big else -np.inf, np_dt)
        if issubclass(dtype, Bool):
            return np.asarray(big, np_dt)
        info = np.iinfo(np_dt)
        return np.asarray(info.max if big else info.min, np_dt)
    return None


@dispatch
def mapreduce(f, op, A: Array, axis=None, init=None, keepdims: bool = False):
    """Reduce ``f`` applied to each element of ``A`` with the binary ``op``.

    ``f`` is ``None`` (identity), a stdlib elementwise function (applied as
    is), or any Python callable on scalars (staged into an HLO ``map``).
    ``op`` is staged into the reduce computation; ``init`` defaults to its
    identity for add, multiply, maximum and minimum, and is required otherwise.
    """
    axes = normalize_axes(axis, A.ndim)
    if f is not None:
        A = f(A) if f in ELEMENTWISE else ops.Map(f)(A)
    if init is None:
        init = _identity(op, A.dtype)
        if init is None:
            raise TypeError(f"mapreduce: {getattr(op, '__name__', op)!r} has no known identity; "
                            "pass init=")
    out = ops.Reduce(op, axes)(A, lift(init, A.dtype))
    if keepdims:
        out = ops.Reshape(tuple(1 if d in axes else s for d, s in enumerate(A.shape)))(out)
    return out


def _accumulator(dtype):
    # The array API sums small integers in the default integer type, as numpy does.
    if issubclass(dtype, (Bool,)) or (issubclass(dtype, Integer) and dtype.np_dtype.itemsize < 8):
        return uint64 if issubclass(dtype, UnsignedInteger) else int64
    return dtype


@dispatch
def sum(x: Array, axis=None, dtype=None, keepdims: bool = False):
    """Sum over ``axis`` (all by default), in ``dtype`` if given.

    Without ``dtype``, bools and integers narrower than 64 bits sum in int64
    (uint64 for unsigned), as the array API asks; other types keep their own.
    """
    x = lift(x, _accumulator(x.dtype) if dtype is None else element_type(dtype))
    return mapreduce(None, add, x, axis=axis, keepdims=keepdims)


@dispatch
def prod(x: Array, axis=None, dtype=None, keepdims: bool = False):
    """Product over ``axis`` (all by default), in ``dtype`` if given (defaults as ``sum``)."""
    x = lift(x, _accumulator(x.dtype) if dtype is None else element_type(dtype))
    return mapreduce(None, multiply, x, axis=axis, keepdims=keepdims)


@dispatch
def max(x: Array, axis=None, keepdims: bool = False):
    """Maximum over ``axis``; NaN propagates."""
    return mapreduce(None, maximum, x, axis=axis, keepdims=keepdims)


@dispatch
def min(x: Array, axis=None, keepdims: bool = False):
    """Minimum over ``axis``; NaN propagates."""
    return mapreduce(None, minimum, x, axis=axis, keepdims=keepdims)


@dispatch
def mean(x: Array, axis=None, keepdims: bool = False):
    """Arithmetic mean over ``axis`` (integer input gives float64)."""
    if not issubclass(x.dtype, Inexact):
        x = lift(x, float64)
    axes = normalize_axes(axis, x.ndim)
    count = int(np.prod([x.shape[a] for a in axes]))
    return divide(sum(x, axis=axes, keepdims=keepdims), count)
