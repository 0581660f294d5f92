"""HLO instructions read back into hlodsl ops: each opcode's attributes -> the op's fields.

The inverse of each op's ``attributes`` (``ops/*.py``): ``read_op`` takes one
instruction of HLO text (``hlodsl.introspect.hlo_text.Instruction``) with its operand and
result types and returns ``apply(values)``, which calls the op on the values of
its operands. Ops without static operands (``add``, ``tanh``, ``clamp``, ...)
need no reader: the registry's class is called as is. Which opcodes can be
read is ``importable_opcodes()``; ``NOT_IMPORTABLE`` says why the others cannot.
The text itself (types, attributes, literals) is read by ``hlodsl.hlo_text``.

>>> "dot" in importable_opcodes() and "bitcast" in NOT_IMPORTABLE
True
"""

from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple

import attrs

from hlodsl import ops
from hlodsl.introspect.hlo_text import HloComputation, Instruction, parse_attributes, read_literal, split_top
from hlodsl.ir.op import Composite, registry
from hlodsl.ir.structural import Constant
from hlodsl.ops.custom_call import is_known_target
from hlodsl.arrays.types import TupleType

__all__ = ["NOT_IMPORTABLE", "Reading", "UnsupportedInstruction", "importable_opcodes",
           "read_op", "trip_count"]


class UnsupportedInstruction(Exception):
    """An instruction hlodsl has no op for (the message says why)."""


#: Opcodes XLA may print that import_hlo does not read, and why.
NOT_IMPORTABLE = {
    "bitcast": "a layout-level reinterpretation: import the module before XLA's layout "
               "passes (a jax Lowered stage, not a Compiled one)",
    "sharding-constraint": "hlodsl's sharding annotations print as custom-calls of XLA's "
                           "sharding targets, which import_hlo does not read back",
    "result-sharding": "printed as a sharding custom-call (see sharding-constraint)",
    "global-to-local": "printed as a sharding custom-call (see sharding-constraint)",
    "local-to-global": "printed as a sharding custom-call (see sharding-constraint)",
    "manual-computation": "printed as a call with Shardy attributes, not read back",
    "host-callback": "a Python function called from the program: printed as a custom-call "
                     "of jaxlib's Python-callback target, which needs the function itself "
                     "(the text only names it)",
}


# -- attribute values ---------------------------------------------------------------------

def _dims(value: str) -> tuple[int, ...]:
    return tuple(int(v) for v in value.strip("{}").split(",") if v.strip())


def _flag(value: str | None) -> bool:
    return value == "true"


def _groups(value: str) -> tuple:
    if not value.startswith("{"):
        raise UnsupportedInstruction(f"replica groups written as {value!r} (iota form)")
    inner = value[1:-1].strip()
    return tuple(_dims(g) for g in re.findall(r"\{[^{}]*\}", inner))


def _window(value: str | None, rank: int) -> dict[str, tuple]:
    """``window={size=2x2 stride=... pad=lo_hi x ... lhs_dilate=... rhs_dilate=...}``."""
    fields = dict(part.split("=", 1) for part in (value or "{}").strip("{}").split() if part)

    def xs(key: str, default: int) -> tuple[int, ...]:
        return tuple(int(v) for v in fields[key].split("x")) if key in fields \
            else (default,) * rank

    pad = tuple(tuple(int(v) for v in p.split("_")) for p in fields["pad"].split("x")) \
        if "pad" in fields else ((0, 0),) * rank
    return {"size": xs("size", 1), "stride": xs("stride", 1), "pad": pad,
            "lhs_dilate": xs("lhs_dilate", 1), "rhs_dilate": xs("rhs_dilate", 1)}


def _precision(a: dict) -> tuple[str, str] | None:
    value = a.get("operand_precision")
    return None if value is None else tuple(p.lower() for p in split_top(value.strip("{}")))


# -- one instruction ------------------------------------------------------------------------


