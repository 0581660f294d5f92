"""Several devices: sharded buffers and programs partitioned over a mesh.

A sharded hlodsl array holds one jax Array whose sharding spans the mesh's
devices: PJRT's own description of a buffer per device. hlodsl's Mesh and
NamedSharding (hlodsl.arrays.sharding) are translated to jax's here and only here.
"""

from __future__ import annotations

import numpy as np
import jax
import jaxlib.xla_client as xc

from hlodsl.errors import XlaCompileError

from . import jaxlib_compat as compat
from .buffers import aval, private_copy
from .client import backend, track, x64
from .executables import Executable, compile_and_load, compiler_options, explain, with_handlers
from .lapack import initialize_lapack

__all__ = ["PARTITIONER", "jax_sharding", "put_sharded", "is_sharded", "named_layout", "shards",
           "is_fully_addressable", "readable", "replicate_on", "compile_partitioned",
           "output_blocks", "partitioned_executor", "from_process_local_data"]

#: Which SPMD partitioner compiles annotated programs. jaxlib 0.10.2 has Shardy
#: (``use_shardy_partitioner``), which reads the ``xla.sdy.*`` frontend attributes
#: hlodsl emits; GSPMD (``sharding={devices=...}``) is deprecated there and is
#: not emitted (a jaxlib without Shardy gets a clear error at compile).
PARTITIONER = "shardy" if hasattr(xc.CompileOptions().executable_build_options,
                                  "use_shardy_partitioner") \
    else None

_JAX_SHARDINGS: dict = {}


def jax_sharding(sharding):
    """jax's NamedSharding for an hlodsl NamedSharding (cached)."""
    out = _JAX_SHARDINGS.get(sharding)
    if out is None:
        from jax.sharding import Mesh as JMesh, NamedSharding as JNamed, PartitionSpec as JP

        devs = backend().devices()
        mesh = JMesh(np.vectorize(lambda i: devs[i], otypes=[object])(sharding.mesh.device_ids),
                     sharding.mesh.axis_names)
        # The spec without trailing Nones: shardings that compare equal (P() and
        # P(None, None)) share this entry, and jax refuses the longer on a scalar.
        parts = [None if not a else a[0] if len(a) == 1 else a for a in sharding.normalized()]
        out = _JAX_SHARDINGS[sharding] = JNamed(mesh, JP(*parts))
    return out


def put_sharded(host: np.ndarray, sharding):
    """Copy a host array onto the devices of ``sharding``, each device its own shard.

    The data is copied into a private buffer first, as in ``to_device``: the
    shards must not alias memory the caller can still write.
    """
    with x64(True):
        return jax.device_put(private_copy(host), jax_sharding(sharding))


def is_sharded(buf) -> bool:
    """Whether a buffer spans more than one device."""
    return len(buf.sharding.device_set) > 1


def named_layout(buf) -> tuple[np.ndarray, tuple[str, ...], tuple] | None:
    """``(device indices in mesh order, axis names, partition spec entries)`` of a
    buffer laid out over a mesh (even of one device), None for a plain one-device
    buffer (``hlodsl.sharding.sharding_of`` makes the NamedSharding)."""
    s = buf.sharding
    mesh = getattr(s, "mesh", None)
    if len(s.device_set) == 1 and (mesh is None or not hasattr(s, "spec")):
        return None  # a one-device buffer
    devs = backend().devices()
    if mesh is None or not hasattr(s, "spec"):
        raise TypeError(f"a buffer with sharding {s} (not a named sharding) cannot be an "
                        "hlodsl array")
    ids = np.vectorize(devs.index, otypes=[np.int64])(mesh.devices)
    return ids, tuple(mesh.axis_names), tuple(s.spec)


def shards(buf) -> list[tuple[int, tuple, object]]:
    """``(device index, global index, single-device buffer)`` for each local shard."""
    devs = backend().devices()
    return [(devs.index(sh.device), sh.index, sh.data) for sh in buf.addressable_shards]


