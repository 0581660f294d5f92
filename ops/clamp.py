"""Clamp: ``min(max(x, lo), hi)`` elementwise; lo and hi are scalars or x-shaped.

>>> import numpy as np, hlodsl as hd
>>> Clamp()(hd.array(np.float32(0)), hd.array(np.float32([-1, 0.5, 2])), hd.array(np.float32(1)))
hlodsl.Array[float32, (3,)]([0. , 0.5, 1. ])
"""

from __future__ import annotations

import numpy as np

from hlodsl.errors import require
from hlodsl.op import HloOp, frozen

__all__ = ["Clamp"]


@frozen
class Clamp(HloOp, opcode="clamp"):
    """Operands in HLO order: ``(lo, x, hi)``."""

    def result_type(self, lo, x, hi):
        types = (lo, x, hi)
        for bound in (lo, hi):
            require(bound.dtype is x.dtype, self, types, "bounds must have x's element type")
            require(bound.shape in ((), x.shape), self, types,
                    "bounds must be scalars or have x's shape")
        return x

    def reference(self, lo, x, hi):
        return np.minimum(np.maximum(x, lo), hi)
