"""Two corners of the HLO spec that StableHLO's interpreter tests use (tests/stablehlo_replay.py):
``select`` with a scalar predicate picks a whole operand, and ``atan2`` takes complex operands.

Oracles: numpy's ``where`` for select, and for complex atan2 the spec's formula
``-i log((x + iy) / sqrt(x^2 + y^2))`` evaluated in complex128 by numpy, its identity
``tan(atan2(y, x)) = y / x``, and complex finite differences for its derivative.
"""

from __future__ import annotations

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import hlodsl as hd
from ad_harness import random_array
from hlodsl import ops

SHAPES = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@settings(max_examples=20, deadline=None)
@given(choice=st.booleans(), shape=SHAPES, dtype=st.sampled_from([np.float32, np.int64,
                                                                 np.complex64, np.bool_]))
def test_a_scalar_predicate_picks_a_whole_operand(choice, shape, dtype):
    rng = np.random.default_rng(len(shape))
    t, f = random_array(rng, shape, dtype), random_array(rng, shape, dtype)
    args = hd.array(np.bool_(choice)), hd.array(t), hd.array(f)
    expected = np.where(choice, t, f)
    np.testing.assert_array_equal(np.asarray(ops.Select()(*args)), expected)
    np.testing.assert_array_equal(np.asarray(hd.compile(ops.Select())(*args)), expected)


def test_a_scalar_predicate_with_operands_of_another_shape_is_still_refused():
    p = hd.array(np.bool_(True))
    with pytest.raises(hd.ShapeError, match=r"Select.*equal types"):
        ops.Select()(p, hd.array(np.float32([1, 2])), hd.array(np.float32([1, 2, 3])))
    with pytest.raises(hd.ShapeError, match=r"predicate must have the shape of the operands, "
                                            r"or be a scalar"):
        ops.Select()(hd.array(np.bool_([True, False])), hd.array(np.float32([1, 2, 3])),
                     hd.array(np.float32([4, 5, 6])))


def _select(p, t, f):
    return ops.Select()(p, t, f)


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (None, 0, 0), (0, None, None), (0, 0, None)])
def test_vmap_of_a_scalar_predicate_select_is_a_loop_over_examples(in_axes):
    rng = np.random.default_rng(1)
    p = np.array([True, False, True])
    t, f = random_array(rng, (3, 2, 2), np.float32), random_array(rng, (3, 2, 2), np.float32)
    args = [p if in_axes[0] is not None else p[1],
            t if in_axes[1] is not None else t[0], f if in_axes[2] is not None else f[0]]
    got = hd.vmap(_select, in_axes=in_axes)(*[hd.array(a) for a in args])
    expected = np.stack([np.where(*[a[i] if ax is not None else a for a, ax in zip(args, in_axes)])
                         for i in range(3)])
    np.testing.assert_array_equal(np.asarray(got), expected)


@pytest.mark.parametrize("choice", [True, False])
def test_derivatives_of_a_scalar_predicate_select_go_to_the_chosen_operand(choice):
    p = hd.array(np.bool_(choice))
    t, f = hd.array(np.float64([1, 2])), hd.array(np.float64([3, 4]))
    gt, gf = hd.grad(lambda t, f: (_select(p, t, f) ** 2).sum(), argnums=(0, 1))(t, f)
    np.testing.assert_array_equal(np.asarray(gt), [2, 4] if choice else [0, 0])
    np.testing.assert_array_equal(np.asarray(gf), [0, 0] if choice else [6, 8])
    _, tangent = hd.jvp(lambda t, f: _select(p, t, f), (t, f),
                        (hd.array(np.float64([1, 1])), hd.array(np.float64([5, 5]))))
    np.testing.assert_array_equal(np.asarray(tangent), [1, 1] if choice else [5, 5])


def _spec_atan2(y, x):
    y, x = y.astype(np.complex128), x.astype(np.complex128)
    return -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))


@pytest.mark.parametrize("dtype, tol", [(np.complex64, 2e-6), (np.complex128, 1e-14)])
def test_complex_atan2_is_the_spec_formula(dtype, tol):
    rng = np.random.default_rng(2)
    y, x = random_array(rng, (2, 50), dtype), random_array(rng, (2, 50), dtype)
    got = np.asarray(ops.Atan2()(hd.array(y), hd.array(x))).astype(np.complex128)
    np.testing.assert_allclose(got, _spec_atan2(y, x), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.tan(got), y.astype(np.complex128) / x, rtol=20 * tol)
    # on real-valued complex operands it is the real atan2
    ry, rx = y.real.astype(dtype), x.real.astype(dtype)
    real = np.asarray(ops.Atan2()(hd.array(ry), hd.array(rx)))
    np.testing.assert_allclose(real.real, np.arctan2(ry.real, rx.real), rtol=tol, atol=tol)


def test_complex_atan2_derivatives_match_complex_finite_differences():
    rng = np.random.default_rng(3)
    y, x = random_array(rng, (4,), np.complex128), random_array(rng, (4,), np.complex128)
    dy, dx = random_array(rng, (4,), np.complex128), random_array(rng, (4,), np.complex128)
    h = 1e-7
    fd = (_spec_atan2(y + h * dy, x + h * dx) - _spec_atan2(y - h * dy, x - h * dx)) / (2 * h)
    _, tangent = hd.jvp(ops.Atan2(), (hd.array(y), hd.array(x)), (hd.array(dy), hd.array(dx)))
    np.testing.assert_allclose(np.asarray(tangent), fd, rtol=1e-6)
    # reverse mode is the transpose of the same linear map (jax's convention: no conjugation)
    ct = random_array(rng, (4,), np.complex128)
    gy, gx = hd.vjp(ops.Atan2(), hd.array(y), hd.array(x))[1](hd.array(ct))
    np.testing.assert_allclose(np.sum(np.asarray(gy) * dy + np.asarray(gx) * dx),
                               np.sum(ct * np.asarray(tangent)), rtol=1e-12)
