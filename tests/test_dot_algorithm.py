"""Dot's ``algorithm`` static operand (HLO ``algorithm=dot_bf16_bf16_f32``, ...).

XLA:CPU compiles and runs every algorithm in ``ops.dot.ALGORITHMS`` but computes
at the operands' own precision, so the results equal the plain dot there; the HLO
carries the attribute. ``dot_bf16_bf16_f32_x9`` crashes XLA:CPU's compiler (a
segfault): refused when the op is made. A GPU honours the algorithms it runs
(``ops.dot.GPU_ALGORITHMS``): there the result is within the algorithm's own
precision of the full-precision dot, and staging refuses the others.
"""

import numpy as np
import pytest
from hlodsl.ops import dot as dot_module
from hlodsl.ops.dot import ALGORITHMS, GPU_ALGORITHMS, REFUSED_ALGORITHMS

import hlodsl as hd
from hlodsl import ops
from platform_rules import PLATFORM

A = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
B = np.random.default_rng(5).standard_normal((4, 2)).astype(np.float32)

#: On a GPU: each algorithm's error bound on f32 operands, relative to |A| @ |B| (the
#: operands rounded to bf16 (8 bits) or tf32 (11 bits), split into 3 or 6 products).
GPU_TOLERANCE = {"dot_bf16_bf16_f32": 2 ** -7, "dot_bf16_bf16_f32_x3": 2 ** -15,
                 "dot_bf16_bf16_f32_x6": 2 ** -20, "dot_tf32_tf32_f32": 2 ** -10,
                 "dot_tf32_tf32_f32_x3": 2 ** -20, "dot_f32_f32_f32": 2 ** -21}


def _within(got, algorithm, a=A, b=B):
    want = (a.astype(np.float64) @ b.astype(np.float64))
    bound = GPU_TOLERANCE[algorithm] * (np.abs(a) @ np.abs(b))
    assert np.all(np.abs(np.asarray(got) - want) <= bound), (algorithm, got, want)


def _runs_on_f32_here(algorithm: str) -> bool:
    return PLATFORM != "gpu" or "float32" in GPU_ALGORITHMS[algorithm].get("float32", ())


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_runs_and_is_emitted(algorithm):
    op = ops.Dot((1,), (0,), algorithm=algorithm)
    if not _runs_on_f32_here(algorithm):  # XLA:GPU has no kernel for it on f32
        with pytest.raises(hd.ShapeError, match=f"XLA:GPU cannot run algorithm={algorithm}"):
            op(hd.array(A), hd.array(B))
        return
    eager = np.asarray(op(hd.array(A), hd.array(B)))
    staged = hd.compile(lambda a, b: op(a, b))(hd.array(A), hd.array(B))
    np.testing.assert_array_equal(np.asarray(staged), eager)
    if PLATFORM == "gpu":
        _within(eager, algorithm)
    else:  # XLA:CPU computes at the operands' precision
        np.testing.assert_array_equal(eager, np.asarray(ops.Dot((1,), (0,))(hd.array(A),
                                                                             hd.array(B))))
    assert f"algorithm={algorithm}" in str(hd.code_hlo(lambda a, b: op(a, b), hd.array(A),
                                                       hd.array(B)))


def test_algorithm_survives_vmap_and_grad():
    op = ops.Dot((1,), (0,), algorithm="dot_bf16_bf16_f32")
    batch = np.stack([A, 2 * A])
    text = str(hd.code_hlo(hd.vmap(lambda a: op(a, hd.array(B))), hd.array(batch)))
    assert "algorithm=dot_bf16_bf16_f32" in text
    out = np.asarray(hd.vmap(lambda a: op(a, hd.array(B)))(hd.array(batch)))
    g = hd.grad(lambda a: hd.stdlib.sum(op(a, hd.array(B))))(hd.array(A))
    if PLATFORM == "gpu":  # the operands really are rounded to bf16 there
        for i in range(2):
            _within(out[i], "dot_bf16_bf16_f32", batch[i])
        np.testing.assert_allclose(np.asarray(g), np.broadcast_to(B.sum(1), A.shape),
                                   rtol=1e-6)  # the transposed dots have no algorithm
        return
    np.testing.assert_allclose(out, batch @ B, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(B.sum(1), A.shape), rtol=1e-6)


