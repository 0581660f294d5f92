"""numpy indexing (``x[key]``) and functional updates (``x.at[key].set(v)``).

Importing this module installs ``Array.__getitem__`` and ``Array.__iter__``
(``stdlib/index_update.py`` installs ``Array.at`` on the same index forms). Every index form of numpy works: integers, slices with any step,
``...``, ``None``, integer arrays (hlodsl or numpy arrays, lists) with numpy's
advanced-indexing rules, and boolean masks whose value is known.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import indexing
>>> x = hd.array(np.arange(12, dtype=np.int32).reshape(3, 4))
>>> x[1]
hlodsl.Array[int32, (4,)]([4, 5, 6, 7])
>>> x[::-2, [0, -1]]
hlodsl.Array[int32, (2, 2)](
  [[ 8, 11],
   [ 0,  3]])
>>> x[x.numpy() % 5 == 0]
hlodsl.Array[int32, (3,)]([ 0,  5, 10])
>>> hd.array(np.zeros(3, np.int32)).at[[0, 2, 0]].add(1)
hlodsl.Array[int32, (3,)]([2, 0, 1])

Where the index values are only known when a compiled program runs (a
symbolic integer array inside ``hd.compile``), nothing can be checked while
staging: negative indices still wrap as in numpy, but out-of-range ones follow
XLA, clamped into range by ``getitem`` (gather/dynamic-slice) and dropped by
``.at[...]`` updates (scatter). Concrete indices out of range raise
``IndexError``.

A boolean mask selects a data-dependent number of elements, so it needs a
concrete mask; inside ``hd.compile`` use ``where`` instead (the one staged
form supported is ``x.at[mask].set(v)`` and friends, with ``v`` not depending
on how many elements are selected).
"""

from __future__ import annotations

import operator

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array, array, is_symbolic
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import Bool, Integer, int32, int64, uint32, uint64
from hlodsl.errors import staging_error

from .broadcasting import broadcast_to
from .elementwise import add, less
from .manipulation import fail
from .promotion import lift

__all__ = ["getitem", "take", "take_along_axis"]

_NONE, _SEP, _SLICE, _INT, _ADV = "none", "sep", "slice", "int", "adv"
_VALID = ("only integers, slices (`:`), ellipsis (`...`), None (newaxis) and integer or "
          "boolean arrays are valid indices")


class _Slice:
    """A slice normalised against its axis: ``start + step * i`` for ``i < length``."""

    __slots__ = ("axis", "start", "step", "length")

    def __init__(self, axis, start, step, length):
        self.axis, self.start, self.step, self.length = axis, start, step, length

    @property
    def window(self) -> bool:
        """Contiguous: a window of ``length`` elements from ``start``."""
        return self.step == 1 or self.length <= 1


class _Adv:
    """An advanced index: one index column per axis it consumes, of shape ``shape``."""

    __slots__ = ("axes", "cols", "shape")

    def __init__(self, axes, cols, shape):
        self.axes, self.cols, self.shape = tuple(axes), list(cols), tuple(shape)


class _Index:
    """A key parsed against a shape: the items, the view shape and its layout."""

    def __init__(self, items, batch, adjacent, dtype):
        self.items, self.batch, self.adjacent, self.dtype = items, batch, adjacent, dtype
        self.advs = [it for kind, it in items if kind == _ADV]
        # labels of the view's dimensions, in numpy's order
        labels = [("b", j) for j in range(len(batch))] if self.advs and not adjacent else []
        for kind, it in items:
            if kind == _NONE:
                labels.append((_NONE,))
            elif kind == _SLICE:
                labels.append((_SLICE, it.axis))
            elif kind == _ADV and adjacent and it is self.advs[0]:
                labels += [("b", j) for j in range(len(batch))]
        self.labels = labels
        sizes = {(_SLICE, it.axis): it.length for kind, it in items if kind == _SLICE}
        self.shape = tuple(batch[lb[1]] if lb[0] == "b" else sizes.get(lb, 1) for lb in labels)

    @property
    def gathers(self) -> bool:
        """Advanced indices that are not just static integers."""
        return bool(self.advs) and (self.batch != () or any(
            is_symbolic(c) for a in self.advs for c in a.cols))

    @property
    def empty(self) -> bool:
        return 0 in self.shape

    @property
    def static_box(self) -> bool:
        """Only static ints and windows: the view is a box of the operand."""
        return all(kind != _SLICE or it.window for kind, it in self.items) and all(
            not a.axes or (a.shape == () and not is_symbolic(a.cols[0])) for a in self.advs)

    def box(self, ndim):
        """Starts and sizes of the box, one per axis (for ``static_box`` indices)."""
        starts, sizes = [0] * ndim, [None] * ndim
        for kind, it in self.items:
            if kind == _SLICE:
                starts[it.axis], sizes[it.axis] = it.start, it.length
            elif kind == _INT:
                starts[it[0]], sizes[it[0]] = it[1], 1
            elif kind == _ADV and it.axes:
                starts[it.axes[0]], sizes[it.axes[0]] = int(it.cols[0]), 1
        return starts, sizes


