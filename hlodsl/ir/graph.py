"""The staging graph: nodes, computations, and the builder that records them.

While a Python function is staged, every op call on symbolic arrays appends a
``Node`` (op, operand nodes, result type, user source line) to the innermost
active ``Builder``. Identical ``(op, operands)`` pairs are interned, so the
emitted HLO is deterministic and free of duplicate subexpressions. A finished
builder becomes a ``Computation``: parameters, the nodes reachable from the
root in creation (hence topological) order, and the root.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hlodsl.context import STATE, current_builder
from hlodsl.errors import SourceLocation, staging_error

if TYPE_CHECKING:
    from hlodsl.arrays.types import AbstractType

__all__ = ["Node", "Builder", "Computation", "current_builder", "OPCODES", "use_replay",
           "has_side_effect"]

#: Opcode -> op class, filled as ``hlodsl.ir.op.HloOp`` subclasses are defined (that
#: module sits above this one): the builder makes its parameters and constants
#: through it, so the graph never imports the ops it records.
OPCODES: dict[str, type] = {}


class Node:
    """One instruction of a computation being staged."""

    __slots__ = ("op", "operands", "type", "builder", "id", "loc")

    def __init__(self, op, operands: tuple[Node, ...], type_: AbstractType, builder: Builder,
                 id_: int, loc: SourceLocation | None):
        self.op = op
        self.operands = operands
        self.type = type_
        self.builder = builder
        self.id = id_
        self.loc = loc

    @property
    def name(self) -> str:
        return f"%{self.id}"

    def __repr__(self) -> str:
        return f"<Node {self.name} = {self.op!r}{tuple(o.name for o in self.operands)} : {self.type}>"


# The builder stack is per thread (hlodsl.context): staging in one thread never
# records another thread's op calls.


class Builder:
    """Records the nodes of one computation; used as a context manager."""

    #: Whether composite ops with a batching rule of their own are recorded whole, not
    #: expanded (``vmap``'s example program, which is interpreted, never printed).
    keeps_composites = False

    def __init__(self, name: str, capture=None):
        self.name = name
        #: ``capture(x) -> Node | None``, asked about a concrete array or a symbolic
        #: array of an enclosing computation before the default (a constant, or an
        #: error): hlodsl.transforms.control makes such arrays extra operands of its ops.
        self.capture = capture
        self.nodes: list[Node] = []
        self.params: list[Node] = []
        self.param_names: list[str] = []
        self._interned: dict[tuple, Node] = {}
        self._constants: dict[int, tuple[object, Node]] = {}
        #: The token of the last ordered side effect staged here (a host callback with
        #: ``ordered=True``): the next one takes it, so XLA runs them in program order.
        self.token: Node | None = None
        #: In a body: the input standing for the enclosing program's token, if taken
        #: (hlodsl.transforms.body.ordered_token).
        self.token_input: Node | None = None

    def __enter__(self) -> Builder:
        STATE.builders.append(self)
        return self

    def __exit__(self, *exc) -> None:
        popped = STATE.builders.pop()
        assert popped is self, "staging builders exited out of order"

    def add(self, op, operands: tuple[Node, ...], type_: AbstractType,
            loc: SourceLocation | None) -> Node:
        key = (op, operands) if op.interned else None
        if key is not None:
            node = self._interned.get(key)
            if node is not None:
                return node
        node = Node(op, operands, type_, self, len(self.nodes), loc)
        self.nodes.append(node)
        if key is not None:
            self._interned[key] = node
        return node

    def parameter(self, type_: AbstractType, name: str | None = None) -> Node:
        node = self.add(OPCODES["parameter"](len(self.params)), (), type_, None)
        self.params.append(node)
        self.param_names.append(name or f"p{len(self.params) - 1}")
        return node

    def node_of(self, x) -> Node:
        """The node for an array operand: its own node, or a constant for concrete data."""
        node = x._node
        if node is not None and node.builder is self:
            return node
        if self.capture is not None and (node is None or node.builder in STATE.builders):
            captured = self.capture(x)
            if captured is not None:
                return captured
        if node is None:
            return self._constant(x)
        raise staging_error(
            f"a symbolic array {node.type} from the staged computation "
            f"'{node.builder.name}' was used inside '{self.name}'. HLO "
            "sub-computations (of Map, Reduce, Sort, ...) cannot capture values of "
            "the enclosing program: pass the array as an operand instead"
            if node.builder in STATE.builders else
            f"a symbolic array {node.type} escaped the staging of '{node.builder.name}' "
            "(it was stored outside the staged function) and cannot be used here"
        )

    def _constant(self, x) -> Node:
        hit = self._constants.get(id(x))
        if hit is not None:
            return hit[1]
        import numpy as np

        node = self.add(OPCODES["constant"](np.asarray(x)), (), x.type, None)
        self._constants[id(x)] = (x, node)  # keep x alive so its id stays unique
        return node

    def finish(self, root: Node) -> Computation:
        nodes, effects = _reachable(self.nodes, root, self.params)
        return Computation(self.name, tuple(self.params), nodes, root,
                           tuple(self.param_names), effects)


def has_side_effect(node: Node) -> bool:
    """Whether ``node`` does something besides computing its result: a custom call with
    ``has_side_effect`` (a host callback that prints, say), or a loop, branch or call
    whose computations hold one. Such a node is kept whether or not it is used."""
    op = node.op
    if getattr(op, "has_side_effect", False):
        return True
    called = getattr(op, "called_computations", None)
    return called is not None and any(
        c.has_side_effect for c in called(tuple(o.type for o in node.operands)))


def _reachable(nodes: list[Node], root: Node, params: list[Node]) -> tuple[tuple, bool]:
    """The nodes the computation keeps, in order, and whether one has a side effect."""
    # Every parameter stays: HLO numbers parameters contiguously, used or not.
    # So does every side-effecting instruction, whether or not the result depends on it.
    effects = [id(n) for n in nodes if has_side_effect(n)]
    live = {id(root), *(id(p) for p in params), *effects}
    for node in reversed(nodes):
        if id(node) in live:
            live.update(id(o) for o in node.operands)
    return tuple(n for n in nodes if id(n) in live), bool(effects)


class Computation:
    """A finished HLO computation: parameters, live nodes in order, root."""

    __slots__ = ("name", "params", "nodes", "root", "param_names", "has_side_effect")

    def __init__(self, name: str, params: tuple[Node, ...], nodes: tuple[Node, ...],
                 root: Node, param_names: tuple[str, ...], has_side_effect: bool = False):
        self.name = name
        self.params = params
        self.nodes = nodes
        self.root = root
        self.param_names = param_names
        #: Whether running it does more than compute the root (``has_side_effect``).
        self.has_side_effect = has_side_effect

    @property
    def param_types(self) -> tuple:
        return tuple(p.type for p in self.params)

    @property
    def result_type(self):
        return self.root.type

    @property
    def __name__(self) -> str:  # computations stand where ops take Python callables
        return self.name

    def __call__(self, *args):
        """Run the computation again on ``args`` (``hlodsl.ir.interpret.replay``)."""
        return _REPLAY[0](self, args)

    def __repr__(self) -> str:
        return f"<Computation {self.name}: {len(self.nodes)} nodes -> {self.root.type}>"


def _no_replay(comp: Computation, args) -> None:
    raise RuntimeError("calling a Computation needs hlodsl.interpret (import hlodsl)")


# hlodsl.ir.interpret (above this module: it walks computations) hands its replay in.
_REPLAY = [_no_replay]


def use_replay(replay) -> None:
    """Make ``Computation.__call__`` run ``replay(computation, args)`` (hlodsl.interpret)."""
    _REPLAY[0] = replay
