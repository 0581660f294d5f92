"""Collectives named by mesh axis, for the per-device code of ``hd.shard_map``.

Inside a ``shard_map`` body each device holds its own shard; these functions
communicate along one or more axes of the mesh (JAX's names): ``psum``,
``pmean``, ``pmax``, ``pmin`` reduce over the devices of an axis,
``all_gather`` concatenates (or stacks) their shards, ``psum_scatter`` sums
and leaves each device one block, ``ppermute`` sends each device's shard to
another along the axis, and ``axis_index`` says where along the axis this
device is. They stage XLA's collective ops (``hlodsl.ops.AllReduce`` and
friends) with the device groups the mesh axis defines.

>>> import numpy as np, hlodsl as hd
>>> mesh = hd.make_mesh((1,), ("i",))
>>> f = hd.shard_map(lambda x: psum(x, "i") * 2, mesh, hd.P("i"), hd.P("i"))
>>> f(np.float32([1, 2]))
hlodsl.Array[float32, (2,)]([2., 4.])
>>> hd.shard_map(lambda x: x + axis_index("i"), mesh, hd.P("i"), hd.P("i"))(np.int32([1, 2]))
hlodsl.Array[int32, (2,)]([1, 2])
"""

from __future__ import annotations

from math import prod

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import int32, uint32
from hlodsl.errors import staging_error
from hlodsl.arrays.sharding import Mesh, current_manual_mesh

from .creation import asarray

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
           "axis_index", "axis_size"]


def _axes(axis_name) -> tuple[str, ...]:
    return (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)


def _mesh(what: str, axis_name) -> tuple[Mesh, tuple[str, ...]]:
    mesh = current_manual_mesh()
    axes = _axes(axis_name)
    if mesh is None:
        raise staging_error(f"{what}(axis_name={axis_name!r}): collectives named by mesh axis "
                            "run inside the function given to hd.shard_map (per-device code)")
    mesh.check_axes(axes, what)
    return mesh, axes


def _groups(mesh: Mesh, axes) -> tuple:
    return tuple(tuple(g) for g in mesh.axis_groups(axes))


def _add(a, b):
    return ops.Add()(a, b)


def _max(a, b):
    return ops.Maximum()(a, b)


def _min(a, b):
    return ops.Minimum()(a, b)


def _all_reduce(what, x, axis_name, computation):
    mesh, axes = _mesh(what, axis_name)
    return ops.AllReduce(computation, _groups(mesh, axes), channel_id=1,
                         use_global_device_ids=True)(asarray(x))


def psum(x: Array, axis_name) -> Array:
    """The sum of ``x`` over the devices along ``axis_name`` (a name or a tuple)."""
    return _all_reduce("psum", x, axis_name, _add)


def pmax(x: Array, axis_name) -> Array:
    """The elementwise maximum of ``x`` over the devices along ``axis_name``."""
    return _all_reduce("pmax", x, axis_name, _max)


def pmin(x: Array, axis_name) -> Array:
    """The elementwise minimum of ``x`` over the devices along ``axis_name``."""
    return _all_reduce("pmin", x, axis_name, _min)


def pmean(x: Array, axis_name) -> Array:
    """The mean of ``x`` over the devices along ``axis_name``."""
    total = psum(x, axis_name)
    return total / asarray(axis_size(axis_name), dtype=total.dtype)


def axis_size(axis_name) -> int:
    """How many devices lie along ``axis_name`` (a Python int: it is static)."""
    mesh, axes = _mesh("axis_size", axis_name)
    return prod(mesh.shape[a] for a in axes)


def axis_index(axis_name) -> Array:
    """This device's position along ``axis_name`` (an int32 scalar; a tuple of axes
    counts major first)."""
    mesh, axes = _mesh("axis_index", axis_name)
    pid = ops.PartitionId()()
    sizes = list(mesh.shape.values())
    index = None
    for a in axes:
        d = mesh.axis_names.index(a)
        stride = prod(sizes[d + 1:])
        pos = ops.Remainder()(ops.Divide()(pid, asarray(stride, dtype=uint32)),
                              asarray(sizes[d], dtype=uint32))
        index = pos if index is None else \
            ops.Add()(ops.Multiply()(index, asarray(sizes[d], dtype=uint32)), pos)
    return ops.Convert(int32)(index)


def all_gather(x: Array, axis_name, *, axis: int = 0, tiled: bool = False) -> Array:
    """The shards of ``x`` from the devices along ``axis_name``, in axis order:
    stacked on a new dimension ``axis``, or concatenated along ``axis`` (``tiled``)."""
    mesh, axes = _mesh("all_gather", axis_name)
    x = asarray(x)
    rank = x.ndim if tiled else x.ndim + 1
    if not -rank <= axis < rank:
        raise ValueError(f"all_gather: axis {axis} is out of range for {x.type}"
                         f"{'' if tiled else ' (stacked: one more dimension)'}")
    axis %= rank
    if not tiled:
        x = ops.Reshape(x.shape[:axis] + (1,) + x.shape[axis:])(x)
    return ops.AllGather(axis, _groups(mesh, axes), channel_id=1, use_global_device_ids=True)(x)


def psum_scatter(x: Array, axis_name, *, scatter_dimension: int = 0,
                 tiled: bool = False) -> Array:
    """``psum(x)`` cut along ``scatter_dimension`` into one block per device along
    ``axis_name``, each device keeping its own; without ``tiled`` the dimension
    must equal the axis size and is removed."""
    mesh, axes = _mesh("psum_scatter", axis_name)
    x = asarray(x)
    if not 0 <= scatter_dimension < x.ndim:
        raise ValueError(f"psum_scatter: scatter_dimension {scatter_dimension} is out of "
                         f"range for {x.type}")
    n = prod(mesh.shape[a] for a in axes)
    if not tiled and x.shape[scatter_dimension] != n:
        raise ValueError(f"psum_scatter: without tiled=True, dimension {scatter_dimension} of "
                         f"{x.type} must equal the size of {axis_name!r} ({n})")
    out = ops.ReduceScatter(_add, scatter_dimension, _groups(mesh, axes), channel_id=1,
                            use_global_device_ids=True)(x)
    if not tiled:
        out = ops.Reshape(out.shape[:scatter_dimension] + out.shape[scatter_dimension + 1:])(out)
    return out


def ppermute(x: Array, axis_name, perm) -> Array:
    """``x`` sent along ``axis_name``: ``perm`` lists ``(source, target)`` positions on the
    axis; a device no pair sends to gets zeros."""
    mesh, axes = _mesh("ppermute", axis_name)
    perm = [(int(s), int(t)) for s, t in perm]
    n = prod(mesh.shape[a] for a in axes)
    if any(not (0 <= s < n and 0 <= t < n) for s, t in perm):
        raise ValueError(f"ppermute: positions in {perm} must lie in [0, {n}) along "
                         f"{axis_name!r}")
    if len({s for s, _ in perm}) != len(perm) or len({t for _, t in perm}) != len(perm):
        raise ValueError(f"ppermute: {perm} sends from or to a position twice")
    pairs = [(g[s], g[t]) for g in mesh.axis_groups(axes) for s, t in perm]
    return ops.CollectivePermute(pairs, channel_id=1)(asarray(x))
