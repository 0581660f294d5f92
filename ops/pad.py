"""Pad: edge padding (negative crops) and interior padding (HLO pad).

>>> import numpy as np, hlodsl as hd
>>> Pad(low=1, high=-1, interior=1)(hd.array(np.int32([1, 2, 3])), hd.array(np.int32(0)))
hlodsl.Array[int32, (5,)]([0, 1, 0, 2, 0])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType

from ._checks import dims

__all__ = ["Pad"]


def _zeros(op) -> tuple[int, ...]:
    return (0,) * len(op.low)


@frozen
class Pad(HloOp, opcode="pad"):
    """``operand`` padded with the scalar ``padding_value``, per dimension.

    ``interior[i] >= 0`` values go between neighbouring elements, then ``low[i]``
    before and ``high[i]`` after; a negative ``low``/``high`` removes elements.
    Result dimension i: ``low + high + n + max(n - 1, 0) * interior``, at least 0.
    """

    low: tuple[int, ...] = attrs.field(converter=dims)
    high: tuple[int, ...] = attrs.field(converter=dims)
    interior: tuple[int, ...] = attrs.field(
        converter=dims, default=attrs.Factory(_zeros, takes_self=True))

    def __attrs_post_init__(self):
        if not len(self.low) == len(self.high) == len(self.interior):
            raise ValueError(f"{self!r}: low, high and interior need one entry per "
                             "dimension each")
        if any(i < 0 for i in self.interior):
            raise ValueError(f"{self!r}: interior padding must be non-negative")

    def _size(self, d: int, n: int) -> int:
        return self.low[d] + self.high[d] + n + max(n - 1, 0) * self.interior[d]

    def result_type(self, x, value):
        ops = (x, value)
        require(value.shape == () and value.dtype is x.dtype, self, ops,
                "the padding value must be a scalar of the operand's element type")
        require(len(self.low) == x.rank, self, ops,
                f"padding has {len(self.low)} entries for a rank-{x.rank} operand")
        shape = tuple(self._size(d, n) for d, n in enumerate(x.shape))
        for d, n in enumerate(shape):
            require(n >= 0, self, ops, f"dimension {d} would have negative size {n}")
        return ArrayType(x.dtype, shape)

    def emit(self, operands, operand_types, result_type, ctx) -> str:
        if not self.low:
            # NOTE: XLA's text format cannot spell an empty padding config (it
            # parses "padding=" only with one low_high_interior per dimension),
            # and padding a scalar is the identity.
            return f"copy({operands[0]})"
        return super().emit(operands, operand_types, result_type, ctx)

    def attributes(self, operand_types, result_type, ctx):
        return ["padding=" + "x".join(f"{lo}_{hi}_{i}" for lo, hi, i in
                                      zip(self.low, self.high, self.interior))]

    def reference(self, x, value):
        x = np.asarray(x)
        if not self.low:
            return x.copy()
        out = np.full(tuple(n + max(n - 1, 0) * i for n, i in zip(x.shape, self.interior)),
                      value, dtype=x.dtype)
        out[tuple(slice(None, None, i + 1) for i in self.interior)] = x
        widths = [(max(lo, 0), max(hi, 0)) for lo, hi in zip(self.low, self.high)]
        out = np.pad(out, widths, constant_values=value)
        return out[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for lo, hi, n in
                         zip(self.low, self.high, out.shape))]


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402


@vjp_rule.dispatch
def pad_vjp(op: Pad, ct, out, x, value):
    # The operand's ct: undo the edge padding (a crop becomes a zero pad), then take
    # every (interior + 1)-th element. The padding value's: the sum of ct over the
    # padded positions, i.e. the total of ct less the total of the operand's part.
    from hlodsl.arrays.array import array

    from hlodsl.ir.op import op_class

    from ._ad import full_like, sub, sum_dims

    Slice = op_class("slice")  # slice.py's rule is a pad: that module imports this one

    if not op.low:  # a scalar operand: the identity
        return ct, full_like(value, 0)
    zero = array(np.zeros((), ct.dtype.np_dtype))
    unpadded = Pad(tuple(-lo for lo in op.low), tuple(-hi for hi in op.high))(ct, zero)
    ct_x = Slice((0,) * x.ndim, unpadded.shape, tuple(i + 1 for i in op.interior))(unpadded)
    total = sum_dims(ct, tuple(range(ct.ndim)))
    return ct_x, sub(total, sum_dims(ct_x, tuple(range(ct_x.ndim))))


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import scalar, with_batch  # noqa: E402


@batch_rule.dispatch
def pad_batched(op: Pad, args: tuple, dims: tuple):
    from .broadcast import Broadcast
    from .compare import Select

    x, value = args
    size = (x if dims[0] is not None else value).shape[0]
    x = with_batch(x, dims[0], size)
    padding = Pad((0, *op.low), (0, *op.high), (0, *op.interior))
    if dims[1] is None:
        return padding(x, value), 0
    # One padding value per example: pad with any value, then choose per element
    # between the operand (where the mask says it landed) and that example's value.
    inside = padding(Broadcast(x.shape)(scalar(True)), scalar(False))
    full = Broadcast(inside.shape, (0,))(value)
    return Select()(inside, padding(x, scalar(0, x.dtype)), full), 0
