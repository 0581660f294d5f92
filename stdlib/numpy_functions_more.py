"""More of numpy's functions on hlodsl arrays: sorting, selection, closeness, products, linalg.

The rest of ``numpy_functions.py`` (same rules: numpy's signatures, hlodsl's
implementations from ``hlodsl.stdlib``, registered in the same table). Some
are built from ``xp`` where the array API has no counterpart: ``isclose``,
``allclose`` and ``array_equal`` (Python bools, as numpy's, on concrete
arrays; symbolic booleans while staging), ``dot``, ``outer``, and ``round``
with ``decimals``.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array([3.14159, 2.71828])
>>> np.round(x, 2), np.allclose(x, [3.14159, 2.71828])
(hlodsl.Array[float64, (2,)]([3.14, 2.72]), True)
"""

from __future__ import annotations

import hlodsl.stdlib as xp  # resolved at call time: this module loads while xp does
import numpy as np

from hlodsl.arrays.array import Array, is_symbolic
from hlodsl.arrays.dtypes import Bool, Inexact, Integer, float64

from . import linalg as _linalg
from .manipulation import fail
from .numpy_functions import NO_VALUE, _flat, _implements, _order, as_array, refuse

__all__: list[str] = []


# -- sorting, searching, selecting -------------------------------------------------------

def _sort_args(what: str, order, axis, a: Array):
    if order is not None:
        raise fail(TypeError, f"numpy.{what}: order= (sorting structured arrays by field) is "
                              "not supported: hlodsl arrays have no fields")
    return (_flat(a), -1) if axis is None else (a, axis)


@_implements("sort")
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    # hlodsl's sort is always stable: a valid answer for any ``kind``.
    a, axis = _sort_args("sort", order, axis, as_array(a))
    return xp.sort(a, axis=axis)


@_implements("argsort")
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    a, axis = _sort_args("argsort", order, axis, as_array(a))
    return xp.argsort(a, axis=axis)


@_implements("searchsorted")
def searchsorted(a, v, side="left", sorter=None):
    return xp.searchsorted(as_array(a), v, side=side, sorter=sorter)


@_implements("take")
def take(a, indices, axis=None, out=None, mode="raise"):
    refuse("numpy.take", out=out, mode=(mode, "raise"))
    a = as_array(a)
    if axis is None:
        a, axis = _flat(a), 0
    axis = axis % a.ndim if a.ndim else axis
    idx = as_array(indices)
    # numpy takes indices of any shape: the array API's take, 1-D ones, then a reshape.
    got = xp.take(a, _flat(idx), axis=axis)
    return xp.reshape(got, a.shape[:axis] + idx.shape + a.shape[axis + 1:])


@_implements("take_along_axis")
def take_along_axis(arr, indices, axis=-1):
    arr, indices = as_array(arr), as_array(indices)
    if axis is None:
        arr, axis = _flat(arr), 0
    return xp.take_along_axis(arr, indices, axis=axis)


@_implements("where")
def where(condition, x=NO_VALUE, y=NO_VALUE):
    if x is NO_VALUE and y is NO_VALUE:
        return nonzero(condition)
    if x is NO_VALUE or y is NO_VALUE:
        raise fail(ValueError, "numpy.where: either both or neither of x and y should be given")
    return xp.where(condition, x, y)


@_implements("nonzero")
def nonzero(a):
    return tuple(xp.nonzero(as_array(a)))


@_implements("unique")
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True):
    refuse("numpy.unique", return_index=(return_index, False),
           return_inverse=(return_inverse, False), axis=(axis, None))
    if return_counts:
        return tuple(xp.unique_counts(as_array(ar)))
    return xp.unique_values(as_array(ar))


@_implements("diff")
def diff(a, n=1, axis=-1, prepend=NO_VALUE, append=NO_VALUE):
    return xp.diff(as_array(a), axis=axis, n=n, prepend=None if prepend is NO_VALUE else prepend,
                   append=None if append is NO_VALUE else append)


