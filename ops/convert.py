"""Convert: change element type, elementwise, with XLA's conversion semantics.

>>> import numpy as np, hlodsl as hd
>>> Convert(hd.int32)(hd.array(np.float32([1.7, -1.7])))
hlodsl.Array[int32, (2,)]([ 1, -1])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.dtypes import ComplexFloating, ElementType, element_type, pred
from hlodsl.errors import require
from hlodsl.op import HloOp, frozen

__all__ = ["Convert"]


@frozen
class Convert(HloOp, opcode="convert"):
    """Elementwise conversion to ``new_dtype`` (floats to ints truncate toward zero)."""

    new_dtype: type[ElementType] = attrs.field(converter=element_type)

    def result_type(self, x):
        # NOTE: XLA crashes converting complex to pred; compare with 0 instead.
        require(not (issubclass(x.dtype, ComplexFloating) and self.new_dtype is pred), self, (x,),
                "complex to pred conversion is not supported (compare with 0 instead)")
        return x.with_dtype(self.new_dtype)

    def reference(self, x):
        return np.asarray(x).astype(self.new_dtype.np_dtype)


# -- derivatives (hlodsl.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.rules import vjp_rule  # noqa: E402
from hlodsl.dtypes import Inexact  # noqa: E402


@vjp_rule.dispatch
def _(op: Convert, ct, out, x):
    # Back to the operand's type; integer and bool operands take no cotangent.
    if not issubclass(x.dtype, Inexact) or not issubclass(out.dtype, Inexact):
        return (None,)
    if issubclass(ct.dtype, ComplexFloating) and not issubclass(x.dtype, ComplexFloating):
        from .complex_parts import Real
        ct = Real()(ct)
    return (Convert(x.dtype)(ct),)
