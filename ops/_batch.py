"""Small helpers the ops' batching rules share (``vmap``; rules in each op's module).

A batching rule gets the op's operands with their batch dimension first (``dims[i]``
is 0) or absent (None), and returns the op's result and where its batch
dimension is. These helpers size the batch, give an unbatched operand a batch
dimension, and state the one rule every elementwise op shares. They build ops by
opcode (``hlodsl.ir.op.op_class``): the op modules import this one, not the reverse.
"""

from __future__ import annotations

import numpy as np

from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import element_type
from hlodsl.ir.op import op_class
from hlodsl.ir.structural import Constant

__all__ = ["batch_size", "with_batch", "all_batched", "elementwise_rule", "unbatched_rule",
           "shifted", "move_to_front", "leaves_with_dims", "scalar", "settle", "dims_for",
           "example_type"]


def leaves_with_dims(args, dims) -> list[tuple]:
    """``(array, dim)`` for every operand, tuple operands' elements included."""
    out = []
    for a, d in zip(args, dims):
        if isinstance(a, tuple):
            out += leaves_with_dims(a, d)
        else:
            out.append((a, d))
    return out


def batch_size(args, dims) -> int:
    """The batch size: the leading size of any batched operand."""
    for a, d in leaves_with_dims(args, dims):
        if d is not None:
            return a.shape[d]
    raise ValueError("a batching rule was called with no batched operand")


def with_batch(x: Array, d, size: int) -> Array:
    """``x`` with its batch dimension first; an unbatched ``x`` broadcast along a new one."""
    if d is None:
        return op_class("broadcast")((size, *x.shape), tuple(range(1, x.ndim + 1)))(x)
    return move_to_front(x, d)


def move_to_front(x: Array, d: int) -> Array:
    """``x`` with dimension ``d`` moved first (a transpose, or ``x`` itself)."""
    if d == 0:
        return x
    perm = (d, *(i for i in range(x.ndim) if i != d))
    return op_class("transpose")(perm)(x)


def all_batched(args, dims) -> list[Array]:
    """Every operand with a batch dimension first (unbatched ones broadcast along it)."""
    size = batch_size(args, dims)
    return [with_batch(a, d, size) for a, d in zip(args, dims)]


def shifted(axes, by: int = 1) -> tuple[int, ...]:
    """Dimension numbers of the per-example operand, in the batched operand."""
    return tuple(a + by for a in axes)


def elementwise_rule(op, args, dims):
    """Elementwise ops: every operand batched the same way, the op applied as it is."""
    return op(*all_batched(args, dims)), 0


def unbatched_rule(op, args, dims):
    """Ops that never meet a batched operand (none of their operands is an array that
    can carry one: no operands, or tokens): applied as they are."""
    return op(*args), None


def scalar(value, dtype=None) -> Array:
    """A constant scalar (of ``dtype``; numpy's type for ``value`` if None)."""
    dt = None if dtype is None else element_type(dtype).np_dtype
    return Constant(np.asarray(value, dt))()


def settle(value, dim, want, size: int):
    """``value`` (an array, or nested tuples) with a first batch dimension where ``want``
    says so (broadcast if it had none), unbatched elsewhere."""
    if isinstance(value, tuple):
        return tuple(settle(v, d, w, size) for v, d, w in zip(value, dim, want))
    if want:
        return with_batch(value, dim, size)
    if dim is not None:
        raise AssertionError("a value the analysis called unbatched came out batched")
    return value


def dims_for(want):
    """The batch dimensions ``settle`` leaves: 0 where ``want``, else None."""
    if isinstance(want, tuple):
        return tuple(dims_for(w) for w in want)
    return 0 if want else None


def example_type(x: Array, d):
    """The type of one example of ``x`` (``x``'s own type when unbatched)."""
    from hlodsl.arrays.types import ArrayType

    return x.type if d is None else ArrayType(x.dtype, x.shape[1:])
