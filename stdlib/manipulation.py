"""Manipulation functions of the array API standard: join, split, reshape, reorder.

Axes, shapes, shifts and repeat counts are static Python values; each function
bottoms out in HLO data-movement ops (concatenate, reshape, transpose, reverse,
slice, broadcast, select), so it runs eagerly and stages inside
``hlodsl.compile`` alike. Joining functions promote mixed element types by
numpy's table, as ``hlodsl.stdlib.promotion.promote`` does.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib.manipulation import concat, reshape, where
>>> a = hd.array(np.int32([[1, 2], [3, 4]]))
>>> concat([a, hd.array(np.float64([[5, 6]]))])
hlodsl.Array[float64, (3, 2)](
  [[1., 2.],
   [3., 4.],
   [5., 6.]])
>>> reshape(a, -1)
hlodsl.Array[int32, (4,)]([1, 2, 3, 4])
>>> where(a > 2, a, 0)
hlodsl.Array[int32, (2, 2)](
  [[0, 0],
   [3, 4]])
"""

from __future__ import annotations

import math
import operator

import numpy as np
from numpy.exceptions import AxisError

from hlodsl import ops
from hlodsl.arrays.array import Array, array
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import all_element_types, element_type
from hlodsl.errors import ShapeError, user_location

from .broadcasting import broadcast_shapes as _shapes_broadcast
from .broadcasting import broadcast_to
from .promotion import ArrayLike, lift, promote, truth

__all__ = [
    "concat", "stack", "reshape", "permute_dims", "expand_dims", "squeeze", "flip", "roll",
    "moveaxis", "tile", "repeat", "unstack", "where", "broadcast_arrays", "broadcast_shapes",
]


# -- argument checks shared by the functions of this module and creation.py ----

def fail(cls, message: str):
    """An exception of ``cls`` whose message ends with the user's source line."""
    loc = user_location(2)
    return cls(message + (f"\n  at {loc}" if loc else ""))


def as_int(value, what: str, name: str) -> int:
    """A static Python int from ``value`` (an int, numpy integer or concrete int array)."""
    try:
        return operator.index(value)
    except TypeError:
        raise fail(TypeError, f"{what}: {name} must be a static int, got "
                              f"{type(value).__name__} {value!r}") from None


def as_dtype(dtype, what: str, name: str = "dtype"):
    """The element type ``dtype`` names; else a TypeError naming ``what`` and the supported ones."""
    try:
        return element_type(dtype)
    except TypeError:
        names = ", ".join(t.__name__ for t in all_element_types())
        raise fail(TypeError, f"{what}: {name}={dtype!r} is not a supported element type; "
                              f"supported: {names}") from None


def as_ints(value, what: str, name: str) -> tuple[int, ...]:
    """A tuple of static ints from an int or a sequence of ints."""
    if isinstance(value, (tuple, list)):
        return tuple(as_int(v, what, name) for v in value)
    return (as_int(value, what, name),)


def normalize_axis(axis, ndim: int, what: str) -> int:
    """One axis (negative counts from the end) checked against rank ``ndim``.

    Out of range is numpy's ``AxisError``, both an IndexError (what the array
    API asks of ``expand_dims``, say) and a ValueError (what numpy users catch).
    """
    a = as_int(axis, what, "axis")
    if not -ndim <= a < ndim:
        raise fail(AxisError, f"{what}: axis {a} is out of range for rank {ndim}")
    return a % ndim


