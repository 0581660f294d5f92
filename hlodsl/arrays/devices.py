"""Devices and shards: where an array lives (its methods: ``hlodsl.placement``).

>>> import hlodsl as hd
>>> hd.array([1.0]).device == default_device()
True
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .array import Array

__all__ = ["Device", "Shard", "default_device"]


class Shard(NamedTuple):
    """One device's part of an array: where it is, which part, and its data."""

    device: "Device"
    index: tuple
    data: "Array"


@dataclasses.dataclass(frozen=True)
class Device:
    """A device of the runtime's platform, as ``Array.device`` reports it.

    >>> import hlodsl as hd
    >>> hd.array([1.0]).device == default_device()
    True
    """

    platform: str
    id: int = 0

    def __repr__(self) -> str:
        return f"Device({self.platform}:{self.id})"


def default_device() -> Device:
    """The device every compiled program and eager op runs on."""
    from hlodsl import runtime

    return Device(runtime.platform(), runtime.local_device_ids()[0])
