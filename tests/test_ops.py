"""Every registered op against an oracle, eagerly and staged, on hypothesis-drawn inputs.

``CASES`` holds one entry per opcode: a strategy of ``Example``s (static
operands, numpy operands inside the op's domain, and an oracle), or
``STAGING_ONLY`` for the ops that only staging creates (parameter,
get-tuple-element: tested through compiled functions). The oracle is
``jax.lax`` run on CPU with explicit dtypes, or numpy where lax has no such
operation (integer power, lexicographic and total-order comparisons, Map of a
Python callable). An op added to the registry fails
``test_every_registered_op_has_a_case`` unless it has a case here or another
``tests/test_ops_*.py`` module lists it in its ``COVERED_OPCODES``.

1. ``test_op_matches_oracle_eagerly_and_staged``: results match the oracle
   exactly where XLA is exact, within ``TOLERANCE`` for transcendental
   functions; the op's numpy ``reference`` matches too (within ``TOLERANCE``
   for inexact element types).
2. The table covers the registry, and elementwise ops accept exactly the
   element types their case lists (others are a ShapeError, not an XLA crash).
3. Bad static operands fail at construction; bad operands raise a
   ``ShapeError`` naming the op and every operand type, eagerly and staged.
4. ``result_type`` is the type XLA's compiled module and jax produce.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import math
import re
import warnings
from pathlib import Path
from typing import Callable

import attrs
import hypothesis.strategies as st
import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from jax import lax

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops
from hlodsl.ops import registry
from hlodsl.ops._catalog import library_ops
from hlodsl.arrays.types import ArrayType, TupleType
from platform_rules import flush_subnormals, platform_tol

from strategies import (
    ALL, ANY, COMPLEX, FLOATS, INEXACT, INTS, NUMBERS, PRED, SIGNED, Domain, arrays, shapes,
)

CPU = jax.devices("cpu")[0]

#: (rtol, atol) per element type for results XLA computes inexactly
#: (transcendental functions, Map computations), and for the numpy references.
TOLERANCE = {
    hd.float16: (4e-3, 1e-3),
    hd.bfloat16: (2e-2, 1e-2),
    hd.float32: (1e-6, 1e-6),
    hd.float64: (1e-12, 1e-12),
    hd.complex64: (1e-6, 1e-6),
    hd.complex128: (1e-12, 1e-12),
}

# Each new (op, operand types) pair costs XLA compiles of tens of ms: keep counts low,
# and spend them where there are static operands to explore.
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
EXAMPLES = {"compare": 25, "convert": 20, "dot": 20, "reduce": 20, "broadcast": 15, "map": 15,
            "constant": 12, "reshape": 10, "transpose": 10, "select": 8, "iota": 8}
ELEMENTWISE_EXAMPLES = 5
RESULT_TYPES = settings(max_examples=3, deadline=None, suppress_health_check=HEALTH)
CHEAP = settings(max_examples=25, deadline=None, suppress_health_check=HEALTH)


@attrs.frozen
class Example:
    """An op application: ``registry()[opcode](**static)(*args)`` should be ``oracle(*args)``."""

    static: dict
    args: tuple
    oracle: Callable
    exact: bool = True  # False: inexact element types compare within TOLERANCE
    bitwise: bool = False  # data movement: the sign of zero must survive too


def on_host(fn):
    """Marks an oracle that computes with numpy (jax.eval_shape cannot trace it)."""
    fn.on_host = True
    return fn


@attrs.frozen
class Elementwise:
    """Case of an elementwise op: operands of one drawn element type and shape.

    ``dtypes`` are exactly the element types the op must accept (checked by
    ``test_elementwise_ops_accept_exactly_their_element_types``); ``domains``
    gives each operand's domain, or is a function of the element type giving them.
    """

    oracle: Callable
    dtypes: tuple
    domains: tuple | Callable
    exact: bool | Callable = True  # or a function of the element type
    bitwise: bool | Callable = False

    def operand_domains(self, dtype) -> tuple:
        return self.domains(dtype) if callable(self.domains) else self.domains

    @property
    def arity(self) -> int:
        return len(self.operand_domains(self.dtypes[0]))

    def examples(self):
        @st.composite
        def draw(draw):
            dtype = draw(st.sampled_from(self.dtypes))
            shape = draw(shapes())
            args = tuple(draw(arrays(dtype, shape, d)) for d in self.operand_domains(dtype))
            exact, bitwise = (f(dtype) if callable(f) else f for f in (self.exact, self.bitwise))
            return Example({}, args, self.oracle, exact, bitwise)

        return draw()


def unary(oracle, dtypes, domain=ANY, **kw):
    return Elementwise(oracle, dtypes, domain if callable(domain) else (domain,), **kw)


def binary(oracle, dtypes, x=ANY, y=ANY, **kw):
    return Elementwise(oracle, dtypes, (x, y), **kw)


# -- domains -------------------------------------------------------------------------

SPECIAL = Domain(special=True)
NONZERO = Domain(nonzero=True)
DIVIDEND = Domain(no_int_min=True)  # INT_MIN / -1 overflows
POSITIVE = Domain(lo=0.0625, hi=16)
NONNEGATIVE = Domain(lo=0, hi=16)
GRID = Domain(lo=-8, hi=8, step=0.25, special=True)  # ties for rounding, NaN and inf
SMALL = Domain(lo=-8, hi=8)


def _complex_or(real: Domain, complex_: Domain):
    return lambda dtype: (complex_ if issubclass(dtype, hd.ComplexFloating) else real,)


def _atan2_domains(dtype):
    return (GRID, GRID) if issubclass(dtype, hd.ComplexFloating) else (ANY, ANY)


def _power_domains(dtype):
    if issubclass(dtype, hd.Integer):  # small non-negative exponents: no overflow, no x**-1
        return Domain(lo=-3, hi=3), Domain(lo=0, hi=4)
    if issubclass(dtype, hd.ComplexFloating):
        return Domain(lo=-2, hi=2, nonzero=True), Domain(lo=-2, hi=2)
    return Domain(lo=0.125, hi=4), Domain(lo=-3, hi=3)


@on_host
def _power(x, y):
    # lax.pow takes no integer base; numpy's integer power is exact (and wraps as XLA's).
    if np.issubdtype(x.dtype, np.integer):
        return np.power(x, y)
    return lax.pow(x, y)


# -- compare ------------------------------------------------------------------------

_LAX_COMPARE = {"EQ": lax.eq, "NE": lax.ne, "LT": lax.lt, "LE": lax.le, "GT": lax.gt,
                "GE": lax.ge}
_NP_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
               "GT": np.greater, "GE": np.greater_equal}


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """Integers ordered as IEEE totalOrder: -NaN < -inf < ... < -0 < +0 < ... < inf < NaN."""
    bits = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


def _comparison_types(dtype):
    if issubclass(dtype, hd.Floating):
        return (None, "FLOAT", "TOTALORDER")
    if issubclass(dtype, hd.ComplexFloating):
        return (None, "FLOAT")
    if issubclass(dtype, hd.SignedInteger):
        return (None, "SIGNED")
    return (None, "UNSIGNED")


def _compare_oracle(direction: str, comparison_type: str | None):
    @on_host
    def oracle(x, y):
        if comparison_type == "TOTALORDER":
            return _NP_COMPARE[direction](_total_order_key(x), _total_order_key(y))
        if np.iscomplexobj(x) and direction not in ("EQ", "NE"):
            # lax orders no complex numbers; HLO orders them lexicographically, as numpy.
            return _NP_COMPARE[direction](x, y)
        return _LAX_COMPARE[direction](x, y)

    return oracle


@st.composite
def compare_examples(draw):
    dtype = draw(st.sampled_from(FLOATS) | st.sampled_from(ALL))  # floats: NaN, -0, TOTALORDER
    directions = ("EQ", "NE", "LT", "GT") if issubclass(dtype, hd.ComplexFloating) else _NP_COMPARE
    direction = draw(st.sampled_from(sorted(directions)))
    comparison_type = draw(st.sampled_from(_comparison_types(dtype)))
    domain = draw(st.sampled_from([Domain(lo=-1, hi=1, step=0.5, special=True), SPECIAL]))
    shape = draw(shapes())
    x, y = draw(arrays(dtype, shape, domain)), draw(arrays(dtype, shape, domain))
    return Example(dict(direction=direction, comparison_type=comparison_type), (x, y),
                   _compare_oracle(direction, comparison_type))


@st.composite
def select_examples(draw):
    dtype, shape = draw(st.sampled_from(ALL)), draw(shapes())
    args = (draw(arrays(hd.pred, shape)), draw(arrays(dtype, shape, SPECIAL)),
            draw(arrays(dtype, shape, SPECIAL)))
    return Example({}, args, lax.select, bitwise=True)


# -- convert ------------------------------------------------------------------------


def convertible(src, dst) -> bool:
    """Convert takes every pair but complex to a non-complex type (XLA drops the
    imaginary part, or crashes for pred: ops.Convert refuses it)."""
    return not issubclass(src, hd.ComplexFloating) or issubclass(dst, hd.ComplexFloating)


@st.composite
def convert_examples(draw):
    src = draw(st.sampled_from(ALL))
    dst = draw(st.sampled_from([t for t in ALL if convertible(src, t)]))
    if issubclass(src, hd.Inexact) and issubclass(dst, hd.Integer):
        # Out-of-range float to int conversion is implementation-defined.
        domain = Domain(lo=0 if issubclass(dst, hd.UnsignedInteger) else -100, hi=100)
    elif issubclass(src, hd.Floating):
        domain = Domain(lo=-2.0 ** 17, hi=2.0 ** 17, special=True)  # overflows f16
    else:
        domain = ANY
    x = draw(arrays(src, draw(shapes()), domain))
    # Jitted: eager lax converts a numpy scalar on the host, keeping subnormals
    # that XLA's CPU code flushes to zero (f64 1.4e-45 -> f32 1e-45 vs 0).
    return Example(dict(new_dtype=dst), (x,),
                   jax.jit(lambda x: lax.convert_element_type(x, dst.np_dtype)),
                   bitwise=issubclass(src, hd.Floating) and issubclass(dst, hd.Floating))


# -- dot ----------------------------------------------------------------------------

_WIDER = {hd.int8: (hd.int16, hd.int32), hd.uint8: (hd.uint16, hd.uint32),
          hd.int32: (hd.int64,), hd.float16: (hd.float32,), hd.bfloat16: (hd.float32,),
          hd.float32: (hd.float64,), hd.complex64: (hd.complex128,)}


@st.composite
def dot_examples(draw):
    dtype = draw(st.sampled_from(NUMBERS))
    n_batch, n_contract = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    sizes = {("b", i): draw(st.integers(1, 3)) for i in range(n_batch)}
    sizes |= {("c", i): draw(st.integers(1, 3)) for i in range(n_contract)}

    def operand(side):
        free = [(side, i) for i in range(draw(st.integers(0, 2)))]
        sizes.update({f: draw(st.integers(1, 3)) for f in free})
        axes = draw(st.permutations([*(k for k in sizes if k[0] in "bc"), *free]))
        batch = tuple(axes.index(("b", i)) for i in range(n_batch))
        contracting = tuple(axes.index(("c", i)) for i in range(n_contract))
        # Small integers: every float sum is exact, so float dots compare exactly too.
        values = draw(arrays(dtype, tuple(sizes[a] for a in axes), Domain(lo=-4, hi=4, step=1)))
        return values, batch, contracting

    (lhs, lb, lc), (rhs, rb, rc) = operand("l"), operand("r")
    preferred = draw(st.sampled_from((None, dtype) + _WIDER.get(dtype, ())))
    pref_np = None if preferred is None else preferred.np_dtype
    return Example(
        dict(lhs_contracting=lc, rhs_contracting=rc, lhs_batch=lb, rhs_batch=rb,
             preferred_element_type=preferred),
        (lhs, rhs),
        lambda l, r: lax.dot_general(l, r, ((lc, rc), (lb, rb)), preferred_element_type=pref_np))


# -- shapes and data movement ---------------------------------------------------------


@st.composite
def broadcast_examples(draw):
    dtype, operand = draw(st.sampled_from(ALL)), draw(shapes(0, 3))
    new = draw(st.lists(st.integers(0, 3), max_size=4 - len(operand)))
    rank = len(operand) + len(new)
    dims = tuple(draw(st.permutations(range(rank)))[:len(operand)])  # any order
    shape, fill = [0] * rank, iter(new)
    for d in range(rank):
        shape[d] = operand[dims.index(d)] if d in dims else next(fill)
    x = draw(arrays(dtype, operand, SPECIAL))
    # NOTE: jax 0.10.2 returns a same-shape operand of broadcast_in_dim unchanged, even
    # when the dimensions permute it: the oracle transposes first, then broadcasts in order.
    order = sorted(range(len(dims)), key=dims.__getitem__)
    return Example(dict(shape=tuple(shape), dimensions=dims), (x,),
                   lambda x: lax.broadcast_in_dim(lax.transpose(x, order), tuple(shape),
                                                  tuple(sorted(dims))), bitwise=True)


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@st.composite
def reshape_examples(draw):
    dtype = draw(st.sampled_from(ALL))
    old = draw(shapes(0, 4, min_side=draw(st.sampled_from([1, 1, 1, 0]))))  # some empty
    size = math.prod(old)
    if size == 0:
        new = list(draw(shapes(1, 4, min_side=0)))
        new[draw(st.integers(0, len(new) - 1))] = 0
    else:
        new = [1] * draw(st.integers(1 if size > 1 else 0, 4))
        for f in _prime_factors(size):
            new[draw(st.integers(0, len(new) - 1))] *= f
    new = tuple(new)
    x = draw(arrays(dtype, old, SPECIAL))
    return Example(dict(shape=new), (x,), lambda x: lax.reshape(x, new), bitwise=True)


@st.composite
def transpose_examples(draw):
    dtype, shape = draw(st.sampled_from(ALL)), draw(shapes(0, 4))
    perm = tuple(draw(st.permutations(range(len(shape)))))
    x = draw(arrays(dtype, shape, SPECIAL))
    return Example(dict(permutation=perm), (x,), lambda x: lax.transpose(x, perm), bitwise=True)


@st.composite
def iota_examples(draw):
    dtype, shape = draw(st.sampled_from(NUMBERS)), draw(shapes(1, 3, max_side=5))
    dim = draw(st.integers(0, len(shape) - 1))
    return Example(dict(dtype=dtype, shape=shape, iota_dimension=dim), (),
                   lambda: lax.broadcasted_iota(dtype.np_dtype, shape, dim))


@st.composite
def constant_examples(draw):
    value = draw(arrays(draw(st.sampled_from(ALL)), draw(shapes(0, 3)), SPECIAL))
    return Example(dict(value=value), (), on_host(lambda: value), bitwise=True)


@st.composite
def tuple_examples(draw):
    n = draw(st.integers(1, 3))
    args = tuple(draw(arrays(draw(st.sampled_from(ALL)), draw(shapes()), SPECIAL))
                 for _ in range(n))
    return Example({}, args, on_host(lambda *xs: xs), bitwise=True)


# -- computations for Reduce and Map (module level: equal ops share compiles) --------


def _add(a, b):
    return ops.Add()(a, b)


def _xp_add(a, b):
    return xp.add(a, b)


def _mul(a, b):
    return ops.Multiply()(a, b)


def _max(a, b):
    return ops.Maximum()(a, b)


def _min(a, b):
    return ops.Minimum()(a, b)


def _and(a, b):
    return ops.And()(a, b)


def _or(a, b):
    return ops.Or()(a, b)


def _sum_and_max(s, m, x, y):
    return ops.Add()(s, x), ops.Maximum()(m, y)


def _lowest(t):
    if t is hd.pred:
        return False
    return -np.inf if issubclass(t, hd.Floating) else np.iinfo(t.np_dtype).min


def _highest(t):
    if t is hd.pred:
        return True
    return np.inf if issubclass(t, hd.Floating) else np.iinfo(t.np_dtype).max


def _all_ones(t):
    return True if t is hd.pred else ~t.np_dtype.type(0)


# (computation, lax computation, identity of element type, element types, domain).
# The initial value is always the identity: XLA requires it (ops.Reduce refuses a
# known other one, see test_reduce_refuses_a_known_initial_value_that_is_not_the_identity).
REDUCERS = [
    (_add, lax.add, lambda t: 0, NUMBERS, Domain(lo=-4, hi=4, step=1)),  # exact sums
    (_xp_add, lax.add, lambda t: 0, NUMBERS, Domain(lo=-4, hi=4, step=1)),
    (_mul, lax.mul, lambda t: 1, INTS + FLOATS, Domain(lo=-2, hi=2, step=1, nonzero=True)),
    (_max, lax.max, _lowest, PRED + INTS + FLOATS, SPECIAL),
    (_min, lax.min, _highest, PRED + INTS + FLOATS, SPECIAL),
    (_and, lax.bitwise_and, _all_ones, PRED + INTS, ANY),
    (_or, lax.bitwise_or, lambda t: 0, PRED + INTS, ANY),
    (_add, lax.bitwise_or, lambda t: 0, PRED, ANY),  # add on pred is or
    (_mul, lax.bitwise_and, lambda t: 1, PRED, ANY),  # multiply on pred is and
]


@st.composite
def reduce_examples(draw):
    shape = draw(shapes(0, 3))
    dims = tuple(draw(st.permutations(range(len(shape))))[:draw(st.integers(0, len(shape)))])
    if draw(st.booleans()):
        comp, lax_comp, identity, dtypes, domain = draw(st.sampled_from(REDUCERS))
        dtype = draw(st.sampled_from(dtypes))
        x = draw(arrays(dtype, shape, domain))
        init = np.asarray(identity(dtype), dtype.np_dtype)
        return Example(dict(computation=comp, dimensions=dims), (x, init),
                       lambda x, i: lax.reduce(x, i, lax_comp, dims))
    # Variadic: a sum and a maximum of two operands of different element types (XLA
    # allows one floating-point precision per instruction).
    ts = draw(st.sampled_from(NUMBERS))
    tm = draw(st.sampled_from([t for t in INTS + FLOATS
                               if t is ts or not (t in FLOATS and ts in FLOATS)]))
    s, m = draw(arrays(ts, shape, Domain(lo=-4, hi=4, step=1))), draw(arrays(tm, shape, SPECIAL))
    inits = (np.zeros((), ts.np_dtype), np.asarray(_lowest(tm), tm.np_dtype))
    return Example(
        dict(computation=_sum_and_max, dimensions=dims), (s, m, *inits),
        lambda s, m, s0, m0: tuple(lax.reduce(
            (s, m), (s0, m0), lambda a, b: (lax.add(a[0], b[0]), lax.max(a[1], b[1])), dims)))


def _mul_add(a, b):
    return a * b + a  # stdlib operators on scalar arrays


def _less(a, b):
    return xp.less(a, b)


def _exp_minus_one(a):
    return xp.exp(a) - 1


def _clip_where(p, a, b):
    return ops.Select()(p, xp.maximum(a, b), a)


def _scale(a, k):
    return a * k.astype(a.dtype)


# (computation, numpy model, operand types from a drawn element type, element types, domain)
MAPPERS = [
    (_mul_add, lambda a, b: a * b + a, lambda t: (t, t), NUMBERS, SMALL),
    (_less, np.less, lambda t: (t, t), INTS + FLOATS, SPECIAL),
    (_exp_minus_one, lambda a: np.exp(a) - 1, lambda t: (t,), INEXACT, Domain(lo=-4, hi=4)),
    (_clip_where, lambda p, a, b: np.where(p, np.maximum(a, b), a), lambda t: (hd.pred, t, t),
     INTS + FLOATS, SMALL),
    (_scale, lambda a, k: a * k.astype(a.dtype), lambda t: (t, hd.int8), FLOATS, SMALL),
]


@st.composite
def map_examples(draw):
    comp, model, operand_types, dtypes, domain = draw(st.sampled_from(MAPPERS))
    shape = draw(shapes(0, 3))
    types = operand_types(draw(st.sampled_from(dtypes)))
    args = tuple(draw(arrays(t, shape, domain)) for t in types)
    return Example(dict(computation=comp), args, on_host(model), exact=False)


# -- oracles for pred operands of arithmetic ops -----------------------------------------
# HLO's add and maximum on pred are or, multiply and minimum are and; lax.add and
# lax.mul take no bool, so pred goes to lax's bitwise op (lax.max/min take bool).


def _on_pred(numeric, logical):
    def oracle(x, y):
        return logical(x, y) if x.dtype == np.bool_ else numeric(x, y)

    oracle.__name__ = numeric.__name__
    return oracle


# -- the table -----------------------------------------------------------------------

STAGING_ONLY = "created by staging only: tested by test_parameters_* and test_get_tuple_element_*"


def _round_even(x):
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def _not_complex(dtype) -> bool:
    return not issubclass(dtype, hd.ComplexFloating)


CASES = {
    # unary
    # Complex abs is the modulus, of the real component type; complex sign x / |x|.
    # NOTE: jax >= 0.12 lowers a complex lax.abs as a scaled sqrt(re^2 + im^2) of its own
    # instead of HLO's abs instruction (which ops.Abs is, XLA:CPU's hypot); the two differ
    # by up to an ulp (|4.5+0.73828125j| in c64), so complex abs compares within tolerance.
    "abs": unary(lax.abs, SIGNED + FLOATS + COMPLEX, SPECIAL, exact=_not_complex,
                 bitwise=_not_complex),
    "negate": unary(lax.neg, NUMBERS, SPECIAL, bitwise=True),
    "sign": unary(lax.sign, SIGNED + FLOATS + COMPLEX, SPECIAL),
    "floor": unary(lax.floor, FLOATS, GRID),
    "ceil": unary(lax.ceil, FLOATS, GRID),
    "round-nearest-even": unary(_round_even, FLOATS, GRID),
    "is-finite": unary(lax.is_finite, FLOATS, SPECIAL),
    "not": unary(lax.bitwise_not, PRED + INTS),
    "exponential": unary(lax.exp, INEXACT, _complex_or(SMALL, Domain(lo=-4, hi=4)), exact=False),
    "exponential-minus-one": unary(lax.expm1, INEXACT, _complex_or(SMALL, Domain(lo=-4, hi=4)),
                                   exact=False),
    "log": unary(lax.log, INEXACT, _complex_or(POSITIVE, NONZERO), exact=False),
    "log-plus-one": unary(lax.log1p, INEXACT, _complex_or(Domain(lo=-0.5, hi=16), NONZERO),
                          exact=False),
    "logistic": unary(lax.logistic, INEXACT, _complex_or(SMALL, Domain(lo=-2, hi=2)), exact=False),
    "sqrt": unary(lax.sqrt, INEXACT, _complex_or(NONNEGATIVE, ANY), exact=False),
    "rsqrt": unary(lax.rsqrt, INEXACT, _complex_or(POSITIVE, NONZERO), exact=False),
    "cbrt": unary(lax.cbrt, FLOATS, exact=False),
    "tanh": unary(lax.tanh, INEXACT, _complex_or(SMALL, Domain(lo=-1, hi=1)), exact=False),
    "sine": unary(lax.sin, INEXACT, _complex_or(SMALL, Domain(lo=-2, hi=2)), exact=False),
    "cosine": unary(lax.cos, INEXACT, _complex_or(SMALL, Domain(lo=-2, hi=2)), exact=False),
    "tan": unary(lax.tan, INEXACT, Domain(lo=-1.25, hi=1.25), exact=False),  # away from pi/2
    # binary
    "add": binary(_on_pred(lax.add, lax.bitwise_or), PRED + NUMBERS, SPECIAL, SPECIAL),
    "subtract": binary(lax.sub, NUMBERS, SPECIAL, SPECIAL),
    "multiply": binary(_on_pred(lax.mul, lax.bitwise_and), PRED + NUMBERS, SPECIAL, SPECIAL),
    "divide": binary(lax.div, NUMBERS, DIVIDEND, NONZERO),
    "remainder": binary(lax.rem, INTS + FLOATS, DIVIDEND, NONZERO),
    "power": Elementwise(_power, NUMBERS, _power_domains, exact=False),
    # Complex is refused: XLA:CPU does not break ties of the real parts (BAD_OPERANDS).
    "maximum": binary(lax.max, PRED + INTS + FLOATS, SPECIAL, SPECIAL),
    "minimum": binary(lax.min, PRED + INTS + FLOATS, SPECIAL, SPECIAL),
    # Complex on a grid: the spec's formula squares the operands, and where a product of
    # parts is subnormal XLA:CPU flushes it to zero, which can move the result across
    # log's branch cut or make it NaN (jax too; see ops.Atan2), where numpy does not.
    "atan2": Elementwise(lax.atan2, INEXACT, _atan2_domains, exact=False),
    "and": binary(lax.bitwise_and, PRED + INTS),
    "or": binary(lax.bitwise_or, PRED + INTS),
    "xor": binary(lax.bitwise_xor, PRED + INTS),
    # everything else
    "compare": compare_examples(),
    "select": select_examples(),
    "convert": convert_examples(),
    "dot": dot_examples(),
    "broadcast": broadcast_examples(),
    "reshape": reshape_examples(),
    "transpose": transpose_examples(),
    "iota": iota_examples(),
    "constant": constant_examples(),
    "tuple": tuple_examples(),
    "reduce": reduce_examples(),
    "map": map_examples(),
    "parameter": STAGING_ONLY,
    "get-tuple-element": STAGING_ONLY,
}

RUNNABLE = sorted(opcode for opcode in registry()
                  if opcode in CASES and CASES[opcode] is not STAGING_ONLY)


@functools.cache
def examples(opcode: str):
    """The strategy of ``Example``s for ``opcode``."""
    case = CASES[opcode]
    return case.examples() if isinstance(case, Elementwise) else case


# -- running and comparing -------------------------------------------------------------

_STAGED: dict = {}


def staged(op):
    """``op`` as a one-op compiled function, cached per op (so per signature too)."""
    fn = _STAGED.get(op)
    if fn is None:
        fn = _STAGED[op] = hd.compile(lambda *xs: op(*xs), name=f"staged_{op.opcode}")
    return fn


@contextlib.contextmanager
def quietly():
    """jax on CPU; no warnings for what the inputs mean to do (NaN, complex -> real)."""
    with jax.default_device(CPU), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        yield


def run_oracle(oracle, args):
    with quietly():
        out = oracle(*args)
    return tuple(map(np.asarray, out)) if isinstance(out, (tuple, list)) else np.asarray(out)


def _comparable(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) if a.dtype in (np.float16, hd.bfloat16.np_dtype) else a


def assert_matches(actual, expected, ex: Example, what: str, exact: bool | None = None):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), \
            f"{what}: {actual!r} is not a {len(expected)}-tuple"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_matches(a, e, ex, f"{what}[{i}]", exact)
        return
    a, e = np.asarray(actual), np.asarray(expected)
    assert (a.dtype, a.shape) == (e.dtype, e.shape), \
        f"{what}: got {a.dtype}{list(a.shape)}, expected {e.dtype}{list(e.shape)}"
    dtype = hd.element_type(e.dtype)
    a, e = _comparable(a), _comparable(e)
    bound = _platform_bound(what, dtype)
    if bound is not None and (ex.exact if exact is None else exact):
        # XLA:GPU rounds these complex ops differently from jax's program on the same GPU
        # (tests/platform_rules.py says how and why): within ulps of the result's modulus.
        a, e = flush_subnormals(a), flush_subnormals(e)
        both_nan = np.isnan(a) & np.isnan(e)
        with np.errstate(invalid="ignore"):
            close = (a == e) | (np.abs(a - e) <= bound * np.abs(e))
        assert (close | both_nan).all(), f"{what}: {a} vs {e} beyond {bound:.3g} relative"
        return
    if not issubclass(dtype, hd.Inexact) or (ex.exact if exact is None else exact):
        np.testing.assert_array_equal(a, e, err_msg=what)
        if ex.bitwise and issubclass(dtype, hd.Floating):
            same = np.isnan(a) | (np.signbit(a) == np.signbit(e))
            assert same.all(), f"{what}: signs of zero differ: {a} vs {e}"
    else:
        rtol, atol = TOLERANCE[dtype]
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=what)


def _platform_bound(what: str, dtype) -> float | None:
    """``PLATFORM_TOL``'s bound for the complex op ``what`` names ("eager Multiply()")."""
    if not issubclass(dtype, hd.ComplexFloating):
        return None
    name = re.match(r"\w+ (\w+)\(", what)
    return platform_tol(f"complex {name.group(1).lower()}", dtype.np_dtype) if name else None


