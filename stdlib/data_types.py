"""The data-type functions of the array API standard: astype, can_cast, finfo, iinfo,
isdtype and result_type.

Dtypes are hlodsl element types (``hd.float32``) or anything numpy reads as a
dtype; results are element types.

Promotion follows the array API standard's table where it has an entry: within
signed integers, within unsigned integers, signed with unsigned (``int8`` and
``uint8`` give ``int16``; ``int64`` with ``uint64`` has no entry and raises
TypeError), and among float32, float64, complex64 and complex128. Pairs the
standard leaves to the implementation: an integer (or bool) array with a
floating-point or complex one gives the latter's type, as JAX and PyTorch do
(``int32`` with ``float32`` gives ``float32``, where numpy gives ``float64``:
a loop counter must not widen a float32 carry); other mixed kinds (bool with
int) and float16/bfloat16 follow numpy's ``promote_types``; bfloat16 promotes
as float16 does, and bfloat16 with float16 gives float32. Python scalars are weakly typed:
they take the element type of the arrays and dtypes beside them where their
kind fits (an int scalar with an int8 array stays int8), and promote by numpy
otherwise (a float scalar with an int32 array gives float64, a complex one with
float32 gives complex64).

>>> import numpy as np, hlodsl as hd
>>> result_type(hd.int8, hd.uint8), result_type(hd.float32, 1.0), result_type(hd.int32, hd.float32)
(int16, float32, float32)
>>> finfo(hd.bfloat16).eps, iinfo(hd.uint8).max
(0.0078125, 255)
>>> astype(hd.array(np.float32([1.5, -2.5])), hd.int32)
hlodsl.Array[int32, (2,)]([ 1, -2])
"""

from __future__ import annotations

import dataclasses
import numbers

import ml_dtypes
import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import (
    Bool, ComplexFloating, ElementType, Floating, Inexact, Integer, Number, SignedInteger,
    UnsignedInteger, bfloat16, complex64, complex128, default_inexact, element_type, float16,
    float32, float64, int64, pred,
)

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
           "finfo_object", "iinfo_object"]


def _dtype(x, what: str, name: str = "dtype") -> type[ElementType]:
    """The element type of an array, numpy array or dtype-like ``x`` (argument ``name``)."""
    if isinstance(x, Array):
        return x.dtype
    if isinstance(x, (np.ndarray, np.generic)):
        return element_type(x.dtype)
    if x is None:  # numpy reads None as float64; the array API has no default here
        raise TypeError(f"{what}: {name} is required (a data type such as float32), got None")
    try:
        return element_type(x)
    except TypeError:
        raise TypeError(f"{what}: {name}={x!r} is neither an array nor a data type (float32, "
                        "int8, ... or a numpy dtype)") from None


# ----------------------------------------------------------------------------- promotion

_STANDARD_FLOATS = {float32: (32, False), float64: (64, False),
                    complex64: (32, True), complex128: (64, True)}
_SIGNED_BY_BITS = {8: "int8", 16: "int16", 32: "int32", 64: "int64"}


def _bits(t) -> int:
    return t.np_dtype.itemsize * 8


def _promote_pair(a, b, mixed_inexact: bool = True):
    """The array API standard's promotion of two element types (mixed kinds: an integer
    with an inexact type gives the inexact one, else numpy's rule; ``mixed_inexact=False``
    uses numpy's rule there too, which is safe casting)."""
    if a is b:
        return a
    if issubclass(a, Integer) and issubclass(b, Integer):
        if issubclass(a, SignedInteger) == issubclass(b, SignedInteger):
            return a if _bits(a) >= _bits(b) else b
        s, u = (a, b) if issubclass(a, SignedInteger) else (b, a)
        if _bits(u) < _bits(s):
            return s
        if _bits(u) == 64:
            raise TypeError(f"result_type: {s.__name__} and {u.__name__} have no common "
                            "integer type (the array API standard leaves it undefined)")
        return element_type(_SIGNED_BY_BITS[2 * _bits(u)])
    if a in _STANDARD_FLOATS and b in _STANDARD_FLOATS:
        (pa, ca), (pb, cb) = _STANDARD_FLOATS[a], _STANDARD_FLOATS[b]
        bits, cplx = max(pa, pb), ca or cb
        return {(32, False): float32, (64, False): float64,
                (32, True): complex64, (64, True): complex128}[bits, cplx]
    if {a, b} == {bfloat16, float16}:
        return float32
    # Integer/bool with inexact: the inexact type (JAX's and PyTorch's rule).
    if not mixed_inexact:
        pass
    elif issubclass(a, (Integer, Bool)) and issubclass(b, Inexact):
        return b
    if issubclass(b, (Integer, Bool)) and issubclass(a, Inexact):
        return a
    try:
        return element_type(np.promote_types(a.np_dtype, b.np_dtype))
    except TypeError:
        # numpy lacks some bfloat16 pairs (with int32, say): promote it as float16.
        sub = [float16 if t is bfloat16 else t for t in (a, b)]
        out = element_type(np.promote_types(sub[0].np_dtype, sub[1].np_dtype))
        return bfloat16 if out is float16 else out


