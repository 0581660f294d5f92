"""Slice: a static strided window of an array (HLO slice).

>>> import numpy as np, hlodsl as hd
>>> Slice((0, 1), (2, 3))(hd.array(np.arange(6, dtype=np.int32).reshape(2, 3)))
hlodsl.Array[int32, (2, 2)](
  [[1, 2],
   [4, 5]])
"""

from __future__ import annotations

import attrs

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType

from ._checks import dims

__all__ = ["Slice"]


def _ones(op) -> tuple[int, ...]:
    return (1,) * len(op.start_indices)


@frozen
class Slice(HloOp, opcode="slice"):
    """Elements ``start:limit:stride`` of each dimension (``strides`` default to 1).

    Result dimension i has ``ceil((limit[i] - start[i]) / strides[i])`` elements.
    """

    start_indices: tuple[int, ...] = attrs.field(converter=dims)
    limit_indices: tuple[int, ...] = attrs.field(converter=dims)
    strides: tuple[int, ...] = attrs.field(
        converter=dims, default=attrs.Factory(_ones, takes_self=True))

    def __attrs_post_init__(self):
        n = len(self.start_indices)
        if len(self.limit_indices) != n or len(self.strides) != n:
            raise ValueError(f"{self!r}: start_indices, limit_indices and strides "
                             "need one entry per dimension each")
        if any(s < 0 for s in self.start_indices):
            raise ValueError(f"{self!r}: start_indices must be non-negative")
        if any(s < 1 for s in self.strides):
            raise ValueError(f"{self!r}: strides must be positive")
        if any(lo > hi for lo, hi in zip(self.start_indices, self.limit_indices)):
            raise ValueError(f"{self!r}: each start index must be <= its limit index")

    def result_type(self, x):
        require(len(self.start_indices) == x.rank, self, (x,),
                f"{len(self.start_indices)} start indices for a rank-{x.rank} operand")
        for d, (hi, n) in enumerate(zip(self.limit_indices, x.shape)):
            require(hi <= n, self, (x,),
                    f"limit index {hi} exceeds the size {n} of dimension {d}")
        shape = tuple(-(-(hi - lo) // s) for lo, hi, s in
                      zip(self.start_indices, self.limit_indices, self.strides))
        return ArrayType(x.dtype, shape)

    def attributes(self, operand_types, result_type, ctx):
        parts = (f"[{lo}:{hi}:{s}]" for lo, hi, s in
                 zip(self.start_indices, self.limit_indices, self.strides))
        return ["slice={" + ", ".join(parts) + "}"]

    def reference(self, x):
        return x[tuple(slice(lo, hi, s) for lo, hi, s in
                       zip(self.start_indices, self.limit_indices, self.strides))]



# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402


@vjp_rule.dispatch
def slice_vjp(op: Slice, ct, out, x):
    # The transpose of a strided window: ct spread back with (stride - 1) zeros
    # between its elements and zeros around them, i.e. ct padded.
    import numpy as np

    from hlodsl.arrays.array import array

    from ._ad import full_like
    from .pad import Pad

    if ct.size == 0:
        return (full_like(x, 0),)
    high = tuple(n - lo - (m - 1) * s - 1 for n, lo, m, s in
                 zip(x.shape, op.start_indices, ct.shape, op.strides))
    interior = tuple(s - 1 for s in op.strides)
    zero = array(np.zeros((), ct.dtype.np_dtype))
    return (Pad(op.start_indices, high, interior)(ct, zero),)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402


@batch_rule.dispatch
def slice_batched(op: Slice, args: tuple, dims: tuple):
    (x,) = args
    return Slice((0, *op.start_indices), (x.shape[0], *op.limit_indices),
                 (1, *op.strides))(x), 0
