"""Compare and Select.

>>> import numpy as np, hlodsl as hd
>>> x, y = hd.array(np.float32([1, 5])), hd.array(np.float32([3, 3]))
>>> Compare("LT")(x, y)
hlodsl.Array[pred, (2,)]([ True, False])
>>> Select()(Compare("LT")(x, y), x, y)
hlodsl.Array[float32, (2,)]([1., 3.])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import Bool, ComplexFloating, Floating, UnsignedInteger, pred
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen

__all__ = ["Compare", "Select"]

_DIRECTIONS = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
               "GT": np.greater, "GE": np.greater_equal}
_TYPES = ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED")


def _upper(value) -> str:
    """Converter of ``direction``: a str, case-insensitive (checked against the list after)."""
    if not isinstance(value, str):
        raise TypeError(f"expected one of {', '.join(sorted(_DIRECTIONS))} (a str), got "
                        f"{value!r} ({type(value).__name__})")
    return value.upper()


def _default_type(dtype) -> str:
    if issubclass(dtype, (Floating, ComplexFloating)):
        return "FLOAT"
    if issubclass(dtype, (UnsignedInteger, Bool)):
        return "UNSIGNED"
    return "SIGNED"


def _allowed_types(dtype) -> tuple[str, ...]:
    # What XLA's verifier accepts: TOTALORDER only for real floats.
    return ("FLOAT", "TOTALORDER") if issubclass(dtype, Floating) else (_default_type(dtype),)


def _total_order_key(x) -> np.ndarray:
    """Integers in IEEE totalOrder of the floats x: -NaN < -inf < ... < -0 < +0 < ... < NaN."""
    x = np.asarray(x)
    bits = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


@frozen
class Compare(HloOp, opcode="compare"):
    """Elementwise comparison giving pred; ``direction`` is EQ, NE, LT, LE, GT or GE.

    ``comparison_type`` (FLOAT, TOTALORDER, SIGNED, UNSIGNED) defaults to the
    one XLA infers from the element type.
    """

    direction: str = attrs.field(converter=_upper)
    comparison_type: str | None = None

    def __attrs_post_init__(self):
        if self.direction not in _DIRECTIONS:
            raise ValueError(f"Compare: direction must be one of {sorted(_DIRECTIONS)}, "
                             f"got {self.direction!r}")
        if self.comparison_type is not None and self.comparison_type not in _TYPES:
            raise ValueError(f"Compare: comparison_type must be one of {_TYPES}, "
                             f"got {self.comparison_type!r}")

    def result_type(self, x, y):
        require(x == y, self, (x, y), "operands must have equal shapes and element types")
        allowed = _allowed_types(x.dtype)
        require(self.comparison_type in (None, *allowed), self, (x, y),
                f"comparison_type {self.comparison_type} does not apply to {x.dtype.__name__} "
                f"(use {' or '.join(allowed)})")
        # NOTE: XLA's CPU LE/GE of complex numbers are not the spec's lexicographic
        # order (LT and GT are): rejected rather than wrong.
        require(not (issubclass(x.dtype, ComplexFloating) and self.direction in ("LE", "GE")),
                self, (x, y), "LE and GE are not supported for complex operands (use LT, GT "
                "or EQ)")
        return x.with_dtype(pred)

    def attributes(self, operand_types, result_type, ctx):
        attrs_ = [f"direction={self.direction}"]
        if self.comparison_type is not None:
            attrs_.append(f"type={self.comparison_type}")
        return attrs_

    def reference(self, x, y):
        if self.comparison_type == "TOTALORDER":
            x, y = _total_order_key(x), _total_order_key(y)
        return _DIRECTIONS[self.direction](x, y)


@frozen
class Select(HloOp, opcode="select"):
    """``pred ? on_true : on_false`` elementwise; pred has the operands' shape or is a scalar.

    A scalar predicate picks one whole operand, as the HLO spec allows.

    >>> import numpy as np, hlodsl as hd
    >>> Select()(hd.array(np.bool_(False)), hd.array([1, 2]), hd.array([3, 4]))
    hlodsl.Array[int64, (2,)]([3, 4])
    """

    def result_type(self, p, t, f):
        require(p.dtype is pred, self, (p, t, f), "the predicate must have element type pred")
        require(t == f, self, (p, t, f), "on_true and on_false must have equal types")
        require(p.shape in (t.shape, ()), self, (p, t, f),
                "the predicate must have the shape of the operands, or be a scalar")
        return t

    def reference(self, p, t, f):
        return np.where(p, t, f)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import nondifferentiable, vjp_rule  # noqa: E402

nondifferentiable(Compare)


@vjp_rule.dispatch
def select_vjp(op: Select, ct, out, p, t, f):
    from ._ad import full_like

    zero = full_like(ct, 0)
    return None, Select()(p, ct, zero), Select()(p, zero, ct)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule, register_rule  # noqa: E402

from ._batch import all_batched, elementwise_rule  # noqa: E402
from .broadcast import Broadcast  # noqa: E402

register_rule(batch_rule, Compare, elementwise_rule)


@batch_rule.dispatch
def select_batched(op: Select, args: tuple, dims: tuple):
    p, t, f = args
    if dims[0] is None and p.ndim == 0:  # one choice for every example: stays a scalar
        return op(p, *all_batched((t, f), dims[1:])), 0
    p, t, f = all_batched(args, dims)
    if p.ndim != t.ndim:  # a scalar predicate per example: spread over its operands
        p = Broadcast(t.shape, (0,))(p)
    return op(p, t, f), 0
