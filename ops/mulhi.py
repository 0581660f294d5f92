"""MulHi: the high half of the full product of two integers (CHLO's ``mulhi``).

HLO's own ``mulhi`` opcode is internal to XLA (the HLO-to-StableHLO conversion
used here rejects it), so this stages as other ops: integers up to 32 bits are
widened to 64 and multiplied; 64-bit ones are split into 32-bit halves
(schoolbook multiplication, then the signed correction ``- (x < 0 ? y : 0) -
(y < 0 ? x : 0)`` for signed operands). Exact, in wrapping integer arithmetic.

>>> import numpy as np, hlodsl as hd
>>> MulHi()(hd.array(np.int32([2**30, -3])), hd.array(np.int32([8, 5])))
hlodsl.Array[int32, (2,)]([ 2, -1])
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlodsl.arrays.dtypes import Integer, SignedInteger, int64, uint64
from hlodsl.errors import require
from hlodsl.ir.op import Composite

from ._special import c, select
from .binary import Add, And, Binary, Multiply, Subtract
from .bitcast_convert import BitcastConvert
from .bitwise import ShiftRightArithmetic, ShiftRightLogical
from .compare import Compare
from .convert import Convert

__all__ = ["MulHi"]


def _mulhi(x, y):
    x, y = np.asarray(x), np.asarray(y)
    bits = 8 * x.dtype.itemsize
    out = [(int(a) * int(b)) >> bits for a, b in zip(x.reshape(-1), y.reshape(-1))]
    mask = (1 << bits) - 1
    return np.array([v & mask for v in out], dtype=np.uint64 if bits == 64 else np.int64) \
        .astype(x.dtype.str.replace("i", "u")).view(x.dtype).reshape(x.shape)


def _high_unsigned_64(x, y):
    """High 64 bits of the 128-bit product of two u64 arrays."""
    low_mask, shift = c(0xFFFFFFFF, x), c(32, x)
    xl, xh = And()(x, low_mask), ShiftRightLogical()(x, shift)
    yl, yh = And()(y, low_mask), ShiftRightLogical()(y, shift)
    ll, lh = Multiply()(xl, yl), Multiply()(xl, yh)
    hl, hh = Multiply()(xh, yl), Multiply()(xh, yh)
    mid = Add()(Add()(ShiftRightLogical()(ll, shift), And()(lh, low_mask)), And()(hl, low_mask))
    return Add()(Add()(hh, ShiftRightLogical()(lh, shift)),
                 Add()(ShiftRightLogical()(hl, shift), ShiftRightLogical()(mid, shift)))


class MulHi(Composite, Binary, opcode="mulhi"):
    """The high half of x * y as integers of twice the width (same type as x and y)."""

    kinds = (Integer,)
    numpy = staticmethod(_mulhi)

    def result_type(self, x, y):
        out = super().result_type(x, y)
        require(ml_dtypes.iinfo(x.dtype.np_dtype).bits in (8, 16, 32, 64), self, (x, y),
                f"element type {x.dtype.__name__} is narrower than a byte")
        return out

    def expand(self, x, y):
        dtype, signed = x.dtype, issubclass(x.dtype, SignedInteger)
        bits = 8 * dtype.np_dtype.itemsize
        if bits < 64:
            wide = int64 if signed else uint64
            product = Multiply()(Convert(wide)(x), Convert(wide)(y))
            shift = ShiftRightArithmetic() if signed else ShiftRightLogical()
            return Convert(dtype)(shift(product, c(bits, product)))
        ux, uy = (BitcastConvert(uint64)(v) for v in (x, y)) if signed else (x, y)
        high = _high_unsigned_64(ux, uy)
        if signed:  # two's complement: x = ux - 2^64 [x < 0], so subtract the cross terms
            zero = c(0, ux)
            high = Subtract()(high, select(Compare("LT")(x, c(0, x)), uy, zero))
            high = Subtract()(high, select(Compare("LT")(y, c(0, y)), ux, zero))
            return BitcastConvert(dtype)(high)
        return high


# -- derivatives: integers carry none ----------------------------------------------------

from hlodsl.ir.rules import nondifferentiable

nondifferentiable(MulHi)
