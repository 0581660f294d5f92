"""Bit ops, complex parts, rounding/precision, clamp, copy, bitcast-convert and the
special functions, each eagerly and staged, against jax.lax."""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from jax import lax

import hlodsl as hd
from hlodsl import ops

COVERED_OPCODES = {
    "shift-left", "shift-right-arithmetic", "shift-right-logical", "count-leading-zeros",
    "popcnt", "complex", "real", "imag", "round-nearest-afz", "reduce-precision", "clamp",
    "copy", "bitcast-convert", "erf", "sinh", "cosh", "asin", "acos", "asinh", "acosh", "atanh",
}

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float32, np.float64]
# Special functions are compared with the true value (numpy in float64, or
# math.erf) rounded to the dtype: within 8 ulp for f32, 16 for f64 (XLA's own
# exp/log1p are a few ulp off; seen up to ~5 in f32).
ULPS = {np.float32: 8, np.float64: 16}
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)


def _both(op, *arrays):
    eager = op(*(hd.array(a) for a in arrays))
    staged = hd.compile(lambda *xs: op(*xs))(*(hd.array(a) for a in arrays))
    for r in (eager, staged):
        assert r.type == op.result_type(*(hd.array(a).type for a in arrays))
    return np.asarray(eager), np.asarray(staged)


def _exact(op, oracle, *arrays):
    expected = np.asarray(oracle(*(jnp.asarray(a) for a in arrays)))
    for got in _both(op, *arrays):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(INTS).flatmap(lambda t: st.tuples(
    hnp.arrays(t, st.shared(SHAPES, key="s")), hnp.arrays(t, st.shared(SHAPES, key="s")))))
def test_shifts_and_bit_counts_match_lax(xs):
    x, s = xs
    for op, oracle in ((ops.ShiftLeft(), lax.shift_left),
                       (ops.ShiftRightArithmetic(), lax.shift_right_arithmetic),
                       (ops.ShiftRightLogical(), lax.shift_right_logical)):
        _exact(op, oracle, x, s)
        np.testing.assert_array_equal(op.reference(x, s), np.asarray(oracle(x, s)))
    for op, oracle in ((ops.CountLeadingZeros(), lax.clz), (ops.PopulationCount(), lax.population_count)):
        _exact(op, oracle, x)
        np.testing.assert_array_equal(op.reference(x), np.asarray(oracle(x)))


@settings(max_examples=8, deadline=None)
@given(st.sampled_from(FLOATS).flatmap(lambda t: st.tuples(
    hnp.arrays(t, st.shared(SHAPES, key="c")), hnp.arrays(t, st.shared(SHAPES, key="c")))))
def test_complex_real_imag_match_lax(parts):
    re, im = parts
    _exact(ops.Complex(), lax.complex, re, im)
    # Built part by part: re + 1j * im would turn an infinite im into a NaN real part.
    z = np.empty(re.shape, np.complex64 if re.dtype == np.float32 else np.complex128)
    z.real, z.imag = re, im
    _exact(ops.Real(), lax.real, z)
    _exact(ops.Imag(), lax.imag, z)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(FLOATS).flatmap(lambda t: hnp.arrays(t, SHAPES, elements=st.floats(
    -1e6, 1e6, width=32 if t == np.float32 else 64) | st.sampled_from([0.5, -2.5, 3.5]))))
def test_rounding_and_reduced_precision_match_lax(x):
    _exact(ops.RoundNearestAfz(), lambda v: lax.round(v, lax.RoundingMethod.AWAY_FROM_ZERO), x)
    np.testing.assert_array_equal(ops.RoundNearestAfz().reference(x),
                                  np.asarray(lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO)))
    for e, m in ((8, 7), (5, 10), (4, 3)):
        _exact(ops.ReducePrecision(e, m), lambda v: lax.reduce_precision(v, e, m), x)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(INTS + FLOATS).flatmap(lambda t: st.tuples(
    hnp.arrays(t, st.shared(SHAPES, key="k")), hnp.arrays(t, ()), hnp.arrays(t, ()))),
    st.booleans())
def test_clamp_and_copy_match_lax(args, full_bounds):
    x, lo, hi = args
    if full_bounds:
        lo, hi = np.full_like(x, lo), np.full_like(x, hi)
    _exact(ops.Clamp(), lax.clamp, lo, x, hi)
    _exact(ops.Copy(), lambda v: v, x)


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(INTS + FLOATS), st.sampled_from(INTS + FLOATS),
       hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), st.integers(0, 2**32))