def is_fully_addressable(buf) -> bool:
    return buf.is_fully_addressable


def readable(buf):
    """A buffer numpy can read for the whole array: ``buf``, or one of its local
    copies when it is replicated over devices of several processes."""
    if not buf.is_fully_addressable and buf.is_fully_replicated:
        return buf.addressable_data(0)
    return buf


def replicate_on(buf, sharding):
    """A one-device (or differently laid out) buffer moved to ``sharding``'s layout."""
    with x64(True):
        return jax.device_put(buf, jax_sharding(sharding))


def compile_partitioned(text: str, device_ids: list[int]) -> Executable:
    """Compile a module with sharding annotations for the devices ``device_ids``
    (partition i runs on ``device_ids[i]``), through XLA's SPMD partitioner."""
    if PARTITIONER is None:
        raise XlaCompileError("this jaxlib has no Shardy partitioner, which hlodsl's sharding "
                              "annotations need (jaxlib >= 0.4.36)")
    be = backend()
    devs = be.devices()
    n = len(device_ids)
    opts = xc.CompileOptions()
    opts.env_option_overrides = list(compiler_options().items())
    opts.num_replicas, opts.num_partitions = 1, n
    eb = opts.executable_build_options
    eb.use_spmd_partitioning = True
    eb.use_shardy_partitioner = True
    chosen = [devs[i] for i in device_ids]
    # Partition i runs on chosen[i]; the assignment names devices by their global
    # ids (which differ from positions once several processes share the program).
    opts.device_assignment = xc.DeviceAssignment.create(
        np.array([d.id for d in chosen]).reshape(1, n))
    if "lapack_" in text:
        initialize_lapack()
    try:
        exe = compile_and_load(be, text, tuple(chosen), opts, ("spmd", n))
    except Exception as e:
        raise XlaCompileError(explain(text, str(e))) from None
    executable = Executable(exe, text, n)
    track(executable)
    return executable


def output_blocks(exe: Executable, ranks: list[int]) -> list[list[tuple[int, ...]] | None]:
    """Per output of a partitioned program: the block each partition holds (the
    position of its shard in the grid of shards), or None when XLA laid the output
    out in a way that is not a grid of blocks (maximal, manual)."""
    out = []
    n = exe.num_devices
    shardings = exe._exe.get_output_shardings()
    if shardings is None:  # one partition: nothing is split
        return [[(0,) * rank] * n for rank in ranks]
    for op, rank in zip(shardings, ranks):
        h = xc.HloSharding.from_proto(op)
        if h.is_replicated():
            out.append([(0,) * rank] * n)
            continue
        if not h.is_tiled() or h.is_manual() or h.is_maximal():
            out.append(None)
            continue
        dims = list(h.tile_assignment_dimensions())
        grid = np.asarray(h.tile_assignment_devices()).reshape(dims)
        blocks = [None] * n
        for pos, p in np.ndenumerate(grid):
            blocks[int(p)] = tuple(pos[:rank])
        out.append(blocks if len(dims) >= rank else None)
    return out


def partitioned_executor(exe: Executable, outs: list):
    """``run(args) -> outputs`` for a partitioned program on global buffers; ``outs`` is
    ``[(shape, dtype, sharding)]`` per output. Result handlers are built once here,
    so a call is PJRT's execute and the handlers (as jax.jit's own dispatch)."""
    handlers = [compat.result_handler(aval(shape, dtype), jax_sharding(s))
                for shape, dtype, s in outs]
    return with_handlers(exe._exe.execute_sharded, handlers)


def from_process_local_data(sharding, local: np.ndarray, global_shape: tuple[int, ...]):
    """The global buffer whose shards on this process's devices come from ``local``."""
    with x64(True):
        return jax.make_array_from_process_local_data(jax_sharding(sharding),
                                                      private_copy(local), global_shape)
