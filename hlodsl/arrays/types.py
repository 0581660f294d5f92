"""Abstract values: the static type (element type + shape) of an array or tuple.

These are what shape rules take and return (the paper's type lattice): an
``ArrayType`` is what staging knows about an array without its data.

>>> from .dtypes import float32
>>> t = ArrayType(float32, (10, 3))
>>> str(t), t.rank, t.size
('f32[10,3]', 2, 30)
"""

from __future__ import annotations

import math

import attrs

from .dtypes import ElementType, element_type
from hlodsl.errors import ArraySizeError

__all__ = ["ArrayType", "TupleType", "TokenType", "AbstractType"]


#: XLA counts dimension sizes, elements and bytes in int64.
_INT64_MAX = 2 ** 63 - 1
_LIMIT = "XLA counts elements and bytes in int64, at most 2**63 - 1 = 9223372036854775807"


def _shape(shape) -> tuple[int, ...]:
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"array dimensions must be non-negative, got {shape}")
    return shape


def _check_size(t: ArrayType) -> None:
    """Refuse a type whose dimensions or bytes overflow int64, as XLA would ("size may overflow").

    NOTE: measured with XLA:CPU (jaxlib 0.10.2): f32[2**61 - 1] compiles and
    f32[2**61] does not; sub-byte types (int4, float4) count one byte an
    element, as numpy's itemsize does. A type under the limit is only staged
    (``code_hlo``, memory statistics) without being refused, however large.
    """
    what = f"shape {t.shape} of {t.dtype.__name__} ({t.hlo})"
    if any(d > _INT64_MAX for d in t.shape):  # (0, 2**64) has no bytes, and is still refused
        raise ArraySizeError(f"{what} has a dimension of size {max(t.shape)}: XLA counts "
                             f"dimension sizes in int64, at most 2**63 - 1 = {_INT64_MAX}")
    itemsize = t.dtype.np_dtype.itemsize
    nbytes = math.prod(t.shape) * itemsize
    if nbytes > _INT64_MAX:
        raise ArraySizeError(f"{what} is {nbytes} bytes ({math.prod(t.shape)} elements of "
                             f"{itemsize}): {_LIMIT}")


@attrs.frozen(repr=False)
class ArrayType:
    """Element type and static shape of an array."""

    dtype: type[ElementType] = attrs.field(converter=element_type)
    shape: tuple[int, ...] = attrs.field(converter=_shape)

    def __attrs_post_init__(self):
        _check_size(self)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def dims(self, axes) -> tuple[int, ...]:
        """The sizes of the given axes."""
        return tuple(self.shape[a] for a in axes)

    def with_dtype(self, dtype) -> ArrayType:
        return ArrayType(dtype, self.shape)

    @property
    def hlo(self) -> str:
        """HLO text of the type, default (major-to-minor) layout left implicit."""
        return f"{self.dtype.hlo}[{','.join(map(str, self.shape))}]"

    def __str__(self) -> str:
        return self.hlo

    def __repr__(self) -> str:
        return f"ArrayType({self.dtype!r}, {self.shape})"


@attrs.frozen(repr=False)
class TupleType:
    """The type of an HLO tuple (results of variadic reduce, sort, while, ...)."""

    elements: tuple[AbstractType, ...] = attrs.field(converter=tuple)

    @property
    def hlo(self) -> str:
        return "(" + ", ".join(e.hlo for e in self.elements) + ")"

    def __str__(self) -> str:
        return self.hlo

    def __repr__(self) -> str:
        return f"TupleType({list(self.elements)!r})"


@attrs.frozen(repr=False)
class TokenType:
    """The type of an HLO token, which orders side effects (after-all, custom calls)."""

    @property
    def hlo(self) -> str:
        return "token[]"

    def __str__(self) -> str:
        return self.hlo

    def __repr__(self) -> str:
        return "TokenType()"


AbstractType = ArrayType | TupleType | TokenType
