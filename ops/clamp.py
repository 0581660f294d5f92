"""Clamp: ``min(max(x, lo), hi)`` elementwise; lo and hi are scalars or x-shaped.

>>> import numpy as np, hlodsl as hd
>>> Clamp()(hd.array(np.float32(0)), hd.array(np.float32([-1, 0.5, 2])), hd.array(np.float32(1)))
hlodsl.Array[float32, (3,)]([0. , 0.5, 1. ])
"""

from __future__ import annotations

import numpy as np

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen

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


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402


@vjp_rule.dispatch
def clamp_vjp(op: Clamp, ct, out, lo, x, hi):
    # As jax: x takes ct where lo < x < hi, lo where lo > x (and lo < hi), hi where
    # hi < x; at a tie nobody does. Scalar bounds sum what reaches them.
    from ._ad import full_like, sum_to
    from .binary import And
    from .broadcast import Broadcast
    from .compare import Compare, Select

    lo_, hi_ = (b if b.shape == x.shape else Broadcast(x.shape)(b) for b in (lo, hi))
    zero = full_like(ct, 0)
    lt, gt = Compare("LT"), Compare("GT")
    ct_x = Select()(And()(gt(x, lo_), lt(x, hi_)), ct, zero)
    ct_lo = Select()(And()(gt(lo_, x), lt(lo_, hi_)), ct, zero)
    ct_hi = Select()(lt(hi_, x), ct, zero)
    return sum_to(ct_lo, lo.shape), ct_x, sum_to(ct_hi, hi.shape)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import batch_size, with_batch  # noqa: E402


@batch_rule.dispatch
def clamp_batched(op: Clamp, args: tuple, dims: tuple):
    from .broadcast import Broadcast

    size = batch_size(args, dims)
    x, xd = args[1], dims[1]
    example = x.shape[1:] if xd is not None else x.shape
    shape = (size, *example)

    def full(a, d):  # every operand in the batched x's shape (a bound may be a scalar)
        per_example = a.shape[1:] if d is not None else a.shape
        if per_example == example:
            return with_batch(a, d, size)
        return Broadcast(shape, (0,) if d is not None else ())(a)

    return Clamp()(*(full(a, d) for a, d in zip(args, dims))), 0
