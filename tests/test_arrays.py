"""Element types and Array[T, Shape]: the typed, shaped array class."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hlodsl as hd
from hlodsl.arrays import dtypes

pytestmark = pytest.mark.compat  # jax/jaxlib-release sensitive paths (.ci/compat)

ALL_NUMPY = [t.np_dtype for t in dtypes.all_element_types()]


def test_every_xla_element_type_is_present_with_its_hlo_name():
    names = {t.hlo for t in dtypes.all_element_types()}
    assert names == {"pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
                     "f16", "bf16", "f32", "f64", "c64", "c128"}


@pytest.mark.parametrize("t", dtypes.all_element_types(), ids=lambda t: t.hlo)
def test_element_types_round_trip_through_numpy_and_hlo_names(t):
    assert dtypes.element_type(t.np_dtype) is t
    assert dtypes.from_hlo(t.hlo) is t


def test_abstract_hierarchy_puts_bfloat16_with_the_floats():
    assert issubclass(hd.bfloat16, hd.Floating)
    assert issubclass(hd.float16, hd.Floating) and issubclass(hd.float64, hd.Inexact)
    assert issubclass(hd.complex64, hd.ComplexFloating)
    assert not issubclass(hd.complex64, hd.Floating)
    assert issubclass(hd.uint8, hd.UnsignedInteger) and not issubclass(hd.uint8, hd.SignedInteger)
    assert issubclass(hd.int64, hd.SignedInteger) and issubclass(hd.int64, hd.Number)
    assert not issubclass(hd.pred, hd.Number)


def test_unknown_dtypes_are_rejected_clearly():
    with pytest.raises(TypeError, match="no XLA element type"):
        dtypes.element_type(np.dtype("U3"))
    with pytest.raises(TypeError, match="not a value constructor"):
        hd.float32(1.0)


@pytest.mark.parametrize("np_dtype", ALL_NUMPY, ids=str)
def test_array_keeps_numpy_dtype_and_values(np_dtype):
    host = (np.arange(6).reshape(2, 3) % 2).astype(np_dtype)
    A = hd.array(host)
    assert A.dtype is dtypes.element_type(np_dtype)
    assert A.shape == (2, 3) and A.ndim == 2 and A.size == 6
    back = np.asarray(A)
    assert back.dtype == np_dtype
    np.testing.assert_array_equal(back, host)


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(st.sampled_from([np.float32, np.float64, np.int32, np.uint8, np.bool_]),
                  hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)))
def test_array_round_trips_any_shape(host):
    A = hd.array(host)
    assert type(A) is hd.Array[dtypes.element_type(host.dtype), host.shape]
    np.testing.assert_array_equal(np.asarray(A), host)


def test_python_scalars_follow_numpy_defaults_and_dtype_argument():
    assert hd.array(2.5).dtype is hd.float64
    assert hd.array(3).dtype is hd.int64
    assert hd.array(True).dtype is hd.pred
    assert hd.array(3, dtype=hd.float32).dtype is hd.float32
    assert hd.array([1, 2], dtype=np.int8).dtype is hd.int8
    assert hd.array(np.ones(2, ml_dtypes.bfloat16)).dtype is hd.bfloat16


def test_type_parameters_are_element_type_and_shape():
    A = hd.array(np.zeros((3, 4), np.float32))
    assert type(A) is hd.Array[hd.float32, (3, 4)]
    assert hd.Array[np.float32, (3, 4)] is hd.Array[hd.float32, (3, 4)]
    assert repr(type(A)) == "hlodsl.Array[float32, (3, 4)]"
    assert A.type == hd.ArrayType(hd.float32, (3, 4))


@pytest.mark.parametrize("shape,matches", [
    ((), {"Scalar"}), ((3,), {"Vector"}), ((3, 4), {"Matrix"}), ((2, 3, 4), set()),
])
def test_rank_aliases_match_only_their_rank(shape, matches):
    A = hd.array(np.zeros(shape, np.float32))
    aliases = {"Scalar": hd.Scalar, "Vector": hd.Vector, "Matrix": hd.Matrix}
    assert {n for n, t in aliases.items() if isinstance(A, t)} == matches
    assert isinstance(A, hd.Array)


def test_element_typed_aliases_and_shape_wildcards():
    A = hd.array(np.zeros((3, 4), np.float32))
    assert isinstance(A, hd.Matrix[hd.float32]) and isinstance(A, hd.Matrix[hd.Floating])
    assert not isinstance(A, hd.Matrix[hd.Integer])
    assert isinstance(A, hd.Array[hd.float32, (3, None)])
    assert not isinstance(A, hd.Array[hd.float32, (4, None)])
    assert isinstance(A, hd.Array[hd.Number, ...]) and isinstance(A, hd.Array[hd.float32])
    assert not isinstance(A, hd.Array[hd.float32, (3, 4, 1)])
    assert issubclass(hd.Array[hd.float32, (3, 4)], hd.Matrix)
    assert not issubclass(hd.Matrix, hd.Array[hd.float32, (3, 4)])


def test_bad_type_parameters_are_rejected():
    with pytest.raises(TypeError):
        hd.Array[hd.float32, (3, -1)]
    with pytest.raises(TypeError):
        hd.Array["not a dtype", (3,)]


def test_repr_shows_type_and_values():
    assert repr(hd.array(np.float32([1, 2]))) == "hlodsl.Array[float32, (2,)]([1., 2.])"


def test_concrete_conversions_and_immutability():
    x = hd.array(np.float32(2.5))
    assert float(x) == 2.5 and bool(x) and int(hd.array(np.int32(3))) == 3
    assert [1, 2, 3][hd.array(np.int64(1))] == 2
    with pytest.raises(TypeError, match="immutable"):
        hd.array(np.zeros(3))[0] = 1.0
    with pytest.raises(ValueError, match="ambiguous"):
        bool(hd.array(np.zeros(3)))
    with pytest.raises(TypeError, match="integer scalar"):
        [1][hd.array(np.float32(0))]
