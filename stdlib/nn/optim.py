"""Functional optimisers over parameter structures: ``sgd`` and ``adam``.

An optimiser is a pair of functions: ``init(params) -> state`` and
``update(grads, state, params) -> (new_params, new_state)``. Parameters,
gradients and states are structures of arrays (dicts, lists, tuples, attrs
classes: ``hlodsl.tree``), so a whole training step compiles into one module.
The updates follow ``torch.optim.SGD`` and ``torch.optim.Adam`` step for step.

The learning rate and the weight decay may also be scalar arrays (a value
computed in the step, or an argument of it) or schedules (``nn.schedules``:
functions of the step count kept in the state, evaluated inside the
compiled step, so the value changes from step to step with one executable).

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn
>>> opt = nn.sgd(0.1)
>>> params = {"w": hd.array(np.float32([1, 2]))}
>>> params, state = opt.update({"w": hd.array(np.float32([1, 1]))}, opt.init(params), params)
>>> params["w"]
hlodsl.Array[float32, (2,)]([0.9, 1.9])
"""

from __future__ import annotations

import numbers
from typing import Callable, NamedTuple

import numpy as np

from hlodsl.arrays.array import Array, array
from hlodsl.compilation.bindings import watch_rebinding
from hlodsl.arrays.dtypes import Bool, ComplexFloating, Inexact, complex128, float32, float64
from hlodsl.errors import ShapeError
from hlodsl.transforms.structures import leaf_paths
from hlodsl.arrays.tree import flatten, tree_map, unflatten

from ..data_types import astype
from ..elementwise import sqrt
from ..manipulation import fail, where
from ..promotion import lift
from ._args import check_range, static_real
from .schedules import Schedule

__all__ = ["Optimizer", "sgd", "adam", "tree_map"]


class Optimizer(NamedTuple):
    """``init(params) -> state`` and ``update(grads, state, params) -> (params, state)``.

    A compiled step that reaches an optimiser through a global or closure
    variable stages again when that variable is rebound (``opt = nn.adam(0.01)``
    after a first call): the new hyperparameters are honoured (``hlodsl.bindings``).
    """

    init: Callable
    update: Callable


# Its hyperparameters are Python numbers baked into the staged step: a rebound
# optimiser must recompile the steps that used the old one.
watch_rebinding(Optimizer)


def _zeros_like(p: Array) -> Array:
    return p * 0


def _check_params(params, what: str):
    for leaf in flatten(params)[0]:
        if not isinstance(leaf, Array) or not issubclass(leaf.dtype, Inexact):
            raise fail(TypeError, f"{what}: every parameter must be a floating-point array, "
                                  f"got {getattr(leaf, 'type', type(leaf).__name__)}")


