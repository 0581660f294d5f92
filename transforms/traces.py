"""The transformations' view of a running function: tapes and tangents that follow arrays.

A derivative transformation is an object on the thread's ``STATE.traces``
(``hlodsl.context``); ``hlodsl.ir.op.observed_call`` shows it every op call it
``sees`` (one that involves an array it follows), in its own staging context.

- ``Tape`` (reverse mode) records each such call with its rule; ``backward``
  walks the records in reverse, asking ``vjp_rule`` for operand cotangents.
- ``JvpTrace`` (forward mode) computes each result's tangent as the call
  happens, with ``jvp_rule``.

Traces follow Array *objects* (by id), so code that stands one object for
another (a fresh input, a captured value bound to an operand) says so with
``link``.
"""

from __future__ import annotations

import functools
from typing import Callable

from hlodsl.arrays.array import Array
from hlodsl.context import STATE
from hlodsl.arrays.dtypes import Inexact
from hlodsl.ir.graph import current_builder
from hlodsl.ops._ad import zeros_like_array
from hlodsl.ir.rules import jvp_rule, vjp_rule

__all__ = ["Tape", "JvpTrace", "Paused", "link", "fresh", "alias", "differentiable",
           "leaves_of", "rebuild"]


def differentiable(x) -> bool:
    return isinstance(x, Array) and issubclass(x.dtype, Inexact)


def leaves_of(out) -> list:
    if isinstance(out, tuple):
        return [y for x in out for y in leaves_of(x)]
    return [out]


def rebuild(out, it):
    if isinstance(out, tuple):
        return tuple(rebuild(x, it) for x in out)
    return next(it)


class _Trace:
    """An active transformation: observes op calls made in its own staging context."""

    def __init__(self):
        self.builder = current_builder()
        self.active = True

    def __enter__(self):
        STATE.traces.append(self)
        return self

    def __exit__(self, *exc):
        STATE.traces.remove(self)

    def paused(self):
        return Paused(self)


class Paused:
    def __init__(self, traces):
        self.traces = traces if isinstance(traces, list) else [traces]

    def __enter__(self):
        self.was = [t.active for t in self.traces]
        for t in self.traces:
            t.active = False

    def __exit__(self, *exc):
        for t, a in zip(self.traces, self.was):
            t.active = a


class Tape(_Trace):
    """Reverse mode: records the op calls that depend on watched arrays."""

    def __init__(self):
        super().__init__()
        self.tracked: dict[int, Array] = {}  # keeps the arrays alive, so ids stay unique
        self.entries: list[tuple[Callable, tuple, object]] = []

    def sees(self, args) -> bool:
        tracked = self.tracked
        return any(id(a) in tracked for a in args)

    def watch(self, x: Array) -> None:
        self.tracked[id(x)] = x

    def record(self, rule: Callable, args: tuple, out) -> None:
        """``rule(ct, out) -> cotangents of args`` is called by the backward pass."""
        for leaf in leaves_of(out):
            if differentiable(leaf):
                self.tracked[id(leaf)] = leaf
        self.entries.append((rule, args, out))

    def record_op(self, op, args, out) -> None:
        self.record(functools.partial(_op_vjp, op, args), args, out)

    def backward(self, outs: list, cts: list) -> dict[int, Array]:
        """Cotangents of everything reached from ``outs`` given ``cts`` (None = zero)."""
        acc: dict[int, Array] = {}
        for o, c in zip(outs, cts):
            if c is not None and id(o) in self.tracked:
                _accumulate(acc, o, c)
        with self.paused():
            for rule, args, out in reversed(self.entries):
                leaves = leaves_of(out)
                cts_out = [acc.pop(id(leaf), None) for leaf in leaves]
                if all(c is None for c in cts_out):
                    continue
                filled = iter(c if c is not None else
                              (zeros_like_array(leaf) if isinstance(leaf, Array) else None)
                              for c, leaf in zip(cts_out, leaves))
                saved = STATE.location
                STATE.location = _derivative_location(leaves, saved)
                try:
                    in_cts = rule(rebuild(out, filled), out)
                    for a, c in zip(args, in_cts):
                        if c is not None and id(a) in self.tracked:
                            _accumulate(acc, a, c)
                finally:
                    STATE.location = saved
        return acc


