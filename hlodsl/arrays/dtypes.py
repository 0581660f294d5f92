"""XLA element types as a class hierarchy usable in dispatch signatures.

Every XLA array element type is a class (``float32``, ``bfloat16``, ``pred``, ...)
that carries its numpy dtype and its HLO name. The abstract classes above them
(``Number``, ``Integer``, ``Floating``, ...) exist so that a plum signature such
as ``Array[Floating, (None, None)]`` reads "any float matrix", bfloat16 included
(``ml_dtypes.bfloat16`` is not an ``np.floating``, so numpy's own hierarchy
cannot be used for this).

>>> float32.hlo, float32.np_dtype
('f32', dtype('float32'))
>>> issubclass(bfloat16, Floating), issubclass(int8, Floating)
(True, False)
>>> element_type(np.dtype("uint16"))
uint16
"""

from __future__ import annotations

from typing import ClassVar

import ml_dtypes
import numpy as np

from hlodsl.settings import config

__all__ = [
    "Bool",
    "ComplexFloating",
    "ElementType",
    "Floating",
    "Inexact",
    "Integer",
    "Number",
    "SignedInteger",
    "UnsignedInteger",
    "all_element_types",
    "bfloat16",
    "bit_width",
    "bool_",
    "complex64",
    "complex128",
    "device_refusal",
    "element_type",
    "float4_e2m1fn",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float16",
    "float32",
    "float64",
    "from_hlo",
    "int2",
    "int4",
    "int8",
    "int16",
    "int32",
    "int64",
    "narrow_element_types",
    "native_byte_order",
    "pred",
    "uint2",
    "uint4",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "default_inexact",
]


class _ElementTypeMeta(type):
    """Element types print as their name, and compare equal to what names their numpy dtype.

    ``x.dtype == np.float32`` is how numpy users test an element type, so a
    concrete element type equals its numpy dtype, the numpy scalar type, a
    string naming it, and the dtype-carrying scalar types of other libraries
    (``jax.numpy.float32``). Python's ``int``/``float``/``bool``/``complex``
    are deliberately *not* equal to anything here: hlodsl treats Python
    numbers as weakly typed, so ``float`` does not name ``float64``. Between
    element types equality stays identity, and abstract classes (``Floating``)
    equal only themselves.

    A concrete element type hashes as its ``np.dtype``, so the two are
    interchangeable as dict keys, as Python requires of objects that compare
    equal. (numpy itself cannot also hash equal to ``np.float32`` or
    ``"float32"``, which compare equal to its dtype: neither can we.) Element
    types keep distinct hashes among themselves, so dicts and sets of them,
    and plum's caches keyed by them, work as before.

    >>> float32 == np.float32, float32 == np.dtype("float32"), float32 == "float32"
    (True, True, True)
    >>> float32 != np.float64, float32 == float, Floating == np.floating
    (True, False, False)
    >>> {np.dtype("int8"): "found"}[int8], np.dtype(bfloat16)
    ('found', dtype(bfloat16))
    """

    def __repr__(cls) -> str:
        return cls.__name__

    def __eq__(cls, other):
        if isinstance(other, _ElementTypeMeta):
            return cls is other
        mine = cls.__dict__.get("np_dtype")  # abstract classes have none of their own
        if mine is None:
            return NotImplemented
        if isinstance(other, str) and other == cls.__name__:  # "pred" is not a numpy name
            return True
        theirs = _numpy_dtype_of(other)
        return NotImplemented if theirs is None else theirs == mine

    def __ne__(cls, other):
        equal = _ElementTypeMeta.__eq__(cls, other)  # cls.__eq__ is the instances' method
        return equal if equal is NotImplemented else not equal

    def __hash__(cls) -> int:
        mine = cls.__dict__.get("np_dtype")
        return type.__hash__(cls) if mine is None else hash(mine)


def _numpy_dtype_of(x) -> np.dtype | None:
    """The numpy dtype ``x`` names, for equality: None if it names none (or is a Python type)."""
    if isinstance(x, np.dtype):
        return x
    if isinstance(x, str):
        try:
            return np.dtype(x)
        except (TypeError, ValueError):
            return None
    if isinstance(x, type):
        if issubclass(x, np.generic):
            try:  # abstract ones (np.floating, np.generic) name no dtype
                return np.dtype(x)
            except TypeError:
                return None
        dt = getattr(x, "dtype", None)  # jax.numpy.float32 and the like carry theirs
        return dt if isinstance(dt, np.dtype) else None
    return None


