"""Explicit random keys, as in jax: ``key``, ``split``, and draws that take a key.

A key is a ``uint64[2]`` array, the state of XLA's counter-based three-fry
generator (``ops.RngBitGenerator``): the same key always gives the same
numbers, eagerly and under ``hd.compile``, and ``split`` derives new keys
from it. Use every key once; split it for more.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn
>>> k = nn.key(0)
>>> k1, k2 = nn.split(k)
>>> bool((np.asarray(nn.uniform(k1, (3,))) == np.asarray(nn.uniform(k1, (3,)))).all())
True
"""

from __future__ import annotations

import math
import operator

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array, array
from hlodsl.arrays.dtypes import Floating, UnsignedInteger, float32, float64, uint32, uint64

from ..creation import zeros_like
from ..manipulation import as_dtype, as_int, fail
from ..promotion import lift
from ._args import check_range, require_array, static_real, static_shape

__all__ = ["key", "split", "random_bits", "uniform", "normal", "bernoulli", "dropout"]

_ALGORITHM = "three_fry"


def _compiled(fn):
    """``fn`` as one compiled module per signature (eagerly: one executable, not one per op).

    Called while another function is being staged, it is inlined there.
    """
    import inspect

    from hlodsl.compilation.compiler import compile

    # Numbers here (bounds, rates) are static: they shape the program, not its data.
    return compile(fn, static_argnames=tuple(inspect.signature(fn).parameters))


def key(seed: int):
    """A new key from an integer ``seed`` (0 <= seed < 2**64).

    >>> key(42)
    hlodsl.Array[uint64, (2,)]([42,  0])
    """
    try:
        seed = operator.index(seed)
    except TypeError:
        raise fail(TypeError, f"key: seed must be an int in [0, 2**64), got "
                              f"{type(seed).__name__} {seed!r}") from None
    if not 0 <= seed < 2 ** 64:
        raise fail(ValueError, f"key: seed {seed} must be in [0, 2**64)")
    return array(np.array([seed, 0], np.uint64))


def _check_key(k, what: str) -> Array:
    if not isinstance(k, Array):
        raise fail(TypeError, f"{what}: key must be a uint64[2] array (from nn.key(seed) or "
                              f"nn.split), got {type(k).__name__} {k!r}")
    if k.dtype is not uint64 or k.shape != (2,):
        raise fail(TypeError, f"{what}: a key is a uint64[2] array (from nn.key or "
                              f"nn.split), got {k.type}")
    return k


def split(k: Array, num: int = 2):
    """``num`` new keys derived from ``k``, as a tuple.

    >>> len(split(key(0), 3))
    3
    """
    _check_key(k, "split")
    num = as_int(num, "split", "num")
    if num < 1:
        raise fail(ValueError, f"split: num must be >= 1, got {num}")
    return _split(k, num)


@_compiled
def _split(k, num):
    _, bits = ops.RngBitGenerator(_ALGORITHM, (num, 2), uint64)(k)
    return tuple(ops.Reshape((2,))(ops.Slice((i, 0), (i + 1, 2))(bits)) for i in range(num))


def random_bits(k: Array, shape, dtype=uint32):
    """Uniformly random bits of unsigned ``dtype`` and ``shape`` from key ``k``.

    >>> random_bits(key(0), (2,)).dtype
    uint32
    """
    _check_key(k, "random_bits")
    shape = static_shape(shape, "random_bits")
    dtype = as_dtype(dtype, "random_bits")
    if not issubclass(dtype, UnsignedInteger):
        raise fail(TypeError, f"random_bits: dtype must be an unsigned integer type (uint8, "
                              f"uint16, uint32, uint64), got {dtype.__name__}")
    return ops.RngBitGenerator(_ALGORITHM, shape, dtype)(k)[1]


def _unit_uniform(k: Array, shape, dtype) -> Array:
    """Floats in [0, 1): random mantissa bits under the exponent of 1.0, minus 1."""
    if dtype is float64:
        bits, word, mantissa, one = uint64, np.uint64, 52, 0x3FF0000000000000
    elif dtype is float32:
        bits, word, mantissa, one = uint32, np.uint32, 23, 0x3F800000
    else:  # draw in float32, round to the narrower type (may round up to 1.0: clamp)
        u = ops.Convert(dtype)(_unit_uniform(k, shape, float32))
        below_one = lift(np.nextafter(dtype.np_dtype.type(1), dtype.np_dtype.type(0)), dtype)
        return ops.Minimum()(u, ops.Broadcast(u.shape)(below_one))
    raw = random_bits(k, shape, bits)
    width = 8 * word(0).itemsize
    shifted = ops.ShiftRightLogical()(raw, ops.Broadcast(raw.shape)(
        array(word(width - mantissa))))
    floats = ops.BitcastConvert(dtype)(ops.Or()(shifted, ops.Broadcast(raw.shape)(
        array(word(one)))))
    return ops.Subtract()(floats, ops.Broadcast(raw.shape)(lift(1, dtype)))


def _float_dtype(dtype, what: str):
    dtype = as_dtype(dtype, what)
    if not issubclass(dtype, Floating):
        raise fail(TypeError, f"{what}: dtype must be floating-point, got {dtype.__name__}")
    return dtype


