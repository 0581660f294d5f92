"""``ops.RaggedDot`` (CHLO's ragged_dot) in its three modes, against ``jax.lax.ragged_dot_general``
(a test oracle only) and the op's numpy loop over groups: element types, group sizes
that sum to less than or exactly the ragged dimension, empty groups, per-prefix
group sizes; shape-rule errors; gradients against jax.grad; vmap against a loop.

jax is the oracle on its CPU device (``cpu_oracle``): on a GPU, jax 0.11's own
ragged_dot fails to compile batched and reordered dimension numbers (XLA:GPU's
ragged_dot_rewriter) and runs f32 in TF32; hlodsl's op is a masked dense dot there too.
"""

import hlodsl.stdlib as xp
import jax
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import hlodsl as hd
from hlodsl import ops
from platform_rules import cpu_oracle

COVERED_OPCODES = {"ragged-dot"}

RNG = np.random.default_rng(19)

# name: (lhs shape, rhs shape, group_sizes prefix shape or None for [g], static fields)
M1 = {"lhs_contracting": (1,), "rhs_contracting": (1,), "lhs_ragged_dims": (0,),
      "rhs_group_dims": (0,)}
M1_BATCH = {"lhs_contracting": (2,), "rhs_contracting": (2,), "lhs_batch": (0,), "rhs_batch": (1,),
                "lhs_ragged_dims": (1,), "rhs_group_dims": (0,)}
# lhs [k, b, m], rhs [b, n, g, k]: every dimension out of its usual place
M1_SHUFFLED = {"lhs_contracting": (0,), "rhs_contracting": (3,), "lhs_batch": (1,),
               "rhs_batch": (0,),
                   "lhs_ragged_dims": (2,), "rhs_group_dims": (2,)}
M2 = {"lhs_contracting": (2,), "rhs_contracting": (1,), "lhs_batch": (0,), "rhs_batch": (0,),
          "lhs_ragged_dims": (2,)}
# two contracting dims, the ragged one second: group_sizes' prefix is the first
M2_TWO_K = {"lhs_contracting": (1, 2), "rhs_contracting": (0, 1), "lhs_ragged_dims": (2,)}
M3 = {"lhs_contracting": (2,), "rhs_contracting": (1,), "lhs_batch": (0,), "rhs_batch": (0,),
          "lhs_ragged_dims": (0,)}

CASES = {
    "mode1": ((11, 5), (3, 5, 7), None, M1),
    "mode1-batch": ((2, 11, 5), (3, 2, 5, 7), None, M1_BATCH),
    "mode1-batch-per-prefix": ((2, 11, 5), (3, 2, 5, 7), (2,), M1_BATCH),
    "mode1-shuffled": ((5, 2, 6), (2, 4, 3, 5), (2,), M1_SHUFFLED),
    "mode2": ((2, 3, 8), (2, 8, 4), None, M2),
    "mode2-per-prefix": ((2, 3, 8), (2, 8, 4), (2,), M2),
    "mode2-two-k": ((3, 4, 6), (4, 6, 5), (4,), M2_TWO_K),
    "mode3": ((4, 3, 5), (4, 5, 2), None, M3),
}


def _sizes(n: int, g: int, total: int, prefix=()) -> np.ndarray:
    """Random group sizes summing to ``total`` (<= n), some groups empty."""
    out = np.zeros(tuple(prefix) + (g,), np.int32)
    for idx in np.ndindex(*prefix):
        cuts = np.sort(RNG.integers(0, total + 1, g - 1))
        out[idx] = np.diff(np.concatenate([[0], cuts, [total]]))
    return out


def _draw(name, dtype, full: bool):
    lhs_shape, rhs_shape, prefix, static = CASES[name]
    ragged = static["lhs_ragged_dims"][0]
    g = rhs_shape[static["rhs_group_dims"][0]] if "rhs_group_dims" in static else 3
    n = lhs_shape[ragged]
    total = n if full else n - 2
    gs = _sizes(n, g, total, prefix or ())
    if dtype == np.int32:
        lhs, rhs = (RNG.integers(-5, 6, s).astype(dtype) for s in (lhs_shape, rhs_shape))
    else:
        lhs, rhs = (RNG.standard_normal(s).astype(dtype) for s in (lhs_shape, rhs_shape))
    return lhs, rhs, gs, static


@cpu_oracle
def _jax(lhs, rhs, gs, static):
    """jax's ragged_dot_general as numpy (bfloat16 operands in f32: values, not rounding)."""
    f32 = lambda a: a.astype(np.float32) if a.dtype == ml_dtypes.bfloat16 else a
    return np.asarray(_jax_traced(f32(lhs), f32(rhs), gs, static))


