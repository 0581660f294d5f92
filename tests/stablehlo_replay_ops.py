"""StableHLO ops (as parsed by ``stablehlo_replay_parser``) mapped onto ``hlodsl.ops``.

``run_ops(ops, env, ctx)`` evaluates a list of parsed ops on hlodsl values
(symbolic while a case is staged): each ``stablehlo.*`` op becomes one
hlodsl op call with its static operands read from the op's attributes, a
region becomes a Python callable that hlodsl stages into a sub-computation,
and ``check.*`` ops record the values to compare. An op or a feature hlodsl
lacks raises ``Unsupported``.

>>> "stablehlo.add" in HANDLERS, "stablehlo.frobnicate" in HANDLERS
(True, False)
"""

from __future__ import annotations

import re

from stablehlo_replay_parser import Op, Region, _split_top
from stablehlo_replay_values import Unsupported, element, int_list, tensor_type

import hlodsl as hd
from hlodsl import ops

__all__ = ["HANDLERS", "UNSUPPORTED_OPS", "Context", "run_ops"]


class Context:
    """What one case's staging shares: its functions, constants and checked values."""

    def __init__(self, funcs, constants):
        self.funcs = funcs            # name -> parser Func
        self.constants = constants    # id(op) -> staged value (a parameter)
        self.checks: list = []        # (op, number of values) in program order
        self.outputs: list = []       # the values the checks read, flattened
        self.all_values: list = []    # every array result (returned if nothing is checked)
        self.host: dict = {}          # SSA name -> numpy value, for each constant


# Ops hlodsl does not offer, or that need what one staged program cannot give.
UNSUPPORTED_OPS = {
    "interpreter.probe": "the reference interpreter's instrumentation",
    "interpreter.print": "the reference interpreter's printing (checked by FileCheck)",
    "check.expect_serialized_eq": "the reference interpreter's instrumentation",
    "stablehlo.infeed": "host streaming (infeed)", "stablehlo.outfeed": "host streaming",
    "stablehlo.send": "host/device channels", "stablehlo.recv": "host/device channels",
    "stablehlo.uniform_quantize": "quantized types", "stablehlo.uniform_dequantize": "quantized",
    "chlo.scan": "chlo.scan",
}


def _attr(op: Op, *names, default=None):
    for name in names:
        if name in op.attrs:
            return op.attrs[name]
    return default


def _ints(op: Op, *names, default=()):
    text = _attr(op, *names)
    return default if text is None else int_list(text)


def _bool(op: Op, name: str, default=False) -> bool:
    text = _attr(op, name)
    return default if text is None else text.strip() == "true"


def _enum(text: str) -> str:
    """``#stablehlo<transpose TRANSPOSE>`` / ``#stablehlo<comparison_direction GT>`` -> the word."""
    return re.findall(r"\w+", text)[-1]


def _out(op: Op, i: int = 0):
    return tensor_type(op.out_types[i])


def _struct(text: str) -> dict[str, str]:
    """``#stablehlo.gather<a = [1], b = 2>`` or ``<k = v, ...>`` as a dict of raw values."""
    inner = text[text.index("<") + 1:text.rindex(">")]
    return {k.strip(): v.strip() for k, _, v in
            (item.partition("=") for item in _split_top(inner))}


def _pairs(text: str | None, n: int):
    if text is None:
        return ((0, 0),) * n
    flat = int_list(text)
    return tuple(zip(flat[0::2], flat[1::2]))


def region_fn(region: Region, env: dict, ctx: Context, names=None, tupled=False):
    """A Python function running ``region`` (scalars or a state tuple in, its results out)."""
    arg_names = names if names is not None else [n for n, _ in region.args]

    def fn(*args):
        if tupled:
            args = tuple(args[0])
        local = dict(env)
        local.update(zip(arg_names, args))
        results = run_ops(region.ops, local, ctx)
        return results[0] if len(results) == 1 and not tupled else tuple(results)
    return fn


def run_ops(op_list, env: dict, ctx: Context) -> list:
    """Evaluate ops in order; the values of the closing ``return`` (or [])."""
    for op in op_list:
        if op.name in _RETURNS:
            return [env[name] for name in op.operands]
        handler = HANDLERS.get(op.name)
        if handler is None:
            raise Unsupported("unsupported-op", _why(op.name))
        args = [env[name] for name in op.operands]
        results = handler(op, args, env, ctx)
        if not isinstance(results, (list, tuple)) or op.name == "stablehlo.tuple":
            results = [results]
        for name, value in zip(op.results, results):
            env[name] = value
            if isinstance(value, hd.Array):
                ctx.all_values.append(value)
    return []


HANDLERS: dict = {}
_RETURNS = ("stablehlo.return", "func.return", "return")