def sgd(lr: Hyper, momentum: float = 0.0, nesterov: bool = False,
        weight_decay: Hyper = 0.0, dampening: float = 0.0) -> Optimizer:
    """Stochastic gradient descent, as ``torch.optim.SGD``.

    ``g = grad + weight_decay * p``; with momentum, ``buf = momentum * buf +
    (1 - dampening) * g`` (``buf = g`` on the first step) and ``g = buf``, or
    ``g + momentum * buf`` with ``nesterov``; then ``p = p - lr * g``. The
    state is ``{"momentum": buffers, "step": int32 count}``. ``lr`` and
    ``weight_decay`` may be scalar arrays or schedules of the count (the first
    update reads ``schedule(0)``).

    >>> import numpy as np, hlodsl as hd
    >>> opt = sgd(1.0, momentum=0.5)
    >>> p = hd.array(np.float32([0])); g = hd.array(np.float32([1]))
    >>> s = opt.init(p)
    >>> p, s = opt.update(g, s, p); p, s = opt.update(g, s, p)
    >>> p                                              # -1, then -1 - (0.5 * 1 + 1)
    hlodsl.Array[float32, (1,)]([-2.5])
    """
    _hyper("sgd", lr=lr, weight_decay=weight_decay)
    check_range(momentum, static_real(momentum, "sgd", "momentum") >= 0, "sgd", "momentum",
                "non-negative (>= 0)")
    static_real(dampening, "sgd", "dampening")
    if nesterov and (momentum <= 0 or dampening != 0):
        raise fail(ValueError, "sgd: nesterov needs momentum > 0 and dampening 0")

    def init(params):
        _check_params(params, "sgd")
        return {"momentum": tree_map(_zeros_like, params) if momentum else None,
                "step": array(np.int32(0))}

    def update(grads, state, params):
        _check_state(state, ("momentum", "step"), "sgd")
        first = state["step"] == 0
        leaves, treedef = flatten(params)
        grads = _grads(grads, leaves, treedef, "sgd")
        bufs = _same(state["momentum"], treedef, "sgd", "state['momentum']") if momentum \
            else [None] * len(leaves)
        lr_t, decay_t = _at(lr, state["step"], "lr", leaves), _at(
            weight_decay, state["step"], "weight_decay", leaves)
        new_params, new_bufs = [], []
        for g, p, buf in zip(grads, leaves, bufs):
            if not _is_zero(decay_t):
                g = g + p * _like(decay_t, p)
            if momentum:
                buf = where(first, g, buf * momentum + g * (1 - dampening))
                g = g + buf * momentum if nesterov else buf
            new_params.append(p - g * _like(lr_t, p))
            new_bufs.append(buf)
        return unflatten(treedef, new_params), {
            "momentum": unflatten(treedef, new_bufs) if momentum else None,
            "step": state["step"] + 1}

    return Optimizer(init, update)


def adam(lr: Hyper = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         weight_decay: Hyper = 0.0) -> Optimizer:
    """Adam, as ``torch.optim.Adam`` (L2 ``weight_decay`` added to the gradient).

    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g**2``, and with ``t`` the
    step count ``p = p - lr / (1 - b1**t) * m / (sqrt(v) / sqrt(1 - b2**t) + eps)``.
    The state is ``{"step": int32 count, "mu": m, "nu": v}``. ``lr`` and
    ``weight_decay`` may be scalar arrays or schedules of the count, read
    before the count is incremented (``schedule(0)`` on the first update, as
    optax's ``scale_by_learning_rate``).

    >>> import numpy as np, hlodsl as hd
    >>> opt = adam(0.1)
    >>> p = hd.array(np.float32([1.0]))
    >>> p, s = opt.update(hd.array(np.float32([3.0])), opt.init(p), p)
    >>> p                                               # the first step moves by about lr
    hlodsl.Array[float32, (1,)]([0.9000007])
    """
    _hyper("adam", lr=lr, weight_decay=weight_decay)
    check_range(eps, static_real(eps, "adam", "eps") >= 0, "adam", "eps", "non-negative (>= 0)")
    for name, beta in (("b1", b1), ("b2", b2)):
        check_range(beta, 0 <= static_real(beta, "adam", name) < 1, "adam", name,
                    "in [0, 1)")

    def init(params):
        _check_params(params, "adam")
        return {"step": array(np.int32(0)), "mu": tree_map(_zeros_like, params),
                "nu": tree_map(_zeros_like, params)}

    def update(grads, state, params):
        _check_state(state, ("step", "mu", "nu"), "adam")
        step = state["step"] + 1
        leaves, treedef = flatten(params)
        lr_t, decay_t = _at(lr, state["step"], "lr", leaves), _at(
            weight_decay, state["step"], "weight_decay", leaves)

        def one(g, p, m, v):
            if not _is_zero(decay_t):
                g = g + p * _like(decay_t, p)
            m = m + (g - m) * (1 - b1)
            v = v * b2 + g * g * (1 - b2)
            t = astype(step, p.dtype)
            correction1 = 1 - lift(b1, p.dtype) ** t
            correction2 = 1 - lift(b2, p.dtype) ** t
            denom = sqrt(v) / sqrt(correction2) + eps
            return p - (m / denom) * (_like(lr_t, p) / correction1), m, v

        triples = [one(g, p, m, v) for g, p, m, v in zip(
            _grads(grads, leaves, treedef, "adam"), leaves,
            _same(state["mu"], treedef, "adam", "state['mu']"),
            _same(state["nu"], treedef, "adam", "state['nu']"))]
        new_params = unflatten(treedef, [t[0] for t in triples])
        return new_params, {"step": step, "mu": unflatten(treedef, [t[1] for t in triples]),
                            "nu": unflatten(treedef, [t[2] for t in triples])}

    return Optimizer(init, update)


