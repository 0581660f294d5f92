"""The split pass: programs too large for a memory limit run in slices, with the same results.

Each model is compiled twice, unsplit and under a memory limit a few times
smaller than its largest intermediate, on hypothesis-drawn sizes; the split
program must report a loop, stay under the limit by XLA's own count in one
compile (the cost model's slices fit; no recompiling), and equal the unsplit
one, forward and gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.transforms.passes import PassContext
from hlodsl.transforms.passes.split import Split
from hlodsl.ir.staging import stage

SPLIT = [Split()]
FEW = settings(max_examples=6, deadline=None)


def _leaves(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def check_split(fn, args, limit: int, rtol: float):
    """``fn`` under ``limit`` is split, fits, and equals ``fn`` unsplit."""
    split = hd.compile(fn, memory_limit=limit, passes=SPLIT)
    assert "slices of" in split.report(*args), split.report(*args)
    assert split.memory_stats(*args)["temp_size_in_bytes"] <= limit
    # The cost model sizes the slices: one compile, no recompiling to fit.
    memory = split.entry(*args).reports[-1]
    assert memory.compiles == 1, split.report(*args)
    assert memory.estimate is not None and memory.temp == split.memory_stats(*args)[
        "temp_size_in_bytes"]
    for got, want in zip(_leaves(split(*args)), _leaves(hd.compile(fn)(*args)), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol,
                                   atol=rtol * float(np.abs(np.asarray(want)).max(initial=1)))
    return split


def sq_dist(a, b):
    return xp.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)


def kernel_matvec(x, v, ls):
    return xp.exp(-sq_dist(x, x) / (2 * ls * ls)) @ v


def attention(q, k, v):
    s = q @ xp.matrix_transpose(k) / np.float32(np.sqrt(q.shape[-1]))
    p = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
    return (p / xp.sum(p, axis=-1, keepdims=True)) @ v


def nbytes(x) -> int:
    return np.asarray(x).nbytes


def rng_array(seed, shape, dtype=np.float64):
    return hd.array(np.random.default_rng(seed).normal(size=shape).astype(dtype))


@FEW
@given(n=st.integers(200, 700), d=st.integers(1, 4), seed=st.integers(0, 99))
def test_kernel_row_sums_fill_their_result_slice_by_slice(n, d, seed):
    x = rng_array(seed, (n, d))
    check_split(lambda x: xp.sum(xp.exp(-sq_dist(x, x)), axis=1), (x,), n * n * d, 1e-12)


@FEW
@given(n=st.integers(200, 700), d=st.integers(1, 4), seed=st.integers(0, 99))
def test_column_sums_over_the_sliced_dimension_accumulate(n, d, seed):
    x = rng_array(seed, (n, d))
    check_split(lambda x: xp.sum(xp.exp(-sq_dist(x, x)), axis=0), (x,), n * n * d, 1e-12)


@FEW
@given(n=st.integers(200, 600), seed=st.integers(0, 99))
def test_max_over_the_sliced_dimension_accumulates(n, seed):
    x = rng_array(seed, (n, 3))
    check_split(lambda x: xp.max(xp.sin(x[:, None, 0] * x[None, :, 1]), axis=0), (x,),
                n * n * 2, 1e-12)


@FEW
@given(n=st.integers(200, 600), seed=st.integers(0, 99))
def test_kernel_matvec_and_its_gradient(n, seed):
    x, v, ls = rng_array(seed, (n, 3)), rng_array(seed + 1, (n,)), hd.array(np.float64(0.7))
    limit = n * n * 8 // 2
    check_split(kernel_matvec, (x, v, ls), limit, 1e-12)
    loss = hd.grad(lambda x, v, ls: xp.sum(kernel_matvec(x, v, ls) ** 2), argnums=(0, 1, 2))
    check_split(loss, (x, v, ls), 3 * limit, 1e-10)


@FEW
@given(n=st.sampled_from([256, 384, 500]), heads=st.integers(1, 2), seed=st.integers(0, 99))
def test_attention_forward_and_backward(n, heads, seed):
    q, k, v, w = (rng_array(seed + i, (1, heads, n, 32), np.float32) for i in range(4))
    scores = heads * n * n * 4
    check_split(attention, (q, k, v), scores // 2 + 4 * nbytes(q), 1e-4)
    grad = hd.grad(lambda q, k, v, w: xp.sum(attention(q, k, v) * w), argnums=(0, 1, 2))
    check_split(grad, (q, k, v, w), scores + 12 * nbytes(q), 1e-4)


@FEW
@given(nq=st.integers(20, 80), n=st.integers(500, 3000), seed=st.integers(0, 99))
def test_knn_top_k_matches_the_naive_program(nq, n, seed):
    qs, pts = rng_array(seed, (nq, 16), np.float32), rng_array(seed + 1, (n, 16), np.float32)
    fn = lambda q, p: xp.top_k(-sq_dist(q, p), 5)  # noqa: E731
    split = check_split(fn, (qs, pts), nq * n * 16 * 4 // 4 + 2 * nbytes(pts), 1e-5)
    want = np.argsort(((np.asarray(qs)[:, None] - np.asarray(pts)[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(np.asarray(split(qs, pts)[1]), want[:, :5])


def sgpr_bound(params, x, y, z):
    """Titsias' collapsed bound (negated) of a sparse GP with an SE kernel."""
    ls, var, noise = params[0], params[1], params[2]
    m, n = z.shape[0], x.shape[0]

    def k(a, b):
        return var * xp.exp(-0.5 * sq_dist(a, b) / (ls * ls))

    chol = xp.linalg.cholesky(k(z, z) + 1e-6 * xp.eye(m))
    a = xp.linalg.solve_triangular(chol, k(z, x), lower=True) / xp.sqrt(noise)
    aat = a @ xp.matrix_transpose(a)
    lb = xp.linalg.cholesky(xp.eye(m) + aat)
    c = xp.linalg.solve_triangular(lb, a @ y, lower=True) / xp.sqrt(noise)
    bound = -0.5 * n * xp.log(2 * np.pi * noise) - xp.sum(xp.log(xp.linalg.diagonal(lb)))
    bound = bound - 0.5 * xp.sum(y * y) / noise + 0.5 * xp.sum(c * c)
    return -(bound - 0.5 * n * var / noise + 0.5 * xp.linalg.trace(aat))


