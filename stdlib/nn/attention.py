"""Scaled dot-product attention, as ``jax.nn.dot_product_attention``: cuDNN's fused
kernel on a GPU, the composite ("xla") elsewhere.

The composite is written with the array API (products, a float32 softmax, ``where``
for masks), so ``hd.grad`` differentiates it and the memory passes
(``hd.compile(f, memory_limit=...)``) can split its (T, S) score matrix. On a GPU,
for bfloat16/float16 operands cuDNN takes (``nn/cudnn.py``), the default
(``implementation=None``) calls cuDNN's flash attention, as jax's
``implementation="cudnn"`` does: it never writes the score matrix, so it needs
no splitting under a memory limit either.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn
>>> q = hd.array(np.ones((1, 3, 2, 4), np.float32))          # (B, T, N, H)
>>> nn.dot_product_attention(q, q, q, is_causal=True).shape
(1, 3, 2, 4)
"""

from __future__ import annotations

import math

import numpy as np

from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import Bool
from hlodsl.errors import ShapeError

from ..creation import arange
from ..data_types import astype, finfo, float32, result_type
from ..elementwise import logical_and, multiply
from ..linalg import matmul
from ..manipulation import expand_dims, fail, permute_dims, reshape, where
from . import cudnn
from .activations import softmax
from ._args import require_array, require_float

__all__ = ["dot_product_attention"]

_WHAT = "dot_product_attention"


def _as_4d(x: Array | None, name: str) -> Array | None:
    """``x`` with leading unit dims up to rank 4 (jax's ``_ensure_4d``), or None."""
    if x is None:
        return None
    require_array(x, _WHAT, name)
    if x.ndim > 4:
        raise fail(ShapeError, f"{_WHAT}: {name} must have rank 4 at most, got {x.type}")
    return reshape(x, (1,) * (4 - x.ndim) + tuple(x.shape))


def _grouped(t: Array, b: int, k: int, g: int, name: str, n: int, tq: int, s: int) -> Array:
    """A (B|1, N|1, T|1, S|1) bias or mask as (B|1, K, G|1, T|1, S|1), heads split as the
    query's: head ``n`` is group ``n // G``, member ``n % G``."""
    tb, tn, tt, ts = t.shape
    want = ((tb, b), (tn, n), (tt, tq), (ts, s))
    if any(have not in (1, size) for have, size in want):
        raise fail(ShapeError, f"{_WHAT}: {name} of shape {t.shape} does not broadcast to the "
                               f"logits' (B, N, T, S) = {(b, n, tq, s)}")
    if tn == 1:
        return expand_dims(t, axis=2)
    return reshape(t, (tb, k, g, tt, ts))


