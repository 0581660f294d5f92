"""Reduce: fold dimensions with a staged Python computation (variadic).

The computation is any Python callable on scalar arrays; it is staged into an
HLO sub-computation. For N operands it takes 2N scalars (N accumulators, then
N elements) and returns N scalars.

>>> import numpy as np, hlodsl as hd
>>> def add(a, b): return hd.ops.Add()(a, b)
>>> Reduce(add, (1,))(hd.array(np.float32([[1, 2], [3, 4]])), hd.array(np.float32(0)))
hlodsl.Array[float32, (2,)]([3., 7.])
"""

from __future__ import annotations

from typing import Callable

import attrs

from hlodsl.errors import require
from hlodsl.op import HloOp, frozen
from hlodsl.staging import stage_computation
from hlodsl.types import ArrayType, TupleType

from ._checks import check_dims, check_one_float_precision, dims, dims_text

__all__ = ["Reduce"]


@frozen
class Reduce(HloOp, opcode="reduce"):
    """Reduce ``dimensions`` of N operands with N initial values and ``computation``.

    Called as ``Reduce(f, dims)(*operands, *inits)``; returns one array for one
    operand, a tuple for several.
    """

    computation: Callable
    dimensions: tuple[int, ...] = attrs.field(converter=dims)

    def __attrs_post_init__(self):
        check_dims(self, "dimensions", self.dimensions)

    def _split(self, types):
        n = len(types) // 2
        return types[:n], types[n:]

    def _scalars(self, inits):
        return tuple(ArrayType(t.dtype, ()) for t in inits)

    def result_type(self, *types):
        require(len(types) >= 2 and len(types) % 2 == 0, self, types,
                "takes N operands followed by N initial values")
        operands, inits = self._split(types)
        shape = operands[0].shape
        for t in operands:
            require(t.shape == shape, self, types, "all operands must have the same shape")
        for o, i in zip(operands, inits):
            require(i.shape == () and i.dtype is o.dtype, self, types,
                    "each initial value must be a scalar of its operand's element type")
        require(all(d < len(shape) for d in self.dimensions), self, types,
                f"dimensions {self.dimensions} out of range for rank {len(shape)}")
        check_one_float_precision(self, types)
        scalars = self._scalars(inits)
        comp = stage_computation(self.computation, scalars + scalars)
        expect = scalars[0] if len(scalars) == 1 else TupleType(scalars)
        require(comp.result_type == expect, self, types,
                f"the computation must return {expect}, it returns {comp.result_type}")
        kept = tuple(s for d, s in enumerate(shape) if d not in self.dimensions)
        outs = tuple(ArrayType(t.dtype, kept) for t in operands)
        return outs[0] if len(outs) == 1 else TupleType(outs)

    def attributes(self, operand_types, result_type, ctx):
        scalars = self._scalars(self._split(operand_types)[1])
        comp = stage_computation(self.computation, scalars + scalars)
        return [f"dimensions={dims_text(self.dimensions)}", f"to_apply={ctx.computation(comp)}"]


# -- derivatives (hlodsl.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.rules import vjp_rule  # noqa: E402


def reduction_kind(op: Reduce, dtype) -> str | None:
    """'add', 'max', 'min' or 'mul' when ``op.computation`` is that one binary op, else None."""
    from .binary import Add, Maximum, Minimum, Multiply

    scalar = ArrayType(dtype, ())
    comp = stage_computation(op.computation, (scalar, scalar))
    root = comp.root
    if len(comp.nodes) != 3 or set(root.operands) != set(comp.params):
        return None
    kinds = {Add: "add", Maximum: "max", Minimum: "min", Multiply: "mul"}
    return kinds.get(type(root.op))


def _is_identity(init, kind: str) -> bool:
    """Whether ``init`` is known (concrete, or a staged constant) to be max's or min's identity."""
    import numpy as np

    from hlodsl.structural import Constant

    if init._buf is not None:
        value = np.asarray(init)
    elif init._node is not None and isinstance(init._node.op, Constant):
        value = init._node.op.value
    else:
        return False
    if np.issubdtype(value.dtype, np.floating) or value.dtype.kind == "V":
        value = value.astype(np.float64)
        return bool(value == (-np.inf if kind == "max" else np.inf))
    if np.issubdtype(value.dtype, np.integer):
        info = np.iinfo(value.dtype)
        return bool(value == (info.min if kind == "max" else info.max))
    return False


@vjp_rule.dispatch
def _(op: Reduce, ct, out, *args):
    from .broadcast import Broadcast
    from .compare import Compare, Select
    from ._ad import div, full_like, mul, sum_dims

    n = len(args) // 2
    if n != 1:
        raise NotImplementedError(
            f"no derivative rule for the variadic {op!r} ({n} operands): only the "
            "value results of sum, max, min and product reductions are differentiated")
    x, init = args
    if not op.dimensions:  # NOTE: XLA returns the operand as is; init takes no part
        return ct, None
    kind = reduction_kind(op, x.dtype)
    kept = tuple(d for d in range(x.ndim) if d not in op.dimensions)
    spread = Broadcast(x.shape, kept)
    if kind == "add":
        return spread(ct), sum_dims(ct, tuple(range(ct.ndim)))
    if kind in ("max", "min"):
        # The cotangent is shared equally among the elements equal to the result,
        # the initial value included (it wins where it beats every element).
        from ._ad import add
        from .convert import Convert

        ones = Convert(x.dtype)(Compare("EQ")(x, spread(out)))
        if _is_identity(init, kind):  # -inf for max: it never beats an element
            return mul(spread(div(ct, sum_dims(ones, op.dimensions))), ones), None
        init_wins = Convert(x.dtype)(Compare("EQ")(Broadcast(out.shape)(init), out))
        share = div(ct, add(sum_dims(ones, op.dimensions), init_wins))
        return mul(spread(share), ones), sum_dims(mul(share, init_wins), tuple(range(ct.ndim)))
    if kind == "mul":
        # d out / d x_i = product of the others: out / x_i with no zero in the group;
        # with exactly one zero, the product of the non-zeros at that zero; else 0.
        zero, one = full_like(x, 0), full_like(x, 1)
        is_zero = Compare("EQ")(x, zero)
        # The initial value is one more factor: of the non-zeros' product, and of ct_init.
        nonzero_prod = Reduce(op.computation, op.dimensions)(Select()(is_zero, one, x), init)
        zeros = sum_dims(Select()(is_zero, one, zero), op.dimensions)
        p, z = spread(nonzero_prod), spread(zeros)
        none = Compare("EQ")(z, zero)
        single = Compare("EQ")(z, one)
        d = Select()(none, div(p, Select()(is_zero, one, x)),
                     Select()(single, Select()(is_zero, p, zero), zero))
        prod_x = Reduce(op.computation, op.dimensions)(x, full_like(init, 1))
        return mul(spread(ct), d), sum_dims(mul(ct, prod_x), tuple(range(ct.ndim)))
    raise NotImplementedError(
        f"no derivative rule for {op!r}: its computation is not a single add, maximum, "
        "minimum or multiply of its two parameters")
