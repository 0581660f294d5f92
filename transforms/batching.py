"""``vmap``: a function of one example, run on a batch of them, as one program.

``vmap(f, in_axes, out_axes)`` stages ``f`` once on one example's arrays (the
batch dimension removed), into a computation whose captured outside arrays
become extra unbatched inputs (``transforms/body.py``). It then runs that
computation on the batched arrays node by node: a node none of whose operands
is batched is applied as it is; any other node's op is asked for its
``batch_rule`` (declared in ``hlodsl.rules``, written in the op's own module),
which gives the op on operands carrying a batch dimension and says where the
result's batch dimension is. The batched ops land wherever the call happens:
in a program being staged (``hd.compile``), under ``grad``/``jvp`` (which then
differentiate the batched ops), or, called eagerly, in one small module
compiled once per signature.

The semantics of ``in_axes``, ``out_axes`` and ``axis_size`` are ``jax.vmap``'s.

>>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
>>> W = hd.array(np.float32([[1, 2], [3, 4]]))
>>> xs = hd.array(np.float32([[1, 0], [0, 1], [1, 1]]))
>>> hd.vmap(lambda W, x: W @ x, in_axes=(None, 0))(W, xs)      # three mat-vecs
hlodsl.Array[float32, (3, 2)](
  [[1., 3.],
   [2., 4.],
   [3., 7.]])
>>> per_example = hd.vmap(hd.grad(lambda w, x: xp.sum(w * x) ** 2), in_axes=(None, 0))
>>> per_example(hd.array(np.float32([1, 1])), xs)
hlodsl.Array[float32, (3, 2)](
  [[2., 0.],
   [0., 2.],
   [4., 4.]])
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import attrs

from hlodsl.arrays.array import Array
from hlodsl.ir.graph import Computation, current_builder
from hlodsl.ir.interpret import evaluate
from hlodsl.ops import Broadcast, Transpose
from hlodsl.ir.rules import batch_rule, transformations
from hlodsl.ir.structural import GetTupleElement, Tuple
from hlodsl.arrays.pytrees import node_of
from hlodsl.arrays.tree import LEAF, PYTREE, _Static, children_of, flatten, unflatten
from hlodsl.arrays.types import ArrayType

from .body import Body, ordered_token
from .eager import eager, run_eagerly
from .flow import convert
from .structures import error, flatten_lifting, leaf_paths, name_of, show

__all__ = ["vmap", "batch_computation"]


def vmap(f: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None):
    """``f`` mapped over an axis of its arguments: one program, not a Python loop.

    Args:
        f: a function of arrays (and structures of them) for one example.
        in_axes: where each positional argument's batch axis is: an int (the
            same for every argument), ``None`` (not batched), or a tuple with
            one entry per positional argument, each an int, None, or a
            structure of those matching that argument (a prefix of it).
            Keyword arguments are batched along axis 0.
        out_axes: where the batch axis goes in the results: an int, or a
            structure matching (a prefix of) the result; ``None`` for a result
            that does not depend on the batch.
        axis_size: the batch size, needed only when no argument is batched.

    Returns:
        A function of the batched arguments that returns ``f``'s results
        stacked along ``out_axes``.

    >>> import numpy as np, hlodsl as hd
    >>> hd.vmap(lambda a, b: a * b, in_axes=(0, None))(hd.array(np.float32([1, 2])),
    ...                                                 hd.array(np.float32(10)))
    hlodsl.Array[float32, (2,)]([10., 20.])
    """
    if not callable(f):
        raise TypeError(f"vmap: f must be a function, got {type(f).__name__}")
    _check_axes_spec("in_axes", in_axes)
    _check_axes_spec("out_axes", out_axes)
    if axis_size is not None and (not isinstance(axis_size, int) or isinstance(axis_size, bool)
                                  or axis_size < 0):
        raise TypeError(f"vmap: axis_size must be a non-negative int, got {axis_size!r}")

    @functools.wraps(f)
    def vmapped(*args, **kwargs):
        if eager():  # outside staging and derivatives: the batched program as one module
            # f itself goes to run_eagerly, which keys its staged program by f's
            # fingerprint: a warm call with unchanged f skips staging.
            return run_eagerly(_vmap_eager, "vmap", f, _Spec(in_axes), _Spec(out_axes),
                               axis_size, args, kwargs)
        return _vmap_call(_Fn(f), _Spec(in_axes), _Spec(out_axes), axis_size, args, kwargs)

    vmapped.__wrapped__ = f
    return vmapped


def _vmap_eager(f, in_axes, out_axes, axis_size, args, kwargs):
    return _vmap_call(_Fn(f), in_axes, out_axes, axis_size, args, kwargs)


@attrs.frozen
class _Fn:
    """A function, as a static (hashable by identity) argument of an eager module."""

    fn: Callable = attrs.field(eq=False)

    def __eq__(self, other):
        return isinstance(other, _Fn) and other.fn is self.fn

    def __hash__(self):
        return id(self.fn)


@attrs.frozen
class _Spec:
    """An axes specification (ints, None, nested tuples/lists/dicts), hashable."""

    value: Any = attrs.field(eq=False)

    def __eq__(self, other):
        return isinstance(other, _Spec) and _freeze(other.value) == _freeze(self.value)

    def __hash__(self):
        return hash(_freeze(self.value))


def _freeze(spec):
    node = node_of(type(spec))
    if node is not None:  # a registered class holding axes: its children and aux data
        children, aux = node.flatten(spec)
        return ("node", type(spec), aux, tuple(_freeze(v) for v in children))
    if isinstance(spec, dict):
        return ("dict", tuple((k, _freeze(v)) for k, v in spec.items()))
    if isinstance(spec, (tuple, list)):
        return (type(spec).__name__, tuple(_freeze(v) for v in spec))
    return spec


def _check_axes_spec(what: str, spec) -> None:
    if spec is None or (isinstance(spec, int) and not isinstance(spec, bool)):
        return
    node = node_of(type(spec))
    if node is not None:
        for v in node.flatten(spec)[0]:
            _check_axes_spec(what, v)
        return
    if isinstance(spec, dict):
        for v in spec.values():
            _check_axes_spec(what, v)
        return
    if isinstance(spec, (tuple, list)):
        for v in spec:
            _check_axes_spec(what, v)
        return
    raise TypeError(f"vmap: {what} must be an int, None, or a tuple/list/dict (or registered "
                    f"class) of those, got {spec!r} ({type(spec).__name__})")


# -- the call -----------------------------------------------------------------------------

def _vmap_call(fn: _Fn, in_spec: _Spec, out_spec: _Spec, axis_size, args, kwargs):
    # f is staged on symbolic examples: its Python control flow on them is converted,
    # as hd.compile converts the functions it stages.
    f, name = convert(fn.fn), name_of(fn.fn)
    leaves, treedef = flatten((args, kwargs))
    axes = _leaf_axes(in_spec.value, args, kwargs, name)
    paths = _arg_paths(f, treedef)
    size = _batch_size(leaves, axes, paths, axis_size, name)
    moved, example_types = [], []
    for x, ax, path in zip(leaves, axes, paths):
        if not isinstance(x, Array):
            raise error(TypeError, f"vmap of {name}: {path} is a {type(x).__name__}; vmap maps "
                                   "arrays only")
        if ax is None:
            moved.append(x)
            example_types.append(x.type)
        else:
            ax %= x.ndim  # validated by _batch_size: -ndim <= ax < ndim
            moved.append(_to_front(x, ax))
            example_types.append(ArrayType(x.dtype, x.shape[:ax] + x.shape[ax + 1:]))
    # Stage f once, on one example; arrays it captures are unbatched extra inputs.
    body = Body(name, tuple(example_types), tupled=False)
    body.builder.keeps_composites = True  # composites with a batch rule of their own

    def one_example(*example):
        s_args, s_kwargs = unflatten(treedef, example)
        return flatten_lifting(f(*s_args, **s_kwargs))

    out_leaves, out_tree = body.run(one_example)
    for x in out_leaves:
        if not isinstance(x, Array):
            raise error(TypeError, f"vmap of {name}: the function returned a "
                                   f"{type(x).__name__}; it must return arrays")
    # An ordered effect in f: the batched ops take the program's token, and the
    # program's next ordered effect comes after the last one they return.
    token = ordered_token(current_builder()) if body.threads_token else None
    comp = body.finish(out_leaves if token is None else [*out_leaves, body.last_token(token)],
                       force_tuple=True)
    dims = [None if ax is None else 0 for ax in axes] + [None] * len(body.captured)
    outs, out_dims = batch_computation(comp, [*moved, *body.captured], dims)
    if token is not None:
        current_builder().token = outs[-1]._node
        outs, out_dims = outs[:-1], out_dims[:-1]
    out_axes = _out_axes(out_spec.value, out_tree, len(out_leaves), name)
    results = []
    for path, x, d, ax in zip(leaf_paths(out_tree, "result"), outs, out_dims, out_axes):
        if ax is None:
            if d is not None:
                raise error(ValueError, f"vmap of {name}: out_axes is None for {path}, but it "
                                        "depends on the batch (give it an axis)")
            results.append(x)
            continue
        x = _to_front(x, d) if d is not None else Broadcast(
            (size, *x.shape), tuple(range(1, x.ndim + 1)))(x)
        ax = ax + x.ndim if ax < 0 else ax
        if not 0 <= ax < x.ndim:
            raise error(ValueError, f"vmap of {name}: out_axes {ax} is out of range for "
                                    f"{path} of {x.ndim - 1} dimensions per example")
        results.append(_from_front(x, ax))
    return unflatten(out_tree, results)


def _to_front(x: Array, d: int) -> Array:
    if d == 0:
        return x
    return Transpose((d, *(i for i in range(x.ndim) if i != d)))(x)


def _from_front(x: Array, d: int) -> Array:
    if d == 0:
        return x
    perm = list(range(1, x.ndim))
    perm.insert(d, 0)
    return Transpose(tuple(perm))(x)


def _arg_paths(f, treedef) -> list[str]:
    (_, (args_td, kwargs_td)) = treedef
    try:
        import inspect

        names = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        names = []
    out = []
    for i, td in enumerate(args_td[1]):
        out += leaf_paths(td, names[i] if i < len(names) else f"args[{i}]")
    for k, td in zip(kwargs_td[1], kwargs_td[2]):
        out += leaf_paths(td, str(k))
    return out


def _leaf_axes(spec, args, kwargs, name) -> list:
    """The batch axis of every leaf of ``(args, kwargs)``, in ``flatten``'s order."""
    if isinstance(spec, (tuple, list)) and not isinstance(spec, _Static):
        if len(spec) != len(args):
            raise error(ValueError, f"vmap of {name}: in_axes has {len(spec)} entries but "
                                    f"the function was called with {len(args)} positional "
                                    "argument(s); give one entry per positional argument")
        per_arg = list(spec)
    elif isinstance(spec, dict):
        raise error(TypeError, f"vmap of {name}: in_axes must be an int, None or a tuple with "
                               "one entry per positional argument, not a dict")
    else:
        per_arg = [spec] * len(args)
    out = []
    for i, (a, s) in enumerate(zip(args, per_arg)):
        out += _broadcast(s, a, f"in_axes[{i}]", name)
    for k, v in kwargs.items():
        out += _broadcast(0, v, f"keyword argument {k!r}", name)
    return out


