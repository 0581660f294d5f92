"""Programs over a mesh of devices, partitioned by XLA (Shardy).

Three ways in, one mechanism:

- ``hd.compile(f, in_shardings=..., out_shardings=...)``: the staged program's
  parameters and results carry the layouts given (arguments without one keep
  their own layout, or are replicated); XLA's SPMD partitioner splits every
  op and inserts the collectives.
- calling any compiled function, or any op eagerly, on sharded arrays
  (``hd.device_put(x, sharding)``): the layouts are read off the arguments.
- ``hd.with_sharding_constraint`` and ``hd.shard_map`` inside a program: a
  program holding sharding annotations compiles over their mesh.

The partitioned program is compiled for the mesh's devices in mesh order
(partition i runs on the i-th device of the mesh), and results come back as
sharded arrays laid out as XLA chose (or as ``out_shardings`` says).

>>> import numpy as np, hlodsl as hd
>>> mesh = hd.make_mesh((1,), ("x",))
>>> f = hd.compile(lambda a: a * 2, in_shardings=hd.NamedSharding(mesh, hd.P("x")))
>>> f(hd.array(np.float32([1, 2])))
hlodsl.Array[float32, (2,)]([2., 4.])
"""

from __future__ import annotations

import threading

from hlodsl.compilation import compiler as _compiler
from hlodsl import runtime
from hlodsl.arrays.array import Array, array_class, sharded_class
from hlodsl.compilation.compiler import Entry
from hlodsl.ir.graph import Builder
from hlodsl.ir.interpret import replay
from hlodsl.ir.printer import PrintContext
from hlodsl.arrays.sharding import Mesh, NamedSharding, PartitionSpec, match_blocks, sharding_of
from hlodsl.ir.staging import Staged
from hlodsl.arrays.types import TupleType

from .passes.rewrite import parameters_like, root_of

__all__ = ["PartitionedEntry", "build", "run", "device_put", "with_sharding_constraint"]


class PartitionedEntry(Entry):
    """A signature compiled for a mesh: the executable and every value's layout."""

    __slots__ = ("mesh", "in_shardings", "out_shardings", "_run", "_ins", "text", "given")

    def run(self, leaves) -> object:
        bufs = []
        for a, s, js, given in zip(leaves, self.in_shardings, self._ins, self.given):
            buf = a._buf
            if buf is None:
                raise TypeError("a symbolic array was passed outside staging")
            if buf.sharding != js:
                if not given and a._sharded:
                    # A sharded argument laid out otherwise than when this entry
                    # compiled: the program for its layout (compiled once).
                    return run(self, leaves)
                buf = runtime.replicate_on(buf, s)  # laid out as the program expects
            bufs.append(buf)
        outs = self._run(bufs)
        wrapped = [_wrap(c, b) for c, b in zip(self.out_classes, outs)]  # noqa
        if self.single:
            return wrapped[0]
        from hlodsl.arrays.tree import unflatten

        return unflatten(self.out_tree, wrapped)


def _wrap(cls, buf):
    a = object.__new__(cls)
    a._buf = buf
    a._node = None
    return a


def _meshes_in(staged: Staged, name: str) -> list[Mesh]:
    ctx = PrintContext(metadata=False)
    ctx.entry(staged.computation, name)
    return list(ctx.meshes)


def _one_mesh(name: str, shardings, program_meshes) -> Mesh:
    meshes = list(dict.fromkeys([s.mesh for s in shardings if s is not None] + program_meshes))
    if not meshes:
        raise ValueError(f"{name}: no sharding names a mesh (give in_shardings or "
                         "out_shardings, or pass sharded arrays)")
    if len(meshes) > 1:
        raise ValueError(f"{name}: the shardings of one program must all use one mesh; "
                         f"got {', '.join(map(repr, meshes))}")
    return meshes[0]


def _check_regions(staged: Staged, name: str) -> None:
    """Manual regions must be whole (GlobalToLocal -> ManualComputation ->
    LocalToGlobal, as hd.shard_map stages them): XLA aborts the process on others."""
    from hlodsl.ops import GlobalToLocal, LocalToGlobal, ManualComputation
    from hlodsl.ir.structural import GetTupleElement

    from .passes.rewrite import users

    def source(n):
        return n.operands[0] if type(n.op) is GetTupleElement else n

    comp = staged.computation
    readers = users(comp)
    for node in comp.nodes:
        kind = type(node.op)
        wants = {LocalToGlobal: ManualComputation, ManualComputation: GlobalToLocal}.get(kind)
        if wants and any(type(source(o).op) is not wants for o in node.operands):
            raise ValueError(f"{name}: {kind.__name__} must take the results of a "
                             f"{wants.__name__} (stage manual regions with hd.shard_map)")
        if kind is GlobalToLocal:
            direct = readers.get(id(node), [])
            final = [u for r in direct for u in (readers.get(id(r), []) if type(r.op) is
                                                 GetTupleElement else [r])]
            if any(type(u.op) is not ManualComputation for u in final):
                raise ValueError(f"{name}: the shards of a GlobalToLocal may only go to a "
                                 "ManualComputation (stage manual regions with hd.shard_map)")


