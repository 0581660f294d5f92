"""Loading weights: numpy arrays and PyTorch ``state_dict``s as hlodsl parameter structures.

Weights keep torch's layouts (see ``nn.layers``), so loading is a conversion
of each tensor, never a transpose. ``nest`` turns dotted names
(``"features.0.weight"``) into nested dicts and lists.

>>> import numpy as np
>>> from hlodsl.stdlib import nn
>>> params = nn.from_numpy({"fc.weight": np.ones((2, 3), np.float32), "fc.bias": np.zeros(2)})
>>> params["fc.weight"].shape, nn.nest(params)["fc"]["bias"].dtype
((2, 3), float64)
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from hlodsl.arrays.array import Array, array

from ..manipulation import fail

__all__ = ["from_numpy", "from_torch", "nest"]


def _convert(value, name: str, what: str):
    if isinstance(value, Array):
        return value
    if isinstance(value, (Mapping, list, tuple)):
        if isinstance(value, Mapping):
            return {k: _convert(v, f"{name}.{k}", what) for k, v in value.items()}
        return type(value)(_convert(v, f"{name}[{i}]", what) for i, v in enumerate(value))
    try:
        return array(np.asarray(value))
    except (TypeError, ValueError) as e:
        raise fail(TypeError, f"{what}: cannot convert {name!r} ({type(value).__name__}) to "
                              f"an array: {e}") from None


def from_numpy(weights):
    """``weights`` (a dict, list or tuple, nested, of numpy arrays) with hlodsl arrays as leaves.

    Element types are kept (``float64`` stays ``float64``).

    >>> from_numpy([np.float32([1, 2])])
    [hlodsl.Array[float32, (2,)]([1., 2.])]
    """
    return _convert(weights, "weights", "from_numpy")


def from_torch(state_dict, nested: bool = False):
    """A PyTorch ``state_dict`` (name -> tensor) as a dict of hlodsl arrays.

    Each tensor is detached, moved to the CPU and converted with ``.numpy()``;
    torch is imported only by this function. ``nested=True`` applies
    :func:`nest` to the result.

    >>> import torch                                          # doctest: +SKIP
    >>> from_torch(torch.nn.Linear(3, 2).state_dict())["weight"].shape   # doctest: +SKIP
    (2, 3)
    """
    if not isinstance(state_dict, Mapping):
        raise fail(TypeError, f"from_torch: state_dict must be a mapping (name -> tensor, as "
                              f"module.state_dict() gives), got {type(state_dict).__name__}")
    import torch  # lazily: torch is a test-time dependency only

    out = {}
    for name, value in state_dict.items():
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().numpy()
        out[name] = _convert(value, name, "from_torch")
    return nest(out) if nested else out


def nest(flat: Mapping[str, object]):
    """Dotted names to nested dicts; levels whose keys are 0..n-1 become lists.

    >>> nest({"layers.0.w": 1, "layers.1.w": 2, "head.b": 3})
    {'layers': [{'w': 1}, {'w': 2}], 'head': {'b': 3}}
    """
    if not isinstance(flat, Mapping):
        raise fail(TypeError, f"nest: expects a mapping of dotted names to values, got "
                              f"{type(flat).__name__}")
    root: dict = {}
    for name, value in flat.items():
        if not isinstance(name, str):
            raise fail(TypeError, f"nest: every key must be a str (a dotted name such as "
                                  f"'layers.0.weight'), got {type(name).__name__} {name!r}")
        node, parts = root, name.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise fail(ValueError, f"nest: {name!r} puts a name under a leaf")
        if parts[-1] in node:
            raise fail(ValueError, f"nest: {name!r} names a level that has entries")
        node[parts[-1]] = value
    return _lists(root)


def _lists(node):
    if not isinstance(node, dict):
        return node
    node = {k: _lists(v) for k, v in node.items()}
    if node and sorted(node) == sorted(str(i) for i in range(len(node))):
        return [node[str(i)] for i in range(len(node))]
    return node
