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
['jax._src.lib.cuda_versions', 'jax._src.numpy.array_methods']
"""

from __future__ import annotations

import bisect
import functools
import glob
import importlib
import io
import os
import tempfile
import warnings
from collections import defaultdict
from typing import Callable, NamedTuple

import jax
import jaxlib.xla_client as xc

__all__ = ["PRIVATE_NAMES", "private", "available", "hlo_to_stablehlo", "legalize",
           "module_text", "result_handler", "device_put", "collect_garbage", "client_started",
           "can_bind_lapack", "initialize_lapack", "stablehlo_to_computation", "stablehlo_version",
           "to_portable_artifact", "from_portable_artifact", "portable_artifact_text",
           "profile_events", "device_work", "can_compile_host_callbacks",
           "compile_with_host_callbacks", "cuda_solver_targets", "cuda_library_version",
           "asked_by_jax_operator"]

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
    "jaxlib.mlir._mlir_libs._jax_mlir_ext.register_dialects":
        "registers the MLIR dialects (func, ...) a StableHLO module needs in an MLIR context "
        "of jaxlib's bindings: PJRT takes host callbacks only with a module parsed into such "
        "a context (compile_with_host_callbacks), and hlo_to_stablehlo legalizes what XLA's "
        "conversion leaves there (mhlo.copy, a rank-2 stablehlo.dot with an algorithm); "
        "without it, a program that calls Python (hd.debug_print, hd.pure_callback, "
        "hd.io_callback) raises an ImportError naming the release, and the others compile "
        "as XLA converted them: XLA:CPU takes them, XLA:GPU and hd.export refuse a copy and "
        "a rank-2 dot loses its algorithm",
    "jax._src.lib.cuda_versions":
        "the versions of the CUDA libraries jax's CUDA plugin loaded (cuSOLVER: geev needs "
        "11.7.1; cuDNN); without it, or without a GPU, they count as unknown and hlodsl "
        "stages what the H200 run had (docs/gpu.md)",
    "jaxlib.xla_client.array_result_handler(_skip_checks=)":
        "skips jaxlib 0.10's check of each result against its sharding (which rejects "
        "our single-device outputs); later releases have no such check and no argument",
    "jax._src.numpy.array_methods":
        "the module of jax arrays' operators (+, *, <, ...), whose functions read an "
        "operand's __jax_array__: hlodsl arrays decline it to them, so that "
        "jax_array + hd_array is an hlodsl array as hd_array + jax_array is "
        "(docs/interop.md); without it, those operators take hlodsl arrays as jax arrays "
        "and return jax arrays",
}


def private(name: str):
    """The object a ``PRIVATE_NAMES`` entry names (``a.b.c`` = attribute ``c`` of
    module ``a.b``, or of its attribute chain), or None where this release lacks it."""
    return _lookup(name)[1]


def _lookup(name: str) -> tuple[bool, object]:
    """``(found, value)`` of a ``PRIVATE_NAMES`` entry (a name may exist holding None:
    ``jax._src.lib.cuda_versions`` without a CUDA plugin)."""
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
            return False, None
        return True, obj
    return False, None


@functools.cache
def _operator_codes() -> frozenset:
    """The code objects of jax arrays' operator methods (none where the module moved)."""
    module = private("jax._src.numpy.array_methods")
    if module is None:
        return frozenset()
    return frozenset(fn.__code__ for name, fn in vars(module).items()
                     if name.startswith("_operator") and hasattr(fn, "__code__"))


def asked_by_jax_operator(frame) -> bool:
    """Whether ``frame`` runs one of jax arrays' operators (``jax_array + x`` reading
    ``x.__jax_array__``), as opposed to a jax function (``jnp.asarray(x)``)."""
    return frame is not None and frame.f_code in _operator_codes()


def available() -> dict[str, bool]:
    """Which ``PRIVATE_NAMES`` this jax/jaxlib has (``_skip_checks`` as last probed)."""
    out = {n: _lookup(n)[0] for n in PRIVATE_NAMES}
    out["jaxlib.xla_client.array_result_handler(_skip_checks=)"] = _SKIP_CHECKS[0] is not False
    return out


