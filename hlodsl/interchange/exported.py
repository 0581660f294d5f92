"""Exported programs: a staged function saved as versioned bytes that run elsewhere.

``export(f, *args)`` stages ``f`` for the types of ``args`` (arrays, or
``hd.ArrayType``s in their place) into an ``Exported``: the program as a
StableHLO portable artifact, and what calling it needs (the structure of the
arguments and results, the type of every array in them, their shardings).
``Exported.serialize()`` gives bytes; ``deserialize(data)`` gives back an
``Exported`` that runs in a fresh process, without the Python source of ``f``.

>>> import numpy as np, hlodsl as hd
>>> def f(x, y):
...     return {"sum": x + y, "max": hd.stdlib.max(x)}
>>> exported = hd.export(f, hd.ArrayType(hd.float32, (2,)), hd.array(np.float32([1, 2])))
>>> exported
Exported(f(x: f32[2], y: f32[2]) -> {'sum': f32[2], 'max': f32[]})
>>> g = hd.deserialize(exported.serialize())
>>> g(hd.array(np.float32([1, 5])), hd.array(np.float32([1, 2])))["sum"]
hlodsl.Array[float32, (2,)]([2., 7.])

The bytes (integers little-endian) are::

    magic     8 bytes   b"HLODSLX\\n"
    format    uint16    FORMAT: the version of this layout
    length    uint32    the length of the metadata
    metadata  JSON      versions, structure, types, shardings, the artifact's digest
    artifact  bytes     the StableHLO portable artifact (versioned MLIR bytecode)

Every future format keeps magic, format, length and a JSON object with
``"versions"`` first, so that any hlodsl can say which hlodsl wrote bytes it
cannot read. The artifact is what StableHLO's own tools read
(``stablehlo-translate --deserialize``; ``Exported.artifact()`` gives it alone).
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading

from hlodsl.arrays.array import Array, ConsumedBuffer, array_class
from hlodsl.arrays.pytrees import NodeText
from hlodsl.arrays.tree import (
    LEAF,
    PYTREE,
    _Static,
    abstract,
    children_of,
    flatten,
    leaf_paths,
    unflatten,
)
from hlodsl.arrays.types import ArrayType
from hlodsl.compilation.call import aliases
from hlodsl.compilation.compiler import Compiled, _convert, any_sharded, build_entry
from hlodsl.errors import ExportError
from hlodsl.interchange.export_checks import check_metadata, check_types, guarded, program_types
from hlodsl.interchange.tree_json import (
    _in_tree_json,
    _positional_names,
    _tree_from_json,
    _tree_json,
    _type_from_json,
    _type_json,
)
from hlodsl.ir.printer import module_text
from hlodsl.ir.staging import stage
from hlodsl.ir.target import platform_name, runtime_platform, staging_platform

__all__ = ["FORMAT", "MAGIC", "TARGET", "Exported", "deserialize", "export"]

MAGIC = b"HLODSLX\n"
#: The layout of the bytes ``serialize`` writes; ``deserialize`` reads this one only
#: (format 1 is the first: there is no older one to read yet).
FORMAT = 1
_HEADER = struct.Struct("<8sHI")

#: The StableHLO version artifacts are written for: that of jaxlib 0.10.2, the oldest
#: release hlodsl supports, so an artifact written on any supported stack loads on
#: every other (StableHLO reads older versions for years; newer ones not at all), unless
#: the program needs a newer one (export says which it wrote).
TARGET = "1.17.0"


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split(".") if p.isdigit())


def _hlodsl_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("hlodsl")
    except metadata.PackageNotFoundError:  # run from a source tree
        return "unknown"


# -- the exported program -------------------------------------------------------------

class Exported:
    """A program exported by ``export`` or read back by ``deserialize``; call it like
    the function it was exported from, with arguments of the exported types.

    ``in_types``/``out_types`` are the arrays' types in flattening order,
    ``in_paths``/``out_paths`` their names (``params['w']``, ``out[1]``),
    ``in_shardings``/``out_shardings`` their layouts (None: one device),
    ``donated`` the indices (in ``in_types``) of the arrays whose buffers a call takes
    over for its results (``donate_argnums`` of the ``hd.compile``d function exported:
    after a call they read as donated, ``hd.DonatedArrayError``),
    ``versions`` the hlodsl, jax, jaxlib and StableHLO versions that wrote it.
    """

    def __init__(self, name: str, in_tree, in_types: tuple, in_paths: tuple, out_tree,
                 out_types: tuple, artifact: bytes, versions: dict, platform: str):
        self.name = name
        self.in_tree, self.in_types, self.in_paths = in_tree, tuple(in_types), tuple(in_paths)
        self.out_tree, self.out_types = out_tree, tuple(out_types)
        self.out_paths = tuple(leaf_paths(out_tree, "out"))
        self.in_shardings = (None,) * len(self.in_types)
        self.out_shardings = (None,) * len(self.out_types)
        self.donated: tuple[int, ...] = ()
        self.versions = dict(versions)
        self.platform = platform
        self._artifact = artifact
        self._in_classes = tuple(array_class(t) for t in self.in_types)
        self._exe = None
        self._lock = threading.Lock()
        #: What the child process read of an artifact from outside (``deserialize``):
        #: its HLO text and its module, as bytecode the child wrote; None when exported here.
        self._reading = None

    # -- what the program is ---------------------------------------------------------

    def artifact(self) -> bytes:
        """The StableHLO portable artifact alone (what ``stablehlo-translate
        --deserialize`` and jaxlib's ``stablehlo.deserialize_portable_artifact`` read)."""
        return self._artifact

    def mlir_text(self) -> str:
        """The program as StableHLO MLIR text (``func.func @main(...)``)."""
        from hlodsl.runtime import (
            UntrustedInputError,
            artifact_mlir_text,
            artifact_mlir_text_isolated,
        )

        if self._reading is None:  # exported by this process
            return artifact_mlir_text(self._artifact)
        try:  # bytes from outside: printed by the child that read them
            return artifact_mlir_text_isolated(self._artifact)
        except UntrustedInputError as e:
            raise ExportError(f"{self.name} (exported): cannot print its StableHLO: {e}") \
                from None

    def hlo_text(self) -> str:
        """The program as HLO module text, converted from its StableHLO by jaxlib (what
        ``hd.import_hlo`` reads). XLA's printer writes a ``-0.0`` constant as ``-0``, which
        its parser reads as ``0.0``: calls compile the StableHLO itself, not this text."""
        from hlodsl.runtime import artifact_module, stablehlo_text

        if self._reading is not None:  # read from outside, in a child process
            return self._reading.hlo_text
        return stablehlo_text(artifact_module(self._artifact))

    def __repr__(self) -> str:
        ins = ", ".join(f"{p}: {t}" for p, t in zip(self.in_paths, self.in_types))
        outs = unflatten(self.out_tree, [_Shown(t) for t in self.out_types], node=NodeText)
        return f"Exported({self.name}({ins}) -> {outs!r})"

    # -- bytes -------------------------------------------------------------------------

    def serialize(self) -> bytes:
        """The versioned bytes of this program (see the module's docstring)."""
        meta = {
            "versions": self.versions,
            "name": self.name,
            "platform": self.platform,
            "in_tree": _in_tree_json(self.in_tree, [], self.name),
            "in_types": [_type_json(t) for t in self.in_types],
            "in_paths": list(self.in_paths),
            "in_shardings": list(self.in_shardings),
            "out_tree": _tree_json(self.out_tree, "result out", self.name),
            "out_types": [_type_json(t) for t in self.out_types],
            "out_shardings": list(self.out_shardings),
            "donated": list(self.donated),
            "artifact": {"bytes": len(self._artifact),
                         "sha256": hashlib.sha256(self._artifact).hexdigest()},
        }
        data = json.dumps(meta, sort_keys=True).encode()
        return _HEADER.pack(MAGIC, FORMAT, len(data)) + data + self._artifact

    def __reduce__(self):  # pickles as its bytes: the executable stays in this process
        return (deserialize, (self.serialize(),))

    # -- calling ---------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        leaves, tree = flatten((args, kwargs))
        if tree != self.in_tree:  # numbers given for arrays (np.float32(3), 0.5)? lift them
            lifted = _lift(self.in_tree, (args, kwargs), iter(self.in_types))
            leaves, lifted_tree = flatten(lifted)
            if lifted_tree != self.in_tree:
                raise TypeError(self._structure_error(*flatten((args, kwargs))))
        if tuple(map(type, leaves)) != self._in_classes:
            self._check_leaves(leaves)
        for path, a in zip(self.in_paths, leaves):
            if a._buf is None:
                raise TypeError(f"{self.name} (exported): argument {path} is a symbolic array: "
                                "an exported program runs on arrays, not inside hd.compile or "
                                "a transformation (its hlo_text() is the program to import "
                                "for that)")
        bufs = [a._buf for a in leaves]
        for j in self.donated:
            if any(b is bufs[j] for k, b in enumerate(bufs) if k != j):
                raise ValueError(f"{self.name} (exported): the donated argument "
                                 f"{self.in_paths[j]} is also passed as another argument: a "
                                 "buffer handed over to the results cannot be read by the "
                                 "same call (pass a copy)")
        outs = self._executable().execute(bufs)
        for j in self.donated:  # their buffers are the results' now
            leaves[j]._buf = ConsumedBuffer(f"{self.name} (exported)")
        return unflatten(self.out_tree, [Array._from_buffer(b, t)
                                         for b, t in zip(outs, self.out_types)])

    def _check_leaves(self, leaves) -> None:
        for path, a, t in zip(self.in_paths, leaves, self.in_types):
            if not isinstance(a, Array):
                raise TypeError(f"{self.name} (exported): argument {path} must be an array "
                                f"of type {t}, got {type(a).__name__}")
            if a.type != t:
                raise TypeError(f"{self.name} (exported): argument {path} must be {t} as "
                                f"exported, got {a.type}")
            if getattr(type(a), "_sharded", False):
                raise TypeError(f"{self.name} (exported): argument {path} is sharded over "
                                "several devices; the program was exported for one device")

    def _structure_error(self, leaves, tree) -> str:
        expected = ", ".join(f"{p}: {t}" for p, t in zip(self.in_paths, self.in_types))
        got_paths = leaf_paths(tree[1][0], "args") + [
            p for k, c in zip(tree[1][1][1], tree[1][1][2]) for p in leaf_paths(c, str(k))]
        got = ", ".join(f"{p}: {getattr(a, 'type', type(a).__name__)}"
                        for p, a in zip(got_paths, leaves))
        statics = _statics(self.in_tree)
        return (f"{self.name} (exported): the arguments' structure differs from the exported "
                f"one. Exported: {len(self.in_types)} array(s) ({expected})"
                + (f" and static values {statics}" if statics else "")
                + f"; got {len(leaves)} array(s) ({got})"
                + (f" and static values {_statics(tree)}" if _statics(tree) else ""))

    def _executable(self):
        exe = self._exe
        if exe is None:
            with self._lock:
                if self._exe is None:
                    self._exe = self._compile()
                exe = self._exe
        return exe

    def _compile(self):
        from hlodsl.runtime import artifact_module, compile_hlo, platform, stablehlo_text

        if self._reading is not None:  # read from outside: the child's module and text
            module, text = self._reading.module, self._reading.hlo_text
        else:
            module = artifact_module(self._artifact)
            text = stablehlo_text(module)
        # The text names the program in errors and shows its custom calls; the StableHLO
        # module is what compiles (compile_hlo says why).
        here = platform()
        if here != self.platform and "custom-call" in text:
            raise ExportError(
                f"{self.name} (exported): it was exported for {self.platform} and calls "
                f"{self.platform} kernels (custom calls), which {here} lacks; export it "
                f"again for {here} (hd.export(..., platform={here!r}))")
        return compile_hlo(text, out_types=[(t.shape, t.dtype.np_dtype)
                                            for t in self.out_types], stablehlo=module)


class _Shown:
    """A type shown without quotes in a structure's repr."""

    def __init__(self, t):
        self.t = t

    def __repr__(self) -> str:
        return str(self.t)


def _count(tree) -> int:
    """The number of arrays in a treedef."""
    if tree is LEAF:
        return 1
    if isinstance(tree, _Static):
        return 0
    return sum(_count(c) for c in children_of(tree))


_KINDS = {bool: "b", int: "biuf", float: "f", complex: "c"}  # Python number -> numpy kinds


def _lift(tree, x, types):
    """``x`` with each number where ``tree`` holds an array made an array: a numpy scalar
    as it is, a Python number as the exported type if of its kind (an int for a float
    array, as hd.compile's weak typing). ``types`` iterates the arrays' types in order."""
    import numpy as np

    from hlodsl.arrays.array import array

    if tree is LEAF:
        t = next(types)
        if isinstance(x, np.generic):
            return array(x)
        if type(x) in _KINDS and t.dtype.np_dtype.kind in _KINDS[type(x)]:
            return array(np.asarray(x, t.dtype.np_dtype))
        return x
    if isinstance(tree, _Static):
        return x
    kind = tree[0]
    if kind in (tuple, list) and type(x) is kind and len(x) == len(tree[1]):
        return kind(_lift(c, v, types) for c, v in zip(tree[1], x))
    if kind is dict and type(x) is dict and tuple(x) == tree[1]:
        return {k: _lift(c, x[k], types) for k, c in zip(tree[1], tree[2])}
    if kind is PYTREE and type(x) is tree[1].cls:
        children, aux = tree[1].flatten(x)
        if len(children) == len(tree[3]):
            return tree[1].unflatten(aux, tuple(_lift(c, v, types)
                                                for c, v in zip(tree[3], children)))
    for _ in range(_count(tree)):  # a structure that differs: the call will say so
        next(types)
    return x


def _statics(tree) -> list:
    """The static values of a treedef, in order."""
    if isinstance(tree, _Static):
        return [tree.value]
    if tree is LEAF:
        return []
    # A call's tree may hold attrs classes and namedtuples too.
    return [v for c in children_of(tree) for v in _statics(c)]


# -- export --------------------------------------------------------------------------

def export(f, *args, platform: str | None = None, **kwargs) -> Exported:
    """Stage ``f`` for these arguments' types into an ``Exported`` program.

    Arrays in the arguments (in tuples, lists and dicts) may be given as
    ``hd.ArrayType(dtype, shape)``: only their types are read. Every other
    value is static: it is staged into the program, and a call of the exported
    program must pass the same value (None, bool, int, float or str). ``f``
    may be an ``hd.compile``d function: its passes or memory limit rewrite the
    program first, as its calls would run it. ``platform`` (``"cpu"``,
    ``"gpu"``; default: the runtime's) is the platform the program is staged
    for and will run on (``hlodsl.ir.target``): a program exported here for
    ``"gpu"`` calls cuSOLVER where one for ``"cpu"`` calls LAPACK. A compiled
    function's passes need the runtime's own platform.

    >>> import hlodsl as hd
    >>> e = hd.export(lambda w, x: w @ x, hd.ArrayType(hd.float32, (3, 4)),
    ...               hd.ArrayType(hd.float32, (4,)))
    >>> e.in_types, e.out_types
    ((ArrayType(float32, (3, 4)), ArrayType(float32, (4,))), (ArrayType(float32, (3,)),))
    """
    from hlodsl.runtime import portable_artifact, versions

    if not callable(f):
        raise TypeError(f"export: f must be a callable (the function to export), got "
                        f"{type(f).__name__}; call it as export(f, *args)")
    name = f.name if isinstance(f, Compiled) else getattr(f, "__name__", "f")
    args, kwargs = abstract(args), abstract(kwargs)
    leaves, in_tree = flatten((args, kwargs))
    if any_sharded(leaves) or isinstance(f, Compiled) and f.sharded:
        raise ExportError(f"export({name}): programs over several devices (sharded arguments "
                          "or shardings) cannot be exported yet; export the one-device program")
    # Checked before staging (which may fail on such arguments less clearly).
    _in_tree_json(in_tree, _positional_names(f.fn if isinstance(f, Compiled) else f,
                                             len(args)), name)
    fn = f.staged_fn if isinstance(f, Compiled) else _convert(f)
    target = runtime_platform() if platform is None else platform_name(platform,
                                                                       "export: platform")
    passes = isinstance(f, Compiled) and (f.passes is not None or f.memory_limit is not None)
    if passes and target != runtime_platform():
        raise ExportError(f"export({name}): its passes (memory_limit) compile with the "
                          f"platform's XLA, and this process runs {runtime_platform()!r}, "
                          f"not {target!r}; export the function without them")
    with staging_platform(target):
        staged = stage(fn, args, kwargs, name)
    if passes:
        staged = build_entry(staged, name, f.passes, f.memory_limit).staged
    for t in staged.out_types:
        if not isinstance(t, ArrayType):
            raise ExportError(f"export({name}): a program can only return arrays, not {t}")
    _tree_json(staged.out_tree, "result out", name)
    # Donated arguments (donate_argnums of a compiled f) stay donated: the module aliases
    # them to results, as the compiled function's own executable does.
    pairs = aliases(staged, f._donated_leaves(args, kwargs))[0] \
        if isinstance(f, Compiled) and f.donates else ()
    text = module_text(staged.computation, name, aliases=pairs)
    if "xla.sdy." in text:
        raise ExportError(f"export({name}): the program annotates shardings; programs over "
                          "several devices cannot be exported yet")
    calls = getattr(text, "host_callbacks", ())
    if calls:
        raise ExportError(f"export({name}): the program calls Python on the host "
                          f"({', '.join(n for n, _ in calls)}): an exported program runs "
                          "without Python, so it cannot; export the program without "
                          "debug_print, pure_callback or io_callback")
    current = versions()
    version = min(TARGET, current["stablehlo"], key=_version_tuple)
    try:
        artifact = portable_artifact(text, version)
    except ValueError:
        # Some programs need a newer StableHLO than TARGET: jaxlib 0.11's converter writes
        # a custom call with result layouts (cuSOLVER's) as custom_call_v2 (StableHLO
        # 1.18). Those are written at this jaxlib's own version, which it records.
        version = current["stablehlo"]
        artifact = portable_artifact(text, version)
    names = staged.computation.param_names
    exported = Exported(name, in_tree, staged.in_types, names, staged.out_tree,
                        staged.out_types, artifact,
                        {"hlodsl": _hlodsl_version(), **current, "stablehlo": version}, target)
    exported.donated = tuple(sorted(p for _, p in pairs))
    return exported


# -- deserialize ---------------------------------------------------------------------

def deserialize(data: bytes) -> Exported:
    """The ``Exported`` program of bytes ``Exported.serialize`` wrote, here or in another
    process, by this hlodsl or an older one.

    Bytes of a newer format, or whose StableHLO is newer than this jaxlib reads,
    raise ``ExportError`` naming both versions; damaged bytes say what is wrong.

    >>> import hlodsl as hd
    >>> deserialize(b"PK\\x03\\x04 a zip file")
    Traceback (most recent call last):
    hlodsl.errors.ExportError: deserialize: these bytes are not an exported hlodsl program ...
    """
    from hlodsl.runtime import versions

    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError(f"deserialize: data must be bytes (what Exported.serialize() "
                        f"returns), got {type(data).__name__}")
    if len(data) < _HEADER.size or data[:len(MAGIC)] != MAGIC:
        raise ExportError(f"deserialize: these bytes are not an exported hlodsl program (they "
                          f"start {data[:8]!r}, not {MAGIC!r}); Exported.serialize() makes them")
    _, fmt, length = _HEADER.unpack_from(data)
    meta = _metadata(data, length)
    here = {"hlodsl": _hlodsl_version(), **versions()}
    wrote = meta.get("versions", {}) if isinstance(meta, dict) else {}
    if fmt != FORMAT:
        raise ExportError(
            f"deserialize: the bytes are in export format {fmt}, written by hlodsl "
            f"{wrote.get('hlodsl', '(unknown)')}; this hlodsl ({here['hlodsl']}) reads format "
            f"{FORMAT}" + (": upgrade hlodsl to load them" if fmt > FORMAT else ""))
    if meta is None:
        raise ExportError("deserialize: the metadata of these bytes is not valid JSON "
                          "(truncated or damaged)")
    check_metadata(meta)
    artifact = data[_HEADER.size + length:]
    expected = meta["artifact"]
    if len(artifact) != expected["bytes"] or \
            hashlib.sha256(artifact).hexdigest() != expected["sha256"]:
        raise ExportError(f"deserialize: the program's {expected['bytes']} bytes are damaged "
                          f"or truncated ({len(artifact)} bytes, digest differs)")
    need = wrote["stablehlo"]
    if _version_tuple(need) > _version_tuple(here["stablehlo"]):
        raise ExportError(
            f"deserialize: the program is StableHLO {need} (written by hlodsl "
            f"{wrote.get('hlodsl')} with jaxlib {wrote.get('jaxlib')}); this jaxlib "
            f"({here['jaxlib']}) reads StableHLO up to {here['stablehlo']}: upgrade jaxlib")
    in_tree = guarded("in_tree", _tree_from_json, meta["in_tree"])
    out_tree = guarded("out_tree", _tree_from_json, meta["out_tree"])
    in_types = [_type_from_json(t) for t in meta["in_types"]]
    out_types = [_type_from_json(t) for t in meta["out_types"]]
    for key, tree, types in (("in_tree", in_tree, in_types), ("out_tree", out_tree, out_types)):
        n = guarded(key, _count, tree)
        if n != len(types):
            raise ExportError(f"deserialize: metadata field {key} holds {n} arrays but "
                              f"{key.replace('tree', 'types')} lists {len(types)}")
    if any(s is not None for s in meta["in_shardings"] + meta["out_shardings"]):
        raise ExportError("deserialize: the program is sharded over several devices, which "
                          "this hlodsl does not run from an export")
    # The program itself says what it takes and returns: read (in a child process, which
    # no damaged or crafted artifact can take down with it) and compared with the metadata.
    from hlodsl.runtime import UntrustedInputError, read_stablehlo

    try:
        reading = read_stablehlo(artifact, artifact=True)
    except UntrustedInputError as e:
        raise ExportError(f"deserialize: the program's StableHLO cannot be read: {e}") \
            from None
    check_types(in_types, out_types, *program_types(reading.params, reading.result))
    exported = Exported(meta["name"], in_tree, in_types, meta["in_paths"], out_tree,
                        out_types, artifact, wrote, meta["platform"])
    exported.donated = tuple(meta.get("donated", ()))
    exported._reading = reading
    return exported


def _metadata(data: bytes, length: int):
    """The JSON metadata of serialized bytes, or None where it is not readable."""
    try:
        meta = json.loads(data[_HEADER.size:_HEADER.size + length].decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return meta if isinstance(meta, dict) and isinstance(meta.get("versions", {}), dict) \
        else None
