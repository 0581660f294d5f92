"""What hlodsl stages for a GPU is what jax emits there, checked without a GPU.

Every custom call ``hd.code_hlo(f, *types, platform="gpu")`` emits for
``xp.linalg`` (cuSOLVER) and ``nn.dot_product_attention`` (cuDNN) is compared
with jax's: against the modules jax 0.11.2 lowered on an H200
(tests/golden/, the vendored run), and against jax lowering for CUDA here
(``lowering_platforms=("cuda",)``: every jax release the suite runs with).
tests/gpu_golden.py holds the cases and the comparison (target, operand and
result types with layouts, aliasing, frontend attributes, backend config up to
field order; triangular solves of the forward cases), and is what .ci/device
runs against a live GPU's jax. The last tests check the comparison itself
sees each kind of difference, and what staging for a GPU needs around it:
result rules of the cuSOLVER/cuDNN targets, their batching, imports of jax's
GPU programs.
"""

from __future__ import annotations

import gpu_golden as g
import numpy as np
import pytest
from hlodsl.stdlib import cusolver, nn
from hlodsl.stdlib import linalg as la

import hlodsl as hd
from hlodsl import ops
from hlodsl.arrays.types import ArrayType
from hlodsl.errors import ShapeError
from hlodsl.ir.target import staging_platform, target_platform

CASES = g.cases()
SURVIVORS = g.surviving_targets()
#: jax lowered here for CUDA: every golden case but eig (jax picks cusolver_geev_ffi only
#: where it can read cuSOLVER's version, on the device) and cuDNN attention (jax checks for
#: cuDNN itself), and the extra cases (gesvd, econ, rectangular and complete QR, c128).
CROSS = [c for c in CASES if c.op != "eig" and not c.op.startswith("sdpa")] + g.extra_cases()
T = hd.ArrayType


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_custom_calls_staged_for_a_gpu_are_those_jax_emitted_on_the_h200(case):
    theirs = g.golden_text(case)
    assert theirs is not None
    assert g.compare(case, g.hlodsl_text(case), theirs, SURVIVORS[case.name]) == []


@pytest.mark.parametrize("case", CROSS, ids=str)
def test_the_custom_calls_staged_for_a_gpu_are_those_jax_lowers_for_cuda_here(case):
    theirs = g.jax_text(case, cross=True)
    assert g.compare(case, g.hlodsl_text(case), theirs, SURVIVORS.get(case.name)) == []


def test_every_golden_file_is_a_case_and_the_index_names_its_targets():
    names = {p.name.split(".")[0] for p in g.GOLDEN.glob("*.stablehlo.mlir")}
    linalg_and_attention = {n for n in names if not n.startswith(("ragged", "copy", "dot_",
                                                                  "topk"))}
    assert linalg_and_attention == {c.name for c in CASES}
    assert all(SURVIVORS[c.name] for c in CASES)


# -- the comparison sees what differs --------------------------------------------------------

@pytest.fixture(scope="module")
def potrf_case():
    case = next(c for c in CASES if c.name == "cholesky_float32_4x32x32")
    return case, g.hlodsl_text(case), g.golden_text(case)


@pytest.mark.parametrize("before, after", [
    ("lower = true", "lower = false"),                          # an FFI attribute
    ("backend_config={lower = true}", "backend_config={lower = 1 : i32}"),  # its type
    ("{f32[4,32,32]{1,2,0}}", "{f32[4,32,32]{2,1,0}}"),        # an operand's layout
    ("(f32[4,32,32]{1,2,0}, s32[4]{0})", "(f32[4,32,32]{2,1,0}, s32[4]{0})"),  # a result's
    ("output_to_operand_aliasing={{0}: (0, {})}, ", ""),         # the aliasing
    ('num_batch_dims="1"', 'num_batch_dims="0"'),               # a frontend attribute
    ("API_VERSION_TYPED_FFI", "API_VERSION_STATUS_RETURNING"),   # the API
    ('"cusolver_potrf_ffi"', '"cusolver_potrf"'),                # the target
])
def test_the_comparison_sees_a_changed_custom_call(potrf_case, before, after):
    case, ours, theirs = potrf_case
    assert g.compare(case, ours, theirs, SURVIVORS[case.name]) == []
    changed = ours.replace(before, after, 1)
    assert changed != ours
    assert g.compare(case, changed, theirs, SURVIVORS[case.name])


