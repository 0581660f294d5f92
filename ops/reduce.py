"""Reduce: fold dimensions with a staged Python computation (variadic).

The computation is any Python callable on scalar arrays; it is staged into an
HLO sub-computation. For N operands it takes 2N scalars (N accumulators, then
N elements) and returns N scalars.

The initial values must be the identities of the computation: XLA may fold
them in any number of times, or not at all (its algebraic simplifier drops
the initial value of a reduction over dimensions of size 1). A known initial
value (a concrete array or a staged constant) that is not the identity of a
single add, multiply, maximum, minimum, and or or is a ShapeError; reduce
with the identity and combine the initial value outside instead.

>>> import numpy as np, hlodsl as hd
>>> def add(a, b): return hd.ops.Add()(a, b)
>>> Reduce(add, (1,))(hd.array(np.float32([[1, 2], [3, 4]])), hd.array(np.float32(0)))
hlodsl.Array[float32, (2,)]([3., 7.])
"""

from __future__ import annotations

from typing import Callable

import attrs
import numpy as np

from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import Bool, Floating, Integer
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.ir.staging import stage_computation
from hlodsl.arrays.types import ArrayType, TupleType

from ._checks import check_dims, check_one_float_precision, dims, dims_text, function

__all__ = ["Reduce"]


@frozen
class Reduce(HloOp, opcode="reduce"):
    """Reduce ``dimensions`` of N operands with N initial values and ``computation``.

    Called as ``Reduce(f, dims)(*operands, *inits)``; returns one array for one
    operand, a tuple for several, with the ``dims`` dimensions removed.

    Each initial value must be the identity of ``f`` (StableHLO: results for any
    other are implementation-defined): 0 for add (False on pred), 1 for
    multiply (True), -inf / the integer type's minimum / False for maximum,
    +inf / the maximum / True for minimum, all bits set for and, 0 for or. XLA
    relies on it: ``Reduce(multiply, (0,))(x_f32[1], 1.5)`` returns ``x[0]``,
    not ``1.5 * x[0]``. Where the initial value is known (concrete, or a staged
    constant) and ``f`` is one of those binary ops, anything else is a
    ShapeError; for symbolic initial values and other computations the result
    is implementation-defined. To start from another value ``v``, combine it
    outside: ``Add()(Reduce(add, dims)(x, 0), v)``.
    """

    computation: Callable = attrs.field(converter=function)
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

    def __call__(self, *args):
        check_identity_init(self, args)
        return super().__call__(*args)

    def attributes(self, operand_types, result_type, ctx):
        scalars = self._scalars(self._split(operand_types)[1])
        comp = stage_computation(self.computation, scalars + scalars)
        return [f"dimensions={dims_text(self.dimensions)}", f"to_apply={ctx.computation(comp)}"]


# -- initial values: the identity of the computation ------------------------------

_COMBINE = {"add": "Add", "mul": "Multiply", "max": "Maximum", "min": "Minimum",
            "and": "And", "or": "Or"}


def reduction_kind(op, dtype) -> str | None:
    """'add', 'mul', 'max', 'min', 'and' or 'or' when ``op.computation`` is that one
    binary op of its two parameters (at scalars of ``dtype``), else None."""
    from .binary import Add, And, Maximum, Minimum, Multiply, Or

    scalar = ArrayType(dtype, ())
    comp = stage_computation(op.computation, (scalar, scalar))
    root = comp.root
    if len(comp.nodes) != 3 or set(root.operands) != set(comp.params):
        return None
    kinds = {Add: "add", Maximum: "max", Minimum: "min", Multiply: "mul", And: "and", Or: "or"}
    return kinds.get(type(root.op))


def identity(kind: str, dtype) -> np.ndarray | None:
    """The identity of the binary op ``kind`` on ``dtype`` (None where it has none)."""
    np_dtype = dtype.np_dtype
    if kind in ("add", "or"):
        return np.zeros((), np_dtype)  # False for pred: add on pred is or
    if kind == "mul":
        return np.ones((), np_dtype)  # True for pred: multiply on pred is and
    if kind == "and":
        return np.invert(np.zeros((), np_dtype))  # every bit set; True for pred
    big = kind == "min"
    if issubclass(dtype, Floating):
        return np.asarray(np.inf if big else -np.inf, np_dtype)
    if issubclass(dtype, Bool):
        return np.asarray(big, np_dtype)
    if issubclass(dtype, Integer):
        info = np.iinfo(np_dtype)
        return np.asarray(info.max if big else info.min, np_dtype)
    return None  # complex numbers have no order XLA's maximum/minimum can use


