"""Derivative rules of the data-movement ops, against jax.vjp / jax.jvp and finite differences.

Covered: slice, pad (negative and interior), dynamic-slice, dynamic-update-slice,
concatenate, reverse, clamp, copy, gather and scatter (add, overwrite; batching
dimensions; out-of-range starts), sort (with values and integer keys), top-k,
reduce-precision, real/imag/complex, map, optimization-barrier, and the ops
declared non-differentiable.

Every op is applied with hypothesis-drawn shapes and static operands to random
float32 / float64 values; its pullback (``hd.vjp``) and its forward derivative
(``hd.jvp``) must equal jax's for the same lax function, eagerly and inside one
``hd.compile``d function. Tolerances: float32 rtol = atol = 2e-5 (the rules only
move, add or select values; sums of a few cotangents round differently), float64
1e-12. In float64 a central difference of a random directional derivative,
``<v, (f(x + eps u) - f(x - eps u)) / 2 eps>``, must match ``<pullback(v), u>``
(``<a, b> = Re sum(a * b)``: jax's convention transposes, it does not conjugate).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops
from hlodsl.arrays.types import ArrayType

SETTINGS = settings(max_examples=4, deadline=None)
FLOATS = [np.float32, np.float64]
TOL = {np.dtype(np.float16): dict(rtol=1e-3, atol=1e-3),
       np.dtype(np.float32): dict(rtol=2e-5, atol=2e-5),
       np.dtype(np.float64): dict(rtol=1e-12, atol=1e-12),
       np.dtype(np.complex64): dict(rtol=2e-5, atol=2e-5),
       np.dtype(np.complex128): dict(rtol=1e-12, atol=1e-12)}


# -- the harness ------------------------------------------------------------------

from ad_harness import PULLBACK, TANGENT  # noqa: E402
from ad_harness import apply_op as _apply  # noqa: E402
from ad_harness import pullback as _pullback  # noqa: E402
from ad_harness import random_array as _random  # noqa: E402
from ad_harness import tangent as _tangent  # noqa: E402


def _close(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, **TOL[np.dtype(dtype)])


def _jax_derivatives(jax_fn, primals, ct, tangents):
    """jax's pullback of ``ct`` and tangent of ``tangents``, as one jitted computation
    (much faster here than jax's op-by-op execution on ever new shapes)."""

    def both(primals, ct, tangents):
        pullback = jax.vjp(jax_fn, *primals)[1](ct)
        return pullback, jax.jvp(jax_fn, tuple(primals), tuple(tangents))[1]

    return jax.jit(both)(list(primals), ct, list(tangents))


def check(op, args, diff_pos, jax_fn, pick=None, seed=0, fd=True):
    """``op``'s pullback and tangent against jax's, eagerly and compiled (+ central FD).

    ``jax_fn`` takes the differentiated operands (in ``diff_pos`` order) and
    returns the jax value of ``op``'s result (``pick``ed).
    """
    rng = np.random.default_rng(seed)
    hd_args = [hd.array(a) for a in args]
    primals = [args[i] for i in diff_pos]
    out = jax.eval_shape(jax_fn, *primals)
    ct = _random(rng, out.shape, out.dtype)
    tangents = [_random(rng, np.shape(p), np.asarray(p).dtype) for p in primals]
    want, want_t = _jax_derivatives(jax_fn, primals, ct, tangents)
    eager = _pullback(op, diff_pos, pick, hd_args, hd.array(ct))
    staged = PULLBACK(op, diff_pos, pick, hd_args, hd.array(ct))
    for g_eager, g_staged, w, p in zip(eager, staged, want, primals):
        _close(g_eager, w, p.dtype)
        _close(g_staged, w, p.dtype)

    hd_t = [hd.array(t) for t in tangents]
    _close(_tangent(op, diff_pos, pick, hd_args, hd_t), want_t, out.dtype)
    _close(TANGENT(op, diff_pos, pick, hd_args, hd_t), want_t, out.dtype)

    if fd and all(np.asarray(p).dtype == np.float64 for p in primals) and out.size:
        eps = 1e-6

        def at(sign):
            moved = [hd.array(np.asarray(p) + sign * eps * t) for p, t in zip(primals, tangents)]
            return np.asarray(_apply(op, diff_pos, pick, hd_args, moved))

        # The pairing of jax's convention (a transpose, no conjugation): Re sum(a * b).
        fd_value = np.real(np.sum(ct * (at(1) - at(-1)) / (2 * eps)))
        ad_value = sum(np.real(np.sum(np.asarray(g) * t)) for g, t in zip(eager, tangents))
        np.testing.assert_allclose(fd_value, ad_value, rtol=1e-6, atol=1e-6)


def shapes(min_rank=1, max_rank=3, max_side=4):
    return st.lists(st.integers(1, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


# -- static windows -------------------------------------------------------------------

@SETTINGS
@given(shapes(), st.sampled_from(FLOATS), st.data())
def test_slice(shape, dtype, data):
    starts = [data.draw(st.integers(0, n)) for n in shape]
    limits = [data.draw(st.integers(lo, n)) for lo, n in zip(starts, shape)]
    strides = [data.draw(st.integers(1, 3)) for _ in shape]
    x = _random(np.random.default_rng(1), shape, dtype)
    check(ops.Slice(starts, limits, strides), [x], (0,),
          lambda x: lax.slice(x, starts, limits, strides))


@SETTINGS
@given(shapes(), st.sampled_from(FLOATS), st.data())
def test_pad_with_negative_and_interior_padding(shape, dtype, data):
    interior = [data.draw(st.integers(0, 2)) for _ in shape]
    inner = [n + (n - 1) * i for n, i in zip(shape, interior)]
    low = [data.draw(st.integers(-min(2, m), 2)) for m in inner]
    high = [data.draw(st.integers(-min(2, m + lo), 2)) for m, lo in zip(inner, low)]
    x = _random(np.random.default_rng(2), shape, dtype)
    value = np.asarray(0.5, dtype)
    check(ops.Pad(low, high, interior), [x, value], (0, 1),
          lambda x, v: lax.pad(x, v, list(zip(low, high, interior))))


@SETTINGS
@given(shapes(), st.sampled_from(FLOATS), st.data())
def test_dynamic_slice_and_update_slice_with_clamped_starts(shape, dtype, data):
    sizes = [data.draw(st.integers(0, n)) for n in shape]
    starts = [np.int32(data.draw(st.integers(-2, n + 2))) for n in shape]
    rng = np.random.default_rng(3)
    x, update = _random(rng, shape, dtype), _random(rng, sizes, dtype)
    jax_starts = [jnp.asarray(s) for s in starts]  # arrays: jax clamps them as XLA does
    check(ops.DynamicSlice(sizes), [x, *starts], (0,),
          lambda x: lax.dynamic_slice(x, jax_starts, sizes, allow_negative_indices=False))
    check(ops.DynamicUpdateSlice(), [x, update, *starts], (0, 1),
          lambda x, u: lax.dynamic_update_slice(x, u, jax_starts,
                                                allow_negative_indices=False))


@SETTINGS
@given(shapes(), st.integers(1, 3), st.sampled_from(FLOATS), st.data())
def test_concatenate(shape, count, dtype, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(4)
    xs = []
    for _ in range(count):
        s = list(shape)
        s[dim] = data.draw(st.integers(0, 3))
        xs.append(_random(rng, s, dtype))
    check(ops.Concatenate(dim), xs, tuple(range(count)),
          lambda *xs: lax.concatenate(xs, dim))


@SETTINGS
@given(shapes(), st.sampled_from(FLOATS), st.data())
def test_reverse_and_copy(shape, dtype, data):
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1))))
    x = _random(np.random.default_rng(5), shape, dtype)
    check(ops.Reverse(dims), [x], (0,), lambda x: lax.rev(x, dims))
    check(ops.Copy(), [x], (0,), lambda x: x * 1)


