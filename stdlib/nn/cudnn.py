"""cuDNN's fused attention on a GPU, called as jax calls it (``implementation="cudnn"``).

XLA:GPU runs two custom-call targets with cuDNN's flash attention:
``__cudnn$fmhaSoftmax`` (forward) and ``__cudnn$fmhaSoftmaxBackward``; the
score matrix is never written to memory. ``attention`` stages them with
jax 0.11.2's operands, result layouts (the output is BNTH-shaped, laid out
BTNH), workspace result (``u8[0]``: XLA sizes it when it compiles) and JSON
backend config (a port of jax's ``create_dot_product_attention_backend_config``),
and the forward's softmax statistics as the backward's residual. tests/golden/
holds what jax emitted on an H200 for these calls; ``unsupported`` gives jax's
conditions for them (``jax/_src/cudnn/fused_attention_stablehlo.py``).

>>> import hlodsl as hd
>>> q = hd.ArrayType(hd.bfloat16, (1, 128, 4, 64))
>>> text = hd.code_hlo(attention, q, q, q, platform="gpu")
>>> "__cudnn$fmhaSoftmax" in text
True
"""

from __future__ import annotations

import json

from hlodsl.transforms.custom import custom_vjp

from hlodsl import ops, runtime
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import bfloat16, float16, float32, uint8
from hlodsl.arrays.types import ArrayType, TupleType
from hlodsl.ir.op import frozen
from hlodsl.ir.rules import batch_rule
from hlodsl.ir.target import foreign_target, target_platform

from ..matrices import filled

__all__ = ["attention", "unsupported", "FusedAttention", "FORWARD", "BACKWARD"]

FORWARD = "__cudnn$fmhaSoftmax"
BACKWARD = "__cudnn$fmhaSoftmaxBackward"
#: The compute capability and cuDNN version assumed when staging for a GPU this machine
#: does not have (those of the H200 run, docs/gpu.md).
ASSUMED_CAPABILITY = (9, 0)
#: jax needs cuDNN 8.9.4 for these calls.
MIN_CUDNN = 8904
_BTNH, _BNTH_AS_BTNH, _STATS = (3, 2, 1, 0), (3, 1, 2, 0), (2, 1, 0)
_TYPE_NAMES = {bfloat16: "BF16", float16: "F16"}
# jax's dot dimension numbers for the BTNH layout: (lhs contracting, rhs contracting),
# (lhs batch, rhs batch) of each GEMM cuDNN fuses.
_FORWARD_DOTS = {"bmm1_dot_dimension_numbers": ((3, 3), ((0, 2), (0, 2))),
                 "bmm2_dot_dimension_numbers": ((3, 1), ((0, 1), (0, 2)))}
_BACKWARD_DOTS = {"bmm1_grad_gemm1_dot_dimension_numbers": ((2, 1), ((0, 1), (0, 2))),
                  "bmm1_grad_gemm2_dot_dimension_numbers": ((3, 1), ((0, 1), (0, 2))),
                  "bmm2_grad_gemm1_dot_dimension_numbers": ((2, 1), ((0, 1), (0, 2))),
                  "bmm2_grad_gemm2_dot_dimension_numbers": ((3, 3), ((0, 2), (0, 2)))}


def unsupported(q: Array, k: Array, v: Array, bias, mask) -> str | None:
    """Why cuDNN's fused attention cannot take these operands (4-D, BTNH), or None."""
    if target_platform() != "gpu":
        return f"it runs on a CUDA GPU, and this stages for {target_platform()!r}"
    if q.dtype not in _TYPE_NAMES or not q.dtype is k.dtype is v.dtype:
        return (f"it takes bfloat16 or float16 query, key and value of one type, got "
                f"{q.dtype.__name__}, {k.dtype.__name__}, {v.dtype.__name__}")
    if bias is not None or mask is not None:
        return "a bias or mask is not passed to cuDNN here (use is_causal, or 'xla')"
    live = not foreign_target()
    capability = (runtime.compute_capability() if live else None) or ASSUMED_CAPABILITY
    largest = 256 if capability >= (9, 0) else 128
    h = q.shape[-1]
    if h > largest or h % 8:
        return (f"the head dimension must be a multiple of 8 and at most {largest} on "
                f"compute capability {capability[0]}.{capability[1]}, got {h}")
    version = runtime.cudnn_version() if live else None
    if version is not None and version < MIN_CUDNN:
        return f"it needs cuDNN {MIN_CUDNN} or newer, this GPU has {version}"
    return None


