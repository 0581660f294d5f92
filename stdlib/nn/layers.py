"""Layers with PyTorch's layouts: linear, N-d convolution, pooling, embedding.

Activations are ``(N, C, *spatial)`` (channels first), convolution weights
``(out_channels, in_channels / groups, *kernel)`` and linear weights
``(out_features, in_features)``, as in ``torch.nn.functional``, so a
``state_dict`` loads without transposes. ``conv`` and the pools also take
``data_format="NHWC"``: channels-last activations ``(N, *spatial, C)`` and
``(*kernel, in_channels / groups, out_channels)`` ("HWIO") conv weights, the
layouts XLA:CPU's convolution kernels run in (no transposes around them).

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn
>>> x = hd.array(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
>>> nn.max_pool(x, 2)
hlodsl.Array[float32, (1, 1, 2, 2)](
  [[[[ 5.,  7.],
     [13., 15.]]]])
"""

from __future__ import annotations

import math

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import Floating, Integer
from hlodsl.errors import ShapeError

from ..manipulation import concat, fail
from ..promotion import lift
from ._args import conv_padding, per_dim, require_array, require_float, spatial_rank

__all__ = ["linear", "dense", "conv", "max_pool", "avg_pool", "adaptive_avg_pool",
           "embedding", "flatten"]


_FORMATS = ("NCHW", "NHWC")


def _channels_last(data_format: str, what: str) -> bool:
    """Whether ``data_format`` ("NCHW" or "NHWC", any number of spatial dims) is channels-last."""
    if data_format not in _FORMATS:
        raise fail(ValueError, f"{what}: data_format must be 'NCHW' (channels first) or "
                               f"'NHWC' (channels last), got {data_format!r}")
    return data_format == "NHWC"


def _spatial(x: Array, last: bool) -> tuple[int, ...]:
    """The spatial sizes of a batched ``x``, channels first or last."""
    return x.shape[1:-1] if last else x.shape[2:]


def _add_channel_bias(y: Array, b: Array, axis: int, what: str) -> Array:
    require_array(b, what, "b")
    if b.shape != (y.shape[axis],) or b.dtype is not y.dtype:
        raise fail(ShapeError, f"{what}: bias must be {y.dtype.__name__}[{y.shape[axis]}] "
                               f"(one per output channel), got {b.type}")
    return ops.Add()(y, ops.Broadcast(y.shape, (axis,))(b))


def linear(x: Array, W: Array, b: Array | None = None, *, precision=None):
    """``x @ W.T + b`` with torch's ``(out_features, in_features)`` weight layout.

    ``x`` is ``(..., in_features)``; the result is ``(..., out_features)``.
    ``precision``: the dot's, as ``xp.matmul``'s (None: ``hd.config.default_matmul_precision``).

    >>> import numpy as np, hlodsl as hd
    >>> W = hd.array(np.float32([[1, 0], [1, 1], [0, 2]]))      # 2 -> 3 features
    >>> linear(hd.array(np.float32([[1, 2]])), W, hd.array(np.float32([0, 0, 10])))
    hlodsl.Array[float32, (1, 3)]([[ 1.,  3., 14.]])
    """
    require_array(x, "linear", "x")
    require_array(W, "linear", "W")
    if W.ndim != 2 or x.ndim < 1 or x.shape[-1] != W.shape[1] or x.dtype is not W.dtype:
        raise fail(ShapeError, f"linear: x (..., in_features) and W (out_features, "
                               f"in_features) must agree in in_features and element type, "
                               f"got x {x.type} and W {W.type}")
    y = ops.Dot(lhs_contracting=(x.ndim - 1,), rhs_contracting=(1,), precision=precision)(x, W)
    return y if b is None else _add_channel_bias(y, b, y.ndim - 1, "linear")


#: Another name for :func:`linear`.
dense = linear