def _broadcast(spec, value, where: str, name: str) -> list:
    """``spec`` (a prefix of ``value``'s structure) as one axis per array leaf of ``value``."""
    leaves, tree = flatten(value)
    if spec is None or isinstance(spec, int):
        return [spec] * len(leaves)
    out = []

    def walk(s, td, path):
        if s is None or isinstance(s, int):
            out.extend([s] * _count(td))
            return
        if td is LEAF or isinstance(td, _Static):
            raise error(ValueError, f"vmap of {name}: {where}{path} is a structure "
                                    f"{s!r} but the argument there is not")
        kind = td[0]
        if kind is dict:
            if not isinstance(s, dict) or set(s) != set(td[1]):
                raise error(ValueError, f"vmap of {name}: {where}{path} {s!r} does not match "
                                        f"the argument's dict keys {list(td[1])}")
            for k, c in zip(td[1], td[2]):
                walk(s[k], c, f"{path}[{k!r}]")
        elif kind is attrs:
            raise error(ValueError, f"vmap of {name}: {where}{path}: give one axis (or None) "
                                    "for an attrs instance, not a structure")
        elif kind is PYTREE:
            for k, (ss, c) in enumerate(_node_pairs(s, td, f"{where}{path}", name)):
                walk(ss, c, td[1].child_path(path, k))
        else:
            children = td[1]
            if not isinstance(s, (tuple, list)) or len(s) != len(children):
                raise error(ValueError, f"vmap of {name}: {where}{path} {s!r} does not match "
                                        f"the argument's structure of {len(children)} items")
            for k, (ss, c) in enumerate(zip(s, children)):
                walk(ss, c, f"{path}[{k}]")

    walk(spec, tree, "")
    return out


