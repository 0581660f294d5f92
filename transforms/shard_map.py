"""``shard_map``: per-device code over a mesh, with collectives named by mesh axis.

``shard_map(f, mesh, in_specs, out_specs)`` is a function of global arrays.
Each device runs ``f`` on its own shards (cut as ``in_specs`` say), ``f`` may
communicate with ``hlodsl.stdlib.parallel`` (``psum``, ``all_gather``, ...),
and the shards ``f`` returns make up global results laid out as
``out_specs`` say. In the module this is Shardy's manual computation: a
``GlobalToLocal`` view, the body as a ``call`` XLA keeps out of line until it
has partitioned the program, and a ``LocalToGlobal`` view.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib.parallel import psum
>>> mesh = hd.make_mesh((1,), ("i",))
>>> total = hd.shard_map(lambda x: psum(x.sum(keepdims=True), "i"), mesh, hd.P("i"), hd.P())
>>> total(np.float32([1, 2, 3]))
hlodsl.Array[float32, (1,)]([6.])
"""

from __future__ import annotations

from hlodsl.context import STATE
from hlodsl.ir.graph import current_builder
from hlodsl.arrays.sharding import Mesh, NamedSharding, PartitionSpec, manual_mesh
from hlodsl.arrays.tree import flatten, unflatten

__all__ = ["shard_map", "ShardMap"]


def _leaf_specs(spec, x, what: str) -> list:
    """A PartitionSpec (or None: replicated) per array leaf of ``x``; ``spec`` is one
    for all or a structure like ``x``."""
    n = len(flatten(x)[0])
    if spec is None or isinstance(spec, PartitionSpec):
        return [spec or PartitionSpec()] * n
    if isinstance(spec, (tuple, list)) and isinstance(x, (tuple, list)) and len(spec) == len(x):
        return [s for sp, v in zip(spec, x) for s in _leaf_specs(sp, v, what)]
    if isinstance(spec, dict) and isinstance(x, dict) and set(spec) == set(x):
        return [s for k in x for s in _leaf_specs(spec[k], x[k], what)]
    raise TypeError(f"shard_map: {what} {spec!r} does not match the structure of "
                    f"{type(x).__name__} values it describes: give a hd.P(...), None, or a "
                    "tuple/list/dict of them shaped like the values")


