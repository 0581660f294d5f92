"""Losses: cross_entropy (class indices or probabilities) and mse, with torch's reductions.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn
>>> logits = hd.array(np.float32([[0, 0], [0, np.log(3)]]))
>>> loss = nn.cross_entropy(logits, hd.array(np.int32([0, 1])), reduction="none")
>>> np.asarray(loss).round(6)   # -log(1/2), -log(3/4)
array([0.693147, 0.287682], dtype=float32)
"""

from __future__ import annotations

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import Floating, Integer
from hlodsl.errors import ShapeError

from ..creation import zeros_like
from ..manipulation import fail
from ..promotion import lift
from ..reductions import mean, sum
from .activations import log_softmax

__all__ = ["cross_entropy", "mse"]

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss: Array, reduction: str, what: str):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return sum(loss)
    if reduction == "mean":
        return mean(loss)
    raise fail(ValueError, f"{what}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _class_axis(logits: Array) -> int:
    return 1 if logits.ndim >= 2 else 0


@dispatch
def cross_entropy(logits: Array[Floating], labels: Array[Integer], reduction: str = "mean",
                  ignore_index: int = -100, label_smoothing: float = 0.0):
    """Softmax cross-entropy of ``logits`` against integer class ``labels``, as torch's.

    ``logits`` is ``(N, C, *d)`` (or ``(C,)``), the classes along dim 1 (0);
    ``labels`` holds class indices with the other dims. Labels equal to
    ``ignore_index`` contribute nothing, and ``"mean"`` divides by the number
    of the others. ``label_smoothing`` ε mixes in the uniform distribution:
    ``(1 - ε) * nll + ε * mean over classes of -log_softmax``. A second
    method takes float class probabilities with ``logits``'s shape instead.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.float32([[2, 0, 0], [0, 2, 0]]))
    >>> cross_entropy(x, hd.array(np.int64([0, -100])))            # the second is ignored
    hlodsl.Array[float32, ()](0.23954484)
    >>> cross_entropy(x, hd.array(np.float32([[1, 0, 0], [0, 1, 0]])))   # probabilities
    hlodsl.Array[float32, ()](0.23954484)
    """
    axis = _class_axis(logits)
    expect = logits.shape[:axis] + logits.shape[axis + 1:]
    if labels.shape != expect:
        raise fail(ShapeError, f"cross_entropy: integer labels must have the shape of logits "
                               f"{logits.type} without its class dim {axis}, i.e. {expect}; "
                               f"got {labels.type}")
    logp = log_softmax(logits, axis=axis)
    classes = ops.Iota(labels.dtype, logits.shape, axis)()
    kept = tuple(d for d in range(logits.ndim) if d != axis)
    hot = ops.Compare("EQ")(classes, ops.Broadcast(logits.shape, kept)(labels))
    loss = -sum(ops.Select()(hot, logp, zeros_like(logp)), axis=axis)
    if label_smoothing:
        uniform = -mean(logp, axis=axis)
        loss = loss * (1 - label_smoothing) + uniform * label_smoothing
    valid = ops.Compare("NE")(labels, ops.Broadcast(labels.shape)(lift(ignore_index,
                                                                       labels.dtype)))
    loss = ops.Select()(valid, loss, zeros_like(loss))
    if reduction == "mean":
        count = sum(ops.Convert(logits.dtype)(valid))
        return sum(loss) / count
    return _reduce(loss, reduction, "cross_entropy")


@dispatch
def cross_entropy(logits: Array[Floating], labels: Array[Floating],  # noqa: F811
                  reduction: str = "mean", label_smoothing: float = 0.0):
    """Cross-entropy against class probabilities ``labels`` of ``logits``'s shape."""
    if labels.shape != logits.shape or labels.dtype is not logits.dtype:
        raise fail(ShapeError, f"cross_entropy: probability labels must have the type of "
                               f"logits {logits.type}, got {labels.type}")
    axis = _class_axis(logits)
    if label_smoothing:
        labels = labels * (1 - label_smoothing) + label_smoothing / logits.shape[axis]
    loss = -sum(labels * log_softmax(logits, axis=axis), axis=axis)
    return _reduce(loss, reduction, "cross_entropy")


def mse(prediction: Array, target: Array, reduction: str = "mean"):
    """Squared error ``(prediction - target) ** 2``, reduced as torch's ``mse_loss``.

    >>> import numpy as np, hlodsl as hd
    >>> mse(hd.array(np.float32([1, 2])), hd.array(np.float32([1, 4])))
    hlodsl.Array[float32, ()](2.)
    """
    if not isinstance(prediction, Array) or not isinstance(target, Array) or \
            prediction.type != target.type or not issubclass(prediction.dtype, Floating):
        raise fail(ShapeError, f"mse: prediction and target must be float arrays of one type, "
                               f"got {getattr(prediction, 'type', prediction)} and "
                               f"{getattr(target, 'type', target)}")
    d = prediction - target
    return _reduce(d * d, reduction, "mse")