# -- compiling: HLO text -> StableHLO -------------------------------------------------

_to_stablehlo = private("jaxlib._jax.mlir.hlo_to_stablehlo")


def hlo_to_stablehlo(text: str, platform: str | None = None) -> bytes:
    """StableHLO bytecode for an HLO module given as text (XLA's own parser reads it),
    legalized for ``platform`` (the runtime's, when compiling; None: portable, as export
    writes it)."""
    if _to_stablehlo is None:
        raise ImportError(f"jaxlib {jax.__version__} has no jaxlib._jax.mlir.hlo_to_stablehlo, "
                          "which hlodsl compiles through; install a jaxlib in the range "
                          "pyproject.toml declares")
    module = xc.hlo.hlo_module_from_text(text)
    return legalize(_to_stablehlo(module.as_serialized_hlo_module_proto()), platform)


# XLA's HLO -> StableHLO conversion leaves two things that are not portable StableHLO:
# - HLO ``copy`` becomes ``mhlo.copy`` (StableHLO has no copy). XLA:CPU compiles the
#   mixed module; XLA:GPU marks mhlo illegal ("failed to legalize operation 'mhlo.copy'")
#   and a portable artifact cannot hold it ("dialect 'mhlo' is unknown"). A copy is the
#   identity on values (XLA adds the copies its layouts need itself; jax emits none), so
#   its uses take its operand.
# - A dot without batch dimensions becomes ``stablehlo.dot``, which has no algorithm: the
#   algorithm rides along as a discardable attribute that XLA:CPU drops and XLA:GPU
#   refuses ("failed to legalize operation 'stablehlo.dot'"). Such a dot is rewritten as
#   the ``stablehlo.dot_general`` it is (lhs's last dimension against rhs's first), which
#   carries the algorithm as jax writes it. For XLA:CPU (``platform="cpu"``) the algorithm
#   is dropped from every dot instead: XLA:CPU computes at the operands' precision whatever
#   is asked (the same bits with and without, measured on f32 16..256), and its elemental
#   emitter (the small dots no library takes) refuses any algorithm ("Algorithm not
#   supported by the ElementalIrEmitter"), which fails jax's own jit on a 1x2 @ 2x1 dot.
# Both names are strings of the bytecode: a module without them is not parsed at all.
_LEGALIZED = (b"copy", b"algorithm")
_SHARDINGS = ("mhlo.sharding", "mhlo.frontend_attributes")
_DOTS = ("stablehlo.dot", "stablehlo.dot_general")


@functools.lru_cache(maxsize=None)
def _mlir():
    """jaxlib's MLIR bindings and a function making a context that reads XLA's output
    (None where this jaxlib lacks the dialect registration)."""
    register = private("jaxlib.mlir._mlir_libs._jax_mlir_ext.register_dialects")
    if register is None:
        return None
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import chlo, mhlo, sdy, stablehlo

    def context():
        ctx = ir.Context()
        ctx.enable_multithreading(False)  # one small module: no thread pool per context
        registry = ir.DialectRegistry()
        register(registry)
        ctx.append_dialect_registry(registry)
        ctx.load_all_available_dialects()
        for dialect in (stablehlo, chlo, sdy):
            dialect.register_dialect(ctx)
        mhlo.register_mhlo_dialect(ctx)
        return ctx

    return ir, stablehlo, context


def module_text(data: bytes) -> str:
    """StableHLO bytecode (``hlo_to_stablehlo``'s) as MLIR text, to read what compiles."""
    mlir = _mlir()
    if mlir is None:
        raise ImportError(f"jaxlib {jax.__version__} has no "
                          "jaxlib.mlir._mlir_libs._jax_mlir_ext.register_dialects, which "
                          "reading StableHLO bytecode as text needs")
    ir, _, context = mlir
    with context():
        return str(ir.Module.parse(data))


