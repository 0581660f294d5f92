"""NextAfter: the next representable float after x in the direction of y (C's nextafter).

A CHLO op, not an HLO opcode: it stages as integer arithmetic on the bits
(``BitcastConvert``), so it is exact and does not depend on how the backend
treats subnormals in float comparisons. For f16, bf16, f32 and f64.

>>> import numpy as np, hlodsl as hd
>>> x = NextAfter()(hd.array(np.float32([1.0, 0.0])), hd.array(np.float32([2.0, -1.0])))
>>> np.asarray(x).tolist()  # one ulp above 1; the smallest subnormal, y's sign
[1.0000001192092896, -1.401298464324817e-45]
"""

from __future__ import annotations

import numpy as np

from hlodsl.arrays.dtypes import Floating, bfloat16, float16, float32, float64, uint16, uint32, uint64
from hlodsl.errors import require
from hlodsl.ir.op import Composite

from ._special import c, select
from .binary import Add, And, Binary, Or, Subtract
from .bitcast_convert import BitcastConvert
from .compare import Compare

__all__ = ["NextAfter"]

_BITS = {float16: uint16, bfloat16: uint16, float32: uint32, float64: uint64}


def _next_after(x, y):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.itemsize == 2:  # numpy has no bfloat16 loop, and returns x, not y, for
        return _bitwise_next_after(x, y)  # float16 x == y (C returns y, as hlodsl)
    return np.nextafter(x, y)


def _bitwise_next_after(x, y):
    bits = x.view(np.uint16).astype(np.int64)
    with np.errstate(invalid="ignore"):
        up = (x.astype(np.float32) < y.astype(np.float32)) == (x.astype(np.float32) > 0)
    zero = x.astype(np.float32) == 0
    out = np.where(zero, (y.view(np.uint16) & 0x8000) | 1, bits + np.where(up, 1, -1))
    out = out.astype(np.uint16).view(x.dtype)
    same = x.astype(np.float32) == y.astype(np.float32)
    nan = np.isnan(x.astype(np.float32)) | np.isnan(y.astype(np.float32))
    return np.where(nan, np.float32("nan"), np.where(same, y, out)).astype(x.dtype)


class NextAfter(Composite, Binary, opcode="next-after"):
    """The float after x toward y; y where x == y; NaN if either is NaN."""

    kinds = (Floating,)  # and of those, the IEEE ones (result_type)
    numpy = staticmethod(_next_after)

    def result_type(self, x, y):
        super().result_type(x, y)
        require(x.dtype in _BITS, self, (x, y),
                f"element type {x.dtype.__name__} is not one of f16, bf16, f32, f64")
        return x

    def expand(self, x, y):
        ints = _BITS[x.dtype]
        bx, by = BitcastConvert(ints)(x), BitcastConvert(ints)(y)
        sign = c(1 << (8 * ints.np_dtype.itemsize - 1), bx)
        ax, ay = And()(bx, Subtract()(sign, c(1, bx))), And()(by, Subtract()(sign, c(1, bx)))
        same_sign = Compare("EQ")(And()(bx, sign), And()(by, sign))
        # Away from zero when y is beyond x on x's side; otherwise one step toward zero.
        away = And()(same_sign, Compare("GT")(ay, ax))
        stepped = select(away, Add()(bx, c(1, bx)), Subtract()(bx, c(1, bx)))
        from_zero = Or()(And()(by, sign), c(1, bx))  # the smallest subnormal, y's sign
        bits = select(Compare("EQ")(ax, c(0, bx)), from_zero, stepped)
        equal = Or()(Compare("EQ")(bx, by), And()(Compare("EQ")(ax, c(0, bx)),
                                                   Compare("EQ")(ay, c(0, bx))))
        bits = select(equal, by, bits)
        out = BitcastConvert(x.dtype)(bits)
        nan = Or()(Compare("NE")(x, x), Compare("NE")(y, y))
        return select(nan, Add()(x, y), out)


# -- derivatives and batching ----------------------------------------------------------
# Piecewise constant in y and the identity plus a step in x: as jax, no derivative.

from hlodsl.ir.rules import nondifferentiable

nondifferentiable(NextAfter)
