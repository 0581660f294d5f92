"""Validation helpers shared by op classes: dimension lists and permutations."""

from __future__ import annotations

__all__ = ["dims", "check_dims", "check_permutation", "dims_text"]


def dims(value) -> tuple[int, ...]:
    """Converter: an int or a sequence of ints to a tuple (so ops hash by value)."""
    if isinstance(value, int):
        return (value,)
    return tuple(int(v) for v in value)


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


def dims_text(axes) -> str:
    return "{" + ",".join(str(a) for a in axes) + "}"
