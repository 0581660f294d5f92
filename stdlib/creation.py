"""Creation functions of the array API standard, built from ops.

Shapes, fill values and ranges are static Python values. Results are built
from ops (iota, broadcast, compare, select, convert; scalars enter as
constants), so inside ``hlodsl.compile`` they stage into the program instead
of being baked in as large literals, and outside it they run eagerly. Without
``dtype``, floats default to float64 and integers to int64, as in numpy.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib.creation import arange, eye, zeros
>>> zeros((2, 3), dtype=hd.float32)
hlodsl.Array[float32, (2, 3)](
  [[0., 0., 0.],
   [0., 0., 0.]])
>>> arange(1, 10, 3)
hlodsl.Array[int64, (3,)]([1, 4, 7])
>>> hd.compile(lambda: eye(2, k=1, dtype=hd.int32))()
hlodsl.Array[int32, (2, 2)](
  [[0, 1],
   [0, 0]])
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from hlodsl.arrays.scalars import static_hint
from hlodsl import ops
from hlodsl.arrays.array import Array, array, default_device
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import (
    Bool, ComplexFloating, Floating, Integer, SignedInteger, UnsignedInteger, complex64,
    default_inexact, element_type, float32, float64, int32, int64, pred, uint64,
)

from .broadcasting import broadcast_to
from .data_types import scalar_default
from .manipulation import as_dtype, as_int, as_ints, fail, stack
from .promotion import ArrayLike, lift, promote, truth

__all__ = [
    "asarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
    "empty_like", "arange", "linspace", "eye", "meshgrid", "tril", "triu", "from_dlpack",
]


def _shape(shape, what: str) -> tuple[int, ...]:
    shape = as_ints(shape, what, "shape")
    if any(d < 0 for d in shape):
        raise fail(ValueError, f"{what}: shape {shape} has a negative dimension")
    return shape


def _dtype(dtype, default, what: str = "full"):
    return default if dtype is None else as_dtype(dtype, what)


def _scalar_dtype(value):
    """numpy's dtype for a fill value: Python scalars by kind, numpy values by their own."""
    if isinstance(value, (np.ndarray, np.generic)):
        return element_type(value.dtype)
    if isinstance(value, numbers.Complex):  # bool, int, float, complex
        return scalar_default(value)
    raise fail(TypeError, f"full: fill_value must be a number or an array, got "
                          f"{type(value).__name__}")


def _filled(value: Array, shape: tuple[int, ...]) -> Array:
    """The 0-d ``value`` broadcast to ``shape``."""
    return value if not shape else ops.Broadcast(shape)(value)


# -- from data --------------------------------------------------------------------

def _check_device(device, what: str) -> None:
    """Arrays are created on the default device, the only one programs run on."""
    if device is not None and device != default_device():
        raise fail(ValueError, f"{what}: device={device!r} is not {default_device()!r}, the "
                               "only device hlodsl runs programs on")


def _holds_array(obj) -> bool:
    return isinstance(obj, Array) or (
        isinstance(obj, (list, tuple)) and any(_holds_array(o) for o in obj))


