"""The array API's fft extension: ``xp.fft`` (``hlodsl.stdlib.fft``), built on ``ops.Fft``.

Every transform is numpy's: ``n``/``s`` zero-pad or truncate the input along
the transformed axes, ``norm`` is ``"backward"`` (scale the inverse by 1/N),
``"ortho"`` (1/sqrt(N) both ways) or ``"forward"`` (1/N on the forward
transform). HLO's fft transforms at most 3 trailing dimensions: other axes
are moved to the end and back (transposes), and more than 3 axes are done
as several transforms of up to 3 (the DFT is separable). Real input to a
complex transform becomes complex (float32 -> complex64, float64 ->
complex128; float16 and bfloat16 compute in complex64, as XLA has no
smaller fft); integer and bool input is refused. Derivatives, ``vmap`` and
``hd.compile`` work through the ops these functions emit.

>>> import numpy as np, hlodsl as hd
>>> import hlodsl.stdlib as xp
>>> x = hd.array(np.float64([1, 2, 3, 4]))
>>> xp.fft.fft(x)
hlodsl.Array[complex128, (4,)]([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
>>> xp.fft.irfft(xp.fft.rfft(x), n=4)
hlodsl.Array[float64, (4,)]([1., 2., 3., 4.])
>>> xp.fft.fftfreq(4, d=0.5)
hlodsl.Array[float64, (4,)]([ 0. ,  0.5, -1. , -0.5])
"""

from __future__ import annotations

import math
import numbers

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import (
    ComplexFloating,
    Floating,
    complex64,
    complex128,
    float32,
    float64,
)

from .creation import _check_device
from .elementwise import divide, multiply
from .elementwise_more import conj
from .manipulation import (
    as_dtype,
    as_int,
    as_ints,
    fail,
    normalize_axes,
    normalize_axis,
    roll,
    where,
)
from .promotion import lift

__all__ = [
    "fft",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfftn",
    "rfft",
    "rfftfreq",
    "rfftn",
]

_NORMS = ("backward", "ortho", "forward")
#: hfft is irfft of the conjugate, ihfft the conjugate of rfft, each with the norm mirrored.
_MIRROR = {"backward": "forward", "ortho": "ortho", "forward": "backward"}
#: ops.Fft transforms at most this many trailing dimensions at once.
_MAX_RANK = 3


# -- argument checks --------------------------------------------------------------------

def _complex_input(what: str, x: Array) -> Array:
    """``x`` as complex64 or complex128 (real floats promote); integers and bool refused."""
    if issubclass(x.dtype, ComplexFloating):
        return x
    if not issubclass(x.dtype, Floating):
        raise fail(TypeError, f"{what}: x must be a floating-point or complex array, got "
                              f"{x.type}; convert it with astype first")
    return ops.Convert(complex128 if x.dtype is float64 else complex64)(x)


def _real_input(what: str, x: Array) -> Array:
    """``x`` as float32 or float64 (16-bit floats widen); complex, integers and bool refused."""
    if not issubclass(x.dtype, Floating):
        raise fail(TypeError, f"{what}: x must be a real floating-point array, got {x.type}"
                   + ("; take xp.real first, or use fft" if
                      issubclass(x.dtype, ComplexFloating) else "; convert it with astype first"))
    return x if x.dtype in (float32, float64) else ops.Convert(float32)(x)


def _check_norm(what: str, norm) -> str:
    if norm not in _NORMS:
        raise fail(ValueError, f"{what}: norm must be 'backward', 'ortho' or 'forward', got "
                               f"{norm!r}")
    return norm


def _check_length(what: str, name: str, n: int, x: Array, axis: int) -> int:
    if n < 1:
        raise fail(ValueError, f"{what}: {name}={n} is not a valid number of data points (it must "
                               f"be >= 1) along axis {axis} of x of shape {x.shape}")
    return n


