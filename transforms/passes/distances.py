"""``Distances``: squared Euclidean distances as one dot product, not an (n, m, d) tensor.

Written naturally, ``xp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)``
stages a difference of shape (n, m, d): d times the size of the result, and
d times the memory traffic. This pass matches that form and replaces it with
the expansion

    |x_i - y_j|² = |x_i|² + |y_j|² - 2 x_i · y_j

built from one ``Dot`` (batched over the shared dimensions), two small sums
and broadcasts. What it matches: a ``Reduce`` adding over one dimension r
(from zero) of the square (``** 2`` or ``d * d``) of a difference of two
``Broadcast`` s, each keeping r, together covering every dimension, with some
dimensions only one side keeps (``i`` and ``j`` above) and any others both
keep (leading batch dimensions); either operand order, any r (``axis=-1``,
``axis=2``). A ``sqrt`` or ``exp`` of the sum just reads the new value.

Limits. The expansion loses precision where distances are small next to the
norms (cancellation), and can come out slightly negative by rounding: the
result is clamped at zero with ``Maximum``. Where points lie far from the
origin relative to their spread, centre them first. On a GPU whose XLA runs
f32 dots in reduced precision (TF32) by default, the dot adds that error too.
Left as written: integer and complex types (exact as written; no clamp for
complex), float types narrower than 32 bits (the cancellation would eat most
of their bits), broadcasts that permute dimensions, a size-1 side (the stdlib
stages it as a reshape, not a broadcast), and a difference or square that
something else also reads (the (n, m, d) tensor would exist anyway).

>>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
>>> def sq_dist(x, y):
...     return xp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)
>>> x = hd.array(np.float32([[0, 0], [1, 1]]))
>>> y = hd.array(np.float32([[1, 0], [3, 4], [1, 1]]))
>>> f = hd.compile(sq_dist, passes=[Distances()])
>>> np.asarray(f(x, y))
array([[ 1., 25.,  2.],
       [ 1., 13.,  0.]], dtype=float32)
>>> print(f.report(x, y))
distances: 12 -> 21 instructions
  squared distances f32[2,3] over f32[2,3,2] -> one dot (no f32[2,3,2] intermediate)
"""

from __future__ import annotations

import numpy as np

from hlodsl import ops
from hlodsl.arrays.dtypes import Floating
from hlodsl.ir.graph import Computation, Node
from hlodsl.arrays.types import ArrayType

from .context import PassContext
from .rewrite import rewrite, users

__all__ = ["Distances"]


def _constant(node: Node, value: float) -> bool:
    """``node`` is ``value``: a constant, or a broadcast of one."""
    while type(node.op) is ops.Broadcast:
        node = node.operands[0]
    return type(node.op) is ops.Constant and node.op.value.size == 1 and \
        float(np.asarray(node.op.value).reshape(())) == value


def _squared(node: Node) -> Node | None:
    """The ``t`` of ``t ** 2`` or ``t * t``, else None."""
    if type(node.op) is ops.Multiply and node.operands[0] is node.operands[1]:
        return node.operands[0]
    if type(node.op) is ops.Power and _constant(node.operands[1], 2.0):
        return node.operands[0]
    return None


def _match(node: Node, use: dict):
    """``(x, x_dims, y, y_dims, r)`` where ``node`` sums ``(bx - by) ** 2`` over ``r``,
    ``bx`` broadcasting ``x`` into ``x_dims`` (and ``by`` likewise); else None."""
    op = node.op
    if type(op) is not ops.Reduce or len(node.operands) != 2 or len(op.dimensions) != 1:
        return None
    data, init = node.operands
    if not isinstance(data.type, ArrayType) or not _constant(init, 0.0):
        return None
    dtype = data.type.dtype
    # Integers are exact as written (and the expansion could overflow); below 32 bits
    # the cancellation in |x|² + |y|² - 2 x·y would leave too few good bits.
    if not issubclass(dtype, Floating) or dtype.np_dtype.itemsize < 4:
        return None
    if ops.reduce.reduction_kind(op, dtype) != "add":
        return None
    diff = _squared(data)
    if diff is None or type(diff.op) is not ops.Subtract:
        return None
    # Only the sum may read the big tensors: otherwise they exist anyway, and the
    # rewrite would add a dot and change the rounding for nothing.
    if use[id(data)] != [node] or any(u is not data for u in use[id(diff)]):
        return None
    bx, by = diff.operands
    if type(bx.op) is not ops.Broadcast or type(by.op) is not ops.Broadcast:
        return None
    (r,), xd, yd = op.dimensions, bx.op.dimensions, by.op.dimensions
    rank = len(data.type.shape)
    if r not in xd or r not in yd or set(xd) | set(yd) != set(range(rank)):
        return None
    if set(xd) == set(yd) or list(xd) != sorted(xd) or list(yd) != sorted(yd):
        return None  # no free side (an elementwise difference), or permuted: not ours
    return bx.operands[0], xd, by.operands[0], yd, r


def _expand(x, xd: list[int], y, yd: list[int], r: int, out_dims: list[int]):
    """``max(|x|² + |y|² - 2 x·y, 0)`` in the layout of the sum's result (dims ``out_dims``)."""
    batch = [d for d in xd if d in yd and d != r]
    x_free = [d for d in xd if d not in yd]
    y_free = [d for d in yd if d not in xd]
    dot = ops.Dot(lhs_contracting=(xd.index(r),), rhs_contracting=(yd.index(r),),
                  lhs_batch=tuple(xd.index(d) for d in batch),
                  rhs_batch=tuple(yd.index(d) for d in batch))(x, y)
    dot_dims = batch + x_free + y_free  # the Dot's result layout, as dims of the sum's input
    if dot_dims != out_dims:
        dot = ops.Transpose(tuple(dot_dims.index(d) for d in out_dims))(dot)
    shape = dot.type.shape
    np_dtype = x.type.dtype.np_dtype
    zero = ops.Constant(np.zeros((), np_dtype))()

    def norms(a, dims: list[int]):
        sq = ops.Reduce(ops.Add(), (dims.index(r),))(ops.Multiply()(a, a), zero)
        kept = [d for d in dims if d != r]
        return ops.Broadcast(shape, tuple(out_dims.index(d) for d in kept))(sq)

    two = ops.Broadcast(shape, ())(ops.Constant(np.asarray(2, np_dtype))())
    total = ops.Subtract()(ops.Add()(norms(x, xd), norms(y, yd)), ops.Multiply()(two, dot))
    # Rounding can take a distance of (nearly) zero below zero: clamp.
    return ops.Maximum()(total, ops.Broadcast(shape, ())(zero))


class Distances:
    """The squared-distance rewrite (no options)."""

    name = "distances"

    def __call__(self, comp: Computation, ctx: PassContext) -> tuple[Computation, list[str]]:
        use = users(comp)
        found = {}
        for node in comp.nodes:
            m = _match(node, use)
            if m is not None:
                found[id(node)] = m
        if not found:
            return comp, []
        changes = []

        def rule(node, values, new):
            m = found.get(id(node))
            if m is None:
                return None
            x, xd, y, yd, r = m
            rank = len(node.operands[0].type.shape)
            out_dims = [d for d in range(rank) if d != r]
            big = node.operands[0].type
            changes.append(f"squared distances {node.type} over {big} -> "
                           f"one dot (no {big} intermediate)")
            return _expand(new(x), list(xd), new(y), list(yd), r, out_dims)

        return rewrite(comp, rule), changes
