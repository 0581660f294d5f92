"""Rewriting a staged program: stage it again node by node, some nodes replaced.

A pass over a ``Computation`` does not edit nodes in place (they are shared,
interned and typed); it stages the program again into a fresh builder with
``rewrite``, where a ``rule`` may give any node a new value built from ops
called on the new values of its operands. Unchanged nodes are their op applied
again, so shape rules check every rewrite, interning removes the duplicates a
rewrite leaves, and dead nodes disappear when the builder finishes. Source
lines stay with the nodes (``STATE.location``), so errors and metadata still
point at the user's code.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl import ops
>>> from hlodsl.ir.staging import stage
>>> comp = stage(lambda x: hd.ops.Exp()(hd.ops.Log()(x)), (hd.array(np.float32([1, 2])),), {}).computation
>>> def drop_exp_log(node, values, new):          # exp(log(x)) -> x
...     if type(node.op) is ops.Exp and type(node.operands[0].op) is ops.Log:
...         return new(node.operands[0].operands[0])
>>> [type(n.op).__name__ for n in rewrite(comp, drop_exp_log).nodes]
['Parameter']
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from hlodsl.arrays.array import Array
from hlodsl.ir.graph import Builder, Computation, Node
from hlodsl.ir.interpret import apply_node, evaluate
from hlodsl.ir.op import wrap_node
from hlodsl.ir.staging import _root
from hlodsl.arrays.types import ArrayType, TupleType

__all__ = ["rewrite", "users", "nbytes", "value_of", "Rule", "parameters_like", "root_of"]

#: ``rule(node, values, new)``: the node's new value, or None to apply its op again;
#: ``new(earlier_node)`` is the new value of any node before it.
Rule = Callable[[Node, list, Callable[[Node], object]], object]


def rewrite(comp: Computation, rule: Rule) -> Computation:
    """``comp`` staged again, each node's value given by ``rule`` (None: its op again).

    ``values`` are the new values of the node's operands: arrays (symbolic, in
    the new program) or tuples of them for tuple-shaped operands; ``new(n)``
    gives the new value of any earlier node ``n``. The rule may call any ops;
    what it returns must have the node's type.
    """
    with Builder(comp.name) as b:
        args = parameters_like(b, comp)
        env: dict[int, object] = {}

        def new(node: Node):
            return env[id(node)]

        def apply(node: Node, values: list):
            out = rule(node, values, new)
            if out is None:
                out = apply_node(node, values)
            else:
                _check_type(node, out)
            env[id(node)] = out
            return out

        env.update((id(p), a) for p, a in zip(comp.params, args))
        out = evaluate(comp, args, apply)
        root = root_of(b, comp, out)
    return b.finish(root)


def parameters_like(b: Builder, comp: Computation) -> list:
    """New parameters in ``b`` of ``comp``'s types and names, as values."""
    return [wrap_node(b, b.parameter(p.type, name))
            for p, name in zip(comp.params, comp.param_names)]


def root_of(b: Builder, comp: Computation, out) -> Node:
    """The root node in ``b`` for ``out``, the new value of ``comp``'s root (a tuple
    stays a tuple, even of one element)."""
    if isinstance(comp.root.type, TupleType):
        return _root(b, tuple(b.node_of(x) for x in out), comp.name, force_tuple=True)
    return b.node_of(out)


def _check_type(node: Node, out) -> None:
    got = tuple(x.type for x in out) if isinstance(out, tuple) else out.type
    want = node.type.elements if isinstance(node.type, TupleType) else node.type
    if (tuple(want) if isinstance(node.type, TupleType) else want) != got:
        raise AssertionError(f"a rewrite of {node!r} gave {got}, not its type {node.type}")


def users(comp: Computation) -> dict[int, list[Node]]:
    """For each node (by ``id``), the nodes that use it as an operand, in program order.

    The root counts one more use (by the program's result), so a node that
    only the result reads is never "unused".
    """
    out: dict[int, list[Node]] = {id(n): [] for n in comp.nodes}
    for n in comp.nodes:
        for o in n.operands:
            out[id(o)].append(n)
    out[id(comp.root)].append(None)  # the program's result
    return out


def nbytes(t) -> int:
    """Bytes of a value of type ``t`` (a tuple: its elements together; a token: 0)."""
    if isinstance(t, ArrayType):
        return prod(t.shape) * t.dtype.np_dtype.itemsize
    if isinstance(t, TupleType):
        return sum(nbytes(e) for e in t.elements)
    return 0


def value_of(node: Node) -> Array:
    """An array standing for ``node`` (of the program being rewritten or built)."""
    return Array._from_node(node)
