"""Models as plain functions of a parameter structure: MLP, a small CNN, VGG19.

Each model is ``model(params, x)`` with ``params`` a structure of arrays
(dicts and lists, torch's layouts), an ``*_init(key, ...)`` that draws one,
and, for VGG19, ``vgg19_params_from_torch(state_dict)`` that loads
torchvision's weights and ``vgg19_to_channels_last(params)`` that converts
them for the channels-last network (``vgg19(..., data_format="NHWC")``). They run eagerly and compile into one module;
``hd.grad`` gives gradients with the parameters' structure.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import models, nn
>>> params = models.mlp_init(nn.key(0), (4, 8, 3))
>>> models.mlp(params, hd.array(np.zeros((2, 4), np.float32))).shape
(2, 3)
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

from hlodsl.arrays.array import Array
from hlodsl.compilation.compiler import compile
from hlodsl.arrays.dtypes import float32
from hlodsl.errors import ShapeError

from . import manipulation as mp
from . import nn
from .manipulation import fail

__all__ = ["mlp", "mlp_init", "small_cnn", "small_cnn_init", "vgg19", "vgg19_init",
           "vgg19_params_from_torch", "vgg19_to_channels_last", "VGG19_CONFIG"]


def _draws(key, specs, dtype, kind: str) -> list:
    """One ``kind`` ("uniform" in [-1, 1) or "normal") draw per ``(shape, scale)``, times scale.

    All come from one random draw, sliced: one generator op per model instead of
    one per tensor keeps the compiled initialiser small and fast to compile.
    """
    sizes = [math.prod(shape) for shape, _ in specs]
    if kind == "normal":
        flat = nn.normal(key, (sum(sizes),), dtype)
    else:
        flat = nn.uniform(key, (sum(sizes),), dtype, -1.0, 1.0)
    out, start = [], 0
    for (shape, scale), n in zip(specs, sizes):
        out.append(mp.reshape(flat[start:start + n], shape) * scale)
        start += n
    return out


def _torch_default_layers(key, shapes, dtype) -> list:
    """torch.nn.Linear/Conv's default init for weights of ``shapes``: weight and bias both
    uniform in ±1/sqrt(fan_in) (kaiming_uniform with a = sqrt 5 gives the same bound)."""
    specs = []
    for shape in shapes:
        bound = 1 / nn.fans(shape)[0] ** 0.5
        specs += [(shape, bound), ((shape[0],), bound)]
    values = _draws(key, specs, dtype, "uniform")
    return [{"weight": w, "bias": b} for w, b in zip(values[::2], values[1::2])]


def mlp_init(key, sizes: Sequence[int], dtype=float32) -> list:
    """Layers ``[{"weight": (out, in), "bias": (out,)}, ...]`` for widths ``sizes``.

    >>> [p["weight"].shape for p in mlp_init(nn.key(0), (784, 128, 10))]
    [(128, 784), (10, 128)]
    """
    if len(sizes) < 2:
        raise fail(ValueError, f"mlp_init: sizes {tuple(sizes)} needs an input and an output")
    return _mlp_init(key, tuple(sizes), dtype)


# The initialisers are compiled: one executable draws every parameter (eagerly,
# op-by-op drawing of VGG19's parameters costs a compile per op and shape).
@compile
def _mlp_init(key, sizes, dtype):
    return _torch_default_layers(key, [(b, a) for a, b in zip(sizes[:-1], sizes[1:])], dtype)


def mlp(params: list, x: Array, activation: Callable = nn.relu):
    """Linear layers with ``activation`` between them (none after the last).

    >>> import numpy as np, hlodsl as hd
    >>> p = [{"weight": hd.array(np.float32([[1, -1]])), "bias": hd.array(np.float32([0]))}]
    >>> mlp(p, hd.array(np.float32([[3, 1]])))
    hlodsl.Array[float32, (1, 1)]([[2.]])
    """
    for i, layer in enumerate(params):
        x = nn.linear(x, layer["weight"], layer["bias"])
        if i < len(params) - 1:
            x = activation(x)
    return x


def small_cnn_init(key, num_classes: int = 10, channels: tuple[int, int] = (8, 16),
                   in_channels: int = 1, image_size: int = 8, dtype=float32) -> dict:
    """Parameters of :func:`small_cnn` for ``image_size`` square inputs (divisible by 4).

    >>> p = small_cnn_init(nn.key(0))
    >>> [c["weight"].shape for c in p["conv"]], p["dense"]["weight"].shape
    ([(8, 1, 3, 3), (16, 8, 3, 3)], (10, 64))
    """
    if image_size % 4:
        raise fail(ValueError, f"small_cnn_init: image_size {image_size} must be divisible "
                               "by 4 (two 2x2 pools)")
    return _small_cnn_init(key, num_classes, tuple(channels), in_channels, image_size, dtype)


@compile
def _small_cnn_init(key, num_classes, channels, in_channels, image_size, dtype):
    c1, c2 = channels
    flat = c2 * (image_size // 4) ** 2
    conv1, conv2, dense = _torch_default_layers(
        key, [(c1, in_channels, 3, 3), (c2, c1, 3, 3), (num_classes, flat)], dtype)
    return {"conv": [conv1, conv2], "dense": dense}


def small_cnn(params: dict, x: Array):
    """conv3x3-relu-maxpool2 twice, then a linear layer: ``(N, C, H, W) -> (N, classes)``.

    Sized for 8x8 digit images by default (``small_cnn_init``).

    >>> import numpy as np, hlodsl as hd
    >>> small_cnn(small_cnn_init(nn.key(0)), hd.array(np.zeros((5, 1, 8, 8), np.float32))).shape
    (5, 10)
    """
    for layer in params["conv"]:
        x = nn.max_pool(nn.relu(nn.conv(x, layer["weight"], layer["bias"], padding="SAME")), 2)
    return nn.linear(nn.flatten(x), params["dense"]["weight"], params["dense"]["bias"])


#: torchvision's configuration "E": output channels of each 3x3 conv, "M" a 2x2 max-pool.
VGG19_CONFIG = (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M",
                512, 512, 512, 512, "M", 512, 512, 512, 512, "M")


def _feature_indices() -> list[int]:
    """Index of each conv in torchvision's ``features`` Sequential (conv, ReLU, ..., pool)."""
    out, i = [], 0
    for item in VGG19_CONFIG:
        if item == "M":
            i += 1
        else:
            out.append(i)
            i += 2
    return out


