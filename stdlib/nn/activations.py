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

__all__ = ["relu", "leaky_relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
           "logsumexp", "one_hot"]


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
    >>> silu(hd.array(np.float32([0, 1])))
    hlodsl.Array[float32, (2,)]([0.        , 0.7310586])
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


# -- logsumexp and one_hot (jax.nn's) ------------------------------------------------------

@custom_vjp
def _no_gradient(x: Array):
    return x


_no_gradient.defvjp(lambda x: (x, None), lambda residuals, ct: (None,))


def logsumexp(x: Array, axis=None, b=None, keepdims: bool = False, return_sign: bool = False):
    """``log(sum(b * exp(x)))`` over ``axis`` (all by default), without overflow.

    As ``jax.nn.logsumexp`` (and ``jax.scipy.special.logsumexp``): the largest
    element is taken out first (and held constant for the derivative, which
    is then exactly ``b * softmax(x)``: 0 at an element of -inf), a row of
    only -inf gives -inf (and, as jax's, a NaN gradient: the derivative is
    undefined there), and +inf gives +inf.

    Args:
        x: a floating-point array.
        axis: an int, a tuple of ints, or None (every axis).
        b: weights broadcastable to ``x`` (may be negative with ``return_sign``).
        keepdims: keep the reduced axes with size 1.
        return_sign: return ``(log(abs(s)), sign(s))`` of the weighted sum ``s``.

    >>> import numpy as np, hlodsl as hd
    >>> from hlodsl.stdlib import nn
    >>> nn.logsumexp(hd.array(np.float32([1000, 1000])))        # log(2) + 1000
    hlodsl.Array[float32, ()](1000.6932)
    >>> nn.logsumexp(hd.array(np.float32([[0, -np.inf], [-np.inf, -np.inf]])), axis=1)
    hlodsl.Array[float32, (2,)]([   0., -inf])
    """
    from ..elementwise import abs as abs_, isfinite, sign
    from ..manipulation import where
    from ..reductions import normalize_axes

    require_float(x, "logsumexp", "x")
    axes = normalize_axes(axis, x.ndim, "logsumexp")
    if any(x.shape[a] == 0 for a in axes):  # an empty sum: log(0)
        shape = tuple(1 if (d in axes) else s for d, s in enumerate(x.shape)) if keepdims \
            else tuple(s for d, s in enumerate(x.shape) if d not in axes)
        out = ops.Broadcast(shape)(_lift_like(-math.inf, x))
        return (out, ops.Broadcast(shape)(_lift_like(0, x))) if return_sign else out
    m = max(x, axis=axes, keepdims=True)
    m = _no_gradient(where(isfinite(m), m, zeros_like(m)))
    e = exp(x - m)
    if b is not None:
        e = e * b
    s = sum(e, axis=axes, keepdims=True)
    if return_sign:
        sgn = sign(s)
        s = abs_(s)
    out = log(s) + m
    if not keepdims:
        kept = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        out = ops.Reshape(kept)(out)
        if return_sign:
            sgn = ops.Reshape(kept)(sgn)
    return (out, sgn) if return_sign else out


def _lift_like(value, x: Array) -> Array:
    from ..promotion import lift

    return lift(value, x.dtype)


def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
    """``x``'s integer classes as one-hot vectors of ``num_classes`` along a new ``axis``.

    As ``jax.nn.one_hot``: a class outside ``[0, num_classes)`` gives a row of
    zeros. ``dtype`` defaults to the default float type (``hd.config.default_float``).

    >>> import numpy as np, hlodsl as hd
    >>> from hlodsl.stdlib import nn
    >>> nn.one_hot(hd.array(np.int32([0, 2, 5])), 3)
    hlodsl.Array[float64, (3, 3)](
      [[1., 0., 0.],
       [0., 0., 1.],
       [0., 0., 0.]])
    """
    from hlodsl.arrays.dtypes import Integer, default_inexact, float64

    from ..manipulation import as_dtype, as_int, fail

    x = require_array_like(x, "one_hot", "x")
    if not isinstance(x, Array):
        import numpy as np

        from hlodsl.arrays.array import array

        x = array(np.asarray(x))
    if not issubclass(x.dtype, Integer):
        raise fail(TypeError, f"one_hot: x must hold integer classes, got {x.type}")
    n = as_int(num_classes, "one_hot", "num_classes")
    if n < 0:
        raise fail(ValueError, f"one_hot: num_classes must be >= 0, got {n}")
    dtype = default_inexact(float64) if dtype is None else as_dtype(dtype, "one_hot")
    at = normalize_axis(axis, x.ndim + 1, "one_hot")
    shape = x.shape[:at] + (n,) + x.shape[at:]
    classes = ops.Iota(x.dtype, shape, at)()
    spread = ops.Broadcast(shape, tuple(d for d in range(len(shape)) if d != at))(x)
    return ops.Convert(dtype)(ops.Compare("EQ")(classes, spread))
