"""numpy's protocols and numpy-style methods on ``Array``: numpy functions run hlodsl code.

``Array.__array_ufunc__`` and ``Array.__array_function__`` route numpy's
ufuncs (``np.exp``, ``np.add.reduce``) and functions (``np.sum``,
``np.concatenate``) called on hlodsl arrays, or on hlodsl and numpy arrays
mixed, to hlodsl's own implementations in ``hlodsl.stdlib``. So they give
hlodsl arrays, and they stage inside ``hd.compile`` like any stdlib call. A
numpy function hlodsl has no implementation of raises a TypeError that says
so, rather than quietly leaving hlodsl for numpy (which would compute on the
host eagerly and fail inside ``hd.compile``). ``np.asarray(x)`` and
``np.array(x)`` are unaffected: they convert through ``__array__``.

This module also installs the numpy-style methods (``x.sum(0)``,
``x.std(ddof=1)``, ``x.argmax()``, ``x.flatten()``, ...): the functions of
``numpy_functions`` with the array as first argument.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.float32([1, 2, 3]))
>>> np.exp(np.zeros(3, np.float32) + x * 0)
hlodsl.Array[float32, (3,)]([1., 1., 1.])
>>> np.add.reduce(x), x.argmax()
(hlodsl.Array[float32, ()](6.), hlodsl.Array[int64, ()](2))
"""

from __future__ import annotations

import hlodsl.stdlib as xp  # resolved at call time: this module loads while xp does
import numpy as np

from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import ComplexFloating, float64

from . import numpy_functions as nf
from . import numpy_functions_more as nfm
from .manipulation import fail

__all__: list[str] = []

# numpy ufunc -> the name of its ``hlodsl.stdlib`` function (the array API renamed some).
_UFUNCS = {
    "add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
    "true_divide": "divide", "power": "pow", "remainder": "remainder",
    "floor_divide": "floor_divide", "negative": "negative", "positive": "positive",
    "absolute": "abs", "fabs": "abs", "exp": "exp", "expm1": "expm1", "log": "log",
    "log2": "log2", "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "square": "square",
    "reciprocal": "reciprocal", "sin": "sin", "cos": "cos", "tan": "tan", "arcsin": "asin",
    "arccos": "acos", "arctan": "atan", "arctan2": "atan2", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
    "hypot": "hypot", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "sign": "sign", "signbit": "signbit", "copysign": "copysign", "nextafter": "nextafter",
    "logaddexp": "logaddexp", "maximum": "maximum", "minimum": "minimum", "equal": "equal",
    "not_equal": "not_equal", "less": "less", "less_equal": "less_equal",
    "greater": "greater", "greater_equal": "greater_equal", "logical_and": "logical_and",
    "logical_or": "logical_or", "logical_xor": "logical_xor", "logical_not": "logical_not",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "invert": "bitwise_invert", "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift", "isnan": "isnan", "isinf": "isinf",
    "isfinite": "isfinite", "conjugate": "conj", "matmul": "matmul", "vecdot": "vecdot",
}


def _float_power(x, y):
    # numpy's float_power computes in float64 (complex128 for complex operands).
    def widen(v):
        v = nf.as_array(v)
        return v if issubclass(v.dtype, ComplexFloating) else xp.astype(v, float64)
    return xp.pow(widen(x), widen(y))


_UFUNC_FUNCTIONS = {
    "float_power": _float_power,
    "exp2": lambda x: xp.pow(2.0, nfm._inexact(x)),
    "rint": lambda x: xp.round(nfm._inexact(x)),  # numpy's rint has float loops only
    "divmod": lambda x, y: (xp.floor_divide(x, y), xp.remainder(x, y)),
}

# ufunc.reduce and ufunc.accumulate: the stdlib reductions that compute the same.
_REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
           "logical_and": "all", "logical_or": "any"}
_ACCUMULATE = {"add": "cumulative_sum", "multiply": "cumulative_prod"}
_AT = {"add": "add", "multiply": "multiply", "minimum": "min", "maximum": "max"}


def _by_ufunc(table: dict) -> dict:
    """``table`` keyed by numpy's ufunc objects: another library's ufunc of the same name
    (scipy.special's, np.frompyfunc's) is not numpy's, so it must not match."""
    return {getattr(np, name): v for name, v in table.items()
            if isinstance(getattr(np, name, None), np.ufunc)}


