"""Element type promotion and Python-scalar lifting for the stdlib.

Python scalars are weakly typed: ``x + 1`` keeps ``x``'s element type, as in
the array API standard. Arrays of different element types promote by the
standard's table (``data_types.result_type``; numpy's rules where the table
leaves mixed kinds to the implementation).
"""

from __future__ import annotations

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array, array
from hlodsl.cache import BoundedCache
from hlodsl.ir.graph import current_builder
from hlodsl.ir.structural import Constant
from hlodsl.arrays.dtypes import Bool, Integer, element_type

from .data_types import result_type

__all__ = ["ArrayLike", "PyScalar", "result_dtype", "lift", "promote", "truth"]

PyScalar = bool | int | float | complex
ArrayLike = Array | bool | int | float | complex | np.ndarray | np.generic


def result_dtype(*xs):
    """The element type of an elementwise result over arrays and Python scalars.

    The array API standard's promotion table (``data_types.result_type``):
    operators and functions promote exactly as ``xp.result_type`` says.
    """
    return result_type(*xs)


def lift(x, dtype):
    """``x`` as an array of element type ``dtype`` (converting arrays, wrapping scalars)."""
    dtype = element_type(dtype)
    if isinstance(x, Array):
        return x if x.dtype is dtype else ops.Convert(dtype)(x)
    if isinstance(x, int) and issubclass(dtype, Integer) and not isinstance(x, bool):
        info = np.iinfo(dtype.np_dtype)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} does not fit in {dtype.__name__}")
    host = np.asarray(x, dtype=dtype.np_dtype)
    if current_builder() is not None:  # staging: a constant of the program, not a transfer
        return Constant(host)()
    if host.ndim:
        return array(host)
    # Eagerly, a scalar operand (x * 0.99) would be a device transfer per call: the
    # arrays of recent scalars are kept (arrays are immutable, so they can be shared).
    key = (host.dtype, host.tobytes())  # not .str: "<V1" names every float8 and int4
    cached = _SCALARS.get(key)
    if cached is None:
        cached = _SCALARS.put(key, array(host))
    return cached


_SCALARS = BoundedCache(1024, "eager scalar operands")


def promote(*xs) -> list[Array]:
    """All operands as arrays of their common element type."""
    dt = result_dtype(*xs)
    return [lift(x, dt) for x in xs]


def truth(x: Array) -> Array:
    """``x != 0`` as a pred array (NaN counts as true); a pred array is returned as is.

    XLA has no complex-to-pred convert, and a comparison is what numpy's
    ``astype(bool)`` means for every element type, so all callers use this.
    """
    if issubclass(x.dtype, Bool):
        return x
    return ops.Compare("NE")(x, ops.Broadcast(x.shape)(lift(0, x.dtype)))
