"""Linear algebra and signal processing ops against jax.lax / numpy oracles.

convolution: lax.conv_general_dilated over strides, padding (negative too),
dilations, layouts and feature/batch groups, and XLA's own HLO spelling of the
same convolution; triangular-solve: lax.linalg.triangular_solve and numpy
solves of the read triangle; cholesky: np.linalg.cholesky of SPD/HPD matrices;
fft: np.fft and jnp.fft over 1 to 3 transformed dimensions. Every op runs
eagerly and staged, and its shape rule must give the type it produces.

Tolerances (relative to the largest expected magnitude): f32/c64 1e-4,
f64/c128 1e-10; integer convolutions are exact.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax

import hlodsl as hd
from ad_harness import random_array as _random
from hlodsl.ops import Cholesky, Convolution, Fft, TriangularSolve
from platform_rules import cpu_oracle

COVERED_OPCODES = {"convolution", "triangular-solve", "cholesky", "fft"}

TOL = {np.float32: 1e-4, np.complex64: 1e-4, np.float64: 1e-10, np.complex128: 1e-10}


def _both(op, *arrays):
    """``op`` run eagerly and staged on ``arrays``; both must have its inferred type."""
    args = [hd.array(a) for a in arrays]
    rtype = op.result_type(*(a.type for a in args))
    eager = op(*args)
    staged = hd.compile(lambda *xs: op(*xs))(*args)
    for out in (eager, staged):
        assert out.type == rtype
        assert np.asarray(out).dtype == rtype.dtype.np_dtype
        assert np.asarray(out).shape == rtype.shape
    return np.asarray(eager), np.asarray(staged)


def _close(got, expected, dtype):
    """Within ``TOL[dtype]`` of the largest expected magnitude; exact for integers."""
    expected = np.asarray(expected)
    if np.issubdtype(np.dtype(dtype), np.integer):
        np.testing.assert_array_equal(got, expected)
        return
    tol = TOL[np.dtype(dtype).type]
    scale = max(1.0, float(np.max(np.abs(expected), initial=0)))
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale)


def _shape_error(op, *arrays, match=None):
    """A ShapeError naming the op and the operand types, eagerly and staged."""
    args = [hd.array(a) for a in arrays]
    types = ", ".join(str(a.type) for a in args)
    for run in (lambda: op(*args), lambda: hd.compile(lambda *xs: op(*xs))(*args)):
        with pytest.raises(hd.ShapeError) as info:
            run()
        text = str(info.value)
        assert repr(op) in text and f"({types})" in text, text
        if match:
            assert re.search(match, text), text


# -- convolution ---------------------------------------------------------------

@st.composite
def convolutions(draw):
    n = draw(st.integers(0, 2))
    dtype, pref = draw(st.sampled_from([(np.float32, None), (np.float64, None),
                                        (np.float32, np.float64), (np.int32, None),
                                        (np.int8, np.int32), (np.complex64, None)]))
    groups = draw(st.sampled_from(["none", "feature", "batch"]))
    G = draw(st.integers(2, 3)) if groups == "feature" else 1
    B = draw(st.integers(2, 3)) if groups == "batch" else 1
    batch, in_f, out_f = B * draw(st.integers(1, 2)), draw(st.integers(1, 2)), \
        G * B * draw(st.integers(1, 2))

    def ints(lo, hi):
        return st.lists(st.integers(lo, hi), min_size=n, max_size=n).map(tuple)
    spatial, kernel = draw(ints(1, 5)), draw(ints(1, 3))
    strides, lhs_dil, rhs_dil = draw(ints(1, 3)), draw(ints(1, 2)), draw(ints(1, 2))
    padding = tuple(zip(draw(ints(-1, 2)), draw(ints(-1, 2))))
    # A padded size below 0 is a ShapeError, as in lax (tested below).
    padding = tuple((lo, max(hi, -lo - (s - 1) * d - 1))
                    for (lo, hi), s, d in zip(padding, spatial, lhs_dil))
    lhs_spec, rhs_spec, out_spec = (draw(st.permutations(range(n + 2)).map(tuple))
                                    for _ in range(3))
    lhs_shape = [0] * (n + 2)
    for d, size in zip(lhs_spec, (batch, G * in_f) + spatial):
        lhs_shape[d] = size
    rhs_shape = [0] * (n + 2)
    for d, size in zip(rhs_spec, (out_f, in_f) + kernel):
        rhs_shape[d] = size
    op = Convolution(strides, padding, lhs_dil, rhs_dil, lhs_spec, rhs_spec, out_spec,
                     feature_group_count=G, batch_group_count=B, preferred_element_type=pref)
    return op, tuple(lhs_shape), tuple(rhs_shape), dtype


def _lax_conv(op, x, w):
    ls, rs, os, strides, pads, ldil, rdil = op._resolved(np.ndim(x))  # the defaults filled in
    return lax.conv_general_dilated(
        x, w, strides, pads, ldil, rdil, lax.ConvDimensionNumbers(ls, rs, os),
        op.feature_group_count, op.batch_group_count,
        preferred_element_type=op.preferred_element_type and op.preferred_element_type.np_dtype)


def _xla_attributes(f, *args, precision: str = "default") -> str:
    """The attributes XLA prints after the operand list of the module's convolution, as
    jax lowers it under its default matmul precision ``precision``."""
    with jax.default_matmul_precision(precision):
        text = jax.jit(f).lower(*args).as_text(dialect="hlo")
    line = next(ln for ln in text.splitlines() if " convolution(" in ln)
    return re.sub(r", metadata=\{.*\}", "", line.split("), ", 1)[1]).strip()


@settings(max_examples=40, deadline=None)
@given(convolutions(), st.integers(0, 2**16))
def test_convolution_matches_lax(case, seed):
    op, lhs_shape, rhs_shape, dtype = case
    rng = np.random.default_rng(seed)
    x, w = _random(rng, lhs_shape, dtype), _random(rng, rhs_shape, dtype)
    eager, staged = _both(op, x, w)
    expected = np.asarray(cpu_oracle(_lax_conv)(op, x, w))
    assert expected.dtype == eager.dtype and expected.shape == eager.shape
    _close(eager, expected, expected.dtype)
    _close(staged, expected, expected.dtype)
    _close(op.reference(x, w), expected, expected.dtype)
    if expected.size == 0:
        return  # jax emits no convolution for an empty result
    # The HLO text is XLA's spelling of the same convolution, at the configured precision
    # (a GPU run configures "highest": tests/conftest.py), as jax spells it at the same.
    types = (hd.array(x).type, hd.array(w).type)
    ours = ", ".join(op.attributes(types, op.result_type(*types), None))
    assert ours == _xla_attributes(lambda a, b: _lax_conv(op, a, b), x, w,
                                   precision=hd.config.default_matmul_precision)


@pytest.mark.parametrize("precision", ["default", "highest"])
def test_convolution_text_at_each_configured_precision_is_jaxs(monkeypatch, precision):
    # The hypothesis test above compares at the suite's configuration; this one at both.
    monkeypatch.setattr(hd.config, "default_matmul_precision", precision)
    op = Convolution(window_strides=(2,), padding=((1, 0),), feature_group_count=2)
    x, w = np.ones((1, 4, 5), np.float32), np.ones((2, 2, 3), np.float32)
    types = (hd.array(x).type, hd.array(w).type)
    ours = ", ".join(op.attributes(types, op.result_type(*types), None))
    assert ours == _xla_attributes(lambda a, b: _lax_conv(op, a, b), x, w, precision=precision)
    assert ("operand_precision={highest,highest}" in ours) == (precision == "highest")


def test_convolution_labels_defaults_and_text():
    op = Convolution(lhs_spec="b01f", rhs_spec="01io", out_spec="b01f")
    assert op == Convolution(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1),
                             out_spec=(0, 3, 1, 2))
    x, w = np.ones((1, 4, 4, 2), np.float32), np.ones((3, 3, 2, 5), np.float32)
    text = hd.code_hlo(lambda a, b: op(a, b), hd.array(x), hd.array(w))
    assert "convolution(a, b), window={size=3x3}, dim_labels=b01f_01io->b01f" in text
    eager, staged = _both(op, x, w)
    np.testing.assert_array_equal(eager, np.full((1, 2, 2, 5), 18, np.float32))
    # Defaults: (batch, feature, spatial...) layouts, unit strides, no padding.
    x, w = np.arange(10, dtype=np.float64).reshape(1, 2, 5), np.ones((1, 2, 2))
    _close(_both(Convolution(), x, w)[0], _lax_conv(Convolution(
        (1,), ((0, 0),), (1,), (1,), (0, 1, 2), (0, 1, 2), (0, 1, 2)), x, w), np.float64)


@pytest.mark.parametrize("op, lhs_shape", [
    (Convolution(padding=((-2, -1),), window_strides=(2,)), (2, 3, 2)),
    (Convolution(padding=((-5, -5), (-5, -5))), (1, 3, 8, 8)),
    # Base dilation first, then the crop: 3 elements dilate to 5, cropped by 6.
    (Convolution(padding=((-3, -3),), lhs_dilation=(2,)), (2, 3, 3)),
    (Convolution(padding=((0, 0), (-1, 0))), (2, 3, 4, 0)),  # nothing to crop
])
def test_convolution_padding_that_crops_past_the_input_is_a_shape_error(op, lhs_shape):
    # The padded input would have a negative size: lax refuses it too (XLA's own
    # shape inference returns an empty result, StableHLO's asserts against it).
    x = np.ones(lhs_shape, np.float32)
    w = np.ones((4, 3) + (1,) * (len(lhs_shape) - 2), np.float32)
    with pytest.raises(ValueError, match="Negative padding"):
        _lax_conv(op, x, w)
    _shape_error(op, x, w, match=r"crops spatial dimension \d \(lhs dimension \d\), of size "
                                 r"\d+.* to a negative size -\d+")


@pytest.mark.parametrize("op, lhs_shape, rhs_shape", [
    (Convolution(), (1, 1, 8, 8), (2, 1, 9, 9)),                  # the kernel is larger
    (Convolution(padding=((-4, -4), (0, 0))), (1, 1, 8, 8), (2, 1, 3, 3)),  # cropped to 0
    (Convolution(padding=((-2, -1),), window_strides=(2,)), (2, 3, 3), (4, 3, 1)),
    (Convolution(rhs_dilation=(4,)), (2, 3, 4), (4, 3, 2)),        # dilated kernel is 5
    (Convolution(), (2, 3, 0), (4, 3, 2)),                         # an empty input
])
def test_convolution_with_no_window_that_fits_gives_an_empty_result(op, lhs_shape, rhs_shape):
    # StableHLO defines these (convolution C25: is_empty_window gives 0 windows);
    # lax and XLA agree. Only a negative padded size is refused (above).
    x, w = np.ones(lhs_shape, np.float32), np.ones(rhs_shape, np.float32)
    expected = np.asarray(_lax_conv(op, x, w))
    assert expected.size == 0
    for got in _both(op, x, w) + (op.reference(x, w),):
        assert got.shape == expected.shape and got.dtype == expected.dtype


@pytest.mark.parametrize("kwargs", [
    dict(lhs_spec=(0, 0, 1)), dict(lhs_spec="bx0"), dict(rhs_spec="bf0"),
    dict(lhs_spec=(0,)), dict(window_strides=(0,)), dict(lhs_dilation=(1, 0)),
    dict(rhs_dilation=(-1,)), dict(window_strides=(1, 1), padding=((0, 0),)),
    dict(lhs_spec="bf01", window_strides=(1,)), dict(feature_group_count=0),
    dict(batch_group_count=0), dict(feature_group_count=2, batch_group_count=2),
    dict(preferred_element_type=np.bool_),
])
def test_convolution_bad_static_operands(kwargs):
    with pytest.raises(ValueError, match="Convolution"):
        Convolution(**kwargs)


def test_convolution_shape_errors():
    f32 = np.float32
    x, w = np.ones((2, 4, 5), f32), np.ones((3, 4, 2), f32)
    _shape_error(Convolution(), x, w.astype(np.float64), match="same numeric element type")
    _shape_error(Convolution(), x, np.ones((3, 4), f32), match="equal rank")
    _shape_error(Convolution(), x, np.ones((3, 3, 2), f32), match="lhs features")
    _shape_error(Convolution(feature_group_count=2), x, np.ones((3, 2, 2), f32),
                 match="divisible by feature_group_count")
    _shape_error(Convolution(feature_group_count=3), x, np.ones((3, 1, 2), f32),
                 match="lhs features")
    _shape_error(Convolution(batch_group_count=2), x, np.ones((3, 4, 2), f32),
                 match="batch_group_count")
    _shape_error(Convolution(batch_group_count=3), x, np.ones((3, 4, 2), f32),
                 match="batch_group_count")
    _shape_error(Convolution(), x, np.ones((3, 4, 0), f32), match="kernel spatial")
    _shape_error(Convolution(window_strides=(1, 1)), x, w, match="spatial dimensions")
    _shape_error(Convolution(lhs_spec="bf01"), x, w, match="spatial dimensions")
    ints = np.ones((2, 4, 5), np.int32), np.ones((3, 4, 2), np.int32)
    _shape_error(Convolution(preferred_element_type=np.int8), *ints, match="narrower")
    _shape_error(Convolution(preferred_element_type=np.complex64), x, w, match="accumulate")
    b = np.ones((2, 4, 5), np.bool_)
    _shape_error(Convolution(), b, b[:1, :, :2], match="numeric")


# -- triangular-solve ----------------------------------------------------------

TRANSPOSES = ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"]
INEXACT = [np.float32, np.float64, np.complex64, np.complex128]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=2).map(tuple), st.integers(1, 4),
       st.integers(1, 4), st.booleans(), st.booleans(), st.booleans(),
       st.sampled_from(TRANSPOSES), st.sampled_from(INEXACT), st.integers(0, 2**16))
def test_triangular_solve_matches_lax_and_numpy(batch, m, n, left, lower, unit, trans, dtype,
                                                seed):
    rng = np.random.default_rng(seed)
    # Off-diagonal entries small and the diagonal far from 0: well conditioned.
    a = (_random(rng, batch + (m, m), dtype) * (0.5 / m)).astype(dtype)
    a = a + np.eye(m, dtype=dtype) * (2 + rng.uniform(0, 1, batch + (m, 1))).astype(dtype)
    # The unread triangle (and, with unit_diagonal, the diagonal) holds garbage.
    read = np.tril(np.ones((m, m), bool), -1 if unit else 0)
    read = read if lower else read.T
    a_in = np.where(read, a, (100 + 7 * rng.standard_normal(a.shape)).astype(dtype))
    b = _random(rng, batch + ((m, n) if left else (n, m)), dtype)
    op = TriangularSolve(left_side=left, lower=lower, unit_diagonal=unit, transpose_a=trans)
    eager, staged = _both(op, a_in, b)
    expected = np.asarray(jax.lax.linalg.triangular_solve(
        a_in, b, left_side=left, lower=lower, transpose_a=trans != "NO_TRANSPOSE",
        conjugate_a=trans == "ADJOINT", unit_diagonal=unit))
    for got in (eager, staged, op.reference(a_in, b)):
        _close(got, expected, dtype)
    # numpy on the triangle alone: op(t) @ x = b (or x @ op(t) = b) holds.
    t = np.where(read, a_in, 0) + (np.eye(m, dtype=dtype) if unit else 0)
    t = {"NO_TRANSPOSE": t, "TRANSPOSE": np.swapaxes(t, -1, -2),
         "ADJOINT": np.conj(np.swapaxes(t, -1, -2))}[trans]
    residual = t @ eager if left else eager @ t
    _close(residual, b, dtype)


@pytest.mark.parametrize("kwargs, error", [
    (dict(left_side=True, lower=True, transpose_a="CONJUGATE"), ValueError),
    (dict(left_side=1, lower=True), TypeError), (dict(left_side=True, lower="yes"), TypeError),
    (dict(left_side=True, lower=True, unit_diagonal=None), TypeError),
])
def test_triangular_solve_bad_static_operands(kwargs, error):
    with pytest.raises(error, match="TriangularSolve"):
        TriangularSolve(**kwargs)


def test_triangular_solve_shape_errors_and_text():
    op = TriangularSolve(left_side=True, lower=True)
    a, b = np.eye(3, dtype=np.float32), np.ones((3, 2), np.float32)
    assert op.transpose_a == "NO_TRANSPOSE" and TriangularSolve(
        left_side=False, lower=False, transpose_a="adjoint").transpose_a == "ADJOINT"
    text = hd.code_hlo(lambda x, y: op(x, y), hd.array(a), hd.array(b))
    assert ("triangular-solve(x, y), left_side=true, lower=true, unit_diagonal=false, "
            "transpose_a=NO_TRANSPOSE") in text
    _shape_error(op, a, b.astype(np.float64), match="same floating-point")
    _shape_error(op, a.astype(np.int32), b.astype(np.int32), match="floating-point")
    _shape_error(op, a[0], b[0], match="rank >= 2")
    _shape_error(op, a, b[None], match="equal rank")
    _shape_error(op, a[:, :2], b, match="minor dimensions")
    _shape_error(op, a, np.ones((2, 3), np.float32), match="must equal a's size 3")
    _shape_error(TriangularSolve(left_side=False, lower=True), a, b, match="right side")
    _shape_error(op, np.ones((2, 3, 3), np.float32), np.ones((4, 3, 2), np.float32),
                 match="batch dimensions")


# -- cholesky ------------------------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=2).map(tuple), st.integers(1, 5),
       st.booleans(), st.sampled_from(INEXACT), st.integers(0, 2**16))
def test_cholesky_matches_numpy(batch, n, lower, dtype, seed):
    rng = np.random.default_rng(seed)
    m = _random(rng, batch + (n, n), dtype)
    spd = m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n, dtype=dtype)
    tri = np.tril if lower else np.triu
    unread = ~(np.tril if lower else np.triu)(np.ones((n, n), bool))
    a_in = np.where(unread, np.asarray(99, dtype), spd)  # only one triangle is read
    op = Cholesky(lower=lower)
    eager, staged = _both(op, a_in)
    low = np.linalg.cholesky(spd.astype(np.result_type(dtype, np.float64)))
    expected = low if lower else np.conj(np.swapaxes(low, -1, -2))
    for got in (eager, staged, op.reference(a_in)):
        _close(tri(got), expected, dtype)  # the other triangle is implementation-defined


def test_cholesky_matches_lax():
    rng = np.random.default_rng(7)
    m = _random(rng, (2, 4, 4), np.complex64)
    hpd = m @ np.conj(np.swapaxes(m, -1, -2)) + 4 * np.eye(4, dtype=np.complex64)
    expected = np.asarray(jax.lax.linalg.cholesky(hpd, symmetrize_input=False))
    for got in _both(Cholesky(), hpd):
        _close(np.tril(got), expected, np.complex64)


def test_cholesky_of_non_positive_definite_matrices_is_nan():
    """XLA CPU's documented behaviour (see the docstring): NaN factors, no error."""
    a = np.stack([np.eye(3) * 4, np.diag([1.0, -1, 1]), np.diag([1.0, 1, -1])])
    for dtype, lower in [(np.float32, True), (np.complex128, False)]:
        for got in _both(Cholesky(lower=lower), a.astype(dtype)):
            np.testing.assert_array_equal(got[0], np.eye(3) * 2)
            assert np.isnan(got[1:]).all()