def test_an_algorithm_dot_has_default_precision_whatever_the_configured_one(monkeypatch):
    # XLA: "must specify DEFAULT precision config when algorithm is set" (the GPU suite
    # configures "highest"; jax writes precision = [DEFAULT, DEFAULT] beside an algorithm).
    monkeypatch.setattr(hd.config, "default_matmul_precision", "highest")
    text = str(hd.code_hlo(lambda a, b: ops.Dot((1,), (0,), algorithm="dot_tf32_tf32_f32")(a, b),
                           hd.array(A), hd.array(B)))
    assert "algorithm=dot_tf32_tf32_f32" in text and "operand_precision" not in text
    plain = str(hd.code_hlo(lambda a, b: ops.Dot((1,), (0,))(a, b), hd.array(A), hd.array(B)))
    assert "operand_precision={highest,highest}" in plain
    with pytest.raises(ValueError, match="algorithm sets the dot's precision itself"):
        ops.Dot((1,), (0,), algorithm="dot_tf32_tf32_f32", precision="high")
    ops.Dot((1,), (0,), algorithm="dot_tf32_tf32_f32", precision="default")  # is the default


@pytest.mark.parametrize("algorithm, dtype, preferred, runs", [
    ("dot_f16_f16_f16", np.float32, None, False),
    ("dot_f16_f16_f16", np.float16, None, False),
    ("dot_bf16_bf16_bf16", np.float32, None, False),
    ("dot_f16_f16_f32", np.float32, None, False),
    ("dot_f16_f16_f32", np.float16, hd.float32, True),
    ("dot_bf16_bf16_f32", np.float32, None, True),
    ("dot_bf16_bf16_f32_x6", np.float64, None, False),
    ("dot_f64_f64_f64", np.float32, None, False),
    ("dot_f64_f64_f64", np.float64, None, True),
])
def test_staging_for_a_gpu_refuses_what_xla_gpu_cannot_run(algorithm, dtype, preferred, runs):
    a = hd.array(A.astype(dtype))
    op = ops.Dot((1,), (0,), algorithm=algorithm, preferred_element_type=preferred)
    if runs:
        text = str(hd.code_hlo(lambda x: op(x, x.T), a, platform="gpu"))
        assert f"algorithm={algorithm}" in text and "operand_precision" not in text
    else:
        with pytest.raises(hd.ShapeError, match=f"XLA:GPU cannot run algorithm={algorithm} on "
                                                f"{np.dtype(dtype).name} operands"):
            hd.code_hlo(lambda x: op(x, x.T), a, platform="gpu")
    assert f"algorithm={algorithm}" in str(hd.code_hlo(lambda x: op(x, x.T), a,
                                                       platform="cpu"))  # XLA:CPU takes all


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


def test_staging_for_a_gpu_widens_complex_operands_a_wider_result_needs(monkeypatch):
    # XLA:GPU has no complex GEMM to a wider type ("GEMM is not supported by cublasLt and
    # legacy cublas fallback is removed"): the operands are converted first there.
    z = (np.arange(6).reshape(3, 2) + 1j).astype(np.complex64)
    op = ops.Dot((0,), (0,), preferred_element_type=hd.complex128)
    text = str(hd.code_hlo(lambda x: op(x, x), hd.array(z), platform="cpu"))
    assert " convert(" not in text and "c128[2,2] dot(x, x)" in text
    text = str(hd.code_hlo(lambda x: op(x, x), hd.array(z), platform="gpu"))
    assert "convert.1 = c128[3,2] convert(x)" in text
    assert "c128[2,2] dot(convert.1, convert.1), lhs_contracting_dims={0}" in text
    real = ops.Dot((0,), (0,), preferred_element_type=hd.float64)  # only complex is widened
    assert " convert(" not in str(hd.code_hlo(lambda x: real(x, x),
                                              hd.array(z.real.astype(np.float32)), platform="gpu"))
    # The same products and sums, in complex128: what the GPU's form computes, run here.
    here = np.asarray(op(hd.array(z), hd.array(z)))
    monkeypatch.setattr(dot_module, "target_platform", lambda: "gpu")
    widened = hd.compile(lambda x: op(x, x))
    assert " convert(" in str(hd.code_hlo(widened, hd.array(z)))
    np.testing.assert_array_equal(np.asarray(widened(hd.array(z))), here)