def vgg19_init(key, num_classes: int = 1000, hidden: int = 4096, in_channels: int = 3,
               dtype=float32) -> dict:
    """VGG19 parameters, initialised as torchvision does.

    Convs: kaiming_normal(fan_out, relu) weights, zero biases; linears:
    normal(0, 0.01) weights, zero biases. ``hidden`` and ``num_classes`` size
    the classifier (4096 and 1000 in torchvision).

    >>> p = vgg19_init(nn.key(0), num_classes=10, hidden=16)
    >>> len(p["features"]), [c["weight"].shape for c in p["classifier"]]
    (16, [(16, 25088), (16, 16), (10, 16)])
    """
    return _vgg19_init(key, num_classes, hidden, in_channels, dtype)


@compile
def _vgg19_init(key, num_classes, hidden, in_channels, dtype):
    shapes, c_in = [], in_channels
    for c_out in (c for c in VGG19_CONFIG if c != "M"):
        shapes.append((c_out, c_in, 3, 3))
        c_in = c_out
    widths = (512 * 7 * 7, hidden, hidden, num_classes)
    shapes += [(b, a) for a, b in zip(widths[:-1], widths[1:])]
    # kaiming_normal(fan_out, relu) for convs: std sqrt(2 / (out * 9)); 0.01 for linears.
    stds = [(2 / nn.fans(s)[1]) ** 0.5 if len(s) == 4 else 0.01 for s in shapes]
    weights = _draws(key, list(zip(shapes, stds)), dtype, "normal")
    layers = [{"weight": w, "bias": nn.zeros(None, (w.shape[0],), dtype)} for w in weights]
    features, classifier = layers[:-3], layers[-3:]
    return {"features": features, "classifier": classifier}


