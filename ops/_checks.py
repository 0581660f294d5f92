"""Validation helpers shared by op classes: dimension lists and permutations."""

from __future__ import annotations

from hlodsl.dtypes import Floating
from hlodsl.errors import require

__all__ = ["dims", "sizes", "check_dims", "check_permutation", "check_one_float_precision",
           "dims_text"]


def dims(value) -> tuple[int, ...]:
    """Converter: an int or a sequence of ints to a tuple (so ops hash by value)."""
    if isinstance(value, int):
        return (value,)
    return tuple(int(v) for v in value)


def sizes(value) -> tuple[int, ...]:
    """Converter for a static shape: like ``dims``, and every size non-negative."""
    shape = dims(value)
    if any(s < 0 for s in shape):
        raise ValueError(f"array dimensions must be non-negative, got {shape}")
    return shape


def check_dims(op, what: str, axes: tuple[int, ...], rank: int | None = None) -> None:
    """Raise ``ValueError`` at construction for negative or repeated dimensions."""
    if any(a < 0 for a in axes):
        raise ValueError(f"{op!r}: {what} must be non-negative dimension numbers, got {axes}")
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op!r}: {what} repeats a dimension: {axes}")
    if rank is not None and any(a >= rank for a in axes):
        raise ValueError(f"{op!r}: {what} {axes} out of range for rank {rank}")


def check_permutation(op, perm: tuple[int, ...]) -> None:
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"{op!r}: {perm} is not a permutation of 0..{len(perm) - 1}")


def check_one_float_precision(op, operand_types) -> None:
    """XLA's verifier rejects an instruction (reduce, map) whose operands mix floating-point
    types of different precisions; say so at the call, not as an XLA verifier dump."""
    floats = sorted({t.dtype.__name__ for t in operand_types if issubclass(t.dtype, Floating)})
    require(len(floats) <= 1, op, operand_types,
            f"floating-point operands of different precisions ({', '.join(floats)}) are not "
            "allowed in one instruction; convert them to one type first")


def dims_text(axes) -> str:
    return "{" + ",".join(str(a) for a in axes) + "}"