# -- parsing a key -------------------------------------------------------------

def _classify(k, what):
    if k is None:
        return _NONE, None
    if k is Ellipsis:
        return "ellipsis", None
    if isinstance(k, slice):
        return _SLICE, k
    if isinstance(k, (bool, np.bool_)):
        return "mask", np.asarray(k)
    if isinstance(k, Array):
        if is_symbolic(k):
            if issubclass(k.dtype, Bool):
                return "mask", k
            if issubclass(k.dtype, Integer):
                return "array", k
            raise IndexError(f"{what}: {_VALID}, not an array of {k.dtype.__name__}")
        k = np.asarray(k)
    if isinstance(k, (list, tuple)):
        arr = np.asarray(k)
        k = arr.astype(np.intp) if arr.size == 0 and arr.dtype.kind == "f" else arr
    if isinstance(k, (np.ndarray, np.generic)):
        if k.dtype == np.bool_:
            return "mask", np.asarray(k)
        if np.issubdtype(k.dtype, np.integer):
            return ("array", np.asarray(k)) if isinstance(k, np.ndarray) else (_INT, int(k))
        raise IndexError(f"{what}: {_VALID}, not an array of {k.dtype}")
    try:
        return _INT, operator.index(k)
    except TypeError:
        raise IndexError(f"{what}: {_VALID}, not {type(k).__name__} {k!r}") from None


def _consumed(kind, k) -> int:
    if kind == "mask":
        return k.ndim
    return 0 if kind in (_NONE, _SEP, "ellipsis") else 1


def _out_of_bounds(what, index, axis, size):
    return IndexError(f"{what}: index {index} is out of bounds for axis {axis} with size {size}")


def _host_column(a, axis, n, what):
    """A concrete index array checked against the axis size, negatives wrapped."""
    a = np.asarray(a)
    bad = (a < -n) | (a >= n)  # numpy compares unsigned arrays with -n exactly
    if bad.any():
        raise _out_of_bounds(what, a[bad].flat[0], axis, n)
    return np.where(a < 0, a.astype(np.int64) + n, a) if a.dtype.kind == "i" else a


def _slice(k: slice, axis, n, what) -> _Slice:
    for bound in (k.start, k.stop, k.step):
        if is_symbolic(bound):
            raise staging_error(
                f"{what}: slice bounds must be static, got a symbolic {bound.type}; use "
                "ops.DynamicSlice(sizes)(x, *starts) for a window at a run-time start")
    try:
        start, stop, step = k.indices(n)
    except TypeError:
        raise fail(TypeError, f"{what}: slice bounds must be integers or None, got "
                              f"{k!r}") from None
    return _Slice(axis, start, step, len(range(start, stop, step)))


def _mask(k, axis, shape, what):
    if is_symbolic(k):
        raise staging_error(
            f"{what}: a boolean mask of symbolic value {k.type} selects a data-dependent "
            "number of elements, so the result shape depends on data. Use "
            "where(mask, x, fill) (or x.at[mask].set(v)) instead")
    sub = shape[axis:axis + k.ndim]
    for d, (n, m) in enumerate(zip(sub, k.shape)):
        # A mask axis of size 0 selects nothing whatever the array's size, as numpy allows.
        if n != m and m != 0:
            raise IndexError(
                f"{what}: boolean index did not match indexed array along axis {axis + d}; "
                f"size of axis is {n} but size of corresponding boolean axis is {m}")
    if k.ndim == 0:  # x[True] adds a dimension of size 1, x[False] one of size 0
        return _Adv((), (), (int(k),))
    cols = np.nonzero(k)
    return _Adv(range(axis, axis + k.ndim), cols, cols[0].shape)


