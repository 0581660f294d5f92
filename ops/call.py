"""Call: apply a staged Python computation to operands, as one HLO ``call``.

Unlike an inlined Python call, the computation stays a separate HLO
computation (XLA may still inline it while optimising).

>>> import numpy as np, hlodsl as hd
>>> def axpy(a, x, y): return a * x + y
>>> x = hd.array(np.float32([1, 2]))
>>> Call(axpy)(hd.array(np.float32([3, 3])), x, x)
hlodsl.Array[float32, (2,)]([4., 8.])
"""

from __future__ import annotations

from typing import Callable

import attrs

from hlodsl.ir.op import HloOp, frozen
from hlodsl.ir.staging import stage_computation

from ._checks import function

__all__ = ["Call"]


@frozen
class Call(HloOp, opcode="call"):
    """``computation(*operands)``; several results come back as a tuple."""

    computation: Callable = attrs.field(converter=function)

    def result_type(self, *types):
        # The computation's own shape rules check the operands (at the user's line).
        return stage_computation(self.computation, types).result_type

    def called_computations(self, operand_types) -> tuple:
        return (stage_computation(self.computation, tuple(operand_types)),)

    def attributes(self, operand_types, result_type, ctx):
        return [f"to_apply={ctx.computation(self.called_computations(operand_types)[0])}"]


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# Differentiated through the computation: the pullback (and the tangent map) are
# themselves Calls, of hlodsl.vjp (jvp) applied to the computation.
# Integer and boolean operands are held fixed.

from hlodsl.ir.rules import jvp_rule, vjp_rule  # noqa: E402

from ._ad import inexact, jvp_through, put, vjp_through  # noqa: E402


def _leaves(out) -> list:
    return list(out) if isinstance(out, tuple) else [out]


def _as_tuple(res) -> tuple:
    return res if isinstance(res, tuple) else (res,)


@vjp_rule.dispatch
def call_vjp(op: Call, ct, out, *args):
    n, moving = len(args), [i for i, a in enumerate(args) if inexact(a)]
    if not moving:
        return (None,) * n

    def pullback(*xs_and_cts):
        cts = xs_and_cts[n:]
        cts = tuple(cts) if isinstance(out, tuple) else cts[0]
        res = vjp_through(op.computation, xs_and_cts[:n], cts)
        return tuple(res[i] for i in moving)

    res = _as_tuple(Call(pullback)(*args, *_leaves(ct)))
    return tuple(put([None] * n, moving, res))


@jvp_rule.dispatch
def call_jvp(op: Call, tangents: tuple, out, *args):
    n = len(args)
    if all(t is None for t in tangents):
        return None
    given = [i for i, t in enumerate(tangents) if t is not None]
    outs = _leaves(out)
    moving_out = [k for k, o in enumerate(outs) if inexact(o)]
    if not moving_out:
        return None

    def forward(*xs_and_ts):
        ts = [None] * n
        for i, t in zip(given, xs_and_ts[n:]):
            ts[i] = t
        _, t_out = jvp_through(op.computation, xs_and_ts[:n], ts)
        t_out = _leaves(t_out)
        return tuple(t_out[k] for k in moving_out)

    res = _as_tuple(Call(forward)(*args, *(tangents[i] for i in given)))
    t_out = put([None] * len(outs), moving_out, res)
    return tuple(t_out) if isinstance(out, tuple) else t_out[0]


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule, transformations  # noqa: E402
from hlodsl.arrays.types import ArrayType  # noqa: E402


@batch_rule.dispatch
def call_batched(op: Call, args: tuple, dims: tuple):
    # The callee, staged for one example, runs batched in place (inlined).
    types = tuple(a.type if d is None else ArrayType(a.dtype, a.shape[1:])
                  for a, d in zip(args, dims))
    comp = stage_computation(op.computation, types)
    return transformations.batch(comp, list(args), list(dims))
