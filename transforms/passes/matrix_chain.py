"""``MatrixChain``: re-associate chains of matrix products by the cheapest order.

``A @ B @ v`` is staged as written, ``(A @ B) @ v``: an n×n×n product and an
n×n intermediate, where ``A @ (B @ v)`` needs two matrix-vector products. This
pass finds each chain of plain matrix products and rebuilds it in the order
that the classic matrix-chain dynamic programme finds cheapest in flops
(ties: fewer intermediate elements). A chain already in its cheapest order is
left alone.

What a chain is made of:

- products: ``Dot`` of matrices or vectors, one contracting dimension each,
  no batch dimensions, no ``preferred_element_type`` (what ``@`` and
  ``xp.matmul`` stage for 1-D and 2-D operands, and what gradients stage:
  either operand may be contracted on either dimension, i.e. transposed);
- transposes of matrices between them (``(A @ B).T @ C`` is ``Bᵀ Aᵀ C``);
- scalings by a scalar between them: ``Multiply`` by a broadcast scalar,
  ``Divide`` by one (floating point only: integer division does not commute
  with products), ``Negate``; they are applied once, to the smallest of the
  chain's factors and its result.

Sums of products written with broadcasts (``xp.sum((A @ B) * x[None, :], axis=1)``,
``xp.sum(A @ B, axis=1)``, ``xp.sum(A[:, :, None] * B[None], axis=1)``) are
first rewritten as the dots they are (``contractions.as_dots``), so they join
chains too.

Every node inside a chain must have no other user: a product someone else also
reads ends the chain there (it is a factor), since recomputing it would cost
more than the order saves. Anything else (other sums and broadcasts, converts, batch
dimensions, mixed element types) ends a chain too. Sums in another order
round differently: the results agree to rounding, not bit for bit.

>>> import numpy as np, hlodsl as hd
>>> a = hd.array(np.ones((300, 300), np.float32))
>>> v = hd.array(np.ones(300, np.float32))
>>> f = hd.compile(lambda a, b, v: a @ b @ v, passes=[MatrixChain()])
>>> print(f.report(a, a, v))  # doctest: +ELLIPSIS
matrix-chain: 5 -> 5 instructions
  f32[300,300] @ f32[300,300] @ f32[300]: ((0 1) 2) -> (0 (1 2)), 5.4e+07 -> 3.6e+05 flops at ...
>>> float(f(a, a, v)[0])
90000.0
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import numpy as np

from hlodsl import ops
from hlodsl.arrays.dtypes import Bool, Inexact
from hlodsl.ir.graph import Computation, Node
from hlodsl.arrays.types import ArrayType

from .contractions import as_dots
from .context import PassContext
from .rewrite import rewrite, users

__all__ = ["MatrixChain"]


class _Factor(NamedTuple):
    """A chain operand: ``node`` (1-D or 2-D), transposed or not.

    A vector is a row (``transposed=False``) or a column (True) of the chain.
    """

    node: Node
    transposed: bool


_Tree = _Factor | tuple  # a factor, or a (left, right) pair of trees


def _is_matmul(node: Node) -> bool:
    """A plain product of matrices or vectors, each contracted on one dimension."""
    op = node.op
    if type(op) is not ops.Dot or op.lhs_batch or op.preferred_element_type is not None:
        return False
    types = [o.type for o in node.operands]
    if not all(isinstance(t, ArrayType) and t.rank in (1, 2) for t in types):
        return False
    if issubclass(types[0].dtype, Bool):
        return False
    return len(op.lhs_contracting) == 1 and len(op.rhs_contracting) == 1


def _side_transposed(node: Node, side: int) -> bool:
    """Whether operand ``side`` (0: lhs, 1: rhs) of a product enters it transposed.

    Vectors: the lhs is a row, the rhs a column (True).
    """
    operand = node.operands[side]
    contracting = (node.op.lhs_contracting, node.op.rhs_contracting)[side][0]
    if operand.type.rank == 1:
        return side == 1
    return contracting == (0 if side == 0 else 1)


def _mirror(tree: _Tree) -> _Tree:
    """The tree of the transposed product: (L R)ᵀ = Rᵀ Lᵀ."""
    if isinstance(tree, _Factor):
        return _Factor(tree.node, not tree.transposed)
    return _mirror(tree[1]), _mirror(tree[0])


def _scalar(node: Node) -> Node | None:
    """The rank-0 node that ``node`` broadcasts, else None."""
    if type(node.op) is ops.Broadcast and node.operands[0].type.rank == 0:
        return node.operands[0]
    return None


class _Chain:
    """One chain found from its outermost product: tree, inner nodes, scalings."""

    def __init__(self, root: Node, use: dict):
        self.use = use
        self.inner: list[Node] = []
        # (Multiply, Divide or Negate; the scalar, None for Negate), in the order met
        self.scalings: list[tuple[type, Node | None]] = []
        self.tree = self._product(root)

    def _product(self, node: Node) -> _Tree:
        """The tree of a product as it computes (lhs free dims first)."""
        return (self._operand(node.operands[0], _side_transposed(node, 0)),
                self._operand(node.operands[1], _side_transposed(node, 1)))

    def _operand(self, node: Node, transposed: bool) -> _Tree:
        """The tree of ``node`` (transposed or not) inside the chain: a factor where it ends."""
        if len(self.use[id(node)]) != 1:
            return _Factor(node, transposed)  # read elsewhere too: a factor, computed once
        op = node.op
        if _is_matmul(node):
            self.inner.append(node)
            tree = self._product(node)
            # A product with a vector on the right is a column; its node is a vector,
            # which the chain reads as a row unless it says transposed.
            column = node.operands[1].type.rank == 1 and node.operands[0].type.rank == 2
            return _mirror(tree) if transposed != column else tree
        if type(op) is ops.Transpose and tuple(op.permutation) in ((1, 0), (0,)):
            self.inner.append(node)
            flip = len(op.permutation) == 2
            return self._operand(node.operands[0], transposed != flip)
        if type(op) is ops.Negate:
            self.inner.append(node)
            self.scalings.append((ops.Negate, None))
            return self._operand(node.operands[0], transposed)
        divide = type(op) is ops.Divide and issubclass(node.type.dtype, Inexact)
        if type(op) is ops.Multiply or divide:
            a, b = node.operands
            # x / s: only the divisor may be the scalar; x * s and s * x alike.
            for data, other in ((a, b), (b, a))[:2 if type(op) is ops.Multiply else 1]:
                s = _scalar(other)
                if s is not None:
                    self.inner.append(node)
                    self.scalings.append((type(op), s))
                    return self._operand(data, transposed)
        return _Factor(node, transposed)


def _leaves(tree: _Tree) -> list[_Factor]:
    if isinstance(tree, _Factor):
        return [tree]
    return _leaves(tree[0]) + _leaves(tree[1])


def _numbered(tree: _Tree, counter: list[int]):
    """``tree`` with its factors numbered left to right."""
    if isinstance(tree, _Factor):
        counter[0] += 1
        return counter[0] - 1
    return _numbered(tree[0], counter), _numbered(tree[1], counter)


def _matrix_shape(f: _Factor, first: bool, last: bool) -> tuple[int | None, int | None] | None:
    """(rows, columns) of a factor, None for a vector's missing side; None if it cannot be."""
    shape = f.node.type.shape
    if len(shape) == 2:
        return (shape[1], shape[0]) if f.transposed else (shape[0], shape[1])
    if not f.transposed and first:
        return None, shape[0]
    if f.transposed and last:
        return shape[0], None
    return None  # a vector inside a chain: not something products make