def _parse(x: Array, key, what: str) -> _Index:
    raw = [_classify(k, what) for k in (key if isinstance(key, tuple) else (key,))]
    ellipses = [i for i, (kind, _) in enumerate(raw) if kind == "ellipsis"]
    if len(ellipses) > 1:
        raise IndexError(f"{what}: an index can only have a single ellipsis ('...')")
    used = sum(_consumed(kind, k) for kind, k in raw)
    if used > x.ndim:
        raise IndexError(f"{what}: too many indices for array: array is {x.ndim}-dimensional, "
                         f"but {used} were indexed")
    fill = [(_SLICE, slice(None))] * (x.ndim - used)
    if ellipses:  # an ellipsis separates advanced indices even where it stands for nothing
        i = ellipses[0]
        raw = raw[:i] + (fill or [(_SEP, None)]) + raw[i + 1:]
    else:
        raw += fill
    has_adv = any(kind in ("array", "mask") for kind, _ in raw)
    items, axis = [], 0
    for kind, k in raw:
        n = x.shape[axis] if axis < x.ndim else 0
        if kind == _SLICE:
            items.append((_SLICE, _slice(k, axis, n, what)))
        elif kind == _INT:
            if not -n <= k < n:
                raise _out_of_bounds(what, k, axis, n)
            items.append((_ADV, _Adv((axis,), [np.asarray(k % n)], ())) if has_adv
                         else (_INT, (axis, k % n)))
        elif kind == "array":
            if is_symbolic(k):
                if n == 0 and k.size:
                    raise IndexError(f"{what}: cannot index axis {axis} of size 0 with {k.type}")
                items.append((_ADV, _Adv((axis,), [k], k.shape)))
            else:
                items.append((_ADV, _Adv((axis,), [_host_column(k, axis, n, what)], k.shape)))
        elif kind == "mask":
            items.append((_ADV, _mask(k, axis, x.shape, what)))
        else:
            items.append((kind, None))
        axis += _consumed(kind, k)
    advs = [it for kind, it in items if kind == _ADV]
    try:
        batch = np.broadcast_shapes(*[a.shape for a in advs])
    except ValueError:
        shapes = " ".join(str(a.shape) for a in advs)
        raise IndexError(f"{what}: shape mismatch: indexing arrays could not be broadcast "
                         f"together with shapes {shapes}") from None
    positions = [i for i, (kind, _) in enumerate(items) if kind == _ADV]
    adjacent = not positions or positions[-1] - positions[0] == len(positions) - 1
    dtype = _index_dtype(x.shape, advs)
    for a in advs:
        a.cols = [_wrap(c, x.shape[ax], dtype) for ax, c in zip(a.axes, a.cols)]
    return _Index(items, batch, adjacent, dtype)


def _index_dtype(shape, advs):
    wide = any(n > np.iinfo(np.int32).max for n in shape) or any(
        is_symbolic(c) and c.dtype in (int64, uint32, uint64) for a in advs for c in a.cols)
    return int64 if wide else int32


def _wrap(col, n, dtype):
    """The column in ``dtype``, negative (symbolic) values wrapped as numpy does."""
    if not is_symbolic(col):
        return np.asarray(col, dtype.np_dtype)
    signed = issubclass(col.dtype, Integer) and col.dtype.np_dtype.kind == "i"
    col = lift(col, dtype)
    return ops.Select()(less(col, 0), add(col, n), col) if signed else col


# -- building index arrays -------------------------------------------------------

def _const(value, dtype):
    return array(np.asarray(value, dtype.np_dtype))


def _stack(cols, shape, dtype):
    """Columns broadcast to ``shape`` and stacked along a new last dimension."""
    if not any(is_symbolic(c) for c in cols):
        host = [np.broadcast_to(c, shape) for c in cols]
        return _const(np.stack(host, axis=-1), dtype)
    parts = []
    for c in cols:
        c = c if is_symbolic(c) else _const(c, dtype)
        c = broadcast_to(_reshape(c, (1,) * (len(shape) - c.ndim) + c.shape), shape)
        parts.append(_reshape(c, shape + (1,)))
    return parts[0] if len(parts) == 1 else ops.Concatenate(len(shape))(*parts)