def _annotated(staged: Staged, outs: list) -> Staged:
    """``staged`` again, each result given a layout wrapped in ``ResultSharding``."""
    from hlodsl.ops import ResultSharding

    comp = staged.computation
    with Builder(comp.name) as b:
        out = replay(comp, parameters_like(b, comp))
        tuple_root = isinstance(comp.root.type, TupleType)
        values = list(out) if tuple_root else [out]
        values = [v if s is None else ResultSharding(s)(v) for v, s in zip(values, outs)]
        root = root_of(b, comp, tuple(values) if tuple_root else values[0])
    return Staged(b.finish(root), staged.out_tree, staged.out_types, staged.in_types)


def _without_annotations(staged: Staged, mesh: Mesh) -> Staged:
    """``staged`` for a one-device mesh: layouts dropped, manual regions inlined (XLA
    runs no partitioner for one partition, so its annotations would stay unread;
    jax lowers a one-device shard_map the same way)."""
    from hlodsl.ir.interpret import replay as replay_
    from hlodsl.ops import (GlobalToLocal, LocalToGlobal, ManualComputation, ResultSharding,
                            ShardingConstraint)
    from hlodsl.arrays.sharding import manual_mesh
    from hlodsl.ir.staging import stage_computation

    from .passes.rewrite import rewrite

    def rule(node, values, new):
        kind = type(node.op)
        if kind in (ShardingConstraint, ResultSharding):
            return values[0]
        if kind in (GlobalToLocal, LocalToGlobal):
            return values[0] if len(values) == 1 else tuple(values)
        if kind is ManualComputation:
            with manual_mesh(mesh):
                body = stage_computation(node.op.body, tuple(o.type for o in node.operands))
            return replay_(body, values)
        return None

    return Staged(rewrite(staged.computation, rule), staged.out_tree, staged.out_types,
                  staged.in_types)


def _compile(staged: Staged, name: str, mesh: Mesh, ins: list, outs: list):
    if mesh.size == 1:
        text = PrintContext().entry(_without_annotations(staged, mesh).computation, name)
        return runtime.compile_partitioned(text, [int(mesh.device_ids.flat[0])]), text
    annotated = _annotated(staged, outs) if any(s is not None for s in outs) else staged
    attributes = {}
    ctx = PrintContext(param_attributes=attributes)
    mesh_name = ctx.mesh_name(mesh)  # the first mesh declared is this one
    for i, (s, t) in enumerate(zip(ins, staged.in_types)):
        sdy = s.sdy(t.rank, mesh_name).replace('"', '\\"')
        attributes[i] = f', frontend_attributes={{xla.sdy.sharding="{sdy}"}}'
    text = ctx.entry(annotated.computation, name)
    if len(ctx.meshes) > 1:
        raise ValueError(f"{name}: the shardings of one program must all use one mesh; "
                         f"got {', '.join(map(repr, ctx.meshes))}")
    exe = runtime.compile_partitioned(text, [int(i) for i in mesh.device_ids.flat])
    return exe, text


