"""Random numbers: Rng (uniform, normal) and RngBitGenerator (counter-based bits).

``RngBitGenerator`` is the reproducible one: the same state gives the same bits
and a new state to thread through a program.

>>> import numpy as np, hlodsl as hd
>>> state, bits = RngBitGenerator("three_fry", (2,), hd.uint32)(hd.array(np.uint64([0, 1])))
>>> state.shape, bits.dtype
((2,), uint32)
"""

from __future__ import annotations

import attrs

from hlodsl.arrays.dtypes import ElementType, Floating, UnsignedInteger, element_type, uint64
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType, TupleType

from ._checks import sizes

__all__ = ["Rng", "RngBitGenerator"]

_DISTRIBUTIONS = ("uniform", "normal")
_ALGORITHMS = ("default", "three_fry", "philox")


@frozen
class Rng(HloOp, opcode="rng"):
    """An array of ``shape`` drawn from XLA's generator: uniform in [a, b), or normal(a, b).

    Operands are the scalar parameters ``a`` and ``b`` (for normal: mean and
    standard deviation). Not reproducible across compilations; use
    ``RngBitGenerator`` for explicit keys.
    """

    interned = False  # two draws are two draws, even with equal operands

    distribution: str
    shape: tuple[int, ...] = attrs.field(converter=sizes)

    def __attrs_post_init__(self):
        if self.distribution not in _DISTRIBUTIONS:
            raise ValueError(f"{self!r}: distribution must be one of {_DISTRIBUTIONS}")

    def result_type(self, a, b):
        require(a.shape == () and b.shape == (), self, (a, b), "a and b must be scalars")
        require(a.dtype is b.dtype, self, (a, b), "a and b must have the same element type")
        require(issubclass(a.dtype, Floating) or self.distribution == "uniform", self, (a, b),
                "the normal distribution needs a floating-point element type")
        return ArrayType(a.dtype, self.shape)

    def attributes(self, operand_types, result_type, ctx):
        return [f"distribution=rng_{self.distribution}"]


@frozen
class RngBitGenerator(HloOp, opcode="rng-bit-generator"):
    """``(new_state, bits)``: random bits of ``shape`` and unsigned ``dtype`` from ``state``.

    ``state`` is a u64 vector: 2 words for three_fry, 2 or 3 for philox (XLA's
    backend decides what ``default`` means).
    """

    interned = False

    algorithm: str
    shape: tuple[int, ...] = attrs.field(converter=sizes)
    dtype: type[ElementType] = attrs.field(converter=element_type, default=uint64)

    def __attrs_post_init__(self):
        if self.algorithm not in _ALGORITHMS:
            raise ValueError(f"{self!r}: algorithm must be one of {_ALGORITHMS}")
        if not issubclass(self.dtype, UnsignedInteger):
            raise ValueError(f"{self!r}: bits must have an unsigned integer element type")

    def result_type(self, state):
        require(state.dtype is uint64 and state.rank == 1, self, (state,),
                "the state must be a u64 vector")
        sizes = {"three_fry": (2,), "philox": (2, 3), "default": (2, 3)}[self.algorithm]
        require(state.shape[0] in sizes, self, (state,),
                f"the {self.algorithm} state has {' or '.join(map(str, sizes))} words")
        return TupleType((state, ArrayType(self.dtype, self.shape)))

    def attributes(self, operand_types, result_type, ctx):
        return [f"algorithm=rng_{self.algorithm}"]


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import nondifferentiable  # noqa: E402

# Random draws carry no derivative with respect to their parameters or state.
nondifferentiable(Rng, RngBitGenerator)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import batch_size, scalar  # noqa: E402


@batch_rule.dispatch
def rng_batched(op: Rng, args: tuple, dims: tuple):
    # One draw of every example's shape at once, from the standard distribution,
    # moved to each example's a and b: uniform a + (b - a) u, normal a + b z.
    from .binary import Add, Multiply, Subtract
    from .broadcast import Broadcast

    from hlodsl.arrays.dtypes import Integer, float64

    from .convert import Convert
    from .unary import Floor

    size = batch_size(args, dims)
    dtype = args[0].dtype
    shape = (size, *op.shape)
    real = float64 if issubclass(dtype, Integer) else dtype  # integers: floor of a real draw
    a, b = (Broadcast(shape, (0,) if d is not None else ())(v if v.dtype is real else
                                                           Convert(real)(v))
            for v, d in zip(args, dims))
    std = Rng(op.distribution, shape)(scalar(0, real), scalar(1, real))
    if op.distribution == "normal":
        return Add()(a, Multiply()(b, std)), 0
    out = Add()(a, Multiply()(Subtract()(b, a), std))
    return (Convert(dtype)(Floor()(out)) if real is not dtype else out), 0


@batch_rule.dispatch
def rng_bit_generator_batched(op: RngBitGenerator, args: tuple, dims: tuple):
    # One generator call per example's state, in a loop: each example's bits are exactly
    # those of calling the op on its own state (XLA's generators are not batchable by
    # construction: a state is a (key, counter) pair that the backend expands).
    from hlodsl.arrays.dtypes import int32

    from .binary import Add
    from .broadcast import Broadcast
    from .compare import Compare
    from .dynamic_slice import DynamicSlice, DynamicUpdateSlice
    from .reshape import Reshape
    from .while_loop import While

    (states,) = args
    size, words = states.shape

    def condition(s):
        return Compare("LT")(s[0], scalar(size, int32))

    def body(s):
        # Constants made here: a loop body cannot capture values of the program around it.
        i, states, new_states, bits = s
        zero = scalar(0, int32)
        starts = (zero,) * len(op.shape)
        state = Reshape((words,))(DynamicSlice((1, words))(states, i, zero))
        new, b = op(state)
        new_states = DynamicUpdateSlice()(new_states, Reshape((1, words))(new), i, zero)
        bits = DynamicUpdateSlice()(bits, Reshape((1, *op.shape))(b), i, *starts)
        return Add()(i, scalar(1, int32)), states, new_states, bits

    bits0 = Broadcast((size, *op.shape))(scalar(0, op.dtype))
    _, _, new_states, bits = While(condition, body)(scalar(0, int32), states, states, bits0)
    return (new_states, bits), (0, 0)