def dot_product_attention(query: Array, key: Array, value: Array, bias: Array | None = None,
                          mask: Array | None = None, *, scale: float | None = None,
                          is_causal: bool = False, implementation: str | None = None) -> Array:
    """``softmax(scale * q k^T + bias, masked) v`` per head, in jax's (B, T, N, H) layout.

    Shapes: ``query`` (B, T, N, H), ``key`` and ``value`` (B, S, K, H) with N a
    multiple of K (grouped-query attention: query head ``n`` reads key/value head
    ``n // (N // K)``); rank-3 inputs (T, N, H) drop B. ``bias`` (added to the
    logits) and ``mask`` (bool, True = attend) broadcast to (B, N, T, S), rank 4 or
    less (leading dims added). ``scale`` defaults to ``1 / sqrt(H)``; ``is_causal``
    lets query ``t`` attend to keys ``s <= t`` only. As jax does, the logits are
    computed in ``promote(dtype, float32)``, masked entries set to ``-0.7 *`` the
    largest float32, the softmax taken in float32 and its result cast to the key's
    dtype before the product with ``value``. Returns an array of ``query``'s shape
    and dtype.

    ``implementation`` (jax's names): ``"xla"`` the composite; ``"cudnn"`` cuDNN's
    fused kernel, a ``NotImplementedError`` saying why where it cannot be used (a
    CPU, float32, a bias or mask, a head dimension over 256 or not a multiple of 8);
    ``None`` (the default) cuDNN where it can be used, else the composite. jax's own
    default is the composite everywhere; hlodsl picks cuDNN on a GPU on purpose.
    The fused kernel is reverse-mode differentiable (its backward kernel), not
    forward-mode.

    >>> import numpy as np, hlodsl as hd
    >>> q = hd.array(np.zeros((2, 1, 4), np.float32))                   # T=2, N=1, H=4
    >>> v = hd.array(np.float32([[[1.0] * 4], [[3.0] * 4]]))            # S=2, K=1
    >>> dot_product_attention(q, q, v)[:, 0, 0]        # uniform weights: the mean
    hlodsl.Array[float32, (2,)]([2., 2.])
    >>> dot_product_attention(q, q, v, is_causal=True)[:, 0, 0]   # row 0 sees key 0 only
    hlodsl.Array[float32, (2,)]([1., 2.])
    """
    for name, x in (("query", query), ("key", key), ("value", value)):
        require_float(x, _WHAT, name)
    shapes = f"query {query.type}, key {key.type}, value {value.type}"
    if not (query.ndim == key.ndim == value.ndim and query.ndim in (3, 4)):
        raise fail(ShapeError, f"{_WHAT}: query, key and value must all be (B, T, N, H) "
                               f"or all (T, N, H), got {shapes}")
    out_shape = query.shape
    q, k_, v = (_as_4d(x, name) for x, name in ((query, "query"), (key, "key"),
                                                  (value, "value")))
    b, tq, n, h = q.shape
    kb, s, k, kh = k_.shape
    if v.shape != k_.shape or v.dtype is not k_.dtype:
        raise fail(ShapeError, f"{_WHAT}: value must have key's shape and dtype, got {shapes}")
    if kb != b or kh != h or q.dtype is not k_.dtype:
        raise fail(ShapeError, f"{_WHAT}: query must be (B, T, N, H) with key's B, H and "
                               f"dtype, got {shapes}")
    if k == 0 or n % k:
        raise fail(ShapeError, f"{_WHAT}: the query's heads N={n} must be a multiple of the "
                               f"key/value heads K={k}, got {shapes}")
    bias, mask = _as_4d(bias, "bias"), _as_4d(mask, "mask")
    if mask is not None and not issubclass(mask.dtype, Bool):
        raise fail(TypeError, f"{_WHAT}: mask must be bool (True = attend), got {mask.type}")
    if scale is None:
        scale = 1.0 / math.sqrt(h)
    if implementation not in (None, "cudnn", "xla"):
        raise fail(ValueError, f"{_WHAT}: implementation must be None, 'cudnn' or 'xla', got "
                               f"{implementation!r}")
    if implementation != "xla":
        why = cudnn.unsupported(q, k_, v, bias, mask) if isinstance(scale, (int, float)) \
            else f"its scale is a number fixed when staging, got {type(scale).__name__}"
        if why is None:
            return reshape(cudnn.attention(q, k_, v, scale, bool(is_causal)), out_shape)
        if implementation == "cudnn":
            raise fail(NotImplementedError, f"{_WHAT}(implementation='cudnn') of {shapes}: "
                                            f"cuDNN's fused attention cannot be used: {why}")
    g = n // k

    # (B, K, G, T, H) @ (B, K, 1, H, S): each group of G query heads meets its key head.
    logits_dtype = result_type(q.dtype, float32)
    qg = permute_dims(reshape(astype(q, logits_dtype), (b, tq, k, g, h)), (0, 2, 3, 1, 4))
    kt = expand_dims(permute_dims(astype(k_, logits_dtype), (0, 2, 3, 1)), axis=2)
    logits = multiply(matmul(qg, kt), np.asarray(scale, logits_dtype.np_dtype))
    if bias is not None:
        logits = astype(logits + _grouped(bias, b, k, g, "bias", n, tq, s), logits_dtype)
    keep = None
    if mask is not None:
        keep = _grouped(mask, b, k, g, "mask", n, tq, s)
    if is_causal:
        causal = arange(tq)[:, None] >= arange(s)[None, :]
        keep = causal if keep is None else logical_and(keep, causal)
    if keep is not None:
        # jax's large negative: finite in float32, so a fully masked row stays uniform
        lowest = -0.7 * min(float(finfo(logits_dtype).max), float(np.finfo(np.float32).max))
        logits = where(keep, logits, np.asarray(lowest, logits_dtype.np_dtype))
    probs = astype(softmax(astype(logits, float32), axis=-1), k_.dtype)
    vg = expand_dims(permute_dims(v, (0, 2, 1, 3)), axis=2)            # (B, K, 1, S, H)
    out = reshape(matmul(probs, vg), (b, n, tq, h))                       # (B, K, G, T, H)
    return reshape(permute_dims(out, (0, 2, 1, 3)), out_shape)