def build(staged: Staged, name: str, ins: list | None, outs: list | None,
          given: list | None = None) -> PartitionedEntry:
    """Compile ``staged`` partitioned: ``ins``/``outs`` give layouts per argument leaf
    and per result (None: replicated for arguments, XLA's choice for results)."""
    n_in, n_out = len(staged.in_types), len(staged.out_types)
    ins = list(ins) if ins is not None else [None] * n_in
    outs = list(outs) if outs is not None else [None] * n_out
    given = list(given) if given is not None else [s is not None for s in ins]
    mesh = _one_mesh(name, ins + outs, _meshes_in(staged, name))
    _check_regions(staged, name)
    replicated = NamedSharding(mesh, PartitionSpec())
    ins = [s or replicated for s in ins]
    exe, text = _compile(staged, name, mesh, ins, outs)
    chosen = _chosen_layouts(exe, mesh, staged, outs)
    if any(s is None for s in chosen):
        # XLA laid a result out in a way that is no grid over this mesh: ask for
        # it replicated instead (one more compile; rare).
        outs = [s if s is not None else replicated for s in chosen]
        exe, text = _compile(staged, name, mesh, ins, outs)
        chosen = outs
    entry = PartitionedEntry(staged, exe)
    entry.mesh, entry.in_shardings, entry.out_shardings = mesh, tuple(ins), tuple(chosen)
    entry.given = tuple(given)
    entry._ins = tuple(runtime.jax_sharding(s) for s in ins)
    if mesh.size > 1:
        entry.out_classes = tuple(sharded_class(t) for t in staged.out_types)
    entry.text = text
    entry._run = runtime.partitioned_executor(
        exe, [(t.shape, t.dtype.np_dtype, s) for t, s in zip(staged.out_types, chosen)])
    return entry


def _chosen_layouts(exe, mesh: Mesh, staged: Staged, outs: list) -> list:
    blocks = runtime.output_blocks(exe, [t.rank for t in staged.out_types])
    chosen = []
    for s, b, t in zip(outs, blocks, staged.out_types):
        if s is None and b is not None:
            s = match_blocks(mesh, t.shape, b)
        chosen.append(s)
    return chosen


_LOCK = threading.Lock()


def run(entry: Entry, leaves) -> object:
    """``entry``'s program run partitioned over the mesh its sharded arguments use."""
    key = tuple(sharding_of(a._buf) for a in leaves)
    with _LOCK:
        table = entry.partitioned
        if table is None:
            table = entry.partitioned = {}
        part = table.get(key)
    if part is None:
        meshes = list(dict.fromkeys(s.mesh for s in key if s is not None))
        if len(meshes) > 1:
            raise ValueError(
                f"the arguments are sharded over different meshes ({', '.join(map(repr, meshes))}); "
                "hd.device_put them onto one mesh first")
        part = build(entry.staged, entry.staged.computation.name, list(key), None)
        with _LOCK:
            table[key] = part
    return part.run(leaves)


_compiler.use_sharding(__import__(__name__, fromlist=["build"]))


# -- sharded arrays and constraints ---------------------------------------------------


def device_put(x, sharding: NamedSharding) -> Array:
    """``x`` laid out over ``sharding``'s devices, each device holding its shard.

    >>> import numpy as np, hlodsl as hd
    >>> mesh = hd.make_mesh((1,), ("x",))
    >>> y = hd.device_put(np.arange(4.0), hd.NamedSharding(mesh, hd.P("x")))
    >>> y.sharding.spec, [s.data.shape for s in y.addressable_shards]
    (P('x'), [(4,)])
    """
    from hlodsl.arrays.array import array

    if not isinstance(sharding, NamedSharding):
        raise TypeError(f"device_put: expected a hd.NamedSharding, got {sharding!r}")
    a = array(x)
    if a._buf is None:
        return with_sharding_constraint(a, sharding)
    sharding.check(a.shape, f"device_put({a.type})")
    if sharding_of(a._buf) == sharding:
        return a
    if runtime.is_sharded(a._buf) or runtime.is_fully_addressable(a._buf) is False:
        buf = runtime.replicate_on(a._buf, sharding)
    else:
        import numpy as np

        buf = runtime.put_sharded(np.asarray(a), sharding)
    return _wrap(sharded_class(a.type) if runtime.is_sharded(buf) else array_class(a.type), buf)


def with_sharding_constraint(x: Array, sharding: NamedSharding) -> Array:
    """``x``, laid out as ``sharding`` from here on in the program (eagerly: moved there).

    >>> import numpy as np, hlodsl as hd
    >>> s = hd.NamedSharding(hd.make_mesh((1,), ("x",)), hd.P("x"))
    >>> hd.compile(lambda a: hd.with_sharding_constraint(a + 1, s))(np.float32([1, 2]))
    hlodsl.Array[float32, (2,)]([2., 3.])
    """
    from hlodsl.ir.graph import current_builder
    from hlodsl.ops import ShardingConstraint

    if not isinstance(sharding, NamedSharding):
        raise TypeError(f"with_sharding_constraint: expected a hd.NamedSharding, got "
                        f"{sharding!r}")
    from hlodsl.context import STATE

    if current_builder() is None and not STATE.traces and getattr(x, "_buf", None) is not None:
        return device_put(x, sharding)
    return ShardingConstraint(sharding)(x)