_UFUNCS, _UFUNC_FUNCTIONS, _REDUCE, _ACCUMULATE, _AT = map(
    _by_ufunc, (_UFUNCS, _UFUNC_FUNCTIONS, _REDUCE, _ACCUMULATE, _AT))


def _no_equivalent(what: str) -> TypeError:
    return fail(TypeError, f"{what} has no hlodsl implementation, so it cannot take an hlodsl "
                           "array: use hlodsl.stdlib (import hlodsl.stdlib as xp), or convert "
                           "with np.asarray(x) first for numpy's result on the host (concrete "
                           "arrays only)")


def _foreign(values) -> bool:
    """Whether an operand is of a type with numpy overrides of its own (it gets its turn)."""
    return any(hasattr(type(v), "__array_ufunc__") and not isinstance(
        v, (Array, np.ndarray, np.generic)) for v in values)


def _ufunc_call(ufunc: np.ufunc, what: str, inputs, kwargs):
    dtype = kwargs.pop("dtype", None)
    nf.refuse(what, where=kwargs.pop("where", True),
              casting=(kwargs.pop("casting", "same_kind"), "same_kind"),
              order=(kwargs.pop("order", "K"), "K"), subok=(kwargs.pop("subok", True), True),
              signature=(kwargs.pop("signature", None), None))
    if kwargs:
        raise fail(TypeError, f"{what}: {', '.join(map(repr, kwargs))} is not supported by hlodsl")
    fn = _UFUNC_FUNCTIONS.get(ufunc)
    if fn is None:
        name = _UFUNCS.get(ufunc)
        if name is None:
            raise _no_equivalent(what)
        fn = getattr(xp, name)
    # numpy arrays become hlodsl arrays (the same values and type): the generics that take
    # only arrays (matmul) then take them too.
    inputs = [nf.as_array(v) if isinstance(v, np.ndarray) else v for v in inputs]
    if dtype is not None:  # numpy computes in dtype: convert the array operands to it
        inputs = [xp.astype(v, dtype) if isinstance(v, Array) else v for v in inputs]
    return fn(*inputs)


def _ufunc_reduce(ufunc, what, a, axis=0, dtype=None, out=None, keepdims=False,
                  initial=nf.NO_VALUE, where=True):
    nf.refuse(what, out=out, initial=initial, where=where)
    name = _REDUCE.get(ufunc)
    if name is None:
        raise _no_equivalent(what)
    a = nf.as_array(a)
    if name in ("sum", "prod"):
        return getattr(xp, name)(a, axis=axis, dtype=dtype, keepdims=keepdims)
    if dtype is not None:
        a = xp.astype(a, dtype)
    return getattr(xp, name)(a, axis=axis, keepdims=keepdims)


def _ufunc_accumulate(ufunc, what, a, axis=0, dtype=None, out=None):
    nf.refuse(what, out=out)
    name = _ACCUMULATE.get(ufunc)
    if name is None:
        raise _no_equivalent(what)
    return getattr(xp, name)(nf.as_array(a), axis=axis, dtype=dtype)


def _ufunc_outer(ufunc, what, a, b, **kwargs):
    # f.outer(a, b)[i..., j...] = f(a[i...], b[j...]): a gets b.ndim trailing unit axes.
    a, b = nf.as_array(a), nf.as_array(b)
    a = xp.reshape(a, a.shape + (1,) * b.ndim)
    return _ufunc_call(ufunc, what, (a, b), kwargs)


def _ufunc_at(ufunc, what, a, indices, b=None):
    method = _AT.get(ufunc)
    update = f"{method}(values)" if method else "set(new_values)"
    raise fail(TypeError, f"{what} writes into its first argument in place, and hlodsl arrays "
                          f"are immutable: write x = x.at[indices].{update} instead")


def _all_numpy(out) -> bool:
    return all(isinstance(o, np.ndarray) for o in out)