@settings(max_examples=3, deadline=None)
@given(n=st.integers(1500, 4000), m=st.integers(8, 40), seed=st.integers(0, 99))
def test_sparse_gp_bound_and_gradient_run_in_two_loops(n, m, seed):
    """The gradient needs the matrix twice, before and after a Cholesky of its Gram
    matrix: a second loop recomputes it."""
    x, y, z = rng_array(seed, (n, 2)), rng_array(seed + 1, (n,)), rng_array(seed + 2, (m, 2))
    p = hd.array(np.array([0.8, 1.2, 0.1]))
    limit = n * m * 8 * 2 // 3
    check_split(sgpr_bound, (p, x, y, z), limit + 8 * m * m * 8, 1e-9)
    grad = check_split(hd.grad(sgpr_bound, argnums=(0, 3)), (p, x, y, z),
                       3 * limit + 16 * m * m * 8, 1e-7)
    assert "loop 1" in grad.report(p, x, y, z)


def test_without_a_limit_split_changes_nothing():
    comp = stage(lambda x: xp.sum(x[:, None] * x[None, :]), (rng_array(0, (300,)),), {}
                 ).computation
    assert Split()(comp, PassContext(None)) == (comp, [])


def test_code_hlo_shows_the_loop():
    x = rng_array(0, (400, 2))
    text = hd.code_hlo(lambda x: xp.sum(xp.exp(-sq_dist(x, x)), axis=1), x,
                       memory_limit=400 * 400 * 2, passes=SPLIT)
    assert " while(" in text and "dynamic-update-slice(" in text


