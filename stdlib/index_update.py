"""Functional updates on numpy-style indices: ``x.at[key].set(v)``, ``.add(v)``, ...

Arrays are immutable; ``x.at[key]`` takes every index form of ``x[key]``
(``stdlib/indexing.py``) and returns a new array. Keys of integers and step-1
slices become a DynamicUpdateSlice, everything else one Scatter with a
combiner. Repeated indices accumulate for add/multiply/min/max, as
``np.add.at``; which write wins in ``set`` is unspecified.

>>> import numpy as np, hlodsl as hd
>>> hd.array(np.zeros(3, np.int32)).at[[0, 2, 0]].add(1)
hlodsl.Array[int32, (3,)]([2, 0, 1])
"""

from __future__ import annotations

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array, is_symbolic
from hlodsl.arrays.dtypes import Bool
from hlodsl.errors import ShapeError, staging_error

from .broadcasting import broadcast_to
from .indexing import (  # the parsed-key helpers getitem is built from
    _INT, _NONE, _SLICE, _Index, _const, _parse, _reshape, _stack, getitem,
)
from .manipulation import fail
from .promotion import lift

__all__ = ["IndexUpdate"]


# -- functional updates ------------------------------------------------------------

def _set(old, new):
    return new


def _add(old, new):
    return (ops.Or() if issubclass(old.dtype, Bool) else ops.Add())(old, new)


def _multiply(old, new):
    return (ops.And() if issubclass(old.dtype, Bool) else ops.Multiply())(old, new)


def _min(old, new):
    return (ops.And() if issubclass(old.dtype, Bool) else ops.Minimum())(old, new)


def _max(old, new):
    return (ops.Or() if issubclass(old.dtype, Bool) else ops.Maximum())(old, new)


def _fit(values: Array, shape, what) -> Array:
    """``values`` broadcast to the indexed shape (surplus leading 1s dropped, as numpy)."""
    while values.ndim > len(shape) and values.shape[0] == 1:
        values = ops.Reshape(values.shape[1:])(values)
    try:
        return broadcast_to(values, shape)
    except ShapeError:
        raise ShapeError(f"{what}: shape mismatch: value array of shape {values.shape} could "
                         f"not be broadcast to indexing result of shape {tuple(shape)}") from None


def _masked_update(x, mask, values, combine, what):
    """Staged ``x.at[mask]``: a select, for values that do not depend on the count."""
    r = mask.ndim
    if mask.shape != x.shape[:r]:
        raise IndexError(f"{what}: boolean index of shape {mask.shape} does not match the "
                         f"leading dimensions of the indexed array of shape {x.shape}")
    trailing = x.shape[r:]
    while values.ndim > len(trailing):
        if values.shape[0] != 1:
            raise staging_error(
                f"{what}: with a mask of symbolic value, the values (shape {values.shape}) "
                "must not depend on how many elements are selected: give one value per "
                f"selected element of trailing shape {trailing} (or a scalar), or use where")
        values = ops.Reshape(values.shape[1:])(values)
    values = broadcast_to(_fit(values, trailing, what), x.shape)
    full = ops.Broadcast(x.shape, tuple(range(r)))(mask)
    return ops.Select()(full, combine(x, values), x)


def _scatter(x, idx: _Index, values, combine):
    nb = len(idx.batch)
    outer = [it for kind, it in idx.items if kind == _SLICE and not it.window]
    windows = [it for kind, it in idx.items if kind == _SLICE and it.window]
    lead = tuple(idx.batch) + tuple(s.length for s in outer)
    cols, col_axes = [], []

    def column(axis, col):
        cols.append(col)
        col_axes.append(axis)

    for a in idx.advs:
        for ax, c in zip(a.axes, a.cols):
            pad = (1,) * (nb - c.ndim)
            shape = pad + c.shape + (1,) * len(outer)
            column(ax, _reshape(c, shape) if is_symbolic(c) else np.reshape(c, shape))
    for kind, it in idx.items:
        if kind == _INT:
            column(it[0], np.asarray(it[1]))
    for j, s in enumerate(outer):
        shape = [1] * len(lead)
        shape[nb + j] = s.length
        column(s.axis, np.arange(s.length).reshape(shape) * s.step + s.start)
    for s in windows:
        if s.start:
            column(s.axis, np.asarray(s.start))
    canonical = [("b", j) for j in range(nb)] + [(_SLICE, s.axis) for s in outer + windows]
    kept = [lb for lb in idx.labels if lb[0] != _NONE]
    values = _reshape(values, [n for lb, n in zip(idx.labels, idx.shape) if lb[0] != _NONE])
    perm = [kept.index(lb) for lb in canonical]
    if perm != list(range(len(perm))):
        values = ops.Transpose(perm)(values)
    window_axes = {s.axis for s in windows}
    scatter = ops.Scatter(combine,
                          update_window_dims=range(len(lead), len(lead) + len(windows)),
                          inserted_window_dims=sorted(set(col_axes) - window_axes),
                          scatter_dims_to_operand_dims=col_axes, index_vector_dim=len(lead))
    return scatter(x, _stack(cols, lead, idx.dtype), values)