def _node_pairs(spec, td, where: str, name: str) -> list:
    """``(spec child, treedef child)`` pairs of a registered node: ``spec`` must be an
    instance of its class with the same aux data (as jax's prefix trees)."""
    node, aux = td[1], td[2].value
    if type(spec) is not node.cls:
        raise error(ValueError, f"vmap of {name}: {where} {spec!r} does not match the "
                                f"argument there, a {node.cls.__qualname__}: give one axis "
                                f"(or None), or a {node.cls.__qualname__} of axes")
    children, spec_aux = node.flatten(spec)
    children = tuple(children)
    if spec_aux != aux or len(children) != len(td[3]):
        raise error(ValueError, f"vmap of {name}: {where} is a {node.cls.__qualname__} with "
                                f"aux data {spec_aux!r} and {len(children)} children; the "
                                f"argument's has {aux!r} and {len(td[3])}")
    return list(zip(children, td[3]))


def _count(td) -> int:
    if td is LEAF:
        return 1
    if isinstance(td, _Static):
        return 0
    return sum(_count(c) for c in children_of(td))


def _batch_size(leaves, axes, paths, axis_size, name) -> int:
    sizes = {}
    for x, ax, path in zip(leaves, axes, paths):
        if ax is None:
            continue
        if not isinstance(x, Array):
            continue
        rank = x.ndim
        if not -rank <= ax < rank or rank == 0:
            raise error(ValueError, f"vmap of {name}: in_axes {ax} for {path} of type {x.type}: "
                                    f"the axis must be in [-{rank}, {rank})" if rank else
                        f"vmap of {name}: in_axes {ax} for {path}, a scalar {x.type}: a "
                        "scalar has no axis to map over (give None for it)")
        sizes.setdefault(x.shape[ax % rank], []).append(path)
    if len(sizes) > 1:
        shown = "; ".join(f"size {s}: {', '.join(p)}" for s, p in sizes.items())
        raise error(ValueError, f"vmap of {name}: the mapped axes have different sizes ({shown})")
    if not sizes:
        if axis_size is None:
            raise error(ValueError, f"vmap of {name}: no argument is mapped (every in_axes is "
                                    "None): give axis_size")
        return axis_size
    (size,) = sizes
    if axis_size is not None and axis_size != size:
        raise error(ValueError, f"vmap of {name}: axis_size={axis_size} but the mapped axes "
                                f"have size {size}")
    return size


