"""float4_e2m1fn and the float6 types (issue 19), against ml_dtypes.

float4_e2m1fn runs on XLA:CPU: every value round-trips, converts, adds, multiplies,
compares, dots and moves as ml_dtypes computes it (exact result rounded once). The
float6 types are host-only with this jaxlib (no f6 buffers; an f6 constant aborts
the process; an f6 convert fails to lower): hlodsl names and prints them and
refuses every way onto the device with a ShapeError, before XLA sees them.
"""

import itertools

import hlodsl.stdlib as xp
import numpy as np
import pytest

import hlodsl as hd
from hlodsl import ops
from hlodsl.arrays import dtypes
from hlodsl.ir.literals import literal_text

F4 = hd.float4_e2m1fn
F6 = (hd.float6_e2m3fn, hd.float6_e3m2fn)
ID = {"ids": lambda t: t.__name__}


def _every_value(t) -> np.ndarray:
    """Every bit pattern of a sub-byte float (ml_dtypes keeps it in the low bits of a byte)."""
    return np.arange(1 << dtypes.bit_width(t), dtype=np.uint8).view(t.np_dtype)


def _equal(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype
    if got.dtype.kind == "V":  # ml_dtypes floats: compare the bits (keeps -0 apart from 0)
        got, expected = got.view(np.uint8), expected.view(np.uint8)
    np.testing.assert_array_equal(got, expected)


def test_names_kinds_and_widths():
    assert [(t.__name__, t.hlo, dtypes.bit_width(t)) for t in (F4, *F6)] == [
        ("float4_e2m1fn", "f4e2m1fn", 4), ("float6_e2m3fn", "f6e2m3fn", 6),
        ("float6_e3m2fn", "f6e3m2fn", 6)]
    for t in (F4, *F6):
        assert issubclass(t, hd.Floating) and t in dtypes.narrow_element_types()
        assert t not in dtypes.all_element_types() and t in dtypes.all_element_types(narrow=True)
        assert dtypes.from_hlo(t.hlo) is t and dtypes.element_type(t.np_dtype) is t
        assert dtypes.element_type(t.__name__) is t and t == t.np_dtype
    assert dtypes.device_refusal(F4) is None
    assert all("host-only" in dtypes.device_refusal(t) for t in F6)


@pytest.mark.parametrize("t", (F4, *F6), **ID)
def test_literals_spell_every_value_exactly(t):
    x = _every_value(t)
    # The parser reads the decimal back to the same bits: the float64 repr is exact.
    text = literal_text(x)
    back = np.array([float(v) for v in text.strip("{}").split(",")]).astype(t.np_dtype)
    _equal(back, x)


def test_float4_every_value_round_trips_through_the_device():
    x = _every_value(F4)
    a = hd.array(x)
    assert a.dtype is F4
    _equal(a, x)
    _equal(hd.compile(lambda v: ops.Reshape((4, 4))(v))(a), x.reshape(4, 4))
    # As an HLO literal of a staged constant.
    _equal(hd.compile(lambda: ops.Reshape((16,))(hd.array(x)))(), x)
    assert "f4e2m1fn[16] constant(" in str(hd.code_hlo(lambda: ops.Copy()(hd.array(x))))


@pytest.mark.parametrize("other", [hd.float32, hd.float16, hd.bfloat16, hd.float64, hd.int32,
                                   hd.int8, hd.float8_e4m3fn, hd.float8_e5m2], **ID)
def test_float4_converts_like_ml_dtypes(other):
    x = _every_value(F4)
    if issubclass(other, hd.Integer):  # XLA:CPU gets +-6 wrong: refused (ops/convert.py)
        with pytest.raises(hd.ShapeError, match=f"float4_e2m1fn's \\+-6 to {other.__name__}"):
            ops.Convert(other)(hd.array(x))
        with pytest.raises(hd.ShapeError, match="convert to float32 first"):
            xp.astype(hd.array(x), other)
        _equal(ops.Convert(other)(ops.Convert(hd.float32)(hd.array(x))),
               x.astype(other.np_dtype))  # the detour the error names
    else:
        _equal(ops.Convert(other)(hd.array(x)), x.astype(other.np_dtype))
    # Back, from every value of the other type's grid in range (ties round to even) and
    # from every float4 value converted.
    grid = np.arange(-6, 6.01, 0.125, dtype=np.float32)
    if issubclass(other, hd.Integer):
        grid = np.arange(-6, 7, dtype=np.float32)
    src = np.concatenate([grid, x.astype(np.float32)]).astype(other.np_dtype)
    _equal(ops.Convert(F4)(hd.array(src)), src.astype(np.float32).astype(F4.np_dtype))


def test_float4_converts_out_of_range_values_as_ml_dtypes_does():
    src = np.float32([6.5, 7, 100, -1e30, np.inf, -np.inf, 1e-3, -0.2, 0.25, 0.75])
    _equal(ops.Convert(F4)(hd.array(src)), src.astype(F4.np_dtype))


def _pairs():
    v = _every_value(F4)
    return tuple(np.array(p, F4.np_dtype) for p in zip(*itertools.product(v, v)))


def _exact(fn, x, y):
    """fn in float64 (exact on float4 operands), rounded once to float4 as ml_dtypes does."""
    return fn(x.astype(np.float64), y.astype(np.float64)).astype(F4.np_dtype)


def test_float4_arithmetic_and_compare_on_every_pair_match_ml_dtypes():
    x, y = _pairs()
    a, b = hd.array(x), hd.array(y)
    for op, fn in ((ops.Add(), np.add), (ops.Multiply(), np.multiply),
                   (ops.Subtract(), np.subtract)):
        expected = _exact(fn, x, y)
        _equal(op(a, b), expected)
        _equal(hd.compile(lambda u, v, op=op: op(u, v))(a, b), expected)
    # max/min: numpy picks either zero of max(0, -0); XLA orders -0 below +0. By value.
    for op, fn in ((ops.Maximum(), np.maximum), (ops.Minimum(), np.minimum)):
        got = np.asarray(op(a, b)).astype(np.float32)
        np.testing.assert_array_equal(got, fn(x.astype(np.float32), y.astype(np.float32)))
    for direction, fn in (("LT", np.less), ("EQ", np.equal), ("GE", np.greater_equal)):
        _equal(ops.Compare(direction)(a, b), fn(x.astype(np.float32), y.astype(np.float32)))
    _equal(xp.add(a, b), _exact(np.add, x, y))  # the stdlib: same types, no promotion


def test_float4_dot_runs_and_refuses_a_wider_result():
    x = np.float32([[1, 0, 0.5], [1, -1, 0]]).astype(F4.np_dtype)
    y = np.float32([[1, 1], [0, 1], [2, 0]]).astype(F4.np_dtype)
    expected = (x.astype(np.float64) @ y.astype(np.float64)).astype(F4.np_dtype)
    _equal(ops.Dot((1,), (0,))(hd.array(x), hd.array(y)), expected)
    _equal(hd.compile(lambda u, v: ops.Dot((1,), (0,))(u, v))(hd.array(x), hd.array(y)),
           expected)
    widened = ops.Dot((1,), (0,), preferred_element_type=hd.float32)
    with pytest.raises(hd.ShapeError, match="no dot of float4_e2m1fn to another element "
                                            "type.*float16 first"):
        widened(hd.array(x), hd.array(y))


def test_float4_data_movement_keeps_the_bits():
    x = _every_value(F4).reshape(4, 4)
    a = hd.array(x)
    _equal(ops.Transpose((1, 0))(a), x.T)
    _equal(a[1:3, ::2], x[1:3, ::2])
    _equal(ops.Concatenate(0)(a, a), np.concatenate([x, x]))
    _equal(ops.Reverse((1,))(a), x[:, ::-1])
    for same_width in (hd.uint4, hd.int4):
        bits = ops.BitcastConvert(same_width)(a)
        _equal(bits, x.view(same_width.np_dtype))
        _equal(ops.BitcastConvert(F4)(bits), x)


@pytest.mark.parametrize("other", [hd.uint8, hd.int8, hd.float32], **ID)
def test_float4_bitcast_to_another_width_is_refused(other):
    a = hd.array(_every_value(F4))
    with pytest.raises(hd.ShapeError, match=r"float4_e2m1fn \(4 bits\).*not supported"):
        ops.BitcastConvert(other)(a)
    with pytest.raises(hd.ShapeError, match=r"to float4_e2m1fn \(4 bits\) is not supported"):
        ops.BitcastConvert(F4)(hd.array(np.zeros(4, other.np_dtype)))


@pytest.mark.parametrize("t", F6, **ID)
def test_float6_never_reaches_the_device(t):
    # Each of these would fail in jaxlib or abort the process in XLA: refused before.
    host = _every_value(t)
    f32 = hd.array(np.float32([1, 2]))
    refusals = [
        lambda: hd.array(host),
        lambda: hd.array(np.float32([1, 2]), dtype=t),
        lambda: ops.Convert(t)(f32),
        lambda: hd.compile(lambda v: ops.Convert(hd.float32)(ops.Convert(t)(v)))(f32),
        lambda: xp.zeros(3, dtype=t),
        lambda: xp.astype(f32, t),
    ]
    for refused in refusals:
        with pytest.raises(hd.ShapeError, match=f"element type {t.__name__} is host-only"):
            refused()
