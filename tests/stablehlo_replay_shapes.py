"""StableHLO's data-movement, shape, linear-algebra and misc ops as ``hlodsl.ops`` calls.

Registered into ``stablehlo_replay_ops.HANDLERS`` on import. A dynamic op whose
shape operands are constants is refined to its static form, as StableHLO's
shape refinement does before XLA sees a program.

>>> import stablehlo_replay_ops as m
>>> "stablehlo.dot_general" in m.HANDLERS and "stablehlo.dynamic_iota" in m.HANDLERS
True
"""

from __future__ import annotations

import re

import numpy as np
from stablehlo_replay_ops import (
    _attr,
    _bool,
    _enum,
    _handler,
    _ints,
    _out,
    _pairs,
    _struct,
)
from stablehlo_replay_parser import _split_top
from stablehlo_replay_values import Unsupported, int_list, tensor_type

import hlodsl as hd
from hlodsl import ops


@_handler("stablehlo.constant")
def _constant(op, args, env, ctx):
    from stablehlo_replay_values import dense
    value = ctx.host[op.results[0]] = dense(op.literal, op.literal_type)
    if id(op) in ctx.constants:
        return ctx.constants[id(op)]
    # A constant inside a region stays a constant: a sub-computation cannot capture a
    # parameter of the enclosing program.
    return ops.Constant(value)()


@_handler("stablehlo.compare")
def _compare(op, args, env, ctx):
    words = op.words or [_enum(op.attrs["comparison_direction"])]
    kind = words[1] if len(words) > 1 else (
        _enum(op.attrs["compare_type"]) if "compare_type" in op.attrs else None)
    return ops.Compare(words[0], kind)(*args)


def _static_operands(op, ctx, positions) -> list:
    """The numpy values of shape operands of a dynamic op, which must be constants.

    StableHLO's shape refinement (run before XLA sees a program) turns a dynamic op
    whose shape operands are constants and whose result type is static into its
    static form; the replay does the same, and refuses any other dynamic op."""
    values = []
    for i in positions:
        name = op.operands[i]
        if name not in ctx.host:
            raise Unsupported("unsupported-op", f"{op.name} with a shape operand ({name}) "
                              "that is not a constant: dynamic shapes")
        values.append(ctx.host[name])
    return values


@_handler("stablehlo.get_dimension_size")
def _get_dimension_size(op, args, env, ctx):
    # A static dimension's size is a constant (XLA folds get-dimension-size so too).
    size = args[0].shape[int(_attr(op, "dim", "dimension"))]
    return ops.Constant(np.asarray(size, _out(op)[1].np_dtype))()


@_handler("stablehlo.dynamic_iota")
def _dynamic_iota(op, args, env, ctx):
    _static_operands(op, ctx, [0])
    return _iota(op, [], env, ctx)


@_handler("stablehlo.dynamic_reshape")
def _dynamic_reshape(op, args, env, ctx):
    _static_operands(op, ctx, [1])
    return ops.Reshape(_out(op)[0])(args[0])


@_handler("stablehlo.dynamic_pad")
def _dynamic_pad(op, args, env, ctx):
    low, high, interior = (tuple(int(v) for v in a) for a in _static_operands(op, ctx, [2, 3, 4]))
    return ops.Pad(low, high, interior)(args[0], args[1])


@_handler("stablehlo.iota")
def _iota(op, args, env, ctx):
    shape, etype = _out(op)
    return ops.Iota(etype, shape, int(_attr(op, "dim", "iota_dimension")))()


@_handler("stablehlo.convert")
def _convert(op, args, env, ctx):
    return ops.Convert(_out(op)[1])(*args)


@_handler("stablehlo.bitcast_convert")
def _bitcast(op, args, env, ctx):
    if hd.pred in (tensor_type(op.in_types[0])[1], _out(op)[1]):
        raise Unsupported("unsupported-type", "bitcast_convert of i1: HLO's pred has no "
                          "1-bit layout to reinterpret")
    return ops.BitcastConvert(_out(op)[1])(*args)


@_handler("stablehlo.broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim")
def _broadcast(op, args, env, ctx):
    shape, dims = _out(op)[0], _ints(op, "dims", "broadcast_dimensions")
    x = args[0]
    _static_operands(op, ctx, range(1, len(args)))
    # StableHLO expands an operand dim of size 1 to any size; HLO's broadcast does not:
    # reshape those dims away first (what XLA's StableHLO-to-HLO conversion emits).
    keep = [i for i, d in enumerate(dims) if x.shape[i] == shape[d]]
    if len(keep) != len(dims):
        x = ops.Reshape(tuple(x.shape[i] for i in keep))(x)
        dims = tuple(dims[i] for i in keep)
    return ops.Broadcast(shape, dims)(x)


