"""Random draws beyond uniform and normal: integers, permutations, categories, choices.

Signatures and argument order are ``jax.random``'s; the numbers are not jax's
(hlodsl's keys drive XLA's three-fry ``RngBitGenerator``, not jax's threefry
construction), but the same key always gives the same draw, eagerly, staged
and under ``vmap`` over a batch of keys.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn
>>> p = np.asarray(nn.permutation(nn.key(0), 5))
>>> sorted(p.tolist())
[0, 1, 2, 3, 4]
>>> bool(((np.asarray(nn.randint(nn.key(1), (100,), 3, 7)) >= 3)).all())
True
"""

from __future__ import annotations

import operator

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array, array
from hlodsl.arrays.dtypes import Floating, Integer, float32, int64, uint64

from ..manipulation import as_dtype, fail, normalize_axis
from ..promotion import lift
from .random import _check_key, _compiled, _unit_uniform, random_bits
from ._args import static_shape

__all__ = ["randint", "permutation", "categorical", "choice", "gumbel"]


def _array(x) -> Array:
    return x if isinstance(x, Array) else array(np.asarray(x))


def randint(k: Array, shape, minval, maxval, dtype=int64):
    """Integers in ``[minval, maxval)`` of ``shape`` (bounds broadcast to it).

    As ``jax.random.randint``: where ``maxval <= minval`` the result is
    ``minval``. 64 random bits per element are reduced modulo the range, so the
    bias is below ``range / 2**64``.

    >>> import numpy as np
    >>> from hlodsl.stdlib import nn
    >>> nn.randint(nn.key(0), (2, 3), 0, 1)
    hlodsl.Array[int64, (2, 3)](
      [[0, 0, 0],
       [0, 0, 0]])
    """
    _check_key(k, "randint")
    shape = static_shape(shape, "randint")
    dtype = as_dtype(dtype, "randint")
    if not issubclass(dtype, Integer):
        raise fail(TypeError, f"randint: dtype must be an integer type, got {dtype.__name__}")
    lo, hi = (_bound(v, name) for v, name in ((minval, "minval"), (maxval, "maxval")))
    return _randint(k, shape, lo, hi, dtype)


@_compiled
def _randint(k, shape, lo, hi, dtype):
    from ..broadcasting import broadcast_to

    lo = broadcast_to(ops.Convert(int64)(lo), shape)
    hi = broadcast_to(ops.Convert(int64)(hi), shape)
    span = ops.Subtract()(hi, lo)
    ok = ops.Compare("GT")(hi, lo)
    one = ops.Broadcast(shape)(lift(1, int64))
    span = ops.Convert(uint64)(ops.Select()(ok, span, one))
    offset = ops.Remainder()(random_bits(k, shape, uint64), span)
    return ops.Convert(dtype)(ops.Add()(lo, ops.Convert(int64)(offset)))


def _bound(v, name: str) -> Array:
    if not isinstance(v, Array):
        try:
            v = array(np.int64(operator.index(v)) if not isinstance(v, np.ndarray) else v)
        except TypeError:
            raise fail(TypeError, f"randint: {name} must be an integer or an integer array, "
                                  f"got {type(v).__name__} {v!r}") from None
    if not issubclass(v.dtype, Integer):
        raise fail(TypeError, f"randint: {name} must be an integer or an integer array, got "
                              f"{v.type}")
    return v


def permutation(k: Array, x, axis: int = 0, independent: bool = False):
    """A random permutation of ``range(x)`` (an int ``x``), or of ``x`` along ``axis``.

    With ``independent=True`` each slice along ``axis`` is shuffled on its own
    (otherwise whole slices move together), as ``jax.random.permutation``.
    The order comes from sorting 64 random bits per position.

    >>> import numpy as np, hlodsl as hd
    >>> from hlodsl.stdlib import nn
    >>> x = hd.array(np.arange(6).reshape(3, 2))
    >>> sorted(np.asarray(nn.permutation(nn.key(0), x)).tolist())
    [[0, 1], [2, 3], [4, 5]]
    """
    _check_key(k, "permutation")
    if not isinstance(x, (Array, np.ndarray)):
        try:
            n = operator.index(x)
        except TypeError:
            raise fail(TypeError, f"permutation: x must be an int or an array, got "
                                  f"{type(x).__name__} {x!r}") from None
        if n < 0:
            raise fail(ValueError, f"permutation: x must be >= 0, got {n}")
        return _permutation_n(k, n)
    x = _array(x)
    if x.ndim == 0:
        raise fail(ValueError, f"permutation: x must be an int or an array of rank >= 1, got "
                               f"{x.type}")
    return _permutation(k, x, normalize_axis(axis, x.ndim, "permutation"), bool(independent))


@_compiled
def _permutation_n(k, n):
    from ..searching import argsort

    return argsort(random_bits(k, (n,), uint64))


@_compiled
def _permutation(k, x, axis, independent):
    from ..indexing import take, take_along_axis
    from ..searching import argsort

    if independent:
        order = argsort(random_bits(k, x.shape, uint64), axis=axis)
        return take_along_axis(x, order, axis=axis)
    return take(x, argsort(random_bits(k, (x.shape[axis],), uint64)), axis=axis)


def gumbel(k: Array, shape=(), dtype=float32):
    """Standard Gumbel samples ``-log(-log(u))`` of ``shape``.

    >>> from hlodsl.stdlib import nn
    >>> nn.gumbel(nn.key(0), (3,)).shape
    (3,)
    """
    _check_key(k, "gumbel")
    shape = static_shape(shape, "gumbel")
    dtype = as_dtype(dtype, "gumbel")
    if not issubclass(dtype, Floating):
        raise fail(TypeError, f"gumbel: dtype must be floating-point, got {dtype.__name__}")
    return _gumbel(k, shape, dtype)