# -- elementwise functions that are not ufuncs ---------------------------------------------

@_implements("clip")
def clip(a, a_min=NO_VALUE, a_max=NO_VALUE, out=None, *, min=NO_VALUE, max=NO_VALUE):
    refuse("numpy.clip", out=out)
    if a_min is not NO_VALUE and min is not NO_VALUE or a_max is not NO_VALUE and max is not NO_VALUE:
        raise fail(TypeError, "numpy.clip: give each bound once (a_min or min, a_max or max)")
    lo = a_min if a_min is not NO_VALUE else None if min is NO_VALUE else min
    hi = a_max if a_max is not NO_VALUE else None if max is NO_VALUE else max
    return xp.clip(as_array(a), lo, hi)


@_implements("round", "around")
def round_(a, decimals=0, out=None):
    """Round half to even at ``decimals`` places, computed as numpy does: scale, round, unscale."""
    refuse("numpy.round", out=out)
    a = as_array(a)
    decimals = int(decimals)
    if decimals == 0 or issubclass(a.dtype, (Integer, Bool)) and decimals > 0:
        return xp.round(a)
    scale = 10.0 ** abs(decimals)
    if issubclass(a.dtype, Inexact):
        return (xp.round(a * scale) / scale) if decimals > 0 else xp.round(a / scale) * scale
    rounded = xp.round(xp.astype(a, float64) / scale) * scale  # integers, negative decimals
    return xp.astype(rounded, a.dtype)


@_implements("real")
def real(val):
    return xp.real(as_array(val))


@_implements("imag")
def imag(val):
    return xp.imag(as_array(val))


def _inexact(a) -> Array:
    a = as_array(a)
    return a if issubclass(a.dtype, Inexact) else xp.astype(a, float64)


@_implements("isclose")
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """numpy's test ``|a - b| <= atol + rtol * |b|``; equal infinities are close."""
    a, b = _inexact(a), _inexact(b)
    finite = xp.logical_and(xp.isfinite(a), xp.isfinite(b))
    near = xp.less_equal(xp.abs(a - b), atol + rtol * xp.abs(b))
    close = xp.logical_or(xp.equal(a, b), xp.logical_and(finite, near))
    if equal_nan:
        close = xp.logical_or(close, xp.logical_and(xp.isnan(a), xp.isnan(b)))
    return close


def _verdict(result: Array):
    """A Python bool, as numpy's, when the answer is known now; staged, the symbolic answer."""
    return result if is_symbolic(result) else bool(result)


