"""Jacobians: ``jacfwd`` (forward mode, one jvp per input element) and ``jacrev``
(reverse mode, one vjp per output element), each a ``vmap`` over a basis.

Both return what ``jax.jacfwd`` / ``jax.jacrev`` return: for every output leaf,
the structure of the differentiated arguments (one argument's own structure
for an int ``argnums``, a tuple of them for a tuple), each leaf of shape
``output_leaf.shape + input_leaf.shape``. ``jacfwd`` is the cheaper one for
few inputs and many outputs; ``jacrev`` for many inputs and few outputs.

Called on concrete arrays, the whole Jacobian is staged as one module
(cached by the function, as ``vmap`` and the control-flow combinators are);
inside ``hd.compile`` or another transformation it stages where it is called.

>>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
>>> f = lambda x: xp.sin(x) * x[0]
>>> x = hd.array(np.float32([0.0, 1.0]))
>>> hd.jacfwd(f)(x)                  # row i: d f_i / d x
hlodsl.Array[float32, (2, 2)](
  [[0.        , 0.        ],
   [0.84147096, 0.        ]])
>>> hd.jacrev(f)(x)
hlodsl.Array[float32, (2, 2)](
  [[0.        , 0.        ],
   [0.84147096, 0.        ]])
"""

from __future__ import annotations

import functools
from typing import Callable

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import Floating
from hlodsl.arrays.tree import flatten, unflatten

from .autodiff import _argnums, _argnums_call, _check_callable, _jvp, _pair, _vjp
from .batching import vmap
from .eager import eager, run_eagerly
from .flow import convert
from .structures import error, leaf_paths, name_of

__all__ = ["jacfwd", "jacrev"]


def jacfwd(fun: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False,
           holomorphic: bool = False):
    """The Jacobian of ``fun`` by forward mode: ``vmap`` of ``jvp`` over the input basis.

    Args:
        fun: a function of arrays (and structures of them) returning arrays
            (or structures of them) of a real floating-point type.
        argnums: the positional argument (int) or arguments (tuple) to
            differentiate with respect to.
        has_aux: ``fun`` returns ``(output, aux)``; the Jacobian function then
            returns ``(jacobian, aux)``.
        holomorphic: not supported (real inputs and outputs only).

    Returns:
        A function of ``fun``'s arguments giving, for each output leaf, the
        differentiated arguments' structure of arrays of shape
        ``out.shape + in.shape``.

    >>> import numpy as np, hlodsl as hd
    >>> f = lambda a, b: {"y": a * b}
    >>> jac = hd.jacfwd(f, argnums=(0, 1))(hd.array(np.float32([1, 2])), hd.array(np.float32(3)))
    >>> jac["y"][0].shape, jac["y"][1].shape
    ((2, 2), (2,))
    """
    return _jacobian(fun, argnums, has_aux, holomorphic, "jacfwd", _jacfwd)


def jacrev(fun: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False,
           holomorphic: bool = False):
    """The Jacobian of ``fun`` by reverse mode: ``vmap`` of ``vjp``'s pullback over the
    output basis. Arguments and results are as ``jacfwd``'s.

    >>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
    >>> hd.jacrev(lambda x: xp.sum(x * x))(hd.array(np.float32([1, 2])))
    hlodsl.Array[float32, (2,)]([2., 4.])
    """
    return _jacobian(fun, argnums, has_aux, holomorphic, "jacrev", _jacrev)


def _jacobian(fun, argnums, has_aux, holomorphic, what, impl):
    _check_callable(what, fun)
    _argnums(argnums, what)
    if holomorphic:
        raise error(NotImplementedError, f"{what}: holomorphic=True is not supported; hlodsl "
                                         "takes Jacobians of real functions only")

    @functools.wraps(fun)
    def jacobian(*args, **kwargs):
        if eager():  # one module for the whole Jacobian, cached by fun's fingerprint
            return run_eagerly(impl, what, fun, argnums, has_aux, args, kwargs)
        return impl(fun, argnums, has_aux, args, kwargs)

    return jacobian