def normalize_axes(axis, ndim: int, what: str) -> tuple[int, ...]:
    """``None`` (every axis), an int or a sequence of ints: distinct axes in given order."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(normalize_axis(a, ndim, what) for a in as_ints(axis, what, "axis"))
    if len(set(axes)) != len(axes):
        raise fail(ValueError, f"{what}: repeated axis in {axis}")
    return axes


def _shapes(arrays) -> str:
    """The operands as the user gave them (before promotion), for error messages."""
    return ", ".join(str(a.type) if isinstance(a, Array) else f"{type(a).__name__} of shape "
                     f"{np.shape(a)}" for a in arrays)


def _arrays(arrays, what: str) -> list[Array]:
    """The operands of a joining function, promoted to one element type."""
    if isinstance(arrays, Array) or not isinstance(arrays, (tuple, list)):
        raise fail(TypeError, f"{what}: expects a tuple or list of arrays, got "
                              f"{type(arrays).__name__}")
    if not arrays:
        raise fail(ValueError, f"{what}: needs at least one array")
    return promote(*arrays)


def _flat(x: Array) -> Array:
    return x if x.ndim == 1 else ops.Reshape((x.size,))(x)


# -- joining and splitting -------------------------------------------------------

def broadcast_arrays(*arrays):
    """The arrays broadcast to their common shape (a tuple), each keeping its element type.

    This is the array API's ``broadcast_arrays``: unlike the elementwise
    functions, it does not promote (``stdlib.broadcasting.broadcast_arrays``
    does both, for them). A tuple, as the standard asks since 2025.12.

    >>> import numpy as np, hlodsl as hd
    >>> a, b = broadcast_arrays(hd.array(np.int8([[1], [2]])), hd.array([True, False]))
    >>> a.shape, a.dtype, b.shape, b.dtype
    ((2, 2), int8, (2, 2), pred)
    """
    xs = [x if isinstance(x, Array) else array(np.asarray(x)) for x in arrays]
    shape = _shapes_broadcast(*(x.shape for x in xs), what="broadcast_arrays")
    return tuple(broadcast_to(x, shape) for x in xs)


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to (the array API's, 2025.12); ``()`` for none.

    Incompatible shapes raise a ``ValueError`` naming them all, as the
    standard asks (the stdlib's own shape checks raise ``ShapeError``, a
    ``TypeError``, for mismatched operands).

    >>> broadcast_shapes((2, 1), (3,)), broadcast_shapes()
    ((2, 3), ())
    >>> try:
    ...     broadcast_shapes((2,), (3,))
    ... except ValueError as e:
    ...     print(str(e).splitlines()[0])
    broadcast_shapes: operands (2,), (3,) cannot be broadcast together (dimension -1 differs)
    """
    dims = [as_ints(s, "broadcast_shapes", "each shape") for s in shapes]
    try:
        return _shapes_broadcast(*dims, what="broadcast_shapes")
    except ShapeError as e:
        raise ValueError(str(e)) from None


@dispatch
def concat(arrays, axis=0):
    """Join arrays along an existing ``axis`` (``None``: flatten them first).

    All shapes must agree except along ``axis``; element types are promoted.

    >>> import numpy as np, hlodsl as hd
    >>> concat((hd.array(np.int32([1, 2])), hd.array(np.int32([3]))))
    hlodsl.Array[int32, (3,)]([1, 2, 3])
    """
    xs = _arrays(arrays, "concat")
    if axis is None:
        xs = [_flat(x) for x in xs]
        axis = 0
    first = xs[0]
    if first.ndim == 0:
        raise fail(ValueError, f"concat: cannot concatenate rank-0 arrays ({_shapes(arrays)}); "
                               "use stack, or axis=None")
    axis = normalize_axis(axis, first.ndim, "concat")
    for x in xs:
        if x.ndim != first.ndim or any(
                a != b for d, (a, b) in enumerate(zip(x.shape, first.shape)) if d != axis):
            raise fail(ShapeError, f"concat: shapes must agree except along axis {axis}, got "
                                   f"{_shapes(arrays)}")
    if len(xs) == 1:
        return first
    return ops.Concatenate(axis)(*xs)


@dispatch
def stack(arrays, axis=0):
    """Join same-shape arrays along a new ``axis`` (in ``[-ndim - 1, ndim]``).

    >>> import numpy as np, hlodsl as hd
    >>> stack([hd.array(np.int32([1, 2])), hd.array(np.int32([3, 4]))], axis=1)
    hlodsl.Array[int32, (2, 2)](
      [[1, 3],
       [2, 4]])
    """
    xs = _arrays(arrays, "stack")
    shape = xs[0].shape
    if any(x.shape != shape for x in xs):
        raise fail(ShapeError, "stack: all arrays must have the same shape, got "
                               f"{_shapes(arrays)}")
    axis = normalize_axis(axis, len(shape) + 1, "stack")
    new = shape[:axis] + (1,) + shape[axis:]
    xs = [ops.Reshape(new)(x) for x in xs]
    return xs[0] if len(xs) == 1 else ops.Concatenate(axis)(*xs)