def _jax_traced(lhs, rhs, gs, static):
    get = lambda k: static.get(k, ())
    dn = lax.RaggedDotDimensionNumbers(
        dot_dimension_numbers=((get("lhs_contracting"), get("rhs_contracting")),
                               (get("lhs_batch"), get("rhs_batch"))),
        lhs_ragged_dimensions=static["lhs_ragged_dims"],
        rhs_group_dimensions=get("rhs_group_dims"))
    return lax.ragged_dot_general(lhs, rhs, gs, dn)


TOL = {np.float32: 1e-5, np.float64: 1e-12, ml_dtypes.bfloat16: 3e-2, np.int32: 0}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, ml_dtypes.bfloat16, np.int32],
                         ids=["f32", "f64", "bf16", "s32"])
@pytest.mark.parametrize("full", [True, False], ids=["sum-is-n", "sum-below-n"])
def test_matches_jax_and_the_numpy_loop(name, dtype, full):
    lhs, rhs, gs, static = _draw(name, dtype, full)
    op = ops.RaggedDot(**static)
    got = op(hd.array(lhs), hd.array(rhs), hd.array(gs))
    want = _jax(lhs, rhs, gs, static)
    assert got.shape == want.shape and got.dtype.np_dtype == lhs.dtype
    tol = TOL[dtype] * max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), want, rtol=0, atol=tol)
    np.testing.assert_allclose(op.reference(lhs, rhs, gs).astype(np.float64), want,
                               rtol=0, atol=tol)


def test_rows_past_the_groups_are_zero_and_empty_groups_contribute_nothing():
    lhs, rhs = np.ones((6, 2), np.float32), np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    gs = np.int64([2, 0, 1])  # rows 0-1: group 0, row 2: group 2, rows 3-5: none
    got = np.asarray(ops.RaggedDot(**M1)(hd.array(lhs), hd.array(rhs), hd.array(gs)))
    np.testing.assert_array_equal(got[:2], [rhs[0].sum(0)] * 2)
    np.testing.assert_array_equal(got[2], rhs[2].sum(0))
    np.testing.assert_array_equal(got[3:], 0)
    k = ops.RaggedDot(lhs_contracting=(1,), rhs_contracting=(0,), lhs_ragged_dims=(1,))
    got = np.asarray(k(hd.array(np.ones((1, 6), np.float32)), hd.array(np.ones((6, 1), np.float32)),
                       hd.array(gs)))
    np.testing.assert_array_equal(got[:, 0, 0], [2, 0, 1])  # k past the sum adds nothing


def test_no_groups_gives_zeros_or_an_empty_result():
    gs = hd.array(np.zeros((0,), np.int32))
    one = ops.RaggedDot(**M1)(hd.array(np.ones((4, 3), np.float32)),
                              hd.array(np.ones((0, 3, 2), np.float32)), gs)
    np.testing.assert_array_equal(np.asarray(one), np.zeros((4, 2), np.float32))
    two = ops.RaggedDot(lhs_contracting=(1,), rhs_contracting=(0,), lhs_ragged_dims=(1,))(
        hd.array(np.ones((2, 3))), hd.array(np.ones((3, 4))), gs)
    assert two.shape == (0, 2, 4) and two.dtype is hd.float64


def test_staged_equals_eager_and_preferred_element_type():
    lhs, rhs, gs, static = _draw("mode1-batch-per-prefix", ml_dtypes.bfloat16, False)
    op = ops.RaggedDot(**static, preferred_element_type=hd.float32)
    args = [hd.array(a) for a in (lhs, rhs, gs)]
    eager = op(*args)
    assert eager.dtype is hd.float32
    np.testing.assert_array_equal(np.asarray(hd.compile(lambda *xs: op(*xs))(*args)),
                                  np.asarray(eager))
    np.testing.assert_allclose(np.asarray(eager), _jax(lhs, rhs, gs, static), atol=1e-5)


def _types(*shapes_dtypes):
    return [hd.array(np.zeros(s, d)) for s, d in shapes_dtypes]


