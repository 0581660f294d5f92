"""TopK: the k largest (or smallest) elements along the last dimension, with their indices.

>>> import numpy as np, hlodsl as hd
>>> TopK(2)(hd.array(np.float32([1, 4, 2, 3])))
(hlodsl.Array[float32, (2,)]([4., 3.]), hlodsl.Array[int32, (2,)]([1, 3]))
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import Bool, ComplexFloating, Floating, Integer, element_type, int32
from hlodsl.errors import require, user_location
from hlodsl.ir.op import HloOp, frozen, wrap_node
from hlodsl.ir.structural import Constant, GetTupleElement
from hlodsl.arrays.types import ArrayType, TupleType

from ._checks import flag, integer
from .binary import Xor
from .bitcast_convert import BitcastConvert
from .broadcast import Broadcast
from .unary import Not

__all__ = ["TopK"]


def _not(builder, node, loc):
    return builder.add(Not(), (node,), node.type, loc)


def _sign_flip(builder, node, loc):
    """``node`` with its sign bits flipped (xor), recorded as nodes of ``builder``."""
    t = node.type
    unsigned = element_type(np.dtype(f"u{t.dtype.np_dtype.itemsize}"))
    bits_type = ArrayType(unsigned, t.shape)
    bits = builder.add(BitcastConvert(unsigned), (node,), bits_type, loc)
    sign = np.asarray(1 << (8 * t.dtype.np_dtype.itemsize - 1), unsigned.np_dtype)
    mask = builder.add(Constant(sign), (), ArrayType(unsigned, ()), loc)
    if t.shape:
        mask = builder.add(Broadcast(t.shape), (mask,), bits_type, loc)
    flipped = builder.add(Xor(), (bits, mask), bits_type, loc)
    return builder.add(BitcastConvert(t.dtype), (flipped,), t, loc)


@frozen
class TopK(HloOp, opcode="topk"):
    """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) elements.

    For an operand of shape ``(..., n)`` both results have shape ``(..., k)``;
    values are ordered best first, indices are int32, and of equal elements
    the one with the lower index comes first. The operand is pred (True is
    larger), integer or floating-point: XLA:CPU cannot compile a complex topk.
    """

    k: int = attrs.field(converter=integer)
    largest: bool = attrs.field(default=True, converter=flag)

    def __attrs_post_init__(self):
        if self.k < 0:
            raise ValueError(f"{self!r}: k must be non-negative, got {self.k}")

    def result_type(self, x):
        require(x.rank >= 1, self, (x,), "the operand must have rank at least 1")
        # NOTE: XLA:CPU (jaxlib 0.10.2) fails to compile a complex topk
        # ("UNIMPLEMENTED: complex comparison 'GT'"); jax's top_k refuses it too.
        require(not issubclass(x.dtype, ComplexFloating), self, (x,),
                "XLA cannot compile a topk of complex numbers (they have no order it "
                "implements); take the top k of a real key such as abs(x)")
        require(issubclass(x.dtype, (Bool, Integer, Floating)), self, (x,),
                "the operand must have a pred, integer or floating-point element type")
        require(self.k <= x.shape[-1], self, (x,),
                f"k={self.k} exceeds the last dimension's size {x.shape[-1]}")
        shape = x.shape[:-1] + (self.k,)
        return TupleType((ArrayType(x.dtype, shape), ArrayType(int32, shape)))

    def stage(self, builder, args):
        if self.largest:
            return HloOp.stage(self, builder, args)
        # NOTE: XLA:CPU runs only largest-first topk on its fast kernel; smallest-first
        # becomes a full stable sort of (values, iota) per row (40x slower, out of
        # memory at n = 2M). Order-reversing the operand (its sign bit flipped for floats,
        # bitwise not for integers and pred) and back gives the same values and indices
        # bit for bit: both reverse the total order XLA sorts by (NaN signs and zeros
        # included) and keep ties. Not HLO negate: the sign of a negated NaN is the
        # platform's (XLA:GPU kept it, and put the NaNs first). Recorded as nodes, so
        # transformations see one TopK.
        (x,) = args
        rtype = self.result_type(x.type)
        loc = user_location()
        flip = _sign_flip if issubclass(x.dtype, Floating) else _not
        flipped = flip(builder, builder.node_of(x), loc)
        top = builder.add(TopK(self.k, True), (flipped,), rtype, loc)
        values, indices = (builder.add(GetTupleElement(i), (top,), t, loc)
                           for i, t in enumerate(rtype.elements))
        return (wrap_node(builder, flip(builder, values, loc)), wrap_node(builder, indices))

    def attributes(self, operand_types, result_type, ctx):
        return [f"k={self.k}", f"largest={'true' if self.largest else 'false'}"]

    def reference(self, x):
        """Stable order: numpy's sort order (NaN last) for smallest, reversed for largest."""
        x = np.asarray(x)
        n = x.shape[-1]
        if self.largest:  # descending, ties by ascending index: sort the reversed row
            idx = n - 1 - np.flip(np.argsort(np.flip(x, -1), -1, kind="stable"), -1)
        else:
            idx = np.argsort(x, -1, kind="stable")
        idx = idx[..., : self.k].astype(np.int32)
        return np.take_along_axis(x, idx, -1), idx


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import jvp_rule, vjp_rule  # noqa: E402


@vjp_rule.dispatch
def top_k_vjp(op: TopK, ct, out, x):
    # The values' cotangent goes back to the positions they were taken from.
    from .sort import scatter_along

    return (scatter_along(x, x.ndim - 1, out[1], ct[0]),)


@jvp_rule.dispatch
def top_k_jvp(op: TopK, tangents: tuple, out, x):
    # The tangent at the chosen positions (the int indices take none).
    from .sort import take_along

    if tangents[0] is None:
        return None
    return take_along(tangents[0], x.ndim - 1, out[1]), None


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402


@batch_rule.dispatch
def topk_batched(op: TopK, args: tuple, dims: tuple):
    out = op(*args)  # along the last dimension: a leading batch dimension is one more
    return out, tuple(0 for _ in out)