def _gumbel(k, shape, dtype):
    # u in (0, 1]: 1 - [0, 1); u = 1 gives -log(0) = +inf only if drawn exactly, never NaN.
    u = ops.Subtract()(ops.Broadcast(shape)(lift(1, dtype)), _unit_uniform(k, shape, dtype))
    return ops.Negate()(ops.Log()(ops.Negate()(ops.Log()(u))))


def categorical(k: Array, logits, axis: int = -1, shape=None):
    """Category indices drawn with probabilities ``softmax(logits)`` along ``axis``.

    By the Gumbel-max trick (``argmax(logits + gumbel)``), as
    ``jax.random.categorical``. ``shape`` (default: ``logits``' shape without
    ``axis``) may add leading dimensions of independent draws; its trailing
    dimensions must be that batch shape.

    >>> import numpy as np, hlodsl as hd
    >>> from hlodsl.stdlib import nn
    >>> logits = hd.array(np.log(np.float32([0.0, 1.0, 0.0])))
    >>> nn.categorical(nn.key(0), logits, shape=(4,))
    hlodsl.Array[int64, (4,)]([1, 1, 1, 1])
    """
    _check_key(k, "categorical")
    logits = _array(logits)
    if not issubclass(logits.dtype, Floating) or logits.ndim == 0:
        raise fail(TypeError, f"categorical: logits must be a floating-point array of rank >= "
                              f"1, got {logits.type}")
    axis = normalize_axis(axis, logits.ndim, "categorical")
    batch = logits.shape[:axis] + logits.shape[axis + 1:]
    shape = batch if shape is None else static_shape(shape, "categorical")
    if shape[len(shape) - len(batch):] != batch or len(shape) < len(batch):
        raise fail(ValueError, f"categorical: shape {shape} must end with the logits' batch "
                               f"shape {batch} (logits {logits.shape} without axis {axis})")
    return _categorical(k, logits, axis, shape[:len(shape) - len(batch)])


@_compiled
def _categorical(k, logits, axis, prefix):
    from ..searching import argmax

    full = prefix + logits.shape
    noise = _gumbel(k, full, logits.dtype)
    spread = ops.Broadcast(full, tuple(range(len(prefix), len(full))))(logits)
    return argmax(ops.Add()(spread, noise), axis=len(prefix) + axis)


def choice(k: Array, a, shape=(), replace: bool = True, p=None, axis: int = 0):
    """Elements of ``a`` (an array, or ``range(a)`` for an int) drawn along ``axis``.

    As ``jax.random.choice``: with replacement by uniform indices (or, with
    probabilities ``p``, by inverting their cumulative sum); without
    replacement the first ``prod(shape)`` positions of a random permutation
    (with ``p``: of the Gumbel-perturbed ``log(p)`` sorted, the Gumbel top-k).

    >>> import numpy as np, hlodsl as hd
    >>> from hlodsl.stdlib import nn
    >>> d = np.asarray(nn.choice(nn.key(0), 5, (5,), replace=False))
    >>> sorted(d.tolist())
    [0, 1, 2, 3, 4]
    """
    _check_key(k, "choice")
    shape = static_shape(shape, "choice")
    if isinstance(a, (Array, np.ndarray)):
        a = _array(a)
        if a.ndim == 0:
            raise fail(ValueError, f"choice: a must be an int or an array of rank >= 1, got "
                                   f"{a.type}")
        axis = normalize_axis(axis, a.ndim, "choice")
        n = a.shape[axis]
    else:
        try:
            n = operator.index(a)
        except TypeError:
            raise fail(TypeError, f"choice: a must be an int or an array, got "
                                  f"{type(a).__name__} {a!r}") from None
        a = None
    draws = int(np.prod(shape, dtype=np.int64))
    if n == 0 and draws:
        raise fail(ValueError, "choice: a is empty, so nothing can be drawn")
    if not replace and draws > n:
        raise fail(ValueError, f"choice: cannot draw {draws} elements from {n} without "
                               "replacement (replace=False)")
    if p is not None:
        p = _array(p)
        if p.shape != (n,) or not issubclass(p.dtype, Floating):
            raise fail(ValueError, f"choice: p must be a floating-point vector of the {n} "
                                   f"probabilities, got {p.type}")
    return _choice(k, a, n, shape, bool(replace), p, axis)


@_compiled
def _choice(k, a, n, shape, replace, p, axis):
    from ..indexing import take
    from ..searching import argsort, searchsorted
    from ..statistics import cumulative_sum

    draws = int(np.prod(shape, dtype=np.int64))
    if replace and p is None:
        idx = randint(k, (draws,), 0, n)
    elif replace:
        cdf = cumulative_sum(p)
        total = ops.Slice((n - 1,), (n,))(cdf)
        u = ops.Multiply()(ops.Broadcast((draws,))(ops.Reshape(())(total)),
                           _unit_uniform(k, (draws,), p.dtype))
        # u in [0, total): the first category whose cumulative sum exceeds u.
        idx = searchsorted(cdf, u, side="right")
        idx = ops.Minimum()(idx, ops.Broadcast((draws,))(lift(n - 1, idx.dtype)))
    elif p is None:
        idx = ops.Slice((0,), (draws,))(_permutation_n(k, n))
    else:
        score = ops.Add()(_gumbel(k, (n,), p.dtype), ops.Log()(p))
        idx = ops.Slice((0,), (draws,))(argsort(score, descending=True))
    if a is None:
        return ops.Reshape(shape)(idx)
    picked = take(a, idx, axis=axis)
    return ops.Reshape(a.shape[:axis] + shape + a.shape[axis + 1:])(picked)