def test_the_comparison_sees_triangular_solves_and_a_changed_attention_config():
    solve = next(c for c in CASES if c.name == "solve_float32_64x64")
    ours = g.hlodsl_text(solve)
    assert g.compare(solve, ours, g.golden_text(solve), SURVIVORS[solve.name]) == []
    assert g.compare(solve, ours.replace("unit_diagonal=true", "unit_diagonal=false", 1),
                     g.golden_text(solve), SURVIVORS[solve.name])
    sdpa = next(c for c in CASES if c.name == "sdpa_fwd_B2_T1024_N8_K2_H128_causal")
    ours, theirs = g.hlodsl_text(sdpa), g.golden_text(sdpa)
    for before, after in (('\\"CAUSAL\\"', '\\"NO_MASK\\"'), ('\\"seed\\": 42', '\\"seed\\": 7'),
                          ("{3,1,2,0}", "{3,2,1,0}")):
        assert g.compare(sdpa, ours.replace(before, after, 1), theirs, None), before
    # the order of a JSON config's keys is not a difference; a missing key is
    legacy = "API_VERSION_STATUS_RETURNING"
    config = g._config(legacy, '{"a": "0", "b": {"c": 2, "d": [1, 2]}}')
    assert config == g._config(legacy, '{"b": {"d": [1, 2], "c": 2}, "a": "0"}')
    assert config != g._config(legacy, '{"b": {"d": [1, 2], "c": 2}}')
    assert config != g._config(legacy, '{"a": "0", "b": {"c": 2, "d": [2, 1]}}')


def test_a_call_xla_deletes_is_not_required_and_an_extra_call_of_ours_is_a_difference():
    # jax emits calls XLA deletes as dead (det's permutation, INDEX.txt lists what stays):
    # only the surviving targets of jax's module must be ours.
    solve = next(c for c in CASES if c.name == "solve_float64_64x64")
    theirs = g.golden_text(solve)  # getrf and the permutation
    det = g.Case("det_against_solve", "det", "float64", ((64, 64),), False)
    ours = g.hlodsl_text(det)      # getrf alone
    assert "cu_lu_pivots_to_permutation" in theirs and "cu_lu_pivots" not in ours
    assert g.compare(det, ours, theirs, {"cusolver_getrf_ffi"}) == []
    assert g.compare(det, ours, theirs, None)
    lu = next(c for c in CASES if c.name == "lu_float64_64x64")
    with_permutation = hd.code_hlo(la.lu_factor, T(hd.float64, (64, 64)), platform="gpu")
    assert g.compare(lu, with_permutation, g.golden_text(lu), SURVIVORS[lu.name])


# -- staging for a GPU --------------------------------------------------------------------

def test_staging_for_a_gpu_changes_only_what_is_printed():
    a = hd.array(np.float64([[4, 2], [2, 5]]))
    assert target_platform() == "cpu"
    gpu = hd.code_hlo(la.cholesky, a, platform="gpu")
    assert "cusolver_potrf_ffi" in gpu and target_platform() == "cpu"
    assert "cusolver" not in hd.code_hlo(la.cholesky, a)
    # A program that runs is staged for the runtime's platform, whatever the target.
    f = hd.compile(lambda a: la.eigh(a)[0])
    with staging_platform("gpu"):
        np.testing.assert_allclose(np.asarray(f(a)), np.linalg.eigvalsh(np.asarray(a)))
        np.testing.assert_allclose(np.asarray(la.det(a)), 16.0)  # eager: staged for here
    with pytest.raises(ValueError, match="optimize=True compiles with the platform's XLA"):
        hd.code_hlo(la.cholesky, a, platform="gpu", optimize=True)
    with pytest.raises(ValueError, match="'tpu' is not one hlodsl stages for"):
        hd.code_hlo(la.cholesky, a, platform="tpu")


def test_a_cached_subcomputation_is_not_reused_across_targets():
    # The same Python callable given to an op is staged once per target: a body that
    # decides by platform must not carry one target's choice into the other's module.
    def body(x):
        return la.det(x)

    a = T(hd.float32, (3, 2, 2))
    for platform, want in (("gpu", "cusolver_getrf_ffi"), ("cpu", "lapack_sgetrf_ffi"),
                           ("gpu", "cusolver_getrf_ffi")):
        text = hd.code_hlo(lambda x: hd.vmap(body)(x), a, platform=platform)
        assert want in text and ("lapack" in text) == (platform == "cpu"), platform


def test_collective_broadcast_follows_the_platform_staged_for():
    # XLA:CPU has no collective-broadcast instruction: hlodsl stages permutes there
    op = ops.CollectiveBroadcast(((0, 1, 2, 3),))
    x = T(hd.float32, (2,))
    gpu = hd.code_hlo(lambda x: op(x), x, platform="gpu")
    cpu = hd.code_hlo(lambda x: op(x), x, platform="cpu")
    assert "collective-broadcast(" in gpu and "collective-broadcast(" not in cpu
    assert "collective-permute(" in cpu


def test_export_for_a_gpu_records_the_platform_and_refuses_to_run_here():
    e = hd.export(la.cholesky, T(hd.float32, (3, 3)), platform="gpu")
    assert e.platform == "gpu" and "cusolver_potrf_ffi" in e.hlo_text()
    with pytest.raises(hd.ExportError, match="exported for gpu"):
        e(hd.array(np.eye(3, dtype=np.float32)))


