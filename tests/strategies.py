"""Hypothesis strategies for op tests: element types, shapes, and arrays drawn from a domain.

A ``Domain`` says which values an operand may hold (positive for ``log``,
non-zero for divisors, ...), so every op is tested inside the region where its
semantics are defined and every implementation agrees.

>>> from hypothesis import given
>>> @given(arrays(hd.float32, (3,), Domain(lo=0.25, hi=4)))
... def test(x):
...     assert x.dtype == np.float32 and (x >= 0.25).all()
>>> test()
"""

from __future__ import annotations

import math

import attrs
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import ml_dtypes
import numpy as np

import hlodsl as hd
from hlodsl.arrays.dtypes import all_element_types

__all__ = [
    "ALL", "PRED", "SIGNED", "UNSIGNED", "INTS", "FLOATS", "COMPLEX", "NUMBERS", "INEXACT",
    "of_kind", "Domain", "ANY", "shapes", "arrays", "SPECIAL_FLOATS",
]

ALL = all_element_types()


def of_kind(*kinds) -> tuple:
    """The concrete element types under the abstract ``kinds``, in a fixed order."""
    return tuple(t for t in ALL if issubclass(t, kinds))


PRED = (hd.pred,)
SIGNED = of_kind(hd.SignedInteger)
UNSIGNED = of_kind(hd.UnsignedInteger)
INTS = SIGNED + UNSIGNED
FLOATS = of_kind(hd.Floating)
COMPLEX = of_kind(hd.ComplexFloating)
INEXACT = FLOATS + COMPLEX
NUMBERS = INTS + INEXACT

SPECIAL_FLOATS = (math.nan, math.inf, -math.inf, -0.0)
#: Default range of real (and complex component) values: wide enough to be
#: interesting, narrow enough that sums and products of a few stay finite in f16.
FLOAT_RANGE = 16.0


@attrs.frozen
class Domain:
    """Values an operand may take.

    ``lo``/``hi`` bound integers (clipped to the type's range; ``None`` is the
    whole range) and real floats and complex components (``None`` is
    ``±FLOAT_RANGE``); bounds should be dyadic so every float type represents
    them. ``nonzero`` excludes 0, ``no_int_min`` excludes the most negative
    integer (``INT_MIN / -1`` overflows), ``special`` adds NaN, ±inf and -0.0
    to real floats, and ``step`` draws floats on a grid (ties for rounding,
    exact sums).
    """

    lo: float | None = None
    hi: float | None = None
    nonzero: bool = False
    no_int_min: bool = False
    special: bool = False
    step: float | None = None


ANY = Domain()


def shapes(min_rank: int = 0, max_rank: int = 3, min_side: int = 1, max_side: int = 4):
    return hnp.array_shapes(min_dims=min_rank, max_dims=max_rank, min_side=min_side,
                            max_side=max_side)


def _int_elements(np_dtype, d: Domain):
    info = np.iinfo(np_dtype)
    lo = info.min if d.lo is None else max(info.min, math.ceil(d.lo))
    hi = info.max if d.hi is None else min(info.max, math.floor(d.hi))
    if d.no_int_min and lo == info.min and info.min < 0:
        lo += 1
    ints = st.integers(lo, hi)
    return ints.filter(bool) if d.nonzero else ints


def _smallest_normal(np_dtype) -> float:
    return float(ml_dtypes.finfo(np_dtype).tiny)


def _float_elements(np_dtype, d: Domain):
    lo = -FLOAT_RANGE if d.lo is None else d.lo
    hi = FLOAT_RANGE if d.hi is None else d.hi
    if d.step is not None:
        grid = st.integers(math.ceil(lo / d.step), math.floor(hi / d.step)).map(
            lambda k: k * d.step)
        values = grid.filter(bool) if d.nonzero else grid
    else:
        # Subnormals are left out: XLA may flush them to zero where numpy does not.
        tiny = max(_smallest_normal(np_dtype), 2.0 ** -10 if np_dtype.itemsize <= 2 else 0)
        width = 64 if np_dtype.itemsize >= 8 else 32
        raw = st.floats(lo, hi, allow_nan=False, allow_subnormal=False, width=width)

        def off_subnormals(v: float) -> float:
            if abs(v) >= tiny:
                return v
            return math.copysign(tiny, v) if d.nonzero else 0.0 * v  # 0.0 * v keeps -0.0

        values = raw.map(off_subnormals)
    if d.special:
        values = values | st.sampled_from(SPECIAL_FLOATS)
    return values


def _narrow(a: np.ndarray, np_dtype) -> np.ndarray:
    with np.errstate(over="ignore"):  # values beyond a narrow type's range become inf
        return a.astype(np_dtype)


def _real(np_dtype, shape, d: Domain):
    np_dtype = np.dtype(np_dtype)
    host = np.float64 if np_dtype.itemsize >= 8 else np.float32
    return hnp.arrays(host, shape, elements=_float_elements(np_dtype, d)).map(
        lambda a: _narrow(a, np_dtype))


def arrays(dtype, shape, domain: Domain = ANY):
    """numpy arrays of hlodsl element type ``dtype`` and ``shape``, values in ``domain``."""
    np_dtype = dtype.np_dtype
    if dtype is hd.pred:
        return hnp.arrays(np.bool_, shape)
    if issubclass(dtype, hd.Integer):
        return hnp.arrays(np_dtype, shape, elements=_int_elements(np_dtype, domain))
    if issubclass(dtype, hd.ComplexFloating):
        part = np.float32 if np_dtype == np.complex64 else np.float64
        # Complex NaN/inf combinations differ between libraries by design: finite only.
        finite = attrs.evolve(domain, special=False)
        return st.tuples(_real(part, shape, finite), _real(part, shape, finite)).map(
            lambda ri: (ri[0] + 1j * ri[1]).astype(np_dtype))
    return _real(np_dtype, shape, domain)