@dispatch
def asarray(obj, dtype=None, copy=None, device=None):
    """``obj`` as an array: arrays pass through (converted to ``dtype`` if given).

    numpy arrays keep their dtype; nested lists and Python scalars take numpy's
    defaults (int64, float64, complex128, bool; floats ``hd.config.default_float``). Lists that hold hlodsl arrays
    (symbolic ones too) are stacked. Arrays are immutable, so ``copy=True``
    needs no copy; ``copy=False`` refuses a conversion.

    >>> import hlodsl as hd
    >>> asarray([[1, 2], [3, 4]], dtype=hd.float32)
    hlodsl.Array[float32, (2, 2)](
      [[1., 2.],
       [3., 4.]])
    """
    _check_device(device, "asarray")
    dt = None if dtype is None else as_dtype(dtype, "asarray")
    if isinstance(obj, Array):
        if dt is None or dt is obj.dtype:
            return obj
        if copy is False:
            raise fail(ValueError, f"asarray: converting {obj.type} to {dt.__name__} needs a "
                                   "copy, but copy=False")
        if dt is pred and issubclass(obj.dtype, ComplexFloating):  # XLA has no such convert
            return truth(obj)
        return ops.Convert(dt)(obj)
    if _holds_array(obj):
        out = stack(promote(*[asarray(o) if isinstance(o, (list, tuple)) else o for o in obj]))
        return out if dt is None else asarray(out, dt, copy)
    if copy is False and isinstance(obj, (np.ndarray, np.generic)):
        raise fail(ValueError, "asarray: a numpy array must be copied to the device, but "
                               "copy=False")
    try:
        data = np.asarray(obj, dtype=None if dt is None else dt.np_dtype)
    except ValueError as e:
        if "inhomogeneous" in str(e):
            raise fail(ValueError, f"asarray: ragged nested sequence {_short(obj)} (its "
                                   "inhomogeneous shape has no array); nested lists must be "
                                   "rectangular, each level of the same length") from None
        raise fail(ValueError, f"asarray: cannot convert {type(obj).__name__} {_short(obj)} to "
                               f"{'an array' if dt is None else dt.__name__}") from None
    except TypeError:
        raise fail(TypeError, f"asarray: cannot convert {type(obj).__name__} {_short(obj)} to an "
                              "array; give a number, a bool, a (nested) sequence of them or an "
                              "array") from None
    if dt is None and type(obj) in (float, complex, list, tuple) and data.dtype.kind in "fc":
        data = data.astype(default_inexact(element_type(data.dtype)).np_dtype)  # Python floats
    try:
        return array(data)
    except TypeError as e:
        raise fail(TypeError, f"asarray: {type(obj).__name__} {_short(obj)} has no array "
                              f"element type ({e})") from None


def _short(obj) -> str:
    text = repr(obj)
    return text if len(text) <= 60 else text[:57] + "..."


def from_dlpack(x, /, *, device=None, copy=None):
    """An array of the data of ``x``, any object with ``__dlpack__`` (numpy, jax,
    torch, hlodsl arrays).

    hlodsl arrays are immutable, so the device buffer shares ``x``'s memory
    only where ``x`` cannot change either (a jax or hlodsl array), or where the
    caller asks for it with ``copy=False`` and so promises not to write ``x``
    while the array lives (that raises where PJRT cannot take the memory over;
    on CPU it needs 64-byte aligned, compact data). Otherwise the data is
    copied, as with ``copy=True``.

    >>> import numpy as np
    >>> from_dlpack(np.arange(3, dtype=np.int16))
    hlodsl.Array[int16, (3,)]([0, 1, 2])
    """
    from hlodsl import runtime
    from hlodsl.arrays.types import ArrayType

    _check_device(device, "from_dlpack")
    if copy is not None and not isinstance(copy, bool):
        raise fail(TypeError, f"from_dlpack: copy must be True, False or None, got "
                              f"{type(copy).__name__} {copy!r}")
    if not hasattr(x, "__dlpack__"):
        raise fail(TypeError, f"from_dlpack: {type(x).__name__} does not implement the DLPack "
                              "protocol (__dlpack__)")
    if isinstance(x, Array) and not copy:
        return x
    try:
        buf, np_dtype = runtime.from_dlpack(x, copy=copy)
    except (BufferError, ValueError) as e:
        # numpy exports only native byte order over DLPack, as the protocol asks.
        swapped = not getattr(getattr(x, "dtype", None), "isnative", True)
        raise fail(BufferError, f"from_dlpack: cannot import {type(x).__name__} "
                                f"(copy={copy}): {str(e).rstrip('.')}"
                                + ("; asarray(x) copies it and swaps its bytes" if swapped
                                   else "")) from None
    return Array._from_buffer(buf, ArrayType(element_type(np_dtype), tuple(buf.shape)))


# -- filled -----------------------------------------------------------------------

@dispatch
def full(shape, fill_value, dtype=None, device=None):
    """An array of ``shape`` filled with ``fill_value``.

    The element type is ``dtype``, else that of ``fill_value`` (Python bool,
    int, float, complex: pred, int64, float64, complex128). An array
    ``fill_value`` (symbolic ones too) is broadcast to ``shape``.

    >>> full((2,), 7)
    hlodsl.Array[int64, (2,)]([7, 7])
    """
    _check_device(device, "full")
    shape = _shape(shape, "full")
    if isinstance(fill_value, (Array, np.ndarray)) and fill_value.ndim:
        return broadcast_to(asarray(fill_value, dtype), shape)
    dt = _dtype(dtype, fill_value.dtype if isinstance(fill_value, Array)
                else _scalar_dtype(fill_value))
    return _filled(lift(fill_value, dt), shape)