def conv(x: Array, w: Array, b: Array | None = None, stride=1, padding="VALID",
         dilation=1, groups: int = 1, data_format: str = "NCHW", *, precision=None):
    """N-d convolution (cross-correlation, as torch's ``conv1d/2d/3d``).

    Args:
        x: ``(N, C, *spatial)``, or ``(N, *spatial, C)`` with ``data_format="NHWC"``.
        w: ``(O, C // groups, *kernel)``, or ``(*kernel, C // groups, O)`` ("HWIO")
            with ``data_format="NHWC"``.
        b: optional ``(O,)`` bias.
        stride: an int or one int per spatial dimension.
        dilation: an int or one int per spatial dimension.
        padding: ``"VALID"`` (none), ``"SAME"`` (``ceil(n / stride)`` outputs),
            an int or ints (symmetric), or ``(low, high)`` pairs.
        groups: ``C`` and ``O`` split into ``groups`` independent convolutions.
        data_format: ``"NCHW"`` (torch's layouts, the default) or ``"NHWC"``
            (channels last, jax's ``("NHWC", "HWIO", "NHWC")``), for any number
            of spatial dimensions.
        precision: ``"default"``, ``"high"``, ``"highest"`` or a pair, the
            convolution's operand precision (None: ``hd.config.default_matmul_precision``).

    Returns:
        ``(N, O, *out)`` (``(N, *out, O)`` channels-last),
        ``out = (n + lo + hi - dilation * (k - 1) - 1) // stride + 1``.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.float32([[[1, 2, 3, 4]]])); w = hd.array(np.float32([[[1, -1]]]))
    >>> conv(x, w), conv(x, w, padding="SAME").shape
    (hlodsl.Array[float32, (1, 1, 3)]([[[-1., -1., -1.]]]), (1, 1, 4))
    >>> xl = hd.array(np.float32([[[1], [2], [3], [4]]]))          # (N, W, C)
    >>> conv(xl, hd.array(np.float32([[[1]], [[-1]]])), data_format="NHWC").shape
    (1, 3, 1)
    """
    require_array(x, "conv", "x")
    require_array(w, "conv", "w")
    last = _channels_last(data_format, "conv")
    n = spatial_rank(x, "conv", "(N, *spatial, C)" if last else "(N, C, *spatial)")
    groups = per_dim(groups, 1, "conv", "groups")[0]
    if last:
        c, c_w, o, kernel = x.shape[-1], w.shape[-2], w.shape[-1], w.shape[:-2]
        layouts = "x (N, *spatial, C) and w (*kernel, C/groups, O)", "w.shape[-2]"
    else:
        c, c_w, o, kernel = x.shape[1], w.shape[1], w.shape[0], w.shape[2:]
        layouts = "x (N, C, *spatial) and w (O, C/groups, *kernel)", "w.shape[1]"
    if w.ndim != x.ndim or x.dtype is not w.dtype or c != c_w * groups or o % groups:
        fmt = "" if not last else f", data_format={data_format!r}"
        raise fail(ShapeError, f"conv: {layouts[0]} must "
                               f"have equal rank and element type, C = {layouts[1]} * groups "
                               f"and O divisible by groups; got x {x.type}, w {w.type}, "
                               f"groups={groups}{fmt}")
    sizes = _spatial(x, last)
    strides = per_dim(stride, n, "conv", "stride")
    dilations = per_dim(dilation, n, "conv", "dilation")
    pads = conv_padding(padding, sizes, kernel, strides, dilations, "conv")
    for size, (lo, hi), k, d in zip(sizes, pads, kernel, dilations):
        if size + lo + hi < (k - 1) * d + 1:
            raise fail(ShapeError, f"conv: the kernel {kernel} (dilation {dilations}) "
                                   f"does not fit the padded input {sizes} "
                                   f"(padding {pads})")
    r = x.ndim
    specs = {}
    if last:  # XLA's b01f / 01io / b01f: the dim_labels XLA:CPU's kernels use natively
        act = (0, r - 1) + tuple(range(1, r - 1))
        specs = dict(lhs_spec=act, rhs_spec=(r - 1, r - 2) + tuple(range(r - 2)), out_spec=act)
    y = ops.Convolution(window_strides=strides, padding=pads, rhs_dilation=dilations,
                        feature_group_count=groups, precision=precision, **specs)(x, w)
    return y if b is None else _add_channel_bias(y, b, r - 1 if last else 1, "conv")


# Module-level computations: equal ops compare equal, so eager and staged caches hit.
def _max(a, b):
    return ops.Maximum()(a, b)


def _add(a, b):
    return ops.Add()(a, b)


