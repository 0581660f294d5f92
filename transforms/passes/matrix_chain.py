"""``MatrixChain``: re-associate chains of matrix products by the cheapest order.

``A @ B @ v`` is staged as written, ``(A @ B) @ v``: an n×n×n product and an
n×n intermediate, where ``A @ (B @ v)`` needs two matrix-vector products. This
pass finds each chain of plain matrix products (``Dot`` contracting the last
dimension of a matrix or vector with the first of the next, no batch
dimensions, no preferred element type) whose inner products are used only by
the chain, and rebuilds it in the order that the classic dynamic programme
finds cheapest in multiply-adds (ties: fewer intermediate elements). A chain
already in its cheapest order is left alone.

Scalings, transposes and sums between the products end a chain; so does a
product someone else also reads (recomputing it would cost more than the
order saves). Floating-point sums in another order round differently: the
results agree to rounding, not bit for bit.

>>> import numpy as np, hlodsl as hd
>>> a = hd.array(np.ones((300, 300), np.float32))
>>> v = hd.array(np.ones(300, np.float32))
>>> f = hd.compile(lambda a, b, v: a @ b @ v, passes=[MatrixChain()])
>>> print(f.report(a, a, v))
matrix-chain: 5 -> 5 instructions
  f32[300,300] @ f32[300,300] @ f32[300]: ((0 1) 2) -> (0 (1 2)), 2.7e+07 -> 1.8e+05 multiply-adds
>>> float(f(a, a, v)[0])
90000.0
"""

from __future__ import annotations

import functools

from hlodsl.graph import Computation, Node
from hlodsl.ops import Dot
from hlodsl.types import ArrayType

from .pipeline import PassContext
from .rewrite import rewrite, users

__all__ = ["MatrixChain"]


def _is_matmul(node: Node) -> bool:
    """A plain product: matrix or vector times matrix or vector, last dim by first."""
    op = node.op
    if type(op) is not Dot or op.lhs_batch or op.preferred_element_type is not None:
        return False
    lhs, rhs = (o.type for o in node.operands)
    if not (isinstance(lhs, ArrayType) and isinstance(rhs, ArrayType)):
        return False
    if lhs.rank not in (1, 2) or rhs.rank not in (1, 2):
        return False
    return op.lhs_contracting == (lhs.rank - 1,) and op.rhs_contracting == (0,)


def _factors(node: Node, use: dict, root: bool = True) -> list[Node]:
    """The operands of the chain ending at ``node``, left to right."""
    if not _is_matmul(node) or (not root and len(use[id(node)]) != 1):
        return [node]
    lhs, rhs = node.operands
    return _factors(lhs, use, False) + _factors(rhs, use, False)


def _dims(factors: list[Node]) -> list[int]:
    """The chain's dimensions p0..pk (factor i is p[i] x p[i+1]; a vector's outer side is 1)."""
    first = factors[0].type.shape
    p = [1 if len(first) == 1 else first[0]]
    for f in factors:
        p.append(1 if len(f.type.shape) == 1 and f is not factors[0] else f.type.shape[-1])
    return p


def _best_order(p: list[int]):
    """(cost, elements, tree) of the cheapest parenthesisation of factors i..j."""

    @functools.cache
    def best(i: int, j: int):
        if i == j:
            return 0, 0, i
        options = []
        for k in range(i, j):
            cl, el, tl = best(i, k)
            cr, er, tr = best(k + 1, j)
            options.append((cl + cr + p[i] * p[k + 1] * p[j + 1],
                            el + er + p[i] * p[j + 1], (tl, tr)))
        return min(options, key=lambda o: (o[0], o[1]))

    return best(0, len(p) - 2)


def _as_written(node: Node, use: dict, first: list[int], root: bool = True):
    """The tree of the chain as staged, factors numbered from ``first[0]``."""
    if not _is_matmul(node) or (not root and len(use[id(node)]) != 1):
        first[0] += 1
        return first[0] - 1
    lhs, rhs = node.operands
    return (_as_written(lhs, use, first, False), _as_written(rhs, use, first, False))


def _cost(tree, p: list[int]) -> tuple[int, int, int, int]:
    """(multiply-adds, intermediate elements, first factor, last factor) of ``tree``."""
    if isinstance(tree, int):
        return 0, 0, tree, tree
    cl, el, i, k = _cost(tree[0], p)
    cr, er, _, j = _cost(tree[1], p)
    return cl + cr + p[i] * p[k + 1] * p[j + 1], el + er + p[i] * p[j + 1], i, j


def _show(tree) -> str:
    return str(tree) if isinstance(tree, int) else f"({_show(tree[0])} {_show(tree[1])})"


def _build(tree, values: list):
    if isinstance(tree, int):
        return values[tree]
    lhs, rhs = _build(tree[0], values), _build(tree[1], values)
    return Dot((lhs.type.rank - 1,), (0,))(lhs, rhs)


class MatrixChain:
    """The matrix-chain reordering pass (no options)."""

    name = "matrix-chain"

    def __call__(self, comp: Computation, ctx: PassContext) -> tuple[Computation, list[str]]:
        use = users(comp)
        plans: dict[int, tuple] = {}
        inner: set[int] = set()
        changes = []
        for node in reversed(comp.nodes):  # outermost products first
            if id(node) in inner or not _is_matmul(node):
                continue
            factors = _factors(node, use)
            if len(factors) < 3:
                continue
            p = _dims(factors)
            written = _as_written(node, use, [0])
            cost, elements, best = _best_order(p)
            old_cost, old_elements, _, _ = _cost(written, p)
            self._mark_inner(node, use, inner)
            if (cost, elements) >= (old_cost, old_elements):
                continue
            plans[id(node)] = (factors, best)
            shapes = " @ ".join(str(f.type) for f in factors)
            changes.append(f"{shapes}: {_show(written)} -> {_show(best)}, "
                           f"{old_cost:.1e} -> {cost:.1e} multiply-adds")
        if not plans:
            return comp, []

        def rule(node, values, new):
            plan = plans.get(id(node))
            if plan is None:
                return None
            factors, best = plan
            return _build(best, [new(f) for f in factors])

        return rewrite(comp, rule), changes[::-1]

    @staticmethod
    def _mark_inner(node: Node, use: dict, inner: set[int]) -> None:
        for o in node.operands:
            if _is_matmul(o) and len(use[id(o)]) == 1:
                inner.add(id(o))
                MatrixChain._mark_inner(o, use, inner)
