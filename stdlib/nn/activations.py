"""Activation functions: relu, gelu (exact and tanh), sigmoid, tanh, softmax, log_softmax.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn
>>> nn.softmax(hd.array(np.float32([0, 0, np.log(2)])))
hlodsl.Array[float32, (3,)]([0.25, 0.25, 0.5 ])
"""

from __future__ import annotations

import math

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.transforms.custom import custom_jvp, custom_vjp

from ..creation import zeros_like
from ..elementwise import exp, log, maximum, multiply, sigmoid, tanh
from ..manipulation import normalize_axis
from ..reductions import max, sum
from ._args import require_array_like, require_float, static_real

__all__ = ["relu", "leaky_relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax"]


def _relu(x: Array):
    return maximum(x, 0)


def _positive(y: Array):
    return ops.Compare("GT")(y, zeros_like(y))


def _pass_where_positive(y: Array, ct: Array):
    """``ct`` where ``y > 0``, else 0: ReLU's derivative applied to ``ct``."""
    return ops.Select()(_positive(y), ct, zeros_like(ct))


def _relu_fwd(x: Array):
    y = _relu(x)
    return y, y  # y > 0 exactly where x > 0; y is kept for the backward pass anyway


def _relu_bwd(y: Array, ct: Array):
    return (_pass_where_positive(y, ct),)


def _relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _relu(x)
    return y, _pass_where_positive(y, t)


# The derivative is 1 where x > 0 and 0 elsewhere, x = 0 included, as torch's
# and jax.nn.relu's; maximum(x, 0)'s own rule would give ties half each (0.5 at
# x = 0), and spends a second compare, two selects and a multiply per element
# on it (54 of VGG19's backward instructions).
_relu_with_rules = custom_jvp(custom_vjp(_relu).defvjp(_relu_fwd, _relu_bwd)).defjvp(_relu_jvp)


def relu(x: Array):
    """``max(x, 0)`` elementwise; its derivative is 0 at ``x = 0``, as torch's.

    >>> import numpy as np, hlodsl as hd
    >>> relu(hd.array(np.float32([-1, 0, 2])))
    hlodsl.Array[float32, (3,)]([0., 0., 2.])
    >>> hd.grad(lambda x: hd.stdlib.sum(relu(x)))(hd.array(np.float32([-1, 0, 2])))
    hlodsl.Array[float32, (3,)]([0., 0., 1.])
    """
    require_array_like(x, "relu", "x")
    return _relu_with_rules(x)


def leaky_relu(x: Array, negative_slope: float = 0.01):
    """``x`` where positive, ``negative_slope * x`` elsewhere.

    >>> import numpy as np, hlodsl as hd
    >>> leaky_relu(hd.array(np.float32([-2, 3])), 0.5)
    hlodsl.Array[float32, (2,)]([-1.,  3.])
    """
    require_array_like(x, "leaky_relu", "x")
    static_real(negative_slope, "leaky_relu", "negative_slope")
    return maximum(x, multiply(x, negative_slope)) if negative_slope <= 1 else \
        ops.Select()(_positive(x), x, multiply(x, negative_slope))


def gelu(x: Array, approximate: str = "none"):
    """Gaussian error linear unit, ``x * Phi(x)``, as torch's ``gelu``.

    ``approximate="none"`` uses the exact ``Phi(x) = (1 + erf(x / sqrt 2)) / 2``;
    ``"tanh"`` uses ``(1 + tanh(sqrt(2 / pi) * (x + 0.044715 x**3))) / 2``.

    >>> import numpy as np, hlodsl as hd
    >>> gelu(hd.array(np.float32([-1, 0, 1])))
    hlodsl.Array[float32, (3,)]([-0.15865526,  0.        ,  0.8413447 ])
    >>> gelu(hd.array(np.float32([1])), approximate="tanh")
    hlodsl.Array[float32, (1,)]([0.841192])
    """
    require_float(x, "gelu", "x")
    half = multiply(x, 0.5)
    if approximate == "none":
        return half + half * ops.Erf()(multiply(x, 1 / math.sqrt(2)))
    if approximate == "tanh":
        inner = multiply(x + multiply(x * x * x, 0.044715), math.sqrt(2 / math.pi))
        return half + half * tanh(inner)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(x: Array):
    """``x * sigmoid(x)`` (also called swish).

    >>> import numpy as np, hlodsl as hd
    >>> np.asarray(silu(hd.array(np.float32([0, 1])))).round(6)
    array([0.      , 0.731059], dtype=float32)
    """
    return x * sigmoid(x)


def softmax(x: Array, axis: int = -1):
    """``exp(x) / sum(exp(x))`` along ``axis``, computed as ``exp(x - max(x))``.

    >>> import numpy as np, hlodsl as hd
    >>> softmax(hd.array(np.float32([1000, 1000])))          # no overflow
    hlodsl.Array[float32, (2,)]([0.5, 0.5])
    """
    require_float(x, "softmax", "x")
    axis = normalize_axis(axis, x.ndim, "softmax")
    if x.shape[axis] == 0:  # nothing to normalise (and max has no identity to start from)
        return x
    e = exp(x - max(x, axis=axis, keepdims=True))
    return e / sum(e, axis=axis, keepdims=True)


def log_softmax(x: Array, axis: int = -1):
    """``x - logsumexp(x)`` along ``axis``, stable for large and very negative ``x``.

    >>> import numpy as np, hlodsl as hd
    >>> log_softmax(hd.array(np.float32([0, -1e4])))         # log(1 - tiny), log(tiny)
    hlodsl.Array[float32, (2,)]([     0., -10000.])
    """
    require_float(x, "log_softmax", "x")
    axis = normalize_axis(axis, x.ndim, "log_softmax")
    if x.shape[axis] == 0:
        return x
    z = x - max(x, axis=axis, keepdims=True)
    return z - log(sum(exp(z), axis=axis, keepdims=True))
