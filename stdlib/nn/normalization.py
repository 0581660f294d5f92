"""Normalisation layers: batch_norm (training and inference) and layer_norm.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn
>>> x = hd.array(np.float32([[1, 10], [3, 30]]))
>>> nn.layer_norm(x, 2, eps=0.0)
hlodsl.Array[float32, (2, 2)](
  [[-1.,  1.],
   [-1.,  1.]])
"""

from __future__ import annotations

import operator

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.errors import ShapeError

from ..creation import ones, zeros
from ..manipulation import fail
from ..promotion import lift
from ..reductions import mean
from ._args import check_range, require_float, static_real

__all__ = ["batch_norm", "layer_norm"]


def _vector(v, c: int, x: Array, what: str, name: str, fill: float):
    if v is None:
        return (ones if fill else zeros)((c,), dtype=x.dtype)
    require_float(v, what, name)
    if v.shape != (c,) or v.dtype is not x.dtype:
        raise fail(ShapeError, f"{what}: {name} must be {x.dtype.__name__}[{c}] (one per "
                               f"channel of x {x.type}), got {v.type}")
    return v


def batch_norm(x: Array, running_mean: Array | None, running_var: Array | None,
               weight: Array | None = None, bias: Array | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5):
    """Batch normalisation over channels-first ``x`` ``(N, C, *spatial)``, as torch's.

    In training, ``x`` is normalised by its own per-channel mean and biased
    variance and the result is ``(y, new_mean, new_var)``, the running
    statistics updated as ``(1 - momentum) * running + momentum * batch`` with
    the *unbiased* batch variance (``None`` where the running statistic is
    ``None``). In inference (``training=False``) ``x`` is normalised by the
    running statistics and the result is ``y`` alone. ``weight`` and ``bias``
    (``(C,)``) default to ones and zeros.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.float32([[1], [3]]))                     # N=2, C=1
    >>> y, m, v = batch_norm(x, hd.array(np.float32([0])), hd.array(np.float32([1])),
    ...                      training=True, eps=0.0)
    >>> y, m, v
    (hlodsl.Array[float32, (2, 1)](
      [[-1.],
       [ 1.]]), hlodsl.Array[float32, (1,)]([0.2]), hlodsl.Array[float32, (1,)]([1.1]))
    >>> np.round(np.asarray(batch_norm(x, m, v)), 4)             # (x - 0.2) / sqrt(1.1 + eps)
    array([[0.7628],
           [2.6697]], dtype=float32)
    """
    require_float(x, "batch_norm", "x")
    check_range(eps, static_real(eps, "batch_norm", "eps") >= 0, "batch_norm", "eps",
                "non-negative (>= 0)")
    check_range(momentum, 0 <= static_real(momentum, "batch_norm", "momentum") <= 1,
                "batch_norm", "momentum", "in [0, 1]")
    if x.ndim < 2:
        raise fail(ShapeError, f"batch_norm: x must be (N, C, *spatial), got {x.type}")
    c = x.shape[1]
    weight = _vector(weight, c, x, "batch_norm", "weight", 1)
    bias = _vector(bias, c, x, "batch_norm", "bias", 0)
    if not training:
        if running_mean is None or running_var is None:
            raise fail(ValueError, "batch_norm: inference (training=False) needs "
                                   "running_mean and running_var")
        mean_ = _vector(running_mean, c, x, "batch_norm", "running_mean", 0)
        var_ = _vector(running_var, c, x, "batch_norm", "running_var", 1)
        return ops.BatchNormInference(float(eps), 1)(x, weight, bias, mean_, var_)
    y, batch_mean, batch_var = ops.BatchNormTraining(float(eps), 1)(x, weight, bias)
    n = x.size // c
    new_mean = new_var = None
    if running_mean is not None:
        running_mean = _vector(running_mean, c, x, "batch_norm", "running_mean", 0)
        new_mean = running_mean * (1 - momentum) + batch_mean * momentum
    if running_var is not None:
        running_var = _vector(running_var, c, x, "batch_norm", "running_var", 1)
        unbiased = batch_var * (n / (n - 1)) if n > 1 else batch_var
        new_var = running_var * (1 - momentum) + unbiased * momentum
    return y, new_mean, new_var


def layer_norm(x: Array, normalized_shape, weight: Array | None = None,
               bias: Array | None = None, eps: float = 1e-5):
    """Normalise over the trailing ``normalized_shape`` dims of ``x``, as torch's ``layer_norm``.

    ``(x - mean) / sqrt(var + eps) * weight + bias`` with the biased variance;
    ``weight`` and ``bias`` have shape ``normalized_shape`` (an int or tuple).

    >>> import numpy as np, hlodsl as hd
    >>> layer_norm(hd.array(np.float32([[0, 2, 4]])), 3, eps=0.0).shape
    (1, 3)
    """
    require_float(x, "layer_norm", "x")
    shape = normalized_shape if isinstance(normalized_shape, (tuple, list)) else \
        (normalized_shape,)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise fail(TypeError, f"layer_norm: normalized_shape must be an int or a tuple of "
                              f"ints, got {normalized_shape!r}") from None
    check_range(eps, static_real(eps, "layer_norm", "eps") >= 0, "layer_norm", "eps",
                "non-negative (>= 0)")
    k = len(shape)
    if k == 0 or k > x.ndim or x.shape[x.ndim - k:] != shape:
        raise fail(ShapeError, f"layer_norm: normalized_shape {shape} must be the trailing "
                               f"dims of x {x.type}")
    axes = tuple(range(x.ndim - k, x.ndim))
    centred = x - mean(x, axis=axes, keepdims=True)
    var = mean(centred * centred, axis=axes, keepdims=True)
    inv = ops.Rsqrt()(var + lift(eps, x.dtype))
    y = centred * inv
    for v, name in ((weight, "weight"), (bias, "bias")):
        if v is None:
            continue
        require_float(v, "layer_norm", name)
        if v.shape != shape or v.dtype is not x.dtype:
            raise fail(ShapeError, f"layer_norm: {name} must be {x.dtype.__name__}"
                                   f"{list(shape)}, got {v.type}")
        lead = ops.Broadcast(x.shape, axes)(v)
        y = y * lead if name == "weight" else y + lead
    return y