def test_bitcast_convert_matches_lax(src, dst, shape, seed):
    ratio = np.dtype(dst).itemsize / np.dtype(src).itemsize
    if ratio > 1:
        shape = shape + (int(ratio),)
    nbytes = int(np.prod(shape)) * np.dtype(src).itemsize
    raw = np.random.default_rng(seed).integers(0, 256, size=(nbytes,), dtype=np.uint8)
    x = raw.view(src).reshape(shape)
    op = ops.BitcastConvert(dst)
    expected = np.asarray(lax.bitcast_convert_type(jnp.asarray(x), dst))
    for got in _both(op, x):
        # compare bits: NaN payloads are not equal as floats
        np.testing.assert_array_equal(_bytes(got), _bytes(expected))
        assert got.shape == expected.shape
    np.testing.assert_array_equal(_bytes(op.reference(x)), _bytes(expected))


def _bytes(a):
    return np.asarray(a).reshape(-1).view(np.uint8)


@pytest.mark.parametrize("src", [np.complex64, np.complex128])
def test_bitcast_convert_of_complex_only_to_itself(src):
    # XLA rejects the HLO of any other complex bitcast (StableHLO: "cannot convert
    # between real and complex types"): a ShapeError at the call, as jax refuses it.
    z = np.array([1.5 + 2j, -3 - 0.25j], src)
    _exact(ops.BitcastConvert(src), lambda v: lax.bitcast_convert_type(v, src), z)
    for dst in INTS + FLOATS + [np.float16, np.complex64, np.complex128]:
        if dst is src:
            continue
        with pytest.raises(Exception, match="complex values unless"):  # jax refuses too
            lax.bitcast_convert_type(jnp.asarray(z), dst)
        for bad, arg in ((ops.BitcastConvert(dst), z),
                         (ops.BitcastConvert(src), np.zeros((2, 2, 2), dst))):
            for run in (bad, hd.compile(lambda v, bad=bad: bad(v))):
                with pytest.raises(hd.ShapeError, match="complex type converts only to itself"):
                    run(hd.array(arg))


def _erf(x):
    from math import erf

    return np.vectorize(erf, otypes=[np.float64])(x)


SPECIAL = [(ops.Erf(), _erf, (-4, 4)), (ops.Sinh(), np.sinh, (-30, 30)),
           (ops.Cosh(), np.cosh, (-30, 30)), (ops.Asin(), np.arcsin, (-1, 1)),
           (ops.Acos(), np.arccos, (-1, 1)), (ops.Asinh(), np.arcsinh, (-1e30, 1e30)),
           (ops.Acosh(), np.arccosh, (1, 1e30)), (ops.Atanh(), np.arctanh, (-0.9999, 0.9999))]


@pytest.mark.parametrize("op,oracle,domain", SPECIAL, ids=lambda v: getattr(v, "opcode", ""))
@settings(max_examples=6, deadline=None)
@given(dtype=st.sampled_from(FLOATS), shape=SHAPES, data=st.data())
def test_special_functions_are_within_a_few_ulp_of_the_true_value(op, oracle, domain, dtype,
                                                                   shape, data):
    width = 32 if dtype == np.float32 else 64
    lo, hi = (float(dtype(v)) for v in domain)  # bounds representable in the dtype
    x = data.draw(hnp.arrays(dtype, shape, elements=st.floats(lo, hi, width=width)))
    expected = oracle(x.astype(np.float64)).astype(dtype)
    eps, tiny = np.finfo(dtype).eps, np.finfo(dtype).tiny
    for got in _both(op, x):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, expected, rtol=ULPS[dtype] * eps, atol=ULPS[dtype] * tiny)


def test_composites_stage_as_expressions_of_other_ops():
    text = str(hd.code_hlo(lambda x: ops.Asin()(x), hd.array(np.float32([0.5]))))
    assert " atan2(" in text and " asin(" not in text


def test_bad_operands_are_rejected_with_the_op_and_types():
    i32, f32 = hd.array(np.int32([1, 2])), hd.array(np.float32([1, 2]))
    with pytest.raises(hd.ShapeError, match=r"ShiftLeft\(\).*f32\[2\]"):
        ops.ShiftLeft()(f32, f32)
    with pytest.raises(hd.ShapeError, match=r"Complex\(\).*s32\[2\]"):
        ops.Complex()(i32, i32)
    with pytest.raises(hd.ShapeError, match="bounds must"):
        ops.Clamp()(hd.array(np.float32([0, 0, 0])), f32, hd.array(np.float32(1)))
    with pytest.raises(hd.ShapeError, match="trailing dimension of 4"):
        ops.BitcastConvert(hd.float32)(hd.array(np.uint8([1, 2, 3])))
    with pytest.raises(hd.ShapeError, match=r"Asin\(\).*s32"):
        ops.Asin()(i32)
    with pytest.raises(ValueError, match="exponent_bits"):
        ops.ReducePrecision(0, 3)
