"""Statistical and logical reductions of the array API standard, and cumulative sums.

``var``/``std`` follow numpy (``correction`` is numpy's ``ddof``; integer
input gives float64, complex input a real result). ``all``/``any`` test
elements against zero (NaN counts as true). ``cumulative_sum`` and
``cumulative_prod`` are one HLO ``reduce-window`` each: a window as long as
the axis, padded below, so window i covers elements 0..i. ``max``, ``min``,
``sum``, ``prod`` and ``mean`` live in ``hlodsl.stdlib.reductions``.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib.statistics import var, cumulative_sum, all
>>> x = hd.array(np.float32([1, 2, 3, 4]))
>>> var(x), round(float(var(x, correction=1)), 6)   # 5/3: its last bit is the platform's
(hlodsl.Array[float32, ()](1.25), 1.666667)
>>> cumulative_sum(x)
hlodsl.Array[float32, (4,)]([ 1.,  3.,  6., 10.])
>>> all(x > 0)
hlodsl.Array[pred, ()](True)
"""

from __future__ import annotations

import numbers

from hlodsl.arrays.scalars import static_hint
from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import ComplexFloating, Inexact, float64, pred

from .elementwise import divide, logical_and, logical_or, multiply, sqrt, subtract
from .manipulation import as_dtype, as_int, concat, fail, normalize_axes, normalize_axis
from .promotion import lift, truth
from .reductions import _accumulator, mapreduce, mean, sum

__all__ = ["var", "std", "all", "any", "cumulative_sum", "cumulative_prod", "diff"]


# -- variance and standard deviation -----------------------------------------------

@dispatch
def var(x: Array, axis=None, correction=0.0, keepdims: bool = False):
    """Variance over ``axis``: the sum of squared deviations over ``N - correction``.

    ``correction=1`` gives the unbiased sample variance (numpy's ``ddof=1``);
    a non-positive divisor gives inf or NaN, as in numpy. Integer input gives
    float64, complex input its real element type.

    >>> import numpy as np, hlodsl as hd
    >>> var(hd.array(np.float64([[1, 3], [2, 2]])), axis=1)
    hlodsl.Array[float64, (2,)]([1., 0.])
    """
    if not issubclass(x.dtype, Inexact):
        x = lift(x, float64)
    axes = normalize_axes(axis, x.ndim, "var")
    count = 1
    for a in axes:
        count *= x.shape[a]
    deviation = subtract(x, mean(x, axis=axes, keepdims=True))
    if issubclass(x.dtype, ComplexFloating):
        re, im = ops.Real()(deviation), ops.Imag()(deviation)
        squares = ops.Add()(ops.Multiply()(re, re), ops.Multiply()(im, im))
    else:
        squares = multiply(deviation, deviation)
    if isinstance(correction, bool) or not isinstance(correction, numbers.Real):
        raise fail(TypeError, f"var: correction must be a static real number (an int or a "
                              f"float, such as 1), got {type(correction).__name__} "
                              f"{correction!r}{static_hint(correction, 'correction')}")
    divisor = count - float(correction)
    return divide(sum(squares, axis=axes, keepdims=keepdims), divisor if divisor > 0 else 0.0)


@dispatch
def std(x: Array, axis=None, correction=0.0, keepdims: bool = False):
    """Standard deviation over ``axis``: the square root of ``var``.

    >>> import numpy as np, hlodsl as hd
    >>> std(hd.array(np.float32([1, 3, 1, 3])))
    hlodsl.Array[float32, ()](1.)
    """
    normalize_axes(axis, x.ndim, "std")  # errors name std, not the var it calls
    return sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


# -- all and any -------------------------------------------------------------------

@dispatch
def all(x: Array, axis=None, keepdims: bool = False):
    """Whether every element along ``axis`` is nonzero (pred; true when empty).

    >>> import numpy as np, hlodsl as hd
    >>> all(hd.array(np.int32([[1, 0], [2, 3]])), axis=1)
    hlodsl.Array[pred, (2,)]([False,  True])
    """
    axes = normalize_axes(axis, x.ndim, "all")
    return mapreduce(None, logical_and, truth(x), axis=axes, init=True, keepdims=keepdims)


@dispatch
def any(x: Array, axis=None, keepdims: bool = False):
    """Whether some element along ``axis`` is nonzero (pred; false when empty).

    >>> import numpy as np, hlodsl as hd
    >>> any(hd.array(np.float32([[0, 0], [0, np.nan]])), axis=1)
    hlodsl.Array[pred, (2,)]([False,  True])
    """
    axes = normalize_axes(axis, x.ndim, "any")
    return mapreduce(None, logical_or, truth(x), axis=axes, init=False, keepdims=keepdims)


# -- cumulative sums and products --------------------------------------------------

