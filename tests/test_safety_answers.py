"""Regression tests for silent wrong answers and refused valid inputs.

Each test failed (or returned a wrong value) before its fix: empty max/min
returned the identity, grad of a complex output returned a gradient,
``astype(x, None)`` returned float64, out-of-range ``expand_dims`` raised a
plain ValueError, int64-overflowing shapes reached XLA, and mapreduce handed a
non-identity ``init`` to XLA's reduce (which may drop it). Oracles: numpy and
jax.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops
from platform_rules import ON_CPU
from hlodsl.arrays.types import ArrayType

# -- max and min of an empty axis (numpy: ValueError) ------------------------------------

EMPTY = [((0, 3), None), ((0, 3), 0), ((3, 0), 1), ((3, 0), -1), ((2, 0, 4), (0, 1)), ((0,), None)]


@pytest.mark.parametrize("fn", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("shape, axis", EMPTY)
def test_max_and_min_of_an_empty_axis_raise_like_numpy(fn, dtype, shape, axis):
    x = np.ones(shape, dtype)
    with pytest.raises(ValueError, match="zero-size array to reduction operation") as want:
        getattr(np, fn)(x, axis=axis)
    for run in (getattr(xp, fn), hd.compile(getattr(xp, fn))):
        with pytest.raises(ValueError) as got:
            run(hd.array(x), axis=axis)
        message = str(got.value)
        assert message.startswith(f"{fn}: ") and str(want.value) in message
        assert str(hd.array(x).type) in message and f"axis={axis}" in message


@pytest.mark.parametrize("fn", ["max", "min"])
@pytest.mark.parametrize("shape, axis", [((0, 3), 1), ((3, 0), 0), ((2, 3), None)])
def test_max_and_min_over_non_empty_axes_match_numpy(fn, shape, axis):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    for dtype in (np.float32, np.int8, np.bool_):
        want = getattr(np, fn)(x.astype(dtype), axis=axis)
        got = getattr(xp, fn)(hd.array(x.astype(dtype)), axis=axis)
        np.testing.assert_array_equal(np.asarray(got), want)
        assert np.asarray(got).dtype == want.dtype


def test_max_of_complex_numbers_is_a_type_error():
    with pytest.raises(TypeError, match="max: complex c64"):
        xp.max(hd.array(np.complex64([1, 2j])))


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
def test_argmax_and_argmin_of_an_empty_axis_raise_alike(fn):
    with pytest.raises(ValueError, match="empty sequence"):
        getattr(np, fn)(np.ones((0, 3), np.float32), axis=0)
    with pytest.raises(ValueError, match=rf"{fn}: attempt to take {fn} of an empty sequence "
                                         r"\(axis 0 of f32\[0,3\] has size 0"):
        getattr(xp, fn)(hd.array(np.ones((0, 3), np.float32)), axis=0)


def test_std_names_itself_for_a_bad_axis():
    with pytest.raises(IndexError, match="std: axis 2"):
        xp.std(hd.array(np.ones((2, 3), np.float32)), axis=2)


# -- mapreduce's init: reduced from the identity, combined outside ---------------------


@pytest.mark.parametrize("op, np_fn, init", [
    (xp.add, np.sum, 5.0), (xp.multiply, np.prod, 1.5), (xp.maximum, np.max, 10.0),
    (xp.minimum, np.min, -3.0), (xp.add, np.sum, 0.0), (xp.maximum, np.max, -np.inf),
])
@pytest.mark.parametrize("shape, axis", [((1,), 0), ((1, 3), 0), ((2, 3), 1), ((2, 3), None)])
def test_mapreduce_applies_its_init_once_even_over_size_one_axes(op, np_fn, init, shape, axis):
    # XLA's reduce drops a non-identity initial value over size-1 axes:
    # mapreduce(None, add, [2.], init=5) was 2, not 7.
    x = np.arange(1, np.prod(shape) + 1, dtype=np.float32).reshape(shape)
    want = np_fn(x, axis=axis, initial=init) if np_fn is not np.prod else np_fn(x, axis) * init
    for run in (xp.mapreduce, hd.compile(xp.mapreduce)):
        got = run(None, op, hd.array(x), axis=axis, init=init)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    # An init given as a (concrete or symbolic) array works the same way.
    init_array = hd.array(np.float32(init))
    got = hd.compile(lambda x, i: xp.mapreduce(None, op, x, axis=axis, init=i))(
        hd.array(x), init_array)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


# -- grad needs a real scalar -----------------------------------------------------------


def test_grad_of_a_complex_output_is_refused():
    z = hd.array(np.complex64(1 + 2j))
    with pytest.raises(TypeError, match="real type.*c64\\[\\].*vjp") as info:
        hd.grad(lambda z: z * z)(z)
    with pytest.raises(TypeError):  # jax refuses it too
        jax.grad(lambda z: z * z)(jnp.complex64(1 + 2j))
    assert "complex" in str(info.value)
    with pytest.raises(TypeError, match="real type"):
        hd.compile(hd.grad(lambda z: z * z))(z)
    with pytest.raises(TypeError, match="real type"):
        hd.grad(lambda z: (z * z, z), has_aux=True)(z)
    # A real output of a complex input still has a gradient (jax's convention).
    got = hd.grad(lambda z: ops.Real()(z * z))(z)
    want = jax.grad(lambda z: jnp.real(z * z))(jnp.complex64(1 + 2j))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    # vjp takes the complex output.
    _, pullback = hd.vjp(lambda z: z * z, z)
    np.testing.assert_allclose(np.asarray(pullback(hd.array(np.complex64(1)))[0]),
                               np.asarray(jax.vjp(lambda z: z * z, jnp.complex64(1 + 2j))[1](
                                   jnp.complex64(1))[0]), rtol=1e-6)


# -- astype: dtype required; complex to real refused, as ops.Convert ---------------------


def test_astype_needs_a_dtype():
    x = hd.array(np.float32([1, 2]))
    with pytest.raises(TypeError, match="astype: dtype is required .*got None"):
        xp.astype(x, None)
    for fn in (xp.finfo, xp.iinfo):
        with pytest.raises(TypeError, match="type is required"):
            fn(None)
    # The op refuses it too (numpy reads None as float64).
    for op in (ops.Convert, ops.BitcastConvert):
        with pytest.raises(TypeError, match=r"new_dtype=None .*element type"):
            op(None)


@pytest.mark.parametrize("dst", [hd.float32, hd.float64, hd.int32, hd.uint8, hd.pred])
def test_complex_to_real_is_refused_by_astype_and_convert_alike(dst):
    z = hd.array(np.complex64([1 + 2j]))
    with pytest.raises(TypeError, match="real"):
        xp.astype(z, dst)
    for run in (ops.Convert(dst), hd.compile(lambda v: ops.Convert(dst)(v))):
        with pytest.raises(hd.ShapeError, match=r"imaginary part.*ops\.Real") as info:
            run(z)
        assert "Convert(" in str(info.value) and "c64[1]" in str(info.value)
    np.testing.assert_array_equal(np.asarray(xp.astype(xp.real(z), dst)),
                                  np.real(np.complex64([1 + 2j])).astype(dst.np_dtype))


# -- bfloat16 in functions that ask numpy for float limits ------------------------------


@pytest.mark.parametrize("fn, np_fn", [(xp.acosh, np.arccosh), (xp.asinh, np.arcsinh)])
def test_bfloat16_acosh_and_asinh(fn, np_fn):
    x = np.float32([1.0, 1.5, 3.0, 1e30]).astype(ml_dtypes.bfloat16)
    got = np.asarray(fn(hd.array(x))).astype(np.float32)
    np.testing.assert_allclose(got, np_fn(x.astype(np.float64)), rtol=2e-2)


def test_finfo_of_bfloat16_is_ml_dtypes():
    info = xp.finfo(hd.bfloat16)
    assert info.eps == float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps)
    assert info.max == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)


# -- out-of-range axes: AxisError, both IndexError and ValueError (numpy's) --------------

OUT_OF_RANGE = {
    "expand_dims": lambda x: xp.expand_dims(x, axis=5),
    "expand_dims negative": lambda x: xp.expand_dims(x, axis=-4),
    "squeeze": lambda x: xp.squeeze(x, axis=2),
    "stack": lambda x: xp.stack([x, x], axis=3),
    "concat": lambda x: xp.concat([x, x], axis=2),
    "flip": lambda x: xp.flip(x, axis=2),
    "roll": lambda x: xp.roll(x, 1, axis=-3),
    "moveaxis": lambda x: xp.moveaxis(x, 2, 0),
    "permute_dims": lambda x: xp.permute_dims(x, (0, 2)),
    "unstack": lambda x: xp.unstack(x, axis=2),
    "repeat": lambda x: xp.repeat(x, 2, axis=2),
    "sum": lambda x: xp.sum(x, axis=2),
    "max": lambda x: xp.max(x, axis=-3),
}


@pytest.mark.parametrize("call", OUT_OF_RANGE.values(), ids=OUT_OF_RANGE.keys())
def test_out_of_range_axes_raise_index_error_and_value_error(call):
    x = hd.array(np.ones((2, 3), np.float32))
    with pytest.raises(IndexError) as info:
        call(x)
    assert isinstance(info.value, ValueError)  # numpy's AxisError is both
    assert isinstance(info.value, np.exceptions.AxisError)
    assert "out of range" in str(info.value)


def test_expand_dims_out_of_range_matches_numpy():
    with pytest.raises(np.exceptions.AxisError):
        np.expand_dims(np.ones(2), axis=5)
    with pytest.raises(IndexError, match=r"expand_dims: axis 5 is out of range for rank 2"):
        xp.expand_dims(hd.array(np.ones(2, np.float32)), axis=5)
    assert xp.expand_dims(hd.array(np.ones(2, np.float32)), axis=-2).shape == (1, 2)


# -- shapes XLA cannot count -------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2 ** 40, 2 ** 40), (2 ** 33, 2 ** 33), (2 ** 62, 2),
                                   (0, 2 ** 63), (2 ** 64,)])
def test_shapes_beyond_int64_are_refused_at_the_type(shape):
    with pytest.raises(ValueError, match=r"shape \(.*2\*\*63 - 1"):
        ArrayType(hd.float32, shape)
    assert ArrayType(hd.int8, (2 ** 31, 2 ** 31)).size == 2 ** 62  # within int64


_INT64_MAX = 2 ** 63 - 1


@pytest.mark.parametrize("dtype", [hd.bool_, hd.int8, hd.bfloat16, hd.float32, hd.float64,
                                   hd.complex128, hd.int4, hd.float4_e2m1fn])
def test_shapes_whose_bytes_overflow_int64_are_refused_with_the_byte_count(dtype):
    itemsize = dtype.np_dtype.itemsize
    largest = _INT64_MAX // itemsize
    assert ArrayType(dtype, (largest,)).size == largest
    # One element more (two rows where 2**63 elements would be a dimension beyond int64).
    over = (largest + 1,) if itemsize > 1 else (2, 2 ** 62)
    with pytest.raises(hd.ArraySizeError) as info:
        ArrayType(dtype, over)
    assert isinstance(info.value, ValueError)  # numpy's "array is too big" is one
    message = str(info.value)
    assert f"shape {over} of {dtype.__name__}" in message
    assert f"is {math.prod(over) * itemsize} bytes" in message and "2**63 - 1" in message


@pytest.mark.parametrize("dtype", [hd.float32, hd.complex128])
def test_the_largest_accepted_shape_is_one_xla_compiles(dtype):
    # The limit is XLA's own ("size may overflow int64_t" one element further): compiling
    # (not running) the largest array allowed must pass XLA's shape check.
    n = _INT64_MAX // dtype.np_dtype.itemsize
    if not ON_CPU:  # XLA:GPU's kernel grids cannot cover it: our clear error, not a bug report
        with pytest.raises(hd.XlaCompileError, match=rf"XLA:GPU cannot launch a kernel over "
                                                     rf"{dtype.hlo}\[{n}\]") as info:
            hd.code_hlo(lambda: xp.zeros((n,), dtype=dtype), optimize=True)
        assert "bug in hlodsl" not in str(info.value)
        return
    text = hd.code_hlo(lambda: xp.zeros((n,), dtype=dtype), optimize=True)
    assert f"{dtype.hlo}[{n}]" in text


def test_a_kernel_grid_beyond_the_device_is_explained_as_the_array_it_covers():
    # XLA:GPU's words (H200, jaxlib 0.11.2) for the zeros above, as compile_hlo wraps them.
    from hlodsl.runtime.executables import explain

    n = _INT64_MAX // 4
    message = explain(
        f"HloModule m\n\nENTRY m {{\n  c = f32[] constant(0)\n  ROOT b = f32[{n}] "
        "broadcast(c), dimensions={}\n}\n",
        "INTERNAL: RET_CHECK failure (external/xla+/xla/backends/gpu/codegen/"
        "fusion_emitter.cc:121) (limit.x == 0 || block_count.x <= limit.x) && (limit.y == 0 || "
        "block_count.y <= limit.y) Kernel 'loop_broadcast_fusion' launch needs more blocks "
        "(2147483393, 8388609) than allowed by hardware (2147483647, 65535).")
    assert message.startswith(f"XLA:GPU cannot launch a kernel over f32[{n}]: its kernel "
                              "'loop_broadcast_fusion' needs a grid of 2147483393 x 8388609")
    assert "2147483647 x 65535" in message and "bug in hlodsl" not in message


def test_ones_of_a_shape_whose_bytes_overflow_is_refused_at_the_call():
    # 2**62 elements fit in int64; their 2**65 bytes do not, which XLA refused as a bug of ours.
    with pytest.raises(hd.ArraySizeError) as info:
        xp.ones((2 ** 31, 2 ** 31))
    message = str(info.value)
    assert message.startswith("Broadcast(shape=(2147483648, 2147483648))")
    assert "float64" in message and f"is {2 ** 65} bytes" in message
    assert __file__ in message and "bug in hlodsl" not in message


def test_large_shapes_within_int64_bytes_are_staged_without_complaint():
    text = hd.code_hlo(lambda: xp.zeros((2 ** 60,), dtype=hd.float32))  # 4 EiB: never run
    assert "f32[1152921504606846976]" in text


def test_ops_and_creation_functions_refuse_overflowing_shapes_before_xla():
    one = hd.array(np.float32(1))
    for call in (lambda: ops.Broadcast((2 ** 40, 2 ** 40))(one),
                 lambda: hd.compile(lambda v: ops.Broadcast((2 ** 40, 2 ** 40))(v))(one),
                 lambda: xp.zeros((2 ** 33, 2 ** 33)),
                 lambda: ops.Iota(hd.int32, (2 ** 32, 2 ** 32), 0)()):
        with pytest.raises(ValueError, match=r"XLA counts elements") as info:
            call()
        assert not isinstance(info.value, hd.XlaCompileError)
        assert "bug in hlodsl" not in str(info.value)


def test_copysign_of_complex_numbers_is_refused_by_name():
    # It reached BitcastConvert, which cannot reinterpret complex numbers.
    z = hd.array(np.complex64([1 + 1j]))
    with pytest.raises(TypeError):
        np.copysign(np.complex64([1]), np.complex64([1]))
    with pytest.raises(TypeError, match=r"copysign: operands must be real, got c64\[1\]"):
        xp.copysign(z, z)
