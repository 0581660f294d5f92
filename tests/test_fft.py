"""The array API fft extension (``xp.fft``) against numpy.fft, eagerly and staged.

Every transform runs on concrete arrays and under ``hd.compile`` (compiled
once at module level; ``n``, ``s``, ``axis``, ``axes`` and ``norm`` are
static) on hypothesis-drawn shapes, axes (any order, 1 to 5 of them, so that
more than 3 axes compose several ``ops.Fft``), lengths that pad or truncate,
norms and the four inexact element types. numpy computes the expected values
in 64 bits from the same input; the tolerance is a multiple of the result
type's epsilon, ``log2`` of the transform size and the result's largest
magnitude (an FFT's error bound is relative to the norm of its result).
Derivatives are checked against ``jax.grad`` (a test oracle only) in f32 and
f64, and against central differences in f64.
"""

from __future__ import annotations

import inspect
import math

import hlodsl.stdlib as xp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.exceptions import AxisError

import hlodsl as hd
from ad_harness import random_array as _random

# Every drawn shape and static argument is a new signature to compile, by design here.
pytestmark = pytest.mark.filterwarnings("ignore::hlodsl.RecompileWarning")
SETTINGS = settings(max_examples=25, deadline=None)
NORMS = ("backward", "ortho", "forward")
COMPLEX = {np.float32: np.complex64, np.float64: np.complex128,
           np.complex64: np.complex64, np.complex128: np.complex128}
REAL = {np.complex64: np.float32, np.complex128: np.float64,
        np.float32: np.float32, np.float64: np.float64}
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_D = ("fftn", "ifftn", "rfftn", "irfftn")
STAGED = {name: hd.compile(getattr(xp.fft, name)) for name in ONE_D + N_D + (
    "fftshift", "ifftshift")}


def _wide(x):
    """``x`` in 64 bits, for numpy's expected values."""
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def close(got, want, dtype, size):
    """``got`` has ``dtype`` and ``want``'s shape, within the FFT error bound of ``size``."""
    got = np.asarray(got)
    assert got.dtype == dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    eps = np.finfo(dtype).eps
    scale = np.abs(want).max(initial=0.0)
    atol = 16 * eps * (math.log2(max(size, 2)) + 1) * scale
    np.testing.assert_allclose(got, want.astype(dtype), rtol=0, atol=atol)


def both(name, x, **kwargs):
    """``[eager, staged]`` results of ``xp.fft.<name>(x, **kwargs)``."""
    a = hd.array(x)
    return [getattr(xp.fft, name)(a, **kwargs), STAGED[name](a, **kwargs)]


# -- drawn cases ---------------------------------------------------------------------------

@st.composite
def nd_cases(draw, max_rank=5, max_axes=5):
    """``(shape, s, axes)``: axes in any order (negative or not), s padding or truncating."""
    rank = draw(st.integers(1, max_rank))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    k = draw(st.integers(1, min(rank, max_axes)))
    axes = draw(st.permutations(range(rank)))[:k]
    axes = tuple(a - rank if draw(st.booleans()) else a for a in axes)
    form = draw(st.sampled_from(["axes", "s and axes", "neither"]))
    if form == "neither":
        return shape, None, None
    s = None if form == "axes" else tuple(
        draw(st.sampled_from([-1, 1, 2, 3, 5, 6])) for _ in axes)
    return shape, s, axes


