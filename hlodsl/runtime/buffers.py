"""Device buffers: host data in and out (copied, never aliased), DLPack.

A buffer is a jax ``Array`` used only as PJRT's buffer of one device.

>>> import numpy as np
>>> to_host(to_device(np.arange(3, dtype=np.float32)))
array([0., 1., 2.], dtype=float32)
"""

from __future__ import annotations

import functools

import numpy as np
import jax
import jaxlib.xla_client as xc
from jax.core import ShapedArray

from . import jaxlib_compat as compat
from .client import backend, check_process, x64

__all__ = ["to_device", "to_host", "aval", "single_device", "private_copy", "is_buffer",
           "adopt", "copy_buffer", "is_deleted", "wait", "device_index", "to_dlpack",
           "dlpack_device", "from_dlpack"]


def to_device(host: np.ndarray, device: int = 0, private: bool = False):
    """Copy a host array to a device (the first by default); returns the buffer.

    NOTE: on CPU, ``jax.device_put`` aliases a 64-byte aligned numpy buffer
    instead of copying it (``may_alias=False`` included, jax 0.10.2): the
    device array would change when the caller mutates its numpy array, and a
    program still running on it would read the mutation. So the data is
    copied once, into an aligned buffer of our own that PJRT then takes over
    without a second copy. ``private=True`` says ``host`` was made for this
    call (from Python values) and nobody else can write it: no copy.
    """
    if not private:
        host = private_copy(host)
    dev = backend().local_devices()[device]
    return compat.device_put(aval(host.shape, host.dtype), single_device(dev), host, dev)


@functools.lru_cache(maxsize=4096)  # bounded: a long run over many shapes
def aval(shape: tuple, dtype) -> ShapedArray:
    """jax's abstract value for a buffer (one per shape and type in use)."""
    return ShapedArray(shape, dtype)


@functools.lru_cache(maxsize=None)  # one per device
def single_device(device):
    return xc.SingleDeviceSharding(device)


def private_copy(host: np.ndarray) -> np.ndarray:
    """A copy of ``host`` at a 64-byte aligned address (what PJRT aliases on CPU)."""
    raw = np.empty(host.nbytes + 64, np.uint8)
    offset = -raw.ctypes.data % 64
    out = raw[offset:offset + host.nbytes].view(host.dtype).reshape(host.shape)
    np.copyto(out, host, casting="no")
    return out


def is_buffer(x) -> bool:
    """Whether ``x`` is a device buffer of the runtime (a jax Array): immutable, shareable."""
    return isinstance(x, jax.Array)


def adopt(buf):
    """A jax array as an hlodsl buffer: itself when it lives on one of our devices."""
    devices = buf.devices()
    if len(devices) == 1 and next(iter(devices)) in backend().devices():
        return buf
    with x64(True):
        return jax.device_put(buf, backend().local_devices()[0])


def copy_buffer(buf):
    """A new device buffer holding ``buf``'s data, on the same device."""
    (device,) = buf.devices()
    # The copy runs asynchronously: wait for it, since the source may be memory that
    # its owner changes as soon as this returns (an imported numpy or torch array).
    with x64(True):
        return jax.device_put(buf, device, may_alias=False).block_until_ready()


def is_deleted(buf) -> bool:
    """Whether PJRT has deleted ``buf`` (a compiled call it was donated to took it over)."""
    return buf.is_deleted()


def wait(buf) -> None:
    """Return once the computation writing ``buf`` has finished."""
    check_process()  # a forked child cannot wait on its parent's XLA
    buf.block_until_ready()


def to_host(buf) -> np.ndarray:
    return np.asarray(buf)


def device_index(buf) -> int:
    """The index in ``backend().devices()`` of the device holding a buffer."""
    (device,) = buf.devices()
    return backend().devices().index(device)