def _window(x: Array, window, stride, padding, what: str, data_format: str):
    last = _channels_last(data_format, what)
    n = spatial_rank(x, what, "(N, *spatial, C)" if last else "(N, C, *spatial)")
    sizes = _spatial(x, last)
    window = per_dim(window, n, what, "window")
    strides = window if stride is None else per_dim(stride, n, what, "stride")
    pads = conv_padding(padding, sizes, window, strides, (1,) * n, what)
    for size, (lo, hi), k in zip(sizes, pads, window):
        if size + lo + hi < k:
            raise fail(ShapeError, f"{what}: window {window} does not fit the padded input "
                                   f"{sizes} (padding {pads})")
    if last:
        return (1,) + window + (1,), (1,) + strides + (1,), ((0, 0),) + pads + ((0, 0),)
    return (1, 1) + window, (1, 1) + strides, ((0, 0), (0, 0)) + pads


def max_pool(x: Array, window, stride=None, padding=0, data_format: str = "NCHW"):
    """Maximum over each window of the spatial dims of ``(N, C, *spatial)``.

    ``stride`` defaults to ``window`` (as torch's ``max_pool2d``); padding
    (as in :func:`conv`) is filled with ``-inf``, so it never wins. With
    ``data_format="NHWC"``, ``x`` is channels-last ``(N, *spatial, C)``.

    >>> import numpy as np, hlodsl as hd
    >>> max_pool(hd.array(np.float32([[[1, 3, 2, 5, 4]]])), 2, stride=1)
    hlodsl.Array[float32, (1, 1, 4)]([[[3., 3., 5., 5.]]])
    >>> max_pool(hd.array(np.float32([[[1], [3], [2], [5]]])), 2, data_format="NHWC")
    hlodsl.Array[float32, (1, 2, 1)](
      [[[3.],
        [5.]]])
    """
    require_array(x, "max_pool", "x")
    dims, strides, pads = _window(x, window, stride, padding, "max_pool", data_format)
    if issubclass(x.dtype, Floating):
        lowest = -np.inf
    elif issubclass(x.dtype, Integer):
        lowest = np.iinfo(x.dtype.np_dtype).min
    else:
        raise fail(TypeError, f"max_pool: x must be numeric, got {x.type}")
    return ops.ReduceWindow(_max, dims, strides, pads)(x, lift(lowest, x.dtype))


def avg_pool(x: Array, window, stride=None, padding=0, count_include_pad: bool = True,
             data_format: str = "NCHW"):
    """Mean over each window of the spatial dims of floating-point ``(N, C, *spatial)``.

    ``stride`` defaults to ``window``. Padding adds zeros; with
    ``count_include_pad=True`` (torch's default) they count in the divisor,
    which is then always the window size; with ``False`` a window is divided by
    the number of input elements it covers. With ``data_format="NHWC"``, ``x``
    is channels-last ``(N, *spatial, C)``.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.float32([[[2, 4, 6]]]))
    >>> avg_pool(x, 2, stride=2, padding=1)
    hlodsl.Array[float32, (1, 1, 2)]([[[1., 5.]]])
    >>> avg_pool(x, 2, stride=2, padding=1, count_include_pad=False)
    hlodsl.Array[float32, (1, 1, 2)]([[[2., 5.]]])
    """
    require_float(x, "avg_pool", "x")
    dims, strides, pads = _window(x, window, stride, padding, "avg_pool", data_format)
    zero = lift(0, x.dtype)
    total = ops.ReduceWindow(_add, dims, strides, pads)(x, zero)
    if count_include_pad or all(p == (0, 0) for p in pads):
        count = ops.Broadcast(total.shape)(lift(math.prod(dims), x.dtype))
    else:  # how many real elements each window covers: a sum over ones (folded by XLA)
        ones = ops.Broadcast(x.shape)(lift(1, x.dtype))
        count = ops.ReduceWindow(_add, dims, strides, pads)(ones, zero)
    return ops.Divide()(total, count)


