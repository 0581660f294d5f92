"""hd.config.default_float: the floating type of values that do not say theirs (issue 30)."""

import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp


@pytest.fixture
def float32_default():
    hd.config.default_float = "float32"
    try:
        yield
    finally:
        hd.config.default_float = "float64"


def test_the_default_is_numpys_float64():
    assert hd.config.default_float == "float64"
    assert xp.zeros(3).dtype is hd.float64 and hd.array(1.0).dtype is hd.float64
    assert xp.__array_namespace_info__().default_dtypes()["real floating"] is hd.float64


@pytest.mark.parametrize("make, want", [
    (lambda: xp.zeros(3), np.zeros(3)),
    (lambda: xp.ones((2, 2)), np.ones((2, 2))),
    (lambda: xp.empty(0), np.empty(0)),
    (lambda: xp.eye(3, k=1), np.eye(3, k=1)),
    (lambda: xp.full((2,), 1.1), np.full((2,), 1.1)),
    (lambda: xp.arange(0.0, 1.0, 0.1), np.arange(0.0, 1.0, 0.1, dtype=np.float32)),
    (lambda: xp.linspace(0, 1, 7), np.linspace(0, 1, 7)),
    (lambda: xp.asarray([0.1, 0.2]), np.asarray([0.1, 0.2])),
    (lambda: xp.asarray(0.1), np.asarray(0.1)),
    (lambda: hd.array(0.1), np.asarray(0.1)),
    (lambda: hd.array([[0.1], [0.3]]), np.asarray([[0.1], [0.3]])),
])
def test_creation_functions_and_python_floats_take_float32(float32_default, make, want):
    got = make()
    assert got.dtype is hd.float32
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want).astype(np.float32))


def test_complex_numbers_take_complex64(float32_default):
    assert hd.array(1 + 2j).dtype is hd.complex64
    assert xp.asarray([1j]).dtype is hd.complex64
    assert xp.full((1,), 2j).dtype is hd.complex64


def test_numpy_values_ints_and_given_dtypes_keep_their_types(float32_default):
    assert hd.array(np.float64(0.5)).dtype is hd.float64
    assert hd.array(np.zeros(2)).dtype is hd.float64
    assert xp.asarray(np.float64(0.5)).dtype is hd.float64
    assert xp.zeros(2, dtype=hd.float64).dtype is hd.float64
    assert hd.array([1, 2]).dtype is hd.int64 and xp.arange(3).dtype is hd.int64
    assert xp.full((2,), 7).dtype is hd.int64


def test_python_floats_lift_to_the_default(float32_default):
    assert (hd.array(np.int32([1])) + 1.5).dtype is hd.float32
    assert (hd.array(np.int64([1])) * 0.5).dtype is hd.float32
    assert (hd.array(np.float64([1])) * 0.5).dtype is hd.float64  # weak: the array's type wins
    f = hd.compile(lambda lr: lr * 2)
    out = f(0.1)
    assert out.dtype is hd.float32 and float(out) == pytest.approx(0.2, rel=1e-7)
    assert xp.result_type(1.5) is hd.float32


def test_default_dtypes_follow_the_setting(float32_default):
    got = xp.__array_namespace_info__().default_dtypes()
    assert got == {"real floating": hd.float32, "complex floating": hd.complex64,
                   "integral": hd.int64, "indexing": hd.int64}


def test_a_change_restages_compiled_functions():
    f = hd.compile(lambda: xp.zeros(2) + 0.5)
    assert f().dtype is hd.float64
    hd.config.default_float = "float32"
    try:
        assert f().dtype is hd.float32
    finally:
        hd.config.default_float = "float64"
    assert f().dtype is hd.float64


def test_other_values_are_refused():
    with pytest.raises(ValueError, match="default_float: must be one of 'float64', 'float32'"):
        hd.config.default_float = "bfloat16"
    assert hd.config.default_float == "float64"
