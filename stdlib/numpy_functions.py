"""numpy's functions, with numpy's signatures, on hlodsl arrays: each runs ``hlodsl.stdlib``.

``np.sum(x, axis=0)`` on an hlodsl array comes here through numpy's
``__array_function__`` protocol (``numpy_interop.py``); the numpy-style
methods (``x.sum(0)``, ``x.std(ddof=1)``, ``x.argmax()``) are the same
functions. Each takes numpy's parameters, refuses those that would need
mutation (``out=``) or that hlodsl does not implement with a clear error, and
calls the array API function of ``hlodsl.stdlib`` (``xp``) that does the work,
so it stages inside ``hd.compile`` like any other stdlib call. Functions
without an ``xp`` counterpart are built from ``xp`` (``isclose``, ``dot``,
``round`` with ``decimals``); everything here is hlodsl code, never numpy's
(numpy only routes the call).

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.float32([[1, 2], [3, 4]]))
>>> np.sum(x, axis=0), np.std(x, ddof=1).dtype
(hlodsl.Array[float32, (2,)]([4., 6.]), float32)
"""

from __future__ import annotations

from collections.abc import Callable

import hlodsl.stdlib as xp  # resolved at call time: this module loads while xp does
import numpy as np

from hlodsl.arrays.array import Array, array
from hlodsl.arrays.dtypes import Inexact

from .manipulation import as_dtype, fail, normalize_axis

__all__ = ["FUNCTIONS", "NO_VALUE", "as_array", "refuse"]


class _NoValue:
    """numpy's ``<no value>`` default: tells "not given" apart from ``None``."""

    def __repr__(self) -> str:
        return "<no value>"


NO_VALUE = _NoValue()

#: numpy function object -> the hlodsl implementation taking numpy's arguments.
FUNCTIONS: dict[object, Callable] = {}


def _implements(*names: str, module=np):
    """Register the decorated function for ``module.<name>`` of each name that exists
    (numpy versions differ in which aliases they have)."""
    def register(fn):
        for name in names:
            target = getattr(module, name, None)
            if target is not None:
                FUNCTIONS[target] = fn
        return fn
    return register


def as_array(a) -> Array:
    """An hlodsl array for a numpy function's array argument (numpy data is copied in)."""
    return a if isinstance(a, Array) else array(a)


def refuse(what: str, *, out=None, where=True, initial=NO_VALUE, **defaults) -> None:
    """A TypeError naming ``what`` for arguments hlodsl cannot honour.

    ``out=``: hlodsl arrays are immutable, so there is nothing to write into.
    ``defaults`` maps a parameter name to ``(value given, the only value accepted)``.
    """
    if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
        raise fail(TypeError, f"{what}: out= is not supported: hlodsl arrays are immutable, "
                              f"so nothing can be written into an output array; use the "
                              f"returned array instead (y = {what.split('(')[0]}(...))")
    if not (where is True or isinstance(where, np.bool_) and where):
        raise fail(TypeError, f"{what}: where= is not supported; select with "
                              "hlodsl.stdlib.where(mask, result, other) instead")
    if initial is not NO_VALUE:
        raise fail(TypeError, f"{what}: initial= is not supported; combine the result with "
                              "the initial value yourself")
    for name, (given, accepted) in defaults.items():
        if given != accepted:
            raise fail(TypeError, f"{what}: {name}={given!r} is not supported by hlodsl "
                                  f"(only {name}={accepted!r})")


def _flat(a: Array) -> Array:
    return xp.reshape(a, (-1,))


# -- reductions ------------------------------------------------------------------------

@_implements("sum")
def sum_(a, axis=None, dtype=None, out=None, keepdims=False, initial=NO_VALUE, where=True):
    refuse("numpy.sum", out=out, initial=initial, where=where)
    return xp.sum(as_array(a), axis=axis, dtype=dtype, keepdims=keepdims)


@_implements("prod")
def prod_(a, axis=None, dtype=None, out=None, keepdims=False, initial=NO_VALUE, where=True):
    refuse("numpy.prod", out=out, initial=initial, where=where)
    return xp.prod(as_array(a), axis=axis, dtype=dtype, keepdims=keepdims)


