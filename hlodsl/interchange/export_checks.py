"""What ``hd.deserialize`` checks before it believes an artifact's metadata.

The metadata of serialized bytes is JSON anyone can edit, and its SHA-256 only
catches accidental damage (whoever crafts the bytes writes the digest too). So
every field is checked for its shape (``check_metadata``: a malformed field is
an ``ExportError`` naming it), and the types of the arguments and results are
compared with those of the StableHLO program itself, read in a child process
(``hlodsl.runtime.isolated``): metadata that says ``int32[3]`` where the
program returns ``f32[3]`` is refused (``check_types``), never believed.

>>> check_metadata({"versions": {"stablehlo": "1.17.0"}})
Traceback (most recent call last):
hlodsl.errors.ExportError: deserialize: the metadata has no field 'name'
"""

from __future__ import annotations

import re

from hlodsl.arrays.dtypes import element_type, from_hlo
from hlodsl.arrays.types import ArrayType
from hlodsl.errors import ExportError

__all__ = ["check_metadata", "check_types", "guarded", "program_types"]

_FIELDS = ("versions", "name", "platform", "in_tree", "in_types", "in_paths", "in_shardings",
           "out_tree", "out_types", "out_shardings", "artifact")


def _bad(field: str, why: str):
    raise ExportError(f"deserialize: metadata field {field}: {why}")


def _is_int(x) -> bool:
    return type(x) is int


def check_metadata(meta: dict) -> dict:
    """``meta`` if every field has the shape ``Exported.serialize`` writes, else
    ``ExportError`` naming the first that does not."""
    for key in _FIELDS:
        if key not in meta:
            raise ExportError(f"deserialize: the metadata has no field {key!r}")
    versions = meta["versions"]
    if not isinstance(versions, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in versions.items()):
        _bad("versions", "must map names to version strings")
    if "stablehlo" not in versions:
        _bad("versions", "has no 'stablehlo' (the program's StableHLO version)")
    if not re.fullmatch(r"\d+(\.\d+)*", versions["stablehlo"]):
        _bad("versions.stablehlo", f"{versions['stablehlo']!r} is not a version number")
    for key in ("name", "platform"):
        if not isinstance(meta[key], str):
            _bad(key, f"must be a string, got {type(meta[key]).__name__}")
    for key in ("in_types", "out_types"):
        types = meta[key]
        if not isinstance(types, list):
            _bad(key, "must be a list")
        for i, t in enumerate(types):
            _check_type(t, f"{key}[{i}]")
    paths = meta["in_paths"]
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        _bad("in_paths", "must be a list of strings")
    if len(paths) != len(meta["in_types"]):
        _bad("in_paths", f"names {len(paths)} arguments but in_types has "
                         f"{len(meta['in_types'])}")
    for key, n in (("in_shardings", len(meta["in_types"])),
                   ("out_shardings", len(meta["out_types"]))):
        if not isinstance(meta[key], list) or len(meta[key]) != n:
            _bad(key, f"must be a list of {n} entries (one per array)")
    donated = meta.get("donated", [])
    if not isinstance(donated, list) or not all(
            _is_int(d) and 0 <= d < len(meta["in_types"]) for d in donated):
        _bad("donated", "must list argument indices")
    artifact = meta["artifact"]
    if not isinstance(artifact, dict) or not _is_int(artifact.get("bytes")) \
            or artifact["bytes"] < 0:
        _bad("artifact", "must give the program's length in bytes")
    if not isinstance(artifact.get("sha256"), str) or \
            not re.fullmatch(r"[0-9a-f]{64}", artifact["sha256"]):
        _bad("artifact.sha256", "must be 64 hexadecimal digits")
    return meta


def _check_type(t, field: str) -> None:
    if not isinstance(t, dict) or set(t) != {"dtype", "shape"}:
        _bad(field, "must be {\"dtype\": ..., \"shape\": [...]}")
    try:
        element_type(t["dtype"]) if isinstance(t["dtype"], str) else _bad(
            f"{field}.dtype", "must be a string")
    except TypeError:
        _bad(f"{field}.dtype", f"{t['dtype']!r} is not an element type")
    shape = t["shape"]
    if not isinstance(shape, list) or not all(_is_int(d) and 0 <= d < 2 ** 62 for d in shape):
        _bad(f"{field}.shape", f"{shape!r} is not a list of dimension sizes")


def guarded(field: str, read, value):
    """``read(value)``, a malformed ``value`` an ``ExportError`` naming ``field``."""
    try:
        return read(value)
    except ExportError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError,
            RecursionError) as e:
        _bad(field, f"cannot be read ({type(e).__name__}: {e})")


_XLA_ARRAY = re.compile(r"^\s*([a-z]+[0-9a-z]*)\[([0-9,]*)\](?:\{[^}]*\})?\s*$")


def _xla_array(text: str) -> ArrayType:
    m = _XLA_ARRAY.match(text)
    if m is None:
        raise ExportError(f"deserialize: the program has a value of type {text}, which an "
                          "exported program cannot take or return (arrays of static shape)")
    try:
        dtype = from_hlo(m[1])
    except TypeError:
        raise ExportError(f"deserialize: the program has a value of element type {m[1]}, "
                          "which hlodsl does not know") from None
    return ArrayType(dtype, tuple(int(d) for d in m[2].split(",") if d))


def program_types(params: list, result: str) -> tuple[list, list]:
    """The argument and result types of a program, from the types XLA prints for its
    parameters and its result (a tuple type for several results)."""
    ins = [_xla_array(p) for p in params]
    text = re.sub(r"/\*index=\d+\*/", "", result).strip()
    if text.startswith("("):
        inner = text[1:text.rindex(")")]
        outs = [_xla_array(p) for p in inner.split(", ") if p.strip()] if inner.strip() else []
    else:
        outs = [_xla_array(text)]
    return ins, outs


def check_types(in_types: list, out_types: list, program_ins: list, program_outs: list) -> None:
    """The metadata's types are the program's, or ``ExportError`` naming the first that
    is not."""
    for key, said, real, verb in (("in_types", in_types, program_ins, "takes"),
                                  ("out_types", out_types, program_outs, "returns")):
        if len(said) != len(real):
            raise ExportError(f"deserialize: metadata field {key} lists {len(said)} arrays but "
                              f"the program {verb} {len(real)}")
        for i, (a, b) in enumerate(zip(said, real)):
            if a != b:
                raise ExportError(f"deserialize: metadata field {key}[{i}] says {a} but the "
                                  f"program {verb} {b} there")