@_implements("allclose")
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _verdict(xp.all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@_implements("array_equal")
def array_equal(a1, a2, equal_nan=False):
    a1, a2 = as_array(a1), as_array(a2)
    if a1.shape != a2.shape:
        return False  # shapes are static: known without the data, also while staging
    same = xp.equal(a1, a2)
    if equal_nan and issubclass(a1.dtype, Inexact) and issubclass(a2.dtype, Inexact):
        same = xp.logical_or(same, xp.logical_and(xp.isnan(a1), xp.isnan(a2)))
    return _verdict(xp.all(same))


# -- products and linear algebra ----------------------------------------------------------

@_implements("dot")
def dot(a, b, out=None):
    """numpy's dot: matmul for vectors and matrices, else a sum over a's last axis and b's
    second-to-last (one axis: its only one)."""
    refuse("numpy.dot", out=out)
    a, b = as_array(a), as_array(b)
    if a.ndim == 0 or b.ndim == 0:
        return xp.multiply(a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return xp.matmul(a, b)
    return xp.tensordot(a, b, axes=((a.ndim - 1,), (max(b.ndim - 2, 0),)))


@_implements("einsum")
def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """numpy's einsum (either form: subscripts or interleaved sublists), by ``xp.einsum``.

    ``optimize=False`` (numpy's default) contracts left to right; hlodsl has no
    single nested loop over every operand as numpy's unoptimised einsum does."""
    refuse("numpy.einsum", out=out)
    _order("einsum", order)
    return xp.einsum(*operands, optimize=optimize, preferred_element_type=dtype)


@_implements("einsum_path")
def einsum_path(*operands, optimize="greedy", einsum_call=False):
    refuse("numpy.einsum_path", einsum_call=(einsum_call, False))
    return xp.einsum_path(*operands, optimize=optimize)


@_implements("outer")
def outer(a, b, out=None):
    refuse("numpy.outer", out=out)
    a, b = _flat(as_array(a)), _flat(as_array(b))
    return xp.multiply(xp.reshape(a, (a.shape[0], 1)), b)


@_implements("tensordot")
def tensordot(a, b, axes=2):
    return xp.tensordot(as_array(a), as_array(b), axes=axes)


def _last_two(a: Array, axis1, axis2) -> Array:
    """``a`` with its axes ``axis1`` and ``axis2`` last (numpy's trace and diagonal default
    to the first two axes, the array API's to the last two)."""
    return xp.moveaxis(a, (axis1, axis2), (-2, -1))


@_implements("trace")
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    refuse("numpy.trace", out=out)
    return xp.linalg.trace(_last_two(as_array(a), axis1, axis2), offset=offset, dtype=dtype)


@_implements("diagonal")
def diagonal(a, offset=0, axis1=0, axis2=1):
    return xp.linalg.diagonal(_last_two(as_array(a), axis1, axis2), offset=offset)


def _passthrough(name: str):
    def fn(*args, **kwargs):
        args = [as_array(a) if isinstance(a, np.ndarray) else a for a in args]
        return getattr(xp.linalg, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"numpy.linalg.{name}: hlodsl.stdlib.linalg.{name}, which takes the same arguments."
    return fn


# numpy.linalg and the array API's linalg extension share their names and parameters.
for _name in _linalg.__all__:
    if _name[0].islower() and callable(getattr(np.linalg, _name, None)):
        _implements(_name, module=np.linalg)(_passthrough(_name))


# -- creation from an existing array ---------------------------------------------------------

def _like(name: str, fill: tuple, a, dtype, order, shape, device):
    _order(f"numpy.{name}", order)
    a = as_array(a)
    make = getattr(xp, name)
    if shape is None:
        return make(a, *fill, dtype=dtype, device=device)
    whole = getattr(xp, name[:-len("_like")])  # zeros_like(a, shape=s) is zeros(s, a's dtype)
    return whole(shape, *fill, dtype=a.dtype if dtype is None else dtype, device=device)


@_implements("zeros_like")
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like("zeros_like", (), a, dtype, order, shape, device)


@_implements("ones_like")
def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like("ones_like", (), a, dtype, order, shape, device)


@_implements("empty_like")
def empty_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like("empty_like", (), a, dtype, order, shape, device)


@_implements("full_like")
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like("full_like", (fill_value,), a, dtype, order, shape, device)


@_implements("meshgrid")
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    refuse("numpy.meshgrid", sparse=(sparse, False))
    return tuple(xp.meshgrid(*[as_array(x) for x in xi], indexing=indexing))


# Host-side functions (files and text): their result lives on the host anyway, so a
# concrete array is read back and numpy's own function runs (inside hd.compile the
# read-back raises a StagingError).
HOST_FUNCTIONS = frozenset(
    f for f in (getattr(np, n, None) for n in (
        "save", "savez", "savez_compressed", "savetxt", "array2string", "array_repr",
        "array_str")) if f is not None)


def host_call(func, args, kwargs):
    """``func`` with every hlodsl array among its arguments read into numpy."""
    def host(v):
        if isinstance(v, Array):
            return np.asarray(v)
        if type(v) in (list, tuple):
            return type(v)(host(e) for e in v)
        if type(v) is dict:
            return {k: host(e) for k, e in v.items()}
        return v
    return func(*host(tuple(args)), **host(dict(kwargs)))

