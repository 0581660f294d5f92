"""The bad-input corpus: what hlodsl must say when it is called wrongly.

Every case is ``Case(area, id, call, expected, patterns)``: calling ``call()``
must raise ``expected`` (a class or a tuple of acceptable classes), and its
message must match every regex in ``patterns`` (searched, case-insensitive).
The patterns spell out what a careful user needs to read in the message:

  (a) the function or op that refused (``Reshape``, ``sum``, ``grad``);
  (b) the offending argument or static operand by name, or the offending
      shapes/types (``axis``, ``f32[3]``);
  (c) what is allowed or expected instead (``non-negative``, ``rank 2``,
      ``floating-point``).

The expectations are written as a serious numerical library should answer
(numpy / the array API / the HLO spec), not as hlodsl answers today.
``tests/test_bad_input_corpus.py`` runs them and classifies each outcome.

Inputs are tiny: a case that hlodsl wrongly accepts compiles at most a small
module, so the whole corpus runs in-process in well under a minute.
"""

from __future__ import annotations

import pickle
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops
from hlodsl.stdlib import models, nn
from generics import Opaque, no_method_arities, public_generics

__all__ = ["Case", "CASES", "AREAS", "Answers", "WrongAnswer"]


@dataclass(frozen=True)
class Case:
    area: str
    id: str
    call: Callable[[], object]
    expected: type | tuple[type, ...]
    patterns: tuple[str, ...]
    op: str | None = None  # the registered op class a case exercises (coverage of the registry)
    owner: str | None = None  # library file that owns the check, where it is not obvious

    @property
    def key(self) -> str:
        return f"{self.area}/{self.id}"


class Answers:
    """The expectation of a case that must *answer*, correctly, rather than raise: its call
    checks what it got against an oracle and raises ``WrongAnswer`` on a stale or wrong
    value (classified "silent": a silent wrong answer)."""


class WrongAnswer(AssertionError):
    """A call answered, wrongly (a cached program run with values it no longer has)."""


def same(got, want, what: str) -> None:
    """Raise ``WrongAnswer`` unless ``got`` equals the oracle's ``want`` (exactly)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want):
        raise WrongAnswer(f"{what}: got {got.tolist()}, the oracle says {want.tolist()}")


CASES: list[Case] = []


def case(area, id, call, expected, *patterns, op=None, owner=None):
    CASES.append(Case(area, id, call, expected, tuple(patterns), op, owner))


# -- what the messages must show ------------------------------------------------------

SE, STE = hd.ShapeError, hd.StagingError
TE, VE, IE = TypeError, ValueError, IndexError
AXIS = (IndexError, ValueError)  # numpy's AxisError is both
SHAPE_OR_VALUE = (hd.ShapeError, ValueError)
#: A call no method of a generic accepts: hd.NoMethodError, a TypeError as numpy raises
#: for operands of the wrong type, naming their types.
DISPATCH = TypeError

_NP = {"f32": "float32", "f64": "float64", "s32": "int32", "u32": "uint32",
       "pred": "bool", "c64": "complex64", "s64": "int64", "u64": "uint64"}


def TD(dt: str, *dims) -> str:
    """The type ``dt[dims]`` as hlodsl prints it, or numpy's dtype next to the shape."""
    hlo = rf"{dt}\[{','.join(map(str, dims))}\]"
    tup = "\\(" + ", ?".join(map(str, dims)) + ("," if len(dims) == 1 else "") + "\\)"
    return rf"(?:{hlo}|{_NP.get(dt, dt)}\W{{0,3}}{tup}|{tup}\W{{0,3}}{_NP.get(dt, dt)})"


def T(dt: str, *dims) -> str:
    """The offending type, or at least its shape (where the element type is not the point)."""
    tup = "\\(" + ", ?".join(map(str, dims)) + ("," if len(dims) == 1 else "") + "\\)"
    return rf"(?:{TD(dt, *dims)}|shapes? {tup})" if not dims else rf"(?:{TD(dt, *dims)}|{tup})"


def w(name: str) -> str:
    """``name`` as a word."""
    return rf"(?<![\w.]){re.escape(name)}(?!\w)" if name[0].isalnum() else re.escape(name)


def either(*alts: str) -> str:
    return "(?:" + "|".join(alts) + ")"


INT = r"\bint(eger)?s?\b"
NONNEG = r"non-?negative|>= ?0|≥ ?0|at least 0|must not be negative"
POS = r"positive|>= ?1|≥ ?1|at least 1|> ?0\b"
FLOATY = r"float|inexact|complex"
INTY = r"integer|\bint\b|\bint\d+"
BOOLY = r"\bbool|\bpred"
CALLABLE = r"callable|function"
ARRAYS = r"hlodsl\.array|hlodsl array|an? array|arrays"
HASHABLE = r"hashable"
PAIR = r"pair|\(.*,.*\)|two"
SAME_SHAPE = r"(same|equal|one|matching) (shapes?|types)|shapes? (must )?(match|agree|be equal)"
SAME_TYPE = r"(same|equal|one|matching) (shapes and )?(element )?types?|" \
            r"element types? (must )?(match|agree|be equal)"
#: What an unknown dtype should be answered with: the supported ones, or where to find them.
DTYPES = r"float32|supported|one of"
BROADCAST = r"broadcast"
#: A window op's padding that crops more than the (dilated) input holds: the padded input
#: would have a negative size. (A window that merely does not fit is legal: StableHLO's
#: is_empty_window gives an empty result, as jax.lax and XLA do.)
CROP = r"negative size|crops? (more|past|below)|may crop at most|at least 0|non-?negative"
SQUARE = r"square|\(\.\.\., ?n, ?n\)|n ?x ?n|\[\.\.\., ?n, ?n\]|minor dimensions .{0,20}equal"


def RANK(n: int) -> str:
    return rf"rank[ -]?{n}\b|rank (of |is )?{n}\b|{n}-?d\b|{n} dim|dimension {n}\b|ndim\W+{n}\b|" \
           rf"\[-{n}, ?{n}\)|-{n} ?<=|{n} (dimensions|axes)"


def ONE_OF(*names: str) -> str:
    return ".*".join(re.escape(n) for n in names)  # all of the allowed names, listed


# -- operands ------------------------------------------------------------------------

def _a(x, dt):
    return hd.array(np.asarray(x, dtype=dt))


F3 = _a([1, 2, 3], np.float32)
F4 = _a([1, 2, 3, 4], np.float32)
F64_3 = _a([1, 2, 3], np.float64)
F23 = _a(np.arange(6).reshape(2, 3), np.float32)
F32m = _a(np.arange(6).reshape(3, 2), np.float32)
F22 = _a([[2, 1], [1, 2]], np.float32)
F33 = _a(np.eye(3) * 2 + 1, np.float32)
F234 = _a(np.zeros((2, 3, 4)), np.float32)
F0 = _a(np.zeros((0,)), np.float32)
F20 = _a(np.zeros((2, 0)), np.float32)
I3 = _a([0, 1, 2], np.int32)
I23 = _a([[0, 1, 2], [1, 2, 0]], np.int32)
U3 = _a([1, 2, 3], np.uint32)
B3 = _a([True, False, True], np.bool_)
C3 = _a([1, 2, 3], np.complex64)
FS = _a(1.5, np.float32)
F64S = _a(1.5, np.float64)
IS = _a(1, np.int32)
BS = _a(True, np.bool_)
IMG = _a(np.zeros((1, 1, 4, 4)), np.float32)  # (N, C, H, W)
IMG_I = _a(np.zeros((1, 1, 4, 4)), np.int32)
K33 = _a(np.ones((1, 1, 3, 3)), np.float32)  # (O, I, kh, kw)
K_C2 = _a(np.ones((1, 2, 3, 3)), np.float32)  # wants 2 input channels
K55 = _a(np.ones((1, 1, 5, 5)), np.float32)
U64_2 = _a([1, 2], np.uint64)
NP3 = np.ones(3, np.float32)


def add(a, b):
    return ops.Add()(a, b)


def lt(a, b):
    return ops.Compare("LT")(a, b)


# == ops: every registered op =========================================================
#
# Elementwise ops come in families: each gets a bad static operand (an array
# passed to the constructor, the classic ``ops.Exp(x)`` for ``ops.Exp()(x)``),
# an operand of an element type the HLO spec forbids, a wrong operand count
# and a Python object where an array belongs.

#: Unary elementwise ops: (an operand of a forbidden element type, what is allowed).
UNARY = {
    "Abs": (U3, r"signed|float|complex"),
    "Negate": (B3, r"int|float|complex|numeric|number"),
    "Sign": (U3, r"signed|float|complex"),
    "Floor": (I3, r"float"),
    "Ceil": (I3, r"float"),
    "RoundNearestEven": (I3, r"float"),
    "RoundNearestAfz": (I3, r"float"),
    "Exp": (I3, FLOATY),
    "Expm1": (I3, FLOATY),
    "Log": (I3, FLOATY),
    "Log1p": (I3, FLOATY),
    "Logistic": (I3, FLOATY),
    "Sqrt": (I3, FLOATY),
    "Rsqrt": (I3, FLOATY),
    "Cbrt": (I3, FLOATY),
    "Tanh": (I3, FLOATY),
    "Sine": (I3, FLOATY),
    "Cosine": (I3, FLOATY),
    "Tan": (I3, FLOATY),
    "Erf": (I3, FLOATY),
    "Sinh": (I3, FLOATY),
    "Cosh": (I3, FLOATY),
    "Asin": (I3, FLOATY),
    "Acos": (I3, FLOATY),
    "Atanh": (I3, FLOATY),
    "Asinh": (I3, FLOATY),
    "Acosh": (I3, FLOATY),
    "Erfc": (I3, FLOATY),
    "ErfInv": (I3, FLOATY),
    "Lgamma": (I3, FLOATY),
    "Digamma": (I3, FLOATY),
    "BesselI0e": (I3, FLOATY),
    "BesselI1e": (I3, FLOATY),
    "Not": (F3, r"bool|pred|int"),
    "IsFinite": (I3, r"float"),
    "CountLeadingZeros": (F3, INTY),
    "PopulationCount": (F3, INTY),
    "Real": (I3, FLOATY),
    "Imag": (I3, FLOATY),
    "Copy": (None, None),
}

#: Binary elementwise ops: (good operand, same-kind operand of another type,
#: an operand of a forbidden kind or None, what is allowed).
_FLOAT_PAIR = (F3, F64_3)
_INT_PAIR = (I3, U3)
BINARY = {
    "Add": (*_FLOAT_PAIR, None, None),
    "Subtract": (*_FLOAT_PAIR, B3, r"int|float|complex|numeric|number"),
    "Multiply": (*_FLOAT_PAIR, None, None),
    "Divide": (*_FLOAT_PAIR, B3, r"int|float|complex|numeric|number"),
    "Remainder": (*_FLOAT_PAIR, B3, r"int|float|numeric|number"),
    "Power": (*_FLOAT_PAIR, B3, r"int|float|complex|numeric|number"),
    "Maximum": (*_FLOAT_PAIR, None, None),
    "Minimum": (*_FLOAT_PAIR, None, None),
    "Atan2": (*_FLOAT_PAIR, I3, FLOATY),
    "And": (*_INT_PAIR, F3, r"bool|pred|int"),
    "Or": (*_INT_PAIR, F3, r"bool|pred|int"),
    "Xor": (*_INT_PAIR, F3, r"bool|pred|int"),
    "ShiftLeft": (*_INT_PAIR, F3, INTY),
    "ShiftRightArithmetic": (*_INT_PAIR, F3, INTY),
    "ShiftRightLogical": (*_INT_PAIR, F3, INTY),
    "Complex": (*_FLOAT_PAIR, I3, r"f32|f64|float"),
    "Igamma": (*_FLOAT_PAIR, I3, FLOATY),
    "Igammac": (*_FLOAT_PAIR, I3, FLOATY),
    "NextAfter": (*_FLOAT_PAIR, I3, FLOATY),
    "MulHi": (*_INT_PAIR, F3, INTY),
}

_NO_STATIC = r"no static operands?|takes no (static )?(operands|arguments|fields)|" \
             r"called on (the )?arrays|call it|\w+\(\)\(\w"
_OPERAND_IS = r"ndarray|numpy|float|list"


def _type_of(a) -> str:
    dt = {"float32": "f32", "float64": "f64", "int32": "s32", "uint32": "u32", "bool": "pred",
          "complex64": "c64"}[np.dtype(a.dtype.np_dtype).name]
    return TD(dt, *a.shape)


for _name, (_bad, _allowed) in UNARY.items():
    _op = getattr(ops, _name)
    _good = I3 if _name in ("Not", "CountLeadingZeros", "PopulationCount") else F3
    case("ops", f"{_name}-static-operand-given-an-array", lambda o=_op: o(F3), TE,
         w(_name), either(T("f32", 3), r"\barray\b", r"operand"), _NO_STATIC, op=_name)
    if _bad is not None:
        case("ops", f"{_name}-forbidden-element-type", lambda o=_op, b=_bad: o()(b), SE,
             w(_name), _type_of(_bad), _allowed, op=_name)
    case("ops", f"{_name}-two-operands", lambda o=_op, g=_good: o()(g, g), TE,
         w(_name), r"\b2\b|got two", r"one operand|1 operand|takes (the )?operands? \(\w+\)|"
         r"exactly one", op=_name)
    case("ops", f"{_name}-numpy-operand", lambda o=_op: o()(NP3), TE,
         w(_name), _OPERAND_IS, ARRAYS, op=_name)

for _name, (_x, _other, _bad, _allowed) in BINARY.items():
    _op = getattr(ops, _name)
    _y = _a(np.ones(4), np.dtype(_x.dtype.np_dtype))
    case("ops", f"{_name}-static-operand-given-an-array", lambda o=_op: o(F3), TE,
         w(_name), either(T("f32", 3), r"\barray\b", r"operand"), _NO_STATIC, op=_name)
    case("ops", f"{_name}-shapes-differ", lambda o=_op, x=_x, y=_y: o()(x, y), SE,
         w(_name), _type_of(_x), _type_of(_y), SAME_SHAPE, op=_name)
    case("ops", f"{_name}-element-types-differ", lambda o=_op, x=_x, y=_other: o()(x, y), SE,
         w(_name), _type_of(_x), _type_of(_other), SAME_TYPE, op=_name)
    if _bad is not None:
        case("ops", f"{_name}-forbidden-element-type", lambda o=_op, b=_bad: o()(b, b), SE,
             w(_name), _type_of(_bad), _allowed, op=_name)
    case("ops", f"{_name}-one-operand", lambda o=_op, x=_x: o()(x), TE,
         w(_name), r"\b1\b|got one|only one", r"two operands|2 operands|takes (the )?operands "
         r"\(\w+, \w+\)", op=_name)
    case("ops", f"{_name}-python-float-operand", lambda o=_op, x=_x: o()(x, 2.0), TE,
         w(_name), r"float", ARRAYS, op=_name)

del _name, _op, _bad, _allowed, _good, _x, _y, _other

# -- structural ops (staging's own, still registered) --------------------------------

case("ops", "Parameter-negative-index", lambda: ops.Parameter(-1), VE,
     w("Parameter"), w("index"), NONNEG, op="Parameter")
case("ops", "Parameter-string-index", lambda: ops.Parameter("x"), TE,
     w("Parameter"), w("index"), INT, op="Parameter")
case("ops", "Parameter-called-on-an-array", lambda: ops.Parameter(0)(F3), TE,
     r"\bparameters?\b", T("f32", 3) + r"|\bcalled\b", r"no operands|takes operands \(\)|"
     r"inside staging|staging creates|created by staging", op="Parameter")
case("ops", "Constant-object-value", lambda: ops.Constant(object()), TE,
     w("Constant"), w("value"), r"numpy|array|number|element type", op="Constant")
case("ops", "Constant-string-value", lambda: ops.Constant(np.array(["a"])), TE,
     w("Constant"), r"<U1|str", r"element type|supported", op="Constant")
case("ops", "Constant-ragged-value", lambda: ops.Constant([[1, 2], [3]]), VE,
     w("Constant"), w("value"), r"ragged|inhomogeneous|rectangular|same length", op="Constant")
case("ops", "Constant-called-on-an-array", lambda: ops.Constant(np.float32(1))(F3), TE,
     w("Constant"), T("f32", 3), r"no operands|takes operands \(\)", op="Constant")
case("ops", "Tuple-of-a-python-float", lambda: ops.Tuple()(F3, 1.0), TE,
     w("Tuple"), r"float", ARRAYS, op="Tuple")
case("ops", "Tuple-static-operand", lambda: ops.Tuple(F3), TE,
     w("Tuple"), either(T("f32", 3), "array", "operand"), _NO_STATIC, op="Tuple")
case("ops", "GetTupleElement-negative-index", lambda: ops.GetTupleElement(-1), VE,
     w("GetTupleElement"), w("index"), NONNEG, op="GetTupleElement")
case("ops", "GetTupleElement-of-an-array", lambda: ops.GetTupleElement(0)(F3), TE,
     w("GetTupleElement"), T("f32", 3), r"tuple", op="GetTupleElement")
case("ops", "GetTupleElement-float-index", lambda: ops.GetTupleElement(0.5), TE,
     w("GetTupleElement"), w("index"), INT, op="GetTupleElement")

# -- tokens and device ids --------------------------------------------------------------

case("ops", "AfterAll-of-an-array", lambda: hd.compile(lambda x: ops.AfterAll()(x) and x)(F3),
     (TE, SE), w("AfterAll"), T("f32", 3), r"token", op="AfterAll")
case("ops", "AfterAll-static-operand", lambda: ops.AfterAll(F3), TE,
     w("AfterAll"), either(T("f32", 3), "array", "operand"), _NO_STATIC, op="AfterAll")
case("ops", "ReplicaId-with-an-operand", lambda: ops.ReplicaId()(F3), TE,
     w("ReplicaId"), T("f32", 3), r"no operands|takes operands \(\)", op="ReplicaId")
case("ops", "PartitionId-with-an-operand", lambda: ops.PartitionId()(F3), TE,
     w("PartitionId"), T("f32", 3), r"no operands|takes operands \(\)", op="PartitionId")
case("ops", "ReplicaId-static-operand", lambda: ops.ReplicaId(0), TE,
     w("ReplicaId"), r"\b0\b|operand", _NO_STATIC, op="ReplicaId")
case("ops", "PartitionId-static-operand", lambda: ops.PartitionId(0), TE,
     w("PartitionId"), r"\b0\b|operand", _NO_STATIC, op="PartitionId")
case("ops", "OptimizationBarrier-python-float", lambda: ops.OptimizationBarrier()(F3, 1.0), TE,
     w("OptimizationBarrier"), r"float", ARRAYS, op="OptimizationBarrier")
case("ops", "OptimizationBarrier-static-operand", lambda: ops.OptimizationBarrier(F3), TE,
     w("OptimizationBarrier"), either(T("f32", 3), "array", "operand"), _NO_STATIC,
     op="OptimizationBarrier")

# -- shape and layout ops ----------------------------------------------------------------

case("ops", "Broadcast-shape-string", lambda: ops.Broadcast("3"), TE,
     w("Broadcast"), w("shape"), INT, op="Broadcast")
case("ops", "Broadcast-shape-float", lambda: ops.Broadcast((2.5, 3)), TE,
     w("Broadcast"), w("shape"), INT, op="Broadcast")
case("ops", "Broadcast-shape-bool", lambda: ops.Broadcast((True, 3)), TE,
     w("Broadcast"), w("shape"), INT, op="Broadcast")
case("ops", "Broadcast-shape-negative", lambda: ops.Broadcast((-1, 3)), VE,
     w("Broadcast"), w("shape"), NONNEG, op="Broadcast")
case("ops", "Broadcast-shape-None", lambda: ops.Broadcast(None), TE,
     w("Broadcast"), w("shape"), INT, op="Broadcast")
case("ops", "Broadcast-dimensions-negative", lambda: ops.Broadcast((3, 4), (-1,)), VE,
     w("Broadcast"), w("dimensions"), NONNEG, op="Broadcast")
case("ops", "Broadcast-dimensions-out-of-range", lambda: ops.Broadcast((3, 4), (5,))(F3),
     (VE, SE),
     w("Broadcast"), w("dimensions"), r"range|< ?2|rank 2|result rank", op="Broadcast")
case("ops", "Broadcast-dimensions-wrong-length", lambda: ops.Broadcast((3, 4), ())(F3), SE,
     w("Broadcast"), w("dimensions"), r"one per|operand dimension|1 entr|" + RANK(1),
     op="Broadcast")
