"""Splitting inside loop bodies and conditional branches, and the cost model's report.

A ``scan`` whose body builds an n x n block from its carry, and a ``cond``
whose branch does, are compiled unsplit and under a memory limit smaller
than the block, on hypothesis-drawn sizes: the split program must say it
split the body, fit the limit by XLA's count in one compile, and equal the
unsplit program, forward and gradient.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.transforms.passes import PassContext, Split
from hlodsl.transforms.passes.pipeline import MemoryReport
from hlodsl.ir.staging import stage

SPLIT = [Split()]
FEW = settings(max_examples=3, deadline=None)


def scan_kernel(c0, w):
    """Each step builds an (n, n) kernel of the carry, scaled by a row of ``w``."""
    def step(c, wi):
        m = xp.exp(-(c[:, None] - wi * c[None, :]) ** 2)
        return xp.tanh(m @ c / c.shape[0]), xp.sum(m, axis=0)[:3]
    return hd.scan(step, c0, w)


def cond_kernel(x, s):
    def big(x):
        return xp.sum(xp.exp(-(x[:, None] - x[None, :]) ** 2), axis=1)
    return hd.cond(s > 0, big, lambda x: x * 2.0, x)


def check(fn, args, limit: int, rtol: float, where: str):
    split = hd.compile(fn, memory_limit=limit, passes=SPLIT)
    report = split.report(*args)
    assert f"in the {where}" in report and "slices of" in report, report
    memory = split.entry(*args).reports[-1]
    assert memory.compiles == 1 and memory.temp <= limit, report
    assert hd.compile(fn).memory_stats(*args)["temp_size_in_bytes"] > limit  # it had to split
    got, want = split(*args), hd.compile(fn)(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,), strict=True):
        w = np.asarray(w)
        np.testing.assert_allclose(np.asarray(g), w, rtol=rtol,
                                   atol=rtol * float(np.abs(w).max(initial=1)))


@settings(max_examples=2, deadline=None)
@given(n=st.integers(200, 400), steps=st.integers(1, 3), seed=st.integers(0, 99))
def test_a_scan_body_building_an_n_by_n_block_is_split(n, steps, seed):
    rng = np.random.default_rng(seed)
    c0, w = hd.array(rng.normal(size=n)), hd.array(rng.uniform(0.5, 1.5, size=steps))
    limit = n * n * 8 // 2
    check(scan_kernel, (c0, w), limit, 1e-12, "body of While")
    loss = hd.grad(lambda c0, w: xp.sum(scan_kernel(c0, w)[0] ** 2)
                   + xp.sum(scan_kernel(c0, w)[1]), argnums=(0, 1))
    check(loss, (c0, w), 3 * limit, 1e-10, "body of While")


@FEW
@given(n=st.integers(200, 400), sign=st.sampled_from([1.0, -1.0]), seed=st.integers(0, 99))
def test_a_branch_building_an_n_by_n_block_is_split(n, sign, seed):
    x = hd.array(np.random.default_rng(seed).normal(size=n))
    s = hd.array(np.float64(sign))
    check(cond_kernel, (x, s), n * n * 8 // 2, 1e-12, "true branch of Conditional")
    grad = hd.grad(lambda x, s: xp.sum(cond_kernel(x, s) ** 2))
    np.testing.assert_allclose(
        np.asarray(hd.compile(grad, memory_limit=n * n * 8 * 2, passes=SPLIT)(x, s)),
        np.asarray(hd.compile(grad)(x, s)), rtol=1e-10)


def test_a_body_without_large_values_is_left_alone():
    comp = stage(lambda c: hd.scan(lambda c, _: (c * 2.0, None), c, None, length=3)[0],
                 (hd.array(np.ones(50)),), {}).computation
    assert Split()(comp, PassContext(10**6)) == (comp, [])


def test_the_report_ends_with_the_estimate_xlas_count_and_the_compiles():
    x = hd.array(np.linspace(0, 1, 600))
    f = hd.compile(lambda x: xp.sum(xp.exp(-(x[:, None] - x[None, :]) ** 2), axis=1),
                   memory_limit="1MiB", passes=SPLIT)
    last = f.report(x).splitlines()[-1]
    memory = f.entry(x).reports[-1]
    assert isinstance(memory, MemoryReport) and memory.compiles == 1
    assert memory.temp == f.memory_stats(x)["temp_size_in_bytes"] <= 2**20
    # The model is calibrated to within a factor of 3 of XLA's count either way.
    assert memory.temp / 3 <= memory.estimate <= 3 * memory.temp
    assert last.startswith("memory: estimated ") and "1 compile(s)" in last
