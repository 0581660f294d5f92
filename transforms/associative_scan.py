"""``associative_scan``: all prefix combinations of an associative ``fn``, in parallel.

The work-efficient parallel prefix algorithm (Blelloch; jax.lax.associative_scan's):
combine neighbouring pairs (strided slices), scan the half-length result
recursively, combine once more for the other half, and interleave the two
halves (two pads with interior padding, added). ``log2(n)`` levels of
elementwise work, ``O(n)`` in all, no loop: every level is a few slices and
one call of ``fn`` on whole arrays, so ``fn`` must be vectorised (it gets
arrays of elements, as ``jax.lax.associative_scan``'s does). Derivatives and
``vmap`` come from the ops' rules.

>>> import numpy as np, hlodsl as hd
>>> hd.associative_scan(lambda a, b: a + b, hd.array(np.arange(1.0, 6.0)))
hlodsl.Array[float64, (5,)]([ 1.,  3.,  6., 10., 15.])
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array, array
from hlodsl.arrays.dtypes import Bool
from hlodsl.arrays.tree import flatten, unflatten

from .structures import error, name_of

__all__ = ["associative_scan"]


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """Inclusive scan of ``elems`` with the associative ``fn``, along ``axis``.

    Args:
        fn: ``fn(a, b)`` combines two structures shaped as ``elems`` whose
            leaves are arrays of several elements along ``axis``; it must be
            associative (``fn(fn(a, b), c) == fn(a, b, fn(b, c))``) and
            elementwise along ``axis``.
        elems: an array or a structure (tuple, list, dict, attrs) of arrays,
            all of the same size along ``axis``.
        reverse: scan from the end: element ``i`` combines ``i`` .. ``n - 1``.
        axis: the axis to scan along (negative counts from the end).

    Returns:
        The structure of ``elems``: element ``i`` along ``axis`` is
        ``fn(... fn(elems[0], elems[1]) ..., elems[i])``.

    >>> import numpy as np, hlodsl as hd
    >>> a = hd.array(np.float32([0.5, 0.5, 0.5])); b = hd.array(np.float32([1, 1, 1]))
    >>> def compose(f, g):              # x -> a x + b, composed: a linear recurrence
    ...     return f[0] * g[0], g[0] * f[1] + g[1]
    >>> hd.associative_scan(compose, (a, b))[1]   # x_t = 0.5 x_{t-1} + 1, x_{-1} = 0
    hlodsl.Array[float32, (3,)]([1.  , 1.5 , 1.75])
    """
    if not callable(fn):
        raise error(TypeError, f"associative_scan: fn must be a function of two structures, "
                               f"got {type(fn).__name__}")
    leaves, tree = flatten(elems)
    if not leaves or not all(isinstance(x, Array) for x in leaves):
        raise error(TypeError, "associative_scan: elems must be an array or a structure of "
                               "arrays")
    ranks = {x.ndim for x in leaves}
    rank = min(ranks)
    if rank == 0:
        raise error(ValueError, "associative_scan: elems must have an axis to scan along; a "
                                f"leaf is a scalar ({[str(x.type) for x in leaves]})")
    if not -rank <= axis < rank:
        raise error(ValueError, f"associative_scan: axis {axis} is out of range for the "
                                f"leaves {[str(x.type) for x in leaves]}")
    sizes = {x.shape[axis % x.ndim] for x in leaves}
    if len(sizes) != 1:
        raise error(ValueError, f"associative_scan: the leaves have different sizes along "
                                f"axis {axis}: {[str(x.type) for x in leaves]}")
    name = name_of(fn)

    def combine(a: list, b: list) -> list:
        out, out_tree = flatten(fn(unflatten(tree, a), unflatten(tree, b)))
        if out_tree != tree or len(out) != len(a):
            raise error(TypeError, f"associative_scan: fn {name!r} must return the structure "
                                   "of its arguments (the structure of elems)")
        for x, y in zip(a, out):
            if not isinstance(y, Array) or y.type != x.type:
                got = y.type if isinstance(y, Array) else type(y).__name__
                raise error(TypeError, f"associative_scan: fn {name!r} returned {got} for "
                                       f"operands of type {x.type}; it must keep each leaf's "
                                       "type and shape")
        return out

    axes = [axis % x.ndim for x in leaves]
    if reverse:
        leaves = [ops.Reverse((d,))(x) for x, d in zip(leaves, axes)]
    out = _scan(combine, leaves, axes)
    if reverse:
        out = [ops.Reverse((d,))(x) for x, d in zip(out, axes)]
    return unflatten(tree, out)


def _slice(x: Array, d: int, start: int, stop: int, stride: int = 1) -> Array:
    lo = [0] * x.ndim
    hi = list(x.shape)
    step = [1] * x.ndim
    lo[d], hi[d], step[d] = start, max(stop, start), stride
    return ops.Slice(tuple(lo), tuple(hi), tuple(step))(x)


def _scan(combine, elems: list, axes: list) -> list:
    n = elems[0].shape[axes[0]]
    if n < 2:
        return elems
    # Pairs (0, 1), (2, 3), ... combined: the scan of those is every odd-indexed result.
    reduced = combine([_slice(x, d, 0, n - 1, 2) for x, d in zip(elems, axes)],
                      [_slice(x, d, 1, n, 2) for x, d in zip(elems, axes)])
    odd = _scan(combine, reduced, axes)
    # Each even-indexed result (from 2 on) is the odd result before it combined with it.
    if n % 2 == 0:
        even = combine([_slice(x, d, 0, x.shape[d] - 1) for x, d in zip(odd, axes)],
                       [_slice(x, d, 2, n, 2) for x, d in zip(elems, axes)])
    else:
        even = combine(odd, [_slice(x, d, 2, n, 2) for x, d in zip(elems, axes)])
    even = [ops.Concatenate(d)(_slice(x, d, 0, 1), e) if e.shape[d] else _slice(x, d, 0, 1)
            for x, e, d in zip(elems, even, axes)]
    return [_interleave(e, o, d) for e, o, d in zip(even, odd, axes)]


def _interleave(a: Array, b: Array, d: int) -> Array:
    """``a[0], b[0], a[1], b[1], ...`` along ``d`` (``a`` as long as ``b`` or one longer)."""
    same = a.shape[d] == b.shape[d]
    zero = array(np.zeros((), a.dtype.np_dtype))
    low, high, interior = [0] * a.ndim, [0] * a.ndim, [0] * a.ndim
    interior[d] = 1
    high[d] = 1 if same else 0
    a = ops.Pad(tuple(low), tuple(high), tuple(interior))(a, zero)
    low[d], high[d] = 1, 0 if same else 1
    b = ops.Pad(tuple(low), tuple(high), tuple(interior))(b, zero)
    return (ops.Or() if issubclass(a.dtype, Bool) else ops.Add())(a, b)