case("ops", "Broadcast-size-mismatch", lambda: ops.Broadcast((4, 2), (0,))(F3), SE,
     w("Broadcast"), T("f32", 3), r"size|match|equal", op="Broadcast")

case("ops", "Reshape-shape-string", lambda: ops.Reshape("abc"), TE,
     w("Reshape"), w("shape"), INT, op="Reshape")
case("ops", "Reshape-shape-float", lambda: ops.Reshape((2.9, 3)), TE,
     w("Reshape"), w("shape"), INT, op="Reshape")
case("ops", "Reshape-shape-bool", lambda: ops.Reshape((True, 3)), TE,
     w("Reshape"), w("shape"), INT, op="Reshape")
case("ops", "Reshape-shape-minus-one", lambda: ops.Reshape((-1, 3)), VE,
     w("Reshape"), w("shape"), NONNEG, op="Reshape")
case("ops", "Reshape-shape-None", lambda: ops.Reshape(None), TE,
     w("Reshape"), w("shape"), INT, op="Reshape")
case("ops", "Reshape-size-differs", lambda: ops.Reshape((4,))(F3), SE,
     w("Reshape"), T("f32", 3), r"size|number of elements|elements", op="Reshape")
case("ops", "Reshape-two-operands", lambda: ops.Reshape((3,))(F3, F3), TE,
     w("Reshape"), r"\b2\b", r"one operand|takes (the )?operands? \(\w+\)", op="Reshape")

case("ops", "Transpose-repeated", lambda: ops.Transpose((0, 0)), VE,
     w("Transpose"), w("permutation"), r"permutation of 0\.\.1|permutation", op="Transpose")
case("ops", "Transpose-float", lambda: ops.Transpose((0.5, 1)), TE,
     w("Transpose"), w("permutation"), INT, op="Transpose")
case("ops", "Transpose-string", lambda: ops.Transpose("10"), TE,
     w("Transpose"), w("permutation"), INT, op="Transpose")
case("ops", "Transpose-None", lambda: ops.Transpose(None), TE,
     w("Transpose"), w("permutation"), INT, op="Transpose")
case("ops", "Transpose-negative", lambda: ops.Transpose((-1, 0)), VE,
     w("Transpose"), w("permutation"), r"permutation|non-?negative", op="Transpose")
case("ops", "Transpose-wrong-length", lambda: ops.Transpose((1, 0))(F234), SE,
     w("Transpose"), T("f32", 2, 3, 4), RANK(3), op="Transpose")

case("ops", "Reverse-negative", lambda: ops.Reverse((-1,)), VE,
     w("Reverse"), w("dimensions"), NONNEG, op="Reverse")
case("ops", "Reverse-repeated", lambda: ops.Reverse((0, 0)), VE,
     w("Reverse"), w("dimensions"), r"repeat|distinct|unique|duplicate", op="Reverse")
case("ops", "Reverse-string", lambda: ops.Reverse(("a",)), TE,
     w("Reverse"), w("dimensions"), INT, op="Reverse")
case("ops", "Reverse-out-of-range", lambda: ops.Reverse((3,))(F23), SE,
     w("Reverse"), T("f32", 2, 3), RANK(2), op="Reverse")

case("ops", "Slice-start-float", lambda: ops.Slice((0.5,), (2,)), TE,
     w("Slice"), w("start_indices"), INT, op="Slice")
case("ops", "Slice-negative-start", lambda: ops.Slice((-1,), (2,)), VE,
     w("Slice"), w("start_indices"), NONNEG, op="Slice")
case("ops", "Slice-zero-stride", lambda: ops.Slice((0,), (2,), (0,)), VE,
     w("Slice"), w("strides"), POS, op="Slice")
case("ops", "Slice-limit-before-start", lambda: ops.Slice((2,), (1,)), VE,
     w("Slice"), r"limit|start", r"<=|less|before|not exceed", op="Slice")
case("ops", "Slice-lengths-differ", lambda: ops.Slice((0, 0), (1,)), VE,
     w("Slice"), r"limit_indices|start_indices", r"one entry per|same length|as many", op="Slice")
case("ops", "Slice-limit-past-end", lambda: ops.Slice((0,), (5,))(F3), SE,
     w("Slice"), T("f32", 3), r"limit|bound|size 3|<= ?3", op="Slice")
case("ops", "Slice-wrong-rank", lambda: ops.Slice((0,), (1,))(F23), SE,
     w("Slice"), T("f32", 2, 3), r"one (entry|index) per dimension|" + RANK(2), op="Slice")
case("ops", "Slice-None-limit", lambda: ops.Slice((0,), None), TE,
     w("Slice"), w("limit_indices"), INT, op="Slice")
case("ops", "Slice-empty-past-the-end", lambda: ops.Slice((4,), (4,))(F3), SE,
     w("Slice"), T("f32", 3), r"limit index 4|\b4\b", r"exceeds|<=|size 3|bound", op="Slice")
case("ops", "Slice-limit-past-end-2d", lambda: ops.Slice((0, 0), (2, 4))(F23), SE,
     w("Slice"), T("f32", 2, 3), r"limit index 4|dimension 1", r"exceeds|<=|size 3", op="Slice")

case("ops", "Pad-negative-interior", lambda: ops.Pad((1,), (1,), (-1,)), VE,
     w("Pad"), w("interior"), NONNEG, op="Pad")
case("ops", "Pad-float-low", lambda: ops.Pad((1.5,), (1,)), TE,
     w("Pad"), w("low"), INT, op="Pad")
case("ops", "Pad-lengths-differ", lambda: ops.Pad((1, 1), (1,)), VE,
     w("Pad"), r"high|low", r"one per|same length|as many|each", op="Pad")
case("ops", "Pad-wrong-rank", lambda: ops.Pad((1,), (1,))(F23, FS), SE,
     w("Pad"), T("f32", 2, 3), r"one per dimension|" + RANK(2), op="Pad")
case("ops", "Pad-value-not-scalar", lambda: ops.Pad((1,), (1,))(F3, F3), SE,
     w("Pad"), T("f32", 3), r"scalar", op="Pad")
case("ops", "Pad-value-type-differs", lambda: ops.Pad((1,), (1,))(F3, IS), SE,
     w("Pad"), T("s32"), SAME_TYPE + r"|element type", op="Pad")
case("ops", "Pad-crops-below-zero", lambda: ops.Pad((-2,), (-2,))(F3, FS), SE,
     w("Pad"), T("f32", 3), r"negative|at least 0|non-?negative|< ?0", op="Pad")
case("ops", "Pad-crops-past-interior-padding",
     lambda: ops.Pad((-3,), (-3,), (1,))(F3, _a(0, np.float32)), SE,
     w("Pad"), T("f32", 3), r"dimension 0|-1", CROP, op="Pad")

case("ops", "Concatenate-dimension-float", lambda: ops.Concatenate(1.5), TE,
     w("Concatenate"), w("dimension"), INT, op="Concatenate")
case("ops", "Concatenate-dimension-bool", lambda: ops.Concatenate(True), TE,
     w("Concatenate"), w("dimension"), INT, op="Concatenate")
case("ops", "Concatenate-dimension-negative", lambda: ops.Concatenate(-1), VE,
     w("Concatenate"), w("dimension"), NONNEG, op="Concatenate")
case("ops", "Concatenate-ranks-differ", lambda: ops.Concatenate(0)(F23, F3), SE,
     w("Concatenate"), T("f32", 2, 3), T("f32", 3), r"rank", op="Concatenate")
case("ops", "Concatenate-dimension-out-of-range", lambda: ops.Concatenate(1)(F3, F3), SE,
     w("Concatenate"), r"dimension|\b1\b", RANK(1), op="Concatenate")
case("ops", "Concatenate-no-operands", lambda: ops.Concatenate(0)(), (TE, SE, VE),
     w("Concatenate"), r"no operands|\b0\b|none|\(\)", r"at least one|one or more",
     op="Concatenate")
case("ops", "Concatenate-types-differ", lambda: ops.Concatenate(0)(F3, I3), SE,
     w("Concatenate"), T("f32", 3), T("s32", 3), SAME_TYPE + "|element type", op="Concatenate")
case("ops", "Concatenate-other-dims-differ", lambda: ops.Concatenate(0)(F23, F234[0]), SE,
     w("Concatenate"), T("f32", 2, 3), T("f32", 3, 4), r"agree|match|equal|same|differ only",
     op="Concatenate")

case("ops", "Iota-unknown-dtype", lambda: ops.Iota("float99", (3,)), TE,
     w("Iota"), w("dtype"), DTYPES, op="Iota")
case("ops", "Iota-pred-dtype", lambda: ops.Iota(hd.pred, (3,)), VE,
     w("Iota"), w("dtype"), r"numeric|integer|float", op="Iota")
case("ops", "Iota-negative-shape", lambda: ops.Iota(hd.int32, (-2,)), VE,
     w("Iota"), w("shape"), NONNEG, op="Iota")
case("ops", "Iota-dimension-out-of-range", lambda: ops.Iota(hd.int32, (3,), 1), VE,
     w("Iota"), w("iota_dimension"), r"range|rank 1|< ?1|shape \(3,\)", op="Iota")
case("ops", "Iota-dimension-float", lambda: ops.Iota(hd.int32, (3,), 0.5), TE,
     w("Iota"), w("iota_dimension"), INT, op="Iota")
case("ops", "Iota-dimension-bool", lambda: ops.Iota(hd.int32, (3, 3), True), TE,
     w("Iota"), w("iota_dimension"), INT, op="Iota")
case("ops", "Iota-with-an-operand", lambda: ops.Iota(hd.int32, (3,))(F3), TE,
     w("Iota"), T("f32", 3), r"no operands|takes operands \(\)", op="Iota")

case("ops", "Convert-unknown-dtype", lambda: ops.Convert("nope"), TE,
     w("Convert"), w("new_dtype"), DTYPES, op="Convert")
case("ops", "Convert-None-dtype", lambda: ops.Convert(None), TE,
     w("Convert"), w("new_dtype"), DTYPES, op="Convert")
case("ops", "Convert-object-dtype", lambda: ops.Convert(object), TE,
     w("Convert"), w("new_dtype"), DTYPES, op="Convert")
case("ops", "Convert-complex-to-real", lambda: ops.Convert(hd.float32)(C3), SE,
     w("Convert"), T("c64", 3), r"Real|real part|complex", op="Convert")
case("ops", "Convert-no-operand", lambda: ops.Convert(hd.float32)(), TE,
     w("Convert"), r"\b0\b|no operand", r"one operand|takes (the )?operands? \(\w+\)", op="Convert")

case("ops", "BitcastConvert-unknown-dtype", lambda: ops.BitcastConvert("nope"), TE,
     w("BitcastConvert"), w("new_dtype"), DTYPES, op="BitcastConvert")
case("ops", "BitcastConvert-to-pred", lambda: ops.BitcastConvert(hd.pred)(I3), SE,
     w("BitcastConvert"), r"pred", r"not|neither|cannot", op="BitcastConvert")
case("ops", "BitcastConvert-complex", lambda: ops.BitcastConvert(hd.int64)(C3), SE,
     w("BitcastConvert"), T("c64", 3), r"Real|Imag|complex", op="BitcastConvert")

case("ops", "Compare-unknown-direction", lambda: ops.Compare("less"), VE,
     w("Compare"), w("direction"), ONE_OF("EQ", "GE", "GT", "LE", "LT", "NE"), op="Compare")
case("ops", "Compare-int-direction", lambda: ops.Compare(1), TE,
     w("Compare"), w("direction"), r"str|EQ", op="Compare")
case("ops", "Compare-None-direction", lambda: ops.Compare(None), TE,
     w("Compare"), w("direction"), r"str|EQ", op="Compare")
case("ops", "Compare-unknown-comparison-type", lambda: ops.Compare("LT", "FUZZY"), VE,
     w("Compare"), w("comparison_type"), ONE_OF("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"),
     op="Compare")
case("ops", "Compare-signed-type-on-floats", lambda: ops.Compare("LT", "SIGNED")(F3, F3), SE,
     w("Compare"), r"SIGNED", r"FLOAT|TOTALORDER|float", op="Compare")
case("ops", "Compare-types-differ", lambda: ops.Compare("LT")(F3, I3), SE,
     w("Compare"), T("f32", 3), T("s32", 3), SAME_TYPE, op="Compare")
case("ops", "Compare-shapes-differ", lambda: ops.Compare("LT")(F3, F4), SE,
     w("Compare"), T("f32", 3), T("f32", 4), SAME_SHAPE, op="Compare")

case("ops", "Select-float-predicate", lambda: ops.Select()(F3, F3, F3), SE,
     w("Select"), T("f32", 3), r"pred", op="Select")
case("ops", "Select-branch-types-differ", lambda: ops.Select()(B3, F3, I3), SE,
     w("Select"), T("f32", 3), T("s32", 3), SAME_TYPE + r"|same type", op="Select")
case("ops", "Select-shapes-differ", lambda: ops.Select()(B3, F3, F4), SE,
     w("Select"), T("f32", 4), SAME_SHAPE + r"|same type", op="Select")
case("ops", "Select-static-operand", lambda: ops.Select(B3), TE,
     w("Select"), either(T("pred", 3), "array", "operand"), _NO_STATIC, op="Select")
case("ops", "Select-two-operands", lambda: ops.Select()(B3, F3), TE,
     w("Select"), r"\b2\b", r"three operands|3 operands|takes operands \(\w+, \w+, \w+\)",
     op="Select")

case("ops", "Clamp-two-operands", lambda: ops.Clamp()(F3, F3), TE,
     w("Clamp"), r"\b2\b", r"three operands|3 operands|takes operands \(\w+, \w+, \w+\)",
     op="Clamp")
case("ops", "Clamp-types-differ", lambda: ops.Clamp()(FS, F3, IS), SE,
     w("Clamp"), T("s32"), SAME_TYPE + r"|element type", op="Clamp")
case("ops", "Clamp-bound-shape", lambda: ops.Clamp()(F4, F3, FS), SE,
     w("Clamp"), T("f32", 4), r"scalar|same shape|operand's shape", op="Clamp")
case("ops", "Clamp-static-operand", lambda: ops.Clamp(0.0), TE,
     w("Clamp"), r"0\.0|operand", _NO_STATIC, op="Clamp")

case("ops", "Dot-contracting-counts-differ",
     lambda: ops.Dot(lhs_contracting=(1,), rhs_contracting=()), VE,
     w("Dot"), r"lhs_contracting|rhs_contracting", r"as many|same number|same length", op="Dot")
case("ops", "Dot-contracting-float", lambda: ops.Dot(lhs_contracting=(1.0,), rhs_contracting=(0,)),
     TE, w("Dot"), w("lhs_contracting"), INT, op="Dot")
case("ops", "Dot-batch-negative",
     lambda: ops.Dot(lhs_batch=(-1,), rhs_batch=(0,)), VE,
     w("Dot"), w("lhs_batch"), NONNEG, op="Dot")
case("ops", "Dot-contracting-repeated",
     lambda: ops.Dot(lhs_contracting=(0, 0), rhs_contracting=(0, 1)), VE,
     w("Dot"), w("lhs_contracting"), r"repeat|distinct|duplicate|unique", op="Dot")
case("ops", "Dot-preferred-type-unknown",
     lambda: ops.Dot(lhs_contracting=(1,), rhs_contracting=(0,), preferred_element_type="x"), TE,
     w("Dot"), w("preferred_element_type"), DTYPES, op="Dot")
case("ops", "Dot-contracting-out-of-range",
     lambda: ops.Dot(lhs_contracting=(2,), rhs_contracting=(0,))(F23, F33), SE,
     w("Dot"), T("f32", 2, 3), RANK(2) + r"|range", op="Dot")
case("ops", "Dot-types-differ", lambda: ops.Dot(lhs_contracting=(0,), rhs_contracting=(0,))(F3, I3),
     SE, w("Dot"), T("f32", 3), T("s32", 3), SAME_TYPE + r"|element type", op="Dot")
case("ops", "Dot-contracting-and-batch-overlap",
     lambda: ops.Dot(lhs_contracting=(0,), rhs_contracting=(0,), lhs_batch=(0,), rhs_batch=(0,)),
     VE, w("Dot"), r"lhs_batch|lhs_contracting", r"overlap|both|disjoint|distinct|repeat", op="Dot")

case("ops", "RaggedDot-two-ragged-dims",
     lambda: ops.RaggedDot((1,), (1,), lhs_ragged_dims=(0, 1), rhs_group_dims=(0,)), VE,
     w("RaggedDot"), w("lhs_ragged_dims"), r"exactly one", op="RaggedDot")
case("ops", "RaggedDot-group-sizes-float",
     lambda: ops.RaggedDot((1,), (0,), lhs_ragged_dims=(1,))(F33, F33, F3), SE,
     w("RaggedDot"), T("f32", 3), r"group_sizes must be integers", op="RaggedDot")
case("ops", "RaggedDot-group-count-differs",
     lambda: ops.RaggedDot((1,), (1,), lhs_ragged_dims=(0,), rhs_group_dims=(0,))(
         F32m, _a(np.zeros((2, 2, 4)), np.float32), I3), SE,
     w("RaggedDot"), T("f32", 2, 2, 4), r"size 2, group_sizes has 3 groups", op="RaggedDot")

case("ops", "DynamicSlice-negative-size", lambda: ops.DynamicSlice((-1,)), VE,
     w("DynamicSlice"), w("slice_sizes"), NONNEG, op="DynamicSlice")
case("ops", "DynamicSlice-float-size", lambda: ops.DynamicSlice((1.5,)), TE,
     w("DynamicSlice"), w("slice_sizes"), INT, op="DynamicSlice")
case("ops", "DynamicSlice-missing-starts", lambda: ops.DynamicSlice((2,))(F3), SE,
     w("DynamicSlice"), T("f32", 3), r"start ind(ex|ices)|one start|per dimension",
     op="DynamicSlice")
case("ops", "DynamicSlice-size-too-big", lambda: ops.DynamicSlice((5,))(F3, IS), SE,
     w("DynamicSlice"), r"slice_sizes|\(5,\)|\b5\b", r"<=|exceed|larger|at most|fit",
     op="DynamicSlice")
case("ops", "DynamicSlice-size-too-big-2d", lambda: ops.DynamicSlice((2, 4))(F23, IS, IS), SE,
     w("DynamicSlice"), T("f32", 2, 3), r"slice size 4|dimension 1", r"exceed|<=|at most|fit",
     op="DynamicSlice")
case("ops", "DynamicSlice-float-start", lambda: ops.DynamicSlice((2,))(F3, FS), SE,
     w("DynamicSlice"), T("f32"), r"integer|int", op="DynamicSlice")
case("ops", "DynamicSlice-vector-start", lambda: ops.DynamicSlice((2,))(F3, I3), SE,
     w("DynamicSlice"), T("s32", 3), r"scalar", op="DynamicSlice")
case("ops", "DynamicUpdateSlice-update-too-big", lambda: ops.DynamicUpdateSlice()(F3, F4, IS), SE,
     w("DynamicUpdateSlice"), T("f32", 4), r"<=|exceed|larger|at most|fit",
     op="DynamicUpdateSlice")
case("ops", "DynamicUpdateSlice-update-too-big-2d",
     lambda: ops.DynamicUpdateSlice()(F23, F32m, IS, IS), SE,
     w("DynamicUpdateSlice"), T("f32", 3, 2), r"<=|exceed|larger|at most|fit",
     op="DynamicUpdateSlice")
case("ops", "DynamicUpdateSlice-types-differ",
     lambda: ops.DynamicUpdateSlice()(F3, _a([1], np.int32), IS), SE,
     w("DynamicUpdateSlice"), T("s32", 1), SAME_TYPE + r"|element type", op="DynamicUpdateSlice")
case("ops", "DynamicUpdateSlice-missing-starts", lambda: ops.DynamicUpdateSlice()(F3, F3), SE,
     w("DynamicUpdateSlice"), T("f32", 3), r"start ind(ex|ices)|one start|per dimension",
     op="DynamicUpdateSlice")
case("ops", "DynamicUpdateSlice-static-operand", lambda: ops.DynamicUpdateSlice((0,)), TE,
     w("DynamicUpdateSlice"), r"\(0,\)|operand", _NO_STATIC, op="DynamicUpdateSlice")

_GATHER = dict(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,),
               index_vector_dim=1, slice_sizes=(1,))