def _statistic(fn, what: str, a, axis, dtype, keepdims, **extra):
    """``fn`` (mean, std, var) of ``a`` with numpy's ``dtype=``: computed in it if it is a
    float type, else computed as usual and converted (numpy truncates to an integer dtype)."""
    a = as_array(a)
    if dtype is None:
        return fn(a, axis=axis, keepdims=keepdims, **extra)
    dtype = as_dtype(dtype, f"numpy.{what}")
    if issubclass(dtype, Inexact):
        a = xp.astype(a, dtype)
    result = fn(a, axis=axis, keepdims=keepdims, **extra)
    return result if result.dtype is dtype else xp.astype(result, dtype)


@_implements("mean")
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    refuse("numpy.mean", out=out, where=where)
    return _statistic(xp.mean, "mean", a, axis, dtype, keepdims)


def _spread(fn, what: str, a, axis, dtype, out, ddof, keepdims, where, mean, correction):
    refuse(f"numpy.{what}", out=out, where=where)
    if mean is not NO_VALUE:
        raise fail(TypeError, f"numpy.{what}: mean= is not supported; hlodsl computes the mean")
    if correction is not NO_VALUE:
        if ddof != 0:
            raise fail(ValueError, f"numpy.{what}: ddof and correction can't be provided "
                                   "simultaneously")
        ddof = correction
    return _statistic(fn, what, a, axis, dtype, keepdims, correction=ddof)


@_implements("std")
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        mean=NO_VALUE, correction=NO_VALUE):
    return _spread(xp.std, "std", a, axis, dtype, out, ddof, keepdims, where, mean, correction)


@_implements("var")
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        mean=NO_VALUE, correction=NO_VALUE):
    return _spread(xp.var, "var", a, axis, dtype, out, ddof, keepdims, where, mean, correction)


@_implements("max", "amax")
def max_(a, axis=None, out=None, keepdims=False, initial=NO_VALUE, where=True):
    refuse("numpy.max", out=out, initial=initial, where=where)
    return xp.max(as_array(a), axis=axis, keepdims=keepdims)


@_implements("min", "amin")
def min_(a, axis=None, out=None, keepdims=False, initial=NO_VALUE, where=True):
    refuse("numpy.min", out=out, initial=initial, where=where)
    return xp.min(as_array(a), axis=axis, keepdims=keepdims)


@_implements("argmax")
def argmax(a, axis=None, out=None, *, keepdims=False):
    refuse("numpy.argmax", out=out)
    return xp.argmax(as_array(a), axis=axis, keepdims=keepdims)


@_implements("argmin")
def argmin(a, axis=None, out=None, *, keepdims=False):
    refuse("numpy.argmin", out=out)
    return xp.argmin(as_array(a), axis=axis, keepdims=keepdims)


@_implements("all")
def all_(a, axis=None, out=None, keepdims=False, *, where=True):
    refuse("numpy.all", out=out, where=where)
    return xp.all(as_array(a), axis=axis, keepdims=keepdims)


@_implements("any")
def any_(a, axis=None, out=None, keepdims=False, *, where=True):
    refuse("numpy.any", out=out, where=where)
    return xp.any(as_array(a), axis=axis, keepdims=keepdims)


@_implements("cumsum")
def cumsum(a, axis=None, dtype=None, out=None):
    refuse("numpy.cumsum", out=out)
    a = as_array(a)
    return xp.cumulative_sum(_flat(a) if axis is None else a, axis=axis, dtype=dtype)


@_implements("cumprod")
def cumprod(a, axis=None, dtype=None, out=None):
    refuse("numpy.cumprod", out=out)
    a = as_array(a)
    return xp.cumulative_prod(_flat(a) if axis is None else a, axis=axis, dtype=dtype)


@_implements("cumulative_sum")
def cumulative_sum(x, *, axis=None, dtype=None, out=None, include_initial=False):
    refuse("numpy.cumulative_sum", out=out)
    return xp.cumulative_sum(as_array(x), axis=axis, dtype=dtype, include_initial=include_initial)


@_implements("cumulative_prod")
def cumulative_prod(x, *, axis=None, dtype=None, out=None, include_initial=False):
    refuse("numpy.cumulative_prod", out=out)
    return xp.cumulative_prod(as_array(x), axis=axis, dtype=dtype, include_initial=include_initial)


@_implements("count_nonzero")
def count_nonzero(a, axis=None, *, keepdims=False):
    return xp.count_nonzero(as_array(a), axis=axis, keepdims=keepdims)


# -- shapes and layout ---------------------------------------------------------------