class ElementType(metaclass=_ElementTypeMeta):
    """Root of all element types. Concrete leaves set ``np_dtype`` and ``hlo``."""

    np_dtype: ClassVar[np.dtype | None] = None
    hlo: ClassVar[str | None] = None

    def __new__(cls, *args, **kwargs):
        raise TypeError(
            f"element type {cls.__name__} is a type, not a value constructor; "
            f"use hlodsl.array(x, dtype={cls.__name__})"
        )

    @classmethod
    def is_concrete(cls) -> bool:
        return cls.np_dtype is not None


class Bool(ElementType):
    """Abstract boolean kind (the only member is ``pred``)."""


class Number(ElementType):
    """Any numeric element type."""


class Integer(Number):
    """Any integer element type."""


class SignedInteger(Integer):
    """Any signed integer element type."""


class UnsignedInteger(Integer):
    """Any unsigned integer element type."""


class Inexact(Number):
    """Any floating-point or complex element type."""


class Floating(Inexact):
    """Any real floating-point element type, bfloat16 included."""


class ComplexFloating(Inexact):
    """Any complex element type."""


_BY_NUMPY: dict[np.dtype, type[ElementType]] = {}
_BY_HLO: dict[str, type[ElementType]] = {}
_NARROW: dict[str, type[ElementType]] = {}


def _leaf(name: str, base: type[ElementType], np_dtype, hlo: str,
          narrow: bool = False) -> type[ElementType]:
    cls = _ElementTypeMeta(name, (base,), {
        "np_dtype": np.dtype(np_dtype),
        # numpy (and jax) read an object's ``.dtype`` to learn its dtype, so
        # ``np.dtype(float32)`` and ``np.zeros(2, dtype=x.dtype)`` mean numpy's float32.
        "dtype": np.dtype(np_dtype),
        "hlo": hlo,
        "__doc__": f"XLA element type {hlo} (numpy {np.dtype(np_dtype).name}).",
        "__module__": __name__,
    })
    _BY_NUMPY[np.dtype(np_dtype)] = cls
    (_NARROW if narrow else _BY_HLO)[hlo] = cls
    return cls


pred = _leaf("pred", Bool, np.bool_, "pred")
bool_ = pred
int8 = _leaf("int8", SignedInteger, np.int8, "s8")
int16 = _leaf("int16", SignedInteger, np.int16, "s16")
int32 = _leaf("int32", SignedInteger, np.int32, "s32")
int64 = _leaf("int64", SignedInteger, np.int64, "s64")
uint8 = _leaf("uint8", UnsignedInteger, np.uint8, "u8")
uint16 = _leaf("uint16", UnsignedInteger, np.uint16, "u16")
uint32 = _leaf("uint32", UnsignedInteger, np.uint32, "u32")
uint64 = _leaf("uint64", UnsignedInteger, np.uint64, "u64")
float16 = _leaf("float16", Floating, np.float16, "f16")
bfloat16 = _leaf("bfloat16", Floating, ml_dtypes.bfloat16, "bf16")
float32 = _leaf("float32", Floating, np.float32, "f32")
float64 = _leaf("float64", Floating, np.float64, "f64")
complex64 = _leaf("complex64", ComplexFloating, np.complex64, "c64")
complex128 = _leaf("complex128", ComplexFloating, np.complex128, "c128")

# Narrow storage types (ml_dtypes on the host). XLA:CPU converts, adds, multiplies,
# compares and dots them (by widening; measured with one-op modules, see
# tests/test_dtypes_narrow.py) but has no dot of s2/u2 (UNIMPLEMENTED: ops.Dot says
# so). float8_e8m0fnu is a scale format (powers of two: no zero, no sign, no inf), so
# it has no kind: arithmetic refuses it (a sum would start from a NaN "zero"), while
# convert, bitcast and data movement take it.
int2 = _leaf("int2", SignedInteger, ml_dtypes.int2, "s2", narrow=True)
int4 = _leaf("int4", SignedInteger, ml_dtypes.int4, "s4", narrow=True)
uint2 = _leaf("uint2", UnsignedInteger, ml_dtypes.uint2, "u2", narrow=True)
uint4 = _leaf("uint4", UnsignedInteger, ml_dtypes.uint4, "u4", narrow=True)
float8_e4m3fn = _leaf("float8_e4m3fn", Floating, ml_dtypes.float8_e4m3fn, "f8e4m3fn", True)
float8_e5m2 = _leaf("float8_e5m2", Floating, ml_dtypes.float8_e5m2, "f8e5m2", True)
float8_e4m3fnuz = _leaf("float8_e4m3fnuz", Floating, ml_dtypes.float8_e4m3fnuz,
                        "f8e4m3fnuz", True)