_VALUES = (Array, bool, int, float, complex, np.ndarray, np.generic, list, tuple)


def _update(x: Array, key, values, combine, what: str) -> Array:
    if not isinstance(values, _VALUES):
        raise fail(TypeError, f"{what}: values must be a number, a bool or an array "
                              f"(hlodsl or numpy, or a nested list), got "
                              f"{type(values).__name__} {values!r}")
    try:
        values = lift(values, x.dtype)
    except (TypeError, ValueError):
        if isinstance(values, Array):
            raise
        raise fail(TypeError, f"{what}: values {values!r} cannot be converted to "
                              f"{x.dtype.__name__} (the element type of {x.type}); give "
                              "numbers or an array") from None
    keys = key if isinstance(key, tuple) else (key,)
    if len(keys) == 1 and is_symbolic(keys[0]) and issubclass(keys[0].dtype, Bool):
        return _masked_update(x, keys[0], values, combine, what)
    idx = _parse(x, key, what)
    values = _fit(values, idx.shape, what)
    if idx.empty:
        return x
    if idx.static_box:  # a box of x: (dynamic-)update-slice at static starts
        starts, sizes = idx.box(x.ndim)
        sizes = [n if s is None else s for n, s in zip(x.shape, sizes)]
        values = _reshape(values, sizes)
        if tuple(sizes) == x.shape:
            return combine(x, values)
        starts = [_const(s, idx.dtype) for s in starts]
        if combine is not _set:
            values = combine(ops.DynamicSlice(sizes)(x, *starts), values)
        return ops.DynamicUpdateSlice()(x, values, *starts)
    return _scatter(x, idx, values, combine)


class IndexUpdate:
    """``x.at[key]``: methods that return ``x`` with the indexed elements updated.

    ``values`` broadcast to the shape of ``x[key]`` and are converted to
    ``x``'s element type (Python scalars included). Where ``key`` names an
    element more than once, ``add``, ``multiply``, ``min`` and ``max``
    accumulate every update, as numpy's ``np.add.at`` (for floats in an
    unspecified order); ``set`` keeps one of them, which one is unspecified.
    For pred arrays ``add``/``max`` are logical or, ``multiply``/``min`` and.

    >>> import numpy as np, hlodsl as hd
    >>> from hlodsl.stdlib import indexing
    >>> x = hd.array(np.zeros((2, 3), np.float32))
    >>> x.at[:, 1].set(7.0)
    hlodsl.Array[float32, (2, 3)](
      [[0., 7., 0.],
       [0., 7., 0.]])
    >>> x.at[0, [2, 2, 0]].add(hd.array(np.float32([1, 2, 3])))
    hlodsl.Array[float32, (2, 3)](
      [[3., 0., 3.],
       [0., 0., 0.]])
    """

    __slots__ = ("array", "key")

    def __init__(self, array, key):
        self.array, self.key = array, key

    def get(self):
        """``x[key]``."""
        return getitem(self.array, self.key)

    def set(self, values):
        """``x`` with ``x[key] = values``."""
        return _update(self.array, self.key, values, _set, "at[...].set")

    def add(self, values):
        """``x`` with ``values`` added at ``key`` (repeated indices accumulate)."""
        return _update(self.array, self.key, values, _add, "at[...].add")

    def multiply(self, values):
        """``x`` with the elements at ``key`` multiplied by ``values``."""
        return _update(self.array, self.key, values, _multiply, "at[...].multiply")

    def min(self, values):
        """``x`` with the elements at ``key`` replaced by their minimum with ``values``."""
        return _update(self.array, self.key, values, _min, "at[...].min")

    def max(self, values):
        """``x`` with the elements at ``key`` replaced by their maximum with ``values``."""
        return _update(self.array, self.key, values, _max, "at[...].max")


class _At:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, key):
        return IndexUpdate(self.array, key)


Array.at = property(_At, doc="Functional updates: ``x.at[key].set(v)``, ``.add(v)``, ...")
