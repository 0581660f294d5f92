"""Checkpoints: ``save(path, tree)`` and ``load(path, like=tree)`` for structures of arrays.

A checkpoint is an ``.npz`` file (a zip of ``.npy`` arrays, what ``np.savez``
writes): one entry per array, named by its path in the structure
(``tree['layers'][0].W``), and one entry ``__hlodsl__`` of JSON that lists
the paths with their element types and shapes. numpy reads every entry
(``np.load``); element types numpy has no name for in ``.npy`` files
(bfloat16, float8s, int4...) are stored as their raw bytes and rebuilt from
the JSON. Only arrays are saved: other values in the structure (ints,
strings, ``None``) come back from ``like``.

``save`` writes a temporary file next to ``path`` and renames it over
``path`` once complete (``os.replace``), so a crash leaves the old
checkpoint or the new one, never half of one. ``load`` refuses a checkpoint
whose arrays are not those of ``like`` (a path missing or extra, a shape or
an element type that differs), naming the path.

>>> import numpy as np, hlodsl as hd, tempfile, os
>>> params = {"w": hd.array(np.ones((2, 3), np.float32)), "layers": [hd.array([1.0, 2.0])]}
>>> path = os.path.join(tempfile.mkdtemp(), "params.npz")
>>> hd.save(path, params)
>>> hd.load(path, like=params)["layers"][0]
hlodsl.Array[float64, (2,)]([1., 2.])
"""

from __future__ import annotations

import json
import os
import uuid
import zipfile

import numpy as np

from hlodsl import runtime
from hlodsl.arrays.array import Array, array_class, sharded_class
from hlodsl.arrays.dtypes import element_type
from hlodsl.arrays.tree import flatten, leaf_paths, unflatten
from hlodsl.arrays.types import ArrayType

__all__ = ["save", "load"]

#: The entry that describes the checkpoint (JSON: the paths, element types and shapes).
META = "__hlodsl__"
FORMAT = 1
BASE = "tree"


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
    leaves, treedef = flatten(tree)
    entries, described = {}, []
    for name, leaf in zip(leaf_paths(treedef, BASE), leaves):
        host = _host(leaf, name)
        described.append({"path": name, "dtype": host.dtype.name, "shape": list(host.shape)})
        entries[name] = host if _npy_native(host.dtype) else host.reshape(-1).view(np.uint8)
    meta = json.dumps({"format": FORMAT, "arrays": described}).encode()
    entries = {META: np.frombuffer(meta, np.uint8), **entries}
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)),
                       f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "xb") as f:
            with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
                for name, host in entries.items():
                    with z.open(name + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, host, allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


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
    with np.load(path, allow_pickle=False) as data:
        described = _describe(data, path)
        hosts = {d["path"]: _host_of(data, d) for d in described}
    if like is None:
        return {name: _device(host, None, name) for name, host in hosts.items()}
    leaves, treedef = flatten(like)
    names = leaf_paths(treedef, BASE)
    _check_paths(names, list(hosts), path)
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
    return unflatten(treedef, out)


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


def _describe(data, path: str) -> list[dict]:
    if META not in data.files:
        raise ValueError(f"load: {path} is not an hlodsl checkpoint (it has no {META!r} entry; "
                         "hd.save writes one)")
    meta = json.loads(data[META].tobytes())
    if meta.get("format") != FORMAT:
        raise ValueError(f"load: {path} is a checkpoint of format {meta.get('format')!r}; this "
                         f"hlodsl reads format {FORMAT}")
    return meta["arrays"]


def _host_of(data, d: dict) -> np.ndarray:
    dtype = element_type(d["dtype"]).np_dtype
    stored = data[d["path"]]
    if _npy_native(dtype):
        return stored
    return stored.view(dtype).reshape(d["shape"])


def _check_paths(names: list[str], saved: list[str], path: str) -> None:
    missing = [n for n in names if n not in set(saved)]
    extra = [n for n in saved if n not in set(names)]
    if missing or extra:
        said = []
        if missing:
            said.append(f"has no {_listed(missing)}")
        if extra:
            said.append(f"holds {_listed(extra)}, which like= does not have")
        raise ValueError(f"load: the checkpoint {path} {' and '.join(said)}; like= must have "
                         "the structure the checkpoint was saved with (its arrays, at the "
                         "same paths)")


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