# DLPack: jax Arrays implement the protocol on their PJRT buffers. Exporting
# shares device memory, and some consumers (torch) write into what they get
# whatever the capsule's read-only flag says: an hlodsl array, immutable, is
# exported as a copy unless the consumer asks for copy=False (then the capsule
# is flagged read-only, which numpy honours). Importing aliases the producer's
# memory only when the producer is immutable (a jax or hlodsl array) or the
# caller says copy=False; a numpy or torch array is copied.

def to_dlpack(buf, **kwargs):
    """The DLPack capsule of a copy of ``buf`` (``copy=False``: of ``buf`` itself, read-only).

    Keyword arguments are the protocol's: ``stream``, ``max_version``,
    ``dl_device``, ``copy``. A consumer asking for a version below 1.0 gets the
    legacy (unversioned) capsule, as the protocol says; jax refuses such
    versions outright.
    """
    max_version = kwargs.get("max_version")
    if max_version is not None and tuple(max_version) < (1, 0):
        kwargs["max_version"] = None
    copy = kwargs.pop("copy", None)
    here, there = tuple(buf.__dlpack_device__()), kwargs.get("dl_device")
    if there is not None and tuple(there) != here:
        # The consumer reads another device (numpy: the host, for a GPU array): the
        # transfer jax makes is the copy.
        if copy is False:
            raise BufferError(f"__dlpack__: the array is on DLPack device {_dl(here)} and the "
                              f"consumer asks for {_dl(there)} with copy=False; moving it "
                              "there is a copy (copy=None or True makes it)")
        try:
            return buf.__dlpack__(**kwargs)
        except (RuntimeError, ValueError, KeyError) as e:
            raise BufferError(f"__dlpack__: cannot move the array from DLPack device "
                              f"{_dl(here)} to {_dl(there)}: {e}") from None
    if copy is not False:
        buf = copy_buffer(buf)
    return buf.__dlpack__(**kwargs)


#: DLPack's device types (DLDeviceType) of the platforms hlodsl runs on.
_DL_TYPES = {1: "CPU", 2: "CUDA", 3: "CUDA host", 10: "ROCm"}
_PLATFORM_DL_TYPE = {"cpu": 1, "gpu": 2, "cuda": 2, "rocm": 10}


def _dl(device) -> str:
    kind, index = int(device[0]), int(device[1])
    return f"({kind}: {_DL_TYPES.get(kind, 'type ' + str(kind))}, {index})"


def dlpack_device(buf) -> tuple:
    """``(DLDeviceType, device id)`` of a buffer."""
    return buf.__dlpack_device__()


def from_dlpack(obj, copy: bool | None = None, immutable: bool = False):
    """A buffer on the default device holding the data of a DLPack producer.

    Returns ``(buffer, numpy dtype)``. ``copy=False`` aliases the producer's
    memory and fails where that is impossible; ``copy=True`` always copies;
    ``copy=None`` aliases only an ``immutable`` producer (or a jax array),
    since a device buffer that aliases writable memory changes with it.
    """
    from jax import dlpack

    device = backend().local_devices()[0]
    if copy is None and not (immutable or is_buffer(obj)):
        copy = True
    try:
        # NOTE: jax 0.10's copy=True still aliases aligned host memory; copy below.
        with x64(True):
            buf = dlpack.from_dlpack(obj, device=device, copy=None if copy else copy)
    except Exception as e:  # PJRT takes compact layouts only (no strides such as x[::2])
        if copy is False:
            source = getattr(obj, "__dlpack_device__", None)
            source = tuple(source()) if source is not None else None
            target = _PLATFORM_DL_TYPE.get(device.platform)
            if source is not None and target is not None and int(source[0]) != target:
                raise BufferError(
                    f"the data is on DLPack device {_dl(source)}, hlodsl's arrays on "
                    f"{device.platform} ({_dl((target, 0))}): a buffer there cannot alias "
                    "it; copy=None or True copies it") from None
            raise BufferError(str(e)) from None
        host = np.from_dlpack(obj)
        return to_device(np.ascontiguousarray(host)), np.dtype(host.dtype)
    if copy:
        buf = copy_buffer(buf)
    return buf, np.dtype(buf.dtype)
