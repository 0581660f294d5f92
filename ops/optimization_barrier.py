"""OptimizationBarrier: values XLA may not move computations across.

HLO's ``opt-barrier`` takes one tuple and returns it unchanged; here the
values are the operands and come back as a tuple. Everything that computes
an operand happens before anything that uses a result (e.g. to keep a
rematerialisation from being undone). Tokens may pass through too.

>>> import numpy as np, hlodsl as hd
>>> OptimizationBarrier()(hd.array(np.int32([1, 2])), hd.array(np.float32(3)))
(hlodsl.Array[int32, (2,)]([1, 2]), hlodsl.Array[float32, ()](3.))
"""

from __future__ import annotations

from hlodsl.errors import require, user_location
from hlodsl.ir.op import HloOp, frozen, wrap_node
from hlodsl.ir.structural import Tuple
from hlodsl.arrays.types import TupleType

__all__ = ["OptimizationBarrier"]


@frozen
class OptimizationBarrier(HloOp, opcode="opt-barrier"):
    """The operands, unchanged, as a tuple: ``OptimizationBarrier()(*values)``.

    One Python tuple of values is accepted in place of several operands.
    """

    def __call__(self, *values):
        if len(values) == 1 and isinstance(values[0], (tuple, list)):
            values = tuple(values[0])
        return HloOp.__call__(self, *values)

    def result_type(self, *types):
        require(len(types) >= 1, self, types, "needs at least one operand")
        return TupleType(types)

    def stage(self, builder, args):
        # HLO's opt-barrier takes one tuple operand and returns that tuple.
        rtype = self.result_type(*(a.type for a in args))
        loc = user_location()
        values = builder.add(Tuple(), tuple(builder.node_of(a) for a in args), rtype, loc)
        return wrap_node(builder, builder.add(self, (values,), rtype, loc))

    def reference(self, *arrays):
        return tuple(arrays)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.arrays.array import Array  # noqa: E402
from hlodsl.ir.rules import jvp_rule, vjp_rule  # noqa: E402
from hlodsl.arrays.dtypes import Inexact  # noqa: E402


@vjp_rule.dispatch
def optimization_barrier_vjp(op: OptimizationBarrier, ct, out, *values):
    # The identity on each value; tokens and integer values take no cotangent.
    return tuple(c if isinstance(v, Array) and issubclass(v.dtype, Inexact) else None
                 for c, v in zip(ct, values))


@jvp_rule.dispatch
def optimization_barrier_jvp(op: OptimizationBarrier, tangents: tuple, out, *values):
    return tuple(tangents)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402


@batch_rule.dispatch
def barrier_batched(op: OptimizationBarrier, args: tuple, dims: tuple):
    # The node's one operand is the tuple of values; they pass through as they are.
    return OptimizationBarrier()(*args), dims[0]