def _cumulative(x: Array, axis, dtype, include_initial: bool, what: str, numeric, logical,
                identity):
    if x.ndim == 0:
        x = ops.Reshape((1,))(x)  # as numpy: a scalar accumulates as a 1-vector
    if axis is None:
        if x.ndim > 1:
            raise fail(ValueError, f"{what}: axis is required for an array of rank "
                                   f"{x.ndim} ({x.type})")
        axis = 0
    axis = normalize_axis(axis, x.ndim, what)
    dtype = _accumulator(x.dtype) if dtype is None else as_dtype(dtype, what)
    x = lift(x, dtype)
    n = x.shape[axis]
    # Window i covers elements i - n + 1 .. i of the axis padded with n - 1
    # identities below (n with the initial value): the prefix 0..i.
    window = n if n else 1
    low = window - 1 + bool(include_initial)
    sizes = tuple(window if d == axis else 1 for d in range(x.ndim))
    padding = tuple((low, 0) if d == axis else (0, 0) for d in range(x.ndim))
    combine = logical if dtype is pred else numeric
    return ops.ReduceWindow(combine, sizes, padding=padding)(x, lift(identity, dtype))


_ADD, _MULTIPLY, _OR, _AND = ops.Add(), ops.Multiply(), ops.Or(), ops.And()


@dispatch
def cumulative_sum(x: Array, axis=None, dtype=None, include_initial: bool = False):
    """Running sums along ``axis`` (optional for rank 1, required above).

    Small integers and bools accumulate in int64 (unsigned in uint64) unless
    ``dtype`` says otherwise; ``include_initial=True`` prepends the initial 0,
    so the axis grows by one.

    >>> import numpy as np, hlodsl as hd
    >>> cumulative_sum(hd.array(np.int32([[1, 2], [3, 4]])), axis=1, include_initial=True)
    hlodsl.Array[int64, (2, 3)](
      [[0, 1, 3],
       [0, 3, 7]])
    """
    return _cumulative(x, axis, dtype, include_initial, "cumulative_sum", _ADD, _OR, 0)


@dispatch
def cumulative_prod(x: Array, axis=None, dtype=None, include_initial: bool = False):
    """Running products along ``axis``; as ``cumulative_sum`` with the initial value 1.

    >>> import numpy as np, hlodsl as hd
    >>> cumulative_prod(hd.array(np.float32([1, 2, 3, 4])))
    hlodsl.Array[float32, (4,)]([ 1.,  2.,  6., 24.])
    """
    return _cumulative(x, axis, dtype, include_initial, "cumulative_prod", _MULTIPLY, _AND, 1)


# -- diff ---------------------------------------------------------------------------

def _edge(v, x: Array, axis: int) -> Array:
    """``prepend``/``append``: an array, or a scalar as one slice along ``axis``."""
    if isinstance(v, Array) and v.ndim:
        return v
    shape = tuple(1 if d == axis else n for d, n in enumerate(x.shape))
    v = v if isinstance(v, Array) else lift(v, x.dtype)
    return ops.Broadcast(shape)(v)


@dispatch
def diff(x: Array, axis=-1, n=1, prepend=None, append=None):
    """The ``n``-th forward difference along ``axis``: ``x[1:] - x[:-1]``, ``n`` times.

    ``prepend``/``append`` (arrays shaped as ``x`` except along ``axis``, or
    scalars) are joined to ``x`` first. Boolean arrays differ by ``!=``, as
    in numpy.

    >>> import numpy as np, hlodsl as hd
    >>> diff(hd.array(np.int32([1, 4, 9, 16])))
    hlodsl.Array[int32, (3,)]([3, 5, 7])
    >>> diff(hd.array(np.int32([1, 4, 9])), n=2, prepend=0)
    hlodsl.Array[int32, (2,)]([2, 2])
    """
    if x.ndim == 0:
        raise fail(ValueError, f"diff: needs an array of rank at least 1, got {x.type}")
    axis = normalize_axis(axis, x.ndim, "diff")
    n = as_int(n, "diff", "n")
    if n < 0:
        raise fail(ValueError, f"diff: n must be non-negative, got {n}")
    if n == 0:
        return x  # as numpy: nothing joined, nothing differenced
    parts = [_edge(v, x, axis) for v in (prepend,) if v is not None]
    parts += [x] + [_edge(v, x, axis) for v in (append,) if v is not None]
    if len(parts) > 1:
        x = concat(parts, axis=axis)
    for _ in range(n):
        m = x.shape[axis]
        if m == 0:
            break
        start = [0] * x.ndim
        start[axis] = 1
        limit = list(x.shape)
        limit[axis] = m - 1
        later = ops.Slice(tuple(start), x.shape)(x)
        earlier = ops.Slice((0,) * x.ndim, tuple(limit))(x)
        x = (ops.Compare("NE") if x.dtype is pred else ops.Subtract())(later, earlier)
    return x