def test_what_cannot_be_split_is_named_in_the_error():
    x = rng_array(0, (600,))
    fn = lambda x: xp.sort(xp.reshape(x[:, None] * x[None, :], (-1,)))[:10]  # noqa: E731
    with pytest.raises(hd.MemoryLimitError) as e:
        hd.compile(fn, memory_limit="512KiB", passes=SPLIT)(x)
    text = str(e.value)
    assert "f64[600,600]" in text and "512.0 KiB" in text and "Raise the limit" in text


def test_the_default_pipeline_rewrites_distances_then_splits_the_dot():
    x, v, ls = rng_array(3, (900, 3)), rng_array(4, (900,)), hd.array(np.float64(0.5))
    f = hd.compile(kernel_matvec, memory_limit=900 * 900 * 8 // 4)
    np.testing.assert_allclose(np.asarray(f(x, v, ls)),
                               np.asarray(hd.compile(kernel_matvec)(x, v, ls)), rtol=1e-10)
    report = f.report(x, v, ls)
    assert "one dot" in report and "Dot -> f64[900,900]" in report and "slices of" in report


@FEW
@given(rows=st.integers(1, 4), n=st.integers(1500, 6000), k=st.integers(1, 12),
       seed=st.integers(0, 99))
def test_top_k_along_the_sliced_dimension_merges_slices(rows, n, k, seed):
    """Small integers: many ties, which must keep the lower index first, as unsplit."""
    x = hd.array(np.random.default_rng(seed).integers(0, 6, size=(rows, n)).astype(np.float32))
    fn = lambda x: xp.top_k(x * 2.0 + 1.0, k)  # noqa: E731
    split = hd.compile(fn, memory_limit=rows * n * 4, passes=SPLIT)
    assert "slices of" in split.report(x)
    for got, want in zip(split(x), hd.compile(fn)(x), strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@FEW
@given(n=st.integers(50_000, 200_000), largest=st.booleans(), seed=st.integers(0, 99))
def test_arg_max_over_the_split_dimension(n, largest, seed):
    """A variadic (value, index) reduction along the sliced dimension: each slice's
    arg-max merged with the best so far by the reduction's own computation; ties
    (small integers: many) keep the lower index, as unsplit."""
    rng = np.random.default_rng(seed)
    x = hd.array(rng.integers(0, 4, size=(1, 16)).astype(np.float32))
    y = hd.array(rng.integers(0, 4, size=(n, 16)).astype(np.float32))
    arg = xp.argmax if largest else xp.argmin
    fn = lambda x, y: arg(x @ xp.matrix_transpose(y) * 0.5 + 1.0, axis=1)  # noqa: E731
    limit = n * 4 // 2
    split = hd.compile(fn, memory_limit=limit, passes=SPLIT)
    report = split.report(x, y)
    assert "slices of" in report and "along dimension 1" in report, report
    assert split.memory_stats(x, y)["temp_size_in_bytes"] <= limit
    np.testing.assert_array_equal(np.asarray(split(x, y)), np.asarray(hd.compile(fn)(x, y)))


def test_attention_with_few_queries_and_a_million_keys_under_24_mib():
    """16 queries against 2**20 keys: the (16, 2**20) scores (64 MiB) never exist whole."""
    rng = np.random.default_rng(3)
    q = hd.array(rng.normal(size=(16, 8)).astype(np.float32))
    k, v = (hd.array(rng.normal(size=(2 ** 20, 8)).astype(np.float32)) for _ in range(2))
    limit = 24 * 2 ** 20
    split = hd.compile(attention, memory_limit=limit, passes=SPLIT)
    assert "slices of" in split.report(q, k, v)
    assert split.memory_stats(q, k, v)["temp_size_in_bytes"] <= limit
    np.testing.assert_allclose(np.asarray(split(q, k, v)),
                               np.asarray(hd.compile(attention)(q, k, v)), rtol=1e-4, atol=1e-6)