def uniform(k: Array, shape, dtype=float32, minval: float = 0.0, maxval: float = 1.0):
    """Uniform floats in ``[minval, maxval)`` of ``shape`` from key ``k``.

    >>> u = np.asarray(uniform(key(1), (1000,), minval=-2, maxval=2))
    >>> bool(u.min() >= -2 and u.max() < 2), abs(float(u.mean())) < 0.2
    (True, True)
    """
    _check_key(k, "uniform")
    shape = static_shape(shape, "uniform")
    static_real(minval, "uniform", "minval")
    static_real(maxval, "uniform", "maxval")
    check_range(minval, minval <= maxval, "uniform", "minval",
                f"<= maxval ({maxval!r}), the interval is [minval, maxval)")
    return _uniform(k, shape, _float_dtype(dtype, "uniform"), minval, maxval)


@_compiled
def _uniform(k, shape, dtype, minval, maxval):
    u = _unit_uniform(k, shape, dtype)
    if (minval, maxval) == (0.0, 1.0):
        return u
    scale = ops.Broadcast(u.shape)(lift(maxval - minval, dtype))
    return ops.Add()(ops.Multiply()(u, scale), ops.Broadcast(u.shape)(lift(minval, dtype)))


def normal(k: Array, shape, dtype=float32, mean: float = 0.0, std: float = 1.0):
    """Normal floats of ``shape`` from key ``k`` (Box-Muller over two uniform draws).

    >>> z = np.asarray(normal(key(2), (4000,)))
    >>> abs(float(z.mean())) < 0.1, abs(float(z.std()) - 1) < 0.1
    (True, True)
    """
    _check_key(k, "normal")
    shape = static_shape(shape, "normal")
    static_real(mean, "normal", "mean")
    check_range(std, static_real(std, "normal", "std") >= 0, "normal", "std",
                "non-negative (>= 0)")
    return _normal(k, shape, _float_dtype(dtype, "normal"), mean, std)


@_compiled
def _normal(k, shape, dtype, mean, std):
    work = float32 if dtype.np_dtype.itemsize < 4 else dtype
    u = _unit_uniform(k, (2,) + shape, work)

    def half(i):
        return ops.Reshape(shape)(ops.Slice((i,) + (0,) * len(shape), (i + 1,) + shape)(u))

    def c(v):
        return ops.Broadcast(shape)(lift(v, work))

    u1 = ops.Subtract()(c(1), half(0))  # in (0, 1]: log is finite
    radius = ops.Sqrt()(ops.Multiply()(c(-2), ops.Log()(u1)))
    z = ops.Multiply()(radius, ops.Cosine()(ops.Multiply()(c(2 * math.pi), half(1))))
    if (mean, std) != (0.0, 1.0):
        z = ops.Add()(ops.Multiply()(z, c(std)), c(mean))
    return z if work is dtype else ops.Convert(dtype)(z)


def bernoulli(k: Array, p=0.5, shape=None):
    """A pred array of ``shape``, each element true with probability ``p``.

    As ``jax.random.bernoulli``: ``p`` is a number or an array of
    probabilities broadcast to ``shape``; ``shape`` defaults to ``p``'s shape.

    >>> bernoulli(key(0), 1.0, (3,))
    hlodsl.Array[pred, (3,)]([ True,  True,  True])
    >>> bernoulli(key(0), array(np.float32([0.0, 1.0])))
    hlodsl.Array[pred, (2,)]([False,  True])
    """
    from ..broadcasting import broadcast_to

    _check_key(k, "bernoulli")
    if isinstance(p, np.ndarray):
        p = array(p)
    if not isinstance(p, Array):  # an array of probabilities is only known at run time
        check_range(p, 0 <= static_real(p, "bernoulli", "p") <= 1, "bernoulli", "p",
                    "a probability in [0, 1]")
    elif not issubclass(p.dtype, Floating):
        raise fail(TypeError, f"bernoulli: p must hold floating-point probabilities, got "
                              f"{p.type}")
    if shape is None:
        shape = p.shape if isinstance(p, Array) else ()
    shape = static_shape(shape, "bernoulli")
    dtype = p.dtype if isinstance(p, Array) else float32
    u = uniform(k, shape, dtype)
    bound = broadcast_to(p, shape) if isinstance(p, Array) else \
        ops.Broadcast(shape)(lift(p, dtype))
    return ops.Compare("LT")(u, bound)


def dropout(k: Array, x: Array, rate: float, training: bool = True):
    """Zero each element of ``x`` with probability ``rate``, scaling the rest by ``1 / (1 - rate)``.

    With ``training=False`` or ``rate == 0`` it is the identity (no key used);
    ``rate == 1`` gives zeros, as torch's ``dropout``.

    >>> import hlodsl as hd
    >>> x = hd.array(np.ones(1000, np.float32))
    >>> y = np.asarray(dropout(key(0), x, 0.25))
    >>> sorted({round(v, 4) for v in y.tolist()}), abs(float((y == 0).mean()) - 0.25) < 0.05
    ([0.0, 1.3333], True)
    >>> dropout(key(0), x, 0.25, training=False) is x
    True
    """
    require_array(x, "dropout", "x")
    static_real(rate, "dropout", "rate")
    if not 0 <= rate <= 1:
        raise fail(ValueError, f"dropout: rate must be in [0, 1], got {rate}")
    if not training or rate == 0:
        return x
    _check_key(k, "dropout")
    zeros = zeros_like(x)
    if rate == 1:
        return ops.Multiply()(x, zeros)
    keep = bernoulli(k, 1 - rate, x.shape)
    scaled = ops.Multiply()(x, ops.Broadcast(x.shape)(lift(1 / (1 - rate), x.dtype)))
    return ops.Select()(keep, scaled, zeros)
