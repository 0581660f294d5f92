"""``Body``: a Python function staged once into a sub-computation, its captures lifted to inputs.

The functions given to control flow (a branch, a loop body) become HLO
sub-computations, which cannot read values of the program around them. A
``Body`` stages the function exactly once, in a builder of its own: each
outside array the function uses (a symbolic array of an enclosing program, or
a concrete array that a derivative being taken depends on) becomes one more
input of the computation, and the caller passes it as one more operand, as
JAX lifts a body's constants to operands. Other concrete arrays become
constants.

A ``tupled`` body takes its inputs as the elements of one tuple parameter, as
HLO ``while`` and ``conditional`` pass them; the tuple's type is settled when
the body is finished, so inputs can still be added after the function ran
(loop state that depends on what the function returned).

Staging each body once keeps staging linear in nesting depth: a loop in a
loop in a loop stages the innermost body once, not 2**depth times.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl import ops
>>> from hlodsl.ir.graph import Builder
>>> from hlodsl.arrays.types import ArrayType
>>> with Builder("outer") as b:
...     y = hd.Array._from_node(b.parameter(ArrayType(hd.float32, (2,))))
...     body = Body("scale", (ArrayType(hd.float32, (2,)),), tupled=True)
...     out = body.run(lambda x: ops.Multiply()(x, y))   # y is captured
...     comp = body.finish([out])
>>> comp.param_types, [a is y for a in body.captured]
((TupleType([ArrayType(float32, (2,)), ArrayType(float32, (2,))]),), [True])
"""

from __future__ import annotations

from typing import Callable

from hlodsl.arrays.array import Array, Token
from hlodsl.context import STATE
from hlodsl.ir.graph import Builder, Computation, Node
from hlodsl.ir.structural import GetTupleElement, Parameter, Tuple
from hlodsl.arrays.types import TupleType

__all__ = ["Body", "capture_key", "watched"]


def capture_key(x: Array) -> tuple:
    """One key per captured value: a symbolic value may be wrapped by several Array objects."""
    return ("node", id(x._node)) if x._node is not None else ("array", id(x))


def watched(x: Array) -> bool:
    """Whether a derivative being taken (active or paused) follows the concrete array ``x``."""
    return any(t.sees((x,)) for t in STATE.traces)


class Body:
    """One function staged into one sub-computation; outside arrays it uses become inputs."""

    def __init__(self, name: str, in_types: tuple, tupled: bool,
                 captured: list[Array] | None = None, param_name: str = "state"):
        self.name = name
        self.tupled = tupled
        self.builder = Builder(name, self._capture)
        self.builder.replayable = True
        self.types: list = []
        self.inputs: list[Node] = []
        #: The outside arrays the function used, in first-use order: pass them as
        #: operands after the declared inputs.
        self.captured: list[Array] = []
        self._found: dict[tuple, Node] = {}
        if tupled:
            self._param = self.builder.add(Parameter(0), (), TupleType(()), None)
            self.builder.params.append(self._param)
            self.builder.param_names.append(param_name)
        for t in in_types:
            self.add_input(t)
        for x in captured or ():  # captures another body made first (a loop's condition)
            self._capture(x)

    # -- inputs ----------------------------------------------------------------------------

    def add_input(self, t) -> Node:
        """One more input of type ``t``: a parameter, or an element of the tuple parameter."""
        self.types.append(t)
        if not self.tupled:
            node = self.builder.parameter(t)
        else:
            node = self.builder.add(GetTupleElement(len(self.types) - 1), (self._param,), t, None)
        self.inputs.append(node)
        return node

    def _capture(self, x):
        """``Builder.capture``: the input standing for an outside array (None: a constant)."""
        if x._node is None and not watched(x):
            return None
        key = capture_key(x)
        node = self._found.get(key)
        if node is None:
            node = self._found[key] = self.add_input(x.type)
            self.captured.append(x)
        return node

    def take_captures(self, arrays: list[Array]) -> None:
        """Also take ``arrays`` (captured by a sibling body) as inputs, used or not."""
        for x in arrays:
            self._capture(x)

    @property
    def captured_inputs(self) -> list[Node]:
        return [self._found[capture_key(x)] for x in self.captured]

    # -- staging -----------------------------------------------------------------------------

    def arrays(self, nodes) -> list:
        """Array (or token) values of ``nodes`` for the function to use."""
        from hlodsl.ir.op import wrap_node

        return [wrap_node(self.builder, n) for n in nodes]

    def run(self, fn: Callable, *args):
        """``fn(*args)`` staged into this body (default args: the declared inputs)."""
        if not args:
            args = tuple(self.arrays(self.inputs))
        with self.builder:
            return fn(*args)

    def within(self):
        """The body's builder as a context: ops called inside it are recorded in the body."""
        return self.builder

    def finish(self, results: list, force_tuple: bool = False) -> Computation:
        """The computation returning ``results`` (arrays or tokens of this body, or captured
        outside arrays): one result as itself, several (or ``force_tuple``) as a tuple."""
        b = self.builder
        with b:
            nodes = tuple(x if isinstance(x, Node) else b.node_of(x) for x in results)
        if len(nodes) == 1 and not force_tuple:
            root = nodes[0]
        else:
            root = b.add(Tuple(), nodes, TupleType(tuple(n.type for n in nodes)), None)
        if self.tupled:
            self._param.type = TupleType(tuple(self.types))
        return b.finish(root)


def is_value(x) -> bool:
    return isinstance(x, (Array, Token))