@dispatch
def unstack(x: Array, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple of arrays of rank ``ndim - 1``.

    >>> import numpy as np, hlodsl as hd
    >>> unstack(hd.array(np.int32([[1, 2], [3, 4]])), axis=1)
    (hlodsl.Array[int32, (2,)]([1, 3]), hlodsl.Array[int32, (2,)]([2, 4]))
    """
    if x.ndim == 0:
        raise fail(ValueError, f"unstack: cannot unstack a rank-0 array {x.type}")
    axis = normalize_axis(axis, x.ndim, "unstack")
    rest = x.shape[:axis] + x.shape[axis + 1:]
    out = []
    for i in range(x.shape[axis]):
        start = tuple(i if d == axis else 0 for d in range(x.ndim))
        limit = tuple(i + 1 if d == axis else n for d, n in enumerate(x.shape))
        out.append(ops.Reshape(rest)(ops.Slice(start, limit)(x)))
    return tuple(out)


# -- reshaping --------------------------------------------------------------------

@dispatch
def reshape(x: Array, shape, copy=None):
    """``x``'s elements in row-major order in a new ``shape``; one entry may be -1.

    >>> import numpy as np, hlodsl as hd
    >>> reshape(hd.array(np.arange(6, dtype=np.int32)), (-1, 3))
    hlodsl.Array[int32, (2, 3)](
      [[0, 1, 2],
       [3, 4, 5]])
    """
    shape = list(as_ints(shape, "reshape", "shape"))
    holes = [i for i, d in enumerate(shape) if d == -1]
    if len(holes) > 1 or any(d < -1 for d in shape):
        raise fail(ValueError, f"reshape: shape {tuple(shape)} may hold one -1 and otherwise "
                               "non-negative sizes")
    if holes:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or x.size % known:
            raise fail(ValueError, f"reshape: cannot reshape {x.type} into shape "
                                   f"{tuple(shape)}")
        shape[holes[0]] = x.size // known
    shape = tuple(shape)
    if math.prod(shape) != x.size:
        raise fail(ValueError, f"reshape: cannot reshape {x.type} ({x.size} elements) into "
                               f"shape {shape}")
    return x if shape == x.shape else ops.Reshape(shape)(x)


@dispatch
def expand_dims(x: Array, axis=0):
    """``x`` with size-1 dimensions inserted at ``axis`` (an int or a tuple of ints).

    Negative axes count from the end of the result, as in numpy.

    >>> import numpy as np, hlodsl as hd
    >>> expand_dims(hd.array(np.int32([1, 2])), axis=-1).shape
    (2, 1)
    """
    axes = as_ints(axis, "expand_dims", "axis")
    ndim = x.ndim + len(axes)
    axes = set(normalize_axes(axes, ndim, "expand_dims"))  # axes index the result
    it = iter(x.shape)
    return ops.Reshape(tuple(1 if d in axes else next(it) for d in range(ndim)))(x)


@dispatch
def squeeze(x: Array, axis=None):
    """``x`` without the size-1 dimensions ``axis`` (``None``: all of them).

    >>> import numpy as np, hlodsl as hd
    >>> squeeze(hd.array(np.int32([[1, 2]])), axis=0)
    hlodsl.Array[int32, (2,)]([1, 2])
    """
    if axis is None:
        axes = {d for d, n in enumerate(x.shape) if n == 1}
    else:
        axes = set(normalize_axes(axis, x.ndim, "squeeze"))
        bad = [d for d in sorted(axes) if x.shape[d] != 1]
        if bad:
            raise fail(ValueError, f"squeeze: cannot squeeze axis {bad[0]} of {x.type}: its "
                                   f"size is {x.shape[bad[0]]}, not 1")
    if not axes:
        return x
    return ops.Reshape(tuple(n for d, n in enumerate(x.shape) if d not in axes))(x)


# -- reordering -------------------------------------------------------------------

@dispatch
def permute_dims(x: Array, axes):
    """``x`` with its dimensions permuted: result dimension i is ``x``'s ``axes[i]``.

    >>> import numpy as np, hlodsl as hd
    >>> permute_dims(hd.array(np.zeros((2, 3, 4))), (2, 0, 1)).shape
    (4, 2, 3)
    """
    given = as_ints(axes, "permute_dims", "axes")
    if len(given) != x.ndim:
        raise fail(ValueError, f"permute_dims: axes {given} must name each of the {x.ndim} "
                               f"dimensions of {x.type} once")
    perm = normalize_axes(given, x.ndim, "permute_dims")
    return x if perm == tuple(range(x.ndim)) else ops.Transpose(perm)(x)


@dispatch
def moveaxis(x: Array, source, destination):
    """``x`` with the dimensions ``source`` moved to positions ``destination``.

    >>> import numpy as np, hlodsl as hd
    >>> moveaxis(hd.array(np.zeros((2, 3, 4))), 0, -1).shape
    (3, 4, 2)
    """
    src = normalize_axes(source, x.ndim, "moveaxis")
    dst = normalize_axes(destination, x.ndim, "moveaxis")
    if len(src) != len(dst):
        raise fail(ValueError, f"moveaxis: source {source} and destination {destination} "
                               "must have the same number of axes")
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


@dispatch
def flip(x: Array, axis=None):
    """``x`` with the order of elements reversed along ``axis`` (``None``: every axis).

    >>> import numpy as np, hlodsl as hd
    >>> flip(hd.array(np.int32([[1, 2], [3, 4]])), axis=1)
    hlodsl.Array[int32, (2, 2)](
      [[2, 1],
       [4, 3]])
    """
    axes = tuple(sorted(normalize_axes(axis, x.ndim, "flip")))
    return ops.Reverse(axes)(x) if axes else x


def _roll_axis(x: Array, shift: int, axis: int) -> Array:
    n = x.shape[axis]
    if n == 0 or shift % n == 0:
        return x
    cut = n - shift % n
    lo = tuple(cut if d == axis else 0 for d in range(x.ndim))
    head = ops.Slice(lo, x.shape)(x)
    tail = ops.Slice((0,) * x.ndim, tuple(cut if d == axis else s for d, s in
                                          enumerate(x.shape)))(x)
    return ops.Concatenate(axis)(head, tail)


@dispatch
def roll(x: Array, shift, axis=None):
    """``x`` with elements shifted by ``shift`` along ``axis``, wrapping around.

    ``axis=None`` rolls the flattened array. ``shift`` and ``axis`` may be
    tuples of one length (or one of them an int, applied to each of the other).

    >>> import numpy as np, hlodsl as hd
    >>> roll(hd.array(np.int32([1, 2, 3, 4])), 1)
    hlodsl.Array[int32, (4,)]([4, 1, 2, 3])
    """
    shifts = as_ints(shift, "roll", "shift")
    if axis is None:
        return reshape(_roll_axis(_flat(x), sum(shifts), 0), x.shape)
    axes = tuple(normalize_axis(a, x.ndim, "roll") for a in as_ints(axis, "roll", "axis"))
    if len(shifts) == 1:
        shifts *= len(axes)
    elif len(axes) == 1:
        axes *= len(shifts)
    if len(shifts) != len(axes):
        raise fail(ValueError, f"roll: shift {shift} and axis {axis} must have the same "
                               "length")
    total = {}
    for s, a in zip(shifts, axes):  # shifts along one axis add up, as in numpy
        total[a] = total.get(a, 0) + s
    for a, s in total.items():
        x = _roll_axis(x, s, a)
    return x


# -- repetition -------------------------------------------------------------------

@dispatch
def tile(x: Array, reps):
    """``x`` repeated ``reps[i]`` times along dimension i (numpy's ``tile``).

    Shorter ``reps`` are padded with leading 1s; a shorter shape with leading
    size-1 dimensions.

    >>> import numpy as np, hlodsl as hd
    >>> tile(hd.array(np.int32([1, 2])), (2, 2))
    hlodsl.Array[int32, (2, 4)](
      [[1, 2, 1, 2],
       [1, 2, 1, 2]])
    """
    reps = as_ints(reps, "tile", "reps")
    if any(r < 0 for r in reps):
        raise fail(ValueError, f"tile: reps {reps} must be non-negative")
    rank = max(x.ndim, len(reps))
    shape = (1,) * (rank - x.ndim) + x.shape
    reps = (1,) * (rank - len(reps)) + reps
    if shape != x.shape:
        x = ops.Reshape(shape)(x)
    if all(r == 1 for r in reps):
        return x
    # Each dimension d becomes the pair (reps[d], shape[d]); a reshape merges the pairs.
    pairs = tuple(n for r, s in zip(reps, shape) for n in (r, s))
    out = ops.Broadcast(pairs, tuple(range(1, 2 * rank, 2)))(x)
    return ops.Reshape(tuple(r * s for r, s in zip(reps, shape)))(out)


@dispatch
def repeat(x: Array, repeats, axis=None):
    """Each element of ``x`` repeated ``repeats`` times along ``axis`` (``None``: flattened).

    ``repeats`` is a static int, or a static sequence of ints, one per element
    along ``axis``.

    >>> import numpy as np, hlodsl as hd
    >>> repeat(hd.array(np.int32([[1, 2], [3, 4]])), 2, axis=1)
    hlodsl.Array[int32, (2, 4)](
      [[1, 1, 2, 2],
       [3, 3, 4, 4]])
    """
    if isinstance(repeats, Array) and not repeats.is_symbolic:
        repeats = np.asarray(repeats).tolist()
    counts = as_ints(repeats, "repeat", "repeats")
    if any(r < 0 for r in counts):
        raise fail(ValueError, f"repeat: repeats {repeats} must be non-negative")
    if axis is None:
        x, axis = _flat(x), 0
    elif x.ndim == 0:
        raise fail(AxisError, f"repeat: axis {axis} needs an array of rank >= 1, got {x.type}")
    axis = normalize_axis(axis, x.ndim, "repeat")
    n = x.shape[axis]
    if len(counts) == 1 and not isinstance(repeats, (tuple, list)):
        return _repeat_each(x, counts[0], axis)
    if len(counts) == 1:
        counts *= n
    if len(counts) != n:
        raise fail(ValueError, f"repeat: {len(counts)} repeats for {n} elements along axis "
                               f"{axis} of {x.type}")
    return _repeat_counts(x, counts, axis)


def _repeat_each(x: Array, r: int, axis: int) -> Array:
    # A new dimension of size r after ``axis``, merged into it by a reshape.
    pairs = x.shape[:axis + 1] + (r,) + x.shape[axis + 1:]
    dims = tuple(d if d <= axis else d + 1 for d in range(x.ndim))
    out = ops.Broadcast(pairs, dims)(x)
    shape = x.shape[:axis] + (x.shape[axis] * r,) + x.shape[axis + 1:]
    return ops.Reshape(shape)(out)


def _repeat_counts(x: Array, counts: tuple[int, ...], axis: int) -> Array:
    shape = x.shape[:axis] + (sum(counts),) + x.shape[axis + 1:]
    if math.prod(shape) == 0:  # nothing to gather (and no element to gather from)
        return ops.Broadcast(shape)(lift(0, x.dtype))
    # Per-element counts: gather along ``axis`` at static indices 0,0,1,2,2,2,...
    index = np.repeat(np.arange(len(counts)), counts)
    index = index.astype(np.int32 if len(counts) < 2 ** 31 else np.int64)
    sizes = tuple(1 if d == axis else n for d, n in enumerate(x.shape))
    gather = ops.Gather(offset_dims=tuple(d for d in range(x.ndim) if d != axis),
                        collapsed_slice_dims=(axis,), start_index_map=(axis,),
                        index_vector_dim=1, slice_sizes=sizes, indices_are_sorted=True)
    return gather(x, array(index.reshape(-1, 1)))


# -- selection --------------------------------------------------------------------

@dispatch
def where(condition: ArrayLike, x1: ArrayLike, x2: ArrayLike):
    """``x1`` where ``condition`` holds, else ``x2``, elementwise after broadcasting.

    ``x1`` and ``x2`` are promoted to a common element type (Python scalars are
    weakly typed); a non-bool ``condition`` counts non-zero elements as true.

    >>> import numpy as np, hlodsl as hd
    >>> where(hd.array(np.array([True, False])), hd.array(np.float32([1, 2])), -1.0)
    hlodsl.Array[float32, (2,)]([ 1., -1.])
    """
    condition = condition if isinstance(condition, Array) else lift(
        condition, element_type(np.asarray(condition).dtype))
    x1, x2 = promote(x1, x2)
    shape = _shapes_broadcast(condition.shape, x1.shape, x2.shape, what="where")
    condition = truth(condition)
    return ops.Select()(broadcast_to(condition, shape), broadcast_to(x1, shape),
                        broadcast_to(x2, shape))