def _dims(factors: list[_Factor]) -> tuple[list[int], bool, bool] | None:
    """The chain's sizes p0..pk (factor i is p[i] × p[i+1]; a vector's missing side is 1),
    whether the first factor is a row vector and the last a column; None if inconsistent."""
    shapes = [_matrix_shape(f, i == 0, i == len(factors) - 1) for i, f in enumerate(factors)]
    if any(s is None for s in shapes):
        return None
    for (_, c), (r, _) in itertools.pairwise(shapes):
        if c is None or r is None or c != r:
            return None
    p = [shapes[0][0]] + [c for _, c in shapes]
    return [1 if x is None else x for x in p], p[0] is None, p[-1] is None


def _best_order(p: list[int]):
    """(multiply-adds, intermediate elements, tree) of the cheapest parenthesisation."""

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


def _cost(tree, p: list[int]) -> tuple[int, int, int, int]:
    """(multiply-adds, intermediate elements, first factor, last factor) of ``tree``."""
    if isinstance(tree, int):
        return 0, 0, tree, tree
    cl, el, i, k = _cost(tree[0], p)
    cr, er, _, j = _cost(tree[1], p)
    return cl + cr + p[i] * p[k + 1] * p[j + 1], el + er + p[i] * p[j + 1], i, j


def _show(tree) -> str:
    return str(tree) if isinstance(tree, int) else f"({_show(tree[0])} {_show(tree[1])})"