def _out_axes(spec, tree, n: int, name: str) -> list:
    if spec is None or isinstance(spec, int):
        return [spec] * n
    try:
        return _broadcast_types(spec, tree, name)
    except TypeError:
        raise error(ValueError, f"vmap of {name}: out_axes {spec!r} does not match the "
                                f"function's result {show(tree, [None] * n)}") from None


def _broadcast_types(spec, tree, name) -> list:
    out = []

    def walk(s, td):
        if s is None or isinstance(s, int):
            out.extend([s] * _count(td))
            return
        if td is LEAF or isinstance(td, _Static):
            raise TypeError
        kind = td[0]
        if kind is dict:
            if not isinstance(s, dict) or set(s) != set(td[1]):
                raise TypeError
            for k, c in zip(td[1], td[2]):
                walk(s[k], c)
        elif kind is attrs:
            raise TypeError
        elif kind is PYTREE:
            try:
                pairs = _node_pairs(s, td, "", name)
            except ValueError:
                raise TypeError from None
            for ss, c in pairs:
                walk(ss, c)
        else:
            if not isinstance(s, (tuple, list)) or len(s) != len(td[1]):
                raise TypeError
            for ss, c in zip(s, td[1]):
                walk(ss, c)

    walk(spec, tree)
    return out


# -- the interpreter --------------------------------------------------------------------------

def batch_computation(comp: Computation, args: list, dims: list):
    """``comp`` run on ``args`` whose batch dimensions are ``dims`` (an int, or None).

    Returns ``(result, result dims)``, each shaped as the computation's root (a
    tuple root gives tuples). Every op of ``comp`` lands in the current staging
    context (observed by active transformations), batched by its ``batch_rule``
    where an operand is batched and applied as it is where none is.
    """
    return evaluate(comp, list(zip(args, dims)), lambda node, values: _apply(node.op, values))


def _apply(op, values: list) -> tuple:
    if type(op) is Tuple:
        return tuple(v for v, _ in values), tuple(d for _, d in values)
    if type(op) is GetTupleElement:
        v, d = values[0]
        return v[op.index], d[op.index]
    if all(_unbatched(d) for _, d in values):
        out = op(*(v for v, _ in values))
        return out, _none_like(out)
    args = tuple(_front(v, d) for v, d in values)
    dims = tuple(_front_dims(d) for _, d in values)
    out, out_dims = batch_rule(op, args, dims)
    return out, out_dims


def _unbatched(d) -> bool:
    if isinstance(d, tuple):
        return all(_unbatched(x) for x in d)
    return d is None


def _none_like(out):
    return tuple(_none_like(x) for x in out) if isinstance(out, tuple) else None


def _front(v, d):
    if isinstance(v, tuple):
        return tuple(_front(x, e) for x, e in zip(v, d))
    return v if d is None else _to_front(v, d)


def _front_dims(d):
    if isinstance(d, tuple):
        return tuple(_front_dims(x) for x in d)
    return None if d is None else 0


# Rules of ops that hold computations (While, Conditional, Call) batch those.
transformations.batch = batch_computation
