"""Complex elementwise functions: values, C99 Annex G special values, derivatives.

The array API's elementwise functions on complex64 / complex128 arrays
(``hlodsl.ops.complex_functions``, ``ops.Sinh`` ... ``ops.Atanh``, and the
``hlodsl.stdlib`` functions built on them), eagerly and under ``hd.compile``:

- values against numpy (mpmath for expm1 and log1p, where numpy's complex
  versions lose digits near 0) on random inputs: moderate, near the branch cuts
  (both sides), near the branch points, large and small magnitudes; the error is
  the complex relative error |got - want| / |want|, at most 16 eps of the type
  (c64 inputs are compared with the exact value at those inputs);
- special values on the grid of +-0, +-finite, +-1, +-huge, +-inf and NaN in each
  part, against numpy (which implements Annex G; for expm1, the standard's table,
  which is exp(z)'s with 1 taken from the real part), NaN equal to NaN and the
  sign of every zero and infinity compared, except the cases listed in
  ``UNSPECIFIED`` where the standard leaves a sign open and hlodsl's differs
  from numpy's;
- derivatives against jax (vjp and jvp, jax's convention for complex inputs);
- abs, sign and sigmoid of complex arrays; atan2 refuses them.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops
from test_autodiff_data_movement import check

NAMES = ["exp", "expm1", "log", "log1p", "sqrt", "sinh", "cosh", "tanh", "sin", "cos", "tan",
         "asinh", "asin", "acos", "acosh", "atanh", "atan"]
NUMPY = {"asinh": np.arcsinh, "asin": np.arcsin, "acos": np.arccos, "acosh": np.arccosh,
         "atanh": np.arctanh, "atan": np.arctan}
MPMATH = {"expm1": mpmath.expm1, "log1p": mpmath.log1p}
OPS = {"sinh": ops.Sinh(), "cosh": ops.Cosh(), "asin": ops.Asin(), "acos": ops.Acos(),
       "asinh": ops.Asinh(), "acosh": ops.Acosh(), "atanh": ops.Atanh()}
COMPLEX = [np.complex64, np.complex128]
_STAGED = {name: hd.compile(lambda z, name=name: getattr(xp, name)(z)) for name in NAMES}


def _both(name, z):
    """xp.<name>(z) eagerly and staged, as numpy arrays."""
    eager = getattr(xp, name)(hd.array(z))
    staged = _STAGED[name](hd.array(z))
    assert eager.dtype == staged.dtype == hd.element_type(z.dtype)
    return np.asarray(eager), np.asarray(staged)


def _exact(name, z):
    """The true value at z (in complex128)."""
    z = z.astype(np.complex128)
    if name in MPMATH:
        mpmath.mp.prec = 80
        fn = MPMATH[name]
        return np.array([complex(fn(mpmath.mpc(v.real, v.imag))) for v in z.ravel()]
                        ).reshape(z.shape)
    with np.errstate(all="ignore"):
        return NUMPY.get(name, getattr(np, name, None))(z)


# -- values ------------------------------------------------------------------------------------


def _samples(dtype, n=64, seed=0):
    """Random inputs of ``dtype`` by region (parts stay normal numbers: XLA:CPU flushes
    subnormals to zero)."""
    rng = np.random.default_rng(seed)
    part = np.finfo(dtype).dtype
    lo, hi = (-30, 30) if part == np.float32 else (-300, 300)
    sign = rng.choice([-1.0, 1.0], n)

    def tiny():
        return sign * 10.0 ** rng.uniform(lo, -4, n)

    def unit():
        return rng.normal(size=n) + 1j * rng.normal(size=n)

    regions = {
        "moderate": 3 * unit(),
        "near_real_cut": rng.uniform(-5, 5, n) + 1j * tiny(),  # both sides: sign of tiny
        "near_imag_cut": tiny() + 1j * rng.uniform(-5, 5, n),
        "near_branch_points": rng.choice([1, -1, 1j, -1j], n) + unit() * 10.0 ** rng.uniform(
            np.log10(np.finfo(part).eps), -1, n),
        "on_the_cuts": np.concatenate([rng.uniform(-5, 5, n // 2) + 0j,
                                       1j * rng.uniform(-5, 5, n - n // 2)]),
        "large": unit() * 10.0 ** rng.uniform(4, hi - 2, n),
        "small": unit() * 10.0 ** rng.uniform(lo + 2, -4, n),
    }
    return {k: v.astype(dtype) for k, v in regions.items()}


def _close(name, got, want, z, dtype):
    eps = np.finfo(dtype).eps
    part = np.finfo(dtype)
    # Results XLA cannot represent (overflow, subnormal parts) are not a test of the formula.
    fits = np.isfinite(want) & (np.abs(want) < part.max) & (np.abs(want) > part.tiny / eps)
    with np.errstate(all="ignore"):
        err = np.where(fits, np.abs(got.astype(np.complex128) - want) / np.abs(want), 0)
    worst = int(np.argmax(err))
    assert err[worst] <= 16 * eps, (f"{name}({z[worst]!r}) = {got[worst]!r}, want "
                                    f"{want[worst]!r}: {err[worst] / eps:.1f} eps")


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("name", NAMES)
def test_values_match_numpy_in_every_region(name, dtype):
    for region, z in _samples(dtype).items():
        want = _exact(name, z)
        for got in _both(name, z):
            _close(f"{name} [{region}]", got, want, z, dtype)


@pytest.mark.parametrize("name", sorted(OPS))
def test_ops_take_complex_operands_and_agree_with_the_stdlib(name):
    z = _samples(np.complex128)["moderate"].reshape(8, 8)
    got = OPS[name](hd.array(z))
    assert got.dtype == hd.complex128 and got.shape == (8, 8)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(getattr(xp, name)(hd.array(z))))


def test_branch_cuts_follow_the_sign_of_zero():
    # On a cut, +0 and -0 in the other part give the two sides' limits (as numpy).
    for name, points in (("log", [-2]), ("sqrt", [-2]), ("asin", [-2, 2]), ("acos", [-2, 2]),
                         ("atanh", [-2, 2]), ("acosh", [-2, 0.5]), ("asinh", [-2j, 2j]),
                         ("atan", [-2j, 2j])):
        for p in points:
            on_real = np.isreal(p)
            for signed_zero in (0.0, -0.0):
                v = (complex(np.real(p), signed_zero) if on_real
                     else complex(signed_zero, np.imag(p)))
                z = np.array([v], np.complex128)
                want = _exact(name, z)
                for got in _both(name, z):
                    np.testing.assert_allclose(got, want, rtol=1e-15, err_msg=f"{name}({v})")
                    assert np.signbit(got.real) == np.signbit(want.real), f"{name}({v})"
                    assert np.signbit(got.imag) == np.signbit(want.imag), f"{name}({v})"


# -- special values ----------------------------------------------------------------------------

_PARTS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 1e30, -1e30, np.inf, -np.inf, np.nan]
GRID = np.array([complex(a, b) for a in _PARTS for b in _PARTS])

#: (function, input): the standard leaves this sign open, and hlodsl's differs from numpy's.
UNSPECIFIED = {
    # "infinity + NaN j (sign of the real component is unspecified)"
    ("sinh", "(-inf+infj)"), ("sinh", "(-inf-infj)"), ("sinh", "(-inf+nanj)"),
    # sin(z) = -i sinh(iz): the same rows, rotated
    ("sin", "(inf-infj)"), ("sin", "(-inf-infj)"), ("sin", "(nan-infj)"),
    # cos(z) = cosh(iz); cosh(NaN + 0j) = NaN + 0j, "sign of the imaginary part unspecified"
    ("cos", "nanj"), ("cos", "(-0+nanj)"),
}
# Also open in the standard, and held to numpy's here: asin(inf + nan j) (casinh(nan + inf j)
# is +-inf + nan j) and atan(inf + nan j) (catanh(nan + inf j) is +-0 + pi/2 j). hlodsl's
# sign there follows the sign bit of a NaN part rotated by i, flipped on its bits, since
# HLO negate of a NaN keeps or flips it as the platform likes (XLA:GPU kept it).


def test_the_rotations_by_i_flip_signs_on_the_bits():
    # sin, tan, asin, atan = -i f(i z) and cos = cosh(i z): the NaN part whose sign the
    # special values read is negated exactly (xor of the sign bit), never by HLO negate.
    z = hd.array(np.complex64([complex(np.inf, np.nan)]))
    for name in ("sin", "tan", "asin", "atan", "cos"):
        text = str(hd.code_hlo(getattr(xp, name), z))
        assert " xor(" in text, name
    got = np.asarray(xp.asin(z))[0], np.asarray(xp.atan(z))[0]
    assert np.isnan(got[0].real) and got[0].imag == np.inf
    assert got[1].real == np.float32(np.pi / 2) and not np.signbit(got[1].imag)


def _spec_value(name, z):
    with np.errstate(all="ignore"):
        if name == "expm1":  # the standard's table: exp(z) - 1 on the real part (numpy's
            e = np.exp(z)    # expm1 gives inf + NaN j at inf + 0j, the standard inf + 0j)
            e.real -= 1      # (in place: arithmetic with 1j would lose signs of zero)
            return e
        want = NUMPY.get(name, getattr(np, name, None))(z)
    # tanh(+inf + iy) is "1 + 0j" for y > 0 in the standard; numpy (C99) gives the zero
    # the sign of sin(2y). tan(z) = -i tanh(iz) inherits it.
    if name == "tanh":
        want.imag = np.where(np.isinf(z.real), np.copysign(0, z.imag), want.imag)
    if name == "tan":
        want.real = np.where(np.isinf(z.imag), np.copysign(0, z.real), want.real)
    return want


def _same(got, want):
    """NaN equals NaN; other values within rounding, zeros and infinities with their sign."""
    ok = np.ones(got.shape, bool)
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        g = g.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        with np.errstate(all="ignore"):
            close = (g == w) | np.isclose(g, w, rtol=1e-5, atol=0)
        signed = (g != 0) & np.isfinite(g) | (np.signbit(g) == np.signbit(w))
        ok &= both_nan | (close & signed)
    return ok


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("name", NAMES)
def test_special_values_follow_annex_g(name, dtype):
    z = GRID.astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _spec_value(name, z.astype(np.complex128)).astype(dtype)
    # Finite inputs with finite results are the value tests' business (rounding), and
    # the standard fixes nothing for them but the sign of zero parts, checked here too.
    for got in _both(name, z):
        ok = _same(got, want)
        for i in np.flatnonzero(~ok):
            assert (name, repr(complex(GRID[i]))) in UNSPECIFIED, \
                f"{name}({z[i]!r}) = {got[i]!r}, want {want[i]!r}"


def test_the_issue_examples():
    cases = [("exp", complex(-np.inf, np.nan), 0j), ("log", complex(np.nan, np.inf),
             complex(np.inf, np.nan)), ("sqrt", complex(np.nan, np.inf), complex(np.inf, np.inf)),
             ("tanh", complex(np.inf, np.nan), 1 + 0j), ("expm1", complex(np.inf, 0.0), np.inf)]
    for name, z, want in cases:
        for got in _both(name, np.array([z])):
            assert _same(got, np.array([want])).all(), (name, z, got)


# -- abs, sign, sigmoid, atan2 -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda t: np.dtype(t).name)
def test_abs_sign_and_sigmoid_of_complex_arrays(dtype):
    z = GRID.astype(dtype)
    with np.errstate(all="ignore"):
        assert _same(np.asarray(xp.abs(hd.array(z))) + 0j, np.abs(z) + 0j).all()
        assert _same(np.asarray(xp.sign(hd.array(z))), np.sign(z)).all()
    big = (_samples(dtype)["large"] * 1e-30 ** (dtype == np.complex64)).astype(dtype)
    for z in (_samples(dtype)["moderate"], big):
        np.testing.assert_allclose(np.asarray(xp.abs(hd.array(z))), np.abs(z),
                                   rtol=4 * np.finfo(dtype).eps)
    z = _samples(dtype)["moderate"]
    with np.errstate(all="ignore"):
        want = 1 / (1 + np.exp(-z.astype(np.complex128)))
    got = np.asarray(xp.sigmoid(hd.array(z)))
    assert got.dtype == dtype
    _close("sigmoid", got, want, z, dtype)


def test_atan2_refuses_complex_operands_by_name():
    z = hd.array(np.complex64([1 + 1j]))
    with pytest.raises(TypeError, match=r"atan2: operands must be real.*c64\[1\]"):
        xp.atan2(z, z)


# -- derivatives -------------------------------------------------------------------------------

JAX = {"exp": jnp.exp, "expm1": jnp.expm1, "log": jnp.log, "log1p": jnp.log1p,
       "sqrt": jnp.sqrt, "sinh": jnp.sinh, "cosh": jnp.cosh, "tanh": jnp.tanh, "sin": jnp.sin,
       "cos": jnp.cos, "tan": jnp.tan, "asinh": jnp.arcsinh, "asin": jnp.arcsin,
       "acos": jnp.arccos, "acosh": jnp.arccosh, "atanh": jnp.arctanh, "atan": jnp.arctan,
       "sigmoid": lambda z: 1 / (1 + jnp.exp(-z))}


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("name", sorted(JAX))
def test_derivatives_follow_jax(name, dtype):
    # Off the cuts (|Re z|, |Im z| in [0.2, 0.8], all four quadrants), batched (3, 4).
    rng = np.random.default_rng(5)
    re_sign = 1 if name == "acosh" else rng.choice([-1, 1], (3, 4))  # see below
    z = (re_sign * rng.uniform(0.2, 0.8, (3, 4))
         + 1j * rng.choice([-1, 1], (3, 4)) * rng.uniform(0.2, 0.8, (3, 4))).astype(dtype)
    check(getattr(xp, name), [z], (0, ), JAX[name])


@pytest.mark.parametrize("name", ["acosh", "acos", "asin", "atanh"])
def test_acosh_derivative_is_the_principal_branch_in_the_left_half_plane(name):
    # Central differences of the function itself. jax 0.10.2 differentiates acosh as
    # 1 / sqrt(z^2 - 1), which has the wrong sign for Re z < 0 (its values are right):
    # hlodsl's 1 / (sqrt(z - 1) sqrt(z + 1)) is checked against the function here.
    z = np.complex128([-2 + 0.5j, -0.5 - 1.5j, -3 - 0.25j])
    ct = np.ones(3, np.complex128)
    _, pullback = hd.vjp(getattr(xp, name), hd.array(z))
    (g,) = pullback(hd.array(ct))
    h = 1e-6
    at = [np.asarray(getattr(xp, name)(hd.array(z + d))) for d in (h, -h)]
    np.testing.assert_allclose(np.asarray(g), (at[0] - at[1]) / (2 * h), rtol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("name", sorted(OPS))
def test_real_derivatives_of_the_composites_follow_jax(name, dtype):
    # Their own rules now (not the expansion): inside each real domain.
    lo, hi = {"acosh": (1.2, 4), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9),
              "atanh": (-0.9, 0.9)}.get(name, (-3, 3))
    x = np.random.default_rng(6).uniform(lo, hi, (2, 5)).astype(dtype)
    check(OPS[name], [x], (0,), JAX[name])
    assert not type(OPS[name]).differentiate_expansion


@pytest.mark.parametrize("name", sorted(OPS))
def test_second_derivatives_of_the_composites_follow_jax(name):
    x = np.float64([0.3, -0.45, 0.6]) + (1.5 if name == "acosh" else 0)

    def hd_second(v):
        return hd.grad(lambda u: xp.sum(OPS[name](u)))(v)

    def jax_second(v):
        return jax.grad(lambda u: jnp.sum(JAX[name](u)))(v)

    got = hd.grad(lambda v: xp.sum(hd_second(v)))(hd.array(x))
    want = jax.grad(lambda v: jnp.sum(jax_second(v)))(x)  # (hlodsl's runtime enables x64)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda t: np.dtype(t).name)
def test_the_logistic_op_takes_complex_operands(dtype):
    # The HLO spec allows complex logistic and XLA:CPU runs it (ops.Logistic refused it).
    rng = np.random.default_rng(7)
    z = (rng.uniform(-3, 3, (3, 4)) + 1j * rng.uniform(-1.2, 1.2, (3, 4))).astype(dtype)
    got = np.asarray(ops.Logistic()(hd.array(z)))
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-z)), rtol=tol, atol=tol)
    check(ops.Logistic(), [z], (0,), jax.lax.logistic)


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda t: np.dtype(t).name)
def test_sinh_and_cosh_are_finite_where_only_exp_overflows(dtype):
    # For |x| in (log(max), log(2 max)] (709.78..710.47 in f64, 88.72..89.42 in f32),
    # sinh(x) and cosh(x) are finite though exp(x) is not: computed as
    # (e^(|x|/2) / 2) e^(|x|/2) (times cos y or sin y), real and complex.
    part = np.finfo(dtype).dtype.type
    top = np.log(np.float64(np.finfo(part).max)) + np.log(2)
    x = np.array([top - 0.6, top - 0.3, top - 0.01, -(top - 0.3), top - 0.69], part)
    assert (np.abs(x) > np.log(np.finfo(part).max)).all()
    eps = np.finfo(part).eps
    mpmath.mp.prec = 80
    for name in ("sinh", "cosh"):
        real = np.asarray(getattr(xp, name)(hd.array(x)))
        with np.errstate(over="ignore"):
            want = getattr(np, name)(x.astype(np.float64))
        assert np.isfinite(real).all(), (name, x, real)
        np.testing.assert_allclose(real, want, rtol=4 * eps)
        z = (x[:, None] + 1j * np.array([0.5, 1.5, 3.0, 1e-3], part)[None, :]).ravel()
        z = z.astype(dtype)
        fn = getattr(mpmath, name)
        want = np.array([complex(fn(mpmath.mpc(float(v.real), float(v.imag)))) for v in z])
        for got in _both(name, z):
            fits = np.abs(want.real) < np.finfo(part).max
            assert np.isfinite(got.real[fits]).all() and np.isfinite(got.imag).all(), (name, z, got)
            err = np.abs(got.astype(np.complex128) - want) / np.abs(want)
            assert np.where(fits, err, 0).max() <= 16 * eps, (name, z, got, want)