def test_off_the_cpu_complex_rounding_is_compared_within_the_platforms_bound(monkeypatch):
    # What the GPU run showed (H200): a product's part 1 ulp off jax's, a quotient's
    # subnormal part kept where jax's program flushed it; other ops stay exact.
    import platform_rules

    monkeypatch.setattr(platform_rules, "PLATFORM", "gpu")
    ex = Example({}, (), None)
    want = np.complex64([0.5 + 0j, 1 + 1j, complex(np.nan, 1)])
    one_ulp = want.copy()
    one_ulp[1] = complex(np.nextafter(np.float32(1), np.float32(2)), 1)
    assert_matches(one_ulp, want, ex, "eager Multiply()")
    kept = want.copy()
    kept[0] = complex(0.5, 2.94e-39)
    assert_matches(kept, want, ex, "staged Divide()")
    with pytest.raises(AssertionError, match="beyond"):
        assert_matches(want * np.float32(1 + 2 ** -20), want, ex, "eager Multiply()")
    with pytest.raises(AssertionError):
        assert_matches(one_ulp, want, ex, "eager Add()")  # no entry: exact
    monkeypatch.setattr(platform_rules, "PLATFORM", "cpu")
    with pytest.raises(AssertionError):
        assert_matches(one_ulp, want, ex, "eager Multiply()")


