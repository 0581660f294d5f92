"""Element type promotion and Python-scalar lifting for the stdlib.

Python scalars are weakly typed: ``x + 1`` keeps ``x``'s element type, as in
the array API standard. Two arrays of different element types promote by
numpy's table (the full array-API table is the stdlib issue's job).
"""

from __future__ import annotations

import numbers

import numpy as np

from hlodsl import ops
from hlodsl.array import Array, array
from hlodsl.dtypes import ComplexFloating, Floating, Integer, element_type, pred

__all__ = ["ArrayLike", "PyScalar", "result_dtype", "lift", "promote"]

PyScalar = bool | int | float | complex
ArrayLike = Array | bool | int | float | complex | np.ndarray | np.generic


def _weak_kind_ok(dtype, value) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, numbers.Integral):
        return True
    if isinstance(value, numbers.Real):
        return issubclass(dtype, (Floating, ComplexFloating))
    return issubclass(dtype, ComplexFloating)


def _scalar_default(value):
    if isinstance(value, bool):
        return pred
    if isinstance(value, numbers.Integral):
        return element_type(np.int64)
    if isinstance(value, numbers.Real):
        return element_type(np.float64)
    return element_type(np.complex128)


def result_dtype(*xs):
    """The element type of an elementwise result over arrays and Python scalars."""
    arrays = [x for x in xs if isinstance(x, (Array, np.ndarray, np.generic))]
    if not arrays:
        return element_type(np.result_type(*[_scalar_default(x).np_dtype for x in xs]))
    dt = element_type(np.result_type(*[_np_dtype(a) for a in arrays]))
    for x in xs:
        if isinstance(x, (bool, int, float, complex)) and not _weak_kind_ok(dt, x):
            dt = element_type(np.result_type(dt.np_dtype, _scalar_default(x).np_dtype))
    return dt


def _np_dtype(a):
    return a.dtype.np_dtype if isinstance(a, Array) else np.asarray(a).dtype


def lift(x, dtype):
    """``x`` as an array of element type ``dtype`` (converting arrays, wrapping scalars)."""
    dtype = element_type(dtype)
    if isinstance(x, Array):
        return x if x.dtype is dtype else ops.Convert(dtype)(x)
    if isinstance(x, int) and issubclass(dtype, Integer) and not isinstance(x, bool):
        info = np.iinfo(dtype.np_dtype)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} does not fit in {dtype.__name__}")
    return array(np.asarray(x, dtype=dtype.np_dtype))


def promote(*xs) -> list[Array]:
    """All operands as arrays of their common element type."""
    dt = result_dtype(*xs)
    return [lift(x, dt) for x in xs]
