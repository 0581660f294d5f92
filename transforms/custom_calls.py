"""Calls of functions with their own derivative rules, kept as one node inside bodies.

``custom_vjp``/``custom_jvp`` act when a derivative transformation watches
their arguments as they are called. A body staged first and transformed later
node by node (``vmap``'s batching, the derivative of a ``cond`` branch, of a
loop body) sees no such call: only the ops the function staged, each with its
own rule, so the given rule would be lost (``grad(vmap(nn.relu))`` at 0 would
be the per-op 0.5, not the rule's 0). Inside such a body the call therefore
stages one ``CustomRulesCall`` node: a ``Call`` of the function's staged
computation that also holds the rules. Its derivative rules are the user's,
and its batch rule gives a node of the same kind whose rules are the user's
batched (as jax batches ``custom_vjp_call``). Where nothing can transform the
program again (``hd.compile``'s own program, an eager call), the node is
never made: the call is its computation, inlined.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn, sum
>>> x = hd.array(np.float32([0, 1, -1]))
>>> hd.grad(lambda v: sum(hd.vmap(nn.relu)(v)))(x)        # relu's own rule: 0 at 0
hlodsl.Array[float32, (3,)]([0., 1., 0.])
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from hlodsl.ops import Broadcast, Call, Transpose
from hlodsl.ops._ad import inexact, jvp_through, sum_dims, vjp_through, zeros_like_array

from hlodsl.arrays.array import Array
from hlodsl.ir.rules import batch_rule, jvp_rule, transformations, vjp_rule

__all__ = ["BatchedRules", "CustomRulesCall", "Rules", "staged_call"]


class Rules:
    """What a ``CustomRulesCall`` differentiates and batches with.

    ``n`` operands are the function's arguments (flat); the call's further
    operands are the arrays its body captured, which the rules do not see.
    ``vjp(args, ct)`` gives one cotangent (or None) per argument and
    ``jvp(args, tangents)`` the results' tangents (None where a result has
    none); either may be None: that derivative is the staged body's own.
    """

    name: str = "custom"
    vjp: Callable | None = None
    jvp: Callable | None = None


@attrs.frozen(eq=False)
class BatchedRules(Rules):
    """``inner`` mapped over a batch: arguments whose ``dims`` entry is 0 carry the
    batch first, those with None are shared by every example."""

    inner: Rules
    dims: tuple

    @property
    def name(self) -> str:
        return f"vmap({self.inner.name})"

    @property
    def vjp(self):
        return None if self.inner.vjp is None else self._vjp

    @property
    def jvp(self):
        return None if self.inner.jvp is None else self._jvp

    def _vjp(self, args: list, ct: list) -> list:
        n = len(args)
        moving = [i for i, a in enumerate(args) if inexact(a)]
        if not moving:
            return [None] * n

        def one(*xs_and_cts):
            xs, cts = list(xs_and_cts[:n]), list(xs_and_cts[n:])
            got = self.inner.vjp(xs, cts)
            return tuple(got[i] if got[i] is not None else zeros_like_array(xs[i])
                         for i in moving)

        from .batching import vmap

        res = vmap(one, in_axes=(*self.dims, *(0,) * len(ct)))(*args, *ct)
        out: list = [None] * n
        for i, c in zip(moving, res):
            # A shared argument's cotangent is the sum of every example's.
            out[i] = c if self.dims[i] is not None else sum_dims(c, (0,))
        return out

    def _jvp(self, args: list, tangents: list):
        n = len(args)
        tangents = [t if t is not None or not inexact(a) else zeros_like_array(a)
                    for a, t in zip(args, tangents)]
        moving = [i for i, t in enumerate(tangents) if t is not None]
        kinds: list = []

        def one(*xs_and_ts):
            xs, ts = list(xs_and_ts[:n]), [None] * n
            for i, t in zip(moving, xs_and_ts[n:]):
                ts[i] = t
            out, t_out = self.inner.jvp(xs, ts)
            kinds[:] = [t is not None for t in t_out]
            return tuple(out), tuple(t for t in t_out if t is not None)

        from .batching import vmap

        axes = (*self.dims, *(self.dims[i] for i in moving))
        out, t_some = vmap(one, in_axes=axes)(*args, *(tangents[i] for i in moving))
        it = iter(t_some)
        return list(out), [next(it) if k else None for k in kinds]


@attrs.frozen
class CustomRulesCall(Call):
    """``computation(*operands)`` (a ``call``) whose derivatives are ``rules``'.

    The first ``n`` operands are the function's arguments, the others what its
    body captured. Staged where no transformation can replay the program, it
    is its computation inlined; in a body, one node.
    """

    rules: Rules = attrs.field(kw_only=True, eq=False)
    n: int = attrs.field(kw_only=True)
    #: Printed as its computation's instructions in its place (hlodsl.ir.printer), not
    #: as a ``call``: the node exists for the transformations only.
    inline = True

    def stage(self, builder, args):
        if getattr(builder, "replayable", False):
            return super().stage(builder, args)
        self.result_type(*(a.type for a in args))  # the operands' types are checked
        return self.computation(*args)

    def __repr__(self) -> str:
        return f"CustomRulesCall({self.rules.name})"


def _flat(x) -> list:
    return list(x) if isinstance(x, tuple) else [x]


@vjp_rule.dispatch
def custom_rules_call_vjp(op: CustomRulesCall, ct, out, *args):
    cts = _flat(ct)
    if op.rules.vjp is None:
        return tuple(vjp_through(op.computation, args, tuple(cts)))
    got = list(op.rules.vjp(list(args[:op.n]), cts))
    return (*got, *(None,) * (len(args) - op.n))


@jvp_rule.dispatch
def custom_rules_call_jvp(op: CustomRulesCall, tangents: tuple, out, *args):
    if all(t is None for t in tangents):
        return None
    if op.rules.jvp is None or any(t is not None for t in tangents[op.n:]):
        # (A tangent of a captured array reaches the result only through the body.)
        return jvp_through(op.computation, args, tangents)[1]
    _, t_out = op.rules.jvp(list(args[:op.n]), list(tangents[:op.n]))
    return tuple(t_out)


@batch_rule.dispatch
def custom_rules_call_batched(op: CustomRulesCall, args: tuple, dims: tuple):
    from .body import Body

    size = next(a.shape[0] for a, d in zip(args, dims) if d is not None)
    body = Body(f"vmap_{op.computation.name}", tuple(a.type for a in args), tupled=False)

    def batched(*xs):
        outs, out_dims = transformations.batch(op.computation, list(xs), list(dims))
        return [_front(o, d, size) for o, d in zip(_flat(outs), _flat(out_dims))]

    results = body.run(batched)
    comp = body.finish(results, force_tuple=True)
    new = CustomRulesCall(comp, rules=BatchedRules(op.rules, tuple(dims[:op.n])), n=op.n)
    out = new(*args, *body.captured)
    return out, tuple(0 for _ in out)


def _front(x: Array, d, size: int) -> Array:
    if d is None:
        return Broadcast((size, *x.shape), tuple(range(1, x.ndim + 1)))(x)
    if d == 0:
        return x
    return Transpose((d, *(i for i in range(x.ndim) if i != d)))(x)


def staged_call(name: str, fun: Callable, leaves: list, rules: Rules):
    """``fun(*leaves)`` (a tuple of arrays) as one ``CustomRulesCall`` node of the body
    being staged, or None where the function returned no arrays."""
    from .body import Body

    body = Body(name, tuple(x.type for x in leaves), tupled=False)
    outs = body.run(lambda *xs: fun(*xs))
    if not outs or not all(isinstance(o, Array) for o in outs):
        return None
    comp = body.finish(list(outs), force_tuple=True)
    return CustomRulesCall(comp, rules=rules, n=len(leaves))(*leaves, *body.captured)
