"""Running a pass inside the bodies of loops and the branches of conditionals.

A ``scan`` or ``fori_loop`` is one ``While`` node of the staged program whose
body is a computation of its own, and a ``cond``/``switch`` one
``Conditional`` node with a computation per branch. A value the body builds
(an n x n block from the carry and a row of the data) is a temporary of the
whole program as XLA counts it, but it is no node of the entry computation,
so a pass over the entry alone never sees it. ``in_bodies`` runs a pass over
each such computation, as if it were a program of its own (its parameter is
the loop state, or the branch's operand), and rebuilds the node with the
computations it gives, so that the loop or branch runs the rewritten body.

>>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
>>> from hlodsl.ir.staging import stage
>>> from hlodsl.transforms.passes import PassContext, Split
>>> def f(c0):
...     step = lambda c, _: (xp.tanh(xp.exp(-(c[:, None] - c[None, :]) ** 2) @ c / 400), None)
...     return hd.scan(step, c0, None, length=3)[0]
>>> comp = stage(f, (hd.array(np.linspace(0, 1, 400)),), {}).computation
>>> _, changes = Split()(comp, PassContext(400 * 400 * 2))
>>> changes[0].startswith("in the body of While")
True
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from hlodsl.ir.graph import Computation, Node
from hlodsl.ops import Conditional, While
from hlodsl.ir.staging import stage_computation

from .rewrite import rewrite

__all__ = ["in_bodies"]

_LABEL = {"body": "body", "true_computation": "true branch",
          "false_computation": "false branch", "branch_computations": "branch"}

#: ``pass_(computation) -> (computation, changes)``: what runs inside each body.
Inner = Callable[[Computation], tuple[Computation, list[str]]]


def _computations(node: Node) -> list[tuple[str, Computation]]:
    """The node's sub-computations a pass may rewrite, each with the field holding it."""
    op = node.op
    if type(op) is While:
        return [("body", stage_computation(op.body, (node.operands[0].type,),
                                           tuple_result=True))]
    if type(op) is Conditional:
        names = (["branch_computations"] * len(op.branches) if op.branch_computations
                 else ["true_computation", "false_computation"])
        return [(name, stage_computation(fn, (o.type,)))
                for name, fn, o in zip(names, op.branches, node.operands[1:])]
    return []


def _inlined(comp: Computation) -> Computation:
    """``comp`` with its calls of functions with custom derivatives (one node each, kept for
    the transformations, hlodsl.transforms.custom_calls) staged again as their
    instructions: the passes see every instruction of a body, as they do of the entry."""
    if not any(getattr(n.op, "inline", False) for n in comp.nodes):
        return comp
    return rewrite(comp, lambda node, values, new: None)


def _rebuilt(op, fields: list[str], comps: list[Computation]):
    """``op`` with its sub-computations replaced by ``comps``."""
    if fields and fields[0] == "branch_computations":
        return attrs.evolve(op, branch_computations=tuple(comps))
    return attrs.evolve(op, **dict(zip(fields, comps)))


def in_bodies(comp: Computation, inner: Inner) -> tuple[Computation, list[str]]:
    """``comp`` with ``inner`` run over the body of each loop and the branches of each
    conditional (nested ones first, as ``inner`` recurses), and what it changed there."""
    new_ops: dict[int, object] = {}
    changes: list[str] = []
    for node in comp.nodes:
        subs = _computations(node)
        if not subs:
            continue
        results = [inner(_inlined(c)) for _, c in subs]
        if not any(lines for _, lines in results):
            continue
        kind = type(node.op).__name__
        where = f" at {node.loc}" if node.loc else ""
        for (field, sub), (_, lines) in zip(subs, results):
            changes += [f"in the {_LABEL[field]} of {kind}{where}: {line}" for line in lines]
        new_ops[id(node)] = _rebuilt(node.op, [f for f, _ in subs], [c for c, _ in results])
    if not new_ops:
        return comp, []

    def rule(node, values, new):
        op = new_ops.get(id(node))
        if op is None:
            return None
        args = values[0] if type(op) is While else values
        return op(*args)

    return rewrite(comp, rule), changes