@dispatch
def zeros(shape, dtype=None, device=None):
    """An array of ``shape`` filled with zeros (float64 unless ``dtype`` is given).

    >>> zeros(2)
    hlodsl.Array[float64, (2,)]([0., 0.])
    """
    _check_device(device, "zeros")
    return full(_shape(shape, "zeros"), 0, _dtype(dtype, default_inexact(float64), "zeros"))


@dispatch
def ones(shape, dtype=None, device=None):
    """An array of ``shape`` filled with ones (float64 unless ``dtype`` is given).

    >>> import hlodsl as hd
    >>> ones((1, 2), dtype=hd.int8)
    hlodsl.Array[int8, (1, 2)]([[1, 1]])
    """
    _check_device(device, "ones")
    return full(_shape(shape, "ones"), 1, _dtype(dtype, default_inexact(float64), "ones"))


@dispatch
def empty(shape, dtype=None, device=None):
    """An array of ``shape``; its contents are unspecified (here: zeros).

    >>> empty(0)
    hlodsl.Array[float64, (0,)]([])
    """
    _check_device(device, "empty")
    return full(_shape(shape, "empty"), 0, _dtype(dtype, default_inexact(float64), "empty"))


@dispatch
def full_like(x: ArrayLike, fill_value, dtype=None, device=None):
    """An array of ``x``'s shape (and element type, unless ``dtype``) filled with ``fill_value``.

    >>> import numpy as np, hlodsl as hd
    >>> full_like(hd.array(np.int32([1, 2])), 2.5)
    hlodsl.Array[int32, (2,)]([2, 2])
    """
    _check_device(device, "full_like")
    x = asarray(x)
    return full(x.shape, fill_value, _dtype(dtype, x.dtype, "full_like"))


@dispatch
def zeros_like(x: ArrayLike, dtype=None, device=None):
    """Zeros of ``x``'s shape and (unless ``dtype``) element type.

    >>> import numpy as np, hlodsl as hd
    >>> zeros_like(hd.array(np.int32([1, 2])))
    hlodsl.Array[int32, (2,)]([0, 0])
    """
    _check_device(device, "zeros_like")
    return full_like(x, 0, dtype)


@dispatch
def ones_like(x: ArrayLike, dtype=None, device=None):
    """Ones of ``x``'s shape and (unless ``dtype``) element type.

    >>> import numpy as np, hlodsl as hd
    >>> ones_like(hd.array(np.float32([1, 2])), dtype=hd.pred)
    hlodsl.Array[pred, (2,)]([ True,  True])
    """
    _check_device(device, "ones_like")
    return full_like(x, 1, dtype)


@dispatch
def empty_like(x: ArrayLike, dtype=None, device=None):
    """An array of ``x``'s shape and (unless ``dtype``) element type; here zeros.

    >>> import numpy as np, hlodsl as hd
    >>> empty_like(hd.array(np.float32([1, 2])))
    hlodsl.Array[float32, (2,)]([0., 0.])
    """
    _check_device(device, "empty_like")
    return full_like(x, 0, dtype)


# -- ranges -----------------------------------------------------------------------

def _real(value, what: str, name: str):
    if isinstance(value, Array) and value.is_symbolic:
        raise fail(TypeError, f"{what}: {name} is a symbolic array {value.type}; it must be a "
                              "static number, since it decides the result's shape"
                              f"{static_hint(value, name)}")
    if isinstance(value, Array) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise fail(TypeError, f"{what}: {name} must be a static real number, got "
                              f"{type(value).__name__} {value!r}{static_hint(value, name)}")
    return value


def _work_dtype(dt):
    """The type numpy's fill loops compute in: float32 for 16-bit floats (numpy and
    ml_dtypes widen them), the real part's type for complex, 64 bits for integers."""
    if issubclass(dt, Floating):
        return float32 if dt.np_dtype.itemsize < 4 else dt
    if issubclass(dt, ComplexFloating):
        return float32 if dt is complex64 else float64
    if issubclass(dt, UnsignedInteger):
        return uint64
    if issubclass(dt, SignedInteger):
        return int64
    return dt