def legalize(data: bytes, platform: str | None = None) -> bytes:
    """StableHLO bytecode from XLA's HLO -> StableHLO conversion with its ``mhlo.copy``
    ops removed and its rank-2 ``stablehlo.dot`` ops with an algorithm written as
    ``stablehlo.dot_general`` (see above), or for ``platform="cpu"`` every dot's algorithm
    dropped; the same bytes when there is nothing to change."""
    if not any(word in data for word in _LEGALIZED):
        return data
    mlir = _mlir()
    if mlir is None:
        return data
    ir, stablehlo, context = mlir
    with context(), ir.Location.unknown():
        module = ir.Module.parse(data)
        found = []

        def visit(op):
            # A copy that carries a sharding is a partitioner's hint: it stays.
            if (op.name == "mhlo.copy" and not any(a in _SHARDINGS for a in op.attributes)) \
                    or (op.name in _DOTS and "algorithm" in op.attributes
                        and (platform == "cpu" or op.name == "stablehlo.dot")):
                found.append(op)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        if not found:
            return data
        for op in found:
            if op.name == "mhlo.copy":
                op.results[0].replace_all_uses_with(op.operands[0])
            elif platform == "cpu":
                del op.attributes["algorithm"]
                continue
            else:
                lhs, rhs = op.operands
                numbers = stablehlo.DotDimensionNumbers.get(
                    lhs_batching_dimensions=[], rhs_batching_dimensions=[],
                    lhs_contracting_dimensions=[ir.RankedTensorType(lhs.type).rank - 1],
                    rhs_contracting_dimensions=[0])
                attributes = op.attributes
                precision = (attributes["precision_config"]
                             if "precision_config" in attributes else None)
                general = stablehlo.DotGeneralOp(
                    op.results[0].type, lhs, rhs, numbers, precision_config=precision,
                    algorithm=attributes["algorithm"], loc=op.location,
                    ip=ir.InsertionPoint(op))
                op.results[0].replace_all_uses_with(general.result)
            op.erase()
        out = io.BytesIO()
        module.operation.write_bytecode(out)
        return out.getvalue()


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


# -- programs that call Python: host callbacks ------------------------------------------
# jaxlib's Client.compile_and_load(module, devices, options, host_callbacks=[...]) takes
# Python callables for the custom calls of its Python-callback targets
# (``xla_ffi_python_cpu_callback`` and ``_gpu_``, whose ``index`` attribute picks the
# callable), and the loaded executable keeps them alive as long as it lives. It takes
# them only with the program as an MLIR module object (``jaxlib.mlir.ir.Module``), not as
# bytes: the module is parsed in a context where jaxlib's dialects are registered.
# Measured on jaxlib 0.10.2, 0.11.2 and 0.12.0.1 alike (tests/test_callbacks.py).

@functools.lru_cache(maxsize=None)
def _register_dialects():
    return private("jaxlib.mlir._mlir_libs._jax_mlir_ext.register_dialects")


def can_compile_host_callbacks() -> bool:
    """Whether this jaxlib offers what ``compile_with_host_callbacks`` needs."""
    return _register_dialects() is not None


def compile_with_host_callbacks(be, module: bytes, devices, options, callbacks: list):
    """``be.compile_and_load`` of the StableHLO ``module`` (bytecode) with ``callbacks``,
    the Python callables its Python-callback custom calls name by index."""
    register = _register_dialects()
    if register is None:
        raise ImportError(f"jaxlib {jax.__version__} has no jaxlib.mlir._mlir_libs."
                          "_jax_mlir_ext.register_dialects, which compiling a program that "
                          "calls Python (debug_print, pure_callback, io_callback) needs; "
                          "install a jaxlib in the range pyproject.toml declares")
    from jaxlib.mlir import ir

    context = ir.Context()
    registry = ir.DialectRegistry()
    register(registry)
    context.append_dialect_registry(registry)
    context.load_all_available_dialects()
    _stablehlo().register_dialect(context)
    with context:
        parsed = ir.Module.parse(module)
    return be.compile_and_load(parsed, devices, options, host_callbacks=list(callbacks))