def _one_axis(what: str, x: Array, n, axis, inverse_real: bool = False):
    """``(axes, lengths)`` of a 1-D transform: ``n`` defaults to the size of ``axis``
    (``2 * (m - 1)`` for the transforms whose output is real)."""
    if x.ndim == 0:
        raise fail(ValueError, f"{what}: x must have at least one dimension, got shape ()")
    a = normalize_axis(axis, x.ndim, what)
    m = x.shape[a]
    if n is None:
        n = 2 * (m - 1) if inverse_real else m
        name = "the default n" + (f" 2 * ({m} - 1)" if inverse_real else "")
    else:
        n, name = as_int(n, what, "n"), "n"
    return (a,), (_check_length(what, name, n, x, a),)


def _many_axes(what: str, x: Array, s, axes, inverse_real: bool = False):
    """``(axes, lengths)`` of an n-D transform, as numpy's ``fftn`` reads ``s`` and ``axes``."""
    sizes = None if s is None else as_ints(s, what, "s")
    if axes is None:
        if sizes is not None and len(sizes) > x.ndim:
            raise fail(ValueError, f"{what}: s={s} names {len(sizes)} axes, but x has shape "
                                   f"{x.shape}")
        axes = tuple(range(x.ndim - len(sizes), x.ndim)) if sizes is not None else None
    axes = normalize_axes(axes, x.ndim, what)
    if sizes is None:
        sizes = (-1,) * len(axes)
    if len(sizes) != len(axes):
        raise fail(ValueError, f"{what}: s={s} and axes={axes} must have the same length")
    lengths = []
    for i, (a, n) in enumerate(zip(axes, sizes)):
        last = inverse_real and i == len(axes) - 1
        m = x.shape[a]
        if n == -1:  # the standard's "use the whole axis"
            n, name = (2 * (m - 1), f"the default s[{i}] 2 * ({m} - 1)") if last else (m, "s")
        else:
            name = f"s[{i}]"
        lengths.append(_check_length(what, name, n, x, a))
    return axes, tuple(lengths)


# -- the transform: resize, move the axes last, ops.Fft in groups of 3, move back ----------

def _resize(x: Array, axes, sizes) -> Array:
    """``x`` zero-padded or truncated to ``sizes[i]`` along ``axes[i]`` (one Pad op)."""
    high = [0] * x.ndim
    for a, n in zip(axes, sizes):
        high[a] = n - x.shape[a]  # a negative high padding removes elements
    if not any(high):
        return x
    return ops.Pad((0,) * x.ndim, tuple(high))(x, lift(0, x.dtype))


def _trailing(x: Array, layout: list[int], axes) -> tuple[Array, list[int]]:
    """``x`` transposed so that ``axes`` (dims of the caller's array) come last, in order.

    ``layout[i]`` is the caller's dim now at position i of ``x``.
    """
    new = [d for d in layout if d not in axes] + list(axes)
    if new == layout:
        return x, layout
    return ops.Transpose(tuple(layout.index(d) for d in new))(x), new


def _transform(x: Array, kind: str, axes, lengths) -> Array:
    """The unnormalised ``kind`` transform of ``x`` (already resized) over ``axes``.

    RFFT and IRFFT act on the last axis of ``axes``: RFFT first, then complex
    FFTs of the other axes; IRFFT last, after inverse FFTs of the others (the
    order numpy's rfftn and irfftn use).
    """
    layout = list(range(x.ndim))
    tail = len(axes) - min(len(axes), _MAX_RANK)
    groups = [(i, min(i + _MAX_RANK, tail)) for i in range(0, tail, _MAX_RANK)]
    steps = [("FFT" if kind == "RFFT" else "IFFT" if kind == "IRFFT" else kind, g) for g in groups]
    steps.insert(0 if kind != "IRFFT" else len(steps), (kind, (tail, len(axes))))
    for op_kind, (lo, hi) in steps:
        if lo == hi:
            continue
        x, layout = _trailing(x, layout, axes[lo:hi])
        x = ops.Fft(op_kind, lengths[lo:hi])(x)
    back = tuple(layout.index(d) for d in range(x.ndim))
    return x if back == tuple(range(x.ndim)) else ops.Transpose(back)(x)


