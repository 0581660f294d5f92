"""Batch normalisation: training (normalise and report statistics), inference, gradient.

``feature_index`` is the operand dimension holding the features; statistics
are taken over every other dimension.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.float32([[1, 2], [3, 6]]))
>>> one, zero = hd.array(np.float32([1, 1])), hd.array(np.float32([0, 0]))
>>> y, mean, var = BatchNormTraining(1e-5, 1)(x, one, zero)
>>> mean, var
(hlodsl.Array[float32, (2,)]([2., 4.]), hlodsl.Array[float32, (2,)]([1., 4.]))
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import Floating
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType, TupleType

from ._checks import non_negative, real

__all__ = ["BatchNormTraining", "BatchNormInference", "BatchNormGrad"]


class _BatchNorm(HloOp):
    """Shared checks: a float operand and per-feature vectors of its element type."""

    def _check(self, x: ArrayType, vectors, types) -> ArrayType:
        require(issubclass(x.dtype, Floating), self, types, "the operand must be floating-point")
        require(0 <= self.feature_index < x.rank, self, types,
                f"feature_index {self.feature_index} out of range for rank {x.rank}")
        feature = ArrayType(x.dtype, (x.shape[self.feature_index],))
        for v in vectors:
            require(v == feature, self, types,
                    f"per-feature operands must be {feature} (the feature dimension's size)")
        return feature

    def attributes(self, operand_types, result_type, ctx):
        return [f"epsilon={self.epsilon!r}", f"feature_index={self.feature_index}"]

    def _axes(self, x) -> tuple[int, ...]:
        return tuple(d for d in range(np.ndim(x)) if d != self.feature_index)

    def _shape(self, v, x):
        shape = [1] * np.ndim(x)
        shape[self.feature_index] = -1
        return np.reshape(v, shape)


@frozen
class BatchNormTraining(_BatchNorm, opcode="batch-norm-training"):
    """``(normalised, batch_mean, batch_var)`` from operand, scale and offset."""

    epsilon: float = attrs.field(converter=real)
    feature_index: int = attrs.field(converter=non_negative)

    def result_type(self, x, scale, offset):
        feature = self._check(x, (scale, offset), (x, scale, offset))
        return TupleType((x, feature, feature))

    def reference(self, x, scale, offset):
        axes = self._axes(x)
        mean, var = np.mean(x, axis=axes), np.var(x, axis=axes)
        y = (x - self._shape(mean, x)) / np.sqrt(self._shape(var, x) + self.epsilon)
        return y * self._shape(scale, x) + self._shape(offset, x), mean, var


@frozen
class BatchNormInference(_BatchNorm, opcode="batch-norm-inference"):
    """Normalise with given statistics: operand, scale, offset, mean, variance."""

    epsilon: float = attrs.field(converter=real)
    feature_index: int = attrs.field(converter=non_negative)

    def result_type(self, x, scale, offset, mean, variance):
        self._check(x, (scale, offset, mean, variance), (x, scale, offset, mean, variance))
        return x

    def reference(self, x, scale, offset, mean, variance):
        s = self._shape
        return (x - s(mean, x)) / np.sqrt(s(variance, x) + self.epsilon) * s(scale, x) + \
            s(offset, x)


@frozen
class BatchNormGrad(_BatchNorm, opcode="batch-norm-grad"):
    """``(grad_operand, grad_scale, grad_offset)`` from operand, scale, mean, variance, grad."""

    epsilon: float = attrs.field(converter=real)
    feature_index: int = attrs.field(converter=non_negative)

    def result_type(self, x, scale, mean, variance, grad):
        types = (x, scale, mean, variance, grad)
        feature = self._check(x, (scale, mean, variance), types)
        require(grad == x, self, types, "the output gradient must have the operand's type")
        return TupleType((x, feature, feature))

    def reference(self, x, scale, mean, variance, grad):
        s, axes = self._shape, self._axes(x)
        n = np.size(x) / np.shape(x)[self.feature_index]
        inv = 1 / np.sqrt(s(variance, x) + self.epsilon)
        xhat = (x - s(mean, x)) * inv
        grad_offset = np.sum(grad, axis=axes)
        grad_scale = np.sum(grad * xhat, axis=axes)
        grad_x = s(scale, x) * inv / n * (n * grad - s(grad_offset, x) - xhat * s(grad_scale, x))
        return grad_x, grad_scale, grad_offset


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# Training: ct of the normalised result goes through BatchNormGrad; the batch
# statistics' cts add d mean/dx = 1/N and d var/dx = 2 (x - mean)/N. Inference
# and BatchNormGrad itself are differentiated through their formulas written
# with elementwise ops and sums (so second derivatives work).

from hlodsl.ir.rules import vjp_rule  # noqa: E402


def _spread(op, v, x):
    from .broadcast import Broadcast
    return Broadcast(x.shape, (op.feature_index,))(v)


def _sum(op, x):
    from ._ad import sum_dims
    return sum_dims(x, tuple(d for d in range(x.ndim) if d != op.feature_index))


def _inverse_std(op, variance):
    from .unary import Rsqrt
    from ._ad import add, full_like
    return Rsqrt()(add(variance, full_like(variance, op.epsilon)))


def _inference_formula(op, x, scale, offset, mean, variance):
    from ._ad import add, mul, sub
    factor = _spread(op, mul(scale, _inverse_std(op, variance)), x)
    return add(mul(sub(x, _spread(op, mean, x)), factor), _spread(op, offset, x))


def _grad_formula(op, x, scale, mean, variance, grad):
    from ._ad import full_like, mul, sub

    n = x.size // x.shape[op.feature_index]
    inv = _inverse_std(op, variance)
    xhat = mul(sub(x, _spread(op, mean, x)), _spread(op, inv, x))
    grad_offset = _sum(op, grad)
    grad_scale = _sum(op, mul(grad, xhat))
    centred = sub(sub(mul(grad, full_like(grad, n)), _spread(op, grad_offset, x)),
                  mul(xhat, _spread(op, grad_scale, x)))
    factor = mul(mul(scale, inv), full_like(inv, 1 / n))
    return mul(_spread(op, factor, x), centred), grad_scale, grad_offset


@vjp_rule.dispatch
def batch_norm_training_vjp(op: BatchNormTraining, ct, out, x, scale, offset):
    from ._ad import add, full_like, mul, sub

    ct_y, ct_mean, ct_var = ct
    _, mean, var = out
    ct_x, ct_scale, ct_offset = BatchNormGrad(op.epsilon, op.feature_index)(
        x, scale, mean, var, ct_y)
    n = x.size // x.shape[op.feature_index]
    from_mean = _spread(op, mul(ct_mean, full_like(ct_mean, 1 / n)), x)
    from_var = mul(_spread(op, mul(ct_var, full_like(ct_var, 2 / n)), x),
                   sub(x, _spread(op, mean, x)))
    return add(add(ct_x, from_mean), from_var), ct_scale, ct_offset


@vjp_rule.dispatch
def batch_norm_inference_vjp(op: BatchNormInference, ct, out, *args):
    from ._ad import vjp_through
    return tuple(vjp_through(lambda *a: _inference_formula(op, *a), args, ct))


@vjp_rule.dispatch
def batch_norm_grad_vjp(op: BatchNormGrad, ct, out, *args):
    from ._ad import vjp_through
    return tuple(vjp_through(lambda *a: _grad_formula(op, *a), args, tuple(ct)))


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import batch_size, with_batch  # noqa: E402


def _features_by_example(x, f: int):
    """``x`` (batch first, features at ``f + 1``) with the batch merged into its features
    (example-major): statistics over "the other dimensions" become per example."""
    from .reshape import Reshape, Transpose

    perm = (*range(1, f + 1), 0, *range(f + 1, x.ndim))
    moved = Transpose(perm)(x)
    shape = list(moved.shape)
    shape[f:f + 2] = [shape[f] * shape[f + 1]]
    return Reshape(tuple(shape))(moved)


def _split_features(y, f: int, size: int):
    """The inverse of ``_features_by_example``, leaving the batch at dimension ``f``."""
    from .reshape import Reshape

    shape = list(y.shape)
    shape[f:f + 1] = [size, shape[f] // size]
    return Reshape(tuple(shape))(y)


@batch_rule.dispatch
def batch_norm_batched(op: _BatchNorm, args: tuple, dims: tuple):
    from .reshape import Reshape

    size = batch_size(args, dims)
    f = op.feature_index
    full_shaped = {0, 4} if isinstance(op, BatchNormGrad) else {0}  # the rest: per feature
    merged = []
    for k, (a, d) in enumerate(zip(args, dims)):
        a = with_batch(a, d, size)
        merged.append(_features_by_example(a, f) if k in full_shaped else
                      Reshape((a.shape[0] * a.shape[1],))(a))
    out = type(op)(op.epsilon, f)(*merged)
    if not isinstance(out, tuple):
        return _split_features(out, f, size), f
    full, *vectors = out
    return (_split_features(full, f, size),
            *(Reshape((size, v.shape[0] // size))(v) for v in vectors)), \
        (f, *(0 for _ in vectors))