def _build(tree, values: list, transposed: list[bool]):
    """The product ``tree`` of numbered factors: (value, transposed) with the
    value's dims in the product's (rows, columns) order, a missing side dropped."""
    if isinstance(tree, int):
        return values[tree], transposed[tree]
    lhs, lt = _build(tree[0], values, transposed)
    rhs, rt = _build(tree[1], values, transposed)
    lc = 0 if lhs.type.rank == 1 or lt else 1
    rc = 0 if rhs.type.rank == 1 or not rt else 1
    return ops.Dot((lc,), (rc,))(lhs, rhs), False


def _scale(x, scalings: list, scalars: list):
    """``x`` scaled as the chain did (the ``scalars`` are the new values of theirs)."""
    for (op, _), s in zip(scalings, scalars):
        if op is ops.Negate:
            x = ops.Negate()(x)
        else:
            x = op()(x, ops.Broadcast(x.type.shape, ())(s))
    return x


class MatrixChain:
    """The matrix-chain reordering pass (no options)."""

    name = "matrix-chain"

    def __call__(self, comp: Computation, ctx: PassContext) -> tuple[Computation, list[str]]:
        comp, sums = as_dots(comp)  # sums of products written with broadcasts join chains
        use = users(comp)
        plans: dict[int, tuple] = {}
        inner: set[int] = set()
        changes = []
        for node in reversed(comp.nodes):  # outermost products first
            if id(node) in inner or not _is_matmul(node):
                continue
            chain = _Chain(node, use)
            inner.update(id(n) for n in chain.inner)
            plan = self._plan(node, chain)
            if plan is not None:
                plans[id(node)] = plan[0]
                changes.append(plan[1])
        if not plans:
            return comp, sums

        def rule(node, values, new):
            plan = plans.get(id(node))
            if plan is None:
                return None
            factors, best, scalings, target = plan
            vals = [new(f.node) for f in factors]
            scalars = [None if s is None else new(s) for _, s in scalings]
            if target is not None:  # scale the smallest factor
                vals[target] = _scale(vals[target], scalings, scalars)
            out, _ = _build(best, vals, [f.transposed for f in factors])
            return out if target is not None else _scale(out, scalings, scalars)

        return rewrite(comp, rule), sums + changes[::-1]

    @staticmethod
    def _plan(node: Node, chain: _Chain):
        """((factors, best tree, scalings, factor to scale or None), report line), or None."""
        factors = _leaves(chain.tree)
        if len(factors) < 3:
            return None
        dims = _dims(factors)
        if dims is None:
            return None  # not a chain this pass understands: leave it as written
        p, _, _ = dims
        written = _numbered(chain.tree, [0])
        cost, elements, best = _best_order(p)
        old_cost, old_elements, _, _ = _cost(written, p)
        if (cost, elements) >= (old_cost, old_elements):
            return None
        sizes = [int(np.prod(f.node.type.shape)) for f in factors]
        smallest = min(range(len(factors)), key=sizes.__getitem__)
        target = smallest if sizes[smallest] < int(np.prod(node.type.shape)) else None
        shapes = " @ ".join(f"{f.node.type}{'.T' if f.transposed and f.node.type.rank == 2 else ''}"
                            for f in factors)
        where = f" at {node.loc}" if node.loc else ""
        line = (f"{shapes}: {_show(written)} -> {_show(best)}, "
                f"{2 * old_cost:.1e} -> {2 * cost:.1e} flops{where}")
        return (factors, best, chain.scalings, target), line