def vgg19(params: dict, x: Array, dropout_key: Array | None = None, rate: float = 0.5,
          data_format: str = "NCHW"):
    """VGG19 on ``(N, 3, H, W)`` images (H, W >= 32): ``(N, num_classes)`` logits.

    torchvision's layer order: 16 3x3 'SAME' convs with ReLU and five 2x2
    max-pools, an adaptive average pool to 7x7 (the identity at 224x224), then
    linear-ReLU-dropout twice and a last linear. Dropout is off (evaluation)
    unless a ``dropout_key`` is given.

    With ``data_format="NHWC"`` the images are channels-last ``(N, H, W, 3)``
    and ``params`` must be in the channels-last layout of
    :func:`vgg19_to_channels_last` (HWIO conv weights); the logits are the same.

    >>> import numpy as np, hlodsl as hd
    >>> p = vgg19_init(nn.key(0), num_classes=10, hidden=16)
    >>> hd.compile(vgg19)(p, hd.array(np.zeros((1, 3, 32, 32), np.float32))).shape
    (1, 10)
    >>> q = vgg19_to_channels_last(p)
    >>> hd.compile(vgg19)(q, hd.array(np.zeros((1, 32, 32, 3), np.float32)),
    ...                   data_format="NHWC").shape
    (1, 10)
    """
    last = data_format == "NHWC"
    spatial = x.shape[1:3] if last else x.shape[2:]
    if x.ndim != 4 or min(spatial) < 32 or data_format not in ("NCHW", "NHWC"):
        layout = "(N, H, W, C)" if last else "(N, C, H, W)"
        raise fail(ShapeError, f"vgg19: x must be {layout} with H, W >= 32 (five 2x2 "
                               f"pools) and data_format 'NCHW' or 'NHWC', got {x.type} "
                               f"and data_format={data_format!r}")
    convs = iter(_vgg19_parts(params, "vgg19")[0])
    for item in VGG19_CONFIG:
        if item == "M":
            x = nn.max_pool(x, 2, data_format=data_format)
        else:
            layer = next(convs)
            x = nn.relu(nn.conv(x, layer["weight"], layer["bias"], padding=1,
                                data_format=data_format))
    x = nn.flatten(nn.adaptive_avg_pool(x, 7, data_format=data_format))
    keys = nn.split(dropout_key, 2) if dropout_key is not None else (None, None)
    layers = _vgg19_parts(params, "vgg19")[1]
    for i, layer in enumerate(layers):
        x = nn.linear(x, layer["weight"], layer["bias"])
        if i < len(layers) - 1:
            x = nn.relu(x)
            if dropout_key is not None:
                x = nn.dropout(keys[i], x, rate)
    return x


def _vgg19_parts(params, what: str):
    """``params["features"]`` (16 convs) and ``params["classifier"]``, or a clear error."""
    try:
        features, classifier = list(params["features"]), list(params["classifier"])
    except (KeyError, TypeError, IndexError):
        got = sorted(map(repr, params)) if isinstance(params, dict) else type(params).__name__
        raise fail(ValueError, f"{what}: params must have vgg19's structure {{'features': "
                               "[16 x {'weight', 'bias'}], 'classifier': [{'weight', 'bias'}, "
                               "...]}, as vgg19_init or vgg19_params_from_torch give; got "
                               f"{got}") from None
    convs = sum(1 for c in VGG19_CONFIG if c != "M")
    if len(features) != convs or not classifier:
        raise fail(ValueError, f"{what}: params must have vgg19's structure: {convs} conv layers "
                               f"under 'features' and at least one linear layer under "
                               f"'classifier', got {len(features)} and {len(classifier)}")
    return features, classifier


def vgg19_to_channels_last(params: dict) -> dict:
    """VGG19 parameters in torch's layout converted for ``vgg19(..., data_format="NHWC")``.

    Conv weights go from OIHW to HWIO. The first linear layer's weight
    ``(hidden, C * 7 * 7)`` has its columns permuted from torch's ``(C, H, W)``
    flattening order to the ``(H, W, C)`` order of a flattened channels-last
    map, so the logits do not change. Biases and the other linear layers are
    kept. One compiled program does it (do it once, not per call).

    >>> p = vgg19_to_channels_last(vgg19_init(nn.key(0), num_classes=10, hidden=16))
    >>> p["features"][0]["weight"].shape, p["classifier"][0]["weight"].shape
    ((3, 3, 3, 64), (16, 25088))
    """
    try:
        features, classifier = params["features"], params["classifier"]
        shapes = [layer["weight"].shape for layer in features]
        first = classifier[0]["weight"].shape
    except (KeyError, IndexError, TypeError, AttributeError):
        raise fail(ValueError, "vgg19_to_channels_last: params must be vgg19's structure "
                               "{'features': [{'weight', 'bias'}, ...], 'classifier': "
                               "[...]}") from None
    if any(len(s) != 4 for s in shapes) or len(first) != 2 or not shapes or \
            first[1] != shapes[-1][0] * 49:
        raise fail(ShapeError, f"vgg19_to_channels_last: expected OIHW conv weights and a "
                               f"first linear weight (hidden, C * 7 * 7); got conv weights "
                               f"{shapes} and a first linear weight {first}")
    return _vgg19_to_channels_last(params)