def _normalised(x: Array, lengths, norm: str, inverse: bool) -> Array:
    """``x`` scaled for ``norm``: ops.Fft's inverses already divide by N (``"backward"``)."""
    size = math.prod(lengths)
    # The inverse's own norm is the forward's mirrored: 1/N for "backward".
    scales = {"backward": 1.0, "ortho": 1 / math.sqrt(size), "forward": 1 / size}
    scale = scales[_MIRROR[norm]] * size if inverse else scales[norm]
    return x if scale == 1.0 else multiply(x, scale)


def _c2c(what: str, kind: str, x: Array, axes, lengths, norm: str) -> Array:
    x = _resize(_complex_input(what, x), axes, lengths)
    out = _transform(x, kind, axes, lengths) if axes else x
    return _normalised(out, lengths, norm, inverse=kind == "IFFT")


def _r2c(what: str, x: Array, axes, lengths, norm: str) -> Array:
    x = _resize(x, axes, lengths)
    return _normalised(_transform(x, "RFFT", axes, lengths), lengths, norm, inverse=False)


def _c2r(what: str, x: Array, axes, lengths, norm: str) -> Array:
    half = lengths[:-1] + (lengths[-1] // 2 + 1,)
    x = _resize(_complex_input(what, x), axes, half)
    return _normalised(_transform(x, "IRFFT", axes, lengths), lengths, norm, inverse=True)


# -- the standard's functions ----------------------------------------------------------

@dispatch
def fft(x: Array, /, *, n=None, axis=-1, norm="backward"):
    """The 1-D discrete Fourier transform of ``x`` along ``axis``, ``n`` points.

    Shapes: ``(..., m, ...) -> (..., n, ...)``; complex out (real x promotes).

    >>> import numpy as np, hlodsl as hd
    >>> fft(hd.array(np.complex64([1, 1j])), n=4)
    hlodsl.Array[complex64, (4,)]([1.+1.j, 2.+0.j, 1.-1.j, 0.+0.j])
    """
    axes, lengths = _one_axis("fft", x, n, axis)
    return _c2c("fft", "FFT", x, axes, lengths, _check_norm("fft", norm))


@dispatch
def ifft(x: Array, /, *, n=None, axis=-1, norm="backward"):
    """The 1-D inverse discrete Fourier transform of ``x`` along ``axis``, ``n`` points.

    >>> import numpy as np, hlodsl as hd
    >>> ifft(hd.array(np.complex128([4, 0, 0, 0])))
    hlodsl.Array[complex128, (4,)]([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    axes, lengths = _one_axis("ifft", x, n, axis)
    return _c2c("ifft", "IFFT", x, axes, lengths, _check_norm("ifft", norm))


@dispatch
def fftn(x: Array, /, *, s=None, axes=None, norm="backward"):
    """The n-D discrete Fourier transform over ``axes`` (default: all; with ``s`` only,
    the last ``len(s)``), axis ``axes[i]`` resized to ``s[i]`` points (-1: its size).

    >>> import numpy as np, hlodsl as hd
    >>> fftn(hd.array(np.ones((2, 3), np.complex64)))
    hlodsl.Array[complex64, (2, 3)](
      [[6.+0.j, 0.+0.j, 0.+0.j],
       [0.+0.j, 0.+0.j, 0.+0.j]])
    """
    axes, lengths = _many_axes("fftn", x, s, axes)
    return _c2c("fftn", "FFT", x, axes, lengths, _check_norm("fftn", norm))


@dispatch
def ifftn(x: Array, /, *, s=None, axes=None, norm="backward"):
    """The n-D inverse discrete Fourier transform (``s`` and ``axes`` as in ``fftn``).

    >>> import numpy as np, hlodsl as hd
    >>> ifftn(hd.array(np.complex128([[4, 0], [0, 0]])), norm="ortho")
    hlodsl.Array[complex128, (2, 2)](
      [[2.+0.j, 2.+0.j],
       [2.+0.j, 2.+0.j]])
    """
    axes, lengths = _many_axes("ifftn", x, s, axes)
    return _c2c("ifftn", "IFFT", x, axes, lengths, _check_norm("ifftn", norm))


@dispatch
def rfft(x: Array, /, *, n=None, axis=-1, norm="backward"):
    """The 1-D transform of real ``x``: the ``n // 2 + 1`` non-negative frequency terms.

    Shapes: ``(..., m, ...) -> (..., n // 2 + 1, ...)``; f32 -> c64, f64 -> c128.

    >>> import numpy as np, hlodsl as hd
    >>> rfft(hd.array(np.float32([1, 2, 3, 4])))
    hlodsl.Array[complex64, (3,)]([10.+0.j, -2.+2.j, -2.+0.j])
    """
    x = _real_input("rfft", x)
    axes, lengths = _one_axis("rfft", x, n, axis)
    return _r2c("rfft", x, axes, lengths, _check_norm("rfft", norm))


@dispatch
def irfft(x: Array, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of ``rfft``: ``n`` real points (default ``2 * (m - 1)``) from the
    ``n // 2 + 1`` terms of ``x`` along ``axis`` (more are dropped, fewer zero-padded).

    The imaginary parts of the zero (and, for even ``n``, the Nyquist) terms are
    ignored, as numpy ignores them.

    >>> import numpy as np, hlodsl as hd
    >>> irfft(hd.array(np.complex64([10, -2 + 2j, -2])))
    hlodsl.Array[float32, (4,)]([1., 2., 3., 4.])
    """
    axes, lengths = _one_axis("irfft", x, n, axis, inverse_real=True)
    return _c2r("irfft", x, axes, lengths, _check_norm("irfft", norm))


@dispatch
def rfftn(x: Array, /, *, s=None, axes=None, norm="backward"):
    """The n-D transform of real ``x``; the last of ``axes`` keeps ``s[-1] // 2 + 1`` terms.

    >>> import numpy as np, hlodsl as hd
    >>> rfftn(hd.array(np.ones((2, 4)))).shape
    (2, 3)
    """
    x = _real_input("rfftn", x)
    axes, lengths = _many_axes("rfftn", x, s, axes)
    if not axes:
        raise fail(ValueError, f"rfftn: needs at least one axis, got axes=() for shape {x.shape}")
    return _r2c("rfftn", x, axes, lengths, _check_norm("rfftn", norm))


@dispatch
def irfftn(x: Array, /, *, s=None, axes=None, norm="backward"):
    """The inverse of ``rfftn``: real, ``s`` points along ``axes`` (default for the last:
    ``2 * (m - 1)``, for the others their sizes).

    >>> import numpy as np, hlodsl as hd
    >>> irfftn(hd.array(np.complex128([[8, 0, 0], [0, 0, 0]])))
    hlodsl.Array[float64, (2, 4)](
      [[1., 1., 1., 1.],
       [1., 1., 1., 1.]])
    """
    axes, lengths = _many_axes("irfftn", x, s, axes, inverse_real=True)
    if not axes:
        raise fail(ValueError, f"irfftn: needs at least one axis, got axes=() for shape "
                               f"{x.shape}")
    return _c2r("irfftn", x, axes, lengths, _check_norm("irfftn", norm))


@dispatch
def hfft(x: Array, /, *, n=None, axis=-1, norm="backward"):
    """The transform of a signal with Hermitian symmetry, given by its first half ``x``:
    ``n`` real points (default ``2 * (m - 1)``); ``irfft(conj(x))`` with the norm mirrored.

    >>> import numpy as np, hlodsl as hd
    >>> hfft(hd.array(np.complex128([1, 0, 0])))
    hlodsl.Array[float64, (4,)]([1., 1., 1., 1.])
    """
    norm = _check_norm("hfft", norm)
    axes, lengths = _one_axis("hfft", x, n, axis, inverse_real=True)
    return _c2r("hfft", conj(_complex_input("hfft", x)), axes, lengths, _MIRROR[norm])


@dispatch
def ihfft(x: Array, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of ``hfft``: the ``n // 2 + 1`` terms of real ``x``;
    ``conj(rfft(x))`` with the norm mirrored.

    >>> import numpy as np, hlodsl as hd
    >>> ihfft(hd.array(np.float64([1, 1, 1, 1])))
    hlodsl.Array[complex128, (3,)]([1.-0.j, 0.-0.j, 0.-0.j])
    """
    norm = _check_norm("ihfft", norm)
    x = _real_input("ihfft", x)
    axes, lengths = _one_axis("ihfft", x, n, axis)
    return conj(_r2c("ihfft", x, axes, lengths, _MIRROR[norm]))


# -- frequencies and shifts --------------------------------------------------------------

def _frequencies(what: str, n, d, device, dtype, count: int, wrap: bool) -> Array:
    _check_device(device, what)
    dt = float64 if dtype is None else as_dtype(dtype, what)
    if not issubclass(dt, Floating):
        raise fail(TypeError, f"{what}: dtype must be a real floating-point type, got "
                              f"{dt.__name__}")
    # numpy's values: the integers k (k - n past the middle, for fftfreq) times
    # 1 / (n * d), in float64, then converted.
    k = ops.Iota(float64, (count,))()
    if wrap:
        k = where(k < (n - 1) // 2 + 1, k, k - n)
    if isinstance(d, Array):
        out = divide(k, multiply(lift(d, float64), float(n)))
    else:
        if not isinstance(d, numbers.Real) or isinstance(d, bool) or d == 0:
            raise fail(ValueError, f"{what}: d must be a non-zero real number, got {d!r}")
        out = multiply(k, 1.0 / (n * float(d)))
    return out if dt is float64 else ops.Convert(dt)(out)


def _count(what: str, n) -> int:
    n = as_int(n, what, "n")
    if n < 1:
        raise fail(ValueError, f"{what}: n must be a positive window length, got {n}")
    return n


@dispatch
def fftfreq(n, /, *, d=1.0, device=None, dtype=None):
    """The ``n`` sample frequencies of ``fft``'s terms for sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (n * d)``; float64 by default.

    >>> fftfreq(5)
    hlodsl.Array[float64, (5,)]([ 0. ,  0.2,  0.4, -0.4, -0.2])
    """
    n = _count("fftfreq", n)
    return _frequencies("fftfreq", n, d, device, dtype, n, wrap=True)


@dispatch
def rfftfreq(n, /, *, d=1.0, device=None, dtype=None):
    """The ``n // 2 + 1`` sample frequencies of ``rfft``'s terms: ``[0, ..., n // 2] / (n * d)``.

    >>> rfftfreq(5, dtype="float32")
    hlodsl.Array[float32, (3,)]([0. , 0.2, 0.4])
    """
    n = _count("rfftfreq", n)
    return _frequencies("rfftfreq", n, d, device, dtype, n // 2 + 1, wrap=False)


def _shift(what: str, x: Array, axes, sign: int) -> Array:
    axes = normalize_axes(axes, x.ndim, what)
    if not axes:
        return x
    return roll(x, tuple(sign * (x.shape[a] // 2) for a in axes), axis=axes)


@dispatch
def fftshift(x: Array, /, *, axes=None):
    """``x`` rolled by half its size along ``axes`` (default: all), so that the zero
    frequency term is in the middle.

    >>> import numpy as np, hlodsl as hd
    >>> fftshift(fftfreq(5))
    hlodsl.Array[float64, (5,)]([-0.4, -0.2,  0. ,  0.2,  0.4])
    """
    return _shift("fftshift", x, axes, 1)


@dispatch
def ifftshift(x: Array, /, *, axes=None):
    """The inverse of ``fftshift`` (they differ for odd sizes).

    >>> import numpy as np, hlodsl as hd
    >>> ifftshift(fftshift(hd.array(np.arange(5))))
    hlodsl.Array[int64, (5,)]([0, 1, 2, 3, 4])
    """
    return _shift("ifftshift", x, axes, -1)
