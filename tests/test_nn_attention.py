"""nn.dot_product_attention against jax.nn.dot_product_attention(implementation="xla"):
values and gradients on drawn shapes (grouped-query heads, rank 3 and 4, causal, masks,
biases that broadcast), dtypes, and clear errors for bad shapes."""

import jax
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
from hlodsl.errors import ShapeError
from hlodsl.stdlib import nn


def _jax(q, k, v, bias=None, mask=None, **kw):
    return jax.nn.dot_product_attention(q, k, v, bias, mask, implementation="xla", **kw)


@st.composite
def problems(draw):
    """(q, k, v, bias, mask, is_causal, scale) as numpy arrays; rank 3 drops B."""
    rank = draw(st.sampled_from([3, 4]))
    b = draw(st.integers(1, 2)) if rank == 4 else 1
    t, s, h = draw(st.integers(1, 5)), draw(st.integers(1, 6)), draw(st.sampled_from([2, 4]))
    k, g = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    lead = (b,) if rank == 4 else ()

    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    q, key, v = normal(*lead, t, k * g, h), normal(*lead, s, k, h), normal(*lead, s, k, h)

    def side(kind):  # a bias/mask shape broadcasting to (B, N, T, S), or None
        if not draw(st.booleans()):
            return None
        shape = [draw(st.sampled_from([1, n])) for n in (b, k * g, t, s)]
        shape = shape[draw(st.integers(0, 2)):] if rank == 4 else shape[1:]
        return normal(*shape) if kind == "bias" else rng.random(shape) > 0.3

    scale = draw(st.sampled_from([None, 0.5]))
    return q, key, v, side("bias"), side("mask"), draw(st.booleans()), scale


# Each example compiles once on each side (op-by-op eager calls would compile every op).
@settings(max_examples=10, deadline=None)
@given(problems())
def test_values_match_jax(problem):
    q, k, v, bias, mask, causal, scale = problem
    kw = dict(scale=scale, is_causal=causal)
    hd_args = [None if a is None else hd.array(a) for a in (q, k, v, bias, mask)]
    got = hd.compile(lambda *a: nn.dot_product_attention(*a, **kw))(*hd_args)
    want = jax.jit(lambda *a: _jax(*a, **kw))(q, k, v, bias, mask)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-6)


@settings(max_examples=5, deadline=None)
@given(problems())
def test_gradients_match_jax(problem):
    q, k, v, bias, mask, causal, scale = problem
    w = np.random.default_rng(1).standard_normal(q.shape).astype(np.float32)
    bias = np.zeros((1,) * q.ndim, np.float32) if bias is None else bias

    def loss_hd(q, k, v, bias):
        m = None if mask is None else hd.array(mask)
        return (nn.dot_product_attention(q, k, v, bias, m, scale=scale, is_causal=causal)
                * hd.array(w)).sum()

    def loss_jax(q, k, v, bias):
        return (_jax(q, k, v, bias, mask, scale=scale, is_causal=causal) * w).sum()

    got = hd.compile(hd.grad(loss_hd, argnums=(0, 1, 2, 3)))(*map(hd.array, (q, k, v, bias)))
    want = jax.jit(jax.grad(loss_jax, argnums=(0, 1, 2, 3)))(q, k, v, bias)
    for name, a, b in zip("qkvb", got, want, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5,
                                   err_msg=name)


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16, np.float64])
def test_other_dtypes_as_jax(dtype):
    """Logits in promote(dtype, f32), softmax in f32, probabilities in the key's dtype."""
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 4, 2, 8)).astype(dtype) for _ in range(3))
    got = hd.compile(lambda *a: nn.dot_product_attention(*a, is_causal=True))(
        *map(hd.array, (q, k, v)))
    want = _jax(q, k, v, is_causal=True)
    assert got.dtype == want.dtype
    tol = 1e-6 if dtype == np.float64 else 1e-2  # f64: the softmax in f32, as jax
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=tol, atol=tol)


def test_fully_masked_row_is_uniform_as_jax():
    q = np.ones((1, 2, 1, 2), np.float32)
    v = np.float32([[[[1, 1]]], [[[3, 3]]]]).reshape(1, 2, 1, 2)
    mask = np.array([[[[False, False], [True, False]]]])
    got = nn.dot_product_attention(hd.array(q), hd.array(q), hd.array(v), mask=hd.array(mask))
    np.testing.assert_allclose(np.asarray(got), np.asarray(_jax(q, q, v, mask=mask)))
    np.testing.assert_allclose(np.asarray(got)[0, 0, 0], [2, 2])  # mean of both values


def test_compiles_under_a_memory_limit():
    """The composite splits: its (T, S) logits exceed the limit, the compiled program not."""
    rng = np.random.default_rng(3)
    q, k, v = (hd.array(rng.standard_normal((1, 512, 2, 16)).astype(np.float32))
               for _ in range(3))
    f = hd.compile(lambda q, k, v: nn.dot_product_attention(q, k, v), memory_limit="1MiB")
    assert f.memory_stats(q, k, v)["temp_size_in_bytes"] <= 2 ** 20
    np.testing.assert_allclose(np.asarray(f(q, k, v)),
                               np.asarray(_jax(*(np.asarray(a) for a in (q, k, v)))),
                               rtol=1e-5, atol=1e-6)


def _arrays(*shapes, dtype=np.float32):
    return [hd.array(np.zeros(s, dtype)) for s in shapes]


