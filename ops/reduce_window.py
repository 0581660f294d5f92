"""ReduceWindow: fold every (strided, padded, dilated) window with a staged computation.

Variadic like Reduce: for N operands the computation takes 2N scalars (N
accumulators, then N elements) and returns N scalars. As for Reduce, each
initial value must be the identity of the computation (it also fills the
padding); a known one that is not is a ShapeError.

>>> import numpy as np, hlodsl as hd
>>> def add(a, b): return hd.ops.Add()(a, b)
>>> ReduceWindow(add, (2,))(hd.array(np.float32([1, 2, 3])), hd.array(np.float32(0)))
hlodsl.Array[float32, (2,)]([3., 5.])
"""

from __future__ import annotations

import inspect
from typing import Callable

import attrs

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.ir.staging import stage_computation
from hlodsl.arrays.types import ArrayType, TupleType

from ._checks import dims, num_windows
from .reduce import check_identity_init

__all__ = ["ReduceWindow"]


def pairs(value) -> tuple:
    """Converter: (low, high) pairs to int tuples (``check_window`` rejects non-pairs)."""
    return tuple(tuple(int(v) for v in p) if isinstance(p, (tuple, list)) else p
                 for p in value)


def ones(self) -> tuple[int, ...]:
    return (1,) * len(self.window_dimensions)


def zero_pads(self) -> tuple[tuple[int, int], ...]:
    return ((0, 0),) * len(self.window_dimensions)


def check_window(op, fields: tuple[str, ...], positive: tuple[str, ...]) -> None:
    """ValueError unless every window field has one entry per window dimension."""
    rank = len(op.window_dimensions)
    for name in fields:
        if len(getattr(op, name)) != rank:
            raise ValueError(f"{op!r}: {name} needs {rank} entries (one per window "
                             f"dimension), got {getattr(op, name)}")
    if not all(isinstance(p, tuple) and len(p) == 2 for p in op.padding):
        raise ValueError(f"{op!r}: padding must be (low, high) pairs, got {op.padding}")
    for name in positive:
        if any(v < 1 for v in getattr(op, name)):
            raise ValueError(f"{op!r}: {name} must be positive, got {getattr(op, name)}")


def takes(fn, n: int) -> bool:
    """Whether ``fn`` can be called with ``n`` positional arguments (unknown: yes)."""
    try:
        inspect.signature(fn).bind(*range(n))
    except TypeError:
        return False
    except ValueError:  # no signature to inspect (some builtins)
        pass
    return True


def window_shape(op, operand: ArrayType, types) -> tuple[int, ...]:
    """The shape of the windowed result (XLA's InferWindowOutputShape), checked."""
    require(len(op.window_dimensions) == operand.rank, op, types,
            f"window has {len(op.window_dimensions)} dimensions for a rank-{operand.rank} operand")
    base = getattr(op, "base_dilations", ones(op))
    wdil = getattr(op, "window_dilations", ones(op))
    return tuple(num_windows(op, types, f"dimension {d}", size, op.padding[d],
                             op.window_dimensions[d], op.window_strides[d], base[d], wdil[d])
                 for d, size in enumerate(operand.shape))


def window_text(op) -> str:
    """``window={size=2x2 stride=...}``, leaving out default fields as XLA prints it."""
    def join(values):
        return "x".join(str(v) for v in values)

    text = f"size={join(op.window_dimensions)}" if op.window_dimensions else ""
    if any(s != 1 for s in op.window_strides):
        text += f" stride={join(op.window_strides)}"
    if any(p != (0, 0) for p in op.padding):
        text += " pad=" + "x".join(f"{lo}_{hi}" for lo, hi in op.padding)
    for key, name in (("lhs_dilate", "base_dilations"), ("rhs_dilate", "window_dilations")):
        values = getattr(op, name, ())
        if any(v != 1 for v in values):
            text += f" {key}={join(values)}"
    return "window={" + text + "}"