@SETTINGS
@given(shapes(), st.sampled_from(FLOATS), st.booleans(), st.booleans())
def test_clamp_with_scalar_or_full_bounds(shape, dtype, scalar_lo, scalar_hi):
    rng = np.random.default_rng(6)
    x = _random(rng, shape, dtype)
    lo = np.asarray(-0.5, dtype) if scalar_lo else -0.5 - abs(_random(rng, shape, dtype))
    hi = np.asarray(0.5, dtype) if scalar_hi else 0.5 + abs(_random(rng, shape, dtype))

    def clamp(lo, x, hi):  # jax's own rule needs bounds of x's shape
        return lax.clamp(jnp.broadcast_to(lo, x.shape), x, jnp.broadcast_to(hi, x.shape))

    check(ops.Clamp(), [lo, x, hi], (0, 1, 2), clamp)


def test_clamp_cotangent_goes_to_the_bound_that_wins():
    lo, x, hi = np.float64(-1), np.float64([-2, -1, 0, 1, 2]), np.float64(1)
    _, pullback = hd.vjp(ops.Clamp(), hd.array(lo), hd.array(x), hd.array(hi))
    g_lo, g_x, g_hi = pullback(hd.array(np.float64([1, 2, 4, 8, 16])))
    # As jax: ties at a bound go to nobody.
    assert (float(g_lo), float(g_hi)) == (1.0, 16.0)
    np.testing.assert_array_equal(np.asarray(g_x), [0, 0, 4, 0, 0])