def _jacfwd(fun, argnums, has_aux, args, kwargs):
    label = f"jacfwd of {name_of(fun)!r}"
    g, diff = _argnums_call(convert(fun), args, kwargs, argnums, label)
    in_leaves, in_tree = flatten(diff)
    _check_real(in_leaves, in_tree, "argument", label)

    def pushforward(*tangent_leaves):
        return _jvp(g, diff, unflatten(in_tree, list(tangent_leaves)), has_aux, label)

    out_axes = (None, 0, None) if has_aux else (None, 0)
    res = vmap(pushforward, out_axes=out_axes)(*_basis(in_leaves))
    out_leaves, out_tree = flatten(res[1])
    y_leaves = flatten(res[0])[0]
    _check_real(y_leaves, out_tree, "result", label)
    sizes = [x.size for x in in_leaves]
    jac = []
    for y, t in zip(y_leaves, out_leaves):
        per_input = []
        for x, start in zip(in_leaves, _offsets(sizes)):
            # t is (n_in, *y.shape): this input's rows, moved behind y's dimensions.
            rows = ops.Slice((start,) + (0,) * y.ndim, (start + x.size, *y.shape))(t)
            rows = ops.Transpose((*range(1, y.ndim + 1), 0))(rows)
            per_input.append(ops.Reshape(y.shape + x.shape)(rows))
        jac.append(_structure(per_input, in_tree, argnums))
    out = unflatten(out_tree, jac)
    return (out, res[2]) if has_aux else out


def _jacrev(fun, argnums, has_aux, args, kwargs):
    label = f"jacrev of {name_of(fun)!r}"
    g, diff = _argnums_call(convert(fun), args, kwargs, argnums, label)
    in_leaves, in_tree = flatten(diff)
    _check_real(in_leaves, in_tree, "argument", label)
    res = _vjp(g, diff, has_aux, label)
    y_leaves, out_tree = flatten(res[0])
    _check_real(y_leaves, out_tree, "result", label)
    pullback = res[1]

    def pull(*ct_leaves):
        return pullback(unflatten(out_tree, list(ct_leaves)))

    cts = flatten(vmap(pull)(*_basis(y_leaves)))[0]  # each (n_out, *x.shape)
    jac = []
    for y, start in zip(y_leaves, _offsets([y.size for y in y_leaves])):
        per_input = []
        for x, ct in zip(in_leaves, cts):
            rows = ops.Slice((start,) + (0,) * x.ndim, (start + y.size, *x.shape))(ct)
            per_input.append(ops.Reshape(y.shape + x.shape)(rows))
        jac.append(_structure(per_input, in_tree, argnums))
    out = unflatten(out_tree, jac)
    return (out, res[2]) if has_aux else out


def _structure(per_input: list, in_tree, argnums):
    """One output leaf's Jacobians in the arguments' structure (one argument's for an int)."""
    tree = unflatten(in_tree, per_input)
    return tree[0] if isinstance(argnums, int) else tree


def _offsets(sizes: list[int]) -> list[int]:
    out, at = [], 0
    for n in sizes:
        out.append(at)
        at += n
    return out


def _basis(leaves: list[Array]) -> list[Array]:
    """The standard basis of all leaves together, split by leaf: ``(n, *leaf.shape)`` each,
    with ``n`` the leaves' total size (built from iotas, so no n-by-n constant is emitted)."""
    from hlodsl.arrays.dtypes import int32

    n = sum(x.size for x in leaves)
    out = []
    for x, start in zip(leaves, _offsets([x.size for x in leaves])):
        rows = ops.Iota(int32, (n, x.size), 0)()
        cols = ops.Iota(int32, (n, x.size), 1)()
        shifted = ops.Add()(cols, ops.Broadcast((n, x.size))(_int(start)))
        eye = ops.Convert(x.dtype)(ops.Compare("EQ")(rows, shifted))
        out.append(ops.Reshape((n, *x.shape))(eye))
    return out


def _int(v: int) -> Array:
    import numpy as np

    from hlodsl.arrays.array import array

    return array(np.int32(v))


def _check_real(leaves: list, tree, role: str, label: str) -> None:
    root = "f(...)" if role == "result" else "args"
    for path, x in zip(leaf_paths(tree, root), leaves):
        if not isinstance(x, Array) or not issubclass(x.dtype, Floating):
            got = x.type if isinstance(x, Array) else type(x).__name__
            raise error(TypeError, f"{label}: {role} {path} has type {got}; Jacobians are "
                                   "taken of real floating-point functions of real "
                                   "floating-point arrays (pass integers as non-differentiated "
                                   "arguments, argnums)")
