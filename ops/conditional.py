"""Conditional: run one of several staged branches, chosen at run time.

Two HLO forms, one op. With ``true_computation``/``false_computation`` the
selector is a ``pred[]`` scalar; with ``branch_computations`` it is an
``s32[]`` index, and an index out of ``[0, N)`` runs the last branch (as XLA
specifies). Each branch gets its own operand: an array, or a Python tuple of
arrays that becomes one HLO tuple operand (the branch then gets a tuple).

>>> import numpy as np, hlodsl as hd
>>> def double(x): return x * 2
>>> def add(xy): return xy[0] + xy[1]
>>> x, y = hd.array(np.float32([1, 2])), hd.array(np.float32([10, 20]))
>>> Conditional(double, add)(hd.array(np.bool_(False)), x, (x, y))
hlodsl.Array[float32, (2,)]([11., 22.])
>>> Conditional(branch_computations=(double, add))(hd.array(np.int32(7)), x, (x, y))
hlodsl.Array[float32, (2,)]([11., 22.])
"""

from __future__ import annotations

from typing import Callable

import attrs

from hlodsl.arrays.dtypes import int32, pred
from hlodsl.errors import require, user_location
from hlodsl.ir.op import HloOp, frozen, wrap_node
from hlodsl.ir.staging import stage_computation
from hlodsl.ir.structural import Tuple
from hlodsl.arrays.types import ArrayType, TupleType

from ._checks import function, functions, optional

__all__ = ["Conditional"]


def _describe(x) -> str:
    if isinstance(x, (tuple, list)):
        return "(" + ", ".join(_describe(y) for y in x) + ")"
    return str(getattr(x, "type", type(x).__name__))


def _sizes(value):
    return None if value is None else tuple(None if s is None else int(s) for s in value)


@frozen
class Conditional(HloOp, opcode="conditional"):
    """``branches[selector](operands[selector])``; every branch returns the same type.

    Called as ``Conditional(t, f)(pred, true_operand, false_operand)`` or
    ``Conditional(branch_computations=(b0, ..., bN))(index, operand0, ..., operandN)``.
    ``operand_sizes`` records, per branch operand, ``None`` for an array or
    the length of a tuple of arrays; passing tuples at the call sets it.
    """

    true_computation: Callable | None = attrs.field(converter=optional(function), default=None)
    false_computation: Callable | None = attrs.field(converter=optional(function), default=None)
    branch_computations: tuple[Callable, ...] = attrs.field(converter=functions, default=())
    operand_sizes: tuple[int | None, ...] | None = attrs.field(converter=_sizes, default=None)

    def __attrs_post_init__(self):
        pair = (self.true_computation, self.false_computation)
        if self.branch_computations and any(f is not None for f in pair):
            raise ValueError(f"{self!r}: give true/false computations or "
                             "branch_computations, not both")
        if not self.branch_computations and any(f is None for f in pair):
            raise ValueError(f"{self!r}: needs both true_computation and false_computation, "
                             "or a non-empty branch_computations")
        sizes = self.operand_sizes
        if sizes is not None and (len(sizes) != len(self.branches)
                                  or any(s is not None and s < 0 for s in sizes)):
            raise ValueError(f"{self!r}: operand_sizes needs one entry (None or a tuple "
                             f"length >= 0) per branch, {len(self.branches)} in all")

    @property
    def branches(self) -> tuple[Callable, ...]:
        if self.branch_computations:
            return self.branch_computations
        return (self.true_computation, self.false_computation)

    def __call__(self, selector, *operands):
        if not any(isinstance(x, (tuple, list)) for x in operands):
            return HloOp.__call__(self, selector, *operands)
        require(len(operands) == len(self.branches), self,
                [_describe(x) for x in (selector, *operands)],
                f"{len(self.branches)} branches need one operand each")
        sizes = tuple(len(x) if isinstance(x, (tuple, list)) else None for x in operands)
        flat = [y for x in operands for y in (x if isinstance(x, (tuple, list)) else (x,))]
        return HloOp.__call__(attrs.evolve(self, operand_sizes=sizes), selector, *flat)

    def _group(self, flat: tuple) -> list:
        """Flat operands (types or nodes) grouped per branch: one, or a list for a tuple."""
        sizes = self.operand_sizes or (None,) * len(flat)
        groups, k = [], 0
        for s in sizes:
            groups.append(flat[k] if s is None else list(flat[k:k + s]))
            k += 1 if s is None else s
        return groups

    def _expected_flat(self) -> int:
        sizes = self.operand_sizes or (None,) * len(self.branches)
        return sum(1 if s is None else s for s in sizes)

    def result_type(self, *types):
        require(len(types) >= 1, self, types, "needs a selector operand")
        indexed = bool(self.branch_computations)
        selector = ArrayType(int32 if indexed else pred, ())
        require(types[0] == selector, self, types,
                f"the {'branch index' if indexed else 'predicate'} must be a {selector} "
                f"scalar, got {types[0]}")
        require(len(types) - 1 == self._expected_flat(), self, types,
                f"{len(self.branches)} branches need one operand each"
                + (f" (operand_sizes={self.operand_sizes})" if self.operand_sizes else ""))
        operand_types = [TupleType(g) if isinstance(g, list) else g
                         for g in self._group(types[1:])]
        types = (types[0], *operand_types)  # errors show tuple operands as tuples
        names = ([f"branch {i}" for i in range(len(self.branches))]
                 if self.branch_computations else ["true_computation", "false_computation"])
        outs = [stage_computation(fn, (t,)).result_type
                for fn, t in zip(self.branches, operand_types)]
        for name, out in zip(names[1:], outs[1:]):
            require(out == outs[0], self, types,
                    f"all branches must return the same type: {names[0]} returns "
                    f"{outs[0]}, {name} returns {out}")
        return outs[0]

    def stage(self, builder, args):
        types = tuple(a.type for a in args)
        rtype = self.result_type(*types)
        loc = user_location()
        nodes = tuple(builder.node_of(a) for a in args)
        operands = [nodes[0]]
        for group in self._group(nodes[1:]):
            if isinstance(group, list):  # a tuple operand: one HLO tuple
                group = builder.add(Tuple(), tuple(group),
                                    TupleType(tuple(n.type for n in group)), loc)
            operands.append(group)
        return wrap_node(builder, builder.add(self, tuple(operands), rtype, loc))

    def called_computations(self, operand_types) -> list:
        """The branches' computations, for the (grouped) operand types."""
        return [stage_computation(fn, (t,)) for fn, t in zip(self.branches, operand_types[1:])]

    def attributes(self, operand_types, result_type, ctx):
        names = [ctx.computation(c) for c in self.called_computations(operand_types)]
        if self.branch_computations:
            return ["branch_computations={" + ", ".join(names) + "}"]
        return [f"true_computation={names[0]}", f"false_computation={names[1]}"]


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# The derivative of a conditional is a conditional of derivatives: branch i of
# the pullback takes (branch i's operands, ct) and returns the cotangents of
# every branch's floating-point operands, zeros for the other branches', so all
# branches return the same types; branch i of the tangent map returns the
# tangent of branch i's result. The selector has no derivative.