def _write(out: tuple, result):
    """numpy arrays given as ``out=`` (``a += x`` is np.add(a, x, out=(a,)) for a numpy ``a``)
    receive hlodsl's result, read back from the device: only the caller's numpy array is
    written. Inside hd.compile the read-back is a StagingError: a numpy array cannot hold a
    value the program has not computed yet."""
    results = result if isinstance(result, tuple) else (result,)
    for o, r in zip(out, results):
        np.copyto(o, np.asarray(r), casting="same_kind")  # numpy's rule for out=
    return out if isinstance(result, tuple) else out[0]


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """numpy ufuncs on hlodsl arrays: the stdlib function that computes the same."""
    if _foreign(inputs):
        return NotImplemented
    name = ufunc.__name__
    what = (f"numpy.{name}" if getattr(np, name, None) is ufunc else f"the ufunc {name}") + (
        "" if method == "__call__" else f".{method}")
    out = kwargs.pop("out", None)
    if out is not None and all(o is None for o in out):
        out = None
    if out is not None and not (method == "__call__" and _all_numpy(out)):
        raise fail(TypeError, f"{what}: out= is not supported: hlodsl arrays are immutable, so "
                              "nothing can be written into one; use the returned array instead")
    if method == "__call__":
        result = _ufunc_call(ufunc, what, inputs, kwargs)
        return result if out is None else _write(out, result)
    handler = {"reduce": _ufunc_reduce, "accumulate": _ufunc_accumulate,
               "outer": _ufunc_outer, "at": _ufunc_at}.get(method)
    if handler is None:
        raise _no_equivalent(what)
    return handler(ufunc, what, *inputs, **kwargs)


def _array_function(self, func, types, args, kwargs):
    """numpy functions on hlodsl arrays: ``numpy_functions``' implementation of each."""
    if not all(issubclass(t, (Array, np.ndarray)) for t in types):
        return NotImplemented  # another library's arrays: it gets its turn
    impl = nf.FUNCTIONS.get(func)
    if impl is not None:
        return impl(*args, **kwargs)
    if func in nfm.HOST_FUNCTIONS:
        return nfm.host_call(func, args, kwargs)
    module = getattr(func, "__module__", None) or "numpy"
    raise _no_equivalent(f"{module}.{getattr(func, '__name__', func)}")


Array.__array_ufunc__ = _array_ufunc
Array.__array_function__ = _array_function


# -- numpy-style methods -------------------------------------------------------------------

def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    nf.refuse("astype", casting=(casting, "unsafe"))
    return xp.astype(self, dtype, copy=copy)


def _reshape(self, *shape, order="C", copy=None):
    nf._order("reshape", order)
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    return xp.reshape(self, shape)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]  # x.transpose((1, 0)) and x.transpose(None) as well as x.transpose(1, 0)
    return nf.transpose(self, axes or None)


def _copy(self, order="C"):
    return self  # immutable: the array is its own copy


# Same parameters as the numpy functions, the array in the place of ``a``.
for _name, _fn in [
        ("sum", nf.sum_), ("prod", nf.prod_), ("mean", nf.mean), ("std", nf.std),
        ("var", nf.var), ("max", nf.max_), ("min", nf.min_), ("argmax", nf.argmax),
        ("argmin", nf.argmin), ("all", nf.all_), ("any", nf.any_), ("cumsum", nf.cumsum),
        ("cumprod", nf.cumprod), ("ravel", nf.ravel), ("flatten", nf.ravel),
        ("squeeze", nf.squeeze), ("swapaxes", nf.swapaxes), ("repeat", nf.repeat),
        ("clip", nfm.clip), ("round", nfm.round_), ("argsort", nfm.argsort),
        ("take", nfm.take), ("nonzero", nfm.nonzero), ("dot", nfm.dot),
        ("trace", nfm.trace), ("diagonal", nfm.diagonal)]:
    setattr(Array, _name, _fn)

Array.astype = _astype
Array.reshape = _reshape
Array.transpose = _transpose
Array.copy = _copy
Array.conj = Array.conjugate = lambda self: xp.conj(self)
Array.T = property(lambda self: _transpose(self), doc="All axes reversed, as numpy's ``.T``.")
Array.real = property(lambda self: xp.real(self), doc="The real part (``x`` for real arrays).")
Array.imag = property(lambda self: xp.imag(self), doc="The imaginary part (zeros for real ones).")
