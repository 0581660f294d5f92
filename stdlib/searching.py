"""Searching and sorting functions of the array API standard.

Orders follow numpy: floats sort with NaN last (NaNs equivalent to one
another, ``-0.0`` equivalent to ``0.0``), ``argmax``/``argmin`` return the
first occurrence of the extreme value and a NaN beats every number. Indices
are int64, the array API's default index type. Everything stages inside
``hlodsl.compile`` except ``nonzero`` without ``size=``, whose result shape
depends on the data.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib.searching import argmax, sort, searchsorted
>>> x = hd.array(np.float32([3, np.nan, 1, 2]))
>>> sort(x)
hlodsl.Array[float32, (4,)]([ 1.,  2.,  3., nan])
>>> argmax(x)
hlodsl.Array[int64, ()](1)
>>> searchsorted(hd.array(np.int32([1, 3, 5])), hd.array(np.int32([0, 3, 6])))
hlodsl.Array[int64, (3,)]([0, 1, 3])
"""

from __future__ import annotations

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array, array, is_symbolic
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import Bool, Floating, Integer, int64, pred
from hlodsl.errors import ShapeError, staging_error

from .indexing import getitem
from .manipulation import as_int, fail, moveaxis, normalize_axes, normalize_axis
from .promotion import ArrayLike, lift, promote, truth
from .reductions import sum
from .statistics import cumulative_sum

__all__ = [
    "argmax", "argmin", "sort", "argsort", "top_k", "searchsorted", "count_nonzero", "nonzero",
]

_INDEX_MAX = np.iinfo(np.int64).max


# -- the element orders, as Python functions on (scalar or whole) arrays ------------
# NOTE: these are module-level functions rather than closures: Sort and Reduce
# compare their computations by identity, so a fresh closure per call would miss
# the eager compile cache every time.

def _isnan(a):
    return ops.Compare("NE")(a, a)


def _less_float(a, b):
    """numpy's float order: a < b, or b is NaN and a is not (NaN last, -0.0 == 0.0)."""
    # NOTE: not TOTALORDER, which puts negative NaNs first and -0.0 before 0.0:
    # numpy's stable sort keeps both kinds of tie in their original order.
    return ops.Or()(ops.Compare("LT")(a, b), ops.And()(_isnan(b), ops.Not()(_isnan(a))))


def _less_exact(a, b):
    return ops.Compare("LT")(a, b)


def _greater_float(a, b):
    return _less_float(b, a)


def _greater_exact(a, b):
    return ops.Compare("LT")(b, a)


def _by_key_less_float(a, b, i, j):
    return _less_float(a, b)


def _by_key_less_exact(a, b, i, j):
    return _less_exact(a, b)


def _by_key_greater_float(a, b, i, j):
    return _less_float(b, a)


def _by_key_greater_exact(a, b, i, j):
    return _less_exact(b, a)


def _arg_best(beats):
    """The Reduce computation keeping the (value, index) pair that ``beats``, first on ties."""
    def combine(av, ai, bv, bi):
        a_nan, b_nan = _isnan(av), _isnan(bv)
        wins = ops.Or()(beats(av, bv), ops.And()(a_nan, ops.Not()(b_nan)))
        tie = ops.Or()(ops.Compare("EQ")(av, bv), ops.And()(a_nan, b_nan))
        take_a = ops.Or()(wins, ops.And()(tie, ops.Compare("LT")(ai, bi)))
        return ops.Select()(take_a, av, bv), ops.Select()(take_a, ai, bi)

    return combine


_ARGMAX = _arg_best(ops.Compare("GT"))
_ARGMIN = _arg_best(ops.Compare("LT"))


def _real(x: Array, what: str) -> None:
    if not issubclass(x.dtype, (Integer, Floating, Bool)):
        raise fail(TypeError, f"{what}: needs a real-valued array (integer, floating or bool), "
                              f"got {x.type}")


def _less(dtype):
    return _less_float if issubclass(dtype, Floating) else _less_exact


# -- argmax and argmin --------------------------------------------------------------

def _arg_reduce(x: Array, axis, keepdims: bool, combine, worst, what: str):
    _real(x, what)
    if axis is None:
        out_shape = (1,) * x.ndim
        x = ops.Reshape((x.size,))(x)
        axis = 0
    else:
        axis = normalize_axis(axis, x.ndim, what)
        out_shape = tuple(1 if d == axis else s for d, s in enumerate(x.shape))
    if x.shape[axis] == 0:
        raise fail(ValueError, f"{what}: attempt to take {what} of an empty sequence "
                               f"(axis {axis} of {x.type} has size 0; {what} needs at least "
                               "one element, as numpy's)")
    index = ops.Iota(int64, x.shape, axis)()
    init = lift(worst(x.dtype), x.dtype)
    _, out = ops.Reduce(combine, (axis,))(x, index, init, lift(_INDEX_MAX, int64))
    return ops.Reshape(out_shape)(out) if keepdims else out


def _lowest(dtype):
    if issubclass(dtype, Floating):
        return -np.inf
    return False if dtype is pred else np.iinfo(dtype.np_dtype).min