from hlodsl.ir.rules import jvp_rule, vjp_rule  # noqa: E402

from ._ad import inexact  # noqa: E402


def _leaves(x) -> list:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _zeros(t: ArrayType):
    import numpy as np

    from hlodsl.arrays.array import array

    from .broadcast import Broadcast

    zero = array(np.zeros((), t.dtype.np_dtype))
    return Broadcast(t.shape)(zero) if t.shape else zero


def _regroup(op: Conditional, new_branches, selector, operands):
    """``Conditional`` of the same form over ``new_branches``, each operand a tuple."""
    if op.branch_computations:
        new = Conditional(branch_computations=tuple(new_branches))
    else:
        new = Conditional(*new_branches)
    return new(selector, *(tuple(o) for o in operands))


@vjp_rule.dispatch
def conditional_vjp(op: Conditional, ct, out, selector, *flat):
    from ._ad import vjp_through

    groups = [_leaves(g) for g in op._group(flat)]
    starts = [sum(len(g) for g in groups[:i]) for i in range(len(groups))]
    moving = [k for k, x in enumerate(flat) if inexact(x)]
    if not moving:
        return (None,) * (1 + len(flat))
    ct_leaves = _leaves(ct)

    def pullback(i: int):
        fn, size = op.branches[i], len(groups[i])
        tupled = (op.operand_sizes or (None,) * len(groups))[i] is not None

        def branch(xs_and_cts):
            xs, cts = tuple(xs_and_cts[:size]), tuple(xs_and_cts[size:])
            ct_i = cts if isinstance(out, tuple) else cts[0]
            mine = vjp_through(lambda *a: fn(a if tupled else a[0]), xs, ct_i)
            res = []
            for k in moving:
                j = k - starts[i]
                own = 0 <= j < size and mine[j] is not None
                res.append(mine[j] if own else _zeros(flat[k].type))
            return tuple(res)
        return branch

    res = _regroup(op, [pullback(i) for i in range(len(groups))], selector,
                   [list(g) + ct_leaves for g in groups])
    cts = [None] * len(flat)
    for k, c in zip(moving, _leaves(res)):
        cts[k] = c
    return (None, *cts)


