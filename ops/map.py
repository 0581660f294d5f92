"""Map: apply a staged Python scalar computation elementwise over N arrays.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.float32([1, 2]))
>>> Map(lambda a, b: hd.ops.Multiply()(a, b))(x, x)
hlodsl.Array[float32, (2,)]([1., 4.])
"""

from __future__ import annotations

from typing import Callable

import attrs

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.ir.staging import stage_computation
from hlodsl.arrays.types import ArrayType

from ._checks import check_one_float_precision, dims_text, function

__all__ = ["Map"]


@frozen
class Map(HloOp, opcode="map"):
    """``computation`` applied to corresponding elements of same-shape operands."""

    computation: Callable = attrs.field(converter=function)

    def _comp(self, types):
        return stage_computation(self.computation, tuple(ArrayType(t.dtype, ()) for t in types))

    def result_type(self, *types):
        require(len(types) >= 1, self, types, "needs at least one operand")
        require(all(t.shape == types[0].shape for t in types), self, types,
                "all operands must have the same shape")
        check_one_float_precision(self, types)
        out = self._comp(types).result_type
        require(isinstance(out, ArrayType) and out.shape == (), self, types,
                f"the computation must return one scalar, it returns {out}")
        return ArrayType(out.dtype, types[0].shape)

    def attributes(self, operand_types, result_type, ctx):
        rank = len(operand_types[0].shape)
        return [f"dimensions={dims_text(range(rank))}",
                f"to_apply={ctx.computation(self._comp(operand_types))}"]


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

import attrs  # noqa: E402

from hlodsl.ir.rules import vjp_rule  # noqa: E402

from hlodsl.ir.rules import transformations  # noqa: E402
from hlodsl.arrays.dtypes import Inexact  # noqa: E402


@attrs.frozen
class MapPullback:
    """On scalars ``(*xs, ct)``: the cotangent of ``xs[index]`` for ``computation(*xs)``.

    ``Map(MapPullback(f, i))(*xs, ct)`` is the cotangent of ``Map(f)``'s operand
    i: the scalar derivative, taken by ``hlodsl.vjp`` while the computation is
    staged, mapped over the elements. Equal for equal fields, so it is staged
    and compiled once.

    >>> import numpy as np, hlodsl as hd
    >>> cube = lambda a: hd.ops.Multiply()(a, hd.ops.Multiply()(a, a))
    >>> x, ct = hd.array(np.float32([1, 2])), hd.array(np.float32([1, 1]))
    >>> Map(MapPullback(cube, 0))(x, ct)           # 3 x^2
    hlodsl.Array[float32, (2,)]([ 3., 12.])
    """

    computation: Callable
    index: int

    @property
    def __name__(self) -> str:
        return getattr(self.computation, "__name__", "computation") + "_pullback"

    def __call__(self, *scalars):
        xs, ct = scalars[:-1], scalars[-1]

        def at(xi):
            return self.computation(*xs[:self.index], xi, *xs[self.index + 1:])

        return transformations.vjp(at, xs[self.index])[1](ct)[0]


@vjp_rule.dispatch
def map_vjp(op: Map, ct, out, *xs):
    return tuple(Map(MapPullback(op.computation, i))(*xs, ct)
                 if issubclass(x.dtype, Inexact) else None for i, x in enumerate(xs))


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import elementwise_rule  # noqa: E402


@batch_rule.dispatch
def map_batched(op: Map, args: tuple, dims: tuple):
    return elementwise_rule(op, args, dims)  # the computation is applied per element
