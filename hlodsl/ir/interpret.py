"""Running a staged computation again, node by node: ``evaluate`` and ``replay``.

A ``Computation`` is a finished program. ``evaluate(comp, args, apply)`` walks
its nodes in order (their order is topological), binding the parameters to
``args`` and giving each other node the value ``apply(node, operand_values)``;
the value of the root is the result. ``replay`` is ``evaluate`` where each node
applies its op again: eagerly, into whatever is being staged now, or under an
active transformation, which then observes every op of the computation. That
is what calling a ``Computation`` does, and what lets a rule treat a staged
branch or loop body as a function. Transformations over the staged program
(``vmap``'s batching) are ``evaluate`` with another ``apply``.

While a node is applied, errors and the nodes it makes carry that node's own
source line (``STATE.location``), so a replayed program still points at the
user's code.

>>> import numpy as np, hlodsl as hd
>>> from .staging import stage
>>> staged = stage(lambda x: x * x + 1, (hd.array(np.float32([2, 3])),), {})
>>> replay(staged.computation, [hd.array(np.float32([4, 5]))])
hlodsl.Array[float32, (2,)]([17., 26.])
"""

from __future__ import annotations

from typing import Callable, Sequence

from hlodsl.arrays.types import TokenType
from hlodsl.context import STATE
from .graph import Computation, Node, use_replay
from .structural import GetTupleElement, Parameter, Tuple

__all__ = ["evaluate", "replay", "apply_node", "depends"]


def evaluate(comp: Computation, args: Sequence, apply: Callable[[Node, list], object]):
    """The value of ``comp``'s root with its parameters bound to ``args``.

    A tuple-shaped parameter is bound to a Python tuple of its elements; a
    tuple-shaped node's value is whatever ``apply`` gives it (``apply_node``:
    a Python tuple).
    """
    if len(args) != len(comp.params):
        raise TypeError(f"the computation {comp.name} takes {len(comp.params)} argument(s), "
                        f"got {len(args)}")
    env: dict[int, object] = {id(p): a for p, a in zip(comp.params, args)}
    for node in comp.nodes:
        if id(node) in env:
            continue
        if type(node.op) is Parameter:
            raise TypeError(f"{comp.name}: parameter {node.op.index} is not bound")
        values = [env[id(o)] for o in node.operands]
        previous = STATE.location
        STATE.location = node.loc or previous
        try:
            env[id(node)] = apply(node, values)
        finally:
            STATE.location = previous
    return env[id(comp.root)]


def apply_node(node: Node, values: list):
    """``node``'s op applied again to ``values`` (tuples stay Python tuples)."""
    op = node.op
    if type(op) is Tuple:
        return tuple(values)
    if type(op) is GetTupleElement:
        return values[0][op.index]
    return op(*values)


def replay(comp: Computation, args: Sequence):
    """``comp`` run again on ``args``: eagerly, staged, or under a transformation."""
    return evaluate(comp, args, apply_node)


use_replay(replay)  # calling a Computation replays it (the graph sits below this module)


def depends(comp: Computation, inputs: Sequence) -> object:
    """Which results of ``comp`` may depend on the inputs flagged True, shaped as the root.

    ``inputs`` gives a flag per parameter (a tuple of flags for a tuple
    parameter). A result depends on an input when some path of nodes leads
    from one to the other; tuples and their elements are followed exactly,
    any other op's results all depend on any operand that does. (``vmap``
    asks which loop-carried values become batched.)

    >>> import numpy as np, hlodsl as hd
    >>> from .staging import stage
    >>> staged = stage(lambda x, y: (x * 2, y + 1), (hd.array(1.0), hd.array(2.0)), {})
    >>> depends(staged.computation, [True, False])
    (True, False)
    """

    def apply(node: Node, values: list):
        op = node.op
        if type(op) is Tuple:
            return tuple(values)
        if type(op) is GetTupleElement:
            return values[0][op.index]
        flag = any(_any(v) for v in values)
        return _like(node.type, flag)

    return evaluate(comp, list(inputs), apply)


def _any(flags) -> bool:
    return any(_any(f) for f in flags) if isinstance(flags, tuple) else bool(flags)


def _like(t, flag: bool):
    elements = getattr(t, "elements", None)
    if elements is not None:
        return tuple(_like(e, flag) for e in elements)
    return flag and not isinstance(t, TokenType)  # a token orders effects: it holds no value