case("ops", "Gather-offset-dims-float", lambda: ops.Gather(**{**_GATHER, "offset_dims": (0.5,)}),
     TE, w("Gather"), w("offset_dims"), INT, op="Gather")
case("ops", "Gather-negative-slice-size", lambda: ops.Gather(**{**_GATHER, "slice_sizes": (-1,)}),
     VE, w("Gather"), w("slice_sizes"), NONNEG, op="Gather")
case("ops", "Gather-negative-index-vector-dim",
     lambda: ops.Gather(**{**_GATHER, "index_vector_dim": -1}), VE,
     w("Gather"), w("index_vector_dim"), NONNEG, op="Gather")
case("ops", "Gather-sorted-flag-string",
     lambda: ops.Gather(**{**_GATHER, "indices_are_sorted": "yes"}), TE,
     w("Gather"), w("indices_are_sorted"), r"True or False|bool", op="Gather")
case("ops", "Gather-slice-sizes-wrong-length",
     lambda: ops.Gather(**{**_GATHER, "slice_sizes": (1, 1)})(F3, _a([[0]], np.int32)),
     (VE, SE),
     w("Gather"), w("slice_sizes"), RANK(1) + r"|one per|operand dimension", op="Gather")
case("ops", "Gather-float-indices", lambda: ops.Gather(**_GATHER)(F3, _a([[0.0]], np.float32)), SE,
     w("Gather"), T("f32", 1, 1), r"integer|int", op="Gather")
case("ops", "Gather-slice-larger-than-operand",
     lambda: ops.Gather(**{**_GATHER, "collapsed_slice_dims": (), "offset_dims": (1,),
                           "slice_sizes": (5,)})(F3, _a([[0]], np.int32)), SE,
     w("Gather"), w("slice_sizes"), r"<=|exceed|larger|at most|fit|bound", op="Gather")

