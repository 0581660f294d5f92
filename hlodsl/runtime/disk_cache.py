"""A persistent cache of compiled executables, shared by every process of this user.

XLA's compile is most of a program's first call (VGG19's forward: seconds); a
new process would pay it again for the same module. So each compiled
executable is also written to a cache directory, keyed by a hash of what
determines it (the HLO text, the jax/jaxlib version, platform and device kind,
the device count and assignment, the compile options and ``XLA_FLAGS``); a
later process that compiles the same module loads it from there instead.

- Where: ``$HLODSL_CACHE_DIR``, else ``$XDG_CACHE_HOME/hlodsl/xla`` (default
  ``~/.cache/hlodsl/xla``). ``HLODSL_CACHE_DIR=""`` switches it off;
  ``hlodsl.config.persistent_cache`` (True/False) does the same at run time.
- Bounded: ``hlodsl.config.persistent_cache_bytes`` (default 1 GiB); past it
  the least recently used entries are deleted.
- Safe to lose: a corrupt, truncated or unreadable entry is ignored with a
  ``CacheWarning`` and deleted, and the module is compiled again. An entry
  is written to a temporary file and renamed, so readers never see half of
  one. Loading an executable runs its code: the directory is created private
  (mode 0700), and one writable by others is refused with a warning.

>>> import hlodsl as hd
>>> key("HloModule m", ("0.10.2", "cpu", 1)) == key("HloModule m", ("0.10.2", "cpu", 1))
True
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import threading
import warnings
from pathlib import Path

__all__ = ["directory", "key", "load", "store", "CacheWarning", "stats", "clear"]

_MAGIC = b"hlodsl-xla-cache-1\n"

#: Hits, misses and writes of this process (tests and benchmarks read them).
stats = {"hits": 0, "misses": 0, "writes": 0}

_LOCK = threading.Lock()


class CacheWarning(UserWarning):
    """A persistent cache entry or directory could not be used (the program still runs)."""


def directory() -> Path | None:
    """The cache directory in use, or None when the cache is off."""
    from hlodsl.settings import config

    if not config.persistent_cache:
        return None
    env = os.environ.get("HLODSL_CACHE_DIR")
    if env is not None:
        return Path(env).expanduser() if env.strip() else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hlodsl" / "xla"


def key(text: str, environment: tuple) -> str:
    """The entry name of a module: a hash of its text and of what else decides the code
    (``environment``: the runtime's versions, platform, devices and options)."""
    h = hashlib.sha256()
    for part in (_MAGIC.decode(), os.environ.get("XLA_FLAGS", ""), repr(environment), text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _ready(d: Path) -> bool:
    """Create ``d`` (private) if needed; False if it cannot be used safely."""
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = d.stat()
    except OSError as e:
        warnings.warn(CacheWarning(f"persistent compile cache off: cannot use {d}: {e}"))
        return False
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or st.st_uid != os.getuid():
        warnings.warn(CacheWarning(
            f"persistent compile cache off: {d} is writable by others or not yours, and "
            "loading a cached executable runs its code (set HLODSL_CACHE_DIR to a private "
            "directory)"))
        return False
    return True


def load(name: str) -> bytes | None:
    """The serialized executable stored under ``name``, or None."""
    d = directory()
    if d is None:
        return None
    path = d / f"{name}.xla"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        stats["misses"] += 1
        return None
    except OSError as e:
        warnings.warn(CacheWarning(f"persistent compile cache: cannot read {path}: {e}"))
        stats["misses"] += 1
        return None
    digest, payload = data[len(_MAGIC):len(_MAGIC) + 32], data[len(_MAGIC) + 32:]
    if not data.startswith(_MAGIC) or hashlib.sha256(payload).digest() != digest:
        warnings.warn(CacheWarning(f"persistent compile cache: {path} is corrupt; it is "
                                   "deleted and the module compiled again"))
        _remove(path)
        stats["misses"] += 1
        return None
    try:
        os.utime(path)  # recently used: evicted last
    except OSError:
        pass
    stats["hits"] += 1
    return payload


def store(name: str, payload: bytes) -> None:
    """Write an entry (atomically), then trim the directory to its size bound."""
    d = directory()
    if d is None or not _ready(d):
        return
    data = _MAGIC + hashlib.sha256(payload).digest() + payload
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".xla")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, d / f"{name}.xla")
    except OSError as e:
        warnings.warn(CacheWarning(f"persistent compile cache: cannot write to {d}: {e}"))
        return
    stats["writes"] += 1
    _trim(d)


def _trim(d: Path) -> None:
    from hlodsl.settings import config

    with _LOCK:
        try:
            entries = [(p.stat().st_mtime, p.stat().st_size, p) for p in d.glob("*.xla")]
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries, key=lambda e: e[0]):
            if total <= config.persistent_cache_bytes:
                break
            _remove(path)
            total -= size


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def clear() -> int:
    """Delete every entry of the cache directory; returns how many there were."""
    d = directory()
    if d is None or not d.is_dir():
        return 0
    n = 0
    for p in d.glob("*.xla"):
        _remove(p)
        n += 1
    return n
