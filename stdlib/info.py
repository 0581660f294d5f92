"""The array API inspection namespace: ``__array_namespace_info__()``.

It reports what this namespace supports: its capabilities, its device (one:
every program runs on the runtime's default device), its default data types
(numpy's: float64, complex128 and int64, also for indexing) and the data types
it offers, by kind.

>>> import hlodsl.stdlib as xp
>>> info = xp.__array_namespace_info__()
>>> info.default_dtypes()["real floating"], sorted(info.dtypes(kind="signed integer"))
(float64, ['int16', 'int32', 'int64', 'int8'])
>>> info.devices() == (info.default_device(),)
True
"""

from __future__ import annotations

from hlodsl.arrays.array import Device, default_device
from hlodsl.arrays.dtypes import (
    complex64, complex128, default_inexact, float32, float64, int8, int16, int32, int64, pred,
    uint8, uint16, uint32, uint64,
)

from .data_types import isdtype

__all__ = ["__array_namespace_info__", "Info"]

# The standard's data types, under its names; float16/bfloat16 are extras it does not list.
_DTYPES = {
    "bool": pred, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
    "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    "float32": float32, "float64": float64, "complex64": complex64, "complex128": complex128,
}


class Info:
    """The inspection namespace the array API standard specifies (one per call)."""

    __module__ = "hlodsl.stdlib"

    def capabilities(self) -> dict:
        """What the namespace supports.

        Boolean indexing and functions with data-dependent output shapes
        (``nonzero``, ``unique_*``, ``x[mask]``) work on concrete arrays; inside
        ``hlodsl.compile`` they need a static ``size=`` (or raise a clear error).

        >>> sorted(Info().capabilities())
        ['boolean indexing', 'data-dependent shapes', 'max dimensions']
        """
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self) -> Device:
        """The device arrays are created on and programs run on."""
        return default_device()

    def devices(self) -> tuple[Device, ...]:
        """The devices this namespace can place arrays on: the default device only.

        A tuple, as the standard asks since 2025.12 (a list before).
        """
        return (default_device(),)

    def default_dtypes(self, *, device: Device | None = None) -> dict:
        """The data types creation functions use when given none.

        >>> Info().default_dtypes()["indexing"]
        int64
        """
        self._check(device)
        return {"real floating": default_inexact(float64),
                "complex floating": default_inexact(complex128),
                "integral": int64, "indexing": int64}

    def dtypes(self, *, device: Device | None = None, kind=None) -> dict:
        """The standard's data types (name -> dtype), all or those of ``kind``.

        ``kind`` is a kind name of :func:`isdtype` or a tuple of them.

        >>> Info().dtypes(kind="complex floating")
        {'complex64': complex64, 'complex128': complex128}
        """
        self._check(device)
        if kind is None:
            return dict(_DTYPES)
        return {name: dt for name, dt in _DTYPES.items() if isdtype(dt, kind)}

    def _check(self, device) -> None:
        if device is not None and device != default_device():
            raise ValueError(f"{device!r} is not a device of this namespace; "
                             f"it has {default_device()!r} only")


def __array_namespace_info__() -> Info:  # noqa: N807  (the standard's name)
    """The inspection namespace of :mod:`hlodsl.stdlib` (see :class:`Info`)."""
    return Info()