# -- 1. every op against its oracle, eagerly and staged --------------------------------


@pytest.mark.parametrize("opcode", RUNNABLE)
def test_op_matches_oracle_eagerly_and_staged(opcode):
    check_opcode(opcode, settings(max_examples=EXAMPLES.get(opcode, ELEMENTWISE_EXAMPLES),
                                  deadline=None, suppress_health_check=HEALTH))


def check_opcode(opcode: str, under: settings) -> None:
    """``check_op`` on hypothesis' examples of ``opcode``, drawn ``under`` those settings."""
    def check(ex):
        check_op(registry()[opcode](**ex.static), ex)

    check.__name__ = f"check_{opcode.replace('-', '_')}"  # keys hypothesis' example database
    given(examples(opcode))(under(check))()


def check_op(op, ex: Example):
    """``op`` equals the oracle of ``ex`` eagerly and staged, and so does its reference."""
    arrays_ = [hd.array(a) for a in ex.args]
    expected = run_oracle(ex.oracle, ex.args)
    assert_matches(op(*arrays_), expected, ex, f"eager {op!r}")
    assert_matches(staged(op)(*arrays_), expected, ex, f"staged {op!r}")
    assert f" {op.opcode}(" in str(hd.code_hlo(lambda *xs: op(*xs), *arrays_))
    if hasattr(op, "reference"):
        with quietly():
            reference = op.reference(*ex.args)
        if isinstance(op, ops.Atan2) and np.iscomplexobj(reference):
            reference = _on_branch_of(reference, expected)
        assert_matches(reference, expected, ex, f"{op!r}.reference", exact=False)