def _scalar_fits(dtype, value) -> bool:
    """A Python scalar takes ``dtype`` when its kind fits (bool < int < float < complex)."""
    if isinstance(value, bool):
        return True
    if isinstance(value, numbers.Integral):
        return issubclass(dtype, Number)
    if isinstance(value, numbers.Real):
        return issubclass(dtype, (Floating, ComplexFloating))
    return issubclass(dtype, ComplexFloating)


def scalar_default(value):
    """numpy's default element type of a Python scalar: pred, int64, float64, complex128
    (float32 and complex64 where ``hd.config.default_float = "float32"``)."""
    if isinstance(value, bool):
        return pred
    if isinstance(value, numbers.Integral):
        return int64
    if isinstance(value, numbers.Real):
        return default_inexact(float64)
    return default_inexact(complex128)


def _as_python_number(x):
    """A Python number of the kind of the weakly typed scalar ``x`` (its value does not
    matter to promotion)."""
    if issubclass(x.dtype, ComplexFloating):
        return 0j
    if issubclass(x.dtype, Floating):
        return 0.0
    return False if issubclass(x.dtype, Bool) else 0


@dispatch
def result_type(*arrays_and_dtypes):
    """The element type that operands of these arrays, dtypes and Python scalars promote to.

    Follows the array API standard's promotion table; pairs it leaves to the
    implementation follow numpy (see the module docstring). Raises TypeError
    where the standard has no common type (int64 with uint64).

    >>> import hlodsl as hd
    >>> result_type(hd.int64, hd.uint32), result_type(hd.float32, hd.complex64)
    (int64, complex64)
    """
    if not arrays_and_dtypes:
        raise TypeError("result_type: at least one array or dtype is required")
    # A traced Python number (a weakly typed scalar array) promotes as the number would.
    items = [_as_python_number(x) if getattr(type(x), "_weak", False) else x
             for x in arrays_and_dtypes]
    scalars = [x for x in items if isinstance(x, (bool, int, float, complex))]
    typed = [_dtype(x, "result_type", "arrays_and_dtypes") for x in items
             if not isinstance(x, (bool, int, float, complex))]
    if not typed:  # only Python scalars: their default types
        typed, scalars = [scalar_default(scalars[0])], scalars[1:]
    out = typed[0]
    for t in typed[1:]:
        out = _promote_pair(out, t)
    for s in scalars:
        if _scalar_fits(out, s):
            continue
        if isinstance(s, complex) and issubclass(out, Floating):
            out = complex128 if out is float64 else complex64  # numpy: float32 + 1j
        else:
            out = _promote_pair(out, scalar_default(s))
    return out


@dispatch
def can_cast(from_, to):
    """Whether ``from_`` (a dtype or an array) casts to ``to`` keeping every value: the
    promotion of the two is ``to`` (numpy's rule for mixed kinds, i.e. safe casting).

    >>> import hlodsl as hd
    >>> can_cast(hd.int8, hd.int16), can_cast(hd.int64, hd.uint64), can_cast(hd.int32, hd.float32)
    (True, False, False)
    """
    src, dst = _dtype(from_, "can_cast", "from_"), _dtype(to, "can_cast", "to")
    try:
        # Safe casting: every value of ``from_`` survives (int32 to float32 does not,
        # though the two promote to float32).
        return _promote_pair(src, dst, mixed_inexact=False) is dst
    except TypeError:
        return False


# ----------------------------------------------------------------------------- info