# -- gather and scatter -------------------------------------------------------------

@st.composite
def index_layouts(draw, max_rank=3):
    """A gather/scatter layout: operand shape, batching, mapped and dropped dimensions,
    the index batch shape with the index vector dimension somewhere, and how jax
    (index vector last) sees the same indices."""
    shape = draw(shapes(1, max_rank))
    dims = list(range(len(shape)))
    batching = sorted(draw(st.permutations(dims))[:draw(st.integers(0, 1))])
    rest = [d for d in dims if d not in batching]
    mapped = tuple(draw(st.permutations(rest))[:draw(st.integers(1, len(rest)))]
                   if rest else ())
    dropped = tuple(sorted(d for d in rest if draw(st.booleans())))
    sizes = [shape[d] for d in batching] + draw(st.lists(st.integers(1, 3), max_size=2))
    order = draw(st.permutations(range(len(sizes))))
    batch = [sizes[i] for i in order]
    ivd = draw(st.integers(0, len(batch)))
    implicit = len(mapped) == 1 and ivd == len(batch) and draw(st.booleans())
    jax_batching = tuple(order.index(j) for j in range(len(batching)))
    own_batching = tuple(p if p < ivd else p + 1 for p in jax_batching)
    return dict(shape=tuple(shape), batching=tuple(batching), mapped=mapped, dropped=dropped,
                batch=batch, ivd=ivd, implicit=implicit, jax_batching=jax_batching,
                own_batching=own_batching)


def _indices(layout, window, slack, seed):
    """jax-layout index vectors (last axis), some up to ``slack`` outside the operand,
    and the same in our layout."""
    rng = np.random.default_rng(seed)
    shape, mapped = layout["shape"], layout["mapped"]
    jax_idx = np.zeros(tuple(layout["batch"]) + (len(mapped),), np.int32)
    for j, d in enumerate(mapped):
        jax_idx[..., j] = rng.integers(-slack, shape[d] - window[d] + slack, layout["batch"],
                                       endpoint=True)
    own = jax_idx[..., 0] if layout["implicit"] else np.moveaxis(jax_idx, -1, layout["ivd"])
    return jax_idx, own


@settings(max_examples=6, deadline=None)
@given(index_layouts(), st.sampled_from(FLOATS), st.data())
def test_gather(layout, dtype, data):
    shape, batching, dropped = layout["shape"], layout["batching"], layout["dropped"]
    slice_sizes = [1 if d in dropped + batching else data.draw(st.integers(1, n))
                   for d, n in enumerate(shape)]
    n_offset = len(shape) - len(dropped) - len(batching)
    rank = n_offset + len(layout["batch"])
    offset_dims = sorted(data.draw(st.permutations(range(rank)))[:n_offset])
    op = ops.Gather(offset_dims=offset_dims, collapsed_slice_dims=dropped,
                    start_index_map=layout["mapped"], index_vector_dim=layout["ivd"],
                    slice_sizes=slice_sizes, operand_batching_dims=batching,
                    start_indices_batching_dims=layout["own_batching"])
    jax_idx, idx = _indices(layout, slice_sizes, 2, seed=7)
    dn = lax.GatherDimensionNumbers(
        offset_dims=tuple(offset_dims), collapsed_slice_dims=dropped,
        start_index_map=layout["mapped"], operand_batching_dims=batching,
        start_indices_batching_dims=layout["jax_batching"])
    x = _random(np.random.default_rng(8), shape, dtype)
    check(op, [x, idx], (0,), lambda x: lax.gather(x, jax_idx, dn, slice_sizes, mode="clip"))


def _add(a, b):
    return ops.Add()(a, b)


def _overwrite(a, b):
    return b


def _multiply(a, b):
    return ops.Multiply()(a, b)


SCATTERS = {"add": (_add, lax.scatter_add), "overwrite": (_overwrite, lax.scatter)}