def known_value(x) -> np.ndarray | None:
    """``x``'s value where it is known before running: concrete, or a staged constant."""
    from hlodsl.ir.structural import Constant

    if not isinstance(x, Array):
        return None
    if x._buf is not None:
        return np.asarray(x)
    if x._node is not None and isinstance(x._node.op, Constant):
        return np.asarray(x._node.op.value)
    return None


def _equal(value: np.ndarray, want: np.ndarray) -> bool:
    if value.dtype.kind == "V" or want.dtype.kind == "V":  # bfloat16: compare as float64
        value, want = value.astype(np.float64), want.astype(np.float64)
    return bool(value == want)  # 0.0 and -0.0 are both add's identity


def _is_identity(init, kind: str) -> bool:
    """Whether ``init`` is known (concrete, or a staged constant) to be ``kind``'s identity."""
    value, want = known_value(init), identity(kind, init.dtype)
    return value is not None and want is not None and _equal(value, want)


def check_identity_init(op, args, outside: str = "") -> None:
    """ShapeError where a known initial value is not the identity of ``op``'s computation.

    For one operand and one initial value (the variadic case is left to the
    caller); ``outside`` adds what combining the initial value outside means
    for ``op``.
    """
    if len(args) != 2 or not all(isinstance(a, Array) for a in args):
        return
    value = known_value(args[1])
    if value is None:
        return
    types = tuple(a.type for a in args)
    op.result_type(*types)  # a malformed call is the shape rule's error, not this one
    kind = reduction_kind(op, types[0].dtype)
    want = None if kind is None else identity(kind, types[0].dtype)
    if want is None or _equal(value, want):
        return
    combine = _COMBINE[kind]
    require(False, op, types,
            f"the initial value {value} is not {want}, the identity of {combine}, which XLA "
            "requires (StableHLO leaves any other implementation-defined: XLA may apply it "
            "any number of times, and drops it over dimensions of size 1). Reduce from the "
            "identity and combine the initial value outside, e.g. "
            f"{combine}()({type(op).__name__}(...)(x, {want}), init){outside}")


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402


@vjp_rule.dispatch
def reduce_vjp(op: Reduce, ct, out, *args):
    from .broadcast import Broadcast
    from .compare import Compare, Select
    from ._ad import div, full_like, mul, sum_dims

    n = len(args) // 2
    if n != 1 and _selects_whole_tuples(op, args[n:]):
        return _selection_vjp(op, ct, out, args)
    if n != 1:
        raise NotImplementedError(
            f"no derivative rule for the variadic {op!r} ({n} operands): only the "
            "value results of sum, max, min and product reductions, and reductions that "
            "select one whole (value, index, ...) tuple (argmax, argmin), are differentiated")
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
        # the initial value included where it wins: a known initial value is the
        # identity (it never wins), a symbolic one is taken as folded in once.
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
        # The initial value is one more factor: of the non-zeros' product, and of
        # ct_init. It is multiplied in explicitly: reductions start from the identity.
        unit = full_like(init, 1)
        product = Reduce(op.computation, op.dimensions)
        nonzero_prod = mul(product(Select()(is_zero, one, x), unit), Broadcast(out.shape)(init))
        zeros = sum_dims(Select()(is_zero, one, zero), op.dimensions)
        p, z = spread(nonzero_prod), spread(zeros)
        none = Compare("EQ")(z, zero)
        single = Compare("EQ")(z, one)
        d = Select()(none, div(p, Select()(is_zero, one, x)),
                     Select()(single, Select()(is_zero, p, zero), zero))
        prod_x = product(x, unit)
        return mul(spread(ct), d), sum_dims(mul(ct, prod_x), tuple(range(ct.ndim)))
    raise NotImplementedError(
        f"no derivative rule for {op!r}: its computation is not a single add, maximum, "
        "minimum or multiply of its two parameters")


