"""The parts of jax/jaxlib hlodsl uses that are not public API, each probed once.

hlodsl runs on every jax/jaxlib release in the range pyproject.toml declares
(0.10.2 to 0.12.x, checked on 0.10.2, 0.11.2 and 0.12.0.1). hlodsl.runtime uses
jax's public API (``jax.extend.backend``, ``jax.sharding``, ``jax.enable_x64``)
and jaxlib's ``xla_client`` directly; every name that is private (a leading
underscore, or an argument jaxlib may drop in any release) is reached through
this module only. Each is looked up once, and where a release lacks it the
fallback keeps hlodsl working: slower, or with a clear error naming the release.

``PRIVATE_NAMES`` lists them with what each is for; tests/test_layers.py fails
when a module names a private jax/jaxlib name that is not listed here.

>>> sorted(PRIVATE_NAMES)[:2]
['jax._src.xla_bridge._backends', 'jaxlib._jax.collect_garbage']
"""

from __future__ import annotations

import functools
import importlib

import jax
import jaxlib.xla_client as xc

__all__ = ["PRIVATE_NAMES", "private", "available", "hlo_to_stablehlo", "result_handler",
           "device_put", "collect_garbage", "client_started", "can_bind_lapack",
           "initialize_lapack", "stablehlo_to_computation", "stablehlo_version",
           "to_portable_artifact", "from_portable_artifact", "portable_artifact_text"]

#: Each private name in use: what hlodsl does with it, and what happens on a
#: release without it. Checked present on jaxlib 0.10.2, 0.11.2 and 0.12.0.1.
PRIVATE_NAMES: dict[str, str] = {
    "jaxlib._jax.mlir.hlo_to_stablehlo":
        "HLO module proto -> StableHLO bytecode, the form PJRT compiles; without it "
        "nothing compiles (an ImportError naming the jaxlib release)",
    "jaxlib._jax.mlir.mlir_module_to_xla_computation":
        "StableHLO/MLIR (text or bytecode) -> an XLA computation: the HLO text "
        "hlodsl.import_hlo reads, and Exported.hlo_text() of an exported artifact (also "
        "the text naming its program in compile errors); without it, import_hlo takes HLO "
        "text and jax stages only, and those raise an ImportError naming the release",
    "jaxlib._jax.collect_garbage":
        "frees the call-stack records jaxlib keeps per execute (memory stays flat in long "
        "loops); without it, nothing is drained",
    "jax._src.xla_bridge._backends":
        "whether jax already started an XLA client (fork guard, distributed.initialize); "
        "without it, only hlodsl's own client counts",
    "jaxlib.lapack._lapack.initialize":
        "binds jaxlib's LAPACK routines before a module calls them (a call before that "
        "crashes); without it, linalg_kernels='auto' uses the HLO kernels",
    "jaxlib.xla_client.array_result_handler(_skip_checks=)":
        "skips jaxlib 0.10's check of each result against its sharding (which rejects "
        "our single-device outputs); later releases have no such check and no argument",
}


def private(name: str):
    """The object a ``PRIVATE_NAMES`` entry names (``a.b.c`` = attribute ``c`` of
    module ``a.b``, or of its attribute chain), or None where this release lacks it."""
    if name not in PRIVATE_NAMES:
        raise KeyError(f"{name} is not in jaxlib_compat.PRIVATE_NAMES: list it there first")
    parts = name.split("(")[0].split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def available() -> dict[str, bool]:
    """Which ``PRIVATE_NAMES`` this jax/jaxlib has (``_skip_checks`` as last probed)."""
    out = {n: private(n) is not None for n in PRIVATE_NAMES}
    out["jaxlib.xla_client.array_result_handler(_skip_checks=)"] = _SKIP_CHECKS[0] is not False
    return out


# -- compiling: HLO text -> StableHLO -------------------------------------------------

_to_stablehlo = private("jaxlib._jax.mlir.hlo_to_stablehlo")


def hlo_to_stablehlo(text: str) -> bytes:
    """StableHLO bytecode for an HLO module given as text (XLA's own parser reads it)."""
    if _to_stablehlo is None:
        raise ImportError(f"jaxlib {jax.__version__} has no jaxlib._jax.mlir.hlo_to_stablehlo, "
                          "which hlodsl compiles through; install a jaxlib in the range "
                          "pyproject.toml declares")
    module = xc.hlo.hlo_module_from_text(text)
    return _to_stablehlo(module.as_serialized_hlo_module_proto())


# -- buffers: results and host -> device ------------------------------------------------