# -- the CUDA plugin: which cuSOLVER targets jaxlib registered, library versions ----------

@functools.lru_cache(maxsize=None)
def cuda_solver_targets() -> frozenset:
    """The custom-call targets jaxlib's GPU solver module registers for CUDA (jax's
    ``jax.lax.linalg`` registers them with XLA at import); empty without a CUDA plugin."""
    try:
        import jax.lax.linalg  # noqa: F401  (its import registers them with XLA)
        import jaxlib.gpu_solver as gpu_solver
        return frozenset(name for name, *_ in gpu_solver.registrations().get("CUDA", ()))
    except (ImportError, AttributeError):
        return frozenset()


def cuda_library_version(library: str) -> int | None:
    """``cusolver``'s or ``cudnn``'s version as the CUDA plugin reports it (cuSOLVER
    11.7.1 is 11701), or None where unknown (no GPU plugin, or a release without it)."""
    versions = private("jax._src.lib.cuda_versions")
    get = getattr(versions, f"{library}_get_version", None) if versions is not None else None
    try:
        return int(get()) if get is not None else None
    except Exception:  # noqa: BLE001 (a plugin without the library raises its own error)
        return None


# -- exported artifacts: StableHLO portable artifacts (hlodsl.interchange.exported) ---------------
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
#: The same function, named for the reader of untrusted StableHLO (hlodsl.runtime.isolated),
#: which runs in a child process without hlodsl and looks it up by this name.
TO_COMPUTATION = "jaxlib._jax.mlir.mlir_module_to_xla_computation"


def stablehlo_to_computation(module: str | bytes):
    """The ``XlaComputation`` of a StableHLO/MLIR module (text or bytecode), which
    prints as HLO text (``hlodsl.runtime.computation_text``)."""
    if _to_computation is None:
        raise ImportError(f"jaxlib {jax.__version__} has no "
                          "jaxlib._jax.mlir.mlir_module_to_xla_computation, which reading "
                          "StableHLO (import_hlo of StableHLO, exported artifacts) needs; "
                          "install a jaxlib in the range pyproject.toml declares")
    return _to_computation(module, use_tuple_args=False, return_tuple=False)


# -- XLA's profiler: the events of each instruction the executable runs -----------------

class XlaEvent(NamedTuple):
    """One execution of one HLO instruction (a thunk on CPU, a kernel on a device)."""

    instruction: str   # the instruction's name in the optimised module (XLA's ``hlo_op``)
    module: str        # the module's name (``hlo_module``)
    run: int           # which execution of the executable (``run_id``)
    thread: tuple      # (plane, line) it started on
    start_ns: int
    end_ns: int        # when it completed (see profile_events)


def _completed(starts: list, ends: dict) -> list[XlaEvent]:
    """The events with the time they completed: XLA:CPU runs some thunks (dots,
    convolutions, ...) asynchronously on its intra-op threads, and the thunk's own
    event only covers launching them; the thunk executor records ``end: <name>``
    where each completes. An execution of an instruction meets the first of its
    ``end:`` events before the instruction's next execution starts; without one
    (a device kernel, another release, an event the profiler dropped) the event's
    own duration is its time."""
    by_name: dict = defaultdict(list)
    for e, duration in starts:
        by_name[e.instruction].append((e, duration))
    out = []
    for name, group in by_name.items():
        group.sort(key=lambda p: p[0].start_ns)
        times = ends.get(name, [])
        for k, (e, duration) in enumerate(group):
            done = e.start_ns + duration
            until = group[k + 1][0].start_ns if k + 1 < len(group) else None
            at = bisect.bisect_left(times, e.start_ns)
            if at < len(times) and (until is None or times[at] < until):
                done = max(done, times[at])
            out.append(e._replace(end_ns=done))
    return out


