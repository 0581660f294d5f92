"""Reverse: reverse the order of elements along some dimensions (HLO reverse).

>>> import numpy as np, hlodsl as hd
>>> Reverse(0)(hd.array(np.int32([1, 2, 3])))
hlodsl.Array[int32, (3,)]([3, 2, 1])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen

from ._checks import check_dims, dims, dims_text

__all__ = ["Reverse"]


@frozen
class Reverse(HloOp, opcode="reverse"):
    """Reverse the order of elements along ``dimensions``; the shape is unchanged."""

    dimensions: tuple[int, ...] = attrs.field(converter=dims)

    def __attrs_post_init__(self):
        check_dims(self, "dimensions", self.dimensions)

    def result_type(self, x):
        require(all(d < x.rank for d in self.dimensions), self, (x,),
                f"dimensions {self.dimensions} out of range for rank {x.rank}")
        return x

    def attributes(self, operand_types, result_type, ctx):
        return [f"dimensions={dims_text(self.dimensions)}"]

    def reference(self, x):
        return np.flip(x, self.dimensions)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402


@vjp_rule.dispatch
def reverse_vjp(op: Reverse, ct, out, x):
    return (Reverse(op.dimensions)(ct),)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import shifted  # noqa: E402


@batch_rule.dispatch
def reverse_batched(op: Reverse, args: tuple, dims: tuple):
    (x,) = args
    return Reverse(shifted(op.dimensions))(x), 0