_SKIP_CHECKS = [None]  # None: not probed yet; then True (accepted) or False


def result_handler(aval, sharding):
    """jaxlib's handler that turns one execute output into a jax Array of ``aval``."""
    if _SKIP_CHECKS[0] is not False:
        try:
            handler = xc.array_result_handler(aval, sharding, committed=True, _skip_checks=True)
            _SKIP_CHECKS[0] = True
            return handler
        except TypeError:  # jaxlib >= 0.11: no such argument (and no check to skip)
            _SKIP_CHECKS[0] = False
    return xc.array_result_handler(aval, sharding, committed=True)


_X64_ARG = [True]  # batched_device_put takes enable_x64 (jaxlib 0.10.2 to 0.12 do)


def device_put(aval, sharding, host, device):
    """A committed buffer of ``host`` (a numpy array) on ``device``, its element type
    kept even when jax's x64 mode is off (no narrowing of 64-bit types)."""
    if _X64_ARG[0]:
        try:
            return xc.batched_device_put(aval, sharding, [host], [device], True,
                                         enable_x64=True)
        except TypeError:  # a jaxlib without the argument: scope jax's flag instead
            _X64_ARG[0] = False
    with jax.enable_x64(True):
        return xc.batched_device_put(aval, sharding, [host], [device], True)


# -- runtime housekeeping --------------------------------------------------------------

_collect = private("jaxlib._jax.collect_garbage")


def collect_garbage() -> None:
    """Free the per-call records jaxlib keeps until its garbage collection runs."""
    if _collect is not None:
        _collect()


def client_started() -> bool:
    """Whether jax has started an XLA client in this process (False where unknown)."""
    backends = private("jax._src.xla_bridge._backends")
    return bool(backends)


@functools.lru_cache(maxsize=None)  # asked at every linalg staging: look it up once
def _lapack_initialize():
    return private("jaxlib.lapack._lapack.initialize")


def can_bind_lapack() -> bool:
    """Whether ``initialize_lapack`` can bind jaxlib's LAPACK routines here."""
    return _lapack_initialize() is not None


def initialize_lapack() -> bool:
    """Bind jaxlib's LAPACK routines to their custom-call targets; False where this
    jaxlib offers no way to (its LAPACK targets must not be called then)."""
    init = _lapack_initialize()
    if init is None:
        return False
    init()
    return True


# -- exported artifacts: StableHLO portable artifacts (hlodsl.exported) ---------------
# jaxlib.mlir.dialects.stablehlo is the StableHLO project's own Python binding, public
# in jaxlib (jax.export writes its artifacts with it); it is imported on first use, so
# a process that never exports does not load MLIR's Python bindings.

@functools.lru_cache(maxsize=None)
def _stablehlo():
    from jaxlib.mlir.dialects import stablehlo

    return stablehlo


def stablehlo_version() -> str:
    """The newest StableHLO version this jaxlib writes and reads (``"1.17.0"``...)."""
    return _stablehlo().get_current_version()


def to_portable_artifact(module: bytes, target: str) -> bytes:
    """A StableHLO module (MLIR bytecode) as a portable artifact of version ``target``:
    versioned bytecode that later StableHLO releases read back."""
    return _stablehlo().serialize_portable_artifact_str(module, target)


def from_portable_artifact(artifact: bytes) -> bytes:
    """The StableHLO module (MLIR bytecode of this release) of a portable artifact."""
    return _stablehlo().deserialize_portable_artifact_str(artifact)


def portable_artifact_text(artifact: bytes) -> str:
    """A portable artifact as StableHLO's MLIR text (``func.func @main ...``)."""
    from jaxlib.mlir import ir

    stablehlo = _stablehlo()
    context = ir.Context()
    stablehlo.register_dialect(context)
    with context:
        return str(stablehlo.deserialize_portable_artifact(context, artifact))


_to_computation = private("jaxlib._jax.mlir.mlir_module_to_xla_computation")


def stablehlo_to_computation(module: str | bytes):
    """The ``XlaComputation`` of a StableHLO/MLIR module (text or bytecode), which
    prints as HLO text (``hlodsl.runtime.computation_text``)."""
    if _to_computation is None:
        raise ImportError(f"jaxlib {jax.__version__} has no "
                          "jaxlib._jax.mlir.mlir_module_to_xla_computation, which reading "
                          "StableHLO (import_hlo of StableHLO, exported artifacts) needs; "
                          "install a jaxlib in the range pyproject.toml declares")
    return _to_computation(module, use_tuple_args=False, return_tuple=False)