@dispatch
def arange(start, stop=None, step=1, dtype=None, device=None):
    """``start, start + step, ...`` up to (excluding) ``stop``; ``arange(n)`` is 0..n-1.

    ``start``, ``stop`` and ``step`` are static real numbers. The length and the
    values are numpy's: ``ceil((stop - start) / step)`` elements, element i is
    ``first + i * delta`` with ``delta = dtype(start + step) - dtype(start)``.
    Without ``dtype``: int64 if all are ints, else float64. Staged, XLA may
    contract ``i * delta + first`` into a fused multiply-add, which can differ
    from numpy in the last bit.

    >>> arange(0.0, 1.0, 0.25)
    hlodsl.Array[float64, (4,)]([0.  , 0.25, 0.5 , 0.75])
    """
    _check_device(device, "arange")
    start, step = _real(start, "arange", "start"), _real(step, "arange", "step")
    if stop is None:
        start, stop = 0, start
    else:
        stop = _real(stop, "arange", "stop")
    if step == 0:
        raise fail(ValueError, "arange: step must not be zero")
    length = (stop - start) / step
    if not math.isfinite(length):
        raise fail(ValueError, f"arange: the length of arange({start}, {stop}, {step}) is not "
                               "finite")
    n = max(math.ceil(length), 0)
    floats = any(not isinstance(v, numbers.Integral) for v in (start, stop, step))
    dt = _dtype(dtype, default_inexact(float64) if floats else int64, "arange")
    if issubclass(dt, Bool) and n > 2:
        raise fail(ValueError, f"arange: a bool range has at most 2 elements, not {n}")
    if n == 0:
        return zeros((0,), dt)
    first = np.asarray(start, dt.np_dtype)
    if n == 1:
        return array(first.reshape(1))
    # As numpy: elements 0 and 1 are start and start + step converted to dtype,
    # element i >= 2 is first + i * delta, computed in the fill loop's type.
    second = np.asarray(start + step, dt.np_dtype)
    head = array(np.stack([first, second]))
    if n == 2:
        return head
    wd = _work_dtype(dt)
    first_w = first.real.astype(wd.np_dtype)
    delta = np.subtract(second.real.astype(wd.np_dtype), first_w)  # wraps for unsigned steps
    index = ops.Add()(ops.Iota(int64, (n - 2,))(), _filled(lift(2, int64), (n - 2,)))
    tail = ops.Add()(ops.Multiply()(ops.Convert(wd)(index), _filled(array(delta), (n - 2,))),
                     _filled(array(first_w), (n - 2,)))
    return ops.Concatenate(0)(head, lift(tail, dt))