@jvp_rule.dispatch
def conditional_jvp(op: Conditional, tangents: tuple, out, selector, *flat):
    from ._ad import jvp_through

    if all(t is None for t in tangents[1:]):
        return None
    outs = _leaves(out)
    moving_out = [k for k, o in enumerate(outs) if inexact(o)]
    if not moving_out:
        return None
    groups = [_leaves(g) for g in op._group(flat)]
    t_groups = [_leaves(g) for g in op._group(tangents[1:])]
    given = [[j for j, t in enumerate(tg) if t is not None] for tg in t_groups]

    def forward(i: int):
        fn, size = op.branches[i], len(groups[i])
        tupled = (op.operand_sizes or (None,) * len(groups))[i] is not None

        def branch(xs_and_ts):
            ts = [None] * size
            for j, t in zip(given[i], xs_and_ts[size:]):
                ts[j] = t
            _, t_out = jvp_through(lambda *a: fn(a if tupled else a[0]),
                                   tuple(xs_and_ts[:size]), ts)
            t_out = _leaves(t_out)
            return tuple(t_out[k] for k in moving_out)
        return branch

    res = _regroup(op, [forward(i) for i in range(len(groups))], selector,
                   [list(g) + [tg[j] for j in given[i]]
                    for i, (g, tg) in enumerate(zip(groups, t_groups))])
    t_out = [None] * len(outs)
    for k, t in zip(moving_out, _leaves(res)):
        t_out[k] = t
    return tuple(t_out) if isinstance(out, tuple) else t_out[0]


# -- batching (vmap): the op on operands whose batch dimension is first ----------------
# With one selector for every example, each branch becomes its batched self; a
# result is batched if any branch's can be. With a selector per example, every
# branch runs on every example and each example's result is selected.

from hlodsl.ir.interpret import depends  # noqa: E402
from hlodsl.ir.rules import NotBatchableError, batch_rule, transformations  # noqa: E402

from ._batch import batch_size, dims_for, example_type, settle  # noqa: E402


def _either(a, b):
    if isinstance(a, tuple):
        return tuple(_either(x, y) for x, y in zip(a, b))
    return a or b


def _example(operand, dims):
    if isinstance(operand, tuple):
        return TupleType(tuple(example_type(a, d) for a, d in zip(operand, dims)))
    return example_type(operand, dims)


def _flags(dims):
    return tuple(_flags(d) for d in dims) if isinstance(dims, tuple) else dims is not None


@batch_rule.dispatch
def conditional_batched(op: Conditional, args: tuple, dims: tuple):
    from .compare import Compare
    from .broadcast import Broadcast
    from ._batch import scalar

    selector, operands = args[0], args[1:]
    size = batch_size(args, dims)
    comps = [stage_computation(fn, (_example(o, d),))
             for fn, o, d in zip(op.branches, operands, dims[1:])]
    if dims[0] is None:
        wanted = None
        for comp, d in zip(comps, dims[1:]):
            flags = depends(comp, [_flags(d)])
            wanted = flags if wanted is None else _either(wanted, flags)

        def batched_branch(comp, d):
            def branch(operand):
                out, out_dims = transformations.batch(comp, [operand], [d])
                return settle(out, out_dims, wanted, size)
            branch.__name__ = branch.__qualname__ = f"{comp.name}_batched"
            return branch

        new = [batched_branch(c, d) for c, d in zip(comps, dims[1:])]
        form = Conditional(branch_computations=tuple(new)) if op.branch_computations else \
            Conditional(*new)
        return form(selector, *operands), dims_for(wanted)
    # A selector per example: every branch on every example, then a select per example.
    if any(c.has_side_effect for c in comps):
        raise NotBatchableError(
            f"vmap: {op!r} has a selector that differs between examples and a side "
            "effect (a Python callback) in a branch: the batched form runs every branch "
            "on every example, so the callback would run for examples that did not take "
            "its branch")
    results = []
    for comp, o, d in zip(comps, operands, dims[1:]):
        out, out_dims = transformations.batch(comp, [o], [d])
        results.append(settle(out, out_dims, _all_true(out), size))
    if op.branch_computations:  # an index out of [0, N) runs the last branch
        last = len(results) - 1
        chosen, rest = results[last], list(enumerate(results[:last]))
    else:
        chosen, rest = results[1], [(True, results[0])]
    for key, result in reversed(rest):
        hit = Compare("EQ")(selector, Broadcast(selector.shape)(scalar(key, selector.dtype)))
        chosen = _select(hit, result, chosen)
    return chosen, dims_for(_all_true(chosen))


def _all_true(value):
    return tuple(_all_true(v) for v in value) if isinstance(value, tuple) else True


def _select(hit, a, b):
    from .broadcast import Broadcast
    from .compare import Select

    if isinstance(a, tuple):
        return tuple(_select(hit, x, y) for x, y in zip(a, b))
    return Select()(Broadcast(a.shape, (0,))(hit), a, b)