float8_e5m2fnuz = _leaf("float8_e5m2fnuz", Floating, ml_dtypes.float8_e5m2fnuz,
                        "f8e5m2fnuz", True)
float8_e4m3b11fnuz = _leaf("float8_e4m3b11fnuz", Floating, ml_dtypes.float8_e4m3b11fnuz,
                           "f8e4m3b11fnuz", True)
float8_e3m4 = _leaf("float8_e3m4", Floating, ml_dtypes.float8_e3m4, "f8e3m4", True)
float8_e4m3 = _leaf("float8_e4m3", Floating, ml_dtypes.float8_e4m3, "f8e4m3", True)
float8_e8m0fnu = _leaf("float8_e8m0fnu", ElementType, ml_dtypes.float8_e8m0fnu, "f8e8m0fnu",
                       True)
# The sub-byte floats of the OCP MX formats. XLA:CPU runs float4_e2m1fn as it runs
# int4 (measured in tests/test_dtypes_f4_f6.py: convert, arithmetic, compare, dot,
# data movement), but converts its +-6 to an integer type's extremes (ops.Convert
# refuses float4 to integers), and this jaxlib has no float6 at all: its PJRT binding has no F6
# buffer type (transfer fails), an f6 constant aborts the process in XLA's literal
# code, and an f6 convert fails to lower to LLVM. The float6 types are therefore
# host-only: hlodsl names, parses and prints them, and refuses to put them on a
# device (``device_refusal``), before XLA can abort.
float4_e2m1fn = _leaf("float4_e2m1fn", Floating, ml_dtypes.float4_e2m1fn, "f4e2m1fn", True)
float6_e2m3fn = _leaf("float6_e2m3fn", Floating, ml_dtypes.float6_e2m3fn, "f6e2m3fn", True)
float6_e3m2fn = _leaf("float6_e3m2fn", Floating, ml_dtypes.float6_e3m2fn, "f6e3m2fn", True)


_HOST_ONLY = {
    float6_e2m3fn: "this jaxlib's XLA has no f6 buffers, an f6 constant aborts the process "
                   "and an f6 convert does not compile on CPU",
    float6_e3m2fn: "this jaxlib's XLA has no f6 buffers, an f6 constant aborts the process "
                   "and an f6 convert does not compile on CPU",
}


def device_refusal(t) -> str | None:
    """Why arrays of element type ``t`` cannot live on the device here, or None if they can.

    ``t`` may be an element type or an ``ArrayType``/``TupleType`` (every
    element type in it is asked). Ops and ``hlodsl.array`` refuse such types
    with this reason instead of handing XLA a module that aborts the process.

    >>> device_refusal(float4_e2m1fn) is None, device_refusal(float6_e2m3fn)[:45]
    (True, 'element type float6_e2m3fn is host-only here:')
    """
    elements = getattr(t, "elements", None)
    if elements is not None:  # a tuple type: the first element refused, if any
        return next((r for r in map(device_refusal, elements) if r is not None), None)
    # An element type's own ``.dtype`` is its numpy dtype: only an array type's is ours.
    dtype = t if isinstance(t, _ElementTypeMeta) else getattr(t, "dtype", None)
    if not isinstance(dtype, _ElementTypeMeta) or dtype not in _HOST_ONLY:
        return None
    return f"element type {dtype.__name__} is host-only here: {_HOST_ONLY[dtype]}"


def bit_width(t: type[ElementType]) -> int:
    """Bits per element as XLA counts them (4 for int4 and float4, 6 for the float6 types).

    >>> bit_width(float32), bit_width(int4), bit_width(float6_e3m2fn), bit_width(pred)
    (32, 4, 6, 8)
    """
    if t.np_dtype.kind == "V":  # ml_dtypes: bfloat16, the narrow ints and floats
        info = ml_dtypes.iinfo if _is_ml_integer(t.np_dtype) else ml_dtypes.finfo
        return info(t.np_dtype).bits
    return 8 * t.np_dtype.itemsize