class Reading(NamedTuple):
    """What a reader gets: the instruction, its operand types, result type, computations."""

    inst: Instruction
    operand_types: tuple
    result_type: Any
    function: Callable[[str], Callable]   # computation name -> its Python function
    caller: HloComputation                # the computation the instruction is in
    computations: dict                    # name -> HloComputation, the whole module

    @property
    def attrs(self) -> dict[str, str]:
        return parse_attributes(self.inst.attributes)

    def computation(self, key: str) -> Callable:
        value = self.attrs.get(key)
        if value is None:
            raise ValueError(f"no {key}= attribute")
        return self.function(value.lstrip("%"))

    def computation_list(self, key: str) -> tuple:
        return tuple(self.function(n.strip().lstrip("%"))
                     for n in self.attrs[key].strip("{}").split(",") if n.strip())


def _op(cls_or_op) -> Callable:
    return lambda values: cls_or_op(*values)


def _spread(op) -> Callable:
    """The op applied to the elements of its one tuple operand (while, opt-barrier)."""
    return lambda values: op(*values[0])


def _first_dim(a: dict, key: str = "dimensions") -> int:
    dims = _dims(a[key])
    if len(dims) != 1:
        raise UnsupportedInstruction(f"{key}={a[key]}: hlodsl takes one dimension")
    return dims[0]


def _dtype_if_other(result, operand) -> Any:
    return None if result.dtype is operand.dtype else result.dtype


def _read_constant(r: Reading):
    text = r.inst.text
    start = text.index("constant(") + len("constant")
    depth, k = 0, start
    for k in range(start, len(text)):
        depth += text[k] == "("
        depth -= text[k] == ")"
        if depth == 0:
            break
    value = read_literal(text[start + 1:k], r.result_type)
    op = Constant(value)
    return lambda values: op()


def _read_convolution(r: Reading):
    a = r.attrs
    lhs = r.operand_types[0]
    rank = lhs.rank - 2
    w = _window(a.get("window"), rank)
    labels = a["dim_labels"]
    lhs_l, rest = labels.split("_", 1)
    rhs_l, out_l = rest.split("->")
    return _op(ops.Convolution(
        window_strides=w["stride"], padding=w["pad"], lhs_dilation=w["lhs_dilate"],
        rhs_dilation=w["rhs_dilate"], lhs_spec=lhs_l, rhs_spec=rhs_l, out_spec=out_l,
        feature_group_count=int(a.get("feature_group_count", 1)),
        batch_group_count=int(a.get("batch_group_count", 1)),
        preferred_element_type=_dtype_if_other(r.result_type, lhs), precision=_precision(a)))


