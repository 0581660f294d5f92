"""Parameter initialisers from a key, with torch.nn.init's fans and gains.

For a weight of shape ``(out, in, *kernel)``, ``fan_in = in * prod(kernel)``
and ``fan_out = out * prod(kernel)`` (a linear weight is ``(out, in)``).

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn
>>> w = nn.kaiming_normal(nn.key(0), (256, 128, 3, 3))
>>> round(float(np.asarray(w).std()) / float(np.sqrt(2 / (128 * 9))), 1)   # gain/sqrt(fan_in)
1.0
"""

from __future__ import annotations

import math

from hlodsl.arrays.dtypes import float32

from ..creation import zeros as _zeros
from ..manipulation import fail
from ._args import check_range, static_real
from .random import key, normal, uniform  # noqa: F401  (key: for the examples)

__all__ = ["fans", "calculate_gain", "kaiming_normal", "kaiming_uniform", "xavier_normal",
           "xavier_uniform", "zeros", "he_normal", "he_uniform", "glorot_normal",
           "glorot_uniform"]


def fans(shape) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of ``shape`` (at least 2-D), as torch computes them.

    >>> fans((64, 3, 3, 3))
    (27, 576)
    """
    shape = tuple(shape)
    if len(shape) < 2:
        raise fail(ValueError, f"fans: a weight needs at least 2 dims (out, in, ...), "
                               f"got shape {shape}")
    field = math.prod(shape[2:])
    return shape[1] * field, shape[0] * field


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """torch.nn.init's recommended gain for ``nonlinearity``.

    >>> calculate_gain("relu") == math.sqrt(2), calculate_gain("tanh")
    (True, 1.6666666666666667)
    """
    linear = ("linear", "identity", "sigmoid", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
              "conv_transpose2d", "conv_transpose3d")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else static_real(param, "calculate_gain", "param")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3 / 4
    raise fail(ValueError, f"calculate_gain: unknown nonlinearity {nonlinearity!r}")


def _fan(shape, mode: str, what: str) -> int:
    fan_in, fan_out = fans(shape)
    if mode not in ("fan_in", "fan_out"):
        raise fail(ValueError, f"{what}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    return fan_in if mode == "fan_in" else fan_out


def kaiming_normal(key, shape, a: float = 0.0, mode: str = "fan_in",
                   nonlinearity: str = "leaky_relu", dtype=float32):
    """Normal with std ``gain / sqrt(fan)`` (He et al.), as ``torch.nn.init.kaiming_normal_``.

    >>> kaiming_normal(key(0), (4, 3), mode="fan_out", nonlinearity="relu").shape
    (4, 3)
    """
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(shape, mode, "kaiming_normal"))
    return normal(key, tuple(shape), dtype, std=std)


def kaiming_uniform(key, shape, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", dtype=float32):
    """Uniform in ``±gain * sqrt(3 / fan)``, as ``torch.nn.init.kaiming_uniform_``.

    >>> import numpy as np
    >>> w = np.asarray(kaiming_uniform(key(0), (100, 50)))
    >>> bool(np.abs(w).max() <= math.sqrt(2) * math.sqrt(3 / 50))
    True
    """
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3 / _fan(shape, mode, "kaiming_uniform"))
    return uniform(key, tuple(shape), dtype, -bound, bound)


def xavier_normal(key, shape, gain: float = 1.0, dtype=float32):
    """Normal with std ``gain * sqrt(2 / (fan_in + fan_out))`` (Glorot and Bengio).

    >>> xavier_normal(key(0), (3, 5)).dtype
    float32
    """
    fan_in, fan_out = fans(shape)
    _check_gain(gain, "xavier_normal")
    return normal(key, tuple(shape), dtype, std=gain * math.sqrt(2 / (fan_in + fan_out)))


def xavier_uniform(key, shape, gain: float = 1.0, dtype=float32):
    """Uniform in ``±gain * sqrt(6 / (fan_in + fan_out))``.

    >>> import numpy as np
    >>> w = np.asarray(xavier_uniform(key(0), (30, 20)))
    >>> bool(np.abs(w).max() <= math.sqrt(6 / 50))
    True
    """
    fan_in, fan_out = fans(shape)
    _check_gain(gain, "xavier_uniform")
    bound = gain * math.sqrt(6 / (fan_in + fan_out))
    return uniform(key, tuple(shape), dtype, -bound, bound)


def _check_gain(gain, what: str) -> None:
    check_range(gain, static_real(gain, what, "gain") >= 0, what, "gain", "non-negative (>= 0)")


def zeros(key, shape, dtype=float32):
    """Zeros of ``shape`` (the key is ignored; it keeps the initialisers' signature).

    >>> zeros(None, (2,))
    hlodsl.Array[float32, (2,)]([0., 0.])
    """
    return _zeros(tuple(shape), dtype=dtype)


he_normal, he_uniform = kaiming_normal, kaiming_uniform
glorot_normal, glorot_uniform = xavier_normal, xavier_uniform
