"""Gradient transformations applied before an optimiser: the global norm and clipping by it.

They take and return structures of arrays (the gradients of a parameter
structure), so ``grads = nn.clip_by_global_norm(grads, 1.0)`` before
``opt.update(grads, state, params)`` is optax's
``optax.chain(optax.clip_by_global_norm(1.0), optimizer)``, and torch's
``clip_grad_norm_`` before ``optimizer.step()``.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn
>>> grads = {"w": hd.array(np.float32([3, 0])), "b": hd.array(np.float32(4))}
>>> nn.global_norm(grads)
hlodsl.Array[float32, ()](5.)
>>> nn.clip_by_global_norm(grads, 1.0)["w"]
hlodsl.Array[float32, (2,)]([0.6, 0. ])
"""

from __future__ import annotations

from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import Bool, ComplexFloating
from hlodsl.arrays.tree import flatten, unflatten

from ..elementwise import abs, sqrt
from ..manipulation import fail, where
from ..promotion import lift, result_dtype
from ..reductions import sum
from ._args import check_range, static_real

__all__ = ["global_norm", "clip_by_global_norm"]


def global_norm(tree) -> Array:
    """The L2 norm of all the elements of a structure of arrays, as one vector's.

    Computed in the widest element type of the leaves (``optax.global_norm``).

    >>> import hlodsl as hd
    >>> global_norm([hd.array([3.0]), hd.array([[4.0]])])
    hlodsl.Array[float64, ()](5.)
    """
    leaves = _leaves(tree, "global_norm")
    dtype = result_dtype(*leaves)
    total = None
    for x in leaves:
        x = lift(abs(x) if issubclass(x.dtype, ComplexFloating) else x, dtype)
        squares = sum(x * x)
        total = squares if total is None else total + squares
    return sqrt(total)


def clip_by_global_norm(tree, max_norm):
    """``tree`` scaled by ``max_norm / global_norm(tree)`` where the norm exceeds
    ``max_norm``, else unchanged (``optax.clip_by_global_norm``).

    ``max_norm`` is a number or a real scalar array (a value computed in the
    step); every leaf keeps its shape and element type.

    >>> import hlodsl as hd
    >>> clip_by_global_norm([hd.array([6.0, 8.0])], 5.0)
    [hlodsl.Array[float64, (2,)]([3., 4.])]
    >>> clip_by_global_norm([hd.array([0.6, 0.8])], 5.0)
    [hlodsl.Array[float64, (2,)]([0.6, 0.8])]
    """
    if isinstance(max_norm, Array):
        if max_norm.shape != () or issubclass(max_norm.dtype, (Bool, ComplexFloating)):
            raise fail(TypeError, f"clip_by_global_norm: max_norm must be a positive number "
                                  f"or a real scalar array, got {max_norm.type}")
    else:
        check_range(max_norm, static_real(max_norm, "clip_by_global_norm", "max_norm") > 0,
                    "clip_by_global_norm", "max_norm", "positive (> 0)")
    leaves, treedef = flatten(tree)
    norm = global_norm(tree)
    within = norm < max_norm
    clipped = []
    for x in leaves:
        bound = lift(max_norm, x.dtype) if isinstance(max_norm, Array) else max_norm
        clipped.append(where(within, x, (x / lift(norm, x.dtype)) * bound))
    return unflatten(treedef, clipped)


def _leaves(tree, what: str) -> list[Array]:
    leaves = flatten(tree)[0]
    if not leaves:
        raise fail(ValueError, f"{what}: the structure holds no arrays")
    for x in leaves:
        if not isinstance(x, Array) or issubclass(x.dtype, Bool):
            got = x.type if isinstance(x, Array) else type(x).__name__
            raise fail(TypeError, f"{what}: every leaf must be a numeric array, got {got}")
    return leaves