@st.composite
def one_d_cases(draw):
    """``(shape, n, axis)``: n padding, truncating or absent."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(2, 6), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    n = draw(st.one_of(st.none(), st.integers(1, 9)))
    return shape, n, axis


def _lengths(name, shape, s, axes):
    """The transform lengths numpy uses (for the tolerance)."""
    axes = range(len(shape)) if axes is None else axes
    s = s or (-1,) * len(axes)
    out = [shape[a] if n == -1 else n for a, n in zip(axes, s)]
    if name == "irfftn" and s[-1] == -1:
        out[-1] = 2 * (shape[axes[-1]] - 1)
    return out


def _np_nd(name, x, s, axes, norm):
    if s is not None and -1 in s:  # the standard's "whole axis", spelled out for numpy
        s = tuple(_lengths(name, x.shape, s, axes))
    return getattr(np.fft, name)(_wide(x), s=s, axes=axes, norm=norm)


@SETTINGS
@given(st.sampled_from(("fftn", "ifftn")), nd_cases(), st.sampled_from(NORMS),
       st.sampled_from((np.float32, np.float64, np.complex64, np.complex128)),
       st.integers(0, 2**16))
def test_complex_transforms_match_numpy(name, case, norm, dtype, seed):
    shape, s, axes = case
    x = _random(np.random.default_rng(seed), shape, dtype)
    want = _np_nd(name, x, s, axes, norm)
    for got in both(name, x, s=s, axes=axes, norm=norm):
        close(got, want, COMPLEX[dtype], math.prod(_lengths(name, shape, s, axes)))


@SETTINGS
@given(nd_cases(), st.sampled_from(NORMS), st.sampled_from((np.float32, np.float64)),
       st.integers(0, 2**16))
def test_rfftn_matches_numpy(case, norm, dtype, seed):
    shape, s, axes = case
    x = _random(np.random.default_rng(seed), shape, dtype)
    want = _np_nd("rfftn", x, s, axes, norm)
    for got in both("rfftn", x, s=s, axes=axes, norm=norm):
        close(got, want, COMPLEX[dtype], math.prod(_lengths("rfftn", shape, s, axes)))


@SETTINGS
@given(nd_cases(), st.sampled_from(NORMS), st.sampled_from((np.complex64, np.complex128)),
       st.integers(0, 2**16))
def test_irfftn_matches_numpy(case, norm, dtype, seed):
    shape, s, axes = case
    last = shape[axes[-1]] if axes is not None else shape[-1]
    if (s is None or s[-1] == -1) and last == 1:
        return  # the default length 2 * (1 - 1) is an error (tested below)
    x = _random(np.random.default_rng(seed), shape, dtype)
    want = _np_nd("irfftn", x, s, axes, norm)
    for got in both("irfftn", x, s=s, axes=axes, norm=norm):
        close(got, want, REAL[dtype], math.prod(_lengths("irfftn", shape, s, axes)))


@SETTINGS
@given(st.sampled_from(ONE_D), one_d_cases(), st.sampled_from(NORMS),
       st.sampled_from((np.float32, np.float64, np.complex64, np.complex128)),
       st.integers(0, 2**16))
def test_one_dimensional_transforms_match_numpy(name, case, norm, dtype, seed):
    shape, n, axis = case
    if name in ("rfft", "ihfft"):
        dtype = REAL[dtype]
    x = _random(np.random.default_rng(seed), shape, dtype)
    want = getattr(np.fft, name)(_wide(x), n=n, axis=axis, norm=norm)
    out = REAL[dtype] if name in ("irfft", "hfft") else COMPLEX[dtype]
    size = n or shape[axis]
    for got in both(name, x, n=n, axis=axis, norm=norm):
        close(got, want, out, size)


@pytest.mark.parametrize("name", N_D)
@pytest.mark.parametrize("axes", [(0, 1, 2, 3), (3, 1, 0, 2), (4, 0, 2, 3, 1), (-1, -3, 0, 1)])
def test_more_than_three_axes(name, axes):
    """4 and 5 transformed axes: several ops.Fft of up to 3 dims each, any order."""
    rng = np.random.default_rng(len(axes))
    dtype = np.float64 if name == "rfftn" else np.complex128
    x = _random(rng, (3, 2, 4, 5, 2), dtype)
    s = tuple((3, 4, 2, 6, 4)[: len(axes)])
    want = getattr(np.fft, name)(x, s=s, axes=axes)
    for got in both(name, x, s=s, axes=axes):
        close(got, want, want.dtype, math.prod(s))
    code = hd.code_hlo(lambda v: getattr(xp.fft, name)(v, s=s, axes=axes), hd.array(x))
    assert code.count(" fft(") == 2, code  # 3 axes + the rest


def test_result_types():
    """Real input promotes (f32 -> c64, f64 -> c128; 16-bit floats compute in c64)."""
    for dtype, cplx, real in [(np.float16, np.complex64, np.float32),
                              (np.float32, np.complex64, np.float32),
                              (np.float64, np.complex128, np.float64)]:
        x = hd.array(np.ones(4, dtype))
        assert xp.fft.fft(x).dtype.np_dtype == cplx
        assert xp.fft.ifftn(x).dtype.np_dtype == cplx
        assert xp.fft.rfft(x).dtype.np_dtype == cplx
        assert xp.fft.ihfft(x).dtype.np_dtype == cplx
        assert xp.fft.irfft(x).dtype.np_dtype == real  # real input to a c2r transform
        assert xp.fft.hfft(x).dtype.np_dtype == real


def test_zero_sized_batch_and_rank_zero():
    x = np.zeros((0, 4), np.complex64)
    for got in both("fft", x):
        assert np.asarray(got).shape == (0, 4)
    got = xp.fft.fftn(hd.array(np.float64(2.5)))  # no axes: the input, as complex
    assert np.asarray(got) == 2.5 + 0j and got.dtype is hd.complex128


def test_round_trips():
    rng = np.random.default_rng(3)
    x = hd.array(rng.standard_normal((3, 5, 4)))
    for norm in NORMS:
        back = xp.fft.irfftn(xp.fft.rfftn(x, norm=norm), s=(3, 5, 4), norm=norm)
        np.testing.assert_allclose(np.asarray(back), np.asarray(x), atol=1e-13)
        back = xp.fft.ihfft(xp.fft.hfft(hd.array(np.complex128([1, 2 - 1j, 3])), norm=norm),
                            norm=norm)
        np.testing.assert_allclose(np.asarray(back), [1, 2 - 1j, 3], atol=1e-13)


# -- frequencies and shifts -------------------------------------------------------------

@given(st.integers(1, 40), st.sampled_from([1.0, 0.1, 2.5, -3.0]),
       st.sampled_from([None, "float32", "float64"]))
@settings(max_examples=20, deadline=None)
def test_frequencies_match_numpy(n, d, dtype):
    want_type = np.dtype(dtype or "float64")
    for name in ("fftfreq", "rfftfreq"):
        want = getattr(np.fft, name)(n, d=d).astype(want_type)
        got = getattr(xp.fft, name)(n, d=d, dtype=dtype)
        assert np.asarray(got).dtype == want_type
        np.testing.assert_array_equal(np.asarray(got), want)


def test_frequencies_staged():
    static = hd.compile(lambda n, d: xp.fft.fftfreq(n, d=d), static_argnames=("d",))
    np.testing.assert_array_equal(np.asarray(static(7, d=0.5)), np.fft.fftfreq(7, d=0.5))
    traced = hd.compile(lambda d: xp.fft.rfftfreq(8, d=d))  # d a 0-d array of the program
    np.testing.assert_allclose(np.asarray(traced(hd.array(0.25))), np.fft.rfftfreq(8, d=0.25),
                               rtol=1e-15)
    x = xp.fft.fftfreq(4, device=hd.array(1.0).device)
    np.testing.assert_array_equal(np.asarray(x), np.fft.fftfreq(4))


@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
@settings(max_examples=20, deadline=None)
def test_shifts_match_numpy(shape, data):
    x = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    axes = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                               st.permutations(range(len(shape))).map(tuple)))
    for name in ("fftshift", "ifftshift"):
        want = getattr(np.fft, name)(x, axes=axes)
        for got in both(name, x, axes=axes):
            assert np.asarray(got).dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(got), want)


# -- derivatives ---------------------------------------------------------------------------

GRAD_CASES = [
    ("fft", {"n": 6}, (5,), False), ("fft", {"n": 3, "norm": "ortho"}, (2, 5), True),
    ("ifft", {"axis": 0, "norm": "forward"}, (4, 3), True),
    ("fftn", {"s": (3, 5), "axes": (1, 0)}, (4, 3, 2), True), ("ifftn", {}, (2, 2, 2, 2), True),
    ("rfft", {"n": 7}, (2, 6), False), ("rfft", {"n": 4, "norm": "ortho"}, (6,), False),
    ("irfft", {"n": 7}, (2, 5), True), ("irfft", {"axis": 0}, (4, 3), True),
    ("irfft", {"n": 3, "norm": "forward"}, (5,), True),
    ("rfftn", {"axes": (0, 2)}, (4, 3, 6), False), ("rfftn", {}, (2, 3, 2, 4), False),
    ("irfftn", {"s": (3, 6), "axes": (0, 1)}, (3, 4), True), ("irfftn", {}, (2, 3, 2, 4), True),
    ("hfft", {"n": 5}, (4,), True), ("hfft", {"norm": "ortho"}, (4,), True),
    ("ihfft", {"norm": "ortho"}, (6,), False), ("ihfft", {"n": 5}, (2, 4), False),
]


def _loss(mod, name, kwargs, w):
    """A real scalar of the transform: ``sum(re(y * w))``."""
    def f(x):
        y = getattr(mod.fft, name)(x, **kwargs)
        if mod is xp:
            w_ = hd.array(w)
            return xp.sum(xp.real(y * w_)) if np.iscomplexobj(w) else xp.sum(y * w_)
        return jnp.sum(jnp.real(y * w))
    return f



@pytest.mark.parametrize("real", [np.float32, np.float64])
@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_grad_matches_jax(case, real):
    name, kwargs, shape, complex_input = case
    rng = np.random.default_rng(len(shape))
    x = _random(rng, shape, COMPLEX[real] if complex_input else real)
    out = getattr(np.fft, name)(x, **kwargs)
    w = _random(rng, out.shape, COMPLEX[real] if np.iscomplexobj(out) else real)
    want = np.asarray(jax.grad(_loss(jnp, name, kwargs, w))(jnp.asarray(x)))  # x64: hlodsl's
    f = _loss(xp, name, kwargs, w)
    staged = hd.compile(hd.grad(f))
    tol = {"rtol": 1e-4, "atol": 1e-4} if real == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    for got in (hd.grad(f)(hd.array(x)), staged(hd.array(x))):
        got = np.asarray(got)
        assert got.dtype == x.dtype and got.shape == x.shape
        np.testing.assert_allclose(got, want, **tol)
    if real == np.float64:  # central differences along a random direction
        t = _random(rng, shape, x.dtype)
        eps = 1e-6
        fd = (float(np.asarray(f(hd.array(x + eps * t)))) -
              float(np.asarray(f(hd.array(x - eps * t))))) / (2 * eps)
        # jax's convention: grad = df/dre - i df/dim, so the slope along t is re(sum(grad * t))
        slope = np.real(np.sum(np.asarray(hd.grad(f)(hd.array(x))) * t))
        np.testing.assert_allclose(slope, fd, rtol=1e-6, atol=1e-7)


def test_jvp_of_irfft_matches_jax():
    rng = np.random.default_rng(4)
    x, t = _random(rng, (3, 4), np.complex128), _random(rng, (3, 4), np.complex128)
    got = hd.jvp(lambda v: xp.fft.irfft(v, n=5, axis=0, norm="ortho"), (hd.array(x),),
                 (hd.array(t),))[1]
    want = jax.jvp(lambda v: jnp.fft.irfft(v, n=5, axis=0, norm="ortho"), (x,), (t,))[1]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-12)


# -- vmap -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kwargs", [
    ("fft", {"n": 5, "axis": 0}), ("ifftn", {"axes": (1, 0), "norm": "ortho"}),
    ("rfftn", {"axes": (1, 0)}), ("irfft", {"n": 7}), ("hfft", {}), ("ihfft", {"axis": 0}),
    ("fftshift", {})])
@pytest.mark.parametrize("in_axis", [0, 2])
def test_vmap(name, kwargs, in_axis):
    x = np.random.default_rng(5).standard_normal((3, 4, 6))
    got = hd.vmap(lambda v: getattr(xp.fft, name)(v, **kwargs), in_axes=in_axis)(hd.array(x))
    want = np.stack([getattr(np.fft, name)(v, **kwargs) for v in np.moveaxis(x, in_axis, 0)])
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-12)


# -- the namespace and its errors -------------------------------------------------------------

def test_namespace():
    assert hd.array([1.0]).__array_namespace__().fft is xp.fft
    assert set(xp.fft.__all__) == {
        "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
        "fftfreq", "rfftfreq", "fftshift", "ifftshift"}
    for name in ONE_D:  # the standard's signatures: x positional-only, the rest keyword-only
        params = inspect.signature(getattr(xp.fft, name)).parameters
        assert list(params) == ["x", "n", "axis", "norm"]
        assert params["x"].kind is inspect.Parameter.POSITIONAL_ONLY
        assert params["norm"].kind is inspect.Parameter.KEYWORD_ONLY
    for name in N_D:
        assert list(inspect.signature(getattr(xp.fft, name)).parameters) == [
            "x", "s", "axes", "norm"]
    assert list(inspect.signature(xp.fft.fftfreq).parameters) == ["n", "d", "device", "dtype"]
    assert list(inspect.signature(xp.fft.fftshift).parameters) == ["x", "axes"]


_F = hd.array(np.ones((3, 4)))
_C = hd.array(np.ones((3, 4), np.complex128))


@pytest.mark.parametrize("call,error,match", [
    (lambda: xp.fft.fft(hd.array(np.arange(3))), TypeError,
     r"fft: x must be a floating-point or complex array, got s64\[3\]"),
    (lambda: xp.fft.rfftn(hd.array(np.ones(3, bool))), TypeError, r"rfftn: x must be a real"),
    (lambda: xp.fft.rfft(_C), TypeError, (r"rfft: x must be a real floating-point array, got "
                                         r"c128\[3,4\]; take xp.real first")),
    (lambda: xp.fft.ihfft(_C), TypeError, "ihfft: x must be a real"),
    (lambda: xp.fft.fft(_F, n=0), ValueError,
     r"fft: n=0 is not a valid number of data points .* axis 1 of x of shape \(3, 4\)"),
    (lambda: xp.fft.fft(_F, n=2.5), TypeError, "fft: n must be a static int"),
    (lambda: xp.fft.ifft(_F, axis=2), AxisError, "ifft: axis 2 is out of range for rank 2"),
    (lambda: xp.fft.fft(hd.array(np.float64(1))), ValueError,
     r"fft: x must have at least one dimension"),
    (lambda: xp.fft.fft(hd.array(np.ones(0))), ValueError, "fft: the default n=0"),
    (lambda: xp.fft.irfft(hd.array(np.ones((4, 1)))), ValueError,
     r"irfft: the default n 2 \* \(1 - 1\)=0 is not a valid number"),
    (lambda: xp.fft.fftn(_F, axes=(0, -2)), ValueError, r"fftn: repeated axis"),
    (lambda: xp.fft.fftn(_F, s=(2, 2, 2)), ValueError,
     r"fftn: s=\(2, 2, 2\) names 3 axes, but x has shape \(3, 4\)"),
    (lambda: xp.fft.ifftn(_F, s=(2,), axes=(0, 1)), ValueError,
     "ifftn: s=.* and axes=.* must have the same length"),
    (lambda: xp.fft.irfftn(_C, s=(2, 0)), ValueError, r"irfftn: s\[1\]=0 is not a valid"),
    (lambda: xp.fft.rfftn(_F, axes=()), ValueError, "rfftn: needs at least one axis"),
    (lambda: xp.fft.fft(_F, norm="none"), ValueError,
     "fft: norm must be 'backward', 'ortho' or 'forward', got 'none'"),
    (lambda: xp.fft.fftfreq(0), ValueError, "fftfreq: n must be a positive"),
    (lambda: xp.fft.rfftfreq(4, d=0), ValueError, "rfftfreq: d must be a non-zero real"),
    (lambda: xp.fft.fftfreq(4, dtype="int32"), TypeError,
     "fftfreq: dtype must be a real floating-point type, got int32"),
    (lambda: xp.fft.fftfreq(4, device="gpu"), ValueError, "fftfreq: device='gpu'"),
    (lambda: xp.fft.fftshift(_F, axes=3), AxisError, "fftshift: axis 3 is out of range"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