def _adaptive_axis(x: Array, axis: int, out: int) -> Array:
    """torch's adaptive average along one axis.

    Output i averages input elements ``floor(i n / o)`` up to ``ceil((i + 1) n / o)``.
    """
    n = x.shape[axis]
    if n == out:
        return x
    if n % out == 0:  # equal windows: one strided average
        k = n // out
        dims = tuple(k if d == axis else 1 for d in range(x.ndim))
        total = ops.ReduceWindow(_add, dims, dims)(x, lift(0, x.dtype))
        return ops.Divide()(total, ops.Broadcast(total.shape)(lift(k, x.dtype)))
    parts = []
    for i in range(out):
        lo, hi = (i * n) // out, -(-((i + 1) * n) // out)
        start = tuple(lo if d == axis else 0 for d in range(x.ndim))
        limit = tuple(hi if d == axis else s for d, s in enumerate(x.shape))
        window = ops.Slice(start, limit)(x)
        if hi - lo > 1:
            window = ops.Reshape(limit[:axis] + (1,) + limit[axis + 1:])(
                ops.Reduce(_add, (axis,))(window, lift(0, x.dtype)))
            window = ops.Divide()(window, ops.Broadcast(window.shape)(lift(hi - lo, x.dtype)))
        parts.append(window)
    return concat(parts, axis=axis)


def adaptive_avg_pool(x: Array, output_size, data_format: str = "NCHW"):
    """Average pooling to a fixed spatial ``output_size``, as torch's ``adaptive_avg_pool2d``.

    Output element i of a dimension of size n averages input elements
    ``floor(i * n / out)`` to ``ceil((i + 1) * n / out) - 1``; an output larger
    than the input repeats elements (VGG's 7x7 pool on a 1x1 map). With
    ``data_format="NHWC"``, ``x`` is channels-last ``(N, *spatial, C)``.

    >>> import numpy as np, hlodsl as hd
    >>> adaptive_avg_pool(hd.array(np.float32([[[1, 2, 3, 4, 5]]])), 2)
    hlodsl.Array[float32, (1, 1, 2)]([[[2., 4.]]])
    >>> adaptive_avg_pool(hd.array(np.float32([[[1], [2], [3], [4], [5]]])), 2,
    ...                   data_format="NHWC").shape
    (1, 2, 1)
    """
    require_float(x, "adaptive_avg_pool", "x")
    last = _channels_last(data_format, "adaptive_avg_pool")
    n = spatial_rank(x, "adaptive_avg_pool", "(N, *spatial, C)" if last else "(N, C, *spatial)")
    sizes = per_dim(output_size, n, "adaptive_avg_pool", "output_size")
    for d, out in enumerate(sizes):
        x = _adaptive_axis(x, d + (1 if last else 2), out)
    return x


def embedding(ids: Array, table: Array):
    """Rows of ``table`` ``(num_embeddings, dim)`` at integer ``ids``: ``(*ids.shape, dim)``.

    One gather; as every XLA gather, an out-of-range id is clamped into range
    (torch raises instead).

    >>> import numpy as np, hlodsl as hd
    >>> table = hd.array(np.float32([[0, 0], [1, 1], [2, 4]]))
    >>> embedding(hd.array(np.int32([[2, 1]])), table)
    hlodsl.Array[float32, (1, 2, 2)](
      [[[2., 4.],
        [1., 1.]]])
    """
    require_array(ids, "embedding", "ids")
    require_array(table, "embedding", "table")
    if not issubclass(ids.dtype, Integer) or table.ndim != 2:
        raise fail(ShapeError, f"embedding: ids must be integers and table (num_embeddings, "
                               f"dim), got ids {ids.type} and table {table.type}")
    gather = ops.Gather(offset_dims=(ids.ndim,), collapsed_slice_dims=(0,),
                        start_index_map=(0,), index_vector_dim=ids.ndim,
                        slice_sizes=(1, table.shape[1]))
    return gather(table, ids)


def flatten(x: Array, start_dim: int = 1):
    """``x`` with dims ``start_dim..`` merged into one (``torch.flatten(x, 1)``).

    >>> import numpy as np, hlodsl as hd
    >>> flatten(hd.array(np.zeros((2, 3, 4), np.float32))).shape
    (2, 12)
    """
    require_array(x, "flatten", "x")
    if not 0 <= start_dim < max(x.ndim, 1):
        raise fail(ValueError, f"flatten: start_dim {start_dim} out of range for {x.type}")
    return ops.Reshape(x.shape[:start_dim] + (math.prod(x.shape[start_dim:]),))(x)