@dataclasses.dataclass(frozen=True)
class finfo_object:  # noqa: N801  (the standard's name)
    """Machine limits of a floating-point type: ``bits, eps, max, min, smallest_normal, dtype``."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: type[ElementType]


@dataclasses.dataclass(frozen=True)
class iinfo_object:  # noqa: N801  (the standard's name)
    """Machine limits of an integer type: ``bits, max, min, dtype``."""

    bits: int
    max: int
    min: int
    dtype: type[ElementType]


_REAL_OF = {complex64: float32, complex128: float64}


@dispatch
def finfo(type):  # noqa: A002  (the standard's parameter name)
    """Limits of a floating-point dtype (or array); complex types give their real part's.

    >>> import hlodsl as hd
    >>> f = finfo(hd.float16); (f.bits, f.eps, f.max, f.dtype)
    (16, 0.0009765625, 65504.0, float16)
    """
    dt = _dtype(type, "finfo", "type")
    if not issubclass(dt, (Floating, ComplexFloating)):
        raise TypeError(f"finfo: {dt.__name__} is not a floating-point type (use iinfo)")
    real = _REAL_OF.get(dt, dt)
    info = ml_dtypes.finfo(real.np_dtype) if real is bfloat16 else np.finfo(real.np_dtype)
    return finfo_object(bits=int(info.bits), eps=float(info.eps), max=float(info.max),
                        min=float(info.min), smallest_normal=float(info.smallest_normal),
                        dtype=real)


@dispatch
def iinfo(type):  # noqa: A002  (the standard's parameter name)
    """Limits of an integer dtype (or array).

    >>> import hlodsl as hd
    >>> i = iinfo(hd.int8); (i.bits, i.min, i.max, i.dtype)
    (8, -128, 127, int8)
    """
    dt = _dtype(type, "iinfo", "type")
    if not issubclass(dt, Integer):
        raise TypeError(f"iinfo: {dt.__name__} is not an integer type (use finfo)")
    info = np.iinfo(dt.np_dtype)
    return iinfo_object(bits=int(info.bits), max=int(info.max), min=int(info.min), dtype=dt)


# ----------------------------------------------------------------------------- isdtype

_KINDS = {
    "bool": Bool,
    "signed integer": SignedInteger,
    "unsigned integer": UnsignedInteger,
    "integral": Integer,
    "real floating": Floating,
    "complex floating": ComplexFloating,
    "numeric": Number,
}


@dispatch
def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name, or a tuple of them.

    Kind names are the standard's: ``'bool'``, ``'signed integer'``,
    ``'unsigned integer'``, ``'integral'``, ``'real floating'`` (bfloat16
    included), ``'complex floating'`` and ``'numeric'``.

    >>> import hlodsl as hd
    >>> isdtype(hd.bfloat16, "real floating"), isdtype(hd.uint8, ("bool", "signed integer"))
    (True, False)
    """
    if isinstance(dtype, Array):
        raise TypeError("isdtype: pass a data type, not an array (use x.dtype)")
    dt = _dtype(dtype, "isdtype")
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        try:
            return issubclass(dt, _KINDS[kind])
        except KeyError:
            raise ValueError(f"isdtype: unknown kind {kind!r}; expected one of "
                             f"{', '.join(map(repr, _KINDS))}") from None
    return dt is _dtype(kind, "isdtype", "kind")


# ----------------------------------------------------------------------------- astype

@dispatch
def astype(x: Array, dtype, copy: bool = True, device=None):
    """``x`` converted to ``dtype`` elementwise (floats to integers truncate toward zero).

    hlodsl arrays are immutable values, so ``copy`` changes nothing observable:
    converting to ``x``'s own type returns ``x``. ``dtype`` is required (``None``
    is a TypeError, not numpy's float64). Complex to real, integer or bool is
    refused (the standard leaves it out; take ``real`` first), as
    ``ops.Convert`` refuses it. Out-of-range float to integer conversions follow
    XLA, not numpy (both are undefined in C).

    >>> import numpy as np, hlodsl as hd
    >>> astype(hd.array(np.int32([0, 3])), hd.bool_)
    hlodsl.Array[pred, (2,)]([False,  True])
    """
    if device is not None:
        raise ValueError("astype: device= is not supported (arrays live where XLA puts them)")
    dt = _dtype(dtype, "astype")
    if x.dtype is dt:
        return x
    if issubclass(x.dtype, ComplexFloating) and not issubclass(dt, ComplexFloating):
        raise TypeError(f"astype: cannot cast complex {x.type} to {dt.__name__}; "
                        "take real(x) or abs(x) first")
    return ops.Convert(dt)(x)