@dispatch
def linspace(start, stop, num, dtype=None, endpoint=True, device=None):
    """``num`` evenly spaced numbers from ``start`` to ``stop`` (included if ``endpoint``).

    Computed as numpy does: in float64 (complex128 for complex bounds;
    the bounds' own type for numpy scalars), ``start + i * step`` with the
    last element exactly ``stop``, then converted to ``dtype`` (integer types
    round down first). Staged, XLA may contract ``i * step + start`` into a
    fused multiply-add, which can differ from numpy in the last bit.

    >>> linspace(0, 1, 5)
    hlodsl.Array[float64, (5,)]([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    _check_device(device, "linspace")
    num = as_int(num, "linspace", "num")
    if num < 0:
        raise fail(ValueError, f"linspace: num must be non-negative, got {num}")
    for v, name in ((start, "start"), (stop, "stop")):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Number):
            raise fail(TypeError, f"linspace: {name} must be a static number, got "
                                  f"{type(v).__name__} {v!r}")
    wd = element_type(np.result_type(start, stop, float(num)))
    python = not isinstance(start, np.generic) and not isinstance(stop, np.generic)
    dt = _dtype(dtype, default_inexact(wd) if python else wd, "linspace")
    div = num - 1 if endpoint else num
    delta = np.subtract(stop, start, dtype=wd.np_dtype)
    m = num - 1 if endpoint and num > 1 else num  # the elements computed; stop is appended
    if m == 0:
        y = zeros((0,), wd)
    else:
        y = ops.Iota(wd, (m,))()
        if div > 0:
            step = delta / div
            if step == 0:  # numpy's order for steps that underflow (gh-5437)
                y = ops.Multiply()(ops.Divide()(y, _filled(lift(div, wd), (m,))),
                                   _filled(lift(delta, wd), (m,)))
            else:
                y = ops.Multiply()(y, _filled(lift(step, wd), (m,)))
        else:
            y = ops.Multiply()(y, _filled(lift(delta, wd), (m,)))
        y = ops.Add()(y, _filled(lift(np.asarray(start, wd.np_dtype), wd), (m,)))
    if m < num:
        y = ops.Concatenate(0)(y, array(np.asarray([stop], wd.np_dtype)))
    if issubclass(wd, ComplexFloating) and dt is pred:  # XLA converts no complex to pred
        return truth(y)
    if issubclass(dt, Integer) and issubclass(wd, Floating):
        # numpy floors, then casts as C does: out-of-range values wrap through int64
        y = ops.Floor()(y)
        if dt.np_dtype.itemsize < 8:
            y = ops.Convert(int64)(y)
    return lift(y, dt)


# -- matrices and grids ---------------------------------------------------------

def _diagonal_mask(shape: tuple[int, int], k: int, direction: str) -> Array:
    """pred ``(n, m)``: ``col - row`` compared with ``k`` (EQ: a diagonal, LE/GE: triangles)."""
    n, m = shape
    k = min(max(k, -n), m)  # beyond the matrix every k gives the same mask; keeps int32 safe
    it = int32 if max(n, m) + abs(k) < 2 ** 31 else int64
    cols, rows = ops.Iota(it, shape, 1)(), ops.Iota(it, shape, 0)()
    return ops.Compare(direction)(ops.Subtract()(cols, rows), _filled(lift(k, it), shape))


@dispatch
def eye(n_rows, n_cols=None, k=0, dtype=None, device=None):
    """A ``(n_rows, n_cols)`` array with ones on diagonal ``k`` (above main if > 0).

    >>> eye(2, 3, k=-1)
    hlodsl.Array[float64, (2, 3)](
      [[0., 0., 0.],
       [1., 0., 0.]])
    """
    _check_device(device, "eye")
    n = as_int(n_rows, "eye", "n_rows")
    m = n if n_cols is None else as_int(n_cols, "eye", "n_cols")
    shape = _shape((n, m), "eye")
    mask = _diagonal_mask(shape, as_int(k, "eye", "k"), "EQ")
    return lift(mask, _dtype(dtype, default_inexact(float64), "eye"))


def _triangle(x, k, direction: str, what: str):
    x = asarray(x)
    if x.ndim < 2:
        raise fail(ValueError, f"{what}: needs an array of rank >= 2, got {x.type}")
    mask = _diagonal_mask(x.shape[-2:], as_int(k, what, "k"), direction)
    mask = broadcast_to(mask, x.shape)
    return ops.Select()(mask, x, _filled(lift(0, x.dtype), x.shape))


@dispatch
def tril(x: ArrayLike, k=0):
    """``x`` with elements above diagonal ``k`` of its last two dimensions zeroed.

    >>> import numpy as np, hlodsl as hd
    >>> tril(hd.array(np.int32([[1, 2], [3, 4]])))
    hlodsl.Array[int32, (2, 2)](
      [[1, 0],
       [3, 4]])
    """
    return _triangle(x, k, "LE", "tril")


@dispatch
def triu(x: ArrayLike, k=0):
    """``x`` with elements below diagonal ``k`` of its last two dimensions zeroed.

    >>> import numpy as np, hlodsl as hd
    >>> triu(hd.array(np.int32([[1, 2], [3, 4]])))
    hlodsl.Array[int32, (2, 2)](
      [[1, 2],
       [0, 4]])
    """
    return _triangle(x, k, "GE", "triu")


@dispatch
def meshgrid(*arrays, indexing="xy"):
    """Coordinate arrays from 1-D coordinate vectors, as a tuple (the 2025.12 standard's).

    With ``indexing="ij"`` each result has shape ``(N1, N2, ...)``; with
    ``"xy"`` (Cartesian, the default) the first two dimensions are swapped.
    Each result keeps its input's element type.

    >>> import numpy as np, hlodsl as hd
    >>> xs, ys = meshgrid(hd.array(np.int32([1, 2, 3])), hd.array(np.int32([4, 5])))
    >>> xs
    hlodsl.Array[int32, (2, 3)](
      [[1, 2, 3],
       [1, 2, 3]])
    """
    if indexing not in ("xy", "ij"):
        raise fail(ValueError, f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [asarray(a) for a in arrays]
    bad = [x.type for x in xs if x.ndim != 1]
    if bad:
        raise fail(ValueError, f"meshgrid: expects 1-D arrays, got {', '.join(map(str, bad))}")
    dims = list(range(len(xs)))
    if indexing == "xy" and len(xs) >= 2:
        dims[0], dims[1] = 1, 0
    shape = [0] * len(xs)
    for x, d in zip(xs, dims):
        shape[d] = x.shape[0]
    return tuple(ops.Broadcast(tuple(shape), (d,))(x) for x, d in zip(xs, dims))

