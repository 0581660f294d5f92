"""Checkpoints: ``save(path, tree)`` and ``load(path, like=tree)`` for structures of arrays.

A checkpoint is an ``.npz`` file (a zip of ``.npy`` arrays, what ``np.savez``
writes): one entry per array, named by its path in the structure
(``tree['layers'][0].W``), and one entry ``__hlodsl__`` of JSON that lists
the paths with their element types and shapes. numpy reads every entry
(``np.load``); element types numpy has no name for in ``.npy`` files
(bfloat16, float8s, int4...) are stored as their raw bytes and rebuilt from
the JSON. The other values of the structure are saved in that JSON too, each
at its path: Python numbers (floats exactly, ``nan`` and ``-0.0`` included;
ints of any size), numpy scalars (of any element type hlodsl knows, by their
bytes), strings and ``None``; anything else (a function, an object, bytes) is
refused by its path before a file is opened. (A tree of arrays alone is
written as format 1, as the first hlodsl wrote it; one with other values as
format 2.)

``save`` writes a temporary file next to ``path`` and renames it over
``path`` once complete (``os.replace``), so a crash leaves the old
checkpoint or the new one, never half of one; the temporary file of a save
that died is removed by the next ``save`` or ``load`` of that path (a writer
holds a lock on its file while it lives, so a running save's is kept).
``load`` refuses a checkpoint whose contents are not those of ``like`` (a
path missing or extra, a shape or an element type that differs, an array
where like has a value or the reverse), naming the path; a damaged or
truncated file is a ``CheckpointError``.

>>> import numpy as np, hlodsl as hd, tempfile, os
>>> params = {"w": hd.array(np.ones((2, 3), np.float32)), "layers": [hd.array([1.0, 2.0])]}
>>> path = os.path.join(tempfile.mkdtemp(), "params.npz")
>>> hd.save(path, params)
>>> hd.load(path, like=params)["layers"][0]
hlodsl.Array[float64, (2,)]([1., 2.])
>>> hd.save(path, {"step": 7, "lr": 1.5, "w": params["w"]})
>>> hd.load(path, like={"step": 0, "lr": 0.0, "w": params["w"]})["step"]
7
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
import zipfile

import numpy as np

from hlodsl import runtime
from hlodsl.arrays.array import Array, array_class, sharded_class
from hlodsl.arrays.dtypes import element_type
from hlodsl.arrays.tree import flatten, leaf_paths, static_paths, unflatten
from hlodsl.arrays.types import ArrayType
from hlodsl.errors import CheckpointError

try:
    import fcntl
except ImportError:  # (Windows: the temporary files of dead saves go by age instead)
    fcntl = None

__all__ = ["save", "load"]

#: The entry that describes the checkpoint (JSON: the paths, element types and shapes,
#: and the values that are not arrays).
META = "__hlodsl__"
#: Format 1 holds arrays only; format 2 adds ``statics`` (the other values, by path).
FORMAT = 2
BASE = "tree"
#: Without file locks, a temporary file this old (seconds) belongs to a dead save.
_STALE_S = 3600


def save(path, tree) -> None:
    """Write the arrays of ``tree`` (dicts, lists, tuples, attrs classes) to ``path``.

    Sharded arrays are gathered (every shard must be in this process); the
    file is written whole to a temporary name, then renamed to ``path``.

    >>> import hlodsl as hd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.npz")
    >>> hd.save(path, {"step": hd.array(3), "w": hd.array([0.5])})
    >>> with np.load(path) as entries:   # numpy reads it
    ...     sorted(entries.files)
    ['__hlodsl__', "tree['step']", "tree['w']"]
    """
    path = os.fspath(path)
    try:
        leaves, treedef = flatten(tree)
    except TypeError as e:  # an unhashable value that is not a container (a set...)
        raise CheckpointError(f"save: {e}; a checkpoint holds arrays, numbers, numpy scalars, "
                              "strings and None") from None
    statics = [{"path": p, "value": _static_json(v, p)} for p, v in static_paths(treedef, BASE)]
    entries, described = {}, []
    for name, leaf in zip(leaf_paths(treedef, BASE), leaves):
        host = _host(leaf, name)
        described.append({"path": name, "dtype": host.dtype.name, "shape": list(host.shape)})
        entries[name] = host if _npy_native(host.dtype) else host.reshape(-1).view(np.uint8)
    contents = {"format": 2, "arrays": described, "statics": statics} if statics else \
        {"format": 1, "arrays": described}  # arrays alone: readable by the first hlodsl too
    meta = json.dumps(contents).encode()
    entries = {META: np.frombuffer(meta, np.uint8), **entries}
    directory = os.path.dirname(os.path.abspath(path))
    _sweep(directory, os.path.basename(path))
    f, tmp = _locked_temporary(directory, os.path.basename(path))
    try:
        with f:
            with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
                for name, host in entries.items():
                    with z.open(name + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, host, allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
            os.replace(tmp, path)  # while the lock is held: no sweep takes it meanwhile
        _fsync_directory(directory)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


# -- values that are not arrays, as JSON ---------------------------------------------------

def _static_json(value, path: str) -> dict:
    t = type(value)
    if value is None:
        return {"none": True}
    if t is bool:
        return {"bool": value}
    if t is int:
        return {"int": str(value)}  # any size, exactly
    if t is float:
        return {"float": value.hex()}  # nan, inf and -0.0 exactly
    if t is complex:
        return {"complex": [value.real.hex(), value.imag.hex()]}
    if t is str:
        return {"str": value}
    if isinstance(value, np.generic) and not isinstance(value, (np.str_, np.bytes_, np.void)):
        try:
            dtype = element_type(value.dtype).np_dtype
        except TypeError:
            dtype = None
        if dtype is not None:
            return {"numpy": dtype.name, "bytes": np.asarray(value, dtype).tobytes().hex()}
    what = "a function" if callable(value) else f"a {t.__module__}.{t.__qualname__}" \
        if t.__module__ != "builtins" else f"a {t.__name__}"
    raise CheckpointError(f"save: {path} is {what} ({value!r:.60}); a checkpoint holds arrays, "
                          "Python numbers, numpy scalars, strings and None")


def _static_from_json(j: dict):
    (kind, value), = ((k, v) for k, v in j.items() if k != "bytes")
    if kind == "none":
        return None
    if kind == "bool":
        return bool(value)
    if kind == "int":
        return int(value)
    if kind == "float":
        return float.fromhex(value)
    if kind == "complex":
        return complex(float.fromhex(value[0]), float.fromhex(value[1]))
    if kind == "str":
        return str(value)
    if kind == "numpy":
        dtype = element_type(value).np_dtype
        return np.frombuffer(bytes.fromhex(j["bytes"]), dtype)[0]
    raise ValueError(f"unknown kind of value {kind!r}")


# -- temporary files, and those of saves that died ---------------------------------------------

def _tmp_pattern(basename: str):
    return re.compile(rf"^\.{re.escape(basename)}\.[0-9a-f]{{32}}\.tmp$")


def _locked_temporary(directory: str, basename: str):
    """A new temporary file for ``basename``, locked for as long as it is open."""
    while True:
        tmp = os.path.join(directory, f".{basename}.{uuid.uuid4().hex}.tmp")
        f = open(tmp, "xb")
        if fcntl is None:
            return f, tmp
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        # A sweep may have taken the file between its creation and the lock: start again.
        if os.fstat(f.fileno()).st_nlink > 0:
            return f, tmp
        f.close()


def _sweep(directory: str, basename: str) -> None:
    """Remove the temporary files that saves of ``basename`` left when they died."""
    pattern = _tmp_pattern(basename)
    try:
        names = [n for n in os.listdir(directory) if pattern.match(n)]
    except OSError:
        return
    for name in names:
        tmp = os.path.join(directory, name)
        try:
            if fcntl is None:
                if time.time() - os.stat(tmp).st_mtime > _STALE_S:
                    os.remove(tmp)
                continue
            with open(tmp, "rb") as f:
                try:
                    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a save that is still running holds it
                if os.path.exists(tmp) and os.path.samestat(os.stat(tmp), os.fstat(f.fileno())):
                    os.remove(tmp)
        except OSError:
            continue  # gone already, or not ours to remove


def _fsync_directory(directory: str) -> None:
    """Make the rename survive a power cut (where the system allows it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load(path, like=None):
    """The arrays saved at ``path``, in the structure of ``like``.

    Each array of ``like`` is replaced by the saved array at its path, which
    must have its shape and element type; it lands where that array is (its
    device, or its sharding). Without ``like``, a dict from path to array.

    >>> import hlodsl as hd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.npz")
    >>> hd.save(path, {"w": hd.array([0.5])})
    >>> hd.load(path, like={"w": hd.array([0.0, 0.0])})
    Traceback (most recent call last):
    ValueError: load: tree['w'] has shape (1,) in the checkpoint ..., but like's has shape (2,)
    >>> hd.load(path)
    {"tree['w']": hlodsl.Array[float64, (1,)]([0.5])}
    """
    path = os.fspath(path)
    _sweep(os.path.dirname(os.path.abspath(path)), os.path.basename(path))
    described, statics, hosts = _read(path)
    if like is None:
        out = {name: _device(host, None, name) for name, host in hosts.items()}
        return {**out, **statics}
    leaves, treedef = flatten(like)
    names = leaf_paths(treedef, BASE)
    like_statics = static_paths(treedef, BASE)
    _check_paths(names, list(hosts), path, statics, [p for p, _ in like_statics])
    out = []
    for name, leaf in zip(names, leaves):
        host = hosts[name]
        if not isinstance(leaf, Array):
            raise TypeError(f"load: like= holds {type(leaf).__name__} at {name}, not an array")
        if host.shape != leaf.shape:
            raise ValueError(f"load: {name} has shape {host.shape} in the checkpoint {path}, "
                             f"but like's has shape {leaf.shape}")
        if element_type(host.dtype) is not leaf.dtype:
            raise ValueError(f"load: {name} is {element_type(host.dtype).__name__} in the "
                             f"checkpoint {path}, but like's is {leaf.dtype.__name__}")
        out.append(_device(host, leaf, name))
    if described["format"] == 1:  # saved without values: like's stay
        return unflatten(treedef, out)
    return unflatten(treedef, out, statics=[statics[p] for p, _ in like_statics])


def _read(path: str):
    """``(description, values by path, arrays by path)`` of the checkpoint at ``path``; a
    file that cannot be read as one is a ``CheckpointError`` saying why."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if not hasattr(data, "files"):
                raise CheckpointError(f"load: {path} is a single .npy array, not an hlodsl "
                                      "checkpoint")
            described = _describe(data, path)
            hosts = {d["path"]: _host_of(data, d) for d in described["arrays"]}
            statics = {d["path"]: _static_from_json(d["value"])
                       for d in described.get("statics", [])}
    except (CheckpointError, FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as e:  # noqa: BLE001 (zip, npy and JSON each fail their own way)
        raise CheckpointError(f"load: {path} is damaged or truncated ({type(e).__name__}: "
                              f"{e})") from None
    return described, statics, hosts


def _host(leaf, name: str) -> np.ndarray:
    if not isinstance(leaf, Array):
        raise TypeError(f"save: {name} is a {type(leaf).__name__}; a checkpoint holds arrays")
    if leaf.is_symbolic:
        leaf._require_value(f"save ({name})", "Save the arrays a compiled function returns")
    if leaf.sharding is not None and not runtime.is_fully_addressable(leaf._buf):
        raise ValueError(f"save: {name} ({leaf.type}) is sharded over devices of several "
                         "processes; gather it first (compile with out_shardings replicated) "
                         "or save each process's .addressable_shards")
    return np.asarray(leaf)


def _npy_native(dtype: np.dtype) -> bool:
    """Whether a ``.npy`` file keeps ``dtype`` (numpy's own types: not ml_dtypes', which
    it writes as raw void bytes)."""
    return np.dtype(dtype.str) == dtype


def _describe(data, path: str) -> dict:
    if META not in data.files:
        raise CheckpointError(f"load: {path} is not an hlodsl checkpoint (it has no {META!r} "
                              "entry; hd.save writes one)")
    meta = json.loads(data[META].tobytes())
    if not isinstance(meta, dict) or meta.get("format") not in (1, 2):
        fmt = meta.get("format") if isinstance(meta, dict) else None
        raise CheckpointError(f"load: {path} is a checkpoint of format {fmt!r}; this hlodsl "
                              f"reads formats 1 and {FORMAT}" +
                              (": upgrade hlodsl to load it" if isinstance(fmt, int) and
                               fmt > FORMAT else ""))
    arrays = meta.get("arrays")
    if not isinstance(arrays, list) or not all(
            isinstance(d, dict) and isinstance(d.get("path"), str)
            and isinstance(d.get("dtype"), str) and isinstance(d.get("shape"), list)
            for d in arrays):
        raise CheckpointError(f"load: {path}: its description of the arrays is damaged")
    statics = meta.get("statics", [])
    if not isinstance(statics, list) or not all(
            isinstance(d, dict) and isinstance(d.get("path"), str)
            and isinstance(d.get("value"), dict) for d in statics):
        raise CheckpointError(f"load: {path}: its description of the values is damaged")
    return meta


def _host_of(data, d: dict) -> np.ndarray:
    dtype = element_type(d["dtype"]).np_dtype
    stored = data[d["path"]]
    if _npy_native(dtype):
        return stored
    return stored.view(dtype).reshape(d["shape"])


def _check_paths(names: list[str], saved: list[str], path: str, statics: dict,
                 like_statics: list[str]) -> None:
    for n in names:  # an array in like where the checkpoint has a value, or the reverse
        if n in statics:
            raise ValueError(f"load: like= has an array at {n}, but the checkpoint {path} holds "
                             f"the value {statics[n]!r} there")
    for n in like_statics:
        if n in set(saved):
            raise ValueError(f"load: like= has a value at {n}, but the checkpoint {path} holds "
                             "an array there")
    missing = [n for n in names if n not in set(saved)]
    extra = [n for n in saved if n not in set(names)]
    if statics:  # (a format-1 checkpoint holds no values: like's stay)
        missing += [n for n in like_statics if n not in statics]
        extra += [n for n in statics if n not in set(like_statics)]
    if missing or extra:
        said = []
        if missing:
            said.append(f"has no {_listed(missing)}")
        if extra:
            said.append(f"holds {_listed(extra)}, which like= does not have")
        raise ValueError(f"load: the checkpoint {path} {' and '.join(said)}; like= must have "
                         "the structure the checkpoint was saved with (its arrays and values, "
                         "at the same paths)")


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:5])
    return shown + (f" (and {len(names) - 5} more)" if len(names) > 5 else "")


def _device(host: np.ndarray, like, name: str) -> Array:
    """``host`` as an array placed as ``like`` is (its device, or its sharding)."""
    t = ArrayType(element_type(host.dtype), host.shape)
    sharding = None if like is None else like.sharding
    if sharding is not None:
        buf = runtime.put_sharded(host, sharding)
        cls = sharded_class(t) if runtime.is_sharded(buf) else array_class(t)
    else:
        device = 0 if like is None else runtime.device_index(like._require_value(f"load ({name})"))
        buf, cls = runtime.to_device(host, device=device, private=True), array_class(t)
    a = object.__new__(cls)
    a._buf, a._node = buf, None
    return a