def _on_branch_of(angle: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Complex atan2's ``angle`` moved by 2 pi where it lies on the other side of log's branch cut.

    On the cut (real part +-pi) the side is decided by the sign of a zero imaginary part
    that rounding produces, and numpy's complex division and sqrt round differently from
    XLA's; both angles are the same point, 2 pi apart. Off the cut nothing moves.
    """
    angle = np.array(angle)
    gap = angle.real - np.asarray(expected).real
    wrapped = np.isclose(np.abs(gap), 2 * np.pi, rtol=1e-5)
    angle.real = np.where(wrapped, angle.real - np.sign(gap) * 2 * np.pi, angle.real)
    return angle


# -- 2. the table covers the registry ---------------------------------------------------


def covered_elsewhere() -> dict[str, str]:
    """Opcodes that other op test modules declare in ``COVERED_OPCODES`` -> module name.

    Read from the source (not imported), so a module that fails to import
    cannot vouch for its ops, and nothing runs twice.
    """
    covered = {}
    for path in sorted(Path(__file__).parent.glob("test_ops_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "COVERED_OPCODES" for t in node.targets):
                covered.update(dict.fromkeys(ast.literal_eval(node.value), path.name))
    return covered


def test_every_registered_op_has_a_case():
    # Library ops only: tests and doc examples register ops of their own.
    missing = sorted(set(library_ops()) - set(CASES) - set(covered_elsewhere()))
    assert not missing, (f"ops without a case in tests/test_ops.py CASES (nor COVERED_OPCODES "
                         f"of a tests/test_ops_*.py module): {missing}")
    assert not set(CASES) - set(registry()), "CASES names opcodes that are not registered"


def test_elementwise_ops_accept_exactly_their_element_types():
    # An element type XLA cannot run (or runs wrongly) must be a ShapeError, not a crash.
    for opcode, case in CASES.items():
        if not isinstance(case, Elementwise):
            continue
        op = registry()[opcode]()
        for dtype in ALL:
            types = (ArrayType(dtype, (2,)),) * case.arity
            try:
                op.result_type(*types)
                accepted = True
            except hd.ShapeError:
                accepted = False
            assert accepted == (dtype in case.dtypes), \
                f"{op!r} {'accepts' if accepted else 'rejects'} {dtype.__name__}"


_Z = np.array([3 + 4j, -1 - 1j, 0j, -0.5 + 0j, 1e-3 - 2e3j, 2.5j], np.complex128)
_P, _Q = np.array([True, False, True, False]), np.array([True, True, False, False])

#: Element types the HLO spec allows that these ops refused before, each against
#: jax.lax on fixed operands (the hypothesis cases above may not draw them).
SPEC_TYPES = [
    ("abs", (_Z.astype(np.complex64),), lax.abs),
    ("abs", (_Z,), lax.abs),
    ("sign", (_Z.astype(np.complex64),), lax.sign),
    ("sign", (_Z,), lax.sign),
    ("add", (_P, _Q), lax.bitwise_or),
    ("multiply", (_P, _Q), lax.bitwise_and),
    ("maximum", (_P, _Q), lax.max),
    ("minimum", (_P, _Q), lax.min),
]


@pytest.mark.parametrize("opcode, args, oracle", SPEC_TYPES,
                         ids=[f"{o}-{a[0].dtype}" for o, a, _ in SPEC_TYPES])
def test_element_types_the_spec_allows_match_lax(opcode, args, oracle):
    exact = opcode != "abs"  # complex abs: within an ulp of jax >= 0.12's (see CASES)
    check_op(registry()[opcode](), Example({}, args, oracle, exact=exact))


CONVERT_PAIRS = ([(src, dst) for src in (hd.pred, hd.int8, hd.uint32, hd.bfloat16, hd.float64)
                  + COMPLEX for dst in COMPLEX] + [(hd.float16, hd.pred), (hd.pred, hd.bfloat16)])


@pytest.mark.parametrize("src, dst", CONVERT_PAIRS,
                         ids=[f"{s.__name__}-{d.__name__}" for s, d in CONVERT_PAIRS])
def test_convert_from_and_to_pred_and_complex_matches_lax(src, dst):
    if issubclass(src, hd.ComplexFloating):
        x = _Z.astype(src.np_dtype)
    else:
        x = np.array([0, 1, 2, 3, 0.5, 7]).astype(src.np_dtype)
    check_op(ops.Convert(dst), Example(dict(new_dtype=dst), (x,),
                                       lambda x: lax.convert_element_type(x, dst.np_dtype)))


@settings(max_examples=6, deadline=None, suppress_health_check=HEALTH)
@given(data=st.data())
def test_parameters_pass_through_a_compiled_function_in_order(data):
    xs = [draw_any(data) for _ in range(data.draw(st.integers(1, 3)))]
    f = hd.compile(lambda *xs: xs[::-1])
    args = [hd.array(x) for x in xs]
    out = f(*args)
    assert_matches(tuple(out), tuple(xs[::-1]), Example({}, (), None, bitwise=True), "parameters")
    text = str(hd.code_hlo(lambda *xs: xs[::-1], *args))
    assert all(f"parameter({i})" in text for i in range(len(xs)))
    assert_matches(hd.compile(lambda x: x)(args[0]), xs[0],
                   Example({}, (), None, bitwise=True), "identity")


@settings(max_examples=6, deadline=None, suppress_health_check=HEALTH)
@given(data=st.data())
def test_get_tuple_element_takes_elements_of_tuple_results(data):
    xs = [draw_any(data) for _ in range(data.draw(st.integers(1, 3)))]

    def swap(*xs):
        return tuple(reversed(ops.Tuple()(*xs)))  # the elements are get-tuple-elements

    args = [hd.array(x) for x in xs]
    assert "get-tuple-element(" in str(hd.code_hlo(swap, *args))
    assert_matches(hd.compile(swap)(*args), tuple(xs[::-1]),
                   Example({}, (), None, bitwise=True), "get-tuple-element")
    # Called from Python on the tuple an op returned, it is indexing.
    pair = ops.Tuple()(*args)
    assert ops.GetTupleElement(len(xs) - 1)(pair) is pair[-1]


def draw_any(data):
    dtype = data.draw(st.sampled_from(ALL))
    return data.draw(arrays(dtype, data.draw(shapes()), SPECIAL))


def test_get_tuple_element_shape_rule():
    t = TupleType([ArrayType(hd.float32, (2,)), ArrayType(hd.int8, ())])
    assert ops.GetTupleElement(1).result_type(t) == ArrayType(hd.int8, ())
    for bad, operand in [(ops.GetTupleElement(2), t),
                         (ops.GetTupleElement(0), ArrayType(hd.float32, (2,)))]:
        with pytest.raises(hd.ShapeError, match=re.escape(repr(bad))):
            bad.result_type(operand)


# -- 3. shape rules reject bad static operands and bad operands ---------------------------

BAD_STATIC = {
    "transpose repeats a dimension": lambda: ops.Transpose((0, 0)),
    "transpose is not a permutation": lambda: ops.Transpose((1, 2)),
    "broadcast repeats a dimension": lambda: ops.Broadcast((2, 3), (1, 1)),
    "broadcast dimension out of range": lambda: ops.Broadcast((2, 3), (2,)),
    "broadcast to a negative size": lambda: ops.Broadcast((-1, 3), (1,)),
    "reduce repeats a dimension": lambda: ops.Reduce(_add, (0, 0)),
    "reduce negative dimension": lambda: ops.Reduce(_add, (-1,)),
    "dot contracting dims differ in number": lambda: ops.Dot((0, 1), (0,)),
    "dot batch dims differ in number": lambda: ops.Dot((1,), (0,), (0,), ()),
    "dot repeats a dimension": lambda: ops.Dot((0,), (0,), (0,), (1,)),
    "compare direction": lambda: ops.Compare("LESS"),
    "compare type": lambda: ops.Compare("LT", "ORDERED"),
    "iota dimension out of range": lambda: ops.Iota(hd.int32, (2, 3), 2),
    "iota dimension negative": lambda: ops.Iota(hd.int32, (2, 3), -1),
    "iota of a scalar": lambda: ops.Iota(hd.int32, (), 0),
    "iota of pred": lambda: ops.Iota(hd.pred, (2,), 0),
    "iota negative size": lambda: ops.Iota(hd.int32, (-2,), 0),
    "reshape to a negative size": lambda: ops.Reshape((-2, -3)),
    "convert to a non-type": lambda: ops.Convert("text"),
}


@pytest.mark.parametrize("make", BAD_STATIC.values(), ids=BAD_STATIC.keys())
def test_bad_static_operands_raise_at_construction(make):
    with pytest.raises((ValueError, TypeError)) as e:
        make()
    assert not isinstance(e.value, hd.ShapeError)  # not at the call: at construction


def _t(spec: str) -> ArrayType:
    """``"f32[3,4]"`` -> ArrayType."""
    name, dims = re.fullmatch(r"(\w+)\[([\d,]*)\]", spec).groups()
    return ArrayType(hd.dtypes.from_hlo(name), tuple(int(d) for d in dims.split(",") if d))


BAD_OPERANDS = [
    (ops.Add(), "f32[3,4] f32[4]"),  # ops never broadcast
    (ops.Add(), "f32[3] s32[3]"),  # nor promote
    (ops.Atan2(), "s32[3] s32[3]"),
    (ops.Exp(), "s32[3]"),
    (ops.Remainder(), "c64[2] c64[2]"),
    (ops.Maximum(), "c64[2] c64[2]"),
    (ops.Not(), "f32[2]"),
    (ops.Compare("LT"), "f32[3,4] f32[4,3]"),
    (ops.Compare("LT", "SIGNED"), "f32[3] f32[3]"),
    (ops.Compare("LT", "UNSIGNED"), "s32[3] s32[3]"),
    (ops.Compare("LT", "TOTALORDER"), "c64[3] c64[3]"),
    (ops.Compare("GE"), "c64[3] c64[3]"),  # XLA's complex LE/GE are not lexicographic
    (ops.Select(), "pred[3] f32[4] f32[4]"),
    (ops.Select(), "f32[3] f32[3] f32[3]"),
    (ops.Select(), "pred[3] f32[3] s32[3]"),
    (ops.Convert(hd.pred), "c64[3]"),
    (ops.Convert(hd.float32), "c64[3]"),  # would drop the imaginary part
    (ops.Convert(hd.int32), "c128[3]"),
    (ops.Minimum(), "c128[2] c128[2]"),  # XLA:CPU breaks no ties of the real parts
    (ops.Abs(), "u8[2]"),
    (ops.Subtract(), "pred[2] pred[2]"),
    (ops.Dot((1,), (0,)), "f32[3,4] f32[3]"),
    (ops.Dot((1,), (0,)), "f32[3,4] s32[4]"),
    (ops.Dot((2,), (0,)), "f32[3,4] f32[4]"),
    (ops.Dot((1,), (1,), (0,), (0,)), "f32[2,3] f32[3,3]"),
    (ops.Reshape((5,)), "f32[2,3]"),
    (ops.Transpose((1, 0)), "f32[3]"),
    (ops.Broadcast((2, 3), (1,)), "f32[2]"),
    (ops.Broadcast((2, 3), (0, 1)), "f32[3]"),
    (ops.Reduce(_add, (0,)), "f32[3] s32[]"),
    (ops.Reduce(_add, (0,)), "f32[3] f32[1]"),
    (ops.Reduce(_add, (1,)), "f32[3] f32[]"),
    (ops.Reduce(_sum_and_max, (0,)), "f32[3] s32[4] f32[] s32[]"),
    (ops.Reduce(_sum_and_max, (0,)), "f16[3] f32[3] f16[] f32[]"),  # mixed float precisions
    (ops.Map(_mul_add), "f32[3] f32[4]"),
    (ops.Map(_scale), "f16[3] f32[3]"),
    (ops.Exp(), "f32[3] f32[3]"),  # a wrong number of operands
    (ops.Iota(hd.int32, (2,)), "f32[2]"),
    (ops.Add(), "f32[2]"),
]


@pytest.mark.parametrize("op, types", BAD_OPERANDS, ids=[f"{o!r}-{t}" for o, t in BAD_OPERANDS])
def test_bad_operands_raise_shape_error_naming_op_and_types(op, types):
    types = types.split()
    args = [hd.array(np.zeros(_t(s).shape, _t(s).dtype.np_dtype)) for s in types]
    for run in (op, staged(op)):
        with pytest.raises(hd.ShapeError) as e:
            run(*args)
        message = str(e.value)
        assert repr(op) in message
        assert all(s in message for s in types), message


def _not_the_identity(value: np.ndarray) -> np.ndarray:
    """A value of ``value``'s type that differs from it (so from an identity)."""
    if value.dtype == np.bool_:
        return ~value
    if np.issubdtype(value.dtype, np.integer):
        return value ^ value.dtype.type(1)
    if value.dtype.kind != "c" and np.isinf(value.astype(np.float64)):
        return np.asarray(0.5, value.dtype)
    return np.asarray(value + value.dtype.type(0.5), value.dtype)


REDUCER_TYPES = [(comp, identity, dtype) for comp, _, identity, dtypes, _ in REDUCERS
                 for dtype in dtypes]


@pytest.mark.parametrize("comp, identity, dtype", REDUCER_TYPES,
                         ids=[f"{c.__name__}-{t.__name__}" for c, _, t in REDUCER_TYPES])
def test_reduce_refuses_a_known_initial_value_that_is_not_the_identity(comp, identity, dtype):
    # XLA treats the initial value as the identity: over a dimension of size 1 its
    # simplifier drops it (Reduce(multiply)(x_f32[1], 1.5) gave x[0], not 1.5 x[0]).
    x = hd.array(np.ones((1, 2), dtype.np_dtype))
    ident = np.asarray(identity(dtype), dtype.np_dtype)
    other = hd.array(_not_the_identity(ident))
    op = ops.Reduce(comp, (0,))
    for run in (op, hd.compile(lambda x: op(x, other))):  # concrete, or a staged constant
        with pytest.raises(hd.ShapeError) as e:
            run(x, other) if run is op else run(x)
        message = str(e.value)
        assert repr(op) in message and str(x.type) in message
        assert "identity" in message and "outside" in message, message
    want = run_oracle(lambda x: x[0], (np.ones((1, 2), dtype.np_dtype),))
    assert_matches(op(x, hd.array(ident)), want, Example({}, (), None), "identity init")
    # A symbolic initial value cannot be checked: XLA's result is implementation-defined.
    assert hd.compile(op)(x, other).shape == (2,)


def test_reduce_init_check_names_the_repro_and_accepts_both_zeros_for_add():
    x = hd.array(np.float32([2.0]))
    with pytest.raises(hd.ShapeError, match=r"1\.5 is not 1\.0, the identity of Multiply"):
        ops.Reduce(_mul, (0,))(x, hd.array(np.float32(1.5)))
    for zero in (0.0, -0.0):
        assert float(ops.Reduce(_add, (0,))(x, hd.array(np.float32(zero)))) == 2.0
    # Other computations (and variadic reduces) are not checked: implementation-defined.
    assert float(ops.Reduce(_xp_add_twice, (0,))(x, hd.array(np.float32(1.5)))) in (2.0, 5.0)


def _xp_add_twice(a, b):
    return ops.Add()(ops.Add()(a, b), b)


ELEMENTWISE_OPS = [
    (registry()[k](), c.dtypes)
    for k, c in CASES.items() if isinstance(c, Elementwise) and c.arity > 1
] + [(ops.Compare("EQ"), ALL), (ops.Select(), ALL), (ops.Map(_mul_add), NUMBERS)]


@pytest.mark.parametrize("op, dtypes", ELEMENTWISE_OPS, ids=[repr(o) for o, _ in ELEMENTWISE_OPS])
@CHEAP
@given(data=st.data())
def test_elementwise_ops_reject_unequal_shapes(op, dtypes, data):
    dtype = data.draw(st.sampled_from(dtypes))
    a, b = data.draw(shapes()), data.draw(shapes())
    if a == b:
        b = b + (2,)
    n = 3 if isinstance(op, ops.Select) else 2
    odd = data.draw(st.integers(0, n - 1))  # which operand has the other shape
    if isinstance(op, ops.Select) and odd == 0 and b == ():
        b = a + (2,)  # a scalar predicate is allowed: it picks a whole operand
    types = [ArrayType(hd.pred if isinstance(op, ops.Select) and i == 0 else dtype,
                       b if i == odd else a) for i in range(n)]
    args = [hd.array(np.zeros(t.shape, t.dtype.np_dtype)) for t in types]
    for run in (op, staged(op)):
        with pytest.raises(hd.ShapeError) as e:
            run(*args)
        assert repr(op) in str(e.value) and all(str(t) in str(e.value) for t in types)


# -- 4. shape rules agree with what XLA and jax produce ----------------------------------


def _xla_result_types(optimized_hlo: str) -> list[tuple[str, tuple[int, ...]]]:
    """Element types and shapes of a compiled module's result, from its entry layout."""
    header = optimized_hlo.splitlines()[0]
    result = header.split("entry_computation_layout={", 1)[1].split(")->", 1)[1]
    return [(t, tuple(int(d) for d in dims.split(",") if d))
            for t, dims in re.findall(r"(\w+)\[([\d,]*)\]", result)]


def _flat(t) -> list[tuple[str, tuple[int, ...]]]:
    elements = t.elements if isinstance(t, TupleType) else (t,)
    return [(e.dtype.hlo, e.shape) for e in elements]


@pytest.mark.parametrize("opcode", RUNNABLE)
@RESULT_TYPES
@given(data=st.data())
def test_result_type_is_what_xla_and_jax_produce(opcode, data):
    ex = data.draw(examples(opcode), label="example")
    op = registry()[opcode](**ex.static)
    arrays_ = [hd.array(a) for a in ex.args]
    declared = _flat(op.result_type(*(a.type for a in arrays_)))

    exe = staged(op).entry(*arrays_).exe
    assert _xla_result_types(exe.optimized_hlo()) == declared

    if getattr(ex.oracle, "on_host", False):
        out = run_oracle(ex.oracle, ex.args)
    else:
        with quietly():
            out = jax.eval_shape(ex.oracle, *ex.args)
    outs = out if isinstance(out, tuple) else (out,)
    assert [(hd.element_type(o.dtype).hlo, tuple(o.shape)) for o in outs] == declared

    eager = op(*arrays_)  # what the user gets back
    eager = eager if isinstance(eager, tuple) else (eager,)
    host = [np.asarray(e) for e in eager]
    assert [(hd.element_type(h.dtype).hlo, h.shape) for h in host] == declared
