"""Bit-exact helpers on floating-point values, shared by ops that stage other ops.

HLO ``negate`` of a NaN leaves the result's sign bit to the platform: XLA:CPU
flips it, XLA:GPU need not (PTX ``neg.f32``: "NaN inputs yield an unspecified
NaN"). Where a later step reads that sign (a complex function's special values,
TopK's order of NaNs), the flip is made on the bits instead, the same on every
platform. The ops are looked up by opcode (``hlodsl.ir.op.op_class``): the op
modules import this one, so it sits below them.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.float32([1.5, -0.0, np.nan]))
>>> np.signbit(np.asarray(exact_negate(x)))
array([ True, False,  True])
"""

from __future__ import annotations

import numpy as np

from hlodsl.arrays.array import Array, array
from hlodsl.arrays.dtypes import element_type
from hlodsl.ir.op import op_class

__all__ = ["exact_negate"]


def exact_negate(x: Array) -> Array:
    """``-x`` for a floating-point array, its sign bit flipped whatever the value (NaN too).

    HLO ``negate`` where ``x`` is a number (so derivatives are negate's), the flipped bits
    where it is a NaN."""
    width = x.dtype.np_dtype.itemsize * 8
    unsigned = element_type(np.dtype(f"u{width // 8}"))
    bits = op_class("bitcast-convert")(unsigned)(x)
    sign = array(np.asarray(1 << (width - 1), unsigned.np_dtype))
    if x.shape:
        sign = op_class("broadcast")(x.shape)(sign)
    flipped = op_class("bitcast-convert")(x.dtype)(op_class("xor")()(bits, sign))
    nan = op_class("compare")("NE")(x, x)
    return op_class("select")()(nan, flipped, op_class("negate")()(x))