def _reshape(x, shape):
    shape = tuple(shape)
    return x if x.shape == shape else ops.Reshape(shape)(x)


def _zeros(dtype, shape):
    return ops.Broadcast(tuple(shape), ())(lift(0, dtype))


# -- getitem -------------------------------------------------------------------

def _strided(s: _Slice):
    """``(lo, hi, stride, flip)``: the increasing slice that, reversed if ``flip``, is ``s``."""
    stride = abs(s.step) if s.length > 1 else 1
    lo = s.start if s.step > 0 else s.start + s.step * (s.length - 1)
    return lo, lo + stride * (s.length - 1) + 1, stride, s.step < 0 and s.length > 1


def _basic(x: Array, idx: _Index) -> Array:
    """The slices and static integers applied: one (dynamic) slice and one reverse."""
    starts, limits, strides, flips = [0] * x.ndim, list(x.shape), [1] * x.ndim, []
    for kind, it in idx.items:
        if kind == _INT or (kind == _ADV and it.axes and not idx.gathers):
            axis, i = it if kind == _INT else (it.axes[0], int(it.cols[0]))
            starts[axis], limits[axis] = i, i + 1
        elif kind == _SLICE:
            starts[it.axis], limits[it.axis], strides[it.axis], flip = _strided(it)
            flips += [it.axis] * flip
    unit = strides == [1] * x.ndim
    if is_symbolic(x) or not unit:
        if starts != [0] * x.ndim or limits != list(x.shape) or not unit:
            x = ops.Slice(starts, limits, strides)(x)
    elif starts != [0] * x.ndim or limits != list(x.shape):
        # Eagerly, run-time starts keep one compiled dynamic-slice per window size
        # (iterating over rows would otherwise compile one slice per row).
        sizes = tuple(hi - lo for lo, hi in zip(starts, limits))
        x = ops.DynamicSlice(sizes)(x, *[_const(s, idx.dtype) for s in starts])
    return ops.Reverse(flips)(x) if flips else x


def _gather(y: Array, idx: _Index) -> Array:
    batch = idx.batch
    axes = [ax for a in idx.advs for ax in a.axes]
    cols = [c for a in idx.advs for c in a.cols]
    if not axes:  # only x[True]-style masks: the batch dimensions are size-1 new axes
        return y
    if batch == ():  # scalar run-time indices: a dynamic slice
        starts = [_const(0, idx.dtype)] * y.ndim
        for ax, c in zip(axes, cols):
            starts[ax] = c if is_symbolic(c) else _const(c, idx.dtype)
        sizes = tuple(1 if d in axes else n for d, n in enumerate(y.shape))
        return ops.DynamicSlice(sizes)(y, *starts)
    rest = y.ndim - len(axes)
    first = next(i for i, lb in enumerate(idx.labels) if lb[0] == "b")
    p = sum(lb[0] == _SLICE for lb in idx.labels[:first])
    offset = tuple(range(p)) + tuple(range(p + len(batch), len(batch) + rest))
    gather = ops.Gather(offset_dims=offset, collapsed_slice_dims=sorted(axes),
                        start_index_map=axes, index_vector_dim=len(batch),
                        slice_sizes=tuple(1 if d in axes else n for d, n in enumerate(y.shape)))
    return gather(y, _stack(cols, batch, idx.dtype))


@dispatch
def getitem(x: Array, key):
    """``x[key]`` with numpy's indexing rules (basic and advanced).

    Args:
        x: any array.
        key: an int, slice, ``...``, ``None``, integer array (hlodsl, numpy or
            a list), boolean mask with a known value, or a tuple of these.

    Returns:
        A new array of numpy's result shape: basic indices keep the order of
        the axes; the broadcast shape of the integer arrays takes the place of
        the first of them when they are adjacent, else comes first.

    Raises:
        IndexError: out-of-range concrete indices (naming index, axis and
            size), too many indices, masks of the wrong shape, invalid keys.
        StagingError: a boolean mask whose value is only known at run time.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.arange(24, dtype=np.int32).reshape(2, 3, 4))
    >>> getitem(x, (..., None, -1)).shape
    (2, 3, 1)
    >>> getitem(x, (1, [0, 2], [1, 3]))
    hlodsl.Array[int32, (2,)]([13, 23])
    >>> getitem(x, (0, slice(None), [[0], [3]])).shape   # non-adjacent: broadcast shape first
    (2, 1, 3)
    """
    return _getitem(x, key, "getitem")


