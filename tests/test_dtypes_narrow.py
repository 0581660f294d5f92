"""The narrow element types: int2, int4, uint2, uint4 and the float8 family (ml_dtypes).

Their HLO names, transfer to and from numpy (every bit pattern), HLO literals, and
the ops XLA:CPU runs on them (add, multiply, compare, convert, dot) against
ml_dtypes' own numpy arithmetic, eagerly and staged; the ops it refuses fail with a
ShapeError that says so.
"""

import itertools
import re

import hlodsl.stdlib as xp
import ml_dtypes
import numpy as np
import pytest

import hlodsl as hd
from hlodsl import ops
from hlodsl.arrays import dtypes

# float4_e2m1fn and the float6 types have their own tests: tests/test_dtypes_f4_f6.py.
NARROW = tuple(t for t in dtypes.narrow_element_types()
               if not t.__name__.startswith(("float4", "float6")))
INTS = [t for t in NARROW if issubclass(t, hd.Integer)]
FLOAT8 = [t for t in NARROW if issubclass(t, hd.Floating)]
HLO_NAMES = {"int2": "s2", "int4": "s4", "uint2": "u2", "uint4": "u4",
             "float8_e4m3fn": "f8e4m3fn", "float8_e5m2": "f8e5m2",
             "float8_e4m3fnuz": "f8e4m3fnuz", "float8_e5m2fnuz": "f8e5m2fnuz",
             "float8_e4m3b11fnuz": "f8e4m3b11fnuz", "float8_e3m4": "f8e3m4",
             "float8_e4m3": "f8e4m3", "float8_e8m0fnu": "f8e8m0fnu"}
ID = {"ids": lambda t: t.__name__}


def test_every_narrow_type_has_its_hlo_name_and_kind():
    assert {t.__name__: t.hlo for t in NARROW} == HLO_NAMES
    assert len(dtypes.narrow_element_types()) == len(NARROW) + 3  # float4_e2m1fn, float6_*
    assert set(NARROW) <= set(dtypes.all_element_types(narrow=True))
    assert not set(NARROW) & set(dtypes.all_element_types())  # not among the standard ones
    for t in NARROW:
        assert dtypes.element_type(t.np_dtype) is t and dtypes.from_hlo(t.hlo) is t
        assert getattr(hd, t.__name__) is t and t == t.np_dtype
    assert issubclass(hd.int4, hd.SignedInteger) and issubclass(hd.uint2, hd.UnsignedInteger)
    assert all(issubclass(t, hd.Floating) for t in FLOAT8)
    assert not issubclass(hd.float8_e8m0fnu, hd.Number)  # a scale format, see dtypes.py


def _every_value(t) -> np.ndarray:
    """Every bit pattern of a narrow type (every value of the integer ones)."""
    if issubclass(t, hd.Integer):
        info = ml_dtypes.iinfo(t.np_dtype)
        return np.arange(info.min, info.max + 1).astype(t.np_dtype)
    return np.arange(256, dtype=np.uint8).view(t.np_dtype)


@pytest.mark.parametrize("t", NARROW, **ID)
def test_every_bit_pattern_round_trips_through_the_device(t):
    x = _every_value(t)
    back = np.asarray(hd.array(x))
    assert back.dtype == x.dtype
    np.testing.assert_array_equal(back.view(np.uint8), x.view(np.uint8))
    # And through a compiled identity and a reshape (data movement keeps the bits).
    out = hd.compile(lambda v: ops.Reshape((x.size, 1))(v))(hd.array(x))
    np.testing.assert_array_equal(np.asarray(out).reshape(-1).view(np.uint8), x.view(np.uint8))


@pytest.mark.parametrize("t", NARROW, **ID)
def test_constants_print_as_literals_xla_reads_back(t):
    x = _every_value(t)
    if not issubclass(t, hd.Integer):  # NaN prints as "nan": its payload is not kept
        x = x[~np.isnan(x.astype(np.float32))]
    # The constant is captured by the staged function: it becomes an HLO literal.
    out = hd.compile(lambda: ops.Reshape(x.shape)(hd.array(x)))()
    np.testing.assert_array_equal(np.asarray(out).view(np.uint8), x.view(np.uint8))
    assert f"{t.hlo}[{x.size}] constant(" in str(hd.code_hlo(lambda: ops.Copy()(hd.array(x))))


def _operands(t):
    """Two arrays of every pair of values (integers), or of finite sample values (floats)."""
    if issubclass(t, hd.Integer):
        v = _every_value(t)
        x, y = (np.array(p, t.np_dtype) for p in zip(*itertools.product(v, v)))
        return x, y
    values = np.float32([0, 1, -1, 0.5, 1.5, -2, 3, 0.25, -0.125, 6, 12, -7])
    x, y = (np.array(p, np.float32).astype(t.np_dtype)
            for p in zip(*itertools.product(values, values)))
    return x, y


def _is_int(dtype) -> bool:
    try:
        ml_dtypes.iinfo(dtype)
    except (TypeError, ValueError):
        return False
    return True


def _exact(fn, x, y):
    """fn in exact arithmetic, then wrapped (integers) or rounded once (floats) to x's type."""
    if not _is_int(x.dtype):
        return fn(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)
    info = ml_dtypes.iinfo(x.dtype)
    wide = fn(x.astype(np.int64), y.astype(np.int64))
    return ((wide - info.min) % (1 << info.bits) + info.min).astype(x.dtype)