@frozen
class ReduceWindow(HloOp, opcode="reduce-window"):
    """Reduce each window of N same-shape operands with N scalar initial values.

    Called as ``ReduceWindow(f, window_dimensions, ...)(*operands, *inits)``.
    Strides and dilations default to 1, padding to ``(0, 0)`` per dimension.
    Result dimension d has ``(padded_d - dilated_window_d) // stride_d + 1``
    elements, where ``padded_d = (n_d - 1) * base_dilation_d + 1 + low_d + high_d``
    (0 elements where the window does not fit: StableHLO's ``is_empty_window``;
    padding that crops ``padded_d`` below 0 is a ShapeError); returns one array
    for one operand, a tuple for several.

    Each initial value must be the identity of ``f``, as for ``Reduce`` (see
    there; StableHLO leaves results for any other implementation-defined). It
    is also the value of the padding (and of base dilation's holes), where the
    identity contributes nothing. A known non-identity initial value of a
    single add, multiply, maximum, minimum, and or or is a ShapeError; for
    another padding value, pad with ``Pad`` first.
    """

    computation: Callable
    window_dimensions: tuple[int, ...] = attrs.field(converter=dims)
    window_strides: tuple[int, ...] = attrs.field(
        converter=dims, default=attrs.Factory(ones, takes_self=True))
    padding: tuple[tuple[int, int], ...] = attrs.field(
        converter=pairs, default=attrs.Factory(zero_pads, takes_self=True))
    base_dilations: tuple[int, ...] = attrs.field(
        converter=dims, default=attrs.Factory(ones, takes_self=True))
    window_dilations: tuple[int, ...] = attrs.field(
        converter=dims, default=attrs.Factory(ones, takes_self=True))

    def __attrs_post_init__(self):
        positive = ("window_dimensions", "window_strides", "base_dilations", "window_dilations")
        check_window(self, positive[1:] + ("padding",), positive)

    def _comp(self, inits):
        scalars = tuple(ArrayType(t.dtype, ()) for t in inits)
        return scalars, stage_computation(self.computation, scalars + scalars)

    def result_type(self, *types):
        require(len(types) >= 2 and len(types) % 2 == 0, self, types,
                "takes N operands followed by N initial values")
        operands, inits = types[: len(types) // 2], types[len(types) // 2:]
        for t in operands:
            require(t.shape == operands[0].shape, self, types,
                    "all operands must have the same shape")
        for o, i in zip(operands, inits):
            require(i.shape == () and i.dtype is o.dtype, self, types,
                    "each initial value must be a scalar of its operand's element type")
        shape = window_shape(self, operands[0], types)
        require(takes(self.computation, len(types)), self, types,
                f"the computation must take {len(types)} scalars (N accumulators, N elements)")
        scalars, comp = self._comp(inits)
        expect = scalars[0] if len(scalars) == 1 else TupleType(scalars)
        require(comp.result_type == expect, self, types,
                f"the computation must return {expect}, it returns {comp.result_type}")
        outs = tuple(ArrayType(t.dtype, shape) for t in operands)
        return outs[0] if len(outs) == 1 else TupleType(outs)

    def __call__(self, *args):
        check_identity_init(self, args, "; padding holds the initial value too: for another "
                                        "padding value, Pad the operand first")
        return super().__call__(*args)

    def attributes(self, operand_types, result_type, ctx):
        _, comp = self._comp(operand_types[len(operand_types) // 2:])
        return [window_text(self), f"to_apply={ctx.computation(comp)}"]

    def stage(self, builder, args):
        # NOTE: XLA's algebraic simplifier (jaxlib 0.10.2) aborts the whole process
        # (a failed CHECK) on a window of size 1 with negative padding. Negative
        # padding of an undilated dimension only drops elements: stage it as a slice
        # of the operands and a reduce-window without it (same result).
        cut = [d for d, (lo, hi) in enumerate(self.padding)
               if (lo < 0 or hi < 0) and self.base_dilations[d] == 1]
        if not cut:
            return super().stage(builder, args)
        from .slice import Slice

        types = tuple(a.type for a in args)
        self.result_type(*types)  # errors name the op the user wrote
        n = len(args) // 2
        shape = args[0].shape
        start = tuple(-lo if d in cut and lo < 0 else 0 for d, (lo, _) in enumerate(self.padding))
        limit = tuple(s + hi if d in cut and hi < 0 else s
                      for d, (s, (_, hi)) in enumerate(zip(shape, self.padding)))
        padding = tuple((max(lo, 0), max(hi, 0)) if d in cut else (lo, hi)
                        for d, (lo, hi) in enumerate(self.padding))
        trimmed = [Slice(start, limit)(a) for a in args[:n]]
        return attrs.evolve(self, padding=padding)(*trimmed, *args[n:])


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# A sum window's cotangent spreads ct back over each window: ct padded (strides
# become interior padding) and summed over windows again, as jax's
# reduce_window_sum transpose. A max/min window's ct goes to the element each
# window picked (the first of ties), which is SelectAndScatter with >= / <=;
# where the windows tile the operand exactly (stride = window, as in VGG's
# pools) it is elementwise work on the operand split into windows instead
# (``_tiled_chooser_transpose``). The init value is added once per result
# element (padding adds nothing).

from hlodsl.ir.rules import jvp_rule, vjp_rule  # noqa: E402


def _kind(op: ReduceWindow, args) -> str:
    from .reduce import reduction_kind

    kind = reduction_kind(op, args[0].dtype) if len(args) == 2 else None
    if kind not in ("add", "max", "min"):
        raise NotImplementedError(
            f"no derivative rule for {op!r} with {len(args) // 2} operand(s): only "
            "single-operand windows whose computation is one add, maximum or minimum "
            "of its two parameters are differentiated")
    return kind


def _chooser_check(op: ReduceWindow) -> None:
    if any(d != 1 for d in op.base_dilations + op.window_dilations) or \
            any(lo < 0 or hi < 0 for lo, hi in op.padding):
        raise NotImplementedError(
            f"no derivative rule for {op!r}: max/min windows are differentiated with "
            "SelectAndScatter, which takes no dilations and no negative padding")


def _zero(x):
    import numpy as np

    from hlodsl.arrays.array import array

    return array(np.zeros((), x.dtype.np_dtype))


# Module-level computations, so equal ops compare equal (staging and eager caches).
def _greater_equal(a, b):
    from .compare import Compare
    return Compare("GE")(a, b)


def _less_equal(a, b):
    from .compare import Compare
    return Compare("LE")(a, b)


def _add(a, b):
    from .binary import Add
    return Add()(a, b)


def _minimum(a, b):
    from .binary import Minimum
    return Minimum()(a, b)


def _tiles(op: ReduceWindow, x) -> bool:
    """Whether the windows tile ``x`` exactly: stride = window, no padding or dilation."""
    return (any(w > 1 for w in op.window_dimensions)
            and op.window_strides == op.window_dimensions
            and all(p == (0, 0) for p in op.padding)
            and all(d == 1 for d in op.base_dilations + op.window_dilations)
            and all(s % w == 0 for s, w in zip(x.shape, op.window_dimensions)))


def _tiled_chooser_transpose(ct, out, x, window: tuple[int, ...]):
    """``ct`` sent to the first element (row-major in its window) equal to the window's result.

    The same as SelectAndScatter with >= (max) or <= (min) where the windows
    tile ``x``, ties included, but elementwise: ``x`` reshaped so that every
    windowed dimension splits into (window index, position in window), each
    position numbered, the smallest number among those equal to the result
    found by a min-reduce, and ``ct`` selected there. XLA:CPU has no
    SelectAndScatter kernel and expands it into an argmax reduce-window and a
    scatter, 4-5x slower than this on VGG19's pools (224x224x64: 32 ms
    against 7 ms). A window whose result no element equals (a NaN, or the
    init value) sends nothing back.
    """
    import numpy as np

    from hlodsl.arrays.array import array

    from .broadcast import Broadcast
    from .compare import Compare, Select
    from .reduce import Reduce
    from .reshape import Reshape

    split, outer, inner = [], [], []
    for size, w in zip(x.shape, window):
        outer.append(len(split))
        split.append(size // w)
        if w > 1:
            inner.append(len(split))
            split.append(w)
    split = tuple(split)
    count = int(np.prod(window))
    number = array(np.arange(count, dtype=np.int32).reshape([w for w in window if w > 1]))
    numbers = Broadcast(split, tuple(inner))(number)
    equal = Compare("EQ")(Reshape(split)(x), Broadcast(split, tuple(outer))(out))
    none = array(np.int32(count))
    candidates = Select()(equal, numbers, Broadcast(split)(none))
    # From min's identity: a window with no candidate still gives ``count``.
    first = Reduce(_minimum, tuple(inner))(candidates, array(np.int32(np.iinfo(np.int32).max)))
    chosen = Compare("EQ")(numbers, Broadcast(split, tuple(outer))(first))
    zero = Broadcast(split)(_zero(ct))
    return Reshape(x.shape)(Select()(chosen, Broadcast(split, tuple(outer))(ct), zero))


def _sum_window_transpose(op: ReduceWindow, ct, x):
    from .convolution import _lhs_padding
    from .pad import Pad

    zero = _zero(ct)
    pads = _lhs_padding(x.shape, op.window_dimensions, op.window_strides, ct.shape,
                        op.padding, op.base_dilations, op.window_dilations)
    padded = Pad(tuple(lo for lo, _ in pads), tuple(hi for _, hi in pads),
                 tuple(s - 1 for s in op.window_strides))(ct, zero)
    return ReduceWindow(op.computation, op.window_dimensions, op.base_dilations,
                        window_dilations=op.window_dilations)(padded, zero)


def _chooser(direction: str):
    def choose(acc_x, acc_v, x, v):
        from .compare import Compare, Select

        keep = Compare(direction)(acc_x, x)
        return Select()(keep, acc_x, x), Select()(keep, acc_v, v)

    choose.__qualname__ = f"choose_{direction.lower()}"
    return choose


# One function per direction, made once, so equal ops compare equal.
_CHOOSERS = {d: _chooser(d) for d in ("GE", "GT", "LE", "LT")}


def select_gather(direction: str, window_dimensions, window_strides, padding, operand, values):
    """``values`` at the element of each window of ``operand`` that ``direction`` selects.

    The windowed shape (as ReduceWindow's); padding never wins (it holds the
    comparison's identity, -inf for GE/GT and +inf for LE/LT).
    """
    import numpy as np

    from hlodsl.arrays.array import array

    np_dtype = operand.dtype.np_dtype
    big = np.inf if np_dtype.kind in "fc" else np.iinfo(np_dtype).max
    worst = array(np.asarray(-big if direction in ("GE", "GT") else big, np_dtype))
    zero = array(np.zeros((), values.dtype.np_dtype))
    return ReduceWindow(_CHOOSERS[direction], window_dimensions, window_strides, padding)(
        operand, values, worst, zero)[1]


@vjp_rule.dispatch
def reduce_window_vjp(op: ReduceWindow, ct, out, *args):
    from hlodsl.ir.op import op_class

    from ._ad import sum_dims

    SelectAndScatter = op_class("select-and-scatter")  # that module imports this one

    kind = _kind(op, args)
    x, init = args
    if kind == "add":
        return _sum_window_transpose(op, ct, x), sum_dims(ct, tuple(range(ct.ndim)))
    _chooser_check(op)
    if _tiles(op, x):
        return _tiled_chooser_transpose(ct, out, x, op.window_dimensions), None
    select = _greater_equal if kind == "max" else _less_equal
    return SelectAndScatter(select, _add, op.window_dimensions, op.window_strides,
                            op.padding)(x, ct, _zero(ct)), None


@jvp_rule.dispatch
def reduce_window_jvp(op: ReduceWindow, tangents: tuple, out, *args):
    from ._ad import zeros_like_array

    kind = _kind(op, args)
    (t_x, t_init), (x, init) = tangents, args
    if kind == "add":  # linear
        if t_x is None and t_init is None:
            return None
        return op(t_x if t_x is not None else zeros_like_array(x),
                  t_init if t_init is not None else zeros_like_array(init))
    if t_x is None:
        return None
    _chooser_check(op)
    return select_gather("GE" if kind == "max" else "LE", op.window_dimensions,
                         op.window_strides, op.padding, x, t_x)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from .reduce import _batched_operands  # noqa: E402


@batch_rule.dispatch
def reduce_window_batched(op: ReduceWindow, args: tuple, dims: tuple):
    operands, inits = _batched_operands(op, args, dims)
    out = ReduceWindow(op.computation, (1, *op.window_dimensions), (1, *op.window_strides),
                       ((0, 0), *op.padding), (1, *op.base_dilations),
                       (1, *op.window_dilations))(*operands, *inits)
    return out, (tuple(0 for _ in out) if isinstance(out, tuple) else 0)
