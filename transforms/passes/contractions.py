"""Sums of products written with broadcasts, as the dots they are (``MatrixChain``'s first step).

A matrix-vector product is often written without ``@``:
``xp.sum(M * v[None, :], axis=1)`` is ``M @ v``, ``xp.sum(M, axis=1)`` is
``M @ 1``, and ``xp.sum(A[:, :, None] * B[None, :, :], axis=1)`` is
``A @ B`` with an (n, k, m) tensor in between. The matrix-chain pass reads
only ``Dot`` nodes, so ``xp.sum((A @ B) * x[None, :], axis=1)`` would stay
an n^3 product. ``as_dots`` rewrites such a sum into one ``Dot`` of the
broadcasts' sources where that helps: always for a rank-3 product (the
(n, k, m) tensor goes), and for a matrix (a sum over one of its dimensions,
alone or of the matrix times a broadcast vector) where the matrix is itself
a product that nothing else reads, so the chain pass can re-associate it.

What it matches: a ``Reduce`` adding over one dimension from a zero
(what ``xp.sum`` stages), of a floating-point ``Multiply`` of two operands
(or of one matrix), each a ``Broadcast`` of a vector or matrix (or the
value itself), where the reduced dimension comes from both and every other
dimension from exactly one. Sums in another order round differently: the
results agree to rounding, not bit for bit.

>>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
>>> from hlodsl.ir.staging import stage
>>> a = hd.array(np.ones((30, 20)))
>>> comp = stage(lambda a, b: xp.sum(a[:, :, None] * b[None, :, :], axis=1), (a, a.T), {}).computation
>>> comp, changes = as_dots(comp)
>>> changes
['sum over dimension 1 of f64[30,20,30] -> one dot of f64[30,20] and f64[20,30]']
"""

from __future__ import annotations

import numpy as np

from hlodsl import ops
from hlodsl.arrays.dtypes import Inexact
from hlodsl.ir.graph import Computation, Node
from hlodsl.ops.reduce import reduction_kind
from hlodsl.ir.structural import Constant

from .rewrite import rewrite, users

__all__ = ["as_dots"]


def _zero(node: Node) -> bool:
    return type(node.op) is Constant and not np.any(node.op.value)


def _source(node: Node, rank: int) -> tuple[Node, tuple[int, ...]]:
    """What ``node`` broadcasts, and where each of its dimensions goes in the product."""
    if type(node.op) is ops.Broadcast:
        return node.operands[0], tuple(node.op.dimensions)
    return node, tuple(range(rank))


def _product(node: Node, use: dict) -> bool:
    """A matrix product (possibly transposed) that only this sum reads."""
    if type(node.op) is ops.Transpose and len(use[id(node)]) == 1:
        node = node.operands[0]
    return (type(node.op) is ops.Dot and not node.op.lhs_batch and node.type.rank == 2
            and len(use[id(node)]) == 1)


def _match(node: Node, use: dict):
    """``(lhs, lhs contracting dim, rhs, rhs contracting dim, or None for a ones
    vector)`` of the dot that ``node`` computes, or None."""
    op = node.op
    if (type(op) is not ops.Reduce or len(node.operands) != 2 or len(op.dimensions) != 1
            or not issubclass(node.type.dtype, Inexact) or not _zero(node.operands[1])
            or reduction_kind(op, node.type.dtype) != "add"):
        return None
    (k,), x = op.dimensions, node.operands[0]
    rank = x.type.rank
    if type(x.op) is ops.Multiply and rank in (2, 3) and len(use[id(x)]) == 1:
        sides = [_source(o, rank) for o in x.operands]
    elif rank == 2:  # a matrix summed along k: the matrix times a vector of ones
        return (x, k, None, None) if _product(x, use) else None
    else:
        return None
    if any(s.type.rank > 2 or k not in dims for s, dims in sides):
        return None
    free = [[d for d in dims if d != k] for _, dims in sides]
    if sorted(free[0] + free[1]) != [d for d in range(rank) if d != k]:
        return None  # a dimension both keep (a batch) or neither has
    if rank == 2 and not any(_product(s, use) for s, _ in sides):
        return None  # a plain matrix-vector product: XLA fuses it as well as a dot
    (a, da), (b, db) = sides
    if free[0] and free[1] and free[0][0] > free[1][0] or not free[0] and free[1]:
        (a, da), (b, db) = (b, db), (a, da)  # the dot's result keeps the sum's order
    return a, da.index(k), b, db.index(k)


def as_dots(comp: Computation) -> tuple[Computation, list[str]]:
    """``comp`` with each sum of a product that is a matrix product written as a ``Dot``."""
    use = users(comp)
    found = {id(n): m for n in comp.nodes if (m := _match(n, use)) is not None}
    if not found:
        return comp, []
    changes = []
    for n in comp.nodes:
        if id(n) in found:
            a, _, b, _ = found[id(n)]
            what = f"{a.type} and {b.type}" if b is not None else f"{a.type} and ones"
            changes.append(f"sum over dimension {n.op.dimensions[0]} of {n.operands[0].type} "
                           f"-> one dot of {what}")

    def rule(node, values, new):
        m = found.get(id(node))
        if m is None:
            return None
        a, da, b, db = m
        lhs = new(a)
        if b is None:
            one = Constant(np.asarray(1, node.type.dtype.np_dtype))()
            rhs, db = ops.Broadcast((a.type.shape[da],), ())(one), 0
        else:
            rhs = new(b)
        return ops.Dot((da,), (db,))(lhs, rhs)

    return rewrite(comp, rule), changes
