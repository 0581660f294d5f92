"""Meshes and shardings: how an array is laid out over several devices.

The names are JAX's, so its users know them: a ``Mesh`` arranges devices in a
grid with named axes, a ``PartitionSpec`` (``P``) says which mesh axes each
array dimension is split over, and a ``NamedSharding`` pairs the two. XLA's
SPMD partitioner (Shardy) reads them as annotations in the module and splits
the program; nothing here partitions anything itself.

>>> mesh = Mesh(range(8), ("data", "model"), shape=(4, 2))
>>> s = NamedSharding(mesh, P("data", None))
>>> s.shard_shape((16, 6))
(4, 6)
>>> s.sdy()
'#sdy.sharding<@mesh, [{"data"}, {}]>'
>>> s.index(3, (16, 6))  # device 3 is at mesh position (1, 1): rows 4..8, all columns
(slice(4, 8, None), slice(None, None, None))
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Sequence
from math import prod

import numpy as np

__all__ = ["Mesh", "make_mesh", "PartitionSpec", "P", "NamedSharding", "devices",
           "current_manual_mesh", "manual_mesh", "sharding_of"]


class PartitionSpec(tuple):
    """Per array dimension: the mesh axis (or tuple of axes, major first) it is split
    over, or None for a dimension every device holds whole. Missing trailing
    dimensions are not split.

    >>> P("x", None, ("y", "z"))
    P('x', None, ('y', 'z'))
    """

    def __new__(cls, *parts):
        norm = []
        for p in parts:
            if p is None or isinstance(p, str):
                norm.append(p)
            elif isinstance(p, (tuple, list)) and all(isinstance(a, str) for a in p):
                norm.append(tuple(p) if len(p) != 1 else p[0])
            else:
                raise TypeError(f"PartitionSpec: each entry must be a mesh axis name, a tuple "
                                f"of names or None, got {p!r}")
        return super().__new__(cls, norm)

    def axes(self, dim: int) -> tuple[str, ...]:
        """The mesh axes dimension ``dim`` is split over (major first)."""
        if dim >= len(self) or self[dim] is None:
            return ()
        p = self[dim]
        return (p,) if isinstance(p, str) else tuple(p)

    def __repr__(self) -> str:
        return "P(" + ", ".join(repr(p) for p in self) + ")"

    def __reduce__(self):
        return PartitionSpec, tuple(self)


P = PartitionSpec


class Mesh:
    """Devices (by their index in ``hd.devices()``) in a grid with named axes.

    ``devices`` is an array-like of device indices or ``hd.Device`` objects
    whose shape is the mesh's (or any iterable, with ``shape=`` given).

    >>> Mesh([[0, 1], [2, 3]], ("x", "y"))
    Mesh(x=2, y=2; devices [[0, 1], [2, 3]])
    """

    def __init__(self, devices, axis_names: Sequence[str], shape: Sequence[int] | None = None):
        ids = np.array([_device_id(d) for d in np.asarray(list(devices) if
                                                              not hasattr(devices, "shape")
                                                              else devices, dtype=object).flat],
                       dtype=np.int64)
        if shape is None:
            shape = np.shape(np.asarray(devices, dtype=object))
        shape = tuple(int(n) for n in shape)
        axis_names = tuple(axis_names)
        if not all(isinstance(a, str) and a for a in axis_names):
            raise TypeError(f"Mesh: axis names must be non-empty strings, got {axis_names!r}")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh: axis names must be distinct, got {axis_names!r}")
        if len(axis_names) != len(shape):
            raise ValueError(f"Mesh: {len(axis_names)} axis names {axis_names} for a grid of "
                             f"shape {shape}")
        if prod(shape) != ids.size:
            raise ValueError(f"Mesh: shape {shape} needs {prod(shape)} devices, got {ids.size}")
        if len(set(ids.tolist())) != ids.size:
            raise ValueError(f"Mesh: a device appears twice in {ids.tolist()}")
        self.device_ids = ids.reshape(shape)
        self.device_ids.flags.writeable = False
        self.axis_names = axis_names

    @property
    def shape(self) -> dict[str, int]:
        """Axis name -> size, in mesh order."""
        return dict(zip(self.axis_names, self.device_ids.shape))

    @property
    def size(self) -> int:
        return self.device_ids.size

    @property
    def devices(self) -> np.ndarray:
        """The mesh's ``hd.Device`` objects, in its grid."""
        from .devices import Device
        from hlodsl import runtime

        out = np.empty(self.device_ids.shape, dtype=object)
        for pos, i in np.ndenumerate(self.device_ids):
            out[pos] = Device(runtime.platform(), int(i))
        return out

    def _key(self):
        return (self.axis_names, self.device_ids.shape, tuple(self.device_ids.flat))

    def __eq__(self, other) -> bool:
        return isinstance(other, Mesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        axes = ", ".join(f"{a}={n}" for a, n in self.shape.items())
        return f"Mesh({axes}; devices {self.device_ids.tolist()})"

    def __reduce__(self):
        return Mesh, (self.device_ids.tolist(), self.axis_names)

    def __enter__(self):
        raise TypeError("Mesh is not a context manager in hlodsl: pass shardings "
                        "(hd.NamedSharding(mesh, spec)) to hd.compile or hd.device_put")

    # -- positions and groups along axes -------------------------------------------------

    def position(self, partition: int) -> tuple[int, ...]:
        """The mesh coordinates of the ``partition``-th device in mesh order."""
        return tuple(int(i) for i in np.unravel_index(partition, self.device_ids.shape))

    def axis_groups(self, axes: Sequence[str]) -> list[list[int]]:
        """Partitions (positions in mesh order) that differ only along ``axes``:
        the groups a collective over those axes runs in, members ordered by their
        index along ``axes`` (major first)."""
        self.check_axes(axes, "a collective")
        dims = [self.axis_names.index(a) for a in axes]
        others = [d for d in range(len(self.axis_names)) if d not in dims]
        order = np.arange(self.size).reshape(self.device_ids.shape)
        moved = np.transpose(order, others + dims)
        return moved.reshape(-1, prod(self.device_ids.shape[d] for d in dims)).tolist()

    def check_axes(self, axes: Iterable[str], where: str) -> None:
        for a in axes:
            if a not in self.axis_names:
                raise ValueError(f"{where}: {a!r} is not an axis of {self!r} (axes: "
                                 f"{', '.join(self.axis_names)})")


def _device_id(d) -> int:
    if isinstance(d, (int, np.integer)):
        return int(d)
    if hasattr(d, "id") and isinstance(getattr(d, "id"), (int, np.integer)):
        return int(d.id)
    raise TypeError(f"Mesh: devices are given as device indices or hd.Device objects, "
                    f"got {d!r}")


def devices() -> list:
    """All devices of the runtime (every process's, after ``hd.distributed.initialize``).

    >>> len(devices()) >= 1
    True
    """
    from .devices import Device
    from hlodsl import runtime

    return [Device(runtime.platform(), i) for i in range(runtime.device_count())]


def make_mesh(shape: Sequence[int], axis_names: Sequence[str], devices=None) -> Mesh:
    """A mesh of the first ``prod(shape)`` devices (or ``devices``) in order.

    >>> make_mesh((2,), ("x",)).shape
    {'x': 2}
    """
    from hlodsl import runtime

    n = prod(shape)
    if devices is None:
        if n > runtime.device_count():
            raise ValueError(f"make_mesh: shape {tuple(shape)} needs {n} devices, the runtime "
                             f"has {runtime.device_count()} (on CPU set XLA_FLAGS="
                             "--xla_force_host_platform_device_count=N before importing hlodsl)")
        devices = range(n)
    return Mesh(list(devices), axis_names, shape=shape)


class NamedSharding:
    """An array's layout: ``spec`` split over the axes of ``mesh``; axes the spec does
    not name hold replicas.

    >>> NamedSharding(make_mesh((1,), ("x",)), P("x"))
    NamedSharding(Mesh(x=1; devices [0]), P('x'))
    """

    def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec()):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding: expected a hd.Mesh, got {mesh!r}")
        if not isinstance(spec, PartitionSpec):
            if isinstance(spec, (tuple, list)):
                spec = PartitionSpec(*spec)
            else:
                raise TypeError(f"NamedSharding: expected a hd.PartitionSpec, got {spec!r}")
        used = [a for d in range(len(spec)) for a in spec.axes(d)]
        mesh.check_axes(used, f"NamedSharding({spec!r})")
        if len(set(used)) != len(used):
            raise ValueError(f"NamedSharding: a mesh axis appears twice in {spec!r}")
        self.mesh, self.spec = mesh, spec

    def __eq__(self, other) -> bool:
        return (isinstance(other, NamedSharding) and self.mesh == other.mesh and
                self.normalized() == other.normalized())

    def __hash__(self) -> int:
        return hash((self.mesh, self.normalized()))

    def normalized(self) -> tuple:
        parts = [self.spec.axes(d) for d in range(len(self.spec))]
        while parts and not parts[-1]:
            parts.pop()
        return tuple(parts)

    def __repr__(self) -> str:
        return f"NamedSharding({self.mesh!r}, {self.spec!r})"

    def __reduce__(self):
        return NamedSharding, (self.mesh, self.spec)

    # -- shapes and indices ------------------------------------------------------------

    def check(self, shape: tuple[int, ...], what: str) -> None:
        """Raise unless ``shape`` can be laid out this way (each split dimension divides)."""
        if len(self.spec) > len(shape):
            raise ValueError(f"{what}: {self.spec!r} names {len(self.spec)} dimensions, the "
                             f"array has shape {shape}")
        for d, n in enumerate(shape):
            k = self.parts(d)
            if n % k:
                raise ValueError(f"{what}: dimension {d} of shape {shape} (size {n}) does not "
                                 f"divide into {k} shards over mesh axes {self.spec.axes(d)}")

    def parts(self, dim: int) -> int:
        """How many shards dimension ``dim`` is cut into."""
        return prod(self.mesh.shape[a] for a in self.spec.axes(dim))

    def shard_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        self.check(shape, "shard_shape")
        return tuple(n // self.parts(d) for d, n in enumerate(shape))

    def block(self, partition: int, rank: int) -> tuple[int, ...]:
        """Which block (per dimension) the ``partition``-th device of the mesh holds."""
        pos = dict(zip(self.mesh.axis_names, self.mesh.position(partition)))
        out = []
        for d in range(rank):
            b = 0
            for a in self.spec.axes(d):
                b = b * self.mesh.shape[a] + pos[a]
            out.append(b)
        return tuple(out)

    def index(self, device, shape: tuple[int, ...]) -> tuple[slice, ...]:
        """The part of a global array of ``shape`` that ``device`` (an index or
        ``hd.Device``) holds."""
        flat = self.mesh.device_ids.reshape(-1).tolist()
        dev = _device_id(device)
        if dev not in flat:
            raise ValueError(f"device {dev} is not in {self.mesh!r}")
        self.check(tuple(shape), "index")
        out = []
        for d, b in enumerate(self.block(flat.index(dev), len(shape))):
            k = self.parts(d)
            m = shape[d] // k
            out.append(slice(None) if k == 1 else slice(b * m, (b + 1) * m))
        return tuple(out)

    def is_replicated(self) -> bool:
        return not self.normalized()

    # -- the Shardy annotation ----------------------------------------------------------

    def sdy(self, rank: int | None = None, mesh_name: str = "mesh") -> str:
        """The ``#sdy.sharding`` attribute text of this layout (closed dimensions)."""
        rank = len(self.spec) if rank is None else rank
        dims = ", ".join("{" + ", ".join(f'"{a}"' for a in self.spec.axes(d)) + "}"
                         for d in range(rank))
        return f"#sdy.sharding<@{mesh_name}, [{dims}]>"


def sdy_mesh(mesh: Mesh) -> str:
    """The ``#sdy.mesh`` attribute of a mesh whose devices are the program's partitions in
    mesh order (the runtime compiles with that device assignment)."""
    return "#sdy.mesh<[" + ", ".join(f'"{a}"={n}' for a, n in mesh.shape.items()) + "]>"


def layouts(mesh: Mesh, rank: int):
    """Every PartitionSpec of rank ``rank`` over ``mesh`` (each axis on at most one
    dimension, in mesh order within a dimension): the candidates a compiled
    program's output layout is matched against."""
    choices = list(range(-1, rank))  # -1: the axis is not used (replicated)
    for assign in itertools.product(choices, repeat=len(mesh.axis_names)):
        dims = [tuple(a for a, d in zip(mesh.axis_names, assign) if d == k) for k in range(rank)]
        yield PartitionSpec(*[d if d else None for d in dims])


def match_blocks(mesh: Mesh, shape: tuple[int, ...], blocks: list[tuple[int, ...]]):
    """The NamedSharding whose per-partition blocks are ``blocks`` (None if none is)."""
    rank = len(shape)
    for spec in layouts(mesh, rank):
        s = NamedSharding(mesh, spec)
        if any(shape[d] % s.parts(d) for d in range(rank)):
            continue
        if all(s.block(p, rank) == blocks[p] for p in range(mesh.size)):
            parts = list(spec)
            while parts and parts[-1] is None:
                parts.pop()
            return NamedSharding(mesh, PartitionSpec(*parts))
    return None


# -- the mesh of the shard_map body being staged (per thread) ---------------------------

_MANUAL = threading.local()


def current_manual_mesh() -> Mesh | None:
    """The mesh of the ``shard_map`` whose per-device body is being staged, if any."""
    stack = getattr(_MANUAL, "stack", None)
    return stack[-1] if stack else None


class manual_mesh:
    """Context: staging the per-device body of a ``shard_map`` over ``mesh``."""

    def __init__(self, mesh: Mesh):
        self.mesh = mesh

    def __enter__(self):
        if not hasattr(_MANUAL, "stack"):
            _MANUAL.stack = []
        _MANUAL.stack.append(self.mesh)
        return self.mesh

    def __exit__(self, *exc):
        _MANUAL.stack.pop()


# -- shardings given per argument, as a prefix of the arguments' structure ------------


def sharding_of(buf) -> NamedSharding | None:
    """The NamedSharding of a runtime buffer laid out over a mesh (even of one device),
    None for a plain one-device buffer.

    >>> import hlodsl as hd
    >>> sharding_of(hd.array([1.0])._buf) is None
    True
    """
    from hlodsl import runtime

    layout = runtime.named_layout(buf)
    if layout is None:
        return None
    ids, axis_names, spec = layout
    return NamedSharding(Mesh(ids, axis_names), PartitionSpec(*spec))