def _is_ml_integer(dtype: np.dtype) -> bool:
    """Whether an ml_dtypes type is an integer one (int2, int4, uint2, uint4)."""
    try:
        ml_dtypes.iinfo(dtype)
    except (TypeError, ValueError):
        return False
    return True


def all_element_types(narrow: bool = False) -> tuple[type[ElementType], ...]:
    """Every concrete element type, in a fixed order.

    The narrow storage types (``int2``/``int4``/``uint2``/``uint4``, the
    float8 family, ``float4_e2m1fn`` and the float6 types) come only with ``narrow=True``: XLA runs a subset of ops
    on them, so they are not in the set every op is tested on.

    >>> len(all_element_types()), len(all_element_types(narrow=True))
    (15, 30)
    """
    return tuple(_BY_HLO.values()) + (narrow_element_types() if narrow else ())


def narrow_element_types() -> tuple[type[ElementType], ...]:
    """The 2- and 4-bit integers, the float8, float4 and float6 types, in a fixed order.

    >>> int4.hlo, float8_e4m3fn.hlo, issubclass(float8_e5m2, Floating)
    ('s4', 'f8e4m3fn', True)
    """
    return tuple(_NARROW.values())


def default_inexact(t: type[ElementType]) -> type[ElementType]:
    """``t``, the type numpy gives Python floats (float64) or complex numbers
    (complex128), at the width ``hlodsl.config.default_float`` chooses.

    >>> import hlodsl as hd
    >>> hd.config.default_float = "float32"
    >>> default_inexact(float64), default_inexact(complex128), default_inexact(int64)
    (float32, complex64, int64)
    >>> hd.config.default_float = "float64"
    """
    if config.default_float == "float64":
        return t
    return float32 if t is float64 else complex64 if t is complex128 else t


def element_type(x, *, caller: str | None = None) -> type[ElementType]:
    """The element type for a numpy dtype, a numpy scalar type, or an element type.

    ``caller`` (a function's name) starts the error message, if any.

    >>> element_type(np.float32), element_type("bfloat16")
    (float32, bfloat16)
    >>> element_type("float99", caller="zeros")
    Traceback (most recent call last):
    TypeError: zeros: 'float99' does not name an XLA element type; supported: pred, ...
    """
    if isinstance(x, type) and issubclass(x, ElementType):
        return x
    if x is None:  # np.dtype(None) is float64: never what a missing dtype means
        raise _unknown("None does not name an XLA element type; give one", caller)
    try:
        dt = np.dtype(x)
    except TypeError:
        raise _unknown(f"{x!r} does not name an XLA element type", caller) from None
    try:
        # Byte order is how numpy stores a value, not which value: '>f4' is float32, as in
        # numpy's and jax's arithmetic; hlodsl.arrays.array swaps the bytes of such data once.
        return _BY_NUMPY[dt if dt.isnative else dt.newbyteorder("=")]
    except KeyError:
        if dt.names:
            raise _unknown(f"numpy dtype {dt} is structured (fields {', '.join(dt.names)}), and "
                           "an array holds one element type: make an array of each field "
                           "(x['name'])", caller) from None
        raise _unknown(f"numpy dtype {dt} has no XLA element type", caller) from None


def native_byte_order(host: np.ndarray) -> np.ndarray:
    """``host``, or a copy of it in native byte order where it is big-endian ('>f4').

    >>> native_byte_order(np.array([1.5], ">f4")).dtype.str
    '<f4'
    """
    return host if host.dtype.isnative else host.astype(host.dtype.newbyteorder("="))


def _unknown(message: str, caller: str | None) -> TypeError:
    names = ", ".join(t.__name__ for t in all_element_types(narrow=True))
    prefix = f"{caller}: " if caller else ""
    return TypeError(f"{prefix}{message}; supported: {names} (hlodsl.float32, ..., or their "
                     "numpy dtypes)")


def from_hlo(name: str) -> type[ElementType]:
    """The element type for an HLO type name such as ``"f32"``."""
    try:
        return _BY_HLO[name] if name in _BY_HLO else _NARROW[name]
    except KeyError:
        raise TypeError(f"{name!r} is not an HLO element type") from None
