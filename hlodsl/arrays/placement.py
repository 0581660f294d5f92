"""An array's device methods and DLPack export: where it lives and how others read it.

``DevicePlacement`` is a base class of :class:`hlodsl.Array` (``.device``,
``.sharding``, ``.addressable_shards``, ``to_device``, ``__dlpack__``). It sits
above ``hlodsl.devices`` and ``hlodsl.sharding`` (an array reports its layout
as a ``NamedSharding``), and below ``hlodsl.array``.

>>> import hlodsl as hd
>>> hd.array([1.0]).device == hd.devices()[0]
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .devices import Device, Shard, default_device
from .types import ArrayType

if TYPE_CHECKING:
    from .array import Array

__all__ = ["DevicePlacement"]


class DevicePlacement:
    """The array API's device methods and DLPack export of an array."""

    __slots__ = ()

    @property
    def device(self) -> Device:
        """The device holding this array (symbolic arrays: where the program will run)."""
        if self._buf is None:
            return default_device()
        from hlodsl import runtime

        if runtime.is_sharded(self._buf):
            raise ValueError(f"{self.type} is sharded over several devices "
                             f"({self.sharding!r}): see .sharding and .addressable_shards")
        return Device(runtime.platform(), runtime.device_index(self._buf))

    @property
    def sharding(self):
        """How this array is laid out over devices: a ``hd.NamedSharding``, or None for
        an array on one device (symbolic arrays: None)."""
        if self._buf is None:
            return None
        from .sharding import sharding_of

        return sharding_of(self._buf)

    @property
    def addressable_shards(self) -> list:
        """The shards this process holds: ``Shard(device, index, data)`` each, where
        ``index`` is the part of the global array (a tuple of slices) and ``data``
        a one-device array.

        >>> import hlodsl as hd
        >>> [s.index for s in hd.array([1.0, 2.0]).addressable_shards]
        [(slice(None, None, None),)]
        """
        from hlodsl import runtime

        buf = self._require_value("addressable_shards")
        return [Shard(Device(runtime.platform(), d), index,
                      self._from_buffer(data, ArrayType(self.dtype, tuple(data.shape))))
                for d, index, data in runtime.shards(buf)]

    def to_device(self, device: Device, /, *, stream=None) -> Array:
        """This array on ``device``: programs run on the default device, the only target.

        >>> import hlodsl as hd
        >>> x = hd.array([1, 2]); x.to_device(x.device) is x
        True
        """
        if stream is not None:
            raise ValueError("to_device: stream= is not supported (XLA orders its own streams)")
        if device != self.device:
            raise ValueError(f"to_device: {self.type} is on {self.device}; hlodsl runs every "
                             f"program on {default_device()}, so {device!r} is not a target")
        return self

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of a copy of this array's buffer (``copy=False``: of the buffer
        itself, flagged read-only).

        The array is immutable but not every consumer honours a read-only
        capsule (torch writes into what it imports), so the consumer gets its
        own copy unless it asks for ``copy=False``. A consumer asking for
        another device (``dl_device``: numpy asks for the host) gets the array
        moved there, which is its copy (``copy=False`` then raises BufferError).

        >>> import numpy as np, hlodsl as hd
        >>> np.from_dlpack(hd.array(np.float32([1, 2])), device="cpu")
        array([1., 2.], dtype=float32)
        """
        from hlodsl import runtime

        buf = self._require_value("__dlpack__")
        return runtime.to_dlpack(buf, stream=stream, max_version=max_version,
                                 dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple:
        """``(DLDeviceType, device id)`` of this array's buffer."""
        from hlodsl import runtime

        return runtime.dlpack_device(self._require_value("__dlpack_device__"))