def _declared(types, attributes, declared):
    """What a fused-attention call writes: the declared results, checked against the
    operands (the statistics result is optional, the workspace XLA's to size)."""
    if not isinstance(declared, TupleType):
        raise ValueError(f"writes a tuple (output(s) and a uint8 workspace), not {declared}")
    *outs, workspace = declared.elements
    q = types[0] if types else None
    if not (isinstance(q, ArrayType) and q.rank == 4 and q.dtype in _TYPE_NAMES
            and all(isinstance(t, ArrayType) for t in types)):
        raise ValueError(f"takes (B, T, N, H) bfloat16 or float16 query first, got {types}")
    b, t, n, h = q.shape
    k = types[1]
    want = [ArrayType(q.dtype, (b, n, t, h))]
    if len(types) == 3 and len(outs) == 2:  # forward with statistics
        want.append(ArrayType(float32, (b, n, t)))
    elif len(types) == 6:  # backward: dq, dk, dv
        want += [ArrayType(k.dtype, (b, k.shape[2], k.shape[1], h))] * 2
    elif len(types) != 3:
        raise ValueError(f"takes 3 operands (forward) or 6 (backward), got {len(types)}")
    if list(outs) != want or workspace.dtype is not uint8 or workspace.rank != 1:
        raise ValueError(f"writes {tuple(want)} and a uint8 workspace for these operands, "
                         f"not {declared}")
    return declared


for _target in (FORWARD, BACKWARD):
    ops.register_custom_call_target(_target, _declared, declared=True)
del _target


def _dims(spec) -> dict:
    (lc, rc), (lb, rb) = spec
    return {"lhs_contracting_dimensions": [str(lc)], "rhs_contracting_dimensions": [str(rc)],
            "lhs_batch_dimensions": [str(i) for i in lb],
            "rhs_batch_dimensions": [str(i) for i in rb]}


def backend_config(b: int, n: int, t: int, s: int, dtype, scale: float, causal: bool,
                   backward: bool) -> str:
    """jax's JSON backend config of the forward or backward call (same keys, same order)."""
    layout = {"dim_level_types": [], "dim_unique": [], "dim_ordered": [],
              "minor_to_major": ["3", "2", "1", "0"], "tiles": [], "element_size_in_bits": "0",
              "memory_space": "0", "index_primitive_type": "PRIMITIVE_TYPE_INVALID",
              "pointer_primitive_type": "PRIMITIVE_TYPE_INVALID",
              "dynamic_shape_metadata_prefix_bytes": "0"}
    config = {
        "algorithm": {"algo_id": "0", "math_type": "TENSOR_OP_MATH",
                      "tuning_knobs": {"17": "1", "24": "0"}, "is_cudnn_frontend": True,
                      "workspace_size": "0"},
        "fmha_scale": float(scale),
        "intermediate_tensor_shape": {"element_type": _TYPE_NAMES[dtype],
                                      "dimensions": [str(b), str(n), str(t), str(s)],
                                      "tuple_shapes": [], "layout": layout,
                                      "is_dynamic_dimension": [False] * 4},
        "is_flash_attention": True,
        "mask_type": "CAUSAL" if causal else "NO_MASK",
    }
    config.update({k: _dims(v) for k, v in (_BACKWARD_DOTS if backward else
                                            _FORWARD_DOTS).items()})
    config.update(dropout_rate=0.0, seed=42, sliding_window_length=0, max_seg_per_batch=1,
                  is_paged_attention=False)
    return json.dumps({"operation_queue_id": "0", "cudnn_fmha_backend_config": config})


@frozen
class FusedAttention(ops.CustomCall):
    """A call of cuDNN's fused attention; ``scale``/``causal`` rebuild it under ``vmap``."""

    scale: float = 1.0
    causal: bool = False


def _workspace() -> ArrayType:
    return ArrayType(uint8, (0,))


def _bnth(x: Array) -> ArrayType:
    b, t, n, h = x.shape
    return ArrayType(x.dtype, (b, n, t, h))


def _to_btnh(x: Array) -> Array:
    return ops.Transpose((0, 2, 1, 3))(x)


