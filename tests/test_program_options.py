"""XLA options chosen per program from its text (hlodsl.runtime.program_options, issue 42).

A program with a split reduction (one that keeps a middle dimension: batch norm's
per-channel statistics of NCHW activations) compiles on XLA:CPU with YNNPACK's
reductions; every other program with hlodsl's default options; a user's own choice
of the option (``XLA_FLAGS``, an edited ``COMPILER_OPTIONS``) is left alone. Values
are those of the program compiled without the rule, to rounding.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import runtime
from hlodsl.runtime import executables
from hlodsl.stdlib import nn

po = importlib.import_module("hlodsl.runtime.program_options")  # (the facade
# re-exports the function program_options under the module's name)

YNN = "xla_cpu_experimental_ynn_fusion_type"
DOTS = "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"
BOTH = f"{DOTS},LIBRARY_FUSION_TYPE_REDUCE"

cpu_only = pytest.mark.skipif(runtime.platform() != "cpu", reason="an XLA:CPU rule")


def reduce_module(shape, dims, printer="ours"):
    """A module reducing ``dims`` of an f32 ``shape`` parameter, as our printer writes it
    (operands by name) or as XLA's does (operands with their shapes, ``%`` names)."""
    s = ",".join(map(str, shape))
    out = ",".join(str(d) for i, d in enumerate(shape) if i not in dims)
    red = ",".join(map(str, dims))
    if printer == "ours":
        return (f"HloModule m\nENTRY e {{\n  x = f32[{s}] parameter(0)\n"
                f"  c = f32[] constant(0)\n  ROOT r = f32[{out}] reduce(x, c), "
                f"dimensions={{{red}}}, to_apply=add\n}}")
    return (f"HloModule m\nENTRY %e {{\n  %x = f32[{s}]{{3,2,1,0}} parameter(0)\n"
            f"  %c = f32[] constant(0)\n  ROOT %r = f32[{out}]{{0}} reduce(f32[{s}]{{3,2,1,0}} "
            f"%x, f32[] %c), dimensions={{{red}}}, to_apply=%add\n}}")


# -- which reductions are split -----------------------------------------------------------

@pytest.mark.parametrize("printer", ["ours", "xla"])
def test_a_reduction_keeping_a_middle_dimension_is_split(printer):
    text = reduce_module((32, 16, 32, 32), (0, 2, 3), printer)
    assert po.split_reductions(text) == [("reduce", (32, 16, 32, 32), (1,))]


@pytest.mark.parametrize("dims", [(3,), (2, 3), (1, 2, 3), (0,), (0, 1), (0, 1, 2, 3)])
def test_row_column_and_full_reductions_are_not_split(dims):
    # keeping a leading block (rows: layer norm, softmax) or a trailing one (columns:
    # bias gradients), or nothing (a full sum), is what XLA's own emitter does well
    assert po.split_reductions(reduce_module((32, 16, 32, 32), dims)) == []


def test_a_small_split_reduction_does_not_choose_the_options():
    assert po.split_reductions(reduce_module((2, 16, 8, 8), (0, 2, 3))) == []  # 2,048
    assert po.split_reductions(reduce_module((2, 16, 8, 8), (0, 2, 3)), min_elements=1)


@given(st.lists(st.integers(1, 6), min_size=1, max_size=5), st.data())
@settings(max_examples=60, deadline=None)
def test_split_means_the_kept_dimensions_are_neither_leading_nor_trailing(shape, data):
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)))))
    kept = [d for d in range(len(shape)) if d not in dims]
    found = po.split_reductions(reduce_module(tuple(shape), dims), min_elements=1)
    leading = kept == list(range(len(kept)))
    trailing = kept == list(range(len(shape) - len(kept), len(shape)))
    assert bool(found) == (bool(kept) and not leading and not trailing)


def test_batch_norm_statistics_over_a_middle_feature_dimension_are_split():
    x = hd.ArrayType(hd.float32, (16, 8, 32, 32))
    c = hd.ArrayType(hd.float32, (8,))
    nchw = str(hd.code_hlo(lambda x, w, b: nn.batch_norm(x, None, None, w, b, training=True)[0],
                           x, c, c))
    assert po.split_reductions(nchw) == [("batch-norm-training", (16, 8, 32, 32), (1,))]
    grad = str(hd.code_hlo(hd.grad(lambda x, w, b: xp.sum(
        nn.batch_norm(x, None, None, w, b, training=True)[0] ** 2)), x, c, c))
    assert {op for op, _, _ in po.split_reductions(grad)} >= {"batch-norm-grad"}
    # channels last: the kept dimension is the trailing one
    assert po.split_reductions(str(hd.code_hlo(
        lambda x: hd.ops.BatchNormTraining(1e-5, 3)(x, xp.ones((32,), dtype=hd.float32),
                                                   xp.zeros((32,), dtype=hd.float32))[0],
        x))) == []


