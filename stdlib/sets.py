"""Set functions of the array API standard: ``unique_all``, ``unique_counts``,
``unique_inverse`` and ``unique_values``.

All four are one computation on the flattened array, built from ops: a stable
sort carrying the original positions, a comparison of neighbours marking the
first element of each run of equal values, a running count of those marks
(each element's group number), a second stable sort moving the firsts to the
front, and a final slice. NaNs compare unequal, so every NaN is its own
unique value, as the standard requires; ``-0.0`` and ``0.0`` are one value.
Values come out sorted (NaNs last); indices and counts are int64.

The number of unique values depends on the data. Eagerly it is read back from
the device before the final slice; inside ``hlodsl.compile`` pass a static
``size=``: the results then have that length, truncated or padded as
``jax.numpy.unique(size=...)`` pads them (values and indices repeat their
first entry, counts are 0).

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.int32([3, 1, 3, 2, 1]))
>>> unique_values(x)
hlodsl.Array[int32, (3,)]([1, 2, 3])
>>> unique_counts(x).counts
hlodsl.Array[int64, (3,)]([2, 1, 2])
>>> hd.compile(lambda x: unique_values(x, size=4))(x)
hlodsl.Array[int32, (4,)]([1, 2, 3, 1])
"""

from __future__ import annotations

from typing import NamedTuple

from hlodsl import ops
from hlodsl.arrays.array import Array, is_symbolic
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import ComplexFloating, Floating, int8, int64, pred
from hlodsl.errors import staging_error

from .manipulation import as_int, fail
from .promotion import ArrayLike, lift, promote
from .reductions import sum
from .statistics import any as any_
from .searching import _by_key_less_exact, _by_key_less_float, _less_float
from .statistics import cumulative_sum

__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values",
           "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult"]


class UniqueAllResult(NamedTuple):
    """``unique_all``'s result: values, first indices, inverse indices, counts."""

    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    """``unique_counts``'s result: values and counts."""

    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    """``unique_inverse``'s result: values and inverse indices."""

    values: Array
    inverse_indices: Array


# NOTE: module-level comparators, so eager calls hit the compile cache (Sort
# compares its computation by identity).

def _complex_less(ar, br, ai, bi, av, bv, aidx, bidx):
    """numpy's complex order on (real, imag) keys: lexicographic, NaN parts last."""
    real_tie = ops.Not()(ops.Or()(_less_float(ar, br), _less_float(br, ar)))
    return ops.Or()(_less_float(ar, br), ops.And()(real_tie, _less_float(ai, bi)))


def _first_less(a, b, c, d, e, f, g, h):
    return ops.Compare("LT")(a, b)


def _const(value, dtype, shape) -> Array:
    return ops.Broadcast(shape)(lift(value, dtype))


def _slice_or_pad(v: Array, size: int, fill) -> Array:
    """``v[:size]`` of a vector, padded with ``fill`` (a Python scalar) past its end."""
    n = v.shape[0]
    if size <= n:
        return ops.Slice((0,), (size,))(v)
    return ops.Pad((0,), (size - n,))(v, lift(fill, v.dtype))


def _repeat_first(v: Array, size: int) -> Array:
    return ops.Broadcast((size,))(ops.Reshape(())(ops.Slice((0,), (1,))(v)))


class _Unique(NamedTuple):
    values: Array
    indices: Array
    inverse: Array
    counts: Array


def _unique(x: Array, size, what: str) -> _Unique:
    if size is not None:
        size = as_int(size, what, "size")
        if size < 0:
            raise fail(ValueError, f"{what}: size must be non-negative, got {size}")
    n = x.size
    flat = ops.Reshape((n,))(x)
    if n == 0:
        k = 0 if size is None else size
        empty = _const(0, x.dtype, (k,))
        zeros = _const(0, int64, (k,))
        return _Unique(empty, zeros, ops.Reshape(x.shape)(_const(0, int64, (0,))), zeros)
    position = ops.Iota(int64, (n,), 0)()
    # 1. Sort stably, carrying each element's original position.
    if issubclass(x.dtype, ComplexFloating):
        keys = (ops.Real()(flat), ops.Imag()(flat))
        *_, s, p = ops.Sort(_complex_less, 0, is_stable=True)(*keys, flat, position)
    else:
        less = _by_key_less_float if issubclass(x.dtype, Floating) else _by_key_less_exact
        s, p = ops.Sort(less, 0, is_stable=True)(flat, position)
    # 2. Mark the first element of each run of equal values (NaN != NaN: each its own).
    differs = ops.Compare("NE")(ops.Slice((1,), (n,))(s), ops.Slice((0,), (n - 1,))(s))
    first = ops.Concatenate(0)(_const(True, pred, (1,)), differs)
    group = ops.Subtract()(cumulative_sum(lift(first, int64)), _const(1, int64, (n,)))
    # 3. The inverse: each element's group number, back in the original order.
    _, inverse = ops.Sort(_by_key_less_exact, 0, is_stable=True)(p, group)
    inverse = ops.Reshape(x.shape)(inverse)
    # 4. Firsts to the front, in order: their values, original and sorted positions.
    later = lift(ops.Not()(first), int8)
    _, values, indices, starts = ops.Sort(_first_less, 0, is_stable=True)(
        later, s, p, position)
    count = sum(lift(first, int64))
    if size is None:
        if is_symbolic(x):
            raise staging_error(
                f"{what}: the number of unique values of the symbolic {x.type} is only known "
                "at run time, so the result shape depends on data. Pass size= (results are "
                "truncated or padded to that length)")
        k = int(count)
        values, indices = ops.Slice((0,), (k,))(values), ops.Slice((0,), (k,))(indices)
        ends = ops.Concatenate(0)(ops.Slice((1,), (k,))(starts), _const(n, int64, (1,)))
        counts = ops.Subtract()(ends, ops.Slice((0,), (k,))(starts))
        return _Unique(values, indices, inverse, counts)
    # Static size: entries at and past the count hold fill values.
    slot = ops.Iota(int64, (size,), 0)()
    valid = ops.Compare("LT")(slot, ops.Broadcast((size,))(count))
    next_valid = ops.Compare("LT")(ops.Add()(slot, _const(1, int64, (size,))),
                                   ops.Broadcast((size,))(count))
    values = ops.Select()(valid, _slice_or_pad(values, size, 0), _repeat_first(values, size))
    indices = ops.Select()(valid, _slice_or_pad(indices, size, 0), _repeat_first(indices, size))
    padded = ops.Concatenate(0)(starts, _const(n, int64, (1,)))  # a sentinel end
    begin = _slice_or_pad(padded, size, n)
    end = _slice_or_pad(ops.Slice((1,), (n + 1,))(padded), size, n)
    end = ops.Select()(next_valid, end, _const(n, int64, (size,)))
    counts = ops.Select()(valid, ops.Subtract()(end, begin), _const(0, int64, (size,)))
    return _Unique(values, indices, inverse, counts)