# -- the targets' result rules, batching, import ------------------------------------------

F32 = np.float32


@pytest.mark.parametrize("target, out, operands, attributes, message", [
    ("cusolver_getrf_ffi", ((4, 4), F32), [((4, 4), F32)], {}, "writes"),
    ("cusolver_potrf_ffi", [((3, 3), F32), ((), np.int32)], [((3, 3), F32)], {},
     "needs the bool attribute lower"),
    ("cusolver_potrf_ffi", [((3, 3), F32), ((), np.int32)], [((3, 4), F32)], {"lower": True},
     "must be square"),
    ("cusolver_syevd_ffi", [((3, 3), F32), ((3,), F32), ((), np.int32)], [((3, 3), F32)],
     {"lower": True, "algorithm": np.uint8(5)}, "needs the attribute algorithm"),
    ("cusolver_gesvdj_ffi", [((5, 3), F32), ((3,), F32), ((5, 5), F32), ((3, 3), F32),
                             ((), np.int32)], [((5, 3), F32)],
     {"full_matrices": False, "compute_uv": True}, "writes"),
    ("cusolver_orgqr_ffi", ((2, 3), F32), [((2, 3), F32), ((2,), F32)], {}, "M >= N >= K"),
    ("cusolver_geev_ffi", [((2, 2), F32), ((2,), F32), ((2, 2), F32), ((2, 2), F32),
                           ((), np.int32)], [((2, 2), F32)], {"left": False, "right": True},
     "writes"),
    ("cu_lu_pivots_to_permutation", ((2,), np.int32), [((3,), np.int32)], {}, "M >= K"),
    ("__cudnn$fmhaSoftmax", [((1, 8, 2, 8), np.float16), ((0,), np.uint8)],  # BTNH: wrong
     [((1, 8, 2, 8), np.float16)] * 3, None, "writes"),
])
def test_a_wrong_declared_type_of_a_gpu_target_is_a_shape_error(target, out, operands,
                                                                 attributes, message):
    types = [ArrayType(dt, s) for s, dt in out] if isinstance(out, list) else \
        ArrayType(out[1], out[0])
    api = "API_VERSION_STATUS_RETURNING" if attributes is None else "API_VERSION_TYPED_FFI"
    op = ops.CustomCall(target, types, attributes or "", api_version=api)
    with pytest.raises(ShapeError, match=message):
        op.result_type(*(ArrayType(dt, s) for s, dt in operands))


def test_vmap_of_a_cusolver_call_batches_natively_with_jaxs_layouts():
    text = hd.code_hlo(hd.vmap(lambda a: cusolver.syevd(a)[1]), T(hd.float32, (3, 2, 4, 4)),
                       platform="gpu")
    line = next(ln for ln in text.splitlines() if "custom-call(" in ln)
    assert "(f32[3,2,4,4]{2,3,1,0}, f32[3,2,4]{2,1,0}, s32[3,2]{1,0})" in line
    assert 'num_batch_dims="2"' in line and "while(" not in text
    # as jax's own (vmap of eigh) lowered for CUDA
    case = g.Case("eigh_vmap", "eigh", "float32", ((3, 2, 4, 4),), True)
    ours = hd.code_hlo(hd.vmap(la.eigh), T(hd.float32, (3, 2, 4, 4)), platform="gpu")
    assert g.compare(case, ours, g.jax_text(case), None) == []


def test_vmap_of_cudnn_attention_folds_the_mapped_dimension_into_the_batch():
    q = T(hd.bfloat16, (3, 2, 16, 4, 64))
    text = hd.code_hlo(hd.vmap(lambda q: nn.dot_product_attention(q, q, q)), q, platform="gpu")
    assert "(bf16[6,4,16,64]{3,1,2,0}, u8[0]{0}) custom-call(" in text


def test_from_jax_imports_a_program_jax_lowered_for_a_gpu():
    import jax.numpy as jnp

    a = np.eye(4, dtype=np.float32) * 2
    f = hd.from_jax(jnp.linalg.cholesky, a, platform="gpu")
    text = hd.code_hlo(f, T(hd.float32, (4, 4)), platform="gpu")
    assert "custom_call_target=\"cusolver_potrf_ffi\", operand_layout_constraints=" \
           "{f32[4,4]{0,1}}, output_to_operand_aliasing={{0}: (0, {})}, " \
           "api_version=API_VERSION_TYPED_FFI, frontend_attributes={num_batch_dims=\"0\"}, " \
           "backend_config={lower = true}" in text
    # and a golden module of the H200 run, cuDNN attention included
    for name in ("cholesky_complex64_4x32x32", "sdpa_fwdbwd_B2_T1024_N8_K2_H128_causal"):
        imported = hd.import_hlo((g.GOLDEN / f"{name}.stablehlo.mlir").read_text())
        assert "custom-call(" in hd.code_hlo(imported, *imported.parameter_types,
                                             platform="gpu")