class ShardMap:
    """``f`` mapped over the devices of ``mesh``; see :func:`shard_map`."""

    def __init__(self, f, mesh: Mesh, in_specs, out_specs):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"shard_map: expected a hd.Mesh, got {mesh!r}")
        from .flow import convert

        # Python control flow on arrays in the body, converted as hd.compile does.
        self.f = convert(f)
        self.mesh, self.in_specs, self.out_specs = mesh, in_specs, out_specs
        self.__name__ = getattr(f, "__name__", "shard_map")
        self._compiled = None

    def __call__(self, *args):
        if STATE.traces:  # under grad/vjp: its reverse is another shard_map
            return self._differentiable(*args)
        if current_builder() is None:
            return self._eager(*args)
        return self._stage(args)

    def _run(self, args):
        return self._eager(*args) if current_builder() is None else self._stage(args)

    def _differentiable(self, *args):
        from .custom import custom_vjp

        fn = custom_vjp(lambda *a: self._run(a))
        fn.__name__ = self.__name__
        fn.defvjp(lambda *a: (self._run(a), a),
                  lambda res, ct: self._transposed(len(res))(*res, ct))
        return fn(*args)

    def _transposed(self, n: int) -> ShardMap:
        """The reverse of this map: every device pulls its cotangent shards back
        through ``f``. An output replicated over a mesh axis reaches each of its
        devices whole, so its cotangent is shared out (divided by the axis size);
        an input replicated over an axis was read by each of its devices, so its
        cotangent sums theirs (``psum``)."""
        from .autodiff import vjp

        specs = self._arg_specs(n)
        arg_specs = specs if specs is not None else (self.in_specs,) * n
        mesh, f = self.mesh, self.f

        def backward(*args_and_ct):
            args, ct = args_and_ct[:n], args_and_ct[n]
            out, pullback = vjp(f, *args)
            ct_leaves, ct_tree = flatten(ct)
            out_specs = _leaf_specs(self.out_specs, out, "out_specs")
            ct_leaves = [c / _replicas(mesh, s) if _replicas(mesh, s) > 1 else c
                         for c, s in zip(ct_leaves, out_specs)]
            cts = pullback(unflatten(ct_tree, ct_leaves))
            summed = []
            for a, c, spec in zip(args, cts, arg_specs):
                leaves, tree = flatten(c)
                specs_a = _leaf_specs(spec, a, "in_specs")
                leaves = [_psum(mesh, x, axes) if (axes := _replicated_axes(mesh, sp)) else x
                          for x, sp in zip(leaves, specs_a)]
                summed.append(unflatten(tree, leaves))
            return tuple(summed)

        backward.__name__ = f"{self.__name__}_transpose"
        return ShardMap(backward, mesh, (*arg_specs, self.out_specs), tuple(arg_specs))

    def _eager(self, *args):
        """Called on concrete arrays: compiled once per signature, arguments laid out
        as ``in_specs`` say (no gather-then-slice)."""
        from hlodsl.compilation.compiler import compile

        if self._compiled is None:
            specs = self._arg_specs(len(args))
            shardings = _to_shardings(self.mesh, specs if specs is not None else
                                      self.in_specs)
            self._compiled = compile(lambda *a: self._stage(a), name=self.__name__,
                                     convert=False, in_shardings=shardings)
        return self._compiled(*args)

    def _arg_specs(self, n: int):
        """``in_specs`` per positional argument (None when one spec covers them all)."""
        specs = self.in_specs
        if specs is None or isinstance(specs, PartitionSpec):
            return None
        if isinstance(specs, (tuple, list)) and len(specs) == n:
            return tuple(specs)
        raise TypeError(f"shard_map: in_specs must be one hd.P(...) for all arguments or one "
                        f"entry per positional argument ({n}), got {specs!r}")

    def _stage(self, args):
        from hlodsl.ops import GlobalToLocal, LocalToGlobal, ManualComputation

        mesh, axes = self.mesh, self.mesh.axis_names
        specs = self._arg_specs(len(args))
        leaf_specs = _leaf_specs(self.in_specs if specs is None else specs, tuple(args),
                                 "in_specs")
        leaves, treedef = flatten((tuple(args), {}))
        if not leaves:
            raise TypeError("shard_map: the function's arguments hold no arrays")
        ins = [NamedSharding(mesh, s) for s in leaf_specs]
        shards = GlobalToLocal(ins, axes)(*leaves)
        shards = list(shards) if isinstance(shards, tuple) else [shards]
        box: list = []
        f = self.f

        def body(*local):
            with manual_mesh(mesh):
                a, k = unflatten(treedef, local)
                out = f(*a, **k)
            out_leaves, out_tree = flatten(out)
            if not out_leaves:
                raise TypeError(f"shard_map: {self.__name__} returned no arrays")
            box[:] = [out_tree]
            return tuple(out_leaves) if len(out_leaves) != 1 else out_leaves[0]

        body.__name__ = f"shard_map_{self.__name__}"
        res = ManualComputation(body, mesh)(*shards)
        (out_tree,) = box
        res = list(res) if isinstance(res, tuple) else [res]
        structure = unflatten(out_tree, res)
        out_specs = _leaf_specs(self.out_specs, structure, "out_specs")
        outs = LocalToGlobal([NamedSharding(mesh, s) for s in out_specs], axes)(*res)
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        return unflatten(out_tree, outs)


def _add(a, b):
    from hlodsl.ops import Add

    return Add()(a, b)


def _psum(mesh: Mesh, x, axes):
    """The sum of ``x`` over the devices along ``axes`` (inside the manual region;
    the op itself, since the stdlib's psum lives a layer above)."""
    from hlodsl.ops import AllReduce

    groups = tuple(tuple(g) for g in mesh.axis_groups(axes))
    return AllReduce(_add, groups, channel_id=1, use_global_device_ids=True)(x)


def _replicated_axes(mesh: Mesh, spec: PartitionSpec) -> tuple[str, ...]:
    used = {a for d in range(len(spec)) for a in spec.axes(d)}
    return tuple(a for a in mesh.axis_names if a not in used)


def _replicas(mesh: Mesh, spec: PartitionSpec) -> int:
    n = 1
    for a in _replicated_axes(mesh, spec):
        n *= mesh.shape[a]
    return n


def _to_shardings(mesh: Mesh, specs):
    if specs is None or isinstance(specs, PartitionSpec):
        return NamedSharding(mesh, specs or PartitionSpec())
    if isinstance(specs, (tuple, list)):
        return type(specs)(_to_shardings(mesh, s) for s in specs)
    if isinstance(specs, dict):
        return {k: _to_shardings(mesh, s) for k, s in specs.items()}
    raise TypeError(f"shard_map: in_specs entries are hd.P(...) or None, got {specs!r}")


def shard_map(f, mesh: Mesh, in_specs, out_specs) -> ShardMap:
    """``f`` run by every device of ``mesh`` on its own shards.

    ``in_specs`` gives a ``hd.P`` per positional argument (or one for all; None
    is replicated): each device's ``f`` sees the block of each argument that
    spec assigns it. ``out_specs`` says how the blocks ``f`` returns make up the
    global results (a dimension split over an axis concatenates the devices'
    blocks along it; an axis a spec does not name must hold equal values on
    those devices, as after a ``psum``). Inside ``f``, the collectives of
    ``hlodsl.stdlib.parallel`` communicate along mesh axes by name.
    """
    return ShardMap(f, mesh, in_specs, out_specs)
