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
from hlodsl.arrays.array import Array
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import (
    Bool, ComplexFloating, Floating, Inexact, Integer, UnsignedInteger, float64,
    int64, uint64,
)

from .broadcasting import ELEMENTWISE
from .elementwise import add, divide, maximum, minimum, multiply
from .manipulation import as_dtype, as_ints
from .promotion import lift

__all__ = ["mapreduce", "sum", "prod", "max", "min", "mean", "normalize_axes"]


def normalize_axes(axis, ndim: int, what: str = "mapreduce") -> tuple[int, ...]:
    """``None`` (all), an int or a tuple of ints (negative allowed) to sorted axes.

    Errors name ``what``; an out-of-range axis is numpy's ``AxisError``, both
    the IndexError and the ValueError callers may expect.
    """
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, (tuple, list, str)) and hasattr(axis, "__len__"):
        axis = tuple(axis)  # a range or a numpy array of axes
    out = []
    for a in as_ints(axis, what, "axis"):
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(
                f"{what}: axis {a} is out of range for an array of rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: repeated axis in {axis}")
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
        if not issubclass(dtype, Integer):
            return None  # complex numbers: no order, no identity
        info = np.iinfo(np_dt)
        return np.asarray(info.max if big else info.min, np_dt)
    return None


def _is_value(init, value: np.ndarray) -> bool:
    """Whether ``init`` (a scalar, numpy value or array) is known to equal ``value``."""
    if isinstance(init, Array):
        if init.is_symbolic:
            return False
        init = np.asarray(init)
    try:
        init = np.asarray(init, value.dtype)
    except (TypeError, ValueError):
        return False
    if value.dtype.kind == "V":  # bfloat16: compare as float64
        init, value = init.astype(np.float64), value.astype(np.float64)
    return init.shape == () and bool(init == value)


@dispatch
def mapreduce(f, op, A: Array, axis=None, init=None, keepdims: bool = False):
    """Reduce ``f`` applied to each element of ``A`` with the binary ``op``.

    ``f`` is ``None`` (identity), a stdlib elementwise function (applied as
    is), or any Python callable on scalars (staged into an HLO ``map``).
    ``op`` is staged into the reduce computation. For add, multiply, maximum
    and minimum the reduction starts from ``op``'s identity and a given
    ``init`` is combined once, outside it (``op(reduction, init)``): XLA's
    reduce requires its initial value to be the identity. For any other
    ``op``, ``init`` is required and must be ``op``'s identity (XLA may apply
    it any number of times; the result is implementation-defined otherwise).
    """
    axes = normalize_axes(axis, A.ndim)
    if f is not None:
        A = f(A) if f in ELEMENTWISE else ops.Map(f)(A)
    identity = _identity(op, A.dtype)
    if identity is None and init is None:
        raise TypeError(f"mapreduce: {getattr(op, '__name__', op)!r} has no known identity; "
                        "pass init=")
    start = init if identity is None else identity
    out = ops.Reduce(op, axes)(A, lift(start, A.dtype))
    if identity is not None and init is not None and not _is_value(init, identity):
        out = op(out, lift(init, A.dtype))
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
    normalize_axes(axis, x.ndim, "sum")  # errors name sum, not mapreduce
    x = lift(x, _accumulator(x.dtype) if dtype is None else as_dtype(dtype, "sum"))
    return mapreduce(None, add, x, axis=axis, keepdims=keepdims)


@dispatch
def prod(x: Array, axis=None, dtype=None, keepdims: bool = False):
    """Product over ``axis`` (all by default), in ``dtype`` if given (defaults as ``sum``)."""
    normalize_axes(axis, x.ndim, "prod")
    x = lift(x, _accumulator(x.dtype) if dtype is None else as_dtype(dtype, "prod"))
    return mapreduce(None, multiply, x, axis=axis, keepdims=keepdims)


def _check_extremum(x: Array, axis, what: str) -> None:
    """TypeError for complex ``x``; ValueError, as numpy's, for a reduced axis of size 0."""
    if issubclass(x.dtype, ComplexFloating):
        raise TypeError(f"{what}: complex {x.type} has no order (the array API leaves {what} "
                        "of complex numbers unspecified); reduce real(x) or abs(x)")
    empty = [a for a in normalize_axes(axis, x.ndim, what) if x.shape[a] == 0]
    if empty:
        name = {"max": "maximum", "min": "minimum"}[what]
        raise ValueError(f"{what}: zero-size array to reduction operation {name} which has "
                         f"no identity (axis {empty[0]} of {x.type} has size 0; axis={axis})")


@dispatch
def max(x: Array, axis=None, keepdims: bool = False):
    """Maximum over ``axis``; NaN propagates.

    As numpy's, a reduction over an axis of size 0 raises ValueError (a maximum
    has no identity for the empty case to return; shapes are static, so this is
    known at the call, eagerly and staged).
    """
    _check_extremum(x, axis, "max")
    return mapreduce(None, maximum, x, axis=axis, keepdims=keepdims)


@dispatch
def min(x: Array, axis=None, keepdims: bool = False):
    """Minimum over ``axis``; NaN propagates. Axes of size 0 raise ValueError (see ``max``)."""
    _check_extremum(x, axis, "min")
    return mapreduce(None, minimum, x, axis=axis, keepdims=keepdims)


@dispatch
def mean(x: Array, axis=None, keepdims: bool = False):
    """Arithmetic mean over ``axis`` (integer input gives float64)."""
    if not issubclass(x.dtype, Inexact):
        x = lift(x, float64)
    axes = normalize_axes(axis, x.ndim, "mean")
    count = int(np.prod([x.shape[a] for a in axes]))
    return divide(sum(x, axis=axes, keepdims=keepdims), count)