def _highest(dtype):
    if issubclass(dtype, Floating):
        return np.inf
    return True if dtype is pred else np.iinfo(dtype.np_dtype).max


@dispatch
def argmax(x: Array, axis=None, keepdims: bool = False):
    """Index of the maximum along ``axis`` (``None``: of the flattened array).

    The first occurrence wins ties, and a NaN beats every number, as in numpy.
    The result (int64) has ``x``'s shape without ``axis`` (with it, as size 1,
    for ``keepdims=True``).

    >>> import numpy as np, hlodsl as hd
    >>> argmax(hd.array(np.int32([[1, 5, 5], [7, 0, 7]])), axis=1)
    hlodsl.Array[int64, (2,)]([1, 0])
    """
    return _arg_reduce(x, axis, keepdims, _ARGMAX, _lowest, "argmax")


@dispatch
def argmin(x: Array, axis=None, keepdims: bool = False):
    """Index of the minimum along ``axis``; as ``argmax``, first occurrence, NaN wins.

    >>> import numpy as np, hlodsl as hd
    >>> argmin(hd.array(np.float32([2, 1, np.nan, 1])))
    hlodsl.Array[int64, ()](2)
    """
    return _arg_reduce(x, axis, keepdims, _ARGMIN, _highest, "argmin")


# -- sort, argsort and top_k ----------------------------------------------------------

@dispatch
def sort(x: Array, axis=-1, descending: bool = False, stable: bool = True):
    """``x`` sorted along ``axis``; NaNs last (first when ``descending``).

    A descending sort keeps equal elements in their original order, as the
    array API requires (it is not the reverse of the ascending sort).

    >>> import numpy as np, hlodsl as hd
    >>> sort(hd.array(np.int32([[3, 1, 2], [0, 9, 4]])), descending=True)
    hlodsl.Array[int32, (2, 3)](
      [[3, 2, 1],
       [9, 4, 0]])
    """
    _real(x, "sort")
    if x.ndim == 0:
        raise fail(ValueError, f"sort: cannot sort a rank-0 array ({x.type})")
    axis = normalize_axis(axis, x.ndim, "sort")
    floating = issubclass(x.dtype, Floating)
    if descending:
        comparator = _greater_float if floating else _greater_exact
    else:
        comparator = _less_float if floating else _less_exact
    return ops.Sort(comparator, axis, is_stable=stable)(x)


@dispatch
def argsort(x: Array, axis=-1, descending: bool = False, stable: bool = True):
    """The int64 indices that sort ``x`` along ``axis`` (order as in ``sort``).

    >>> import numpy as np, hlodsl as hd
    >>> argsort(hd.array(np.float32([2, np.nan, 1, 2])))
    hlodsl.Array[int64, (4,)]([2, 0, 3, 1])
    >>> argsort(hd.array(np.float32([2, np.nan, 1, 2])), descending=True)
    hlodsl.Array[int64, (4,)]([1, 0, 3, 2])
    """
    _real(x, "argsort")
    if x.ndim == 0:
        raise fail(ValueError, f"argsort: cannot sort a rank-0 array ({x.type})")
    axis = normalize_axis(axis, x.ndim, "argsort")
    floating = issubclass(x.dtype, Floating)
    if descending:
        comparator = _by_key_greater_float if floating else _by_key_greater_exact
    else:
        comparator = _by_key_less_float if floating else _by_key_less_exact
    index = ops.Iota(int64, x.shape, axis)()
    # NOTE: always stable: the indices are a visible result, and a stable sort
    # makes them deterministic at no cost the standard lets us avoid.
    _, out = ops.Sort(comparator, axis, is_stable=True)(x, index)
    return out


@dispatch
def top_k(x: Array, k, axis=-1):
    """``(values, indices)`` of the ``k`` largest elements along ``axis``, largest first.

    Of equal elements the one with the lower index comes first, NaNs count as
    largest and ``-0.0`` as equal to ``0.0`` (returned as ``0.0``); indices are
    int64. Both results have ``x``'s shape with ``axis`` of size ``k``.

    >>> import numpy as np, hlodsl as hd
    >>> top_k(hd.array(np.float32([1, 4, 2, 4])), 3)
    (hlodsl.Array[float32, (3,)]([4., 4., 2.]), hlodsl.Array[int64, (3,)]([1, 3, 2]))
    """
    if not issubclass(x.dtype, (Integer, Floating)):
        raise fail(TypeError, f"top_k: needs an integer or floating array, got {x.type}")
    if x.ndim == 0:
        raise fail(ValueError, f"top_k: needs an array of rank at least 1, got {x.type}")
    axis = normalize_axis(axis, x.ndim, "top_k")
    k = as_int(k, "top_k", "k")
    if not 0 <= k <= x.shape[axis]:
        raise fail(ValueError, f"top_k: k={k} must lie in [0, {x.shape[axis]}] (the size of "
                               f"axis {axis} of {x.type})")
    if issubclass(x.dtype, Floating):
        # NOTE: XLA's TopK orders by IEEE totalOrder (-0.0 below 0.0, negative NaNs
        # lowest); numpy's order (that of sort) needs both kinds canonical first.
        zero, nan = (ops.Broadcast(x.shape)(lift(v, x.dtype)) for v in (0, np.nan))
        x = ops.Select()(ops.Compare("EQ")(x, zero), zero, x)
        x = ops.Select()(_isnan(x), nan, x)
    last = x.ndim - 1
    values, indices = ops.TopK(k)(moveaxis(x, axis, last))
    indices = lift(indices, int64)
    return moveaxis(values, last, axis), moveaxis(indices, last, axis)


