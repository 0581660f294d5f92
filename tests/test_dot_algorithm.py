"""Dot's ``algorithm`` static operand (HLO ``algorithm=dot_bf16_bf16_f32``, ...).

XLA:CPU compiles and runs every algorithm in ``ops.dot.ALGORITHMS`` but computes
at the operands' own precision (a GPU honours them), so the results equal the
plain dot here; the HLO carries the attribute. ``dot_bf16_bf16_f32_x9`` crashes
XLA:CPU's compiler (a segfault): refused when the op is made.
"""

import numpy as np
import pytest
from hlodsl.ops.dot import ALGORITHMS, REFUSED_ALGORITHMS

import hlodsl as hd
from hlodsl import ops

A = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
B = np.random.default_rng(5).standard_normal((4, 2)).astype(np.float32)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_runs_and_is_emitted(algorithm):
    op = ops.Dot((1,), (0,), algorithm=algorithm)
    plain = np.asarray(ops.Dot((1,), (0,))(hd.array(A), hd.array(B)))
    np.testing.assert_array_equal(np.asarray(op(hd.array(A), hd.array(B))), plain)
    staged = hd.compile(lambda a, b: op(a, b))(hd.array(A), hd.array(B))
    np.testing.assert_array_equal(np.asarray(staged), plain)
    assert f"algorithm={algorithm}" in str(hd.code_hlo(lambda a, b: op(a, b), hd.array(A),
                                                       hd.array(B)))


def test_algorithm_survives_vmap_and_grad():
    op = ops.Dot((1,), (0,), algorithm="dot_bf16_bf16_f32")
    batch = np.stack([A, 2 * A])
    text = str(hd.code_hlo(hd.vmap(lambda a: op(a, hd.array(B))), hd.array(batch)))
    assert "algorithm=dot_bf16_bf16_f32" in text
    out = hd.vmap(lambda a: op(a, hd.array(B)))(hd.array(batch))
    np.testing.assert_allclose(np.asarray(out), batch @ B, rtol=1e-6)
    g = hd.grad(lambda a: hd.stdlib.sum(op(a, hd.array(B))))(hd.array(A))
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(B.sum(1), A.shape), rtol=1e-6)


def test_unsupported_and_unknown_algorithms_are_refused_at_construction():
    for name in REFUSED_ALGORITHMS:
        with pytest.raises(ValueError, match=f"algorithm={name!r}.*XLA:CPU crashes"):
            ops.Dot((1,), (0,), algorithm=name)
    with pytest.raises(ValueError, match="unknown algorithm 'dot_f99'.*dot_f32_f32_f32"):
        ops.Dot((1,), (0,), algorithm="dot_f99")


def test_algorithm_needs_floating_operands():
    x = hd.array(np.ones((2, 2), np.int32))
    with pytest.raises(hd.ShapeError, match="algorithm=dot_f32_f32_f32 needs floating-point"):
        ops.Dot((1,), (0,), algorithm="dot_f32_f32_f32")(x, x)