def forward(q: Array, k: Array, v: Array, scale: float, causal: bool, stats: bool):
    """``O`` (B, T, N, H), and with ``stats`` the softmax statistics (B, N, T), float32."""
    b, t, n, _ = q.shape
    out = [_bnth(q)] + ([ArrayType(float32, (b, n, t))] if stats else []) + [_workspace()]
    layouts = [_BNTH_AS_BTNH] + ([_STATS] if stats else []) + [(0,)]
    call = FusedAttention(FORWARD, TupleType(tuple(out)),
                          backend_config(b, n, t, k.shape[1], q.dtype, scale, causal, False),
                          api_version="API_VERSION_STATUS_RETURNING",
                          operand_layouts=(_BTNH,) * 3, result_layouts=tuple(layouts),
                          scale=scale, causal=causal)
    results = call(q, k, v)
    return (_to_btnh(results[0]), results[1]) if stats else _to_btnh(results[0])


def backward(q: Array, k: Array, v: Array, stats: Array, d_out: Array, out: Array,
             scale: float, causal: bool):
    """``(dq, dk, dv)`` (each its operand's shape) from the forward's statistics."""
    b, t, n, _ = q.shape
    types = (_bnth(q), _bnth(k), _bnth(v), _workspace())
    call = FusedAttention(BACKWARD, TupleType(types),
                          backend_config(b, n, t, k.shape[1], q.dtype, scale, causal, True),
                          api_version="API_VERSION_STATUS_RETURNING",
                          operand_layouts=(_BTNH,) * 3 + (_STATS,) + (_BTNH,) * 2,
                          result_layouts=(_BNTH_AS_BTNH,) * 3 + ((0,),),
                          scale=scale, causal=causal)
    dq, dk, dv, _ = call(q, k, v, stats, d_out, out)
    return _to_btnh(dq), _to_btnh(dk), _to_btnh(dv)


def attention(q: Array, k: Array, v: Array, scale: float | None = None,
              causal: bool = False) -> Array:
    """``softmax(scale q k^T) v`` by cuDNN: ``q`` (B, T, N, H), ``k``/``v`` (B, S, K, H) with
    N a multiple of K, bfloat16 or float16 (``unsupported`` says what else it needs).
    Reverse-mode differentiable (cuDNN's backward kernel); forward mode is not (as jax)."""
    scale = 1.0 / float(q.shape[-1]) ** 0.5 if scale is None else float(scale)
    return _fused(scale, bool(causal))(q, k, v)


def _fused(scale: float, causal: bool):
    def primal(q, k, v):
        return forward(q, k, v, scale, causal, stats=False)

    def fwd(q, k, v):
        out, stats = forward(q, k, v, scale, causal, stats=True)
        return out, (q, k, v, out, stats)

    def bwd(saved, ct):
        q, k, v, out, stats = saved
        return backward(q, k, v, stats, ops.Convert(q.dtype)(ct) if ct.dtype is not q.dtype
                        else ct, out, scale, causal)

    return custom_vjp(primal).defvjp(fwd, bwd)


# -- batching (vmap): the mapped dimension folded into B, as jax's batcher does ----------

@batch_rule.dispatch
def fused_attention_batched(op: FusedAttention, args: tuple, dims: tuple):
    size = next(a.shape[0] for a, d in zip(args, dims) if d is not None)
    args = [a if d is not None else ops.Broadcast((size,) + a.shape,
                                                  tuple(range(1, a.ndim + 1)))(a)
            for a, d in zip(args, dims)]
    flat = [ops.Reshape((a.shape[0] * a.shape[1],) + a.shape[2:])(a) for a in args]
    if op.target == FORWARD:
        stats = len(op.out_type.elements) == 3
        out = forward(*flat, op.scale, op.causal, stats)
        out = (out,) if not stats else out
        # forward() transposed O back to BTNH; this op's own result is BNTH
        results = [_to_btnh(out[0])] + list(out[1:])
    else:
        results = [_to_btnh(r) for r in backward(*flat, op.scale, op.causal)]
    unfolded = [ops.Reshape((size, r.shape[0] // size) + r.shape[1:])(r) for r in results]
    # The workspace is XLA's scratch (u8[0] until XLA sizes it): one, unbatched.
    workspace = filled(0, uint8, op.out_type.elements[-1].shape)
    return tuple(unfolded) + (workspace,), (0,) * len(unfolded) + (None,)