@dispatch
def unique_all(x: Array, size=None):
    """The unique values of ``x`` (flattened) with their first indices, inverse and counts.

    ``indices[j]`` is the flat index of the first occurrence of ``values[j]``;
    ``inverse_indices`` has ``x``'s shape and holds each element's position
    in ``values``; ``counts[j]`` is how often ``values[j]`` occurs. See the
    module docstring for ``size=``.

    >>> import numpy as np, hlodsl as hd
    >>> r = unique_all(hd.array(np.float32([2, np.nan, 1, 2, np.nan])))
    >>> r.values, r.indices
    (hlodsl.Array[float32, (4,)]([ 1.,  2., nan, nan]), hlodsl.Array[int64, (4,)]([2, 0, 1, 4]))
    >>> r.inverse_indices, r.counts
    (hlodsl.Array[int64, (5,)]([1, 2, 0, 1, 3]), hlodsl.Array[int64, (4,)]([1, 2, 1, 1]))
    """
    u = _unique(x, size, "unique_all")
    return UniqueAllResult(u.values, u.indices, u.inverse, u.counts)


@dispatch
def unique_counts(x: Array, size=None):
    """The unique values of ``x`` (flattened) and how often each occurs.

    >>> import numpy as np, hlodsl as hd
    >>> unique_counts(hd.array(np.int8([[5, 5], [0, 5]])))
    UniqueCountsResult(values=hlodsl.Array[int8, (2,)]([0, 5]), counts=hlodsl.Array[int64, (2,)]([1, 3]))
    """
    u = _unique(x, size, "unique_counts")
    return UniqueCountsResult(u.values, u.counts)


@dispatch
def unique_inverse(x: Array, size=None):
    """The unique values of ``x`` (flattened) and, in ``x``'s shape, each element's index
    into them: ``values[inverse_indices]`` rebuilds ``x`` (NaNs aside).

    >>> import numpy as np, hlodsl as hd
    >>> unique_inverse(hd.array(np.int32([7, 3, 7]))).inverse_indices
    hlodsl.Array[int64, (3,)]([1, 0, 1])
    """
    u = _unique(x, size, "unique_inverse")
    return UniqueInverseResult(u.values, u.inverse)


@dispatch
def unique_values(x: Array, size=None):
    """The unique values of ``x`` (flattened), sorted, NaNs last and each NaN kept.

    >>> import numpy as np, hlodsl as hd
    >>> unique_values(hd.array(np.float64([0.0, -0.0, np.nan, np.nan])))
    hlodsl.Array[float64, (3,)]([ 0., nan, nan])
    """
    return _unique(x, size, "unique_values").values


# -- isin ---------------------------------------------------------------------------------

@dispatch
def isin(x1: ArrayLike, x2: ArrayLike, *, invert: bool = False):
    """Whether each element of ``x1`` equals some element of ``x2`` (array API 2025.12).

    ``x1`` and ``x2`` are arrays of any shapes or Python scalars (at least one
    an array); they are compared by value after promotion to their common
    type, as ``equal`` compares, so NaN is in nothing and ``-0.0`` is in
    ``[0.0]``. The result is bool with ``x1``'s shape (``()`` for a scalar
    ``x1``); ``invert=True`` gives its negation. Every pair is compared: XLA
    fuses the comparison into the reduction, so the cost is
    ``x1.size * x2.size`` work and no memory beyond the result.

    >>> import numpy as np, hlodsl as hd
    >>> isin(hd.array(np.int32([[1, 2], [3, 4]])), hd.array(np.int64([4, 1, 9])))
    hlodsl.Array[pred, (2, 2)](
      [[ True, False],
       [False,  True]])
    >>> isin(3, hd.array(np.int8([1, 2])), invert=True)
    hlodsl.Array[pred, ()](True)
    """
    if not (isinstance(x1, Array) or isinstance(x2, Array)):
        raise fail(TypeError, f"isin: x1 or x2 must be an array, got "
                              f"{type(x1).__name__} and {type(x2).__name__}")
    if not isinstance(invert, bool):
        raise fail(TypeError, f"isin: invert must be a bool, got {invert!r}")
    a, b = promote(x1, x2)
    b = b if b.ndim == 1 else ops.Reshape((b.size,))(b)
    shape = a.shape + b.shape
    equal = ops.Compare("EQ")(ops.Broadcast(shape, tuple(range(a.ndim)))(a),
                              ops.Broadcast(shape, (a.ndim,))(b))
    found = any_(equal, axis=-1)
    return ops.Not()(found) if invert else found