# -- which options a compile gets ---------------------------------------------------------

def overrides(text):
    return dict(executables._options(1, 1, None, text).env_option_overrides)


@cpu_only
def test_a_program_with_a_split_reduction_compiles_with_ynnpack_reductions():
    assert overrides(reduce_module((32, 16, 32, 32), (0, 2, 3)))[YNN] == BOTH
    assert overrides(reduce_module((32, 16, 32, 32), (2, 3)))[YNN] == DOTS
    assert overrides(None)[YNN] == DOTS  # no text, no rules


@cpu_only
def test_a_users_choice_of_the_option_is_left_alone(monkeypatch):
    text = reduce_module((32, 16, 32, 32), (0, 2, 3))
    monkeypatch.setitem(runtime.COMPILER_OPTIONS, "cpu", {YNN: ""})  # Eigen only
    assert overrides(text)[YNN] == ""
    monkeypatch.setitem(runtime.COMPILER_OPTIONS, "cpu", {YNN: DOTS})
    monkeypatch.setenv("XLA_FLAGS", f"--{YNN}={DOTS}")
    assert YNN not in overrides(text)  # XLA_FLAGS says it
    monkeypatch.delenv("XLA_FLAGS")
    assert overrides(text)[YNN] == BOTH
    monkeypatch.setitem(runtime.PROGRAM_RULES, "cpu", [])  # the rules emptied
    assert overrides(text)[YNN] == DOTS
    # options a caller passes win over the rules
    opts = executables._options(1, 1, {YNN: "LIBRARY_FUSION_TYPE_DOT"}, text)
    assert dict(opts.env_option_overrides)[YNN] == "LIBRARY_FUSION_TYPE_DOT"


# -- values -------------------------------------------------------------------------------

def resnet_block_loss(x, w, g, b, r):
    h = nn.relu(nn.batch_norm(nn.conv(x, w, None, 1, 1), None, None, g, b, training=True)[0])
    return xp.sum(h * r)


def numpy_block_loss(x, w, g, b, r):
    """float64 oracle of ``resnet_block_loss``."""
    n, c_in, hgt, wid = x.shape
    xp_ = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, w.shape[0], hgt, wid))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,oc->nohw", xp_[:, :, i:i + hgt, j:j + wid], w[:, :, i, j])
    m = y.mean(axis=(0, 2, 3), keepdims=True)
    v = y.var(axis=(0, 2, 3), keepdims=True)
    h = np.maximum((y - m) / np.sqrt(v + 1e-5) * g[:, None, None] + b[:, None, None], 0)
    return float((h * r).sum())


@cpu_only
@given(st.integers(2, 4), st.sampled_from([8, 16]), st.sampled_from([16, 20]),
       st.integers(0, 2**31 - 1))
@settings(max_examples=3, deadline=None)
def test_batch_norm_values_and_gradients_match_without_the_rule(n, c, side, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3, side, side)).astype(np.float32)
    w = (rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32)
    g, b = rng.random(c).astype(np.float32) + 0.5, rng.standard_normal(c).astype(np.float32)
    r = rng.standard_normal((n, c, side, side)).astype(np.float32)
    args = [hd.array(a) for a in (x, w, g, b, r)]
    step = hd.value_and_grad(resnet_block_loss, argnums=(0, 1, 2, 3))
    kept = po.SPLIT_REDUCTION_ELEMENTS, runtime.PROGRAM_RULES["cpu"]
    try:
        po.SPLIT_REDUCTION_ELEMENTS = 1  # small draws: the rule applies all the same (and
        # YNNPACK takes reductions of 2x8x16x16 and up)
        with_rule = hd.compile(step)  # (compiled at its first call)
        results = [with_rule(*args)]
        texts = [str(hd.code_hlo(with_rule, *args, optimize=True))]
        runtime.PROGRAM_RULES["cpu"] = []
        without = hd.compile(step)
        results.append(without(*args))
        texts.append(str(hd.code_hlo(without, *args, optimize=True)))
    finally:
        po.SPLIT_REDUCTION_ELEMENTS, runtime.PROGRAM_RULES["cpu"] = kept
    assert "ynn" in texts[0] and "ynn" not in texts[1]  # YNNPACK's reductions, or none
    oracle = numpy_block_loss(*(a.astype(np.float64) for a in (x, w, g, b, r)))
    for value, _ in results:
        np.testing.assert_allclose(float(value), oracle, rtol=1e-4, atol=1e-3)
    for a, b_ in zip(hd.tree_leaves(results[0][1]), hd.tree_leaves(results[1][1])):
        a, b_ = np.asarray(a, np.float64), np.asarray(b_, np.float64)
        assert np.linalg.norm(a - b_) <= 1e-4 * max(np.linalg.norm(b_), 1e-3)
