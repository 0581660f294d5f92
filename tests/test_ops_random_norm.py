"""Random-number ops and batch normalisation, against jax.lax and numpy references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax

import hlodsl as hd
from hlodsl import ops

COVERED_OPCODES = {"rng", "rng-bit-generator", "batch-norm-training", "batch-norm-inference",
                   "batch-norm-grad"}

# XLA expands batch norm with var = E[x^2] - E[x]^2, which cancels digits the
# two-pass numpy formula keeps: seen up to 3e-8 relative in f64 and 2e-5 in
# f32 on small batches, so errors are bounded relative to the largest value.
TOL = {np.float32: 1e-3, np.float64: 1e-6}
ALGORITHMS = {"three_fry": lax.RandomAlgorithm.RNG_THREE_FRY,
              "philox": lax.RandomAlgorithm.RNG_PHILOX}


def _both(op, *arrays):
    """The op eagerly and staged; each result as a list of numpy arrays."""
    outs = []
    for run in (op, hd.compile(lambda *xs: op(*xs))):
        r = run(*arrays)
        outs.append([np.asarray(v) for v in (r if isinstance(r, tuple) else (r,))])
    return outs


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["three_fry", "philox"]), st.sampled_from([np.uint32, np.uint64]),
       st.lists(st.integers(0, 4), min_size=0, max_size=3), st.integers(0, 2**63))
def test_rng_bit_generator_matches_jax_bit_for_bit(algorithm, dtype, shape, seed):
    key = np.uint64([seed, seed // 3])
    op = ops.RngBitGenerator(algorithm, tuple(shape), dtype)
    j_state, j_bits = lax.rng_bit_generator(jnp.asarray(key), tuple(shape), dtype,
                                            algorithm=ALGORITHMS[algorithm])
    for state, bits in _both(op, hd.array(key)):
        np.testing.assert_array_equal(bits, np.asarray(j_bits))
        np.testing.assert_array_equal(state, np.asarray(j_state))
        assert bits.dtype == dtype and bits.shape == tuple(shape)


def test_rng_bit_generator_threads_state_in_a_staged_loop_body():
    def two_draws(key):
        key, a = ops.RngBitGenerator("three_fry", (4,), hd.uint32)(key)
        key, b = ops.RngBitGenerator("three_fry", (4,), hd.uint32)(key)
        return a, b

    a, b = hd.compile(two_draws)(hd.array(np.uint64([1, 2])))
    assert not np.array_equal(np.asarray(a), np.asarray(b))


def test_rng_uniform_and_normal_have_the_right_statistics():
    lo, hi = hd.array(np.float32(2)), hd.array(np.float32(3))
    for run in (ops.Rng("uniform", (20000,)), hd.compile(lambda a, b: ops.Rng("uniform", (20000,))(a, b))):
        u = np.asarray(run(lo, hi))
        assert u.dtype == np.float32 and u.min() >= 2 and u.max() < 3
        assert abs(u.mean() - 2.5) < 0.02 and abs(u.var() - 1 / 12) < 0.01
    n = np.asarray(ops.Rng("normal", (20000,))(hd.array(1.0), hd.array(2.0)))
    assert abs(n.mean() - 1) < 0.1 and abs(n.std() - 2) < 0.1


def test_two_rng_calls_are_two_draws_not_one_shared_node():
    def f(a, b):
        op = ops.Rng("uniform", (8,))
        return op(a, b), op(a, b)

    x, y = hd.compile(f)(hd.array(np.float32(0)), hd.array(np.float32(1)))
    assert not np.array_equal(np.asarray(x), np.asarray(y))


def test_bad_random_operands():
    with pytest.raises(ValueError, match="distribution"):
        ops.Rng("cauchy", (2,))
    with pytest.raises(ValueError, match="algorithm"):
        ops.RngBitGenerator("mersenne", (2,))
    with pytest.raises(ValueError, match="unsigned"):
        ops.RngBitGenerator("philox", (2,), hd.int32)
    with pytest.raises(hd.ShapeError, match=r"RngBitGenerator.*u64\[5\]"):
        ops.RngBitGenerator("three_fry", (2,))(hd.array(np.uint64([1, 2, 3, 4, 5])))
    with pytest.raises(hd.ShapeError, match=r"Rng.*scalars"):
        ops.Rng("uniform", (2,))(hd.array(np.float32([0, 1])), hd.array(np.float32(1)))
    with pytest.raises(hd.ShapeError, match="floating-point"):
        ops.Rng("normal", (2,))(hd.array(np.int32(0)), hd.array(np.int32(1)))


shapes = st.lists(st.integers(1, 4), min_size=2, max_size=4)


@settings(max_examples=12, deadline=None)
@given(shapes, st.sampled_from([np.float32, np.float64]), st.data())
def test_batch_norm_ops_match_the_numpy_formulas(shape, dtype, data):
    fi = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(len(shape) * 10 + fi)
    x = rng.standard_normal(shape).astype(dtype)
    f = shape[fi]
    scale, offset = rng.uniform(0.5, 2, f).astype(dtype), rng.standard_normal(f).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    eps = 1e-3
    train, infer, back = (ops.BatchNormTraining(eps, fi), ops.BatchNormInference(eps, fi),
                          ops.BatchNormGrad(eps, fi))
    expect = train.reference(x, scale, offset)
    mean, var = expect[1], expect[2]
    cases = [(train, (x, scale, offset), expect),
             (infer, (x, scale, offset, mean, var), [infer.reference(x, scale, offset, mean, var)]),
             (back, (x, scale, mean, var, grad), back.reference(x, scale, mean, var, grad))]
    for op, args, ref in cases:
        for got in _both(op, *(hd.array(a) for a in args)):
            for g, r in zip(got, ref):
                assert g.dtype == dtype and g.shape == np.shape(r)
                np.testing.assert_allclose(g, r, rtol=0, atol=TOL[dtype] * max(1, np.abs(r).max()))


def test_batch_norm_grad_agrees_with_jax_autodiff():
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((6, 3)).astype(np.float64), rng.standard_normal((6, 3))
    scale, offset = rng.uniform(0.5, 2, 3), rng.standard_normal(3)
    eps = 1e-3

    def bn(x, scale, offset):
        mean, var = x.mean(0), x.var(0)
        return (x - mean) / jnp.sqrt(var + eps) * scale + offset

    _, vjp = jax.vjp(bn, x, scale, offset)
    jx, js, jo = vjp(g)
    _, mean, var = ops.BatchNormTraining(eps, 1)(*(hd.array(a) for a in (x, scale, offset)))
    gx, gs, go = ops.BatchNormGrad(eps, 1)(hd.array(x), hd.array(scale), mean, var, hd.array(g))
    for ours, theirs in ((gx, jx), (gs, js), (go, jo)):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=TOL[np.float64],
                                   atol=TOL[np.float64])


def test_bad_batch_norm_operands():
    x = hd.array(np.ones((2, 3), np.float32))
    v3, v2 = hd.array(np.ones(3, np.float32)), hd.array(np.ones(2, np.float32))
    with pytest.raises(hd.ShapeError, match=r"BatchNormTraining.*f32\[2,3\].*per-feature"):
        ops.BatchNormTraining(1e-3, 1)(x, v2, v2)
    with pytest.raises(hd.ShapeError, match="feature_index"):
        ops.BatchNormTraining(1e-3, 2)(x, v3, v3)
    with pytest.raises(hd.ShapeError, match="floating-point"):
        ops.BatchNormInference(1e-3, 0)(hd.array(np.ones((2, 3), np.int32)), *[v2] * 4)