def _same(tree, treedef, what: str, name: str) -> list:
    leaves, other = flatten(tree)
    if other != treedef:
        raise fail(ValueError, f"{what}: {name} must have the parameters' structure "
                               f"{leaf_paths(treedef, 'params')}, got "
                               f"{leaf_paths(other, name)}")
    return leaves


def _grads(grads, params: list, treedef, what: str) -> list:
    """The gradient leaves, each of its parameter's shape and element type."""
    leaves = _same(grads, treedef, what, "grads")
    for path, g, p in zip(leaf_paths(treedef, "grads"), leaves, params):
        if not isinstance(g, Array) or g.type != p.type:
            got = g.type if isinstance(g, Array) else f"{type(g).__name__} {g!r}"
            raise fail(ShapeError, f"{what}: {path} is {got}, but its parameter is {p.type}; "
                                   "each gradient must have its parameter's shape and "
                                   "element type")
    return leaves


#: A hyperparameter: a real number, a real scalar array, or a schedule (step -> scalar).
Hyper = float | Array | Callable


def _hyper(what: str, **values) -> None:
    """Hyperparameters that are static real numbers >= 0 (as torch.optim checks them),
    real scalar arrays, or callables (schedules of the step count)."""
    for name, value in values.items():
        if isinstance(value, Array):
            _scalar_hyper(value, what, name)
        elif not callable(value):
            check_range(value, static_real(value, what, name) >= 0, what, name,
                        "non-negative (>= 0)")


def _scalar_hyper(value: Array, what: str, name: str) -> Array:
    if value.shape != () or issubclass(value.dtype, (Bool, ComplexFloating)):
        raise fail(TypeError, f"{what}: {name} must be a real number, a real scalar array "
                              f"or a schedule (a function of the step count to a scalar), "
                              f"got {value.type}")
    return value


def _at(value, count: Array, name: str, params: list):
    """A hyperparameter at the step ``count``: a schedule's value there (computed in
    float64 where some parameter is 64-bit, else float32), else itself."""
    if isinstance(value, Array) or not callable(value):
        return value
    if isinstance(value, Schedule):
        wide = any(p.dtype in (float64, complex128) for p in params)
        out = value(count, float64 if wide else float32)
    else:
        out = value(count)
    if isinstance(out, numbers.Real) and not isinstance(out, bool):
        return out
    if not isinstance(out, Array) or out.shape != () or issubclass(
            out.dtype, (Bool, ComplexFloating)):
        got = out.type if isinstance(out, Array) else f"{type(out).__name__} {out!r}"
        raise fail(TypeError, f"the schedule given as {name} must return a real scalar "
                              f"array, got {got}")
    return out


def _is_zero(value) -> bool:
    """Whether a hyperparameter is statically zero (its term can be left out)."""
    return isinstance(value, numbers.Real) and value == 0


def _like(value, p: Array):
    """A hyperparameter as an operand of ``p``'s arithmetic: a Python number as is
    (the updates of static hyperparameters stay as they were), an array in
    ``p``'s element type."""
    return lift(value, p.dtype) if isinstance(value, Array) else value


def _check_state(state, keys: tuple[str, ...], what: str) -> None:
    if not isinstance(state, dict) or set(state) != set(keys):
        got = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise fail(ValueError, f"{what}: state must be what {what}(...).init(params) returns, "
                               f"a dict with keys {list(keys)}, got {got}")
