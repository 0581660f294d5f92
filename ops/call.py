"""Call: apply a staged Python computation to operands, as one HLO ``call``.

Unlike an inlined Python call, the computation stays a separate HLO
computation (XLA may still inline it while optimising).

>>> import numpy as np, hlodsl as hd
>>> def axpy(a, x, y): return a * x + y
>>> x = hd.array(np.float32([1, 2]))
>>> Call(axpy)(hd.array(np.float32([3, 3])), x, x)
hlodsl.Array[float32, (2,)]([4., 8.])
"""

from __future__ import annotations

from typing import Callable

from hlodsl.op import HloOp, frozen
from hlodsl.staging import stage_computation

__all__ = ["Call"]


@frozen
class Call(HloOp, opcode="call"):
    """``computation(*operands)``; several results come back as a tuple."""

    computation: Callable

    def __attrs_post_init__(self):
        if not callable(self.computation):
            raise ValueError(f"{self!r}: computation must be a Python callable, "
                             f"got {type(self.computation).__name__}")

    def result_type(self, *types):
        # The computation's own shape rules check the operands (at the user's line).
        return stage_computation(self.computation, types).result_type

    def attributes(self, operand_types, result_type, ctx):
        comp = stage_computation(self.computation, tuple(operand_types))
        return [f"to_apply={ctx.computation(comp)}"]
