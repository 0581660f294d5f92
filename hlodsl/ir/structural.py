"""The ops that give a module its structure: parameter, constant, tuple, get-tuple-element.

They live in the core, not in ``ops/``, because staging itself creates them
(parameters of staged functions, constants for concrete arrays a staged
function captures, tuples for several results). ``hlodsl.ops`` re-exports them
and the registry lists them like any other op.
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import element_type, native_byte_order
from hlodsl.errors import require
from .literals import literal_text
from .op import HloOp, frozen
from hlodsl.arrays.types import ArrayType, TupleType

__all__ = ["Parameter", "Constant", "Tuple", "GetTupleElement"]


def _index(value) -> int:
    """Converter: a non-negative Python or numpy int (``hlodsl.ir.op.frozen`` names the op)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"expected a non-negative int, got {value!r} ({type(value).__name__})")
    if value < 0:
        raise ValueError(f"expected a non-negative int, got {value}")
    return int(value)


@frozen
class Parameter(HloOp, opcode="parameter"):
    """The ``index``-th parameter of a computation; created by staging, not by users."""

    index: int = attrs.field(converter=_index)

    def result_type(self, *operand_types):
        raise TypeError("parameters are created by staging (hlodsl.compile), not called")

    def emit(self, operands, operand_types, result_type, ctx) -> str:
        return f"parameter({self.index})"


def _as_host(value) -> np.ndarray:
    # Native byte order, as hlodsl.arrays.array takes data: equal values make equal constants.
    return native_byte_order(np.asarray(value))


@frozen(eq=False)
class Constant(HloOp, opcode="constant"):
    """A constant array, its value the static operand.

    >>> import numpy as np
    >>> Constant(np.float32(2.5))()
    hlodsl.Array[float32, ()](2.5)
    """

    value: np.ndarray = attrs.field(converter=_as_host)

    def __attrs_post_init__(self):
        try:  # rejects dtypes XLA has no element type for
            element_type(self.value.dtype)
        except TypeError as e:
            raise TypeError(f"Constant: static operand value (a numpy array of dtype "
                            f"{self.value.dtype}) is not valid: {e}") from None

    def _key(self):
        # The dtype itself: ml_dtypes types share a .str ("<V1" for int4 and every float8).
        return (self.value.dtype, self.value.shape, self.value.tobytes())

    def __eq__(self, other):
        return type(other) is Constant and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def result_type(self):
        return ArrayType(element_type(self.value.dtype), self.value.shape)

    def emit(self, operands, operand_types, result_type, ctx) -> str:
        return f"constant({literal_text(self.value)})"

    def reference(self):
        return self.value

    def __repr__(self) -> str:
        if self.value.size > 8:
            return f"Constant(<{self.result_type()}>)"
        return f"Constant({np.array2string(self.value, separator=', ')})"


@frozen
class Tuple(HloOp, opcode="tuple"):
    """Groups arrays into an HLO tuple; called from Python it returns a tuple of arrays."""

    def result_type(self, *operand_types):
        return TupleType(operand_types)

    def reference(self, *arrays):
        return tuple(arrays)


@frozen
class GetTupleElement(HloOp, opcode="get-tuple-element"):
    """Element ``index`` of a tuple-shaped operand (emitted by staging for tuple results)."""

    index: int = attrs.field(converter=_index)

    def result_type(self, tuple_type):
        require(isinstance(tuple_type, TupleType), self, (tuple_type,),
                "operand must be a tuple")
        require(0 <= self.index < len(tuple_type.elements), self, (tuple_type,),
                f"index out of range for a {len(tuple_type.elements)}-tuple")
        return tuple_type.elements[self.index]

    def attributes(self, operand_types, result_type, ctx):
        return [f"index={self.index}"]

    def __call__(self, value):
        # Python tuples already hold the elements (tuple-shaped results are
        # returned to Python as tuples of arrays), so this is indexing.
        if not isinstance(value, tuple):
            raise TypeError(f"{self!r} takes the tuple of arrays an op returned, "
                            f"not {type(value).__name__}")
        return value[self.index]


# -- batching (vmap): structure, and values that no example changes ----------------------

from .rules import batch_rule, not_batchable  # noqa: E402


@batch_rule.dispatch
def tuple_batched(op: Tuple, args: tuple, dims: tuple):
    return tuple(args), tuple(dims)


@batch_rule.dispatch
def get_tuple_element_batched(op: GetTupleElement, args: tuple, dims: tuple):
    return args[0][op.index], dims[0][op.index]


@batch_rule.dispatch
def constant_batched(op: Constant, args: tuple, dims: tuple):
    return op(), None  # no operands: the same for every example


not_batchable(Parameter, reason="parameters are bound by vmap to the batched arguments; "
                                "they are never applied")
