"""The models of ``benchmarks.torch_cpu``, written once over a namespace of layers.

A small GPT and a small ResNet are functions of ``(F, params, inputs)``: ``F`` is one
of :func:`hd_layers`, :func:`torch_layers`, :func:`jax_layers`, a namespace with the
handful of layers the models use, each the library's own (``hlodsl.stdlib.nn``,
``torch.nn.functional``, ``jax.nn``/``jax.lax``): every side runs its idiomatic
kernels (torch's fused scaled-dot-product attention, XLA's convolutions) on the same
weights.

- :func:`gpt_loss`: a GPT (token and position embeddings, pre-LayerNorm blocks of
  causal multi-head attention and a GELU MLP, final LayerNorm, output layer tied
  to the token embedding), mean next-token cross-entropy.
- :func:`resnet_loss`: a CIFAR-style ResNet on NCHW images (a 3x3 stem, stages of
  basic residual blocks, conv + batch norm (batch statistics) + ReLU, 1x1
  projection shortcuts where the width or stride changes, global average pool,
  linear classifier), mean cross-entropy.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

__all__ = ["GPT", "RESNET", "gpt_params", "gpt_loss", "resnet_params", "resnet_loss",
           "hd_layers", "torch_layers", "jax_layers"]

#: The GPT of the issue's table: vocabulary, layers, batch, tokens, width, heads.
GPT = {"vocab": 1024, "layers": 2, "batch": 8, "tokens": 128, "width": 256, "heads": 4}
#: The ResNet: batch, image side, stage widths, blocks per stage, classes.
RESNET = {"batch": 32, "side": 32, "widths": (16, 32, 64), "blocks": 2, "classes": 10}

EPS = 1e-5


def _normal(rng, *shape, scale=None):
    scale = 1 / np.sqrt(shape[-1]) if scale is None else scale
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def gpt_params(size: dict, seed: int = 0) -> dict:
    """The GPT's weights (numpy float32), torch's layouts (linear weights ``(out, in)``)."""
    rng = np.random.default_rng(seed)
    d, v = size["width"], size["vocab"]
    ones, zeros = (lambda: np.ones(d, np.float32)), (lambda: np.zeros(d, np.float32))

    def block():
        return {"ln1_w": ones(), "ln1_b": zeros(), "attn_w": _normal(rng, 3 * d, d),
                "attn_b": zeros().repeat(3), "proj_w": _normal(rng, d, d), "proj_b": zeros(),
                "ln2_w": ones(), "ln2_b": zeros(), "fc_w": _normal(rng, 4 * d, d),
                "fc_b": zeros().repeat(4), "out_w": _normal(rng, d, 4 * d), "out_b": zeros()}

    return {"wte": _normal(rng, v, d, scale=0.02), "wpe": _normal(rng, size["tokens"], d,
                                                                  scale=0.02),
            "blocks": [block() for _ in range(size["layers"])], "lnf_w": ones(),
            "lnf_b": zeros()}


def gpt_tokens(size: dict, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Token ids ``(batch, tokens)`` and their next-token labels (int32)."""
    ids = np.random.default_rng(seed).integers(0, size["vocab"],
                                               (size["batch"], size["tokens"] + 1))
    return ids[:, :-1].astype(np.int32), ids[:, 1:].astype(np.int32)


