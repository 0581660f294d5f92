"""Convert: change element type, elementwise, with XLA's conversion semantics.

>>> import numpy as np, hlodsl as hd
>>> Convert(hd.int32)(hd.array(np.float32([1.7, -1.7])))
hlodsl.Array[int32, (2,)]([ 1, -1])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import ComplexFloating, ElementType, Integer, element_type, float4_e2m1fn, pred
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen

__all__ = ["Convert"]


def element_type_of(value) -> type[ElementType]:
    """Converter: an element type or numpy dtype-like (numpy reads None as float64: refused)."""
    if value is None:
        raise TypeError("expected an element type such as hlodsl.float32, got None")
    return element_type(value)


@frozen
class Convert(HloOp, opcode="convert"):
    """Elementwise conversion to ``new_dtype`` (floats to ints truncate toward zero).

    Between any two element types but complex to a real, integer or pred type:
    pred converts to 0 or 1, and anything non-zero converts to True. A complex
    operand converts only to a complex type: StableHLO leaves complex to real
    undefined, XLA silently drops the imaginary part, and XLA:CPU crashes
    converting complex to pred. Take ``Real`` (``xp.real``) first, or compare
    with 0 for pred; ``hlodsl.stdlib.astype`` refuses the same conversions.
    """

    new_dtype: type[ElementType] = attrs.field(converter=element_type_of)

    def result_type(self, x):
        require(not issubclass(x.dtype, ComplexFloating)
                or issubclass(self.new_dtype, ComplexFloating), self, (x,),
                f"converting complex to {self.new_dtype.__name__} would drop the imaginary "
                "part (StableHLO leaves it undefined): take ops.Real (xp.real) first"
                + (", or compare with 0" if self.new_dtype is pred else ""))
        # Measured on XLA:CPU: float4's largest value (+-6) becomes the integer type's
        # extreme (6 -> 2147483647 in s32), as if it were an infinity.
        require(x.dtype is not float4_e2m1fn or not issubclass(self.new_dtype, Integer),
                self, (x,), f"XLA:CPU converts float4_e2m1fn's +-6 to {self.new_dtype.__name__}"
                "'s extremes (wrong values); convert to float32 first")
        return x.with_dtype(self.new_dtype)

    def reference(self, x):
        return np.asarray(x).astype(self.new_dtype.np_dtype)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402
from hlodsl.arrays.dtypes import Inexact  # noqa: E402


@vjp_rule.dispatch
def convert_vjp(op: Convert, ct, out, x):
    # Back to the operand's type; integer and bool operands take no cotangent.
    if not issubclass(x.dtype, Inexact) or not issubclass(out.dtype, Inexact):
        return (None,)
    if issubclass(ct.dtype, ComplexFloating) and not issubclass(x.dtype, ComplexFloating):
        from .complex_parts import Real
        ct = Real()(ct)
    return (Convert(x.dtype)(ct),)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule, register_rule  # noqa: E402

from ._batch import elementwise_rule  # noqa: E402

register_rule(batch_rule, Convert, elementwise_rule)