def _equal(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype
    if got.dtype.kind in "fV" and not _is_int(got.dtype):  # ml_dtypes floats: NaN == NaN here
        got, expected = got.astype(np.float64), expected.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        got, expected = got[~np.isnan(got)], expected[~np.isnan(expected)]
    elif got.dtype.kind == "V":
        got, expected = got.astype(np.int64), expected.astype(np.int64)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("t", INTS + FLOAT8, **ID)
def test_add_multiply_subtract_and_compare_match_ml_dtypes(t):
    x, y = _operands(t)
    a, b = hd.array(x), hd.array(y)
    for op, expected in ((ops.Add(), _exact(np.add, x, y)),
                         (ops.Multiply(), _exact(np.multiply, x, y)),
                         (ops.Subtract(), _exact(np.subtract, x, y)),
                         (ops.Maximum(), _exact(np.maximum, x, y))):
        _equal(op(a, b), expected)  # rounded once from exact (float) / wrapped (int)
        _equal(hd.compile(lambda u, v, op=op: op(u, v))(a, b), expected)
    _equal(ops.Compare("LT")(a, b), x.astype(np.float64) < y.astype(np.float64))
    _equal(xp.add(a, b), _exact(np.add, x, y))  # the stdlib (same-type operands: no promotion)


@pytest.mark.parametrize("t", NARROW, **ID)
@pytest.mark.parametrize("other", [hd.float32, hd.float16, hd.int32, hd.bfloat16], **ID)
def test_convert_to_and_from_standard_types_matches_ml_dtypes(t, other):
    x = _every_value(t)
    if issubclass(other, hd.Integer) and not issubclass(t, hd.Integer):
        x = x[np.isfinite(x.astype(np.float32))]
        x = x[np.abs(x.astype(np.float32)) < 2 ** 20]  # float -> int out of range: undefined
    _equal(ops.Convert(other)(hd.array(x)), x.astype(other.np_dtype))
    back = x.astype(other.np_dtype)
    if not issubclass(other, hd.Integer) or issubclass(t, hd.Integer):
        _equal(ops.Convert(t)(hd.array(back)), back.astype(t.np_dtype))


@pytest.mark.parametrize("t", [t for t in NARROW if t.__name__ not in ("int2", "uint2",
                                                                        "float8_e8m0fnu")], **ID)
def test_dot_runs_on_the_types_xla_cpu_supports(t):
    x = np.array([[1, 0, 1], [1, 1, 0]]).astype(t.np_dtype)
    y = np.array([[1, 1], [0, 1], [1, 0]]).astype(t.np_dtype)
    # Small values: every product and sum is exact in the type.
    expected = (x.astype(np.float64) @ y.astype(np.float64)).astype(t.np_dtype)
    _equal(ops.Dot((1,), (0,))(hd.array(x), hd.array(y)), expected)
    widened = ops.Dot((1,), (0,), preferred_element_type=hd.float32)
    if t in (hd.int4, hd.uint4):  # XLA's verifier fails on it: refused with a ShapeError
        with pytest.raises(hd.ShapeError, match=f"no dot of {t.__name__} to another"):
            widened(hd.array(x), hd.array(y))
    else:
        _equal(widened(hd.array(x), hd.array(y)), expected.astype(np.float32))


@pytest.mark.parametrize("t", [hd.int2, hd.uint2], **ID)
def test_dot_of_two_bit_integers_is_refused_clearly(t):
    x = hd.array(np.ones((2, 2), t.np_dtype))
    with pytest.raises(hd.ShapeError, match=rf"XLA:CPU has no dot of {t.__name__}"):
        ops.Dot((1,), (0,))(x, x)
    with pytest.raises(hd.ShapeError, match="no dot"):
        hd.compile(lambda v: ops.Dot((1,), (0,))(v, v))(x)


def test_float8_e8m0fnu_is_storage_only():
    x = np.array([1, 2, 4, 0.5], ml_dtypes.float8_e8m0fnu)
    a = hd.array(x)
    _equal(ops.Convert(hd.float32)(a), np.float32([1, 2, 4, 0.5]))
    _equal(a[1:], x[1:])
    for bad in (lambda: ops.Add()(a, a), lambda: xp.sum(a), lambda: ops.Multiply()(a, a)):
        with pytest.raises(hd.ShapeError, match=re.escape("element type float8_e8m0fnu is not")):
            bad()


def test_interned_constants_keep_their_narrow_type():
    # Same bytes, different types: the staged constants must stay two nodes.
    x = np.array([1, 2], ml_dtypes.float8_e4m3fn)
    y = x.view(ml_dtypes.float8_e4m3fnuz)
    fx, fy = hd.compile(lambda: (hd.array(x), hd.array(y)))()
    assert fx.dtype is hd.float8_e4m3fn and fy.dtype is hd.float8_e4m3fnuz
    np.testing.assert_array_equal(np.asarray(fy).view(np.uint8), y.view(np.uint8))
    # Eager scalar operands of the stdlib are cached per dtype, not per dtype.str ("<V1").
    one_fn, one_fnuz = xp.asarray(x[0]), xp.asarray(y[0])
    assert (x[0] * xp.ones(2, dtype=hd.float8_e4m3fn)).dtype is hd.float8_e4m3fn
    assert one_fn.dtype is hd.float8_e4m3fn and one_fnuz.dtype is hd.float8_e4m3fnuz


def test_unknown_dtype_errors_list_the_narrow_types():
    with pytest.raises(TypeError, match="int4.*float8_e4m3fn"):
        dtypes.element_type("float99")