@_handler("stablehlo.reshape")
def _reshape(op, args, env, ctx):
    return ops.Reshape(_out(op)[0])(*args)


@_handler("stablehlo.transpose")
def _transpose(op, args, env, ctx):
    return ops.Transpose(_ints(op, "dims", "permutation"))(*args)


@_handler("stablehlo.reverse")
def _reverse(op, args, env, ctx):
    return ops.Reverse(_ints(op, "dims", "dimensions"))(*args)


@_handler("stablehlo.slice")
def _slice(op, args, env, ctx):
    if "brackets" in op.attrs:  # pretty form: %x [0:2, 1:4:2]
        starts, limits, strides = [], [], []
        for item in _split_top(op.attrs["brackets"][1:-1]):
            parts = [int(p) for p in item.split(":")]
            starts.append(parts[0])
            limits.append(parts[1])
            strides.append(parts[2] if len(parts) > 2 else 1)
        return ops.Slice(tuple(starts), tuple(limits), tuple(strides))(*args)
    starts = _ints(op, "start_indices")
    return ops.Slice(starts, _ints(op, "limit_indices"),
                     _ints(op, "strides", default=(1,) * len(starts)))(*args)


@_handler("stablehlo.concatenate")
def _concatenate(op, args, env, ctx):
    return ops.Concatenate(int(_attr(op, "dim", "dimension")))(*args)


@_handler("stablehlo.pad")
def _pad(op, args, env, ctx):
    return ops.Pad(_ints(op, "low", "edge_padding_low"), _ints(op, "high", "edge_padding_high"),
                   _ints(op, "interior", "interior_padding"))(*args)


@_handler("stablehlo.dynamic_slice")
def _dynamic_slice(op, args, env, ctx):
    return ops.DynamicSlice(_ints(op, "sizes", "slice_sizes"))(*args)


@_handler("stablehlo.dynamic_update_slice")
def _dynamic_update_slice(op, args, env, ctx):
    return ops.DynamicUpdateSlice()(*args)


def _dot_algorithm(text: str | None) -> str | None:
    if text is None:
        return None
    fields = _struct(text)
    lhs, rhs, acc = (fields[k] for k in ("lhs_precision_type", "rhs_precision_type",
                                         "accumulation_type"))
    n = int(fields.get("num_primitive_operations", "1"))
    name = "dot_" + "_".join("any_f8" if t.startswith("f8") else t for t in (lhs, rhs, acc))
    return name + (f"_x{n}" if n > 1 else "")


@_handler("stablehlo.dot_general")
def _dot_general(op, args, env, ctx):
    if "dot_dimension_numbers" in op.attrs:
        dims = _struct(op.attrs["dot_dimension_numbers"])
        get = lambda k: int_list(dims.get(k, "[]"))
        lb, rb = get("lhs_batching_dimensions"), get("rhs_batching_dimensions")
        lc, rc = get("lhs_contracting_dimensions"), get("rhs_contracting_dimensions")
    else:
        lb, rb = (int_list(p) for p in _attr(op, "batching_dims", default="[]x[]").split("x"))
        lc, rc = (int_list(p) for p in _attr(op, "contracting_dims", default="[]x[]").split("x"))
    out = _out(op)[1]
    in_dtype = tensor_type(op.in_types[0])[1] if op.in_types else out
    return ops.Dot(lc, rc, lb, rb, preferred_element_type=None if out == in_dtype else out,
                   algorithm=_dot_algorithm(_attr(op, "algorithm")))(*args)


def _window(text: str | None) -> dict[str, str]:
    if text is None:
        return {}
    return {k.strip(): v.strip() for k, _, v in
            (item.partition("=") for item in _split_top(text.strip()[1:-1]))}




