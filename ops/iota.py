"""Iota: 0, 1, 2, ... along one dimension of a new array.

>>> import hlodsl as hd
>>> Iota(hd.int32, (2, 3), 1)()
hlodsl.Array[int32, (2, 3)](
  [[0, 1, 2],
   [0, 1, 2]])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import ElementType, Number, element_type
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType

from ._checks import integer, sizes

__all__ = ["Iota"]


@frozen
class Iota(HloOp, opcode="iota"):
    """An array of ``shape`` counting up along ``iota_dimension``."""

    dtype: type[ElementType] = attrs.field(converter=element_type)
    shape: tuple[int, ...] = attrs.field(converter=sizes)
    iota_dimension: int = attrs.field(converter=integer, default=0)

    def __attrs_post_init__(self):
        if not issubclass(self.dtype, Number):  # XLA has no pred iota
            raise ValueError(f"{self!r}: dtype must be numeric, got {self.dtype.__name__}")
        if not 0 <= self.iota_dimension < len(self.shape):
            raise ValueError(f"{self!r}: iota_dimension out of range for shape {self.shape}")

    def result_type(self):
        return ArrayType(self.dtype, self.shape)

    def attributes(self, operand_types, result_type, ctx):
        return [f"iota_dimension={self.iota_dimension}"]

    def reference(self):
        idx = np.indices(self.shape)[self.iota_dimension]
        return idx.astype(self.dtype.np_dtype)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import nondifferentiable  # noqa: E402

nondifferentiable(Iota)


# -- batching (vmap): nothing to batch (no array operands) -------------------------


from hlodsl.ir.rules import batch_rule, register_rule  # noqa: E402

from ._batch import unbatched_rule  # noqa: E402

register_rule(batch_rule, Iota, unbatched_rule)
