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

Ordered side effects (``hd.debug_print(..., ordered=True)``) are chained by a
token (``ordered_token``). A body that has one captures the enclosing
program's token like any outside value, and hands its last token back
(``captured_outputs``, ``continue_token``): the loop or branch carries it, so
what comes after the loop comes after the effects inside it.

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
from hlodsl.context import STATE, current_builder
from hlodsl.ir.graph import Builder, Computation, Node
from hlodsl.ir.structural import GetTupleElement, Parameter, Tuple
from hlodsl.arrays.types import TokenType, TupleType

__all__ = ["Body", "capture_key", "watched", "ordered_token"]


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

    @property
    def threads_token(self) -> bool:
        """Whether an ordered side effect in the body took the enclosing program's token."""
        return self.builder.token_input is not None

    @property
    def captured_outputs(self) -> list[Node]:
        """``captured_inputs`` for a loop body to return: the enclosing program's token,
        if captured, replaced by the body's last one (so iterations chain)."""
        b = self.builder
        return [b.token if n is b.token_input and b.token is not None else n
                for n in self.captured_inputs]

    def last_token(self, token: Token) -> Node:
        """The body's last ordered token: the enclosing program's ``token`` (taken as an
        input, if the body has no ordered effect), or the one its last effect returned."""
        node = self._capture(token)
        b = self.builder
        return b.token if b.token is not None and b.token_input is not None else node

    def continue_token(self, outputs) -> None:
        """After the op that runs the body: the enclosing program's next ordered effect
        comes after the token the op returned for the captured one (``outputs`` are the
        op's results for ``captured``, in order)."""
        taken = self.builder.token_input
        for node, out in zip(self.captured_inputs, outputs):
            if node is taken:
                current_builder().token = out._node

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


def ordered_token(builder: Builder) -> Token:
    """The token the next ordered side effect staged in ``builder`` comes after.

    The first one in a program takes a fresh token (``after-all``); in a body (a
    builder with a ``capture``), the enclosing builder's token, captured as an input.
    The caller sets ``builder.token`` to the token its effect returns.
    """
    if builder.token is None:
        node = None
        builders = STATE.builders
        at = next((i for i in range(len(builders) - 1, -1, -1) if builders[i] is builder), 0)
        if builder.capture is not None and at > 0:
            outer = ordered_token(builders[at - 1])
            node = builder.capture(outer)
            builder.token_input = node
        if node is None:
            from hlodsl.ir.op import op_class

            node = builder.add(op_class("after-all")(), (), TokenType(), None)
        builder.token = node
    return Token(builder.token)