def _getitem(x: Array, key, what: str):
    """``getitem``, with errors that name ``what`` (take, take_along_axis)."""
    idx = _parse(x, key, what)
    if idx.empty:
        return _zeros(x.dtype, idx.shape)
    y = _basic(x, idx)
    if idx.gathers:
        y = _gather(y, idx)
    return _reshape(y, idx.shape)


def _axis(axis, ndim: int, what: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise IndexError(f"{what}: axis {axis} is out of range for rank {ndim}")
    return axis % ndim


def _indices(indices, what: str) -> Array:
    if not isinstance(indices, Array):
        indices = array(np.asarray(indices))
    if not issubclass(indices.dtype, Integer):
        raise TypeError(f"{what}: indices must be integers, got {indices.type}")
    return indices


@dispatch
def take(x: Array, indices, axis=None):
    """Elements of ``x`` at the 1-D integer ``indices`` along ``axis``.

    ``axis`` may be omitted for a 1-D ``x``. Negative indices count from the
    end; range rules are those of :func:`getitem` (concrete out-of-range
    indices raise, symbolic ones are clamped by XLA).

    >>> import numpy as np, hlodsl as hd
    >>> take(hd.array(np.int32([[1, 2], [3, 4]])), hd.array(np.int64([1, 1, 0])), axis=1)
    hlodsl.Array[int32, (2, 3)](
      [[2, 2, 1],
       [4, 4, 3]])
    """
    indices = _indices(indices, "take")
    if indices.ndim != 1:
        raise IndexError(f"take: indices must be one-dimensional, got {indices.type}")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required for an array of rank {x.ndim} ({x.type})")
        axis = 0
    if x.ndim == 0:
        raise IndexError(f"take: cannot index a rank-0 array ({x.type})")
    axis = _axis(axis, x.ndim, "take")
    return _getitem(x, (slice(None),) * axis + (indices,), "take")


@dispatch
def take_along_axis(x: Array, indices, axis=-1):
    """``x``'s elements at ``indices`` along ``axis``, matched position by position.

    ``indices`` has ``x``'s rank; its other dimensions broadcast against
    ``x``'s. ``out[i, j] = x[i, indices[i, j]]`` for ``axis=1``.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.int32([[10, 30, 20], [60, 40, 50]]))
    >>> take_along_axis(x, hd.array(np.int64([[0, 2], [1, 0]])), axis=1)
    hlodsl.Array[int32, (2, 2)](
      [[10, 20],
       [40, 60]])
    """
    indices = _indices(indices, "take_along_axis")
    if indices.ndim != x.ndim or x.ndim == 0:
        raise fail(ValueError, f"take_along_axis: indices ({indices.type}) must have the same "
                               f"number of dimensions (rank) as x ({x.type}), at least 1")
    axis = _axis(axis, x.ndim, "take_along_axis")
    shape = []
    for d, (m, n) in enumerate(zip(x.shape, indices.shape)):
        if d == axis:
            shape.append(n)
        elif m == n or 1 in (m, n):
            shape.append(n if m == 1 else m)
        else:
            raise IndexError(f"take_along_axis: indices {indices.type} do not broadcast with "
                             f"x {x.type} outside axis {axis}")
    shape = tuple(shape)
    x = broadcast_to(x, shape[:axis] + x.shape[axis:axis + 1] + shape[axis + 1:])
    indices = broadcast_to(indices, shape)
    key = tuple(indices if d == axis else ops.Iota(int64, shape, d)() for d in range(x.ndim))
    return _getitem(x, key, "take_along_axis")


def _array_getitem(self, key):
    return getitem(self, key)


def _array_iter(self):
    if self.ndim == 0:
        raise TypeError(f"iteration over a rank-0 array {self.type}: only arrays of at "
                        "least 1 dimension iterate (along their leading axis)")
    return (getitem(self, i) for i in range(self.shape[0]))


Array.__getitem__ = _array_getitem
Array.__iter__ = _array_iter