@_handler("stablehlo.convolution", "stablehlo.dynamic_conv")
def _convolution(op, args, env, ctx):
    if "dim_numbers" in op.attrs:  # pretty form
        numbers = op.attrs["dim_numbers"]
        window = _window(op.attrs.get("window"))
    else:  # generic form: dimension_numbers = #stablehlo.conv<...>, window fields as arrays
        numbers = op.attrs["dimension_numbers"]
        numbers = numbers[numbers.index("<") + 1:numbers.rindex(">")]
        names = {"stride": "window_strides", "pad": "padding", "lhs_dilate": "lhs_dilation",
                 "rhs_dilate": "rhs_dilation", "reverse": "window_reversal"}
        window = {k: op.attrs[v] for k, v in names.items() if v in op.attrs}
    if op.name == "stablehlo.dynamic_conv":
        window["pad"] = str(_static_operands(op, ctx, [2])[0].tolist())
        args = args[:2]
    labels = [re.sub(r"[\s,\[\]]", "", p) for p in re.split(r"x|->", numbers)]
    get = window.get
    n = len(labels[0]) - 2
    if get("reverse") and any(v in ("1", "true") for v in re.findall(r"\w+", get("reverse"))):
        raise Unsupported("unsupported-op", "convolution window reversal")
    ones = (1,) * n
    return ops.Convolution(
        window_strides=int_list(get("stride")) if get("stride") else ones,
        padding=_pairs(get("pad"), n),
        lhs_dilation=int_list(get("lhs_dilate")) if get("lhs_dilate") else ones,
        rhs_dilation=int_list(get("rhs_dilate")) if get("rhs_dilate") else ones,
        lhs_spec=labels[0], rhs_spec=labels[1], out_spec=labels[2],
        feature_group_count=int(_attr(op, "feature_group_count", default="1")),
        batch_group_count=int(_attr(op, "batch_group_count", default="1")),
        preferred_element_type=_out(op)[1] if _out(op)[1] != tensor_type(op.in_types[0])[1]
        else None)(*args)


@_handler("stablehlo.gather", "stablehlo.dynamic_gather")
def _gather(op, args, env, ctx):
    d = _struct(op.attrs["dimension_numbers"])
    get = lambda k: int_list(d.get(k, "[]"))
    if op.name == "stablehlo.dynamic_gather":
        sizes = tuple(int(v) for v in _static_operands(op, ctx, [2])[0])
        args = args[:2]
    else:
        sizes = _ints(op, "slice_sizes")
    return ops.Gather(get("offset_dims"), get("collapsed_slice_dims"), get("start_index_map"),
                      int(d["index_vector_dim"]), sizes,
                      get("operand_batching_dims"), get("start_indices_batching_dims"),
                      _bool(op, "indices_are_sorted"))(*args)


@_handler("stablehlo.tuple")
def _tuple(op, args, env, ctx):
    return tuple(args)


@_handler("stablehlo.get_tuple_element")
def _get_tuple_element(op, args, env, ctx):
    index = _attr(op, "index")
    index = int_list(op.attrs["brackets"])[0] if index is None else int(index)
    return [args[0][index]]


@_handler("stablehlo.optimization_barrier")
def _barrier(op, args, env, ctx):
    return list(ops.OptimizationBarrier()(*args))


@_handler("stablehlo.fft")
def _fft(op, args, env, ctx):
    kind = _attr(op, "type", "fft_type")
    return ops.Fft(_enum(kind), _ints(op, "length", "fft_length"))(*args)


@_handler("stablehlo.triangular_solve")
def _triangular_solve(op, args, env, ctx):
    return ops.TriangularSolve(_bool(op, "left_side"), _bool(op, "lower"),
                               _bool(op, "unit_diagonal"),
                               _enum(_attr(op, "transpose_a")))(*args)


@_handler("stablehlo.cholesky")
def _cholesky(op, args, env, ctx):
    return ops.Cholesky(_bool(op, "lower"))(*args)


@_handler("stablehlo.reduce_precision")
def _reduce_precision(op, args, env, ctx):
    fmt = _attr(op, "format")
    if fmt is not None:
        e, m = (int(v) for v in re.fullmatch(r"e(\d+)m(\d+)", fmt).groups())
    else:
        e, m = int(op.attrs["exponent_bits"]), int(op.attrs["mantissa_bits"])
    return ops.ReducePrecision(e, m)(*args)


@_handler("stablehlo.replica_id")
def _replica_id(op, args, env, ctx):
    return ops.ReplicaId()()


@_handler("stablehlo.partition_id")
def _partition_id(op, args, env, ctx):
    return ops.PartitionId()()


@_handler("stablehlo.after_all")
def _after_all(op, args, env, ctx):
    return ops.AfterAll()(*args)