_SCATTER = dict(update_window_dims=(), inserted_window_dims=(0,),
                scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
case("ops", "Scatter-computation-not-callable", lambda: ops.Scatter(None, **_SCATTER), TE,
     w("Scatter"), w("computation"), CALLABLE, op="Scatter")
case("ops", "Scatter-negative-window-dim",
     lambda: ops.Scatter(add, **{**_SCATTER, "update_window_dims": (-1,)}), VE,
     w("Scatter"), w("update_window_dims"), NONNEG, op="Scatter")
case("ops", "Scatter-index-vector-dim-float",
     lambda: ops.Scatter(add, **{**_SCATTER, "index_vector_dim": 1.0}), TE,
     w("Scatter"), w("index_vector_dim"), INT, op="Scatter")
case("ops", "Scatter-unique-flag-string",
     lambda: ops.Scatter(add, **_SCATTER, unique_indices="no"), TE,
     w("Scatter"), w("unique_indices"), r"True or False|bool", op="Scatter")
case("ops", "Scatter-float-indices",
     lambda: ops.Scatter(add, **_SCATTER)(F3, _a([[0.0]], np.float32), _a([1.0], np.float32)), SE,
     w("Scatter"), T("f32", 1, 1), r"integer|int", op="Scatter")
case("ops", "Scatter-update-type-differs",
     lambda: ops.Scatter(add, **_SCATTER)(F3, _a([[0]], np.int32), _a([1], np.int32)), SE,
     w("Scatter"), T("s32", 1), SAME_TYPE + r"|element type", op="Scatter")
case("ops", "Scatter-update-shape-wrong",
     lambda: ops.Scatter(add, **_SCATTER)(F3, _a([[0]], np.int32), _a([1, 2], np.float32)), SE,
     w("Scatter"), T("f32", 2), r"shape|expected|must be|must match", op="Scatter")
case("ops", "Scatter-update-window-larger-than-operand",
     lambda: ops.Scatter(add, update_window_dims=(1,), inserted_window_dims=(),
                         scatter_dims_to_operand_dims=(0,), index_vector_dim=1)(
         F3, _a([[0]], np.int32), _a(np.ones((1, 5)), np.float32)), SE,
     w("Scatter"), T("f32", 1, 5), r"exceeds|<=|larger|at most|fit", op="Scatter")

case("ops", "Map-computation-not-callable", lambda: ops.Map(3), TE,
     w("Map"), w("computation"), CALLABLE, op="Map")
case("ops", "Map-shapes-differ", lambda: ops.Map(add)(F3, F4), SE,
     w("Map"), T("f32", 3), T("f32", 4), SAME_SHAPE, op="Map")
case("ops", "Map-no-operands", lambda: ops.Map(lambda: FS)(), (TE, SE),
     w("Map"), r"no operands|\b0\b|\(\)", r"at least one|one or more", op="Map")
case("ops", "Map-computation-arity", lambda: ops.Map(add)(F3), (TE, STE),
     r"\bMap\b|given to an op|computation", r"\(a, b\)|2|two",
     r"called with 1|1 operand|one operand", op="Map")
case("ops", "Map-computation-returns-vector", lambda: ops.Map(lambda a: ops.Broadcast((2,))(a))(F3),
     (SE, STE), w("Map"), T("f32", 2), r"scalar", op="Map")

case("ops", "Call-computation-not-callable", lambda: ops.Call(None), TE,
     w("Call"), w("computation"), CALLABLE, op="Call")
case("ops", "Call-computation-arity", lambda: ops.Call(add)(F3), (TE, STE),
     r"\bCall\b|given to an op|computation", r"\(a, b\)|2|two",
     r"called with 1|1 operand|one operand", op="Call")
case("ops", "Call-computation-returns-python", lambda: ops.Call(lambda a: 1.0)(F3), (TE, STE),
     r"lambda|\bCall\b", r"float", ARRAYS, op="Call")

case("ops", "Reduce-computation-string", lambda: ops.Reduce("sum", (0,)), TE,
     w("Reduce"), w("computation"), CALLABLE, op="Reduce")
case("ops", "Reduce-dimensions-negative", lambda: ops.Reduce(add, (-1,)), VE,
     w("Reduce"), w("dimensions"), NONNEG, op="Reduce")
case("ops", "Reduce-dimensions-repeated", lambda: ops.Reduce(add, (0, 0)), VE,
     w("Reduce"), w("dimensions"), r"repeat|distinct|duplicate|unique", op="Reduce")
case("ops", "Reduce-dimensions-float", lambda: ops.Reduce(add, (0.5,)), TE,
     w("Reduce"), w("dimensions"), INT, op="Reduce")
case("ops", "Reduce-dimensions-None", lambda: ops.Reduce(add, None), TE,
     w("Reduce"), w("dimensions"), INT, op="Reduce")
case("ops", "Reduce-dimension-out-of-range", lambda: ops.Reduce(add, (2,))(F23, FS), SE,
     w("Reduce"), T("f32", 2, 3), RANK(2) + r"|range", op="Reduce")
case("ops", "Reduce-init-not-scalar", lambda: ops.Reduce(add, (0,))(F3, F3), SE,
     w("Reduce"), T("f32", 3), r"scalar", op="Reduce")
case("ops", "Reduce-init-type-differs", lambda: ops.Reduce(add, (0,))(F3, IS), SE,
     w("Reduce"), T("s32"), SAME_TYPE + r"|element type", op="Reduce")
case("ops", "Reduce-missing-init", lambda: ops.Reduce(add, (0,))(F3), SE,
     w("Reduce"), T("f32", 3), r"initial value|init", op="Reduce")
case("ops", "Reduce-init-not-identity", lambda: ops.Reduce(add, (0,))(F3, FS), (VE, SE),
     w("Reduce"), r"1\.5|init", r"identity|0\b", op="Reduce")

case("ops", "ReduceWindow-zero-window", lambda: ops.ReduceWindow(add, (0,)), VE,
     w("ReduceWindow"), w("window_dimensions"), POS, op="ReduceWindow")
case("ops", "ReduceWindow-zero-stride", lambda: ops.ReduceWindow(add, (2,), (0,)), VE,
     w("ReduceWindow"), w("window_strides"), POS, op="ReduceWindow")
case("ops", "ReduceWindow-window-float", lambda: ops.ReduceWindow(add, (2.5,)), TE,
     w("ReduceWindow"), w("window_dimensions"), INT, op="ReduceWindow")
case("ops", "ReduceWindow-padding-not-pairs", lambda: ops.ReduceWindow(add, (2,), padding=(1,)),
     (TE, VE), w("ReduceWindow"), w("padding"), PAIR + r"|\(low, high\)", op="ReduceWindow")
case("ops", "ReduceWindow-strides-wrong-length", lambda: ops.ReduceWindow(add, (2,), (1, 1)), VE,
     w("ReduceWindow"), w("window_strides"), r"one per|same length|as many|entr", op="ReduceWindow")
case("ops", "ReduceWindow-window-rank-differs", lambda: ops.ReduceWindow(add, (2,))(F23, FS), SE,
     w("ReduceWindow"), T("f32", 2, 3), RANK(2) + r"|one per dimension", op="ReduceWindow")
case("ops", "ReduceWindow-padding-crops-past-input",
     lambda: ops.ReduceWindow(add, (1,), padding=((-2, -2),))(F3, _a(0, np.float32)), SE,
     w("ReduceWindow"), T("f32", 3), r"\(-2, -2\)|padding", CROP, op="ReduceWindow")
case("ops", "ReduceWindow-padding-crops-past-dilated-input",
     lambda: ops.ReduceWindow(add, (1,), base_dilations=(2,), padding=((-3, -3),))(
         F3, _a(0, np.float32)), SE,
     w("ReduceWindow"), T("f32", 3), r"\(-3, -3\)|base dilation", CROP, op="ReduceWindow")
case("ops", "ReduceWindow-init-type-differs", lambda: ops.ReduceWindow(add, (2,))(F3, IS), SE,
     w("ReduceWindow"), T("s32"), SAME_TYPE + r"|element type", op="ReduceWindow")

case("ops", "SelectAndScatter-select-not-callable",
     lambda: ops.SelectAndScatter(None, add, (2,)), TE,
     w("SelectAndScatter"), w("select"), CALLABLE, op="SelectAndScatter")
case("ops", "SelectAndScatter-zero-window", lambda: ops.SelectAndScatter(lt, add, (0,)), VE,
     w("SelectAndScatter"), w("window_dimensions"), POS, op="SelectAndScatter")
case("ops", "SelectAndScatter-source-shape",
     lambda: ops.SelectAndScatter(lambda a, b: ops.Compare("GE")(a, b), add, (2,), (2,))(
         F4, F3, _a(0, np.float32)), SE,
     w("SelectAndScatter"), T("f32", 3), r"source|window|shape", op="SelectAndScatter")
case("ops", "SelectAndScatter-negative-padding",
     lambda: ops.SelectAndScatter(lt, add, (2,), padding=((-1, 0),)), VE,
     w("SelectAndScatter"), w("padding"), NONNEG, op="SelectAndScatter")
case("ops", "SelectAndScatter-window-larger-than-operand-with-a-source",
     lambda: ops.SelectAndScatter(lambda a, b: ops.Compare("GE")(a, b), add, (5,))(
         F3, _a([1], np.float32), _a(0, np.float32)), SE,
     w("SelectAndScatter"), T("f32", 1), r"\(0,\)", r"source|windowed", op="SelectAndScatter")
case("ops", "SelectAndScatter-select-returns-float",
     lambda: ops.SelectAndScatter(add, add, (2,), (2,))(F4, _a([1, 1], np.float32),
                                                        _a(0, np.float32)), (SE, STE),
     w("SelectAndScatter"), r"select|f32", r"pred", op="SelectAndScatter")

case("ops", "Sort-comparator-None", lambda: ops.Sort(None, 0), TE,
     w("Sort"), w("comparator"), CALLABLE, op="Sort")
case("ops", "Sort-dimension-negative", lambda: ops.Sort(lt, -1), VE,
     w("Sort"), w("dimension"), NONNEG, op="Sort")
case("ops", "Sort-dimension-float", lambda: ops.Sort(lt, 0.5), TE,
     w("Sort"), w("dimension"), INT, op="Sort")
case("ops", "Sort-stable-flag-string", lambda: ops.Sort(lt, 0, "yes"), TE,
     w("Sort"), w("is_stable"), r"True or False|bool", op="Sort")
case("ops", "Sort-dimension-out-of-range", lambda: ops.Sort(lt, 1)(F3), SE,
     w("Sort"), T("f32", 3), RANK(1) + r"|range", op="Sort")
case("ops", "Sort-shapes-differ", lambda: ops.Sort(lt, 0)(F3, F4), SE,
     w("Sort"), T("f32", 4), SAME_SHAPE, op="Sort")
case("ops", "Sort-comparator-returns-float", lambda: ops.Sort(add, 0)(F3), (SE, STE),
     r"\bSort\b|comparator", T("f32"), r"pred", op="Sort")
case("ops", "Sort-comparator-arity", lambda: ops.Sort(lambda a: a, 0)(F3), (TE, STE),
     r"\bSort\b|comparator|given to an op", r"\(a\)|1|one", r"2|two|called with 2", op="Sort")

case("ops", "While-condition-not-callable", lambda: ops.While(1, lambda s: s), TE,
     w("While"), w("condition"), CALLABLE, op="While")
case("ops", "While-condition-returns-float",
     lambda: ops.While(lambda s: s[0], lambda s: s)(FS), (SE, STE),
     w("While"), r"condition|f32", r"pred", op="While")
case("ops", "While-body-changes-type",
     lambda: ops.While(lambda s: ops.Compare("LT")(s[0], s[0]),
                       lambda s: (ops.Convert(hd.float64)(s[0]),))(FS), (SE, STE),
     w("While"), r"body|f64", T("f32"), op="While")
case("ops", "While-no-state", lambda: ops.While(lambda: BS, lambda: ())(), (TE, SE),
     w("While"), r"no operands|\b0\b|state", r"at least one|one or more", op="While")

case("ops", "Conditional-branch-not-callable", lambda: ops.Conditional(5, 6), TE,
     w("Conditional"), w("true_computation"), CALLABLE, op="Conditional")
case("ops", "Conditional-branches-not-callable",
     lambda: ops.Conditional(branch_computations=(1, 2)),
     TE, w("Conditional"), w("branch_computations"), CALLABLE, op="Conditional")
case("ops", "Conditional-both-forms", lambda: ops.Conditional(
    lambda a: a, lambda a: a, branch_computations=(lambda a: a,)), VE,
     w("Conditional"), r"branch_computations|true_computation", r"either|not both|one of",
     op="Conditional")
case("ops", "Conditional-float-predicate",
     lambda: ops.Conditional(lambda a: a, lambda a: a)(FS, F3, F3), SE,
     w("Conditional"), T("f32"), r"pred|s32|int", op="Conditional")
case("ops", "Conditional-branch-types-differ",
     lambda: ops.Conditional(lambda a: a, lambda a: ops.Convert(hd.int32)(a))(BS, F3, F3), SE,
     w("Conditional"), T("f32", 3), T("s32", 3), op="Conditional")
case("ops", "Conditional-operand-count",
     lambda: ops.Conditional(lambda a: a, lambda a: a)(BS, F3), (TE, SE),
     w("Conditional"), r"\b2\b", r"3|three|one operand per branch|pred, true_operand",
     op="Conditional")

case("ops", "TopK-negative-k", lambda: ops.TopK(-1), VE,
     w("TopK"), w("k"), NONNEG, op="TopK")
case("ops", "TopK-float-k", lambda: ops.TopK(2.5), TE,
     w("TopK"), w("k"), INT, op="TopK")
case("ops", "TopK-bool-k", lambda: ops.TopK(True), TE,
     w("TopK"), w("k"), INT, op="TopK")
case("ops", "TopK-largest-string", lambda: ops.TopK(1, "yes"), TE,
     w("TopK"), w("largest"), r"True or False|bool", op="TopK")
case("ops", "TopK-k-larger-than-n", lambda: ops.TopK(5)(F3), SE,
     w("TopK"), T("f32", 3), r"<= ?3|at most|larger|exceed|k", op="TopK")
case("ops", "TopK-scalar-operand", lambda: ops.TopK(1)(FS), SE,
     w("TopK"), T("f32"), r"rank at least 1|rank >= ?1|at least one dim", op="TopK")

case("ops", "TriangularSolve-flag-string", lambda: ops.TriangularSolve("yes", True), TE,
     w("TriangularSolve"), w("left_side"), r"True or False|bool", op="TriangularSolve")
case("ops", "TriangularSolve-unknown-transpose",
     lambda: ops.TriangularSolve(True, True, transpose_a="SIDEWAYS"), VE,
     w("TriangularSolve"), w("transpose_a"), ONE_OF("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"),
     op="TriangularSolve")
case("ops", "TriangularSolve-non-square", lambda: ops.TriangularSolve(True, True)(F23, F23), SE,
     w("TriangularSolve"), T("f32", 2, 3), SQUARE, op="TriangularSolve")
case("ops", "TriangularSolve-integer",
     lambda: ops.TriangularSolve(True, True)(_a(np.eye(2), np.int32), _a(np.eye(2), np.int32)), SE,
     w("TriangularSolve"), T("s32", 2, 2), FLOATY, op="TriangularSolve")
case("ops", "TriangularSolve-b-mismatch", lambda: ops.TriangularSolve(True, True)(F22, F33), SE,
     w("TriangularSolve"), T("f32", 3, 3), r"\bm\b|rows|match|agree|same|must equal",
     op="TriangularSolve")

case("ops", "Cholesky-flag-string", lambda: ops.Cholesky("lower"), TE,
     w("Cholesky"), w("lower"), r"True or False|bool", op="Cholesky")
case("ops", "Cholesky-flag-None", lambda: ops.Cholesky(None), TE,
     w("Cholesky"), w("lower"), r"True or False|bool", op="Cholesky")
case("ops", "Cholesky-non-square", lambda: ops.Cholesky()(F23), SE,
     w("Cholesky"), T("f32", 2, 3), SQUARE, op="Cholesky")
case("ops", "Cholesky-vector", lambda: ops.Cholesky()(F3), SE,
     w("Cholesky"), T("f32", 3), r"rank|matri|\[\.\.\., ?n, ?n\]", op="Cholesky")
case("ops", "Cholesky-integer", lambda: ops.Cholesky()(_a(np.eye(2), np.int32)), SE,
     w("Cholesky"), T("s32", 2, 2), FLOATY, op="Cholesky")

case("ops", "Fft-unknown-type", lambda: ops.Fft("DCT", (4,)), VE,
     w("Fft"), w("fft_type"), ONE_OF("FFT", "IFFT", "RFFT", "IRFFT"), op="Fft")
case("ops", "Fft-negative-length", lambda: ops.Fft("FFT", (-4,)), VE,
     w("Fft"), w("fft_length"), NONNEG, op="Fft")
case("ops", "Fft-no-length", lambda: ops.Fft("FFT", ()), VE,
     w("Fft"), w("fft_length"), r"1 to 3|one to three|between 1 and 3", op="Fft")
case("ops", "Fft-four-lengths", lambda: ops.Fft("FFT", (1, 2, 3, 4)), VE,
     w("Fft"), w("fft_length"), r"1 to 3|one to three|between 1 and 3|at most 3", op="Fft")
case("ops", "Fft-float-length", lambda: ops.Fft("FFT", (2.5,)), TE,
     w("Fft"), w("fft_length"), INT, op="Fft")
case("ops", "Fft-real-input", lambda: ops.Fft("FFT", (3,))(F3), SE,
     w("Fft"), T("f32", 3), r"c64|c128|complex", op="Fft")
case("ops", "Fft-length-mismatch", lambda: ops.Fft("FFT", (4,))(C3), SE,
     w("Fft"), T("c64", 3), r"fft_length|\(4,\)|trailing|equal|match", op="Fft")

case("ops", "Rng-unknown-distribution", lambda: ops.Rng("poisson", (3,)), VE,
     w("Rng"), w("distribution"), r"uniform.*normal|normal.*uniform", op="Rng")
case("ops", "Rng-negative-shape", lambda: ops.Rng("uniform", (-1,)), VE,
     w("Rng"), w("shape"), NONNEG, op="Rng")
case("ops", "Rng-vector-parameters", lambda: ops.Rng("uniform", (3,))(F3, FS), SE,
     w("Rng"), T("f32", 3), r"scalar", op="Rng")
case("ops", "Rng-parameter-types-differ", lambda: ops.Rng("uniform", (3,))(FS, IS), SE,
     w("Rng"), T("s32"), SAME_TYPE + r"|same element type", op="Rng")
case("ops", "RngBitGenerator-unknown-algorithm", lambda: ops.RngBitGenerator("mersenne", (3,)), VE,
     w("RngBitGenerator"), w("algorithm"), r"three_fry|philox|default", op="RngBitGenerator")
case("ops", "RngBitGenerator-negative-shape", lambda: ops.RngBitGenerator("three_fry", (-3,)), VE,
     w("RngBitGenerator"), w("shape"), NONNEG, op="RngBitGenerator")
case("ops", "RngBitGenerator-pred-dtype",
     lambda: ops.RngBitGenerator("three_fry", (3,), hd.pred), VE,
     w("RngBitGenerator"), w("dtype"), r"unsigned|integer", op="RngBitGenerator")
case("ops", "RngBitGenerator-float-state", lambda: ops.RngBitGenerator("three_fry", (3,))(F3), SE,
     w("RngBitGenerator"), T("f32", 3), r"u64|uint64", op="RngBitGenerator")

case("ops", "BatchNormTraining-epsilon-string", lambda: ops.BatchNormTraining("small", 1), TE,
     w("BatchNormTraining"), w("epsilon"), r"float|number", op="BatchNormTraining")
case("ops", "BatchNormTraining-feature-index-negative", lambda: ops.BatchNormTraining(1e-5, -1),
     VE, w("BatchNormTraining"), w("feature_index"), NONNEG, op="BatchNormTraining")
case("ops", "BatchNormTraining-feature-index-float", lambda: ops.BatchNormTraining(1e-5, 1.0),
     TE, w("BatchNormTraining"), w("feature_index"), INT, op="BatchNormTraining")
case("ops", "BatchNormTraining-feature-index-out-of-range",
     lambda: ops.BatchNormTraining(1e-5, 3)(F23, F3, F3), SE,
     w("BatchNormTraining"), T("f32", 2, 3), RANK(2) + r"|range", op="BatchNormTraining")
case("ops", "BatchNormTraining-scale-size",
     lambda: ops.BatchNormTraining(1e-5, 1)(F23, F4, F4), SE,
     w("BatchNormTraining"), T("f32", 4), r"\b3\b|feature|per channel", op="BatchNormTraining")
case("ops", "BatchNormTraining-integer-operand",
     lambda: ops.BatchNormTraining(1e-5, 1)(I23, I3, I3), SE,
     w("BatchNormTraining"), T("s32", 2, 3), r"float", op="BatchNormTraining")
case("ops", "BatchNormInference-operand-count",
     lambda: ops.BatchNormInference(1e-5, 1)(F23, F3, F3), TE,
     w("BatchNormInference"), r"\b3\b", r"5|five|takes operands \(\w+, \w+, \w+, \w+, \w+\)",
     op="BatchNormInference")
case("ops", "BatchNormInference-feature-index-bool", lambda: ops.BatchNormInference(1e-5, True),
     TE, w("BatchNormInference"), w("feature_index"), INT, op="BatchNormInference")
case("ops", "BatchNormInference-mean-type",
     lambda: ops.BatchNormInference(1e-5, 1)(F23, F3, F3, _a([0, 0, 0], np.float64), F3), SE,
     w("BatchNormInference"), T("f64", 3), SAME_TYPE + r"|element type|f32",
     op="BatchNormInference")
case("ops", "BatchNormGrad-operand-count", lambda: ops.BatchNormGrad(1e-5, 1)(F23, F3), TE,
     w("BatchNormGrad"), r"\b2\b", r"5|five|takes operands \(\w+, \w+, \w+, \w+, \w+\)",
     op="BatchNormGrad")
case("ops", "BatchNormGrad-grad-shape",
     lambda: ops.BatchNormGrad(1e-5, 1)(F23, F3, F3, F3, F32m), SE,
     w("BatchNormGrad"), T("f32", 3, 2), r"grad|operand's shape|same shape|f32\[2,3\]",
     op="BatchNormGrad")
case("ops", "BatchNormGrad-epsilon-None", lambda: ops.BatchNormGrad(None, 1), TE,
     w("BatchNormGrad"), w("epsilon"), r"float|number", op="BatchNormGrad")

case("ops", "ReducePrecision-zero-exponent", lambda: ops.ReducePrecision(0, 7), VE,
     w("ReducePrecision"), w("exponent_bits"), POS, op="ReducePrecision")
case("ops", "ReducePrecision-negative-mantissa", lambda: ops.ReducePrecision(8, -1), VE,
     w("ReducePrecision"), w("mantissa_bits"), NONNEG, op="ReducePrecision")
case("ops", "ReducePrecision-float-bits", lambda: ops.ReducePrecision(8.5, 7), TE,
     w("ReducePrecision"), w("exponent_bits"), INT, op="ReducePrecision")
case("ops", "ReducePrecision-string-bits", lambda: ops.ReducePrecision(8, "7"), TE,
     w("ReducePrecision"), w("mantissa_bits"), INT, op="ReducePrecision")
case("ops", "ReducePrecision-integer-operand", lambda: ops.ReducePrecision(8, 7)(I3), SE,
     w("ReducePrecision"), T("s32", 3), r"float", op="ReducePrecision")

case("ops", "Convolution-zero-stride", lambda: ops.Convolution(window_strides=(0, 0)), VE,
     w("Convolution"), w("window_strides"), POS, op="Convolution")
case("ops", "Convolution-padding-not-pairs", lambda: ops.Convolution(padding=(1, 1)), (TE, VE),
     w("Convolution"), w("padding"), PAIR + r"|\(low, high\)", op="Convolution")
case("ops", "Convolution-zero-groups", lambda: ops.Convolution(feature_group_count=0), VE,
     w("Convolution"), w("feature_group_count"), POS, op="Convolution")
case("ops", "Convolution-groups-float", lambda: ops.Convolution(feature_group_count=1.5), TE,
     w("Convolution"), w("feature_group_count"), INT, op="Convolution")
case("ops", "Convolution-bad-spec", lambda: ops.Convolution(lhs_spec="bxyz"), VE,
     w("Convolution"), w("lhs_spec"), r"b.*f|batch.*feature|labels", op="Convolution")
case("ops", "Convolution-dilation-zero", lambda: ops.Convolution(rhs_dilation=(0, 0)), VE,
     w("Convolution"), w("rhs_dilation"), POS, op="Convolution")
case("ops", "Convolution-ranks-differ", lambda: ops.Convolution()(IMG, F3), SE,
     w("Convolution"), T("f32", 3), RANK(4) + r"|rank", op="Convolution")
case("ops", "Convolution-features-differ", lambda: ops.Convolution()(IMG, K_C2), SE,
     w("Convolution"), T("f32", 1, 2, 3, 3), r"feature|channel|group", op="Convolution")
case("ops", "Convolution-stride-wrong-length",
     lambda: ops.Convolution(window_strides=(1,))(IMG, K33), SE,
     w("Convolution"), w("window_strides"), r"spatial|one per|2 entr|two", op="Convolution")
case("ops", "Convolution-padding-crops-past-input",
     lambda: ops.Convolution(padding=((-3, -3), (0, 0)))(IMG, K33), SE,
     w("Convolution"), T("f32", 1, 1, 4, 4), r"\(-3, -3\)|padding", CROP, op="Convolution")
case("ops", "Convolution-padding-crops-past-dilated-input",
     lambda: ops.Convolution(padding=((-4, -4), (0, 0)), lhs_dilation=(2, 1))(IMG, K33), SE,
     w("Convolution"), T("f32", 1, 1, 4, 4), r"\(-4, -4\)|base dilation", CROP,
     op="Convolution")
case("ops", "Convolution-padding-crops-an-empty-input",
     lambda: ops.Convolution(padding=((0, 0), (-1, 0)))(_a(np.zeros((1, 1, 4, 0)), np.float32),
                                                       K33), SE,
     w("Convolution"), T("f32", 1, 1, 4, 0), r"\(-1, 0\)|padding", CROP, op="Convolution")

case("ops", "CustomCall-target-not-string",
     lambda: ops.CustomCall(5, hd.ArrayType(hd.float32, (3,))),
     TE, w("CustomCall"), w("target"), r"str|name", op="CustomCall")
case("ops", "CustomCall-out-type-string", lambda: ops.CustomCall("t", "f32[3]"), TE,
     w("CustomCall"), w("out_type"), r"ArrayType|TokenType", op="CustomCall")
case("ops", "CustomCall-unknown-api-version",
     lambda: ops.CustomCall("t", hd.ArrayType(hd.float32, (3,)), api_version="V9"), VE,
     w("CustomCall"), w("api_version"), r"API_VERSION", op="CustomCall")
case("ops", "CustomCall-layout-not-permutation",
     lambda: ops.CustomCall("t", hd.ArrayType(hd.float32, (3,)), operand_layouts=((0, 0),)), VE,
     w("CustomCall"), w("operand_layouts"), r"permutation", op="CustomCall")
case("ops", "CustomCall-side-effect-string",
     lambda: ops.CustomCall("t", hd.ArrayType(hd.float32, (3,)), has_side_effect="yes"), TE,
     w("CustomCall"), w("has_side_effect"), r"True or False|bool", op="CustomCall")
# A Python function called from the program (ops/host_callback.py, transforms/callbacks.py).
case("ops", "HostCallback-callback-not-callable", lambda: ops.HostCallback(3), TE,
     w("HostCallback"), w("callback"), CALLABLE, op="HostCallback")
case("ops", "HostCallback-out-types-string", lambda: ops.HostCallback(np.sin, ("f32[3]",)), TE,
     w("HostCallback"), w("out_types"), r"ArrayType", op="HostCallback")
case("ops", "HostCallback-ordered-without-token",
     lambda: hd.compile(lambda x: ops.HostCallback(np.sin, (), ordered=True)(x))(F3), SE,
     w("HostCallback"), T("f32", 3), r"token", op="HostCallback")
case("transforms", "pure_callback-spec-without-dtype",
     lambda: hd.pure_callback(np.sin, 3, F3), TE,
     w("pure_callback"), w("result_shape_dtypes"), r"shape and a dtype")
case("transforms", "pure_callback-wrong-result-dtype",
     lambda: hd.compile(lambda x: hd.pure_callback(lambda v: v * 2.0, np.empty(3, np.float32),
                                                   x.astype(np.float64)))(F3), TE,
     r"pure_callback", r"float64", T("f32", 3), r"element types must match")
case("transforms", "pure_callback-vmap-without-method",
     lambda: hd.vmap(lambda x: hd.pure_callback(np.sin, np.empty((), np.float32), x))(F3),
     NotImplementedError, r"vmap", w("vmap_method"), r"sequential")
case("transforms", "debug_print-format-needs-more-arguments",
     lambda: hd.debug_print("{} and {}", F3), IE, w("debug_print"), r"\{\} and \{\}",
     r"1 positional")
# A target hlodsl calls itself (stdlib/lapack.py registers what its kernels write).
case("ops", "CustomCall-lapack-result-larger-than-written",
     lambda: ops.CustomCall("lapack_spotrf_ffi", (hd.ArrayType(hd.float32, (64, 64)),
                                                  hd.ArrayType(hd.int32, ())),
                            {"uplo": np.uint8(ord("L"))})(F22), SE,
     w("CustomCall"), r"lapack_spotrf_ffi", T("f32", 2, 2), r"f32\[64,64\]",
     r"writes \(f32\[2,2\], s32\[\]\)", op="CustomCall")
case("ops", "CustomCall-lapack-operand-not-square",
     lambda: ops.CustomCall("lapack_spotrf_ffi", (hd.ArrayType(hd.float32, (2, 3)),
                                                  hd.ArrayType(hd.int32, ())),
                            {"uplo": np.uint8(ord("L"))})(F23), SE,
     w("CustomCall"), r"lapack_spotrf_ffi", T("f32", 2, 3), SQUARE, op="CustomCall")
case("ops", "CustomCall-lapack-operand-wrong-element-type",
     lambda: ops.CustomCall("lapack_dgetrf_ffi", (hd.ArrayType(hd.float32, (2, 2)),
                                                  hd.ArrayType(hd.int32, (2,)),
                                                  hd.ArrayType(hd.int32, ())))(F22), SE,
     w("CustomCall"), r"lapack_dgetrf_ffi", T("f32", 2, 2), r"float64", op="CustomCall")

case("ops", "AllReduce-computation-None", lambda: ops.AllReduce(None), TE,
     w("AllReduce"), w("computation"), CALLABLE, op="AllReduce")
case("ops", "AllReduce-groups-string", lambda: ops.AllReduce(add, "01"), TE,
     w("AllReduce"), w("replica_groups"), r"tuple|sequence|ints|device ids", op="AllReduce")
case("ops", "AllReduce-groups-repeat-device", lambda: ops.AllReduce(add, ((0, 0),)), VE,
     w("AllReduce"), w("replica_groups"), r"distinct", op="AllReduce")
case("ops", "AllReduce-channel-negative", lambda: ops.AllReduce(add, channel_id=-1), VE,
     w("AllReduce"), w("channel_id"), POS + "|" + NONNEG, op="AllReduce")
case("ops", "AllGather-dimension-negative", lambda: ops.AllGather(-1, ((0, 1),)), VE,
     w("AllGather"), w("dimension"), NONNEG, op="AllGather")
case("ops", "AllGather-dimension-float", lambda: ops.AllGather(0.5, ((0, 1),)), TE,
     w("AllGather"), w("dimension"), INT, op="AllGather")
case("ops", "AllGather-no-groups", lambda: ops.AllGather(0, ()), VE,
     w("AllGather"), w("replica_groups"), r"must be given|at least one|non-empty", op="AllGather")
case("ops", "AllGather-dimension-out-of-range", lambda: ops.AllGather(3, ((0, 1),))(F3), SE,
     w("AllGather"), T("f32", 3), RANK(1) + r"|range", op="AllGather")
case("ops", "ReduceScatter-groups-uneven", lambda: ops.ReduceScatter(add, 0, ((0, 1), (2,))), VE,
     w("ReduceScatter"), w("replica_groups"), r"same size", op="ReduceScatter")
case("ops", "ReduceScatter-indivisible", lambda: ops.ReduceScatter(add, 0, ((0, 1),))(F3), SE,
     w("ReduceScatter"), T("f32", 3), r"divid|multiple", op="ReduceScatter")
case("ops", "AllToAll-dimension-string", lambda: ops.AllToAll("0", ((0, 1),)), TE,
     w("AllToAll"), w("dimension"), INT, op="AllToAll")
case("ops", "AllToAll-indivisible", lambda: ops.AllToAll(0, ((0, 1),))(F3), SE,
     w("AllToAll"), T("f32", 3), r"divid|multiple", op="AllToAll")
case("ops", "CollectivePermute-not-pairs", lambda: ops.CollectivePermute(((0,),)), (TE, VE),
     w("CollectivePermute"), w("source_target_pairs"), PAIR + r"|\(source, target\)",
     op="CollectivePermute")
case("ops", "CollectivePermute-source-twice", lambda: ops.CollectivePermute(((0, 1), (0, 2))), VE,
     w("CollectivePermute"), w("source_target_pairs"), r"once|distinct|unique|repeat|twice",
     op="CollectivePermute")
case("ops", "CollectiveBroadcast-groups-None", lambda: ops.CollectiveBroadcast(None), TE,
     w("CollectiveBroadcast"), w("replica_groups"), r"tuple|sequence|ints|device ids",
     op="CollectiveBroadcast")
case("ops", "CollectiveBroadcast-negative-device", lambda: ops.CollectiveBroadcast(((-1, 0),)), VE,
     w("CollectiveBroadcast"), w("replica_groups"), r"distinct|non-?negative|device id",
     op="CollectiveBroadcast")

# == stdlib: the array API namespace ==================================================

_AX = r"\baxis\b|\baxes\b"


def _axis(fn_name, call, rank, **kw):
    case("stdlib", f"{fn_name}-axis-out-of-range", call, AXIS, w(fn_name), _AX, RANK(rank), **kw)


for _fn in ("sum", "prod", "max", "min", "mean", "std", "var", "all", "any", "argmax", "argmin",
            "count_nonzero", "cumulative_sum", "cumulative_prod", "flip", "sort", "argsort"):
    _axis(_fn, lambda f=getattr(xp, _fn): f(F23, axis=2), 2)
_axis("expand_dims", lambda: xp.expand_dims(F23, axis=4), 3)
_axis("squeeze", lambda: xp.squeeze(F23, axis=3), 2)
_axis("moveaxis", lambda: xp.moveaxis(F23, 0, 5), 2)
_axis("roll", lambda: xp.roll(F23, 1, axis=4), 2)
_axis("take", lambda: xp.take(F23, I3, axis=2), 2)
_axis("concat", lambda: xp.concat([F3, F3], axis=1), 1)
_axis("stack", lambda: xp.stack([F3, F3], axis=3), 2)
_axis("unstack", lambda: xp.unstack(F23, axis=2), 2)
_axis("diff", lambda: xp.diff(F3, axis=1), 1)
case("stdlib", "vecdot-axis-out-of-range", lambda: xp.vecdot(F23, F23, axis=2), AXIS,
     w("vecdot"), _AX, RANK(2) + r"|shapes? \(2, 3\)")
_axis("softmax", lambda: nn.softmax(F23, axis=2), 2)
_axis("mapreduce", lambda: xp.mapreduce(lambda v: v, xp.add, F23, axis=3), 2)
del _fn

case("stdlib", "sum-axis-repeated", lambda: xp.sum(F23, axis=(0, 0)), VE,
     w("sum"), _AX, r"repeat|duplicate|distinct|unique")
case("stdlib", "sum-axis-float", lambda: xp.sum(F23, axis=1.5), TE,
     w("sum"), _AX, INT)
case("stdlib", "mean-axis-string", lambda: xp.mean(F23, axis="rows"), TE,
     w("mean"), _AX, INT)
case("stdlib", "sum-dtype-unknown", lambda: xp.sum(F23, dtype="float99"), TE,
     w("sum"), w("dtype") + r"|'float99'", DTYPES)
case("stdlib", "var-correction-string", lambda: xp.var(F3, correction="one"), TE,
     w("var"), w("correction"), r"number|int|float")
for _fn in ("max", "min", "argmax", "argmin"):
    case("stdlib", f"{_fn}-of-an-empty-array", lambda f=getattr(xp, _fn): f(F0), VE,
         w(_fn), r"zero-size|empty|size 0|f32\[0\]",
         r"identity|at least one|non-empty|empty sequence")
    case("stdlib", f"{_fn}-over-an-empty-axis", lambda f=getattr(xp, _fn): f(F20, axis=1), VE,
         w(_fn), r"zero-size|empty|size 0|f32\[2,0\]|axis 1",
         r"identity|at least one|non-empty|empty sequence")
del _fn

case("stdlib", "add-shapes-do-not-broadcast", lambda: xp.add(F3, F4), SE,
     w("add"), T("f32", 3), T("f32", 4), BROADCAST)
case("stdlib", "multiply-2d-do-not-broadcast", lambda: xp.multiply(F23, F32m), SE,
     w("multiply"), T("f32", 2, 3), T("f32", 3, 2), BROADCAST)
case("stdlib", "where-shapes-do-not-broadcast", lambda: xp.where(B3, F3, F4), SE,
     w("where"), T("f32", 4), BROADCAST)
case("stdlib", "clip-bound-does-not-broadcast", lambda: xp.clip(F3, min=F4), SE,
     w("clip"), T("f32", 4), BROADCAST)
case("stdlib", "broadcast_to-incompatible", lambda: xp.broadcast_to(F3, (4,)), SHAPE_OR_VALUE,
     w("broadcast_to"), T("f32", 3), r"\(4,\)|broadcast")
case("stdlib", "broadcast_to-negative-shape", lambda: xp.broadcast_to(F3, (-1, 3)), VE,
     w("broadcast_to"), w("shape"), NONNEG)
case("stdlib", "broadcast_shapes-incompatible", lambda: xp.broadcast_shapes((3,), (4,)),
     SHAPE_OR_VALUE, w("broadcast_shapes"), r"\(3,\).*\(4,\)", BROADCAST)
case("stdlib", "broadcast_arrays-incompatible", lambda: xp.broadcast_arrays(F3, F4),
     SHAPE_OR_VALUE, w("broadcast_arrays"), T("f32", 3), BROADCAST)
case("stdlib", "matmul-inner-sizes-differ", lambda: xp.matmul(F23, F23), SE,
     r"\bmatmul\b|\bDot\b", T("f32", 2, 3), r"contract|inner|size|match")
case("stdlib", "matmul-of-a-scalar", lambda: xp.matmul(FS, F3), (SE, VE),
     w("matmul"), T("f32"), r"at least 1|1-?d|rank|dimension|scalar")
case("stdlib", "matmul-batch-dims-do-not-broadcast",
     lambda: xp.matmul(_a(np.ones((2, 2, 2)), np.float32), _a(np.ones((3, 2, 2)), np.float32)),
     SE, w("matmul"), r"f32\[2,2,2\]|\(2, 2, 2\)", BROADCAST + r"|batch")
case("stdlib", "matmul-operator-inner-sizes-differ", lambda: F23 @ F23, SE,
     r"\bmatmul\b|\bDot\b|@", T("f32", 2, 3), r"contract|inner|size|match")
case("stdlib", "tensordot-sizes-differ", lambda: xp.tensordot(F23, F23, axes=1), SE,
     w("tensordot"), T("f32", 2, 3), r"size|match|differ|\b3\b.*\b2\b")
case("stdlib", "tensordot-negative-axes", lambda: xp.tensordot(F23, F23, axes=-1), VE,
     w("tensordot"), w("axes"), NONNEG + r"|\[0, ?2\]")
case("stdlib", "vecdot-sizes-differ", lambda: xp.vecdot(F3, F4), SE,
     w("vecdot"), T("f32", 3), T("f32", 4))
case("stdlib", "matrix_transpose-of-a-vector", lambda: xp.matrix_transpose(F3), SHAPE_OR_VALUE,
     w("matrix_transpose"), T("f32", 3), r"at least 2|rank|2 dim|matri")

case("stdlib", "reshape-size-differs", lambda: xp.reshape(F23, (4,)), SHAPE_OR_VALUE,
     w("reshape"), T("f32", 2, 3), r"\(4,\)|size|elements")
case("stdlib", "reshape-two-minus-ones", lambda: xp.reshape(F23, (-1, -1)), VE,
     w("reshape"), w("shape"), r"one -1|only one|at most one|single")
case("stdlib", "reshape-float-shape", lambda: xp.reshape(F23, (2.5, 3)), TE,
     w("reshape"), w("shape"), INT)
case("stdlib", "reshape-negative-shape", lambda: xp.reshape(F23, (-2, -3)), VE,
     w("reshape"), w("shape"), r"-1|non-?negative")
case("stdlib", "squeeze-axis-not-size-1", lambda: xp.squeeze(F23, axis=0), VE,
     w("squeeze"), _AX + r"|\b0\b", r"size 1|length 1|size-1|singleton|not 1")
case("stdlib", "permute_dims-not-a-permutation", lambda: xp.permute_dims(F23, (0,)),
     (VE, SE), w("permute_dims"), w("axes"), r"permutation|rank 2|2 axes|each of the 2 dim")
case("stdlib", "permute_dims-repeated", lambda: xp.permute_dims(F23, (0, 0)), (VE, SE),
     w("permute_dims"), w("axes") + r"|\(0, 0\)", r"permutation|repeat|duplicate")
case("stdlib", "roll-shift-axis-lengths-differ", lambda: xp.roll(F23, (1, 2, 3), axis=(0, 1)),
     VE,
     w("roll"), r"shift|axis", r"same length|as many|match")
case("stdlib", "tile-negative-repetitions", lambda: xp.tile(F3, (-1,)), VE,
     w("tile"), w("repetitions") + "|reps", NONNEG)
case("stdlib", "repeat-negative", lambda: xp.repeat(F3, -1), VE,
     w("repeat"), w("repeats"), NONNEG)
case("stdlib", "repeat-length-differs", lambda: xp.repeat(F3, (1, 2)), (VE, SE),
     w("repeat"), w("repeats"), r"\b3\b|length|size|match|one per")
case("stdlib", "concat-ranks-differ", lambda: xp.concat([F3, F23]), SHAPE_OR_VALUE,
     w("concat"), T("f32", 3), T("f32", 2, 3), r"rank|dimension|same|agree")
case("stdlib", "concat-empty", lambda: xp.concat([]), VE,
     w("concat"), r"arrays?|empty|none|\[\]", r"at least one")
case("stdlib", "concat-not-a-sequence", lambda: xp.concat(F3), DISPATCH,
     w("concat"), r"Array|array", r"tuple|list|sequence")
case("stdlib", "stack-shapes-differ", lambda: xp.stack([F3, F4]), SHAPE_OR_VALUE,
     w("stack"), T("f32", 3), T("f32", 4), r"same shape|equal|match")
case("stdlib", "expand_dims-axis-float", lambda: xp.expand_dims(F3, axis=0.5), TE,
     w("expand_dims"), _AX, INT)
case("stdlib", "flip-axis-float", lambda: xp.flip(F3, axis=0.0), TE, w("flip"), _AX, INT)

case("stdlib", "zeros-negative-shape", lambda: xp.zeros((2, -1)), VE,
     w("zeros"), w("shape"), NONNEG + r"|negative dimension")
case("stdlib", "zeros-float-shape", lambda: xp.zeros((2, 2.5)), TE,
     w("zeros"), w("shape"), INT)
case("stdlib", "ones-string-shape", lambda: xp.ones("3"), TE,
     w("ones"), w("shape"), INT)
case("stdlib", "zeros-unknown-dtype", lambda: xp.zeros(3, dtype="nope"), TE,
     w("zeros"), w("dtype") + r"|'nope'", DTYPES)
case("stdlib", "empty-object-dtype", lambda: xp.empty(3, dtype=object), TE,
     w("empty"), r"dtype|object", DTYPES)
case("stdlib", "full-string-value", lambda: xp.full((2,), "a"), TE,
     w("full"), w("fill_value") + r"|'a'|\bstr\b", r"number|bool|scalar")
case("stdlib", "full_like-unknown-dtype", lambda: xp.full_like(F3, 1, dtype="nope"), TE,
     w("full_like"), w("dtype") + r"|'nope'", DTYPES)
case("stdlib", "arange-zero-step", lambda: xp.arange(0, 10, 0), VE,
     w("arange"), w("step"), r"non-?zero|zero|!= ?0")
case("stdlib", "arange-string-stop", lambda: xp.arange("10"), TE,
     w("arange"), r"\bstop\b|\bstart\b|'10'|\bstr\b", r"number|int|float")
case("stdlib", "linspace-negative-num", lambda: xp.linspace(0, 1, -1), VE,
     w("linspace"), w("num"), NONNEG)
case("stdlib", "linspace-float-num", lambda: xp.linspace(0, 1, 2.5), TE,
     w("linspace"), w("num"), INT)
case("stdlib", "eye-negative", lambda: xp.eye(-1), VE,
     w("eye"), r"n_rows|\bn\b|-1", NONNEG + r"|negative dimension")
case("stdlib", "eye-float-rows", lambda: xp.eye(2.5), TE,
     w("eye"), r"n_rows|\bn\b|2\.5", INT)
case("stdlib", "tril-of-a-vector", lambda: xp.tril(F3), SHAPE_OR_VALUE,
     w("tril"), T("f32", 3), r"at least 2|rank|2 dim|matri")
case("stdlib", "meshgrid-unknown-indexing", lambda: xp.meshgrid(F3, F3, indexing="ab"), VE,
     w("meshgrid"), w("indexing"), r"xy.*ij|ij.*xy")
case("stdlib", "asarray-ragged", lambda: xp.asarray([[1, 2], [3]]), VE,
     w("asarray"), r"ragged|inhomogeneous|shape", r"rectangular|same length|nested")
case("stdlib", "asarray-string", lambda: xp.asarray("abc"), TE,
     w("asarray"), r"\bstr\b|<U3|'abc'", r"number|bool|array|element type|supported")
case("stdlib", "asarray-unknown-dtype", lambda: xp.asarray([1, 2], dtype="float99"), TE,
     w("asarray"), w("dtype") + r"|'float99'", DTYPES)
case("stdlib", "astype-unknown-dtype", lambda: xp.astype(F3, "float99"), TE,
     w("astype"), w("dtype") + r"|'float99'", DTYPES)
case("stdlib", "astype-dtype-None", lambda: xp.astype(F3, None), TE,
     w("astype"), w("dtype") + r"|data type", DTYPES + r"|required")
case("stdlib", "result_type-no-arguments", lambda: xp.result_type(), (TE, VE),
     w("result_type"), r"at least one")
case("stdlib", "result_type-unknown-dtype", lambda: xp.result_type(F3, "nope"), TE,
     w("result_type"), r"'nope'|\bstr\b", r"array|dtype|element type|data type")
case("stdlib", "can_cast-unknown-dtype", lambda: xp.can_cast(F3, "nope"), TE,
     w("can_cast"), r"'nope'|\bto\b", r"dtype|element type|data type")
case("stdlib", "finfo-of-an-integer-type", lambda: xp.finfo(hd.int32), (TE, VE),
     w("finfo"), r"int32", r"float|inexact|complex")
case("stdlib", "iinfo-of-a-float-type", lambda: xp.iinfo(hd.float32), (TE, VE),
     w("iinfo"), r"float32", r"integer")
case("stdlib", "isdtype-unknown-kind", lambda: xp.isdtype(hd.float32, "weird"), VE,
     w("isdtype"), r"'weird'|\bkind\b", r"real floating|integral|bool|numeric")
case("stdlib", "sum-of-a-string", lambda: xp.sum("abc"), DISPATCH,
     w("sum"), r"'abc'|\bstr\b", r"Array|array")
case("stdlib", "sort-of-a-list", lambda: xp.sort([3, 1, 2]), DISPATCH,
     w("sort"), r"list|\[3, 1, 2\]", r"Array|array")

case("stdlib", "bitwise_and-of-floats", lambda: xp.bitwise_and(F3, F3), TE,
     w("bitwise_and"), r"float32|f32", r"integer|bool")
case("stdlib", "bitwise_left_shift-float-shift", lambda: xp.bitwise_left_shift(I3, F3), TE,
     w("bitwise_left_shift"), r"float32|f32", r"integer")
case("stdlib", "bitwise_invert-of-floats", lambda: xp.bitwise_invert(F3), TE,
     w("bitwise_invert"), r"float32|f32", r"integer|bool")
case("stdlib", "floor_divide-of-complex", lambda: xp.floor_divide(C3, C3), TE,
     w("floor_divide"), r"complex64|c64", r"real|integer|float")
case("stdlib", "remainder-of-complex", lambda: xp.remainder(C3, C3), TE,
     w("remainder"), r"complex64|c64", r"real|integer|float")
case("stdlib", "atan2-of-complex", lambda: xp.atan2(C3, C3), TE,
     w("atan2"), r"complex64|c64", r"real|float")
case("stdlib", "maximum-of-complex", lambda: xp.maximum(C3, C3), TE,
     w("maximum"), r"complex64|c64", r"real|order")
case("stdlib", "floor-of-complex", lambda: xp.floor(C3), TE,
     w("floor"), r"complex64|c64", r"real|order|float")
case("stdlib", "add-a-string", lambda: F3 + "a", TE,
     r"\badd\b|\+", r"\bstr\b|'a'", r"number|array|scalar")
case("stdlib", "where-condition-shape", lambda: xp.where(_a([True, False], np.bool_), F3, F3), SE,
     w("where"), T("pred", 2), BROADCAST)
case("stdlib", "top_k-k-larger-than-n", lambda: xp.top_k(F3, 5), VE,
     w("top_k"), r"\bk\b|\b5\b", r"<= ?3|at most|larger|exceed|size 3|\[0, ?3\]")
case("stdlib", "top_k-negative-k", lambda: xp.top_k(F3, -1), VE,
     w("top_k"), r"\bk\b|-1", NONNEG + r"|\[0, ?3\]")
case("stdlib", "searchsorted-2d-sorted-side", lambda: xp.searchsorted(F23, F3), (VE, SE),
     w("searchsorted"), T("f32", 2, 3), r"1-?d|one-dimensional|rank 1|vector")
case("stdlib", "searchsorted-unknown-side", lambda: xp.searchsorted(F3, F3, side="middle"), VE,
     w("searchsorted"), w("side"), r"left.*right|right.*left")
case("stdlib", "cumulative_sum-2d-without-axis", lambda: xp.cumulative_sum(F23), VE,
     w("cumulative_sum"), _AX, r"required|must be given|one-dimensional|1-?d")
case("stdlib", "diff-negative-n", lambda: xp.diff(F3, n=-1), VE,
     w("diff"), r"\bn\b", NONNEG)
case("stdlib", "nonzero-of-a-scalar", lambda: xp.nonzero(FS), VE,
     w("nonzero"), r"0-?d|rank[ -]0|scalar|f32\[\]",
     r"at least 1|1-?d|rank >= ?1|at least one dim|rank 1")
case("stdlib", "unique_values-of-a-string", lambda: xp.unique_values("ab"), DISPATCH,
     w("unique_values"), r"\bstr\b|'ab'", r"Array|array")
case("stdlib", "take-float-indices", lambda: xp.take(F3, _a([0.5], np.float32)), (TE, IE),
     w("take"), r"indices|f32\[1\]|float", r"integer")
case("stdlib", "take_along_axis-ranks-differ", lambda: xp.take_along_axis(F23, I3, axis=0),
     (VE, SE), w("take_along_axis"), T("s32", 3), r"rank|same number of dim|ndim")
case("stdlib", "cross-wrong-size", lambda: xp.linalg.cross(F4, F4), (VE, SE),
     w("cross"), T("f32", 4), r"size 3|3 elements|length 3|\b3\b")

# -- indexing ------------------------------------------------------------------------

case("indexing", "index-out-of-bounds", lambda: F3[5], IE,
     r"\bindex\b", r"\b5\b", r"size 3|bounds|\[-3, ?3\)|-3")
case("indexing", "negative-index-out-of-bounds", lambda: F3[-4], IE,
     r"\bindex\b", r"-4", r"size 3|bounds|\[-3, ?3\)|-3")
case("indexing", "too-many-indices", lambda: F3[0, 0], IE,
     r"\bind(ex|ices)\b", r"\b2\b|too many", RANK(1) + r"|1-?dimensional")
case("indexing", "string-index", lambda: F3["a"], IE,
     r"\bindex\b|\bind(ex|ices)\b", r"\bstr\b|'a'", r"integer|slice|ellipsis|newaxis")
case("indexing", "float-index", lambda: F3[1.5], IE,
     r"\bindex\b|\bind(ex|ices)\b", r"float|1\.5", r"integer|slice|ellipsis|newaxis")
case("indexing", "two-ellipses", lambda: F23[..., ...], IE,
     r"\bindex\b|\bind(ex|ices)\b", r"ellipsis|\.\.\.", r"one|single|at most")
case("indexing", "mask-length-differs", lambda: F3[_a([True, False], np.bool_)], IE,
     r"\bindex\b|mask|boolean", T("pred", 2) + r"|boolean axis is 2", r"\b3\b|shape|match")
case("indexing", "mask-shape-differs", lambda: F23[B3], IE,
     r"\bindex\b|mask|boolean", T("pred", 3) + r"|boolean axis is 3", r"\(2,|\b2\b|shape|match")
case("indexing", "float-array-index", lambda: F3[F3], IE,
     r"\bindex\b|\bind(ex|ices)\b", T("f32", 3) + r"|array of float32", r"integer|bool")
case("indexing", "slice-step-zero", lambda: F3[::0], VE,
     r"slice|step", r"\b0\b|zero", r"non-?zero|!= ?0|cannot be zero")
case("indexing", "slice-float-bound", lambda: F3[0.5:2], (TE, IE),
     r"slice|\bindex\b|\bind(ex|ices)\b", r"0\.5|float", r"integer|None")
case("indexing", "at-set-out-of-bounds", lambda: F3.at[5].set(1.0), IE,
     r"\bindex\b|\bat\b", r"\b5\b", r"size 3|bounds|\[-3, ?3\)")
case("indexing", "at-set-does-not-broadcast", lambda: F3.at[0].set(F4), SE,
     r"\bset\b|\bat\b", T("f32", 4), BROADCAST + r"|shape")
case("indexing", "at-set-a-string", lambda: F3.at[0].set("a"), TE,
     r"\bset\b|\bat\b", r"\bstr\b|'a'", r"number|array|scalar")
case("indexing", "take-index-out-of-bounds", lambda: xp.take(F3, _a([7], np.int32)), IE,
     w("take"), r"\b7\b", r"size 3|bounds|\[-3, ?3\)")
case("indexing", "getitem-assignment", lambda: F3.__setitem__(0, 1.0), TE,
     r"immutable", r"hlodsl arrays|\bArray\b", r"\.at\[")

# == linalg ===========================================================================

# Shape errors of the factorizations (eigh and svd stand for the other decompositions,
# which share their checks).
for _fn in ("inv", "det", "slogdet", "cholesky", "eigh", "matrix_power"):
    _f = getattr(xp.linalg, _fn)
    _call = (lambda f=_f: f(F23, 2)) if _fn == "matrix_power" else (lambda f=_f: f(F23))
    case("linalg", f"{_fn}-non-square", _call, SHAPE_OR_VALUE,
         w(_fn), T("f32", 2, 3), SQUARE)
for _fn in ("inv", "det", "cholesky", "svd", "matrix_norm", "diagonal", "trace"):
    case("linalg", f"{_fn}-of-a-vector", lambda f=getattr(xp.linalg, _fn): f(F3), SHAPE_OR_VALUE,
         w(_fn), T("f32", 3), r"at least 2|rank|2 dim|matri|\(\.\.\., ?m, ?n\)")
del _fn, _f, _call
case("linalg", "solve-rhs-rows-differ", lambda: xp.linalg.solve(F33, F4), SHAPE_OR_VALUE,
     w("solve"), T("f32", 3, 3), T("f32", 4))
case("linalg", "solve-non-square", lambda: xp.linalg.solve(F23, F3), SHAPE_OR_VALUE,
     w("solve"), T("f32", 2, 3), SQUARE)
case("linalg", "solve-batches-do-not-broadcast",
     lambda: xp.linalg.solve(_a(np.eye(2)[None].repeat(2, 0), np.float32),
                             _a(np.ones((3, 2, 1)), np.float32)), SHAPE_OR_VALUE,
     w("solve"), r"f32\[2,2,2\]|\(2, 2, 2\)", BROADCAST + r"|batch")
case("linalg", "solve-integer", lambda: xp.linalg.solve(_a(np.eye(2), np.int32),
                                                         _a([1, 1], np.int32)), (TE, SE),
     w("solve"), r"int32|s32", FLOATY)
case("linalg", "solve_triangular-rows-differ", lambda: xp.linalg.solve_triangular(F33, F4),
     SHAPE_OR_VALUE, w("solve_triangular"), T("f32", 3, 3), T("f32", 4))
case("linalg", "matrix_power-float-exponent", lambda: xp.linalg.matrix_power(F33, 1.5), TE,
     w("matrix_power"), r"\bn\b|1\.5", INT)
case("linalg", "vector_norm-unknown-ord", lambda: xp.linalg.vector_norm(F3, ord="fro"), VE,
     w("vector_norm"), w("ord"), r"inf|number|float|int")
case("linalg", "matrix_norm-unknown-ord", lambda: xp.linalg.matrix_norm(F33, ord=3), VE,
     w("matrix_norm"), w("ord"), r"fro.*nuc|nuc.*fro|inf")
case("linalg", "vector_norm-axis-out-of-range", lambda: xp.linalg.vector_norm(F23, axis=2),
     AXIS, w("vector_norm"), _AX, RANK(2))
case("linalg", "outer-of-matrices", lambda: xp.linalg.outer(F23, F3), SHAPE_OR_VALUE,
     w("outer"), T("f32", 2, 3), r"1-?d|one-dimensional|vector|rank 1")
case("linalg", "tensordot-axes-sizes-differ",
     lambda: xp.linalg.tensordot(F23, F23, axes=((0,), (1,))), SE,
     w("tensordot"), T("f32", 2, 3), r"size|match|differ")
case("linalg", "cross-axis-out-of-range", lambda: xp.linalg.cross(F3, F3, axis=3), AXIS,
     w("cross"), _AX, RANK(1) + r"|shapes? \(3,\)")
case("linalg", "diagonal-offset-float", lambda: xp.linalg.diagonal(F33, offset=0.5), TE,
     w("diagonal"), w("offset"), INT)
case("linalg", "matmul-vector-vector-sizes-differ", lambda: xp.linalg.matmul(F3, F4), SE,
     r"\bmatmul\b|\bDot\b", T("f32", 3), T("f32", 4))

# == transformations ==================================================================


def _square(x):
    return x * x


def _total(x):
    return xp.sum(x * x)


_LEAK: list = []


def _leaked():
    """A symbolic array that escaped the function being staged."""
    hd.compile(lambda x: (_LEAK.append(x * 2), x)[1])(F3)
    return _LEAK[-1]


case("transforms", "compile-unhashable-static-arg",
     lambda: hd.compile(lambda x, options: x)(F3, {"axes": {0, 1}}), TE,
     r"static|options|compile", r"\bset\b|\{0, 1\}", HASHABLE)
case("transforms", "compile-returns-a-string", lambda: hd.compile(lambda x: "hello")(F3),
     (STE, TE), r"<lambda>|staged function|compile", r"\bstr\b|'hello'", ARRAYS)
case("transforms", "compile-of-a-non-callable", lambda: hd.compile(42), TE,
     w("compile"), r"\bint\b|\b42\b", CALLABLE)
case("transforms", "compile-too-many-arguments", lambda: hd.compile(_square)(F3, F3), TE,
     w("_square"), r"\b2\b", r"takes 1|1 positional|one argument")
case("transforms", "compile-negative-cache-size", lambda: hd.compile(_square, cache_size=-1), VE,
     w("compile"), w("cache_size"), POS + "|" + NONNEG)
case("transforms", "compile-symbolic-argument-outside-staging",
     lambda: hd.compile(_square)(_leaked()), (STE, TE),
     r"symbolic", r"escaped|outside|f32\[3\]", r"staging|staged")
case("transforms", "grad-of-a-vector-output", lambda: hd.grad(_square)(F3), TE,
     w("grad"), T("f32", 3), r"scalar")
case("transforms", "grad-of-an-integer-input", lambda: hd.grad(_total)(I3), TE,
     w("grad"), T("s32", 3) + r"|int32", r"float")
case("transforms", "grad-of-a-complex-output",
     lambda: hd.grad(lambda x: xp.sum(x * hd.array(np.complex64(1j))))(F3), TE,
     w("grad"), r"c64|complex", r"real")
case("transforms", "grad-of-an-integer-output",
     lambda: hd.grad(lambda x: xp.astype(xp.sum(x), hd.int32))(F3), TE,
     w("grad"), T("s32") + r"|int32", r"float")
case("transforms", "grad-of-a-python-output", lambda: hd.grad(lambda x: 1.0)(F3), TE,
     w("grad"), r"\bfloat\b", r"scalar .*array|array")
case("transforms", "grad-argnums-out-of-range", lambda: hd.grad(_total, argnums=3)(F3), VE,
     w("grad"), w("argnums"), r"1 positional|range|< ?1")
case("transforms", "grad-argnums-float", lambda: hd.grad(_total, argnums=0.5)(F3), TE,
     w("grad"), w("argnums"), INT)
case("transforms", "grad-argnums-repeated", lambda: hd.grad(lambda a, b: xp.sum(a * b),
                                                            argnums=(0, 0))(F3, F3), VE,
     w("grad"), w("argnums"), r"repeat|duplicate|distinct|unique")
case("transforms", "grad-of-a-non-callable", lambda: hd.grad(3)(F3), TE,
     w("grad"), r"\bint\b|\b3\b", CALLABLE)
case("transforms", "grad-of-a-string-argument", lambda: hd.grad(_total)("abc"), TE,
     w("grad"), r"\bstr\b|'abc'", r"float|array")
case("transforms", "grad-has-aux-without-pair", lambda: hd.grad(_total, has_aux=True)(F3), TE,
     w("grad"), r"has_aux", PAIR + r"|\(output, aux\)")
case("transforms", "value_and_grad-of-a-vector-output",
     lambda: hd.value_and_grad(_square)(F3), TE,
     r"value_and_grad|\bgrad\b", T("f32", 3), r"scalar")
case("transforms", "vjp-cotangent-shape", lambda: hd.vjp(_square, F3)[1](F4), TE,
     w("vjp"), T("f32", 4), T("f32", 3))
case("transforms", "vjp-cotangent-dtype", lambda: hd.vjp(_square, F3)[1](F64_3), TE,
     w("vjp"), T("f64", 3), T("f32", 3))
case("transforms", "vjp-cotangent-structure", lambda: hd.vjp(_square, F3)[1]((F3, F3)), TE,
     w("vjp"), r"structure|tuple", r"output|match")
case("transforms", "vjp-cotangent-string", lambda: hd.vjp(_square, F3)[1]("abc"), TE,
     w("vjp"), r"\bstr\b|'abc'", r"f32\[3\]|array")
case("transforms", "vjp-of-an-integer-primal", lambda: hd.vjp(_square, I3), TE,
     w("vjp"), T("s32", 3), r"float")
case("transforms", "vjp-has-aux-without-pair", lambda: hd.vjp(_square, F3, has_aux=True), TE,
     w("vjp"), r"has_aux|Array", PAIR + r"|\(output, aux\)")
case("transforms", "jvp-tangent-shape", lambda: hd.jvp(_square, (F3,), (F4,)), TE,
     w("jvp"), T("f32", 4), T("f32", 3))
case("transforms", "jvp-tangent-dtype", lambda: hd.jvp(_square, (F3,), (I3,)), TE,
     w("jvp"), T("s32", 3), T("f32", 3))
case("transforms", "jvp-structure-differs", lambda: hd.jvp(_square, (F3,), (F3, F3)), TE,
     w("jvp"), r"f32\[3\], f32\[3\]|2 tangents|two tangents", r"primals|match")
case("transforms", "jvp-primals-not-a-tuple", lambda: hd.jvp(_square, F3, F3), TE,
     w("jvp"), r"primals", r"tuple")
case("transforms", "jvp-tangent-string", lambda: hd.jvp(_square, (F3,), ("abc",)), TE,
     w("jvp"), r"\bstr\b|'abc'", T("f32", 3))
case("transforms", "jvp-has-aux-without-pair", lambda: hd.jvp(_square, (F3,), (F3,), has_aux=True),
     TE, w("jvp"), r"has_aux|Array", PAIR + r"|\(output, aux\)")
case("transforms", "hessian-of-a-vector-output", lambda: hd.hessian(_square)(F3), TE,
     r"hessian", T("f32", 3), r"scalar")
case("transforms", "hessian-of-an-integer-input", lambda: hd.hessian(_total)(I3), TE,
     r"hessian", T("s32", 3) + r"|int32", r"float")
case("transforms", "hessian-of-two-arguments",
     lambda: hd.hessian(lambda a, b: xp.sum(a * b))(F3, F3),
     TE, r"hessian", r"\b2\b|two", r"one|1 (positional )?argument")
case("transforms", "hvp-tangent-shape", lambda: hd.hvp(_total, (F3,), (F4,)), TE,
     r"\bhvp\b", T("f32", 4), T("f32", 3))
case("transforms", "custom_vjp-without-rule", lambda: hd.grad(hd.custom_vjp(_total))(F3),
     (TE, VE), r"custom_vjp", r"_total|defvjp|rule", r"defvjp")

# == control flow combinators =========================================================


def _inc(x):
    return x + 1


case("control", "cond-vector-predicate", lambda: hd.cond(B3, lambda: F3, lambda: F3), SE,
     w("cond"), T("pred", 3), r"pred\[\]|scalar")
case("control", "cond-float-predicate", lambda: hd.cond(FS, lambda: F3, lambda: F3), SE,
     w("cond"), T("f32"), r"pred\[\]|bool")
case("control", "cond-string-predicate", lambda: hd.cond("yes", lambda: F3, lambda: F3), TE,
     w("cond"), r"\bstr\b|'yes'", r"bool")
case("control", "cond-branch-not-callable", lambda: hd.cond(BS, 1, lambda: F3), TE,
     w("cond"), w("true_fn"), CALLABLE)
case("control", "cond-branch-shapes-differ", lambda: hd.cond(BS, lambda: F3, lambda: F4), SE,
     w("cond"), T("f32", 3), T("f32", 4), r"same")
case("control", "cond-branch-structures-differ",
     lambda: hd.cond(BS, lambda: F3, lambda: (F3, F3)), SE,
     w("cond"), r"false_fn|true_fn", r"same structure|same")
case("control", "cond-branch-dtypes-differ", lambda: hd.cond(BS, lambda: F3, lambda: I3), SE,
     w("cond"), T("f32", 3), T("s32", 3))
case("control", "cond-branch-arity", lambda: hd.cond(BS, lambda x: x, lambda x: x), (TE, STE),
     w("cond") + r"|true_fn", r"\b0\b|no operands|missing", r"\b1\b|x\b")
case("control", "cond-branch-returns-string", lambda: hd.cond(BS, lambda: "a", lambda: "b"),
     (TE, STE), w("cond") + r"|true_fn", r"\bstr\b|'a'", ARRAYS)
case("control", "switch-no-branches", lambda: hd.switch(IS, [], F3), VE,
     w("switch"), r"branch", r"at least one")
case("control", "switch-branches-a-function", lambda: hd.switch(IS, _inc, F3), TE,
     w("switch"), w("branches"), r"sequence")
case("control", "switch-float-index", lambda: hd.switch(FS, [_inc, _inc], F3), (SE, TE),
     w("switch"), T("f32"), r"integer")
case("control", "switch-vector-index", lambda: hd.switch(I3, [_inc, _inc], F3), (SE, TE),
     w("switch"), T("s32", 3), r"scalar")
case("control", "switch-string-index", lambda: hd.switch("1", [_inc, _inc], F3), TE,
     w("switch"), r"\bstr\b|'1'", r"int")
case("control", "switch-branch-not-callable", lambda: hd.switch(IS, [_inc, 3], F3), TE,
     w("switch"), r"branches\[1\]", CALLABLE)
case("control", "switch-branch-structures-differ",
     lambda: hd.switch(IS, [_inc, lambda x: (x, x)], F3), SE,
     w("switch"), r"branches\[1\]", r"same structure|same")
case("control", "while_loop-cond-returns-vector",
     lambda: hd.while_loop(lambda s: s > 0, _inc, F3), SE,
     w("while_loop"), w("cond_fn"), r"pred\[\]|scalar")
case("control", "while_loop-body-changes-shape",
     lambda: hd.while_loop(lambda s: xp.sum(s) < 10, lambda s: xp.concat([s, s]), F3), SE,
     w("while_loop"), w("body_fn"), T("f32", 6))
case("control", "while_loop-body-changes-dtype",
     lambda: hd.while_loop(lambda s: xp.sum(s) < 10, lambda s: xp.astype(s, hd.float64), F3), SE,
     w("while_loop"), w("body_fn"), T("f64", 3))
case("control", "while_loop-body-changes-structure",
     lambda: hd.while_loop(lambda s: xp.sum(s) < 10, lambda s: (s, s), F3), SE,
     w("while_loop"), w("body_fn"), r"structure|tuple")
case("control", "while_loop-cond-not-callable", lambda: hd.while_loop(None, _inc, F3), TE,
     w("while_loop"), w("cond_fn"), CALLABLE)
case("control", "while_loop-init-a-string",
     lambda: hd.while_loop(lambda s: BS, lambda s: s, "abc"), TE,
     w("while_loop"), w("init"), r"array|number")
case("control", "while_loop-cond-returns-python-int",
     lambda: hd.while_loop(lambda s: 1, _inc, F3), (SE, TE),
     w("while_loop"), w("cond_fn"), r"pred\[\]|array")
case("control", "fori_loop-carry-structure",
     lambda: hd.fori_loop(0, 3, lambda i, c: (c, c), F3), SE,
     w("fori_loop"), w("body_fn"), r"structure|tuple")
case("control", "fori_loop-carry-dtype",
     lambda: hd.fori_loop(0, 3, lambda i, c: xp.astype(c, hd.int32), F3), SE,
     w("fori_loop"), w("body_fn"), T("s32", 3))
case("control", "fori_loop-float-lower", lambda: hd.fori_loop(0.0, 3, lambda i, c: c, F3), TE,
     w("fori_loop"), w("lower"), INT)
case("control", "fori_loop-vector-upper", lambda: hd.fori_loop(0, I3, lambda i, c: c, F3), SE,
     w("fori_loop"), w("upper"), r"scalar")
case("control", "fori_loop-float-array-upper", lambda: hd.fori_loop(0, FS, lambda i, c: c, F3), SE,
     w("fori_loop"), w("upper"), r"integer")
case("control", "fori_loop-body-arity", lambda: hd.fori_loop(0, 3, lambda c: c, F3), (TE, STE),
     w("fori_loop") + r"|body_fn", r"\b1\b|\(c\)", r"\(i, carry\)|2|two")
case("control", "fori_loop-body-not-callable", lambda: hd.fori_loop(0, 3, None, F3), TE,
     w("fori_loop"), w("body_fn"), CALLABLE)
case("control", "fori_loop-bool-upper", lambda: hd.fori_loop(0, True, lambda i, c: c, F3), TE,
     w("fori_loop"), w("upper"), INT)
case("control", "scan-scalar-xs", lambda: hd.scan(lambda c, x: (c, x), FS, FS), SE,
     w("scan"), w("xs") + r"|f32\[\]", r"leading axis")
case("control", "scan-leading-sizes-differ", lambda: hd.scan(lambda c, x: (c, x), FS, (F3, F4)),
     SE, w("scan"), T("f32", 3), T("f32", 4))
case("control", "scan-length-disagrees", lambda: hd.scan(lambda c, x: (c, x), FS, F3, length=5),
     VE, w("scan"), w("length"), r"leading size 3|\b3\b")
case("control", "scan-nothing-to-scan", lambda: hd.scan(lambda c, x: (c, x), FS), VE,
     w("scan"), r"\bxs\b|length", r"give|at least one")
case("control", "scan-negative-length", lambda: hd.scan(lambda c, x: (c, x), FS, length=-1), VE,
     w("scan"), w("length"), NONNEG)
case("control", "scan-float-length", lambda: hd.scan(lambda c, x: (c, x), FS, length=2.5), (TE, VE),
     w("scan"), w("length"), INT)
case("control", "scan-f-returns-carry-only", lambda: hd.scan(lambda c, x: c, FS, F3), SE,
     w("scan"), r"\bf\b", PAIR + r"|\(carry, y\)")
case("control", "scan-carry-dtype-changes",
     lambda: hd.scan(lambda c, x: (xp.astype(c, hd.float64), x), FS, F3), SE,
     w("scan"), T("f64"), T("f32"))
case("control", "scan-f-not-callable", lambda: hd.scan(None, FS, F3), TE,
     w("scan"), r"\bf\b", CALLABLE)
case("control", "scan-xs-a-string", lambda: hd.scan(lambda c, x: (c, x), FS, "abc"), TE,
     w("scan"), w("xs"), r"array")

# == Python control flow on symbolic arrays ===========================================


def _if_vector(x):
    if x > 0:
        return x
    return -x


def _if_no_convert(x):
    if xp.sum(x) > 0:
        return x
    return -x


def _while_no_convert(x):
    while xp.sum(x) < 10:
        x = x * 2
    return x


def _only_one_branch(x):
    if xp.sum(x) > 0:
        y = x * 2
    return y  # noqa: F821 (that is the point)


def _retype(x):
    if xp.sum(x) > 0:
        y = x
    else:
        y = xp.astype(x, hd.int32)
    return y


def _growing(x):
    while xp.sum(x) < 100:
        x = xp.concat([x, x])
    return x


def _return_in_loop(x):
    while xp.sum(x) < 100:
        x = x * 2
        return x
    return x


def _raise_in_branch(x):
    if xp.sum(x) > 0:
        raise ValueError("positive")
    return x


def _string_changes(x):
    tag = "neg"
    if xp.sum(x) > 0:
        tag = "pos"
    return x if tag == "neg" else -x


def _float_range(x, n):
    for _ in range(n):
        x = x + 1
    return x


def _symbolic_step(x, n):
    for _ in range(0, 10, n):
        x = x + 1
    return x


def _delete_in_branch(x):
    y = x
    if xp.sum(x) > 0:
        del y
    return x


def _iterate_a_scalar(x):
    return [v for v in xp.sum(x)]


def _list_index(x):
    return [F3, F3][xp.argmax(x)]


def _float_of_symbolic(x):
    return float(xp.sum(x))


def _item_of_symbolic(x):
    return x[0].item()


def _int_of_symbolic(x):
    return int(xp.sum(x))


def _numpy_of_symbolic(x):
    return np.asarray(x) * 2


def _recurse_on_symbolic(x):
    """Recursion whose end depends on an array: staging takes both branches forever."""
    if xp.sum(x) > 0:
        return _recurse_on_symbolic(x - 1.0)
    return x


_IF = r"\bif\b|condition|bool\(\)"
case("python-flow", "recursion-under-a-symbolic-if",
     lambda: hd.compile(_recurse_on_symbolic)(F3), STE,
     r"_recurse_on_symbolic", r"recurs", r"while_loop|static")
case("python-flow", "if-on-a-vector", lambda: hd.compile(_if_vector)(F3), (VE, SE, STE),
     _IF, T("pred", 3), r"any|all|scalar")
case("python-flow", "if-without-conversion", lambda: hd.compile(_if_no_convert, convert=False)(F3),
     STE, _IF, r"symbolic|pred\[\]", r"where|Select|hd\.cond")
case("python-flow", "while-without-conversion",
     lambda: hd.compile(_while_no_convert, convert=False)(F3), STE,
     r"\bwhile\b|bool\(\)", r"symbolic|pred\[\]", r"while_loop|where|Select")
case("python-flow", "variable-set-in-one-branch", lambda: hd.compile(_only_one_branch)(F3), STE,
     r"\bif\b", r"'y'", r"both branches|before the if")
case("python-flow", "branches-give-different-types", lambda: hd.compile(_retype)(F3), SE,
     r"\bif\b", r"'y'", T("s32", 3))
case("python-flow", "loop-grows-its-carry", lambda: hd.compile(_growing)(F3), SE,
     r"\bwhile\b", r"'x'", T("f32", 6))
case("python-flow", "return-inside-a-symbolic-loop", lambda: hd.compile(_return_in_loop)(F3),
     STE, r"\bwhile\b|loop", r"return", r"static|symbolic|cannot|not converted")
case("python-flow", "raise-in-a-symbolic-branch", lambda: hd.compile(_raise_in_branch)(F3),
     STE, r"\bif\b", r"raise", r"static|symbolic|cannot|not converted")
case("python-flow", "string-changed-in-a-branch", lambda: hd.compile(_string_changes)(F3),
     (STE, TE), r"\bif\b", r"'tag'", r"same in both|unchanged|static|arrays")
case("python-flow", "range-of-a-float", lambda: hd.compile(_float_range)(F3, FS),
     (TE, SE, STE),
     r"\brange\b|\bfor\b", T("f32"), r"integer")
case("python-flow", "range-symbolic-step", lambda: hd.compile(_symbolic_step)(F3, IS), (TE, STE),
     r"\brange\b|\bfor\b", r"step", r"Python int|static")
case("python-flow", "del-in-a-symbolic-branch", lambda: hd.compile(_delete_in_branch)(F3), STE,
     r"\bif\b|\bdel\b", r"'y'|\bdel\b", r"static|symbolic|cannot|not converted")
case("python-flow", "iterate-over-a-scalar", lambda: hd.compile(_iterate_a_scalar)(F3), TE,
     r"iterat", r"0-?d|rank-?0|f32\[\]|scalar", r"leading axis|at least 1|1-?d")
case("python-flow", "symbolic-list-index", lambda: hd.compile(_list_index)(F3), STE,
     r"index", r"symbolic|s64\[\]|s32\[\]", r"take|where|Select|only known|dynamic")
case("python-flow", "float-of-symbolic", lambda: hd.compile(_float_of_symbolic)(F3), STE,
     r"float\(\)", r"symbolic|f32\[\]", r"only known|runs|where|Select")
case("python-flow", "int-of-symbolic", lambda: hd.compile(_int_of_symbolic)(F3), STE,
     r"int\(\)", r"symbolic|f32\[\]", r"only known|runs|where|Select|astype")
case("python-flow", "item-of-symbolic", lambda: hd.compile(_item_of_symbolic)(F3), STE,
     r"item|numpy", r"symbolic|f32\[\]", r"only known|runs")
case("python-flow", "numpy-of-symbolic", lambda: hd.compile(_numpy_of_symbolic)(F3), STE,
     r"numpy", r"symbolic|f32\[3\]", r"only known|runs")
case("python-flow", "bool-of-a-concrete-vector", lambda: bool(F3), VE,
     r"truth value|bool", r"\(3,\)|f32\[3\]", r"\bany\b|\ball\b")
case("python-flow", "int-of-a-concrete-vector", lambda: int(F3), TE,
     r"int\(\)|\bint\b", r"\(3,\)|f32\[3\]", r"size-?1|scalar|one element")
case("python-flow", "float-of-a-concrete-vector", lambda: float(F3), TE,
     r"float\(\)|\bfloat\b", r"\(3,\)|f32\[3\]", r"size-?1|scalar|one element")
case("python-flow", "len-of-a-scalar", lambda: len(FS), TE,
     r"len\(\)", r"rank-?0|0-?d|f32\[\]|scalar", r"at least 1|1-?d|unsized|no len")
case("python-flow", "index-with-a-float-scalar", lambda: [1, 2][FS], TE,
     r"index", r"f32\[\]|float", r"integer scalar")

# == nn layers and optimisers =========================================================

_KEY = nn.key(0)

case("nn", "linear-in-features-differ", lambda: nn.linear(F23, F22), SE,
     w("linear"), r"in_features", T("f32", 2, 3))
case("nn", "linear-weight-a-string", lambda: nn.linear(F23, "W"), TE,
     w("linear"), r"\bW\b", r"Array|array")
case("nn", "linear-bias-size", lambda: nn.linear(F23, F33, F4), SE,
     w("linear"), r"bias|\bb\b", T("f32", 4))
case("nn", "linear-dtypes-differ", lambda: nn.linear(F23, _a(np.ones((2, 3)), np.float64)), SE,
     w("linear"), T("f64", 2, 3), r"element type")
case("nn", "conv-input-rank", lambda: nn.conv(F3, K33), SE,
     w("conv"), T("f32", 3), r"\(N, C, \*spatial\)|spatial|rank")
case("nn", "conv-channels-differ", lambda: nn.conv(IMG, K_C2), SE,
     w("conv"), T("f32", 1, 2, 3, 3), r"C = |channel|groups")
case("nn", "conv-zero-stride", lambda: nn.conv(IMG, K33, stride=0), VE,
     w("conv"), w("stride"), POS)
case("nn", "conv-float-stride", lambda: nn.conv(IMG, K33, stride=1.5), TE,
     w("conv"), w("stride"), INT)
case("nn", "conv-stride-too-many-entries", lambda: nn.conv(IMG, K33, stride=(1, 1, 1)), VE,
     w("conv"), w("stride"), r"2 entries|one per spatial|two")
case("nn", "conv-unknown-padding", lambda: nn.conv(IMG, K33, padding="FULL"), VE,
     w("conv"), w("padding"), r"VALID.*SAME|SAME.*VALID")
case("nn", "conv-negative-padding", lambda: nn.conv(IMG, K33, padding=-1), VE,
     w("conv"), w("padding"), NONNEG)
case("nn", "conv-zero-groups", lambda: nn.conv(IMG, K33, groups=0), VE,
     w("conv"), w("groups"), POS)
case("nn", "conv-kernel-larger-than-input", lambda: nn.conv(IMG, K55), SE,
     w("conv"), r"kernel|\(5, 5\)", r"fit|larger|padded")
case("nn", "conv-unknown-data-format", lambda: nn.conv(IMG, K33, data_format="NWHC"), VE,
     w("conv"), w("data_format"), r"NCHW.*NHWC")
case("nn", "conv-bias-size", lambda: nn.conv(IMG, K33, F3), SE,
     w("conv"), r"bias|\bb\b", T("f32", 3))
case("nn", "conv-integer-image", lambda: nn.conv(IMG_I, K33), SE,
     w("conv"), T("s32", 1, 1, 4, 4), r"element type|float")
case("nn", "max_pool-zero-window", lambda: nn.max_pool(IMG, 0), VE,
     w("max_pool"), w("window"), POS)
case("nn", "max_pool-window-larger-than-input", lambda: nn.max_pool(IMG, 5), SE,
     w("max_pool"), w("window"), r"fit|larger|padded")
case("nn", "max_pool-input-rank", lambda: nn.max_pool(F3, 2), SE,
     w("max_pool"), T("f32", 3), r"spatial|rank|\(N, C")
case("nn", "max_pool-string-window", lambda: nn.max_pool(IMG, "2x2"), TE,
     w("max_pool"), w("window"), INT)
case("nn", "avg_pool-integer-input", lambda: nn.avg_pool(IMG_I, 2), TE,
     w("avg_pool"), T("s32", 1, 1, 4, 4), r"float")
case("nn", "avg_pool-negative-stride", lambda: nn.avg_pool(IMG, 2, stride=-1), VE,
     w("avg_pool"), w("stride"), POS)
case("nn", "adaptive_avg_pool-zero-size", lambda: nn.adaptive_avg_pool(IMG, 0), VE,
     w("adaptive_avg_pool"), w("output_size"), POS)
case("nn", "embedding-float-ids", lambda: nn.embedding(F3, F23), SE,
     w("embedding"), r"\bids\b", r"integer")
case("nn", "embedding-table-rank", lambda: nn.embedding(I3, F3), SE,
     w("embedding"), r"table", r"\(num_embeddings, dim\)|2-?d|rank 2|matrix")
case("nn", "flatten-start-dim-out-of-range", lambda: nn.flatten(F3, start_dim=3), (VE, IE),
     w("flatten"), w("start_dim"), r"range|rank 1|f32\[3\]")
case("nn", "batch_norm-input-rank", lambda: nn.batch_norm(F3, F3, F3), SE,
     w("batch_norm"), T("f32", 3), r"\(N, C")
case("nn", "batch_norm-mean-size", lambda: nn.batch_norm(F23, F4, F3), SE,
     w("batch_norm"), w("running_mean"), T("f32", 4))
case("nn", "batch_norm-inference-without-statistics", lambda: nn.batch_norm(F23, None, None),
     VE, w("batch_norm"), r"running_mean", r"needs|required|training=True")
case("nn", "batch_norm-negative-eps", lambda: nn.batch_norm(F23, F3, F3, eps=-1.0), VE,
     w("batch_norm"), w("eps"), NONNEG + "|" + POS)
case("nn", "batch_norm-momentum-out-of-range",
     lambda: nn.batch_norm(F23, F3, F3, training=True, momentum=2.0), VE,
     w("batch_norm"), w("momentum"), r"\[0, ?1\]|between 0 and 1")
case("nn", "layer_norm-shape-not-trailing", lambda: nn.layer_norm(F23, 4), SE,
     w("layer_norm"), w("normalized_shape"), r"trailing")
case("nn", "layer_norm-weight-shape", lambda: nn.layer_norm(F23, 3, weight=F4), SE,
     w("layer_norm"), w("weight"), T("f32", 4))
case("nn", "layer_norm-float-shape", lambda: nn.layer_norm(F23, 3.0), TE,
     w("layer_norm"), w("normalized_shape"), INT)
case("nn", "log_softmax-integer-input", lambda: nn.log_softmax(I3), TE,
     w("log_softmax"), T("s32", 3) + r"|int32", r"float")
case("nn", "softmax-axis-float", lambda: nn.softmax(F3, axis=0.5), TE,
     w("softmax"), _AX, INT)
case("nn", "gelu-unknown-approximation", lambda: nn.gelu(F3, approximate="fast"), VE,
     w("gelu"), w("approximate"), r"none.*tanh")
case("nn", "leaky_relu-string-slope", lambda: nn.leaky_relu(F3, negative_slope="a"), TE,
     w("leaky_relu"), w("negative_slope"), r"number|float")
case("nn", "relu-of-a-string", lambda: nn.relu("abc"), DISPATCH,
     w("relu"), r"\bstr\b|'abc'", r"Array|array")
case("nn", "cross_entropy-label-shape", lambda: nn.cross_entropy(F23, I23), SE,
     w("cross_entropy"), r"labels", T("s32", 2, 3))
case("nn", "cross_entropy-probability-labels-type",
     lambda: nn.cross_entropy(F23, _a(np.ones((2, 3)), np.float64)), SE,
     w("cross_entropy"), r"labels", T("f64", 2, 3))
case("nn", "cross_entropy-unknown-reduction",
     lambda: nn.cross_entropy(F23, _a([0, 1], np.int32), reduction="avg"), VE,
     w("cross_entropy"), w("reduction"), r"mean.*sum.*none|none.*mean.*sum|mean.*none.*sum")
case("nn", "cross_entropy-bool-labels", lambda: nn.cross_entropy(F23, _a([True, False], np.bool_)),
     DISPATCH, w("cross_entropy"), r"labels|pred|bool", r"integer|float")
case("nn", "mse-shapes-differ", lambda: nn.mse(F3, F4), SE,
     w("mse"), T("f32", 3), T("f32", 4))
case("nn", "mse-unknown-reduction", lambda: nn.mse(F3, F3, reduction="avg"), VE,
     w("mse"), w("reduction"), r"mean.*sum|sum.*mean")
case("nn", "dropout-rate-out-of-range", lambda: nn.dropout(_KEY, F3, rate=1.5), VE,
     w("dropout"), w("rate"), r"\[0, 1\]|between 0 and 1")
case("nn", "dropout-key-a-string", lambda: nn.dropout("key", F3, 0.5), TE,
     w("dropout"), r"\bkey\b", r"uint64\[2\]|nn\.key")
case("nn", "key-negative-seed", lambda: nn.key(-1), VE,
     w("key"), w("seed"), r"\[0, 2\*\*64\)|non-?negative")
case("nn", "key-float-seed", lambda: nn.key(1.5), TE,
     w("key"), w("seed"), INT)
case("nn", "split-zero", lambda: nn.split(_KEY, 0), VE,
     w("split"), w("num"), POS)
case("nn", "split-float-num", lambda: nn.split(_KEY, 2.5), TE,
     w("split"), w("num"), INT)
case("nn", "uniform-integer-dtype", lambda: nn.uniform(_KEY, (2,), dtype=hd.int32), TE,
     w("uniform"), w("dtype"), r"float")
case("nn", "uniform-negative-shape", lambda: nn.uniform(_KEY, (-1,)), VE,
     w("uniform"), w("shape"), NONNEG)
case("nn", "uniform-min-above-max", lambda: nn.uniform(_KEY, (2,), minval=1.0, maxval=0.0), VE,
     w("uniform"), r"minval|maxval", r"<=|less|below")
case("nn", "normal-negative-std", lambda: nn.normal(_KEY, (2,), std=-1.0), VE,
     w("normal"), w("std"), NONNEG)
case("nn", "bernoulli-p-out-of-range", lambda: nn.bernoulli(_KEY, 1.5, (2,)), VE,
     w("bernoulli"), r"\bp\b", r"\[0, ?1\]|between 0 and 1")
case("nn", "random_bits-float-dtype", lambda: nn.random_bits(_KEY, (2,), dtype=hd.float32),
     (TE, VE), w("random_bits"), w("dtype"), r"unsigned|integer")
case("nn", "kaiming_uniform-vector-shape", lambda: nn.kaiming_uniform(_KEY, (3,)), VE,
     r"kaiming_uniform|fans", r"\(3,\)|shape", r"at least 2|2 dims")
case("nn", "kaiming_normal-unknown-mode", lambda: nn.kaiming_normal(_KEY, (3, 3), mode="fan_avg"),
     VE, w("kaiming_normal"), w("mode"), r"fan_in.*fan_out")
case("nn", "calculate_gain-unknown", lambda: nn.calculate_gain("swish"), VE,
     w("calculate_gain"), r"'swish'|nonlinearity", r"relu|tanh|linear")
case("nn", "xavier_uniform-string-gain", lambda: nn.xavier_uniform(_KEY, (3, 3), gain="a"), TE,
     w("xavier_uniform"), w("gain"), r"number|float")
case("nn", "sgd-negative-lr", lambda: nn.sgd(-0.1), VE,
     w("sgd"), w("lr"), NONNEG + "|" + POS)
case("nn", "sgd-string-lr", lambda: nn.sgd("fast"), TE,
     w("sgd"), w("lr"), r"number|float")
case("nn", "sgd-negative-momentum", lambda: nn.sgd(0.1, momentum=-1.0), VE,
     w("sgd"), w("momentum"), NONNEG)
case("nn", "sgd-nesterov-without-momentum", lambda: nn.sgd(0.1, nesterov=True), VE,
     w("sgd"), w("nesterov"), r"momentum > 0")
case("nn", "sgd-negative-weight-decay", lambda: nn.sgd(0.1, weight_decay=-1.0), VE,
     w("sgd"), w("weight_decay"), NONNEG)
case("nn", "adam-negative-lr", lambda: nn.adam(lr=-1.0), VE,
     w("adam"), w("lr"), NONNEG + "|" + POS)
case("nn", "adam-beta-out-of-range", lambda: nn.adam(b1=1.5), VE,
     w("adam"), w("b1"), r"\[0, ?1\)|between 0 and 1|< ?1")
case("nn", "adam-negative-eps", lambda: nn.adam(eps=-1e-8), VE,
     w("adam"), w("eps"), NONNEG + "|" + POS)
case("nn", "sgd-integer-parameters", lambda: nn.sgd(0.1).init({"w": I3}), TE,
     w("sgd"), r"parameter|'w'|\bw\b", r"float")
case("nn", "sgd-grads-structure", lambda: nn.sgd(0.1).update(
    {"v": F3}, nn.sgd(0.1).init({"w": F3}), {"w": F3}), VE,
     w("sgd"), w("grads"), r"parameters' structure|same structure|'w'")
case("nn", "sgd-grads-shape", lambda: nn.sgd(0.1).update(
    {"w": F4}, nn.sgd(0.1).init({"w": F3}), {"w": F3}), SE,
     w("sgd"), r"grads|'w'", T("f32", 4))
case("nn", "adam-grads-dtype", lambda: (lambda o: o.update({"w": F64_3}, o.init({"w": F3}),
                                                           {"w": F3}))(nn.adam()), (SE, TE),
     w("adam"), r"grads|'w'", T("f64", 3))
case("nn", "adam-state-from-another-optimiser", lambda: nn.adam().update(
    {"w": F3}, nn.sgd(0.1).init({"w": F3}), {"w": F3}), (VE, TE),
     w("adam"), r"\bstate\b", r"adam|init|'mu'|'nu'")
case("nn", "mlp-input-features-differ",
     lambda: models.mlp(models.mlp_init(_KEY, (4, 2)), F23), SE,
     r"\bmlp\b|\blinear\b", T("f32", 2, 3), r"in_features|\b4\b")
case("nn", "mlp_init-one-size", lambda: models.mlp_init(_KEY, (4,)), VE,
     w("mlp_init"), r"sizes|\(4,\)", r"input and an output|at least 2")
case("nn", "vgg19-image-too-small",
     lambda: models.vgg19({}, _a(np.zeros((1, 3, 16, 16)), np.float32)), SE,
     w("vgg19"), T("f32", 1, 3, 16, 16), r">= ?32")
case("nn", "vgg19-params-missing",
     lambda: models.vgg19({}, _a(np.zeros((1, 3, 32, 32)), np.float32)), (KeyError, VE, TE),
     w("vgg19"), r"'?features'?|params", r"structure|vgg19_init|expected")

# == loading weights ==================================================================


def _fake_vgg19_state(bad_key=None, bad_shape=None, drop=None):
    """A torchvision-VGG19-shaped state_dict of tiny stand-ins (only the keys are real)."""
    state = {}
    for i in models._feature_indices():
        for part in ("weight", "bias"):
            state[f"features.{i}.{part}"] = np.zeros((1,), np.float32)
    for i in (0, 3, 6):
        for part in ("weight", "bias"):
            state[f"classifier.{i}.{part}"] = np.zeros((1,), np.float32)
    if bad_key is not None:
        state[bad_key] = np.zeros(bad_shape, np.float32)
    if drop is not None:
        del state[drop]
    return state


def _real_shaped_vgg19_state_with(key, shape):
    """Real torchvision shapes but one wrong tensor; the weights stay lazily tiny (zeros)."""
    shapes, c_in = {}, 3
    for i, item in zip(models._feature_indices(), [c for c in models.VGG19_CONFIG if c != "M"]):
        shapes[f"features.{i}.weight"], shapes[f"features.{i}.bias"] = (item, c_in, 3, 3), (item,)
        c_in = item
    for i, (o, n) in zip((0, 3, 6), ((4096, 25088), (4096, 4096), (1000, 4096))):
        shapes[f"classifier.{i}.weight"], shapes[f"classifier.{i}.bias"] = (o, n), (o,)
    shapes[key] = shape
    # broadcast_to: one zero per tensor in memory, the shapes are what is checked
    return {k: np.broadcast_to(np.float32(0), s) for k, s in shapes.items()}


case("weights", "from_numpy-string-array", lambda: nn.from_numpy({"w": np.array(["a"])}), TE,
     w("from_numpy"), r"'weights\.w'|\bw\b", r"<U1|element type|supported")
case("weights", "from_numpy-object", lambda: nn.from_numpy({"w": object()}), TE,
     w("from_numpy"), r"'weights\.w'|\bw\b", r"array|number")
case("weights", "from_numpy-ragged-object-array",
     lambda: nn.from_numpy({"w": np.array([[1, 2], [3]], dtype=object)}), (TE, VE),
     w("from_numpy"), r"'weights\.w'|\bw\b", r"ragged|same length|rectangular|supported")
case("weights", "from_numpy-None", lambda: nn.from_numpy({"b": None}), TE,
     w("from_numpy"), r"'weights\.b'|\bb\b", r"array|NoneType")
case("weights", "from_torch-not-a-mapping", lambda: nn.from_torch([1, 2]), TE,
     w("from_torch"), w("state_dict") + r"|\blist\b", r"mapping|dict|name -> tensor")
case("weights", "from_torch-string-value", lambda: nn.from_torch({"w": "abc"}), TE,
     w("from_torch"), r"'w'", r"tensor|array")
case("weights", "nest-name-under-a-leaf", lambda: nn.nest({"a": 1, "a.b": 2}), VE,
     w("nest"), r"'a\.b'", r"leaf")
case("weights", "nest-level-with-entries", lambda: nn.nest({"a.b": 1, "a": 2}), VE,
     w("nest"), r"'a'", r"entries|level")
case("weights", "nest-non-string-key", lambda: nn.nest({1: 2}), TE,
     w("nest"), r"\b1\b|\bint\b", r"str|dotted name")
case("weights", "vgg19-state-dict-missing-key",
     lambda: models.vgg19_params_from_torch(_fake_vgg19_state(drop="features.0.weight")), KeyError,
     w("vgg19_params_from_torch"), r"features\.0\.weight", r"features\.\{i\}|names")
case("weights", "vgg19-state-dict-empty", lambda: models.vgg19_params_from_torch({}), KeyError,
     w("vgg19_params_from_torch"), r"features\.0\.weight", r"features\.\{i\}|names")
case("weights", "vgg19-state-dict-wrong-shape",
     lambda: models.vgg19_params_from_torch(
         _real_shaped_vgg19_state_with("features.0.weight", (64, 1, 3, 3))), SE,
     w("vgg19_params_from_torch"), r"features\.0\.weight", r"\(64, 3, 3, 3\)")
case("weights", "vgg19-state-dict-unexpected-key",
     lambda: models.vgg19_params_from_torch(
         {**_real_shaped_vgg19_state_with("features.0.bias", (64,)),
          "features.99.weight": np.zeros((1,), np.float32)}), (KeyError, VE),
     w("vgg19_params_from_torch"), r"features\.99\.weight", r"unexpected|unknown|not a VGG19")
case("weights", "vgg19-to-channels-last-bad-structure",
     lambda: models.vgg19_to_channels_last({"features": []}), VE,
     w("vgg19_to_channels_last"), r"params", r"structure")
case("weights", "vgg19-to-channels-last-bad-shapes",
     lambda: models.vgg19_to_channels_last(
         {"features": [{"weight": F3, "bias": F3}], "classifier": [{"weight": F23, "bias": F3}]}),
     SE, w("vgg19_to_channels_last"), r"\(3,\)", r"OIHW|C \* 7 \* 7")
case("weights", "loaded-weight-wrong-shape-in-linear",
     lambda: nn.linear(F23, nn.from_numpy({"w": np.ones((4, 4), np.float32)})["w"]), SE,
     w("linear"), T("f32", 4, 4), r"in_features")

# == introspection ====================================================================

case("introspect", "code_hlo-of-a-non-callable", lambda: hd.code_hlo(42, F3), TE,
     w("code_hlo"), r"\bint\b|\b42\b", CALLABLE)
case("introspect", "code_typed-of-a-non-callable", lambda: hd.code_typed("f", F3), TE,
     w("code_typed"), r"\bstr\b|'f'", CALLABLE)
case("introspect", "code_typed-missing-argument", lambda: hd.code_typed(lambda a, b: a + b, F3),
     TE, r"<lambda>|code_typed", r"\bb\b|missing", r"argument")
case("introspect", "code_hlo-shape-error-propagates", lambda: hd.code_hlo(lambda x: x @ x, F23),
     SE, r"\bDot\b|matmul", T("f32", 2, 3), r"contract")
case("introspect", "code_hlo-optimize-not-bool", lambda: hd.code_hlo(_square, F3, optimize="yes"),
     TE, w("code_hlo"), w("optimize"), r"bool|True or False")
case("introspect", "code_hlo-returns-no-arrays", lambda: hd.code_hlo(lambda x: 3, F3), STE,
     r"<lambda>|staged function", r"returned|\bint\b", ARRAYS)
case("introspect", "code_typed-unhashable-static",
     lambda: hd.code_typed(lambda x, o: x, F3, {1}), TE,
     r"static|\bo\b", r"\bset\b|\{1\}", HASHABLE)
case("introspect", "code_hlo-unknown-keyword",
     lambda: hd.code_hlo(_square, F3, optimise=True), TE,
     r"_square|code_hlo", r"optimise", r"unexpected|keyword|optimize")

# == hd.array and element types =======================================================

case("array", "object-array", lambda: hd.array(np.array([1, "a"], dtype=object)), TE,
     r"\barray\b", r"object", r"supported|element type")
case("array", "ragged-list", lambda: hd.array([[1, 2], [3]]), VE,
     r"\barray\b", r"ragged|inhomogeneous|shape", r"rectangular|same length|nested")
case("array", "string", lambda: hd.array("abc"), TE,
     r"\barray\b", r"<U3|\bstr\b", r"supported|element type")
case("array", "None", lambda: hd.array(None), TE,
     r"\barray\b", r"None|object", r"number|array|list|supported")
case("array", "dict", lambda: hd.array({1: 2}), TE,
     r"\barray\b", r"dict|object", r"number|array|list|supported")
case("array", "datetime", lambda: hd.array(np.datetime64("2020-01-01")), TE,
     r"\barray\b", r"datetime64|<M8", r"supported|element type")
case("array", "unknown-dtype", lambda: hd.array([1, 2], dtype="float99"), TE,
     r"\barray\b", r"float99", DTYPES)
case("array", "object-dtype", lambda: hd.array([1, 2], dtype=object), TE,
     r"\barray\b", r"object", r"supported|element type")
case("array", "int-too-large", lambda: hd.array(2 ** 70), (OverflowError, VE),
     r"\barray\b", r"1180591620717411303424|too large|overflow", r"int64|uint64|64-bit")
case("array", "negative-to-unsigned", lambda: hd.array([-1], dtype=hd.uint32), (OverflowError, VE),
     r"\barray\b", r"-1", r"uint32|range|unsigned")
case("array", "structured-dtype", lambda: hd.array(np.zeros(2, [("a", "<f4"), ("b", "<i4")])), TE,
     r"\barray\b", r"structured|\[\('a'", r"field|one element type")
case("array", "Array-negative-shape-parameter", lambda: hd.Array[hd.float32, (-1,)], TE,
     r"\bArray\b", r"\(-1,\)|shape", NONNEG)
case("array", "Array-unknown-element-type", lambda: hd.Array["nope", (3,)], TE,
     r"\bArray\b|element type", r"'nope'", r"float32|supported")
case("array", "element-type-called", lambda: hd.float32(1.0), TE,
     r"float32", r"type", r"hlodsl\.array")
case("array", "element_type-unknown", lambda: hd.element_type("nope"), TE,
     r"element type|element_type", r"'nope'", r"float32|supported")
case("array", "hash-an-array", lambda: hash(F3), TE,
     r"hash", r"hlodsl arrays|\bArray\b", r"not hashable|unhashable")
case("array", "to_device-unknown", lambda: F3.to_device("tpu:0"), VE,
     w("to_device"), r"'tpu:0'", r"target|device")
case("array", "numpy-copy-false-dtype", lambda: F3.__array__(np.float64, copy=False), VE,
     r"numpy|convert", r"float64", r"copy")

# == DLPack ===========================================================================

case("dlpack", "from_dlpack-list", lambda: xp.from_dlpack([1.0, 2.0]), TE,
     w("from_dlpack"), r"\blist\b", r"__dlpack__|DLPack")
case("dlpack", "from_dlpack-string", lambda: xp.from_dlpack("abc"), TE,
     w("from_dlpack"), r"\bstr\b", r"__dlpack__|DLPack")
case("dlpack", "from_dlpack-object", lambda: xp.from_dlpack(object()), TE,
     w("from_dlpack"), r"\bobject\b", r"__dlpack__|DLPack")
case("dlpack", "from_dlpack-float", lambda: xp.from_dlpack(3.0), TE,
     w("from_dlpack"), r"\bfloat\b", r"__dlpack__|DLPack")
case("dlpack", "from_dlpack-unknown-device", lambda: xp.from_dlpack(F3, device="tpu"), VE,
     w("from_dlpack"), w("device"), r"cpu|device")
case("dlpack", "from_dlpack-copy-string", lambda: xp.from_dlpack(F3, copy="yes"), (TE, VE),
     w("from_dlpack"), w("copy"), r"True|False|None|bool")
case("dlpack", "from_dlpack-unsupported-dtype",
     lambda: xp.from_dlpack(np.zeros(2, "datetime64[s]")), (TE, BufferError),
     w("from_dlpack"), r"datetime64|<M8|dtype", r"supported|integer|float")
case("dlpack", "from_dlpack-big-endian", lambda: xp.from_dlpack(np.array([1.5], ">f4")),
     (TE, BufferError), w("from_dlpack"), r"byte order|>f4", r"asarray|native")
case("dlpack", "dlpack-of-symbolic", lambda: hd.compile(lambda x: np.from_dlpack(x))(F3), STE,
     r"dlpack", r"symbolic", r"only known|runs")

# == pickling =========================================================================


def _pickle_symbolic(x):
    pickle.dumps(x * 2)
    return x


def _pickle_token(x):
    pickle.dumps(ops.AfterAll()())
    return x


case("pickle", "pickle-a-symbolic-array", lambda: hd.compile(_pickle_symbolic)(F3), STE,
     r"pickl", r"symbolic|f32\[3\]", r"only known|runs|outside")
case("pickle", "pickle-an-escaped-symbolic-array",
     lambda: pickle.dumps(_leaked()),
     STE, r"pickl", r"symbolic|f32\[3\]|escaped", r"outside|staging")
case("pickle", "pickle-a-token", lambda: hd.compile(_pickle_token)(F3), (STE, TE),
     r"pickl", r"token", r"staged|inside|cannot")
case("pickle", "pickle-a-compiled-function", lambda: pickle.dumps(hd.compile(_square)), TE,
     r"pickl", r"compile|Compiled|_square", r"function|fn|cannot")
# -- sharding: meshes, layouts, partitioned programs, shard_map ----------------------------


def _mesh2():
    return hd.make_mesh((2,), ("x",))


def _sx():
    return hd.NamedSharding(_mesh2(), hd.P("x"))


case("ops", "ShardingConstraint-not-a-sharding", lambda: ops.ShardingConstraint("x"), TE,
     w("ShardingConstraint"), w("sharding"), r"NamedSharding", op="ShardingConstraint")
case("ops", "ShardingConstraint-indivisible",
     lambda: hd.compile(lambda a: ops.ShardingConstraint(_sx())(a))(F3), SE,
     w("ShardingConstraint"), T("f32", 3), r"divide", op="ShardingConstraint")
case("ops", "ResultSharding-not-a-sharding", lambda: ops.ResultSharding(None), TE,
     w("ResultSharding"), w("sharding"), r"NamedSharding", op="ResultSharding")
case("ops", "ResultSharding-indivisible",
     lambda: hd.compile(lambda a: ops.ResultSharding(_sx())(a))(F3), SE,
     w("ResultSharding"), T("f32", 3), r"divide", op="ResultSharding")
case("ops", "GlobalToLocal-axes-a-string", lambda: ops.GlobalToLocal((_sx(),), "x"), TE,
     w("GlobalToLocal"), w("axes"), r"tuple of mesh axis names", op="GlobalToLocal")
case("ops", "GlobalToLocal-count", lambda: hd.compile(
    lambda a: ops.GlobalToLocal((_sx(), _sx()), ("x",))(a))(F4), SE,
     w("GlobalToLocal"), T("f32", 4), r"2 shardings for 1 operands", op="GlobalToLocal")
case("ops", "LocalToGlobal-not-shardings", lambda: ops.LocalToGlobal((1,), ("x",)), TE,
     w("LocalToGlobal"), w("shardings"), r"NamedSharding", op="LocalToGlobal")
case("ops", "LocalToGlobal-count", lambda: hd.compile(
    lambda a: ops.LocalToGlobal((), ("x",))(a))(F4), SE,
     w("LocalToGlobal"), T("f32", 4), r"0 shardings for 1 operands", op="LocalToGlobal")
case("ops", "ManualComputation-body-not-callable", lambda: ops.ManualComputation(3, _mesh2()),
     TE, w("ManualComputation"), w("body"), r"callable", op="ManualComputation")
case("ops", "ManualComputation-mesh-not-a-mesh",
     lambda: ops.ManualComputation(_square, "mesh"), TE,
     w("ManualComputation"), w("mesh"), r"Mesh", op="ManualComputation")
case("sharding", "make_mesh-too-many-devices", lambda: hd.make_mesh((64,), ("x",)), VE,
     w("make_mesh"), r"\(64,\)", r"needs 64 devices")
case("sharding", "Mesh-names-and-shape", lambda: hd.Mesh([0, 1], ("x", "y")), VE,
     w("Mesh"), r"'x', 'y'|\('x', 'y'\)", r"shape \(2,\)")
case("sharding", "NamedSharding-unknown-axis", lambda: hd.NamedSharding(_mesh2(), hd.P("z")),
     VE, w("NamedSharding"), r"'z'", r"not an axis")
case("sharding", "PartitionSpec-entry", lambda: hd.P(3), TE,
     w("PartitionSpec"), r"\b3\b", r"axis name")
case("sharding", "device_put-indivisible", lambda: hd.device_put(F3, _sx()), VE,
     w("device_put"), T("f32", 3), r"divide")
case("sharding", "in_shardings-structure", lambda: hd.compile(
    _square, in_shardings=(_sx(), _sx()))(F4), TE,
     w("in_shardings"), r"one entry per positional argument", r"\b1\b")
case("sharding", "psum-outside-shard_map", lambda: hd.stdlib.parallel.psum(F3, "x"), STE,
     w("psum"), r"'x'", r"shard_map")
case("sharding", "psum-unknown-axis", lambda: hd.shard_map(
    lambda a: hd.stdlib.parallel.psum(a, "y"), _mesh2(), hd.P("x"), hd.P("x"))(F4), VE,
     w("psum"), r"'y'", r"not an axis")

# == sizes: shapes whose bytes overflow int64 (XLA's limit) ===========================

#: What a refused size must show: the bytes it would take, and the limit.
BYTES = r"\d+ bytes"
LIMIT = r"2\*\*63 - 1|9223372036854775807|int64"
_BIG = (2 ** 31, 2 ** 31)  # 2**62 elements: they fit in int64, their bytes do not

case("sizes", "ones-2**31-by-2**31", lambda: xp.ones(_BIG), VE,
     r"\bones\b|Broadcast", TD("f64", *_BIG), BYTES, LIMIT)
case("sizes", "zeros-float32-2**61", lambda: xp.zeros(2 ** 61, dtype=hd.float32), VE,
     r"\bzeros\b|Broadcast", TD("f32", 2 ** 61), BYTES, LIMIT)
case("sizes", "empty-2**62-by-2", lambda: xp.empty((2 ** 62, 2), dtype=hd.float32), VE,
     r"\bempty\b|Broadcast", TD("f32", 2 ** 62, 2), BYTES, LIMIT)
case("sizes", "full-2**40-squared", lambda: xp.full((2 ** 40, 2 ** 40), 1.5), VE,
     r"\bfull\b|Broadcast", TD("f64", 2 ** 40, 2 ** 40), BYTES, LIMIT)
case("sizes", "eye-2**32", lambda: xp.eye(2 ** 32), VE,
     r"\beye\b|Iota", r"4294967296, ?4294967296", BYTES, LIMIT)
case("sizes", "broadcast_to-2**62-rows", lambda: xp.broadcast_to(F3, (2 ** 62, 3)), VE,
     r"\bbroadcast_to\b|Broadcast", TD("f32", 2 ** 62, 3), BYTES, LIMIT)
case("sizes", "broadcast_to-staged-2**31-by-2**31",
     lambda: hd.compile(lambda v: xp.broadcast_to(v, _BIG))(FS), VE,
     r"\bbroadcast_to\b|Broadcast", TD("f32", *_BIG), BYTES, LIMIT)
case("sizes", "code_hlo-of-an-overflowing-shape",
     lambda: hd.code_hlo(lambda: xp.zeros(2 ** 61, dtype=hd.float32)), VE,
     r"\bzeros\b|Broadcast", TD("f32", 2 ** 61), BYTES, LIMIT)
case("sizes", "Broadcast-2**31-by-2**31", lambda: ops.Broadcast(_BIG)(FS), VE,
     w("Broadcast"), TD("f32", *_BIG), BYTES, LIMIT, op="Broadcast")
case("sizes", "Iota-float64-2**61", lambda: ops.Iota(hd.float64, (2 ** 61,), 0)(), VE,
     w("Iota"), TD("f64", 2 ** 61), BYTES, LIMIT, op="Iota")
case("sizes", "Pad-high-2**62", lambda: ops.Pad(low=0, high=2 ** 62)(F3, FS), VE,
     w("Pad"), r"4611686018427387907", BYTES, LIMIT, op="Pad")
case("sizes", "ArrayType-complex128-2**59", lambda: hd.ArrayType(hd.complex128, (2 ** 59,)), VE,
     r"ArrayType|shape", TD("c128", 2 ** 59), BYTES, LIMIT)

# == dispatch: every public generic, called with arguments no method takes ============

case("dispatch", "add-array-and-None", lambda: xp.add(F3, None), TE,
     w("add"), T("f32", 3), r"NoneType", r"add\(x")
case("dispatch", "add-array-and-string", lambda: xp.add(F3, "a"), TE,
     w("add"), T("f32", 3), r"\bstr\b|'a'", r"add\(x")
case("dispatch", "add-array-and-ragged-list", lambda: xp.add(F3, [[1, 2], [3]]), TE,
     w("add"), T("f32", 3), r"\blist\b|\[\[1, 2\], \[3\]\]", r"add\(x")
case("dispatch", "sum-of-None", lambda: xp.sum(None), TE,
     w("sum"), r"NoneType|None", r"sum\(x")
case("dispatch", "matmul-of-a-list", lambda: xp.matmul(F23, [[1], [2], [3]]), TE,
     w("matmul"), T("f32", 2, 3), r"\blist\b", r"matmul\(\w")

for _name, _generic in sorted(public_generics().items()):
    _arities = [k for k in no_method_arities(_generic) if k]
    if _arities:  # else it takes anything (*args) and checks its arguments itself
        case("dispatch", f"{_name}-of-opaque-arguments",
             lambda g=_generic, k=_arities[0]: g(*(Opaque(),) * k), TE,
             w(_name), r"\bOpaque\b", rf"{re.escape(_name)}\(\w")
del _name, _generic, _arities

# == staleness: cached programs run only while nothing they read has changed =============
# Eager control flow caches the program it stages (transforms/fingerprint.py); hd.compile
# caches one per signature. Each case changes something the staged function read between two
# calls; the second call must see it (the oracle: numpy), or, where the change cannot be seen
# (a static argument compared by identity under hd.compile), be warned of when compiling.

# Each factory builds the body once and returns the call, so that the two calls of a case
# run the same function objects (as a user's loop does): only what they read changes.
def _fori(read):
    body = lambda i, a: a + read()
    return lambda: hd.fori_loop(0, 1, body, F3)


def _cond(read):
    branch = lambda a: a + read()
    return lambda: hd.cond(BS, branch, _identity_branch, F3)


def _vmap(read):
    batched = hd.vmap(lambda a: a + read())
    return lambda: batched(F3)


def _identity_branch(a):
    return a


def _first_operand(a, b):
    return a


_RUNS = {"fori": _fori, "cond": _cond, "vmap": _vmap}


def _class_attribute(run):
    class Cfg:
        scale = 2.0

    call = run(lambda: Cfg.scale)
    same(call(), np.asarray(F3) + 2, "first call")
    Cfg.scale = 100.0
    same(call(), np.asarray(F3) + 100, "after Cfg.scale = 100")


def _module_attribute():
    import types

    pkg = types.ModuleType("corpus_user_pkg")
    pkg.__file__ = "/home/user/corpus_user_pkg/__init__.py"
    pkg.sub = types.ModuleType("corpus_user_pkg.sub")
    pkg.sub.__file__ = "/home/user/corpus_user_pkg/sub.py"
    pkg.sub.offset = 1.0
    def make(m):  # the module reaches the body through a closure cell
        return lambda i, a: a + m.sub.offset

    body = make(pkg)
    same(hd.fori_loop(0, 1, body, F3), np.asarray(F3) + 1, "first call")
    pkg.sub.offset = 5.0
    same(hd.fori_loop(0, 1, body, F3), np.asarray(F3) + 5, "after pkg.sub.offset = 5")


def _closure_object():
    class Box:
        def __init__(self, v):
            self.v = v

    box = Box(1.0)
    call = _fori(lambda: box.v)
    same(call(), np.asarray(F3) + 1, "first call")
    box.v = 7.0
    same(call(), np.asarray(F3) + 7, "after box.v = 7")


def _operand_object():
    class Box:
        def __init__(self, v):
            self.v = v

    box = Box(1.0)

    def add_v(a, b):
        return a + b.v

    def run():
        return hd.cond(BS, add_v, _first_operand, F3, box)

    same(run(), np.asarray(F3) + 1, "first call")
    box.v = 7.0
    same(run(), np.asarray(F3) + 7, "after box.v = 7")


def _np_random(run):
    np.random.seed(0)
    draws = [np.float32(np.random.rand()) for _ in range(2)]
    np.random.seed(0)
    call = run(lambda: np.random.rand())
    for k, draw in enumerate(draws):
        got = call()
        if not np.allclose(np.asarray(got), np.asarray(F3) + draw, rtol=1e-6):
            raise WrongAnswer(f"draw {k}: got {np.asarray(got).tolist()}, numpy drew {draw}")


def _random_random():
    import random

    random.seed(1)
    draws = [np.float32(random.random()) for _ in range(2)]
    random.seed(1)
    call = _fori(lambda: random.random())
    for k, draw in enumerate(draws):
        got = call()
        if not np.allclose(np.asarray(got), np.asarray(F3) + draw, rtol=1e-6):
            raise WrongAnswer(f"draw {k}: got {np.asarray(got).tolist()}, random drew {draw}")


def _time_time():
    import time

    start = time.time()
    call = _fori(lambda: time.time() - start)
    first = np.asarray(call())
    time.sleep(0.05)
    second = np.asarray(call())
    if not (second - first >= 0.04).all():
        raise WrongAnswer(f"time.time() read once: {first.tolist()} then {second.tolist()}")


class _Knob:
    def __init__(self, n):
        self.n = n


def _mutable_static():
    import warnings

    f = hd.compile(lambda a, knob: a * knob.n)
    with warnings.catch_warnings():
        warnings.simplefilter("error", hd.StaticArgumentWarning)
        f(F3, _Knob(1))


for _kind, _run in _RUNS.items():
    case("staleness", f"eager-{_kind}-class-attribute",
         lambda run=_run: _class_attribute(run), Answers)
    case("staleness", f"eager-{_kind}-np-random", lambda run=_run: _np_random(run), Answers)
case("staleness", "eager-fori-nested-module-attribute", _module_attribute, Answers)
case("staleness", "eager-fori-mutated-object-in-closure", _closure_object, Answers)
case("staleness", "eager-cond-mutated-operand-object", _operand_object, Answers)
case("staleness", "eager-fori-random-random", _random_random, Answers)
case("staleness", "eager-fori-time-time", _time_time, Answers)
case("staleness", "compile-mutable-static-argument", _mutable_static,
     hd.StaticArgumentWarning,
     r"<lambda>", r"'knob'", r"mutat\w+ .*will not recompile", r"frozen|namedtuple|value")

AREAS = tuple(dict.fromkeys(c.area for c in CASES))