def _order(what: str, order) -> None:
    # Arrays have no memory layout to choose; 'F' would also reorder the elements.
    if order not in ("C", "K", "A", None):
        raise fail(TypeError, f"{what}: order={order!r} is not supported (hlodsl arrays have "
                              "no memory order; use permute_dims for a Fortran-order reading)")


@_implements("reshape")
def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    _order("numpy.reshape", order)
    return xp.reshape(as_array(a), newshape if shape is None else shape)


@_implements("ravel")
def ravel(a, order="C"):
    _order("numpy.ravel", order)
    return _flat(as_array(a))


@_implements("transpose", "permute_dims")
def transpose(a, axes=None):
    a = as_array(a)
    return xp.permute_dims(a, tuple(reversed(range(a.ndim))) if axes is None else axes)


@_implements("matrix_transpose")
def matrix_transpose(x):
    return xp.matrix_transpose(as_array(x))


@_implements("swapaxes")
def swapaxes(a, axis1, axis2):
    a = as_array(a)
    i, j = (normalize_axis(axis, a.ndim, "swapaxes") for axis in (axis1, axis2))
    perm = list(range(a.ndim))
    perm[i], perm[j] = j, i
    return xp.permute_dims(a, tuple(perm))


@_implements("moveaxis")
def moveaxis(a, source, destination):
    return xp.moveaxis(as_array(a), source, destination)


@_implements("squeeze")
def squeeze(a, axis=None):
    return xp.squeeze(as_array(a), axis=axis)


@_implements("expand_dims")
def expand_dims(a, axis):
    return xp.expand_dims(as_array(a), axis=axis)


def _joined(what: str, arrays, dtype, out, casting) -> list[Array]:
    refuse(what, out=out, casting=(casting, "same_kind"))
    arrays = [as_array(a) for a in arrays]
    return arrays if dtype is None else [xp.astype(a, dtype) for a in arrays]


@_implements("concatenate", "concat")
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrays = _joined("numpy.concatenate", arrays, dtype, out, casting)
    if axis is None:  # numpy: flattened, then joined
        arrays, axis = [_flat(a) for a in arrays], 0
    return xp.concat(arrays, axis=axis)


@_implements("stack")
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    return xp.stack(_joined("numpy.stack", arrays, dtype, out, casting), axis=axis)


def _at_least(a: Array, ndim: int) -> Array:
    if a.ndim >= ndim:
        return a
    return xp.reshape(a, (1,) * (ndim - a.ndim) + a.shape)


@_implements("vstack")
def vstack(tup, *, dtype=None, casting="same_kind"):
    arrays = _joined("numpy.vstack", tup, dtype, None, casting)
    return xp.concat([_at_least(a, 2) for a in arrays], axis=0)


@_implements("hstack")
def hstack(tup, *, dtype=None, casting="same_kind"):
    arrays = [_at_least(a, 1) for a in _joined("numpy.hstack", tup, dtype, None, casting)]
    return xp.concat(arrays, axis=0 if arrays and arrays[0].ndim == 1 else 1)


@_implements("flip")
def flip(m, axis=None):
    return xp.flip(as_array(m), axis=axis)


@_implements("roll")
def roll(a, shift, axis=None):
    return xp.roll(as_array(a), shift, axis=axis)


@_implements("tile")
def tile(A, reps):
    return xp.tile(as_array(A), reps)


@_implements("repeat")
def repeat(a, repeats, axis=None):
    return xp.repeat(as_array(a), repeats, axis=axis)


@_implements("broadcast_to")
def broadcast_to(array, shape, subok=False):
    return xp.broadcast_to(as_array(array), shape)


@_implements("broadcast_arrays")
def broadcast_arrays(*args, subok=False):
    return tuple(xp.broadcast_arrays(*[as_array(a) for a in args]))


@_implements("tril")
def tril(m, k=0):
    return xp.tril(as_array(m), k=k)


@_implements("triu")
def triu(m, k=0):
    return xp.triu(as_array(m), k=k)


@_implements("copy")
def copy(a, order="K", subok=False):
    return as_array(a)  # immutable: the array is its own copy


@_implements("astype")
def astype(x, dtype, *, copy=True, device=None):
    return xp.astype(as_array(x), dtype, copy=copy, device=device)


@_implements("shape")
def shape(a):
    return as_array(a).shape


@_implements("ndim")
def ndim(a):
    return as_array(a).ndim


@_implements("size")
def size(a, axis=None):
    a = as_array(a)
    return a.size if axis is None else a.shape[normalize_axis(axis, a.ndim, "size")]