@settings(max_examples=8, deadline=None)
@given(index_layouts(), st.sampled_from(FLOATS), st.sampled_from(sorted(SCATTERS)), st.data())
def test_scatter_add_and_overwrite(layout, dtype, kind, data):
    shape, batching, inserted = layout["shape"], layout["batching"], layout["dropped"]
    window_sizes = [1 if d in inserted + batching else data.draw(st.integers(1, n))
                    for d, n in enumerate(shape)]
    window = [w for d, w in enumerate(window_sizes) if d not in inserted + batching]
    rank = len(window) + len(layout["batch"])
    window_dims = sorted(data.draw(st.permutations(range(rank)))[:len(window)])
    w, b = iter(window), iter(layout["batch"])
    update_shape = [next(w) if d in window_dims else next(b) for d in range(rank)]
    fn, oracle = SCATTERS[kind]
    op = ops.Scatter(fn, update_window_dims=window_dims, inserted_window_dims=inserted,
                     scatter_dims_to_operand_dims=layout["mapped"],
                     index_vector_dim=layout["ivd"], input_batching_dims=batching,
                     scatter_indices_batching_dims=layout["own_batching"])
    # Repeated starts and windows outside the operand (skipped, as jax's FILL_OR_DROP).
    jax_idx, idx = _indices(layout, window_sizes, 1, seed=9)
    dn = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(window_dims), inserted_window_dims=inserted,
        scatter_dims_to_operand_dims=layout["mapped"], operand_batching_dims=batching,
        scatter_indices_batching_dims=layout["jax_batching"])
    rng = np.random.default_rng(10)
    x, updates = _random(rng, shape, dtype), _random(rng, update_shape, dtype)
    check(op, [x, idx, updates], (0, 2),
          lambda x, u: oracle(x, jax_idx, u, dn, mode="drop"))


def test_scatter_overwrite_gives_repeated_rows_to_the_update_that_lands():
    # Rows 0 and 2 are written twice; the update that XLA applies last takes the cotangent.
    x = np.zeros((3, 2))
    idx, updates = np.int32([[0], [2], [0], [2], [5]]), np.arange(10.0).reshape(5, 2)
    op = ops.Scatter(_overwrite, (1,), (0,), (0,), 1)
    out, pullback = hd.vjp(lambda x, u: op(x, hd.array(idx), u), hd.array(x),
                           hd.array(updates))
    won = [int(np.flatnonzero((updates == row).all(1))[0]) for row in np.asarray(out)[[0, 2]]]
    g_x, g_u = pullback(hd.array(np.ones((3, 2))))
    np.testing.assert_array_equal(np.asarray(g_x), [[0, 0], [1, 1], [0, 0]])
    expect = np.zeros((5, 2))
    expect[won] = 1  # never the dropped row 4, never the overwritten ones
    np.testing.assert_array_equal(np.asarray(g_u), expect)


def test_scatter_with_other_combiners_says_what_is_differentiated():
    op = ops.Scatter(_multiply, (), (0,), (0,), 1)
    f = lambda x: xp.sum(op(x, hd.array(np.int32([[1]])), hd.array(np.float64([2.0]))))
    with pytest.raises(NotImplementedError, match="add or overwrite.*custom_vjp"):
        hd.grad(f)(hd.array(np.ones(3)))


# -- sort and top-k ---------------------------------------------------------------------

def _lt(a, b):
    return ops.Compare("LT")(a, b)


def _lt_first(a, b, *rest):
    return ops.Compare("LT")(a, b)


def _lt_first_of_3(a, b, c, d, e, f):
    return ops.Compare("LT")(a, b)


