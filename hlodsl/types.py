"""Abstract values: the static type (element type + shape) of an array or tuple.

These are what shape rules take and return (the paper's type lattice): an
``ArrayType`` is what staging knows about an array without its data.

>>> from hlodsl.dtypes import float32
>>> t = ArrayType(float32, (10, 3))
>>> str(t), t.rank, t.size
('f32[10,3]', 2, 30)
"""

from __future__ import annotations

import math

import attrs

from .dtypes import ElementType, element_type

__all__ = ["ArrayType", "TupleType", "TokenType", "AbstractType"]


#: XLA counts elements (and dimension sizes) in int64.
_INT64_MAX = 2 ** 63 - 1


def _shape(shape) -> tuple[int, ...]:
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"array dimensions must be non-negative, got {shape}")
    # NOTE: XLA would fail on these deep inside compilation (or overflow silently).
    if math.prod(shape) > _INT64_MAX or any(d > _INT64_MAX for d in shape):
        what = (f"a dimension of size {max(shape)}" if max(shape) > _INT64_MAX
                else f"{math.prod(shape)} elements")
        raise ValueError(f"shape {shape} has {what}: XLA counts elements and dimension sizes "
                         f"in int64, at most 2**63 - 1 = {_INT64_MAX}")
    return shape


@attrs.frozen(repr=False)
class ArrayType:
    """Element type and static shape of an array."""

    dtype: type[ElementType] = attrs.field(converter=element_type)
    shape: tuple[int, ...] = attrs.field(converter=_shape)

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