@pytest.mark.parametrize("shapes, kw, match", [
    (((2, 3, 4, 8), (2, 5, 3, 8), (2, 5, 3, 8)), {}, r"N=4 must be a multiple of .* K=3"),
    (((2, 3, 4, 8), (1, 5, 2, 8), (1, 5, 2, 8)), {}, r"key's B, H"),
    (((2, 3, 4, 8), (2, 5, 2, 8), (2, 6, 2, 8)), {}, r"value must have key's shape"),
    (((3, 4, 8), (2, 5, 2, 8), (2, 5, 2, 8)), {},
     r"must all be \(B, T, N, H\) or all \(T, N, H\)"),
    (((2, 3, 4, 8), (2, 5, 2, 8), (2, 5, 2, 8)), {"bias": (2, 4, 3, 4)},
     r"bias of shape \(2, 4, 3, 4\) does not broadcast to .* \(2, 4, 3, 5\)"),
])
def test_bad_shapes_name_the_function_and_shapes(shapes, kw, match):
    args = _arrays(*shapes)
    extra = {k: hd.array(np.zeros(s, np.float32)) for k, s in kw.items()}
    with pytest.raises(ShapeError, match=match) as err:
        nn.dot_product_attention(*args, **extra)
    assert str(err.value).startswith("dot_product_attention: ")
    assert "query f32[" in str(err.value) or "bias" in kw


def test_mask_must_be_bool():
    q = hd.array(np.zeros((1, 2, 1, 4), np.float32))
    with pytest.raises(TypeError, match="dot_product_attention: mask must be bool"):
        nn.dot_product_attention(q, q, q, mask=hd.array(np.ones((1, 1, 2, 2), np.float32)))


# -- implementation=: cuDNN's fused kernel staged for a GPU, the composite elsewhere ------

def _custom_calls(text: str) -> list[str]:
    return [ln.split('custom_call_target="')[1].split('"')[0] for ln in text.splitlines()
            if "custom-call(" in ln]


def test_the_default_is_cudnn_staged_for_a_gpu_and_the_composite_where_cudnn_cannot_run():
    bf16 = hd.ArrayType(hd.bfloat16, (2, 64, 4, 32))
    kv = hd.ArrayType(hd.bfloat16, (2, 48, 2, 32))  # grouped heads, S != T
    gpu = hd.code_hlo(nn.dot_product_attention, bf16, kv, kv, platform="gpu")
    assert _custom_calls(gpu) == ["__cudnn$fmhaSoftmax"] and '\\"mask_type\\": \\"NO_MASK\\"' in gpu
    causal = hd.code_hlo(lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True),
                         bf16, kv, kv, platform="gpu")
    assert '\\"mask_type\\": \\"CAUSAL\\"' in causal
    grad = hd.code_hlo(hd.grad(lambda q, k, v: hd.stdlib.sum(hd.stdlib.astype(
        nn.dot_product_attention(q, k, v), hd.float32)), argnums=(0, 1, 2)), bf16, kv, kv,
        platform="gpu")
    assert _custom_calls(grad) == ["__cudnn$fmhaSoftmax", "__cudnn$fmhaSoftmaxBackward"]
    # where cuDNN cannot run: the composite (no custom call), as "xla" always is
    f32 = hd.ArrayType(hd.float32, (2, 64, 4, 32))
    odd_h = hd.ArrayType(hd.bfloat16, (1, 16, 2, 12))
    mask = hd.ArrayType(hd.bool_, (1, 1, 64, 48))
    for args in ((f32, f32, f32), (odd_h, odd_h, odd_h)):
        assert not _custom_calls(hd.code_hlo(nn.dot_product_attention, *args, platform="gpu"))
    masked = hd.code_hlo(lambda q, k, v, m: nn.dot_product_attention(q, k, v, mask=m),
                         bf16, kv, kv, mask, platform="gpu")
    assert not _custom_calls(masked)
    xla = hd.code_hlo(lambda q, k, v: nn.dot_product_attention(q, k, v, implementation="xla"),
                      bf16, kv, kv, platform="gpu")
    assert not _custom_calls(xla)
    assert not _custom_calls(hd.code_hlo(nn.dot_product_attention, bf16, kv, kv))  # this CPU


def test_cudnn_where_it_cannot_run_says_why():
    q = hd.array(np.ones((1, 8, 2, 16), np.float32))
    with pytest.raises(NotImplementedError, match="it runs on a CUDA GPU, and this stages for"):
        nn.dot_product_attention(q, q, q, implementation="cudnn")
    f32 = hd.ArrayType(hd.float32, (1, 8, 2, 16))
    with pytest.raises(NotImplementedError, match="bfloat16 or float16"):
        hd.code_hlo(lambda q: nn.dot_product_attention(q, q, q, implementation="cudnn"), f32,
                    platform="gpu")
    big = hd.ArrayType(hd.bfloat16, (1, 8, 2, 264))
    with pytest.raises(NotImplementedError, match="multiple of 8 and at most 256"):
        hd.code_hlo(lambda q: nn.dot_product_attention(q, q, q, implementation="cudnn"), big,
                    platform="gpu")
    with pytest.raises(ValueError, match="implementation must be None, 'cudnn' or 'xla'"):
        nn.dot_product_attention(q, q, q, implementation="flash")


def test_cudnn_scale_and_rank_3_inputs_reach_the_call():
    q3 = hd.ArrayType(hd.float16, (32, 4, 64))  # (T, N, H): B = 1
    text = hd.code_hlo(lambda q: nn.dot_product_attention(q, q, q, scale=0.5), q3,
                       platform="gpu")
    assert '\\"fmha_scale\\": 0.5' in text and "(f16[1,4,32,64]{3,1,2,0}, u8[0]{0})" in text