def _derivative_location(leaves: list, default):
    """Where the backward instructions of a staged op call come from: the forward
    call's line, its function wrapped in the name stack ``transpose(jvp(f))``
    (as JAX names them), so introspection shows them as "grad of file:line"
    rather than all at the line that asked for the gradient."""
    for leaf in leaves:
        node = getattr(leaf, "_node", None)
        if node is not None and node.loc is not None:
            loc = node.loc
            return loc._replace(function=f"transpose(jvp({loc.function}))")
    return default


def _op_vjp(op, args, ct, out):
    cts = tuple(vjp_rule(op, ct, out, *args))
    if len(cts) != len(args):
        raise TypeError(f"vjp_rule for {op!r} returned {len(cts)} cotangents for "
                        f"{len(args)} operands")
    return cts


def _accumulate(acc: dict, x: Array, c) -> None:
    if not isinstance(c, Array) or c.type != x.type:
        raise TypeError(f"a derivative rule produced a cotangent of type "
                        f"{getattr(c, 'type', type(c).__name__)} for a value of type {x.type}")
    prev = acc.get(id(x))
    if prev is None:
        acc[id(x)] = c
    else:
        from hlodsl.ops import Add
        acc[id(x)] = Add()(prev, c)


class JvpTrace(_Trace):
    """Forward mode: carries a tangent alongside every value that depends on the inputs."""

    def __init__(self):
        super().__init__()
        self.tangents: dict[int, tuple[Array, Array]] = {}  # id -> (primal, tangent)

    def sees(self, args) -> bool:
        tangents = self.tangents
        return any(id(a) in tangents for a in args)

    def tangent(self, x):
        hit = self.tangents.get(id(x))
        return None if hit is None else hit[1]

    def set(self, x, t) -> None:
        if t is None or not differentiable(x):
            return
        if not isinstance(t, Array) or t.type != x.type:
            raise TypeError(f"a derivative rule produced a tangent of type "
                            f"{getattr(t, 'type', type(t).__name__)} for a value of type "
                            f"{x.type}")
        self.tangents[id(x)] = (x, t)

    def record_op(self, op, args, out) -> None:
        tangents = tuple(self.tangent(a) for a in args)
        with self.paused():
            t_out = jvp_rule(op, tangents, out, *args)
        self.set_structure(out, t_out)

    def set_structure(self, out, t_out) -> None:
        if t_out is None:
            return
        if isinstance(out, tuple):
            for o, t in zip(out, t_out):
                self.set_structure(o, t)
        else:
            self.set(out, t_out)



def alias(x: Array) -> Array:
    """A new Array object for ``x``'s value, linked to x for the traces that see x.

    Each transformation watches its own input objects, so a function that also
    closes over the very array it is differentiated at treats the closure as a
    constant (and nested transformations never confuse their inputs).
    """
    builder = current_builder()
    if (builder is not None and builder.capture is not None
            and (x._buf is not None or x._node.builder is not builder)
            and any(t.sees((x,)) for t in STATE.traces)):
        # An outside array that an outer derivative follows, taken by a transformation
        # staged inside a body (jvp inside vmap, under grad: jacfwd): the body captures
        # x itself as an input, so the outer derivative reaches it (a fresh object would
        # be a constant there, or a capture no outer trace knows).
        y = Array._from_node(builder.node_of(x))
    else:
        y = fresh(x)
    link(y, x)
    return y


def fresh(x: Array) -> Array:
    """A new Array object for ``x``'s buffer or node, which no trace knows yet."""
    return Array._from_buffer(x._buf, x.type) if x._buf is not None else Array._from_node(x._node)


def link(alias: Array, source: Array) -> None:
    """Make ``alias`` carry ``source``'s derivatives in the active transformations.

    Traces follow Array objects; code that stands one array object for
    another (a fresh input, a captured closure value bound to an operand)
    links them so reverse and forward mode see through the substitution.
    """
    if not STATE.traces:
        return
    builder = current_builder()
    for t in STATE.traces:
        if t.active and t.builder is builder and t.sees((source,)):
            if isinstance(t, Tape):
                t.record(lambda ct, out: (ct,), (source,), alias)
            else:
                t.set(alias, t.tangent(source))