def _why(name: str) -> str:
    reason = UNSUPPORTED_OPS.get(name)
    return f"{name}: {reason}" if reason else f"{name}: no mapping to an hlodsl op"


def _handler(*names):
    def register(fn):
        for name in names:
            HANDLERS[name] = fn
        return fn
    return register


_PLAIN = {
    "abs": ops.Abs, "cbrt": ops.Cbrt, "ceil": ops.Ceil, "cosine": ops.Cosine,
    "count_leading_zeros": ops.CountLeadingZeros, "exponential": ops.Exp,
    "exponential_minus_one": ops.Expm1, "floor": ops.Floor, "imag": ops.Imag,
    "is_finite": ops.IsFinite, "log": ops.Log, "log_plus_one": ops.Log1p,
    "logistic": ops.Logistic, "negate": ops.Negate, "not": ops.Not,
    "popcnt": ops.PopulationCount, "real": ops.Real, "round_nearest_afz": ops.RoundNearestAfz,
    "round_nearest_even": ops.RoundNearestEven, "rsqrt": ops.Rsqrt, "sign": ops.Sign,
    "sine": ops.Sine, "sqrt": ops.Sqrt, "tan": ops.Tan, "tanh": ops.Tanh,
    "add": ops.Add, "and": ops.And, "atan2": ops.Atan2, "divide": ops.Divide,
    "maximum": ops.Maximum, "minimum": ops.Minimum, "multiply": ops.Multiply, "or": ops.Or,
    "power": ops.Power, "remainder": ops.Remainder, "shift_left": ops.ShiftLeft,
    "shift_right_arithmetic": ops.ShiftRightArithmetic,
    "shift_right_logical": ops.ShiftRightLogical, "subtract": ops.Subtract, "xor": ops.Xor,
    "complex": ops.Complex, "clamp": ops.Clamp,
    # StableHLO's scalar predicate goes through as is: XLA's HLO select takes one too.
    "select": ops.Select,
}


def _plain(cls):
    """The handler of an op with no static operands: its operands pass straight in."""
    return lambda op, args, env, ctx: cls()(*args)


for _name, _cls in _PLAIN.items():
    HANDLERS[f"stablehlo.{_name}"] = _plain(_cls)
HANDLERS["chlo.mulhi"] = lambda op, args, env, ctx: ops.MulHi()(*args)


@_handler("chlo.ragged_dot")
def _ragged_dot(op, args, env, ctx):
    dims = _struct(op.attrs["ragged_dot_dimension_numbers"])
    get = lambda k: int_list(dims.get(k, "[]"))
    out, in_dtype = _out(op)[1], tensor_type(op.in_types[0])[1]
    return ops.RaggedDot(get("lhs_contracting_dimensions"), get("rhs_contracting_dimensions"),
                         get("lhs_batching_dimensions"), get("rhs_batching_dimensions"),
                         get("lhs_ragged_dimensions"), get("rhs_group_dimensions"),
                         preferred_element_type=None if out == in_dtype else out)(*args)


@_handler("check.expect_eq_const", "check.expect_almost_eq_const")
def _check_const(op, args, env, ctx):
    ctx.checks.append((op, 1))
    ctx.outputs.append(args[0])
    return []


@_handler("check.expect_eq", "check.expect_almost_eq", "check.expect_close")
def _check_pair(op, args, env, ctx):
    ctx.checks.append((op, 2))
    ctx.outputs.extend(args[:2])
    return []


def unsupported_in(op_list) -> Unsupported | None:
    """The first op or element type (in program order) the replay cannot run, if any."""
    def types_of(op):
        yield from (op.in_types or [])
        yield from op.out_types
        if op.literal_type:
            yield op.literal_type
        for region in op.regions:
            yield from (t for _, t in region.args)

    first_op = None
    for op in _walk(op_list):
        for t in types_of(op):
            if op.name == "stablehlo.after_all" and t.startswith("!stablehlo.token"):
                continue  # tokens that only order other tokens: ops.AfterAll makes them
            try:
                if t.startswith(("tensor", "tuple", "!")):
                    tensor_type(t)
                else:
                    element(t)
            except Unsupported as e:
                if e.kind == "unsupported-type":
                    return e
                first_op = first_op or e
        if first_op is None and op.name not in HANDLERS and op.name not in _RETURNS:
            first_op = Unsupported("unsupported-op", _why(op.name))
    return first_op


def _walk(op_list):
    for op in op_list:
        yield op
        for region in op.regions:
            yield from _walk(region.ops)


def constants_of(op_list) -> list:
    """The ``stablehlo.constant`` ops outside regions (they become parameters)."""
    return [op for op in op_list if op.name == "stablehlo.constant"]


# The other op groups register their handlers into HANDLERS when imported.
import stablehlo_replay_collectives  # noqa: F401
import stablehlo_replay_regions  # noqa: F401
import stablehlo_replay_shapes  # noqa: F401