@compile
def _vgg19_to_channels_last(params):
    features = [{"weight": mp.permute_dims(layer["weight"], (2, 3, 1, 0)),
                 "bias": layer["bias"]} for layer in params["features"]]
    dense = params["classifier"][0]
    w = dense["weight"]
    c = params["features"][-1]["weight"].shape[0]
    w = mp.reshape(mp.permute_dims(mp.reshape(w, (w.shape[0], c, 7, 7)), (0, 2, 3, 1)),
                   w.shape)
    classifier = [{"weight": w, "bias": dense["bias"]}] + list(params["classifier"][1:])
    return {"features": features, "classifier": classifier}


def vgg19_params_from_torch(state_dict) -> dict:
    """The parameters of :func:`vgg19` from a torchvision VGG19 ``state_dict``.

    Reads ``features.{i}.weight/bias`` of the 16 convs and ``classifier.{0,3,6}``;
    a missing key is a ``KeyError`` naming it, a key that is none of these a
    ``ValueError``, and a tensor of the wrong shape a ``ShapeError`` (checked
    before anything is converted). The classifier's widths (``hidden``,
    ``num_classes``) are free but must chain.

    >>> import torch                                                 # doctest: +SKIP
    >>> p = vgg19_params_from_torch(torchvision_vgg19.state_dict())  # doctest: +SKIP
    """
    _check_vgg19_state(state_dict)
    flat = nn.from_torch(state_dict)

    def layer(prefix: str) -> dict:
        try:
            return {"weight": flat[f"{prefix}.weight"], "bias": flat[f"{prefix}.bias"]}
        except KeyError as e:
            raise KeyError(f"vgg19_params_from_torch: the state_dict has no {e.args[0]!r} "
                           "(torchvision's VGG19 names are features.{i}.* and "
                           "classifier.{0,3,6}.*)") from None

    return {"features": [layer(f"features.{i}") for i in _feature_indices()],
            "classifier": [layer(f"classifier.{i}") for i in (0, 3, 6)]}


def _dims(dims) -> str:
    """A shape as Python prints a tuple, with names for the free dimensions."""
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def _check_vgg19_state(state_dict) -> None:
    """Missing keys (KeyError), unexpected keys (ValueError), then shapes (ShapeError)."""
    what = "vgg19_params_from_torch"
    if not isinstance(state_dict, Mapping):
        raise fail(TypeError, f"{what}: state_dict must be a mapping (name -> tensor, as "
                              f"model.state_dict() gives), got {type(state_dict).__name__}")
    names = "torchvision's VGG19 names are features.{i}.* and classifier.{0,3,6}.*"
    prefixes = [f"features.{i}" for i in _feature_indices()] + \
               [f"classifier.{i}" for i in (0, 3, 6)]
    wanted = [f"{p}.{part}" for p in prefixes for part in ("weight", "bias")]
    for name in wanted:
        if name not in state_dict:
            raise KeyError(f"{what}: the state_dict has no {name!r} ({names})")
    unexpected = [k for k in state_dict if k not in set(wanted)]
    if unexpected:
        raise fail(ValueError, f"{what}: unexpected keys {unexpected[:5]}"
                               f"{' ...' if len(unexpected) > 5 else ''} in the state_dict: "
                               f"not a VGG19 parameter ({names})")
    expected, c_in = {}, 3
    for i, c_out in zip(_feature_indices(), (c for c in VGG19_CONFIG if c != "M")):
        expected[f"features.{i}"] = (c_out, c_in, 3, 3)
        c_in = c_out
    width = 512 * 7 * 7
    for i, out in zip((0, 3, 6), ("hidden", "hidden", "num_classes")):
        w = _shape_of(state_dict[f"classifier.{i}.weight"])
        expected[f"classifier.{i}"] = (w[0] if w is not None and len(w) == 2 else out, width)
        width = expected[f"classifier.{i}"][0]
    for prefix, shape in expected.items():
        for name, want in ((f"{prefix}.weight", shape), (f"{prefix}.bias", shape[:1])):
            got = _shape_of(state_dict[name])
            if got is not None and got != want:  # no shape: from_torch says what it is
                raise fail(ShapeError, f"{what}: {name} has shape {_dims(got)}, expected "
                                       f"{_dims(want)} (torchvision's VGG19)")


def _shape_of(value) -> tuple | None:
    shape = getattr(value, "shape", None)
    return None if shape is None else tuple(int(d) for d in shape)