def _read_custom_call(r: Reading):
    a = r.attrs
    target = a["custom_call_target"].strip('"')
    if not is_known_target(target):
        raise UnsupportedInstruction(
            f"custom-call target {target!r} is not one hlodsl knows how to run (known: "
            "targets registered with hlodsl.ops.custom_call.register_custom_call_target)")
    api = a.get("api_version", "API_VERSION_ORIGINAL")
    config = a.get("backend_config", "")
    if config.startswith('"'):
        config = config[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    layouts = None
    if "operand_layout_constraints" in a:
        layouts = tuple(_dims(m) for m in re.findall(r"\{[\d,]*\}",
                                                     a["operand_layout_constraints"]))
    # jax's LAPACK calls write column-major results ({0,1}): declared as such, so XLA
    # copies them to the layouts their users read (read row-major, they would come
    # back transposed, silently).
    leaves = _array_layouts(r.inst.type)
    if not any(lay is not None and lay != tuple(range(len(lay) - 1, -1, -1)) for lay in leaves):
        leaves = None
    # Results written into an operand's buffer (jax's GPU solvers), and the frontend
    # attributes a target reads (num_batch_dims); XLA's own sharding ones (xla.sdy.*)
    # are the partitioner's, which hlodsl's import does not carry.
    aliases = tuple((_dims(f"{{{o}}}"), int(k), _dims(f"{{{i}}}")) for o, k, i in _ALIAS.findall(
        a.get("output_to_operand_aliasing", ""))) or None
    front = {k: v for k, v in _FRONTEND.findall(a.get("frontend_attributes", ""))
             if not k.startswith("xla.sdy.")} or None
    return _op(ops.CustomCall(target, r.result_type, config,
                              _flag(a.get("custom_call_has_side_effect")), api, layouts,
                              leaves, aliases, front))


_ALIAS = re.compile(r"\{([\d,\s]*)\}:\s*\((\d+),\s*\{([\d,\s]*)\}\)")
_FRONTEND = re.compile(r'([\w.]+)="((?:[^"\\]|\\.)*)"')


_ARRAY = re.compile(r"(\w+)\[([^\]]*)\](?:\{([^}]*)\})?")


def _array_layouts(text: str) -> list[tuple[int, ...] | None]:
    """The minor-to-major layout of each array in an HLO result type, in order (None:
    not printed, or a token): ``(f64[3,3]{0,1}, s32[])`` -> ``[(0, 1), ()]``."""
    out = []
    for m in _ARRAY.finditer(text):  # hlo_text took out the /*index=N*/ comments
        if m[1] == "token":
            continue
        if m[3] is None:
            out.append(None)
            continue
        dims = m[3].split(":")[0]
        out.append(tuple(int(d) for d in dims.split(",") if d.strip()))
    return out


def _read_reduce_window(r: Reading):
    a = r.attrs
    w = _window(a.get("window"), r.operand_types[0].rank)
    return _op(ops.ReduceWindow(r.computation("to_apply"), w["size"], w["stride"], w["pad"],
                                w["lhs_dilate"], w["rhs_dilate"]))


def _read_select_and_scatter(r: Reading):
    a = r.attrs
    w = _window(a.get("window"), r.operand_types[0].rank)
    return _op(ops.SelectAndScatter(r.computation("select"), r.computation("scatter"),
                                    w["size"], w["stride"], w["pad"]))


def _read_slice(r: Reading):
    parts = re.findall(r"\[([^\]]*)\]", r.attrs["slice"])
    start, limit, stride = [], [], []
    for p in parts:
        nums = [int(v) for v in p.split(":")]
        start.append(nums[0])
        limit.append(nums[1])
        stride.append(nums[2] if len(nums) > 2 else 1)
    return _op(ops.Slice(tuple(start), tuple(limit), tuple(stride)))


def _read_pad(r: Reading):
    low, high, interior = [], [], []
    text = r.attrs["padding"]
    for p in text.split("x") if text else ():
        nums = [int(v) for v in p.split("_")]
        low.append(nums[0])
        high.append(nums[1])
        interior.append(nums[2] if len(nums) > 2 else 0)
    return _op(ops.Pad(tuple(low), tuple(high), tuple(interior)))


def _read_conditional(r: Reading):
    a = r.attrs
    if "branch_computations" in a:
        op = ops.Conditional(branch_computations=r.computation_list("branch_computations"))
    else:
        op = ops.Conditional(r.computation("true_computation"),
                             r.computation("false_computation"))
    return _op(op)


def _read_rng_bit_generator(r: Reading):
    bits = r.result_type.elements[1]
    return _op(ops.RngBitGenerator(r.attrs["algorithm"].removeprefix("rng_"), bits.shape,
                                   bits.dtype))


def _collective(cls, r: Reading, **fields):
    a = r.attrs
    if "channel_id" in a:
        fields["channel_id"] = int(a["channel_id"])
    if "use_global_device_ids" in a and "use_global_device_ids" in attrs.fields_dict(cls):
        fields["use_global_device_ids"] = _flag(a["use_global_device_ids"])
    return _op(cls(**fields))


def _read_all_to_all(r: Reading):
    if "dimensions" not in r.attrs:
        raise UnsupportedInstruction("all-to-all without a split dimension (the tuple form)")
    return _collective(ops.AllToAll, r, dimension=_first_dim(r.attrs),
                       replica_groups=_groups(r.attrs.get("replica_groups", "{}")))


def _constant_int(comp: HloComputation, name: str) -> int | None:
    """The value of instruction ``name`` of ``comp`` if it is an integer scalar constant."""
    inst = next((i for i in comp.instructions if i.name == name), None)
    if inst is None or inst.opcode != "constant" or not re.fullmatch(r"[su]\d+\[\]", inst.type):
        return None
    return int(inst.text[inst.text.index("constant(") + 9:].split(")")[0])


def _element(comp: HloComputation, name: str) -> int | None:
    """``k`` where instruction ``name`` is ``get-tuple-element(parameter(0)), index=k``."""
    by = {i.name: i for i in comp.instructions}
    inst = by.get(name)
    if inst is None or inst.opcode != "get-tuple-element":
        return None
    src = by.get(inst.operands[0])
    if src is None or src.opcode != "parameter":
        return None
    return int(parse_attributes(inst.attributes)["index"])


def trip_count(r: Reading) -> int | None:
    """The static trip count of a counted ``while`` (as jax lowers scan and fori_loop).

    A counted loop: state element ``k`` starts at an integer constant ``a``, the
    body adds the constant 1 to it, and the condition is ``element k < b`` for a
    constant ``b``. None for any other loop (its trip count is data).
    """
    a = parse_attributes(r.inst.attributes)
    cond = r.computations.get(a.get("condition", "").lstrip("%"))
    body = r.computations.get(a.get("body", "").lstrip("%"))
    if cond is None or body is None:
        return None
    root = next((i for i in cond.instructions if i.root), None)
    if root is None or root.opcode != "compare" or \
            parse_attributes(root.attributes).get("direction") != "LT":
        return None
    k = _element(cond, root.operands[0])
    bound = _constant_int(cond, root.operands[1])
    if k is None or bound is None:
        return None
    init = next((i for i in r.caller.instructions if i.name == r.inst.operands[0]), None)
    if init is None or init.opcode != "tuple":
        return None
    start = _constant_int(r.caller, init.operands[k])
    body_root = next((i for i in body.instructions if i.root), None)
    if start is None or body_root is None or body_root.opcode != "tuple":
        return None
    step = next((i for i in body.instructions if i.name == body_root.operands[k]), None)
    if step is None or step.opcode != "add" or \
            sorted([_element(body, o) == k for o in step.operands]) != [False, True]:
        return None
    one = [o for o in step.operands if _element(body, o) != k][0]
    if _constant_int(body, one) != 1:
        return None
    return max(0, bound - start)


def _read_while(r: Reading):
    """A counted loop becomes a ``fori_loop`` of static length, which has a reverse-mode
    rule (``hlodsl.transforms.scan_ad``); any other loop stays a ``While``."""
    condition, body = r.computation("condition"), r.computation("body")
    if not isinstance(r.operand_types[0], TupleType):
        # An array state (jax's loops over one array): hlodsl's While carries a tuple.
        def cond1(s):
            return condition(s[0])

        def body1(s):
            return (body(s[0]),)

        cond1.__name__, body1.__name__ = condition.__name__, body.__name__
        loop = ops.While(cond1, body1)
        return lambda values: loop(values[0])[0]
    trips = trip_count(r)
    if trips is None:
        return _spread(ops.While(condition, body))
    from .control import fori_loop

    def step(_, state):
        return tuple(body(tuple(state)))

    step.__name__ = step.__qualname__ = body.__name__
    return lambda values: fori_loop(0, trips, step, tuple(values[0]))


def _fused(r: Reading):
    fn = r.computation("calls")
    return lambda values: fn(*values)


#: opcode -> reader(Reading) -> apply(values); opcodes whose op has no static operands
#: need none (see ``read_op``).
READERS: dict[str, Callable[[Reading], Callable]] = {
    "parameter": lambda r: None,
    "constant": _read_constant,
    "tuple": lambda r: tuple,
    "get-tuple-element": lambda r: (lambda values, i=int(r.attrs["index"]): values[0][i]),
    "compare": lambda r: _op(ops.Compare(r.attrs["direction"], r.attrs.get("type"))),
    "convert": lambda r: _op(ops.Convert(r.result_type.dtype)),
    "bitcast-convert": lambda r: _op(ops.BitcastConvert(r.result_type.dtype)),
    "broadcast": lambda r: _op(ops.Broadcast(r.result_type.shape,
                                             _dims(r.attrs.get("dimensions", "{}")))),
    "reshape": lambda r: _op(ops.Reshape(r.result_type.shape)),
    "transpose": lambda r: _op(ops.Transpose(_dims(r.attrs["dimensions"]))),
    "reverse": lambda r: _op(ops.Reverse(_dims(r.attrs["dimensions"]))),
    "concatenate": lambda r: _op(ops.Concatenate(_first_dim(r.attrs))),
    "iota": lambda r: _op(ops.Iota(r.result_type.dtype, r.result_type.shape,
                                   int(r.attrs["iota_dimension"]))),
    "dot": lambda r: _op(ops.Dot(
        _dims(r.attrs.get("lhs_contracting_dims", "{}")),
        _dims(r.attrs.get("rhs_contracting_dims", "{}")),
        _dims(r.attrs.get("lhs_batch_dims", "{}")), _dims(r.attrs.get("rhs_batch_dims", "{}")),
        _dtype_if_other(r.result_type, r.operand_types[0]), r.attrs.get("algorithm"),
        _precision(r.attrs))),
    "convolution": _read_convolution,
    "slice": _read_slice,
    "dynamic-slice": lambda r: _op(ops.DynamicSlice(_dims(r.attrs["dynamic_slice_sizes"]))),
    "pad": _read_pad,
    "gather": lambda r: _op(ops.Gather(
        _dims(r.attrs["offset_dims"]), _dims(r.attrs["collapsed_slice_dims"]),
        _dims(r.attrs["start_index_map"]), int(r.attrs["index_vector_dim"]),
        _dims(r.attrs["slice_sizes"]), _dims(r.attrs.get("operand_batching_dims", "{}")),
        _dims(r.attrs.get("start_indices_batching_dims", "{}")),
        _flag(r.attrs.get("indices_are_sorted")))),
    "scatter": lambda r: _op(ops.Scatter(
        r.computation("to_apply"), _dims(r.attrs["update_window_dims"]),
        _dims(r.attrs["inserted_window_dims"]), _dims(r.attrs["scatter_dims_to_operand_dims"]),
        int(r.attrs["index_vector_dim"]), _dims(r.attrs.get("input_batching_dims", "{}")),
        _dims(r.attrs.get("scatter_indices_batching_dims", "{}")),
        _flag(r.attrs.get("indices_are_sorted")), _flag(r.attrs.get("unique_indices")))),
    "reduce": lambda r: _op(ops.Reduce(r.computation("to_apply"),
                                       _dims(r.attrs["dimensions"]))),
    "reduce-window": _read_reduce_window,
    "select-and-scatter": _read_select_and_scatter,
    "map": lambda r: _op(ops.Map(r.computation("to_apply"))),
    "call": lambda r: _op(ops.Call(r.computation("to_apply"))),
    "fusion": _fused,
    "while": _read_while,
    "opt-barrier": lambda r: _spread(ops.OptimizationBarrier()),
    "conditional": _read_conditional,
    "sort": lambda r: _op(ops.Sort(r.computation("to_apply"), _first_dim(r.attrs),
                                   _flag(r.attrs.get("is_stable")))),
    "topk": lambda r: _op(ops.TopK(int(r.attrs["k"]), _flag(r.attrs.get("largest", "true")))),
    "fft": lambda r: _op(ops.Fft(r.attrs["fft_type"], _dims(r.attrs["fft_length"]))),
    "cholesky": lambda r: _op(ops.Cholesky(_flag(r.attrs.get("lower", "false")))),
    "triangular-solve": lambda r: _op(ops.TriangularSolve(
        _flag(r.attrs.get("left_side")), _flag(r.attrs.get("lower")),
        _flag(r.attrs.get("unit_diagonal")), r.attrs.get("transpose_a", "NO_TRANSPOSE"))),
    "reduce-precision": lambda r: _op(ops.ReducePrecision(int(r.attrs["exponent_bits"]),
                                                          int(r.attrs["mantissa_bits"]))),
    "rng": lambda r: _op(ops.Rng(r.attrs["distribution"].removeprefix("rng_"),
                                 r.result_type.shape)),
    "rng-bit-generator": _read_rng_bit_generator,
    "batch-norm-training": lambda r: _op(ops.BatchNormTraining(
        float(r.attrs["epsilon"]), int(r.attrs["feature_index"]))),
    "batch-norm-inference": lambda r: _op(ops.BatchNormInference(
        float(r.attrs["epsilon"]), int(r.attrs["feature_index"]))),
    "batch-norm-grad": lambda r: _op(ops.BatchNormGrad(
        float(r.attrs["epsilon"]), int(r.attrs["feature_index"]))),
    "custom-call": _read_custom_call,
    "all-reduce": lambda r: _collective(
        ops.AllReduce, r, computation=r.computation("to_apply"),
        replica_groups=_groups(r.attrs.get("replica_groups", "{}"))),
    "all-gather": lambda r: _collective(
        ops.AllGather, r, dimension=_first_dim(r.attrs),
        replica_groups=_groups(r.attrs.get("replica_groups", "{}"))),
    "reduce-scatter": lambda r: _collective(
        ops.ReduceScatter, r, computation=r.computation("to_apply"),
        dimension=_first_dim(r.attrs), replica_groups=_groups(r.attrs.get("replica_groups", "{}"))),
    "all-to-all": _read_all_to_all,
    "collective-permute": lambda r: _collective(
        ops.CollectivePermute, r, source_target_pairs=_groups(r.attrs["source_target_pairs"])),
    "collective-broadcast": lambda r: _collective(
        ops.CollectiveBroadcast, r, replica_groups=_groups(r.attrs.get("replica_groups", "{}"))),
}


def _without_static_operands(cls) -> bool:
    return not any(f.init for f in attrs.fields(cls)) if attrs.has(cls) else True


def read_op(r: Reading) -> Callable | None:
    """``apply(values)`` for instruction ``r.inst`` (None for a parameter)."""
    opcode = r.inst.opcode
    if opcode in NOT_IMPORTABLE:
        raise UnsupportedInstruction(NOT_IMPORTABLE[opcode])
    reader = READERS.get(opcode)
    if reader is not None:
        return reader(r)
    cls = registry().get(opcode)
    if cls is None:
        raise UnsupportedInstruction("hlodsl has no op for this opcode (hlodsl.registry() "
                                     "lists the ones it has)")
    if issubclass(cls, Composite) or not _without_static_operands(cls):
        raise UnsupportedInstruction(f"no reader for the static operands of {cls.__name__}")
    return _op(cls())


def importable_opcodes() -> list[str]:
    """The opcodes ``import_hlo`` reads: every registered op that prints as itself."""
    out = set(READERS) - {"fusion"}
    for opcode, cls in registry().items():
        if cls.__module__.startswith("hlodsl.") and not issubclass(cls, Composite) \
                and opcode not in NOT_IMPORTABLE and _without_static_operands(cls):
            out.add(opcode)
    return sorted(out | {"fusion"})