def device_work(starts: list, keep_on_host: frozenset = frozenset()) -> list:
    """Of ``(event, duration)`` pairs from host and device planes, the device's, each
    kernel once per plane (a stream's line and the derived lines repeat it), and the host
    events of the instructions ``keep_on_host`` names (see ``profile_events``).

    >>> e = XlaEvent("fusion.1", "m", 0, ("/device:GPU:0", "Stream #7"), 10, 10)
    >>> w = XlaEvent("while.2", "m", 0, ("/host:CPU", "tf_pjrt_thread"), 5, 5)
    >>> launch = XlaEvent("fusion.1", "m", 0, ("/host:CPU", "tf_pjrt_thread"), 8, 8)
    >>> again = e._replace(thread=("/device:GPU:0", "XLA Ops"))
    >>> [p[0].instruction for p in device_work([(e, 3), (w, 20), (launch, 1), (again, 3)],
    ...                                        frozenset({"while.2"}))]
    ['fusion.1', 'while.2']
    """
    seen: set = set()
    kept = []
    for pair in starts:
        e = pair[0]
        key = (e.thread[0], e.instruction, e.run, e.start_ns, pair[1])
        if (e.thread[0].startswith("/device:") or e.instruction in keep_on_host) \
                and key not in seen:
            seen.add(key)
            kept.append(pair)
    return kept


def profile_events(run: Callable[[], None], keep_on_host: frozenset = frozenset()
                   ) -> tuple[list[XlaEvent], bool]:
    """Call ``run()`` under XLA's profiler; the events that name an HLO instruction, and
    whether they came from a device plane (``/device:...``; else from host threads).

    With device events, the host's are launches, not the work, and are dropped, except
    those of the instructions ``keep_on_host`` names (a ``while`` runs no kernel of its
    own: its host event encloses its body's kernels). A device kernel the profiler shows
    on several lines of its plane (a stream's and the derived ones) counts once.

    Uses jax's public profiler (``jax.profiler.start_trace``/``stop_trace`` into a
    temporary folder, read back with ``jax.profiler.ProfileData``): it collects
    the runtime's own events, the same XLA runtime hlodsl executes on. Python
    tracing is switched off, so the calls run as they would unprofiled.
    """
    import jax.profiler as jp

    options = jp.ProfileOptions()
    try:
        options.python_tracer_level = 0  # our Python frames are not what is measured
        options.host_tracer_level = 1  # XLA names its thunks at this level: fewer events
    except AttributeError:  # a release without the options: its defaults then
        pass
    with tempfile.TemporaryDirectory(prefix="hlodsl-profile-") as folder:
        try:
            jp.start_trace(folder, profiler_options=options)
        except RuntimeError as e:
            raise RuntimeError(f"profile: XLA's profiler could not start ({e}); "
                               "stop a jax.profiler trace that is running first") from None
        try:
            run()
        finally:
            jp.stop_trace()
        files = glob.glob(os.path.join(folder, "**", "*.xplane.pb"), recursive=True)
        data = jp.ProfileData.from_file(files[0]) if files else None
    starts: list = []
    ends: dict = {}
    device = False
    with warnings.catch_warnings():
        # jaxlib 0.12 on Python 3.12 warns that its event_stats type has no __module__.
        warnings.simplefilter("ignore", DeprecationWarning)
        for plane in data.planes if data is not None else ():
            for line in plane.lines:
                for e in line.events:
                    name = e.name
                    if name.startswith("end: "):
                        ends.setdefault(name[5:], []).append(int(e.start_ns))
                        continue
                    stats = dict(e.stats)
                    op = stats.get("hlo_op")
                    if op is None:
                        continue
                    device |= plane.name.startswith("/device:")
                    start = int(e.start_ns)
                    starts.append((XlaEvent(str(op), str(stats.get("hlo_module", "")),
                                            int(stats.get("run_id", -1)),
                                            (plane.name, line.name), start, start),
                                   int(e.duration_ns)))
    if device:  # a device's own kernels: the host's launch events are not the work
        starts = device_work(starts, keep_on_host)
    for times in ends.values():
        times.sort()
    return _completed(starts, ends), device
