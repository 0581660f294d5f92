"""Argument checks shared by the nn layers: static window tuples, paddings, array checks."""

from __future__ import annotations

import numbers
import operator

import numpy as np

from hlodsl.arrays.scalars import static_hint
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import Floating
from hlodsl.errors import ShapeError

from ..manipulation import fail

__all__ = ["per_dim", "conv_padding", "require_array", "require_array_like", "require_float",
           "spatial_rank", "static_real", "check_range", "static_shape"]


def per_dim(value, n: int, what: str, name: str, minimum: int = 1) -> tuple[int, ...]:
    """An int (every spatial dim) or a sequence of ``n`` ints, each at least ``minimum``."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    try:
        values = tuple(operator.index(v) for v in values)
    except TypeError:
        raise fail(TypeError, f"{what}: {name} must be a static int or a sequence of "
                              f"ints, got {value!r}") from None
    if len(values) != n:
        raise fail(ValueError, f"{what}: {name}={value!r} needs {n} entries, one per "
                               "spatial dimension")
    if any(v < minimum for v in values):
        raise fail(ValueError, f"{what}: {name}={value!r} must be >= {minimum}")
    return values


def conv_padding(padding, in_sizes, window, strides, dilations, what: str):
    """(low, high) per spatial dim from "VALID", "SAME", an int, ints, or pairs.

    "SAME" gives ``ceil(n / stride)`` outputs, the extra element of an odd
    total padding going after (as torch's ``padding="same"`` and XLA's SAME).
    """
    n = len(in_sizes)
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return ((0, 0),) * n
        if mode != "SAME":
            raise fail(ValueError, f"{what}: padding must be 'VALID', 'SAME', an int, ints "
                                   f"or (low, high) pairs, got {padding!r}")
        pads = []
        for size, k, s, d in zip(in_sizes, window, strides, dilations):
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    if isinstance(padding, (tuple, list)) and padding and isinstance(padding[0], (tuple, list)):
        if len(padding) != n or any(len(p) != 2 for p in padding):
            raise fail(ValueError, f"{what}: padding={padding!r} needs {n} (low, high) pairs")
        pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    else:
        pads = tuple((p, p) for p in per_dim(padding, n, what, "padding", minimum=0))
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise fail(ValueError, f"{what}: padding={padding!r} must be non-negative")
    return pads


def require_array(x, what: str, name: str) -> Array:
    if not isinstance(x, Array):
        raise fail(TypeError, f"{what}: {name} must be an hlodsl Array, got "
                              f"{type(x).__name__} (hlodsl.array(x) makes one)")
    return x


def require_array_like(x, what: str, name: str):
    """``x`` if it is an array (hlodsl or numpy) or a Python number, else a TypeError."""
    if not isinstance(x, (Array, np.ndarray, np.generic, numbers.Number)):
        raise fail(TypeError, f"{what}: {name} must be an array (hlodsl or numpy) or a number, "
                              f"got {type(x).__name__} {x!r}")
    return x


def static_real(value, what: str, name: str):
    """``value`` if it is a static real number (an int or a float, not a bool), else a TypeError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise fail(TypeError, f"{what}: {name} must be a static real number (an int or a "
                              f"float), got {type(value).__name__} {value!r}"
                              f"{static_hint(value, name)}")
    return value


def check_range(value, ok: bool, what: str, name: str, allowed: str):
    """A ValueError naming ``what``, ``name`` and what is ``allowed`` unless ``ok``."""
    if not ok:  # NaN compares false, so it lands here too
        raise fail(ValueError, f"{what}: {name} must be {allowed}, got {value!r}")
    return value


def static_shape(shape, what: str) -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of non-negative ints."""
    try:
        many = not isinstance(shape, str) and hasattr(shape, "__len__")
        dims = tuple(operator.index(d) for d in (tuple(shape) if many else (shape,)))
    except TypeError:
        raise fail(TypeError, f"{what}: shape must be a static int or a sequence of ints, "
                              f"got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise fail(ValueError, f"{what}: shape {dims} must be non-negative (every dimension "
                               ">= 0)")
    return dims


def require_float(x, what: str, name: str) -> Array:
    require_array(x, what, name)
    if not issubclass(x.dtype, Floating):
        raise fail(TypeError, f"{what}: {name} must be floating-point, got {x.type}")
    return x


def spatial_rank(x: Array, what: str, layout: str = "(N, C, *spatial)") -> int:
    """The number of spatial dims of a batched, channels-first ``x`` (at least one)."""
    if x.ndim < 3:
        raise fail(ShapeError, f"{what}: x must be {layout} with at least one spatial "
                               f"dimension, got {x.type}")
    return x.ndim - 2
