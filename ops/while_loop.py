"""While: repeat a staged body on a loop state while a staged condition holds.

The state is a tuple of arrays, packed into the one HLO tuple
operand that ``while`` takes. ``condition(state)`` returns a ``pred[]``
scalar; ``body(state)`` returns the next state, of the same types. Both get
the state as one Python tuple, as ``jax.lax.while_loop`` passes its carry.
The loop is one instruction whatever its trip count.

>>> import numpy as np, hlodsl as hd
>>> def cond(s): return s[0] < 5
>>> def body(s): return s[0] + 1, s[1] * 2
>>> While(cond, body)(hd.array(np.int32(0)), hd.array(np.float32([1, 3])))
(hlodsl.Array[int32, ()](5), hlodsl.Array[float32, (2,)]([32., 96.]))
"""

from __future__ import annotations

from typing import Callable

import attrs

from hlodsl.arrays.dtypes import pred
from hlodsl.errors import require, user_location
from hlodsl.ir.op import HloOp, frozen, wrap_node
from hlodsl.ir.staging import stage_computation
from hlodsl.ir.structural import Tuple
from hlodsl.arrays.types import ArrayType, TupleType

from ._checks import function

__all__ = ["While"]


@frozen
class While(HloOp, opcode="while"):
    """``while condition(state): state = body(state)``; returns the final state.

    Called as ``While(condition, body)(*state)`` (or with one tuple of
    arrays); returns the final state as a tuple of arrays.
    """

    condition: Callable = attrs.field(converter=function)
    body: Callable = attrs.field(converter=function)

    def __call__(self, *state):
        if len(state) == 1 and isinstance(state[0], (tuple, list)):
            state = tuple(state[0])
        return HloOp.__call__(self, *state)

    def _computations(self, state: TupleType):
        return (stage_computation(self.condition, (state,)),
                stage_computation(self.body, (state,), tuple_result=True))

    def called_computations(self, operand_types) -> tuple:
        """The condition and the body (a loop whose body has a side effect has one)."""
        return self._computations(operand_types[0])

    def result_type(self, *types):
        require(len(types) >= 1, self, types, "the loop state needs at least one element")
        state = TupleType(types)
        cond, body = self._computations(state)
        scalar_pred = ArrayType(pred, ())
        require(cond.result_type == scalar_pred, self, types,
                f"the condition must return {scalar_pred}, it returns {cond.result_type}")
        out = body.result_type.elements
        require(len(out) == len(types), self, types,
                f"the body must return the {len(types)} elements of the state, "
                f"it returns {len(out)}: {body.result_type}")
        for i, (old, new) in enumerate(zip(types, out)):
            require(old == new, self, types,
                    f"the body must keep the state's types: element {i} is {old} in the "
                    f"state but {new} in the body's result")
        return state

    def stage(self, builder, args):
        # HLO's while takes the whole state as one tuple operand.
        types = tuple(a.type for a in args)
        rtype = self.result_type(*types)
        loc = user_location()
        state = builder.add(Tuple(), tuple(builder.node_of(a) for a in args), rtype, loc)
        return wrap_node(builder, builder.add(self, (state,), rtype, loc))

    def attributes(self, operand_types, result_type, ctx):
        cond, body = self._computations(operand_types[0])
        return [f"condition={ctx.computation(cond)}", f"body={ctx.computation(body)}"]


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# Forward mode carries the tangents of the floating-point state elements as
# extra state: the new body is hlodsl.jvp of the body. Reverse mode
# would need the trip count (or a stack of states) to run the body backwards.

from hlodsl.ir.rules import jvp_rule, vjp_rule  # noqa: E402


@vjp_rule.dispatch
def while_vjp(op: While, ct, out, *state):
    raise NotImplementedError(
        f"{op!r}: reverse-mode through a While with a data-dependent trip count is not "
        "supported; use hd.fori_loop/hd.scan with static bounds")


@jvp_rule.dispatch
def while_jvp(op: While, tangents: tuple, out, *state):
    from ._ad import jvp_through

    from ._ad import zeros_like_array
    from ._ad import inexact

    moving = [i for i, x in enumerate(state) if inexact(x)]
    if all(tangents[i] is None for i in moving):
        return None
    n = len(state)

    def condition(s):
        return op.condition(tuple(s[:n]))

    def body(s):
        ts = [None] * n
        for i, t in zip(moving, s[n:]):
            ts[i] = t
        new, t_new = jvp_through(lambda *xs: tuple(op.body(tuple(xs))), tuple(s[:n]), ts)
        return tuple(new) + tuple(t_new[i] for i in moving)

    init = [tangents[i] if tangents[i] is not None else zeros_like_array(state[i])
            for i in moving]
    res = While(condition, body)(*state, *init)
    t_out = [None] * n
    for i, t in zip(moving, res[n:]):
        t_out[i] = t
    return tuple(t_out)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------
# A loop over a batch of states is one loop over the batched state. The carried
# values that can come to differ between examples (the body mixes batched values
# into them) are batched from the start; if the condition itself differs between
# examples, the loop runs while any example's does, and an example whose own
# condition is false keeps its state (a select), so every carry is batched.

from hlodsl.ir.interpret import depends  # noqa: E402
from hlodsl.ir.rules import NotBatchableError, batch_rule, transformations  # noqa: E402

from ._batch import batch_size, dims_for, example_type, settle  # noqa: E402


def _or(a, b):
    from .binary import Or

    return Or()(a, b)


@batch_rule.dispatch
def while_batched(op: While, args: tuple, dims: tuple):
    from .broadcast import Broadcast
    from .compare import Select
    from .reduce import Reduce
    from ._batch import scalar

    state, sdims = args[0], dims[0]  # the node's one operand: the state tuple
    size = batch_size(state, sdims)
    cond, body = op._computations(TupleType(tuple(example_type(a, d)
                                                  for a, d in zip(state, sdims))))
    batched = tuple(d is not None for d in sdims)
    while True:  # which carries can become batched: a fixed point over the body
        out = depends(body, [batched])
        grown = tuple(a or b for a, b in zip(batched, out))
        if grown == batched:
            break
        batched = grown
    if depends(cond, [batched]):
        if cond.has_side_effect or body.has_side_effect:
            raise NotBatchableError(
                f"vmap: {op!r} has a condition that differs between examples and a "
                "side effect (a Python callback) in its body or condition: the batched "
                "loop runs the body for every example until all are done, so the "
                "callback would run for examples whose loop had ended")
        batched = tuple(True for _ in batched)
    in_dims = dims_for(batched)
    init = settle(tuple(state), sdims, batched, size)

    def run(comp, values):
        return transformations.batch(comp, [tuple(values)], [in_dims])

    def step(values):
        new, new_dims = run(body, values)
        return settle(tuple(new), new_dims, batched, size)

    if not depends(cond, [batched]) or not any(batched):
        def condition(values):
            return run(cond, values)[0]

        return While(condition, step)(*init), in_dims

    def going(values):  # each example's own condition, batched
        p, pd = run(cond, values)
        return settle(p, pd, True, size)

    def condition(values):
        return Reduce(_or, (0,))(going(values), scalar(False))

    def masked_step(values):
        keep_going = going(values)
        new = step(values)
        return tuple(Select()(Broadcast(v.shape, (0,))(keep_going), n, v)
                     for n, v in zip(new, values))

    return While(condition, masked_step)(*init), in_dims