# -- searchsorted ---------------------------------------------------------------------

@dispatch
def searchsorted(x1: Array, x2: ArrayLike, side: str = "left", sorter=None):
    """Indices at which inserting ``x2``'s elements keeps the 1-D ``x1`` sorted.

    ``x1`` must be sorted ascending (NaNs last), or ``sorter`` must be the
    indices that sort it (``argsort(x1)``). ``side='left'`` gives the first
    suitable position (the count of elements of ``x1`` less than the value),
    ``side='right'`` the last. The result is int64 with ``x2``'s shape.

    Implemented by comparing every pair and counting, which costs
    ``x1.size * x2.size`` work and memory.

    >>> import numpy as np, hlodsl as hd
    >>> searchsorted(hd.array(np.float32([1, 2, 2, 3])), 2.0, side="right")
    hlodsl.Array[int64, ()](3)
    """
    if side not in ("left", "right"):
        raise fail(ValueError, f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise fail(ShapeError, f"searchsorted: x1 must be one-dimensional, got {x1.type}")
    if sorter is not None:
        x1 = getitem(x1, sorter if isinstance(sorter, Array) else array(np.asarray(sorter)))
    x1, x2 = promote(x1, x2)
    _real(x1, "searchsorted")
    shape = (x1.shape[0], *x2.shape)
    a = ops.Broadcast(shape, (0,))(x1)
    b = ops.Broadcast(shape, tuple(range(1, len(shape))))(x2)
    less = _less(x1.dtype)
    hits = less(a, b) if side == "left" else ops.Not()(less(b, a))
    return sum(hits, axis=0)


# -- count_nonzero and nonzero ----------------------------------------------------------

@dispatch
def count_nonzero(x: Array, axis=None, keepdims: bool = False):
    """The number (int64) of nonzero elements along ``axis`` (``None``: all).

    >>> import numpy as np, hlodsl as hd
    >>> count_nonzero(hd.array(np.float32([[0, 1, np.nan], [0, 0, 2]])), axis=1)
    hlodsl.Array[int64, (2,)]([2, 1])
    """
    axes = normalize_axes(axis, x.ndim, "count_nonzero")
    return sum(truth(x), axis=axes, keepdims=keepdims)


@dispatch
def nonzero(x: Array, size=None):
    """The indices of ``x``'s nonzero elements: one int64 vector per dimension.

    Without ``size`` the result's length depends on the data, so this only
    runs eagerly; inside ``hlodsl.compile`` pass ``size=``: the first ``size``
    nonzero elements are returned, the rest of each vector padded with zeros.

    >>> import numpy as np, hlodsl as hd
    >>> nonzero(hd.array(np.int32([[0, 3], [4, 0]])))
    (hlodsl.Array[int64, (2,)]([0, 1]), hlodsl.Array[int64, (2,)]([1, 0]))
    >>> nonzero(hd.array(np.int32([0, 3, 4])), size=4)
    (hlodsl.Array[int64, (4,)]([1, 2, 0, 0]),)
    """
    if x.ndim == 0:
        raise fail(ValueError, f"nonzero: not defined for a rank-0 array ({x.type}); "
                               "reshape it to rank 1 first")
    if size is None:
        if is_symbolic(x):
            raise staging_error(
                f"nonzero: the number of nonzero elements of the symbolic {x.type} is only "
                "known at run time, so the result shape depends on data. Pass size= (the "
                "result is padded with zeros) or use where(x != 0, ...)")
        return tuple(array(np.asarray(i, np.int64)) for i in np.nonzero(x.numpy()))
    size = as_int(size, "nonzero", "size")
    if size < 0:
        raise fail(ValueError, f"nonzero: size must be non-negative, got {size}")
    n = x.size
    if n == 0:
        return tuple(_full(0, size) for _ in x.shape)
    # The j-th nonzero element's flat position is the number of elements whose
    # running count of nonzeros is at most j (< n exactly when it exists).
    counts = cumulative_sum(ops.Reshape((n,))(truth(x)))
    shape = (size, n)
    running = ops.Broadcast(shape, (1,))(counts)
    slots = ops.Iota(int64, shape, 0)()
    flat = sum(ops.Compare("LE")(running, slots), axis=1)
    flat = ops.Select()(ops.Compare("LT")(flat, _full(n, size)), flat, _full(0, size))
    out = []
    for extent in reversed(x.shape):  # unravel the flat position, last dimension first
        out.append(ops.Remainder()(flat, _full(extent, size)))
        flat = ops.Divide()(flat, _full(extent, size))
    return tuple(reversed(out))


def _full(value: int, size: int) -> Array:
    return ops.Broadcast((size,))(lift(value, int64))