def _selects_whole_tuples(op: Reduce, inits) -> bool:
    """Whether ``op.computation`` returns one of its two argument tuples whole: result
    ``k`` is ``Select(p, a_k, b_k)`` for every ``k``, one predicate ``p`` (or all of them
    ``Select(p, b_k, a_k)``), as an argmax's (value, index) reduction is."""
    from hlodsl.ir.structural import Tuple

    from .compare import Select

    scalars = op._scalars(inits)
    comp = stage_computation(op.computation, scalars + scalars)
    n, params, root = len(scalars), comp.params, comp.root
    if not isinstance(root.op, Tuple) or len(root.operands) != n:
        return False
    chosen = set()
    for k, node in enumerate(root.operands):
        if not isinstance(node.op, Select):
            return False
        pred, on_true, on_false = node.operands
        if (on_true, on_false) == (params[k], params[n + k]):
            chosen.add((pred, 0))
        elif (on_true, on_false) == (params[n + k], params[k]):
            chosen.add((pred, 1))
        else:
            return False
    return len(chosen) == 1


def _selection_vjp(op: Reduce, ct, out, args):
    """A reduction that keeps one whole tuple (argmax's value and index): each result's
    cotangent goes to the element whose tuple is the result (shared among equal ones,
    the initial tuple counted as one more where it is the result, as ``max``'s rule
    shares); integer operands (the indices) take none."""
    from .broadcast import Broadcast
    from .compare import Compare
    from .convert import Convert
    from ._ad import add, div, mul, sum_dims
    from .binary import And, Or

    n = len(args) // 2
    xs, inits = args[:n], args[n:]
    kept = tuple(d for d in range(xs[0].ndim) if d not in op.dimensions)
    spread = Broadcast(xs[0].shape, kept)

    def same(a, b):  # equal, or NaN both (a NaN the reduction chose matches itself)
        eq = Compare("EQ")(a, b)
        if issubclass(a.dtype, Floating):
            eq = Or()(eq, And()(Compare("NE")(a, a), Compare("NE")(b, b)))
        return eq

    hit = init_hit = None
    for x, init, o in zip(xs, inits, out):
        one, at_init = same(x, spread(o)), same(Broadcast(o.shape)(init), o)
        hit = one if hit is None else And()(hit, one)
        init_hit = at_init if init_hit is None else And()(init_hit, at_init)
    grads = []
    for k, x in enumerate(xs):
        if not issubclass(x.dtype, Floating) or ct[k] is None:
            grads.append(None)
            continue
        ones, init_ones = Convert(x.dtype)(hit), Convert(x.dtype)(init_hit)
        share = div(ct[k], add(sum_dims(ones, op.dimensions), init_ones))
        grads.append(mul(spread(share), ones))
    init_grads = []
    for k, init in enumerate(inits):
        if not issubclass(init.dtype, Floating) or ct[k] is None:
            init_grads.append(None)
            continue
        ones = Convert(xs[k].dtype)(hit)
        share = div(ct[k], add(sum_dims(ones, op.dimensions), Convert(init.dtype)(init_hit)))
        init_grads.append(sum_dims(mul(share, Convert(init.dtype)(init_hit)),
                                   tuple(range(share.ndim))))
    return (*grads, *init_grads)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import NotBatchableError, batch_rule  # noqa: E402

from ._batch import batch_size, shifted, with_batch  # noqa: E402


def _batched_operands(op, args, dims):
    """The operands batched alike; the initial values must be the same for every example."""
    n = len(args) // 2
    if any(d is not None for d in dims[n:]):
        raise NotBatchableError(f"vmap: {op!r} with an initial value that differs between "
                                "examples cannot be batched (an initial value is the "
                                "identity of the computation: pass it unbatched)")
    size = batch_size(args, dims)
    return [with_batch(a, d, size) for a, d in zip(args[:n], dims[:n])], list(args[n:])


@batch_rule.dispatch
def reduce_batched(op: Reduce, args: tuple, dims: tuple):
    operands, inits = _batched_operands(op, args, dims)
    out = Reduce(op.computation, shifted(op.dimensions))(*operands, *inits)
    return out, (tuple(0 for _ in out) if isinstance(out, tuple) else 0)
