"""Bit operations on integers: shifts, count-leading-zeros, population count.

Shift amounts at or above the bit width give 0 (logical shifts) or the sign
fill (arithmetic right shift), as XLA specifies; numpy's shifts are undefined
there, so the references spell that out.

>>> import numpy as np, hlodsl as hd
>>> ShiftLeft()(hd.array(np.int32([1, 1])), hd.array(np.int32([3, 40])))
hlodsl.Array[int32, (2,)]([8, 0])
>>> PopulationCount()(hd.array(np.uint8([255, 6])))
hlodsl.Array[uint8, (2,)]([8, 2])
"""

from __future__ import annotations

import numpy as np

from hlodsl.arrays.dtypes import Integer

from .binary import Binary
from .unary import Unary

__all__ = ["ShiftLeft", "ShiftRightArithmetic", "ShiftRightLogical", "CountLeadingZeros",
           "PopulationCount"]


def _bits(x) -> int:
    return np.asarray(x).dtype.itemsize * 8


def _unsigned(x):
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _shift_left(x, s):
    x, s = np.asarray(x), np.asarray(s)
    u = _unsigned(x).astype(np.uint64)
    big = _unsigned(s).astype(np.uint64) >= _bits(x)
    out = np.where(big, 0, (u << np.minimum(_unsigned(s), _bits(x) - 1).astype(np.uint64)))
    return (out & np.uint64((1 << _bits(x)) - 1)).astype(_unsigned(x).dtype).view(x.dtype)


def _shift_right_logical(x, s):
    x, s = np.asarray(x), np.asarray(s)
    u = _unsigned(x)
    big = _unsigned(s).astype(np.uint64) >= _bits(x)
    out = np.where(big, 0, u >> np.minimum(_unsigned(s), _bits(x) - 1).astype(u.dtype))
    return out.astype(u.dtype).view(x.dtype)


def _shift_right_arithmetic(x, s):
    x, s = np.asarray(x), np.asarray(s)
    signed = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    amount = np.minimum(_unsigned(s).astype(np.uint64), _bits(x) - 1).astype(signed.dtype)
    return (signed >> amount).view(x.dtype)


def _clz(x):
    u = _unsigned(x).astype(np.uint64)
    n = _bits(x)
    out = np.full(u.shape, n, dtype=np.int64)
    for k in range(n):
        out = np.where((u >> np.uint64(k)) & np.uint64(1), n - 1 - k, out)
    return out.astype(np.asarray(x).dtype)


def _popcnt(x):
    u = _unsigned(x).astype(np.uint64)
    return sum(((u >> np.uint64(k)) & np.uint64(1)) for k in range(_bits(x))).astype(
        np.asarray(x).dtype)


class ShiftLeft(Binary, opcode="shift-left"):
    kinds = (Integer,)
    numpy = staticmethod(_shift_left)


class ShiftRightArithmetic(Binary, opcode="shift-right-arithmetic"):
    """Shift right filling with the sign bit (the operand read as signed)."""

    kinds = (Integer,)
    numpy = staticmethod(_shift_right_arithmetic)


class ShiftRightLogical(Binary, opcode="shift-right-logical"):
    """Shift right filling with zeros (the operand read as unsigned)."""

    kinds = (Integer,)
    numpy = staticmethod(_shift_right_logical)


class CountLeadingZeros(Unary, opcode="count-leading-zeros"):
    kinds = (Integer,)
    numpy = staticmethod(_clz)


class PopulationCount(Unary, opcode="popcnt"):
    """The number of set bits."""

    kinds = (Integer,)
    numpy = staticmethod(_popcnt)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms): integer ops carry none ------------------------

from hlodsl.ir.rules import nondifferentiable  # noqa: E402

nondifferentiable(ShiftLeft, ShiftRightArithmetic, ShiftRightLogical, CountLeadingZeros,
                  PopulationCount)