F, I = np.float32, np.int32
BAD = [
    (M1, [((4, 5), F), ((2, 5, 7), F), ((3,), I)], (r"rhs group dimension 0 has size 2, "
     r"group_sizes has 3 groups")),
    (dict(M1, rhs_group_dims=()), [((4, 5), F), ((3, 5, 7), F), ((3,), I)],
     "needs exactly one rhs group dimension"),
    (dict(M2, rhs_group_dims=(2,)), [((2, 3, 8), F), ((2, 8, 4), F), ((3,), I)],
     "takes no rhs group dimension"),
    (M1, [((4, 5), F), ((3, 5, 7), F), ((3,), F)], "group_sizes must be integers"),
    (M1, [((4, 5), F), ((3, 5, 7), F), ((), I)], "rank >= 1"),
    (M2, [((2, 3, 8), F), ((2, 8, 4), F), ((3, 3), I)], r"must have shape \[2, 3\]"),
    (M1, [((4, 6), F), ((3, 5, 7), F), ((3,), I)], "contracting dimension sizes differ"),
    (M1, [((4, 5), F), ((3, 5, 7), np.float64), ((3,), I)], "same element type"),
    (dict(M1, lhs_ragged_dims=(4,)), [((4, 5), F), ((3, 5, 7), F), ((3,), I)],
     "lhs ragged dimension 4 out of range"),
    (dict(M1, rhs_group_dims=(5,)), [((4, 5), F), ((3, 5, 7), F), ((3,), I)],
     r"rhs group dimensions \(5,\) out of range"),
]


@pytest.mark.parametrize("static, args, message", BAD, ids=[m[:30] for _, _, m in BAD])
def test_shape_rule_names_the_op_and_the_shapes(static, args, message):
    with pytest.raises(hd.ShapeError, match=message) as e:
        ops.RaggedDot(**static)(*_types(*args))
    assert "RaggedDot(" in str(e.value) and "f32[" in str(e.value)


def test_static_operands_checked_at_construction():
    with pytest.raises(ValueError, match="exactly one"):
        ops.RaggedDot(**dict(M1, lhs_ragged_dims=(0, 1)))
    with pytest.raises(ValueError, match="repeats"):  # group dim is also a contracting dim
        ops.RaggedDot(**dict(M1, rhs_group_dims=(1,)))


def _central_differences(f, x, h=1e-3):
    """df/dx of a scalar numpy function, entry by entry (exact up to rounding: f is linear in x)."""
    out = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


@pytest.mark.parametrize("name", ["mode1-batch-per-prefix", "mode1-shuffled", "mode2-per-prefix",
                                  "mode2-two-k", "mode3"])
def test_grad_matches_central_differences_and_jax(name):
    lhs, rhs, gs, static = _draw(name, np.float64, False)
    op = ops.RaggedDot(**static)
    w = RNG.standard_normal(_jax(lhs, rhs, gs, static).shape)

    def loss(a, b, g):
        return xp.sum(op(a, b, g) * hd.array(w))

    got = hd.grad(loss, argnums=(0, 1))(hd.array(lhs), hd.array(rhs), hd.array(gs))
    fd = (_central_differences(lambda a: (op.reference(a, rhs, gs) * w).sum(), lhs),
          _central_differences(lambda b: (op.reference(lhs, b, gs) * w).sum(), rhs))
    for g_, want in zip(got, fd):
        np.testing.assert_allclose(np.asarray(g_), want, rtol=1e-8, atol=1e-9)
    if op.mode == 1:  # jax 0.10 has no ragged-batch vjp, nor a ragged-contracting rhs one
        want = cpu_oracle(jax.grad(lambda a, b: (_jax_traced(a, b, gs, static) * w).sum(),
                                   argnums=(0, 1)))(lhs, rhs)
        for g_, w_ in zip(got, want):
            np.testing.assert_allclose(np.asarray(g_), np.asarray(w_), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["mode1", "mode2", "mode3"])
@pytest.mark.parametrize("axes", [(0, 0, 0), (0, None, None), (None, 0, 0), (1, None, 0)])
def test_vmap_equals_the_loop(name, axes):
    b = 3
    draws = [_draw(name, np.float32, False) for _ in range(b)]
    static = draws[0][3]
    args = [np.stack([d[i] for d in draws], axis=ax) if ax is not None else draws[0][i]
            for i, ax in enumerate(axes)]
    op = ops.RaggedDot(**static)
    got = np.asarray(hd.vmap(lambda *xs: op(*xs), in_axes=axes)(*[hd.array(a) for a in args]))
    for j in range(b):
        one = [np.take(a, j, axis=ax) if ax is not None else a for a, ax in zip(args, axes)]
        np.testing.assert_allclose(got[j], np.asarray(op(*[hd.array(a) for a in one])),
                                   rtol=1e-6, atol=1e-6)