@SETTINGS
@given(shapes(), st.sampled_from(FLOATS), st.booleans(), st.data())
def test_sort_keys_and_values(shape, dtype, stable, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(11)
    keys, values = _random(rng, shape, dtype), _random(rng, shape, dtype)
    check(ops.Sort(_lt, dim, stable), [keys], (0,),
          lambda k: lax.sort(k, dimension=dim, is_stable=stable))
    check(ops.Sort(_lt_first, dim, stable), [keys, values], (0, 1),
          lambda k, v: lax.sort((k, v), dimension=dim, is_stable=stable, num_keys=1)[1],
          pick=1)


@SETTINGS
@given(shapes(), st.sampled_from(FLOATS), st.data())
def test_sort_by_integer_keys_with_ties_carries_values_stably(shape, dtype, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(12)
    keys = rng.integers(0, 3, shape).astype(np.int32)
    a, b = _random(rng, shape, dtype), _random(rng, shape, dtype)
    op = ops.Sort(_lt_first_of_3, dim, True)
    check(op, [keys, a, b], (1, 2),
          lambda a, b: lax.sort((jnp.asarray(keys), a, b), dimension=dim, is_stable=True,
                                num_keys=1)[2], pick=2)


@SETTINGS
@given(shapes(), st.sampled_from(FLOATS), st.booleans(), st.data())
def test_top_k_values(shape, dtype, largest, data):
    k = data.draw(st.integers(0, shape[-1]))
    x = _random(np.random.default_rng(13), shape, dtype)
    sign = 1 if largest else -1
    check(ops.TopK(k, largest), [x], (0,), lambda x: sign * lax.top_k(sign * x, k)[0],
          pick=0)


# -- element-type ops -------------------------------------------------------------------

@SETTINGS
@given(shapes(), st.sampled_from(FLOATS), st.sampled_from([(5, 10), (8, 7), (4, 3)]))
def test_reduce_precision_passes_the_rounded_cotangent(shape, dtype, bits):
    x = _random(np.random.default_rng(14), shape, dtype)
    check(ops.ReducePrecision(*bits), [x], (0,), lambda x: lax.reduce_precision(x, *bits),
          fd=False)  # a step function of x: no finite difference


@SETTINGS
@given(shapes(), st.sampled_from([np.complex64, np.complex128]))
def test_real_imag_and_complex_follow_jax(shape, dtype):
    rng = np.random.default_rng(15)
    z = _random(rng, shape, dtype)
    part = np.float32 if dtype == np.complex64 else np.float64
    re, im = _random(rng, shape, part), _random(rng, shape, part)
    check(ops.Real(), [z], (0,), lax.real)
    check(ops.Imag(), [z], (0,), lax.imag)
    check(ops.Complex(), [re, im], (0, 1), lax.complex)


def test_real_and_imag_of_a_real_array():
    x = np.float64([1.0, -2.0])
    check(ops.Real(), [x], (0,), lambda x: x * 1)
    _, pullback = hd.vjp(ops.Imag(), hd.array(x))
    np.testing.assert_array_equal(np.asarray(pullback(hd.array(np.ones(2)))[0]), [0, 0])


def _sin_times(a, b):
    return ops.Add()(ops.Multiply()(ops.Sine()(a), b), a)


@SETTINGS
@given(shapes(0), st.sampled_from(FLOATS))
def test_map_differentiates_its_computation(shape, dtype):
    rng = np.random.default_rng(16)
    a, b = _random(rng, shape, dtype), _random(rng, shape, dtype)
    check(ops.Map(_sin_times), [a, b], (0, 1), lambda a, b: jnp.sin(a) * b + a)


def test_map_second_derivative():
    x = np.float64([0.5, -1.0, 2.0])
    cube = lambda a: ops.Multiply()(a, ops.Multiply()(a, a))
    f = lambda x: xp.sum(ops.Map(cube)(x))
    np.testing.assert_allclose(np.asarray(hd.hessian(f)(hd.array(x))), np.diag(6 * x))


# -- ops without a derivative -------------------------------------------------------

def test_bitcast_and_rounding_have_zero_derivative():
    x = np.float64([0.5, 1.5, -2.5, 3.25])

    def f(x, xp_, bitcast, rnd):
        return xp_.sum(x * bitcast(x) * rnd(x))

    ours = hd.grad(lambda x: f(x, xp, lambda v: ops.Convert(np.float64)(
        ops.BitcastConvert(np.int64)(v)), ops.RoundNearestAfz()))
    want = jax.grad(lambda x: f(x, jnp, lambda v: lax.convert_element_type(
        lax.bitcast_convert_type(v, np.int64), np.float64),
        lambda v: lax.round(v, lax.RoundingMethod.AWAY_FROM_ZERO)))(x)
    np.testing.assert_allclose(np.asarray(ours(hd.array(x))), want, rtol=1e-12)


def test_random_draws_and_ids_take_no_cotangent():
    a, b = hd.array(np.float32(0.0)), hd.array(np.float32(1.0))

    def f(a, b):
        u = ops.Rng("uniform", (3,))(a, b)
        return xp.sum(u) + a * 2.0

    g_a, g_b = hd.compile(hd.grad(f, argnums=(0, 1)))(a, b)
    assert (float(g_a), float(g_b)) == (2.0, 0.0)
    for op in (ops.Iota(hd.float32, (2,)), ops.ReplicaId(), ops.PartitionId(),
               ops.AfterAll()):
        assert hd.vjp_rule(op, None, None) == ()


def test_optimization_barrier_is_the_identity_for_each_value():
    x = np.float64([0.5, -1.0])

    def f(x):
        y, n = ops.OptimizationBarrier()(ops.Sine()(x), hd.array(np.int32(3)))
        return xp.sum(y * y)

    want = jax.grad(lambda x: jnp.sum(jnp.sin(x) ** 2))(x)
    np.testing.assert_allclose(np.asarray(hd.grad(f)(hd.array(x))), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(hd.compile(hd.grad(f))(hd.array(x))), want,
                               rtol=1e-12)
    t = hd.jvp(f, (hd.array(x),), (hd.array(np.ones(2)),))[1]
    np.testing.assert_allclose(float(t), want.sum(), rtol=1e-12)


def test_optimization_barrier_with_a_token_under_grad():
    def f(x):
        y, _ = ops.OptimizationBarrier()(ops.Sine()(x), ops.AfterAll()())
        return xp.sum(y)

    x = np.float64([0.5, -1.0])
    np.testing.assert_allclose(np.asarray(hd.compile(hd.grad(f))(hd.array(x))), np.cos(x))


def test_custom_call_says_to_use_custom_vjp():
    call = ops.CustomCall("no_such_target", ArrayType(hd.float64, (2,)))
    with pytest.raises(NotImplementedError, match="custom_vjp"):
        hd.compile(hd.grad(lambda x: xp.sum(call(x))))(hd.array(np.ones(2)))


# -- second order ------------------------------------------------------------------------

def _chain(x, lib):
    """sort, pad, gather-like take, slice, concatenate, reverse: a second-order workout."""
    if lib is jnp:
        s = jnp.sort(x, axis=1)
        p = lax.pad(s * s * s, 0.0, ((1, 0, 0), (0, 1, 1)))
        rows = p[jnp.clip(jnp.array([2, 0, 9]), 0, p.shape[0] - 1)]
        c = jnp.concatenate([rows[:, ::2], lax.rev(rows, (1,))], 1)
        return jnp.sum(c * jnp.sin(c))
    s = ops.Sort(_lt, 1, True)(x)
    p = ops.Pad((1, 0), (0, 1), (0, 1))(s * s * s, hd.array(0.0))
    take = ops.Gather(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,),
                      index_vector_dim=1, slice_sizes=(1, p.shape[1]))
    rows = take(p, hd.array(np.int32([[2], [0], [9]])))
    n = rows.shape[1]
    c = ops.Concatenate(1)(ops.Slice((0, 0), (3, n), (1, 2))(rows), ops.Reverse((1,))(rows))
    return xp.sum(c * xp.sin(c))


HESSIAN = hd.compile(hd.hessian(lambda x: _chain(x, xp)))


def test_hessian_through_data_movement_equals_jax():
    x = np.random.default_rng(17).standard_normal((3, 2))
    want = jax.jit(jax.hessian(lambda x: _chain(x, jnp)))(x)
    np.testing.assert_allclose(np.asarray(HESSIAN(hd.array(x))), want, rtol=1e-10, atol=1e-10)
    t = np.random.default_rng(18).standard_normal((3, 2))  # one column, eagerly
    got = hd.hvp(lambda x: _chain(x, xp), (hd.array(x),), (hd.array(t),))
    np.testing.assert_allclose(np.asarray(got), np.tensordot(want, t, 2), rtol=1e-10,
                               atol=1e-10)


def test_grad_of_grad_through_scatter_and_dynamic_update_slice():
    x = np.float64([0.3, -0.7, 1.1, 2.0])
    idx = np.int32([[1], [3], [1]])
    op = ops.Scatter(_add, (), (0,), (0,), 1)

    def f(x, lib):
        if lib is jnp:
            y = jnp.zeros(4).at[idx[:, 0]].add(x[:3] ** 2)
            y = lax.dynamic_update_slice(y, x[1:3] * x[0], (1,))
            return jnp.sum(jnp.sin(y) * x)
        sq = ops.Slice((0,), (3,))(x)
        y = op(xp.zeros(4, dtype=xp.float64), hd.array(idx), sq * sq)
        y = ops.DynamicUpdateSlice()(y, ops.Slice((1,), (3,))(x) * x[0], hd.array(np.int32(1)))
        return xp.sum(xp.sin(y) * x)

    want = jax.jit(jax.grad(lambda x: jnp.sum(jax.grad(lambda x: f(x, jnp))(x) ** 2)))(x)
    got = hd.grad(lambda x: xp.sum(hd.grad(lambda x: f(x, xp))(x) ** 2))(hd.array(x))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)
