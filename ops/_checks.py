"""Validation helpers shared by op classes: dimension lists, permutations, windows."""

from __future__ import annotations

import numpy as np

from hlodsl.arrays.dtypes import Floating
from hlodsl.errors import require
from hlodsl.settings import PRECISIONS, config

__all__ = ["integer", "non_negative", "real", "function", "functions", "optional", "flag",
           "dims", "sizes", "one_of", "operand_precision", "precision_attributes", "check_dims",
           "check_permutation", "check_one_float_precision", "num_windows", "dims_text"]

# Converters of static operands. They refuse what does not mean what it looks
# like (``Reshape((2.9, 6))`` must not be ``(2, 6)``, nor ``True`` a size 1);
# ``hlodsl.ir.op.frozen`` adds the op's and the field's names to their errors.


def integer(value) -> int:
    """Converter: a Python or numpy integer (not a bool, a float or a string).

    >>> integer(3), integer(np.int64(2))
    (3, 2)
    >>> integer(2.9)
    Traceback (most recent call last):
    TypeError: expected an int, got 2.9 (float)
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"expected an int, got {value!r} ({type(value).__name__})")
    return int(value)


def non_negative(value) -> int:
    """Converter: an ``integer`` that is >= 0 (a dimension number, an index, a count).

    >>> non_negative(0)
    0
    >>> non_negative(-1)
    Traceback (most recent call last):
    ValueError: expected a non-negative int, got -1
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"expected a non-negative int, got {value!r} ({type(value).__name__})")
    if value < 0:
        raise ValueError(f"expected a non-negative int, got {value}")
    return int(value)


def real(value) -> float:
    """Converter: a real number, as a float (not a bool, a string or None).

    >>> real(1), real(np.float32(0.5))
    (1.0, 0.5)
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(f"expected a real number (a float), got {value!r} "
                        f"({type(value).__name__})")
    return float(value)


def function(value):
    """Converter: a callable (a Python function), staged into a sub-computation.

    >>> function(None)
    Traceback (most recent call last):
    TypeError: expected a callable (a Python function), got None (NoneType)
    """
    if not callable(value):
        raise TypeError(f"expected a callable (a Python function), got {value!r} "
                        f"({type(value).__name__})")
    return value


def functions(value) -> tuple:
    """Converter: a sequence of callables, to a tuple."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"expected a sequence of callables (Python functions), got {value!r} "
                        f"({type(value).__name__})")
    value = tuple(value)
    for i, f in enumerate(value):
        if not callable(f):
            raise TypeError(f"expected a sequence of callables (Python functions), but "
                            f"element {i} is {f!r} ({type(f).__name__})")
    return value


def optional(convert):
    """Converter factory: None, or what ``convert`` makes of the value."""

    def convert_or_none(value):
        return None if value is None else convert(value)

    return convert_or_none


def flag(value) -> bool:
    """Converter: a Python or numpy bool (``bool("no")`` would be True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"expected True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def dims(value) -> tuple[int, ...]:
    """Converter: an int or a sequence of ints to a tuple (so ops hash by value)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return (int(value),)
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"expected an int or a sequence of ints, got {value!r} "
                        f"({type(value).__name__})")
    return tuple(integer(v) for v in value)


def sizes(value) -> tuple[int, ...]:
    """Converter for a static shape: like ``dims``, and every size non-negative."""
    shape = dims(value)
    if any(s < 0 for s in shape):
        raise ValueError(f"array dimensions must be non-negative, got {shape}")
    return shape


def one_of(*allowed: str):
    """Converter factory: a string, case-insensitive, among ``allowed`` (returned upper-case)."""

    def choice(value) -> str:
        if not isinstance(value, str):
            raise TypeError(f"expected one of {', '.join(allowed)} (a str), got {value!r} "
                            f"({type(value).__name__})")
        if value.upper() not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {value!r}")
        return value.upper()

    return choice


def operand_precision(value) -> tuple[str, str] | None:
    """Converter of a dot's or convolution's ``precision``: None (``hd.config``'s
    ``default_matmul_precision`` when staged), one of ``"default"``, ``"high"``,
    ``"highest"`` for both operands, or a pair (lhs, rhs)."""
    if value is None:
        return None
    pair = (value, value) if isinstance(value, str) else tuple(value)
    if len(pair) != 2 or not all(isinstance(p, str) for p in pair):
        raise TypeError(f"expected None, a precision or a pair of them (str), got {value!r}")
    pair = tuple(p.lower() for p in pair)
    bad = [p for p in pair if p not in PRECISIONS]
    if bad:
        raise ValueError(f"expected a precision among {', '.join(map(repr, PRECISIONS))}, "
                         f"got {bad[0]!r}")
    return pair


def precision_attributes(precision: tuple[str, str] | None) -> list[str]:
    """HLO's ``operand_precision`` attribute: the op's own precision, else the configured
    default; nothing for ``default`` on both operands (HLO's own default)."""
    pair = precision or (config.default_matmul_precision,) * 2
    return [] if pair == ("default", "default") else [f"operand_precision={{{','.join(pair)}}}"]


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


def num_windows(op, operand_types, where: str, size: int, padding: tuple[int, int],
                window: int, stride: int = 1, base_dilation: int = 1,
                window_dilation: int = 1) -> int:
    """How many windows fit along one dimension (StableHLO's ``num_windows``), checked.

    The ``size`` elements of the dimension (``where``, for the message) get
    ``base_dilation - 1`` holes between neighbours, then ``padding`` (low, high)
    around them (negative crops); a window of ``window`` elements, dilated by
    ``window_dilation``, steps over that by ``stride``. A window that does not
    fit gives 0 windows: StableHLO's ``is_empty_window`` (reduce_window C15,
    convolution C25, select_and_scatter C2), and jax.lax and XLA agree.
    Padding that crops more than the dilated dimension holds leaves a
    negative-size padded input, which no array can be: ``Pad`` refuses it,
    StableHLO's shape inference asserts against it, ``lax.conv_general_dilated``
    refuses it; here it is a ``ShapeError`` naming ``op`` and its operand types.

    >>> num_windows("op", (), "dimension 0", 8, (1, 1), 3, stride=2)
    4
    >>> num_windows("op", (), "dimension 0", 8, (0, 0), 9)
    0
    """
    dilated = (size - 1) * base_dilation + 1 if size else 0
    padded = padding[0] + dilated + padding[1]
    require(padded >= 0, op, operand_types,
            f"padding {padding} crops {where}, of size {size}"
            + (f" ({dilated} after base dilation {base_dilation})" if base_dilation != 1 else "")
            + f", to a negative size {padded}: padding may crop at most what the "
            "dimension holds")
    span = (window - 1) * window_dilation + 1
    return 0 if span > padded else (padded - span) // stride + 1


def dims_text(axes) -> str:
    return "{" + ",".join(str(a) for a in axes) + "}"

