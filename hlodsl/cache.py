"""``BoundedCache``: the one kind of cache hlodsl keeps, bounded and safe across threads.

Compiled executables, eager one-op modules and staged sub-computations are
all kept in one of these: at most ``maxsize`` entries (a number, or a function
read at every insertion so ``hlodsl.config`` changes apply at once), evicting
the least recently used entry first (the "second chance" clock: a hit only
sets a flag, so the lookup stays a dictionary read). Insertions and evictions
take a lock; a lookup takes none.

>>> c = BoundedCache(2, "example")
>>> c.put("a", 1), c.put("b", 2), c.get("a")
(1, 2, 1)
>>> c.put("c", 3)        # "b" is the least recently used: it goes
3
>>> sorted(c.keys())
['a', 'c']
"""

from __future__ import annotations

import threading
import weakref
from typing import Callable, Hashable

__all__ = ["BoundedCache", "clear_all"]

_ALL: weakref.WeakSet = weakref.WeakSet()  # every cache alive, for clear_all


class BoundedCache:
    """A dictionary of at most ``maxsize`` entries, least recently used evicted first."""

    __slots__ = ("_data", "_lock", "_maxsize", "name", "on_evict", "evictions", "__weakref__")

    def __init__(self, maxsize: int | Callable[[], int], name: str,
                 on_evict: Callable[[Hashable, object], None] | None = None):
        self._data: dict = {}  # key -> [value, used since the clock last passed]
        self._lock = threading.Lock()
        self._maxsize = maxsize
        self.name = name
        #: ``on_evict(key, value)`` runs (under the lock) for each entry dropped.
        self.on_evict = on_evict
        self.evictions = 0
        _ALL.add(self)

    @property
    def maxsize(self) -> int:
        m = self._maxsize
        return max(int(m() if callable(m) else m), 1)

    def get(self, key, default=None):
        hit = self._data.get(key)
        if hit is None:
            return default
        hit[1] = True
        return hit[0]

    def slot(self, key):
        """The entry's ``[value, used]`` cell (or None): hot paths read it without a call."""
        return self._data.get(key)

    def put(self, key, value):
        """Insert ``value`` unless ``key`` is present; returns the value the cache holds.

        Two threads that both missed and both computed a value get the same one.
        """
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                hit[1] = True
                return hit[0]
            self._data[key] = [value, False]
            self._shrink(self.maxsize, key)
        return value

    def get_or_make(self, key, make: Callable[[], object]):
        """The cached value for ``key``, else ``make()`` (run outside the lock), cached."""
        hit = self._data.get(key)
        if hit is not None:
            hit[1] = True
            return hit[0]
        return self.put(key, make())

    def _shrink(self, limit: int, new=None) -> None:
        data = self._data
        while len(data) > limit:
            key = next(iter(data))
            cell = data.pop(key)
            # Used since the clock last passed: a second chance, at the back. So is the
            # entry just put (``new``): were every other one used, the clock would come
            # round to it first, and a hot cache would drop each new entry at once (an
            # eager module's 17th signature compiled again at every call).
            if cell[1] or key == new:
                cell[1] = False
                data[key] = cell
                continue
            self.evictions += 1
            if self.on_evict is not None:
                self.on_evict(key, cell[0])

    def pop(self, key, default=None):
        with self._lock:
            cell = self._data.pop(key, None)
        return default if cell is None else cell[0]

    def clear(self) -> None:
        """Drop every entry (``on_evict`` runs for each, as for an eviction)."""
        with self._lock:
            data, self._data = self._data, {}
            if self.on_evict is not None:
                for key, cell in data.items():
                    self.on_evict(key, cell[0])

    def keys(self) -> list:
        return list(self._data)

    def values(self) -> list:
        return [cell[0] for cell in list(self._data.values())]

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key) -> bool:
        return key in self._data

    def __repr__(self) -> str:
        return f"<BoundedCache {self.name}: {len(self._data)}/{self.maxsize}>"


def clear_all() -> None:
    """Empty every cache: each program staged so far is staged again at its next call.

    ``hlodsl.config`` calls it when a setting that changes what staging produces
    (``linalg_kernels``) changes, so no cached executable outlives the choice.
    """
    for cache in list(_ALL):
        cache.clear()