def gpt_loss(F, p: dict, ids, labels, heads: int):
    """Mean next-token cross-entropy of the GPT on ``ids`` ``(B, T)``."""
    b, t = ids.shape
    v, d = p["wte"].shape
    x = F.embedding(ids, p["wte"]) + p["wpe"]
    for blk in p["blocks"]:
        h = F.layer_norm(x, blk["ln1_w"], blk["ln1_b"])
        qkv = F.linear(h, blk["attn_w"], blk["attn_b"])
        q, k, w = (F.reshape(qkv[:, :, i * d:(i + 1) * d], (b, t, heads, d // heads))
                   for i in range(3))
        o = F.causal_attention(q, k, w)
        x = x + F.linear(F.reshape(o, (b, t, d)), blk["proj_w"], blk["proj_b"])
        h = F.layer_norm(x, blk["ln2_w"], blk["ln2_b"])
        x = x + F.linear(F.gelu(F.linear(h, blk["fc_w"], blk["fc_b"])), blk["out_w"],
                         blk["out_b"])
    x = F.layer_norm(x, p["lnf_w"], p["lnf_b"])
    logits = F.linear(x, p["wte"])
    return F.cross_entropy(F.reshape(logits, (b * t, v)), F.reshape(labels, (b * t,)))


def resnet_params(size: dict, seed: int = 0) -> dict:
    """The ResNet's weights (numpy float32): conv weights OIHW, He-initialised."""
    rng = np.random.default_rng(seed)

    def conv(o, i, k):
        return _normal(rng, o, i, k, k, scale=np.sqrt(2 / (i * k * k)))

    def bn(c):
        return {"w": np.ones(c, np.float32), "b": np.zeros(c, np.float32)}

    widths = size["widths"]
    p = {"stem": conv(widths[0], 3, 3), "stem_bn": bn(widths[0]), "blocks": []}
    c_in = widths[0]
    for stage, c in enumerate(widths):
        for j in range(size["blocks"]):
            stride = 2 if stage and not j else 1
            blk = {"conv1": conv(c, c_in, 3), "bn1": bn(c), "conv2": conv(c, c, 3), "bn2": bn(c)}
            if stride != 1 or c_in != c:
                blk["proj"], blk["proj_bn"] = conv(c, c_in, 1), bn(c)
            p["blocks"].append(blk)
            c_in = c
    p["fc_w"] = _normal(rng, size["classes"], c_in)
    p["fc_b"] = np.zeros(size["classes"], np.float32)
    return p


def resnet_images(size: dict, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(batch, 3, side, side)`` and class labels (int32)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((size["batch"], 3, size["side"], size["side"])).astype(np.float32)
    return x, rng.integers(0, size["classes"], size["batch"]).astype(np.int32)


def resnet_loss(F, p: dict, x, labels):
    """Mean cross-entropy of the ResNet on NCHW images ``x`` (batch statistics in the norms)."""
    def conv_bn(x, w, bn, stride):
        pad = w.shape[-1] // 2
        return F.batch_norm(F.conv(x, w, stride, pad), bn["w"], bn["b"])

    x = F.relu(conv_bn(x, p["stem"], p["stem_bn"], 1))
    for blk in p["blocks"]:
        stride = 2 if "proj" in blk else 1  # a projection where a stage starts: stride 2
        h = F.relu(conv_bn(x, blk["conv1"], blk["bn1"], stride))
        h = conv_bn(h, blk["conv2"], blk["bn2"], 1)
        short = conv_bn(x, blk["proj"], blk["proj_bn"], stride) if "proj" in blk else x
        x = F.relu(h + short)
    x = F.spatial_mean(x)
    return F.cross_entropy(F.linear(x, p["fc_w"], p["fc_b"]), labels)


# -- the namespaces --------------------------------------------------------------------

def hd_layers():
    """The layers from ``hlodsl.stdlib.nn``."""
    import hlodsl.stdlib as xp
    from hlodsl.stdlib import nn

    return SimpleNamespace(
        embedding=nn.embedding, linear=nn.linear, reshape=xp.reshape, relu=nn.relu,
        layer_norm=lambda x, w, b: nn.layer_norm(x, x.shape[-1], w, b, EPS),
        gelu=lambda x: nn.gelu(x, approximate="tanh"),
        causal_attention=lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True),
        cross_entropy=nn.cross_entropy,
        conv=lambda x, w, stride, pad: nn.conv(x, w, None, stride, pad),
        batch_norm=lambda x, w, b: nn.batch_norm(x, None, None, w, b, training=True, eps=EPS)[0],
        spatial_mean=lambda x: xp.mean(x, axis=(2, 3)))


def torch_layers():
    """The layers from ``torch.nn.functional`` (fused attention: ``scaled_dot_product_attention``)."""
    import torch
    import torch.nn.functional as tf

    def attention(q, k, v):  # torch's layout is (B, N, T, H)
        q, k, v = (a.transpose(1, 2) for a in (q, k, v))
        return tf.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)

    return SimpleNamespace(
        embedding=lambda ids, table: tf.embedding(ids.long(), table), linear=tf.linear,
        reshape=torch.reshape, relu=tf.relu,
        layer_norm=lambda x, w, b: tf.layer_norm(x, (x.shape[-1],), w, b, EPS),
        gelu=lambda x: tf.gelu(x, approximate="tanh"), causal_attention=attention,
        cross_entropy=lambda logits, labels: tf.cross_entropy(logits, labels.long()),
        conv=lambda x, w, stride, pad: tf.conv2d(x, w, None, stride, pad),
        batch_norm=lambda x, w, b: tf.batch_norm(x, None, None, w, b, training=True, eps=EPS),
        spatial_mean=lambda x: x.mean(dim=(2, 3)))


def jax_layers():
    """The layers from ``jax.nn``, ``jax.lax`` and optax's cross-entropy."""
    import jax
    import jax.numpy as jnp
    import optax

    def layer_norm(x, w, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + EPS) * w + b

    def linear(x, w, b=None):
        y = jax.lax.dot_general(x, w, (((x.ndim - 1,), (1,)), ((), ())))
        return y if b is None else y + b

    def batch_norm(x, w, b):
        mu = jnp.mean(x, axis=(0, 2, 3), keepdims=True)
        var = jnp.mean(jnp.square(x - mu), axis=(0, 2, 3), keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + EPS) * w[:, None, None] + b[:, None, None]

    def conv(x, w, stride, pad):
        return jax.lax.conv_general_dilated(x, w, (stride, stride), ((pad, pad), (pad, pad)),
                                            dimension_numbers=("NCHW", "OIHW", "NCHW"))

    return SimpleNamespace(
        embedding=lambda ids, table: table[ids], linear=linear, reshape=jnp.reshape,
        relu=jax.nn.relu, layer_norm=layer_norm,
        gelu=lambda x: jax.nn.gelu(x, approximate=True),
        causal_attention=lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True),
        cross_entropy=lambda logits, labels: jnp.mean(
            optax.softmax_cross_entropy_with_integer_labels(logits, labels)),
        conv=conv, batch_norm=batch_norm, spatial_mean=lambda x: jnp.mean(x, axis=(2, 3)))