def test_cholesky_bad_operands_and_text():
    with pytest.raises(TypeError, match="Cholesky: static operand lower='yes'.*True or False"):
        Cholesky(lower="yes")
    a = np.eye(3, dtype=np.float64)
    assert "cholesky(x), lower=false" in hd.code_hlo(lambda x: Cholesky(lower=False)(x),
                                                     hd.array(a))
    _shape_error(Cholesky(), a[0], match="rank >= 2")
    _shape_error(Cholesky(), a[:2], match="minor dimensions")
    _shape_error(Cholesky(), a.astype(np.int32), match="floating-point or complex")


# -- fft -----------------------------------------------------------------------

_NUMPY_FFT = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn,
              "IRFFT": np.fft.irfftn}
_JAX_FFT = {"FFT": jnp.fft.fftn, "IFFT": jnp.fft.ifftn, "RFFT": jnp.fft.rfftn,
            "IRFFT": jnp.fft.irfftn}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["FFT", "IFFT", "RFFT", "IRFFT"]),
       st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple),
       st.lists(st.integers(1, 3), max_size=2).map(tuple), st.booleans(),
       st.integers(0, 2**16))
def test_fft_matches_numpy_and_jnp(kind, length, batch, double, seed):
    rng = np.random.default_rng(seed)
    real = np.float64 if double else np.float32
    cplx = np.complex128 if double else np.complex64
    if kind == "RFFT":
        x = _random(rng, batch + length, real)
    elif kind == "IRFFT":
        x = _random(rng, batch + length[:-1] + (length[-1] // 2 + 1,), cplx)
    else:
        x = _random(rng, batch + length, cplx)
    op = Fft(kind, length)
    eager, staged = _both(op, x)
    axes = tuple(range(len(batch), len(batch) + len(length)))
    expected = _NUMPY_FFT[kind](x, s=length, axes=axes)
    assert eager.dtype == (real if kind == "IRFFT" else cplx)
    assert eager.shape == expected.shape
    for got in (eager, staged, op.reference(x)):
        _close(got, expected, eager.dtype.type)
    # jax on its CPU device: XLA:GPU's IRFFT with a trailing length of 1 is wrong (below)
    want = cpu_oracle(lambda: np.asarray(_JAX_FFT[kind](x, s=length, axes=axes)))()
    _close(eager, want, eager.dtype.type)


@pytest.mark.parametrize("length", [(1,), (3, 1), (2, 2, 1)])
def test_an_irfft_of_trailing_length_1_is_the_real_part_of_an_ifft(length):
    # XLA:GPU (cuFFT) squeezed the length-1 axis and ran a C2R of length 3 over the axis
    # before it: [-0.046, 0.395, -0.223] for numpy's [0.211, 0.216, -0.302] at (3, 1).
    rng = np.random.default_rng(7)
    x = _random(rng, (2,) + length, np.complex128)
    op = Fft("IRFFT", length)
    text = str(hd.code_hlo(lambda v: op(v), hd.array(x)))
    assert f"fft_type=IFFT, fft_length={{{','.join(map(str, length))}}}" in text
    assert " real(" in text and "IRFFT" not in text
    eager, staged = _both(op, x)
    want = np.fft.irfftn(x, s=length, axes=tuple(range(1, 1 + len(length))))
    for got in (eager, staged):
        _close(got, want, np.float64)
    g = hd.grad(lambda v: hd.stdlib.sum(op(v) * hd.array(want)))(hd.array(x))  # one Fft's rule
    axes = tuple(range(1, 1 + len(length)))
    jax_grad = jax.grad(lambda v: jnp.sum(jnp.fft.irfftn(v, s=length, axes=axes) * want))
    _close(np.asarray(g), np.asarray(cpu_oracle(jax_grad)(x)), np.complex128)


def test_fft_text_matches_xla():
    x = np.zeros((3, 4, 8), np.float32)
    ours = hd.code_hlo(lambda v: Fft("rfft", (4, 8))(v), hd.array(x))
    assert "c64[3,4,5] fft(v), fft_type=RFFT, fft_length={4,8}" in ours
    xla = jax.jit(lambda v: jnp.fft.rfftn(v, axes=(1, 2))).lower(x).as_text(dialect="hlo")
    assert "c64[3,4,5]{2,1,0} fft(Arg_0.1), fft_type=RFFT, fft_length={4,8}" in xla


@pytest.mark.parametrize("args", [("DCT", (4,)), ("FFT", ()), ("FFT", (2, 2, 2, 2)),
                                  ("IRFFT", (-1,))])
def test_fft_bad_static_operands(args):
    with pytest.raises(ValueError, match="Fft"):
        Fft(*args)


def test_fft_shape_errors():
    c, r = np.zeros((2, 8), np.complex64), np.zeros((2, 8), np.float32)
    _shape_error(Fft("FFT", (8,)), r, match="FFT takes c64 or c128")
    _shape_error(Fft("IFFT", (4,)), c, match="trailing dimensions must be")
    _shape_error(Fft("RFFT", (8,)), c, match="RFFT takes f32 or f64")
    _shape_error(Fft("RFFT", (8,)), r.astype(np.float16), match="RFFT takes f32 or f64")
    _shape_error(Fft("RFFT", (2, 4)), r, match=r"trailing dimensions must be \(2, 4\)")
    _shape_error(Fft("IRFFT", (8,)), c, match=r"must be \(5,\)")
    _shape_error(Fft("IRFFT", (8,)), r, match="IRFFT takes c64 or c128")
    _shape_error(Fft("FFT", (2, 2, 8)), c, match="rank >= 3")
    # IRFFT's even and odd lengths share an input shape; fft_length tells them apart.
    x = hd.array(np.ones((2, 5), np.complex64))
    assert Fft("IRFFT", (8,))(x).shape == (2, 8) and Fft("IRFFT", (9,))(x).shape == (2, 9)
