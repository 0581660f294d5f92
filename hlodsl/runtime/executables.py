"""The PJRT runtime, through jaxlib: the only module of hlodsl that imports jax.

jax is used here as a runtime only: its PJRT client compiles the HLO text we
emit, and jax ``Array`` objects serve as device buffers. Nothing of jax's
tracing, ``jit``, ``lax`` or ``numpy`` implements any part of hlodsl. Every
call that reaches a private jax/jaxlib name goes through hlodsl.jaxlib_compat,
which probes each once (checked on jax/jaxlib 0.10.2, 0.11.2 and 0.12.0.1).

>>> exe = compile_hlo('''HloModule m
... ENTRY e {
...   ROOT c = f32[2] constant({1, 2})
... }''')
>>> [to_host(b) for b in exe.execute([])]
[array([1., 2.], dtype=float32)]
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import weakref

import numpy as np

# XLA's C++ logging would print device banners on every start; keep warnings.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import jax  # noqa: E402
import jaxlib.xla_client as xc  # noqa: E402
from jax.core import ShapedArray  # noqa: E402
from jax.extend import backend as _jax_backend  # noqa: E402

from . import jaxlib_compat as compat  # noqa: E402
from .errors import XlaCompileError  # noqa: E402

# NOTE: jax's x64 mode is left as the user set it. With it off, jax narrows 64-bit
# host data to 32 bits in jax.device_put and friends, so host data reaches the
# device through compat.device_put (which asks jaxlib not to narrow), and the
# few jax calls that would narrow run under _x64() (jax's thread-local scope).
_x64 = jax.enable_x64

__all__ = ["backend", "platform", "device_count", "to_device", "to_host", "compile_hlo",
           "Executable", "stats", "device_index", "to_dlpack", "dlpack_device", "from_dlpack",
           "is_buffer", "adopt", "copy_buffer", "check_process", "wait", "is_deleted",
           "COMPILER_OPTIONS", "compiler_options", "versions",
           "portable_artifact", "artifact_module", "stablehlo_text", "artifact_mlir_text",
           "release_host_memory"]

#: Counters for tests and benchmarks: how many XLA compiles have run.
stats = {"compiles": 0}

_backend = None


def backend():
    """The PJRT client: GPU where a plugin is installed, else CPU.

    ``HLODSL_PLATFORM=cpu`` (or ``gpu``) forces a platform.
    """
    global _backend
    if _forked_from is not None:
        raise _fork_error()
    if _backend is None:
        _backend = _jax_backend.get_backend(os.environ.get("HLODSL_PLATFORM") or None)
    return _backend


# -- fork(): XLA's client runs threads, and a forked child has none of them ---------
# A child that uses a client started before the fork hangs on its first compile
# (measured: forever), and a new client in the child aborts in XLA's mutexes.
# So a child forked after the runtime started refuses every runtime call at
# once, with a message saying what to do instead.

_forked_from: int | None = None
_EXECUTABLES: weakref.WeakSet = weakref.WeakSet()  # to disarm in a forked child


def _started() -> bool:
    """Whether an XLA client exists in this process (ours, or one jax made)."""
    return _backend is not None or compat.client_started()


def _fork_error() -> RuntimeError:
    return RuntimeError(
        f"hlodsl cannot run XLA in this process: it was forked (os.fork, or "
        f"multiprocessing's default 'fork' start method on Linux) from process "
        f"{_forked_from} after that process had started XLA, whose threads do not survive "
        "fork(), so arrays and compiled functions made before the fork cannot be used here "
        "and new ones cannot be made. Start worker processes with "
        "multiprocessing.get_context('spawn') or 'forkserver', or fork before using hlodsl")


def _disarmed(*args, **kwargs):
    raise _fork_error()


def _after_fork_in_child() -> None:
    global _forked_from
    if not _started():
        return  # nothing ran yet: the child starts its own client on first use
    _forked_from = os.getppid()
    for exe in list(_EXECUTABLES):
        exe.execute = _disarmed


def check_process() -> None:
    """Raise the fork error in a child forked after XLA started (see ``backend``)."""
    if _forked_from is not None:
        raise _fork_error()


os.register_at_fork(after_in_child=_after_fork_in_child)


def platform() -> str:
    return backend().platform


def to_device(host: np.ndarray, device: int = 0, private: bool = False):
    """Copy a host array to a device (the first by default); returns the buffer.

    NOTE: on CPU, ``jax.device_put`` aliases a 64-byte aligned numpy buffer
    instead of copying it (``may_alias=False`` included, jax 0.10.2): the
    device array would change when the caller mutates its numpy array, and a
    program still running on it would read the mutation. So the data is
    copied once, into an aligned buffer of our own that PJRT then takes over
    without a second copy. ``private=True`` says ``host`` was made for this
    call (from Python values) and nobody else can write it: no copy.
    """
    if not private:
        host = _private_copy(host)
    dev = backend().local_devices()[device]
    return compat.device_put(_aval(host.shape, host.dtype), _single(dev), host, dev)


@functools.lru_cache(maxsize=4096)  # bounded: a long run over many shapes
def _aval(shape: tuple, dtype) -> ShapedArray:
    """jax's abstract value for a buffer (one per shape and type in use)."""
    return ShapedArray(shape, dtype)


@functools.lru_cache(maxsize=None)  # one per device
def _single(device):
    return xc.SingleDeviceSharding(device)


def _private_copy(host: np.ndarray) -> np.ndarray:
    """A copy of ``host`` at a 64-byte aligned address (what PJRT aliases on CPU)."""
    raw = np.empty(host.nbytes + 64, np.uint8)
    offset = -raw.ctypes.data % 64
    out = raw[offset:offset + host.nbytes].view(host.dtype).reshape(host.shape)
    np.copyto(out, host, casting="no")
    return out


def is_buffer(x) -> bool:
    """Whether ``x`` is a device buffer of the runtime (a jax Array): immutable, shareable."""
    return isinstance(x, jax.Array)


def adopt(buf):
    """A jax array as an hlodsl buffer: itself when it lives on one of our devices."""
    devices = buf.devices()
    if len(devices) == 1 and next(iter(devices)) in backend().devices():
        return buf
    with _x64(True):
        return jax.device_put(buf, backend().local_devices()[0])


def copy_buffer(buf):
    """A new device buffer holding ``buf``'s data, on the same device."""
    (device,) = buf.devices()
    # The copy runs asynchronously: wait for it, since the source may be memory that
    # its owner changes as soon as this returns (an imported numpy or torch array).
    with _x64(True):
        return jax.device_put(buf, device, may_alias=False).block_until_ready()


def is_deleted(buf) -> bool:
    """Whether PJRT has deleted ``buf`` (a compiled call it was donated to took it over)."""
    return buf.is_deleted()


def wait(buf) -> None:
    """Return once the computation writing ``buf`` has finished."""
    check_process()  # a forked child cannot wait on its parent's XLA
    buf.block_until_ready()


def to_host(buf) -> np.ndarray:
    return np.asarray(buf)


def device_index(buf) -> int:
    """The index in ``backend().devices()`` of the device holding a buffer."""
    (device,) = buf.devices()
    return backend().devices().index(device)


# DLPack: jax Arrays implement the protocol on their PJRT buffers. Exporting
# shares device memory, and some consumers (torch) write into what they get
# whatever the capsule's read-only flag says: an hlodsl array, immutable, is
# exported as a copy unless the consumer asks for copy=False (then the capsule
# is flagged read-only, which numpy honours). Importing aliases the producer's
# memory only when the producer is immutable (a jax or hlodsl array) or the
# caller says copy=False; a numpy or torch array is copied.

def to_dlpack(buf, **kwargs):
    """The DLPack capsule of a copy of ``buf`` (``copy=False``: of ``buf`` itself, read-only).

    Keyword arguments are the protocol's: ``stream``, ``max_version``,
    ``dl_device``, ``copy``. A consumer asking for a version below 1.0 gets the
    legacy (unversioned) capsule, as the protocol says; jax refuses such
    versions outright.
    """
    max_version = kwargs.get("max_version")
    if max_version is not None and tuple(max_version) < (1, 0):
        kwargs["max_version"] = None
    copy = kwargs.pop("copy", None)
    if copy is not False:
        buf = copy_buffer(buf)
    return buf.__dlpack__(**kwargs)


def dlpack_device(buf) -> tuple:
    """``(DLDeviceType, device id)`` of a buffer."""
    return buf.__dlpack_device__()


def from_dlpack(obj, copy: bool | None = None, immutable: bool = False):
    """A buffer on the default device holding the data of a DLPack producer.

    Returns ``(buffer, numpy dtype)``. ``copy=False`` aliases the producer's
    memory and fails where that is impossible; ``copy=True`` always copies;
    ``copy=None`` aliases only an ``immutable`` producer (or a jax array),
    since a device buffer that aliases writable memory changes with it.
    """
    from jax import dlpack

    device = backend().local_devices()[0]
    if copy is None and not (immutable or is_buffer(obj)):
        copy = True
    try:
        # NOTE: jax 0.10's copy=True still aliases aligned host memory; copy below.
        with _x64(True):
            buf = dlpack.from_dlpack(obj, device=device, copy=None if copy else copy)
    except Exception as e:  # PJRT takes compact layouts only (no strides such as x[::2])
        if copy is False:
            raise BufferError(str(e)) from None
        host = np.from_dlpack(obj)
        return to_device(np.ascontiguousarray(host)), np.dtype(host.dtype)
    if copy:
        buf = copy_buffer(buf)
    return buf, np.dtype(buf.dtype)


class Executable:
    """A compiled XLA program. ``execute(buffers)`` returns the output buffers.

    A tuple-shaped result comes back as one buffer per tuple element.
    """

    __slots__ = ("_exe", "text", "execute", "num_devices", "__weakref__")

    def __init__(self, exe, text: str, num_devices: int = 1):
        self._exe = exe
        self.text = text
        self.num_devices = num_devices
        # Bound once: the hot path of a compiled call is this single call.
        self.execute = exe.execute

    def execute_per_device(self, args: list[list]) -> list[list]:
        """Run a multi-device program: ``args[i][d]`` is argument i's buffer on device d.

        Returns ``outs[j][d]``: output j's buffer on device d. Each argument's
        per-device buffers travel as one jax Array whose (replicated) sharding
        only names the devices; the executable reads each device's own buffer.
        """
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        devices = backend().local_devices()[: self.num_devices]
        sharding = NamedSharding(Mesh(np.array(devices), ("d",)), PartitionSpec())
        with _x64(True):
            globals_ = [jax.make_array_from_single_device_arrays(bufs[0].shape, sharding,
                                                                 list(bufs))
                        for bufs in args]
        out = self._exe.execute_sharded(globals_).disassemble_into_single_device_arrays()
        _CALLS[0] += 1
        if not _CALLS[0] & 1023:
            _drain_call_records()
        return out

    def optimized_hlo(self) -> str:
        """The module after XLA's HLO passes (fusion, layout, scheduling)."""
        return self._exe.hlo_modules()[0].to_string()

    def memory_stats(self) -> dict[str, int]:
        """XLA's compiled memory statistics (bytes), known without running."""
        s = self._exe.get_compiled_memory_stats()
        keys = ("argument_size_in_bytes", "output_size_in_bytes",
                "alias_size_in_bytes", "temp_size_in_bytes", "generated_code_size_in_bytes")
        out = {k: getattr(s, k) for k in keys}
        peak = getattr(s, "peak_memory_in_bytes", None)  # (jaxlib 0.10.2: arguments, results
        if peak is not None:  # and temporaries live at once, aliased buffers counted once)
            out["peak_memory_in_bytes"] = peak
        return out


def lapack_kernels() -> bool:
    """Whether programs may call jaxlib's LAPACK custom-call targets: on the CPU
    backend, where this jaxlib can bind them (``compat.initialize_lapack``)."""
    return platform() == "cpu" and compat.can_bind_lapack()


def _initialize_lapack() -> None:
    """jaxlib registers its LAPACK custom-call targets at import but binds their
    LAPACK routines lazily; a module calling one before that would crash the
    process, so custom calls of ``lapack_*`` targets bind them first."""
    if not compat.initialize_lapack():
        raise XlaCompileError(f"jaxlib {jax.__version__} offers no way to bind its LAPACK "
                              "kernels; set hlodsl.config.linalg_kernels = 'hlo'")


_hlo_to_mlir = compat.hlo_to_stablehlo


# -- exported artifacts (hlodsl.exported): HLO text <-> StableHLO portable artifacts ----
# An artifact runs through compile_hlo like any module of ours, its StableHLO module
# given as ``stablehlo=`` (and its HLO text, converted by jaxlib, naming it): it shares
# the compile options, the persistent cache, LAPACK binding and the error messages.

def versions() -> dict[str, str]:
    """The runtime's versions: jax, jaxlib, and the newest StableHLO this jaxlib reads."""
    import jaxlib

    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "stablehlo": compat.stablehlo_version()}


def portable_artifact(text: str, target: str) -> bytes:
    """HLO module text as a StableHLO portable artifact of version ``target``."""
    return compat.to_portable_artifact(_hlo_to_mlir(text), target)


def artifact_module(artifact: bytes) -> bytes:
    """The StableHLO module (MLIR bytecode) of a portable artifact, as ``compile_hlo``'s
    ``stablehlo`` takes it."""
    return compat.from_portable_artifact(artifact)


def artifact_mlir_text(artifact: bytes) -> str:
    """A StableHLO portable artifact as MLIR text."""
    return compat.portable_artifact_text(artifact)


def hlo_opcode_enum_names() -> list[str]:
    """The names of XLA's ``HloOpcode`` enum (``kAdd``, ...) in the installed jaxlib."""
    return [n for n in dir(xc.hlo.HloOpcode) if n.startswith("k")]


def device_count() -> int:
    """All devices, every process's (single-device programs run on this process's first)."""
    return len(backend().devices())


#: XLA debug options hlodsl compiles with, per platform, on top of XLA's
#: defaults. An option also named in ``XLA_FLAGS`` is left to ``XLA_FLAGS``.
#: Edit this dict to change them for the programs compiled after the edit.
COMPILER_OPTIONS: dict[str, dict[str, str]] = {
    # XLA:CPU hands dots, convolutions and reduce-windows to YNNPACK by default.
    # Its convolutions and its merged conv+pool subgraphs are slower here than
    # XLA's own Eigen kernels: VGG19 forward 0.75x the time at batch 1 and
    # 0.18x (NCHW) at batch 8, gradient 0.73x, with dots alone left to it; the
    # MLP training step, all dots, is unchanged (0.98x). Measured in
    # docs/benchmarks.md, section 8.
    "cpu": {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"},
}


def compiler_options() -> dict[str, str]:
    """The XLA options hlodsl's compiles set on this platform (see ``COMPILER_OPTIONS``).

    >>> compiler_options() if platform() == "cpu" else {}
    {'xla_cpu_experimental_ynn_fusion_type': 'LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT'}
    """
    flags = os.environ.get("XLA_FLAGS", "")
    return {k: v for k, v in COMPILER_OPTIONS.get(platform(), {}).items()
            if f"--{k}=" not in flags}


def _options(num_replicas: int, num_partitions: int):
    opts = xc.CompileOptions()
    opts.env_option_overrides = list(compiler_options().items())
    n = num_replicas * num_partitions
    if n > 1:
        if n > device_count():
            raise ValueError(
                f"the program needs {n} devices ({num_replicas} replicas x {num_partitions} "
                f"partitions) but the backend has {device_count()}; on CPU set "
                "XLA_FLAGS=--xla_force_host_platform_device_count=N before importing hlodsl")
        opts.num_replicas = num_replicas
        opts.num_partitions = num_partitions
        if num_partitions > 1:
            opts.executable_build_options.use_spmd_partitioning = True
        opts.device_assignment = xc.DeviceAssignment.create(
            np.arange(n).reshape(num_replicas, num_partitions))
    return opts


@functools.cache
def _malloc_trim():
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim  # glibc's; musl and macOS have none
    except (OSError, AttributeError):
        return None


def release_host_memory() -> bool:
    """Return the C heap's free pages to the OS (glibc's ``malloc_trim``); False where the
    C library has no such call.

    XLA's compile of a large program frees hundreds of MiB that glibc keeps in the
    heap, while a program's temporaries are big enough to be fresh mappings: left
    alone, the freed heap and the temporaries add up in the process's peak RSS.

    >>> isinstance(release_host_memory(), bool)
    True
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def compile_hlo(text: str, num_replicas: int = 1, num_partitions: int = 1,
                out_types: list[tuple[tuple[int, ...], np.dtype]] | None = None,
                stablehlo: bytes | None = None) -> Executable:
    """Parse and compile HLO module text.

    One device by default; ``num_replicas`` x ``num_partitions`` devices for
    replicated (collectives) or SPMD-partitioned programs. Raises
    ``XlaCompileError`` with XLA's first complaint and the offending lines of
    our text, never a bare XLA dump. ``stablehlo`` (the same program as MLIR
    bytecode, an exported artifact's) is what compiles then, ``text`` only
    names it in errors: XLA's HLO printer writes a ``-0.0`` constant as ``-0``,
    which its parser reads back as ``0.0``, so text converted from StableHLO
    is not the program.
    """
    be = backend()
    n = num_replicas * num_partitions
    opts = _options(num_replicas, num_partitions)
    if "lapack_" in text:
        _initialize_lapack()
    devices = tuple(be.local_devices()[:n])
    try:
        exe = _compile_and_load(be, text, devices, opts, (num_replicas, num_partitions),
                                stablehlo)
    except Exception as e:  # XLA raises its own runtime error type; wrap them all
        raise XlaCompileError(_explain(text, str(e), be, opts, n)) from None
    executable = Executable(exe, text, n)
    if out_types is not None and n == 1:
        executable.execute = _direct_execute(exe, out_types, be.local_devices()[0])
    _EXECUTABLES.add(executable)
    return executable


def _compile_and_load(be, text: str, devices: tuple, opts, shape: tuple,
                      stablehlo: bytes | None = None):
    """XLA's executable for ``text`` (or its ``stablehlo``) on ``devices``: loaded from
    the persistent cache (hlodsl.disk_cache) when an earlier process compiled it, else
    compiled and stored."""
    from . import disk_cache

    device_list = xc.DeviceList(devices)
    name = None
    if disk_cache.directory() is not None:
        import jaxlib

        environment = (jax.__version__, jaxlib.__version__, be.platform, be.platform_version,
                       devices[0].device_kind,
                       tuple(d.id for d in devices), shape,
                       tuple(sorted(opts.env_option_overrides)))
        # A StableHLO module is keyed by its own bytes: its HLO text may be lossy.
        name = disk_cache.key(text if stablehlo is None else
                              "stablehlo " + hashlib.sha256(stablehlo).hexdigest(), environment)
        data = disk_cache.load(name)
        if data is not None:
            try:
                exe = be.deserialize_executable(data, device_list, opts)
                stats["cache_loads"] = stats.get("cache_loads", 0) + 1
                return exe
            except Exception as e:  # stale for this runtime: compile it again
                import warnings

                warnings.warn(disk_cache.CacheWarning(
                    f"persistent compile cache: an entry could not be loaded ({e}); "
                    "compiling the module again"))
    module = _hlo_to_mlir(text) if stablehlo is None else stablehlo
    exe = be.compile_and_load(module, device_list, opts)
    stats["compiles"] += 1
    if name is not None:
        try:
            disk_cache.store(name, be.serialize_executable(exe))
        except Exception as e:  # some executables cannot be serialized: keep going
            import warnings

            warnings.warn(disk_cache.CacheWarning(
                f"persistent compile cache: executable not stored ({e})"))
    return exe


def _direct_execute(exe, out_types, device):
    """A faster ``execute`` for single-device programs whose outputs are known.

    jaxlib's ``LoadedExecutable.execute`` disassembles its results in Python
    (about 4 us of a 10 us call); result handlers built once per executable
    turn the outputs into buffers directly, as jax.jit's own dispatch does.
    """
    sharding = _single(device)
    handlers = [compat.result_handler(_aval(shape, dtype), sharding) for shape, dtype in out_types]
    return _handled(exe.execute_sharded, handlers)


def _handled(execute_sharded, handlers):
    """``execute(buffers) -> outputs``: PJRT's execute, then the result handlers."""
    calls = _CALLS

    def execute(buffers):
        out = execute_sharded(buffers).consume_with_handlers(handlers)
        calls[0] += 1
        if not calls[0] & 1023:
            _drain_call_records()
        return out

    return execute


# NOTE: jaxlib records the Python call stack on every execute_sharded call (about
# 100 to 500 bytes, by stack depth) and frees those records only in
# collect_garbage(), which jax runs from a gc callback: a loop of compiled calls
# that makes no other garbage grew by ~230 bytes per call (benchmarks/soak.py).
# Draining them every 1024 calls keeps memory flat, at no measurable cost.
_CALLS = [0]


_drain_call_records = compat.collect_garbage


_METADATA = re.compile(r", metadata=\{[^}]*\}")


def _explain(text: str, message: str, be=None, opts=None, n: int = 1) -> str:
    """Our message for an XLA rejection: its most precise error and the lines it names."""
    lines = text.splitlines()
    # With source metadata, verifier errors name Python lines (file:line:col);
    # compiling once more without it makes them name the HLO instruction.
    source = re.search(r"^(?:[A-Z_]+: )?(.+?):(\d+):\d+: error", message, flags=re.MULTILINE)
    if source and be is not None and "metadata=" in text:
        try:
            be.compile_and_load(_hlo_to_mlir(_METADATA.sub("", text)),
                                xc.DeviceList(tuple(be.local_devices()[:n])), opts)
        except Exception as e:  # the same rejection, now located by instruction
            message = str(e)
    errors = re.findall(r"error: (.*?)(?:, error:|$)", message, flags=re.MULTILINE)
    # The last specific complaint is XLA's most precise one; the StableHLO
    # round-trip adds a generic "Failed to parse" that says nothing.
    errors = [re.sub(r'^loc\("[^"]*"\):\s*', "", e) for e in errors
              if not e.startswith("Failed to parse using StableHLO")]
    first = errors[-1] if errors else (message.splitlines() or [""])[0]
    shown: list[int] = []
    for m in re.finditer(r"was parsing (\d+):(\d+)", message):
        shown.append(int(m.group(1)))
    # Verifier errors name instructions (``loc("f/add.3")``, the op_name we
    # emit, or the bare instruction name) rather than lines.
    for loc in re.findall(r'loc\("([^"]+)"\)', message):
        name = loc.rsplit("/", 1)[-1]
        shown += [i for i, ln in enumerate(lines, 1)
                  if re.match(rf"\s*(ROOT )?%?{re.escape(name)} = ", ln)]
    shown = list(dict.fromkeys(n for n in shown if 0 < n <= len(lines)))
    msg = f"XLA rejected the HLO module hlodsl emitted: {first.strip()}"
    if source:
        msg += f"\n  from the op called at {source.group(1)}:{source.group(2)}"
    if shown:
        msg += "\noffending lines:\n" + "\n".join(f"  {n:4d} | {lines[n - 1]}" for n in shown[:5])
    return msg + ("\n(a bug in hlodsl or in a user-defined op's emission; "
                  "hlodsl.code_hlo shows the whole module)")


# -- several devices: sharded buffers, partitioned programs, several processes ----------
# A sharded hlodsl array holds one jax Array whose sharding spans the mesh's
# devices: PJRT's own description of a buffer per device. hlodsl's Mesh and
# NamedSharding (hlodsl.sharding) are translated to jax's here and only here.

#: Which SPMD partitioner compiles annotated programs. jaxlib 0.10.2 has Shardy
#: (``use_shardy_partitioner``), which reads the ``xla.sdy.*`` frontend attributes
#: hlodsl emits; GSPMD (``sharding={devices=...}``) is deprecated there and is
#: not emitted (a jaxlib without Shardy gets a clear error at compile).
PARTITIONER = "shardy" if hasattr(xc.CompileOptions().executable_build_options,
                                  "use_shardy_partitioner") \
    else None

_JAX_SHARDINGS: dict = {}


def jax_sharding(sharding):
    """jax's NamedSharding for an hlodsl NamedSharding (cached)."""
    out = _JAX_SHARDINGS.get(sharding)
    if out is None:
        from jax.sharding import Mesh as JMesh, NamedSharding as JNamed, PartitionSpec as JP

        devs = backend().devices()
        mesh = JMesh(np.vectorize(lambda i: devs[i], otypes=[object])(sharding.mesh.device_ids),
                     sharding.mesh.axis_names)
        # The spec without trailing Nones: shardings that compare equal (P() and
        # P(None, None)) share this entry, and jax refuses the longer on a scalar.
        parts = [None if not a else a[0] if len(a) == 1 else a for a in sharding.normalized()]
        out = _JAX_SHARDINGS[sharding] = JNamed(mesh, JP(*parts))
    return out


def put_sharded(host: np.ndarray, sharding):
    """Copy a host array onto the devices of ``sharding``, each device its own shard.

    The data is copied into a private buffer first, as in ``to_device``: the
    shards must not alias memory the caller can still write.
    """
    with _x64(True):
        return jax.device_put(_private_copy(host), jax_sharding(sharding))


def is_sharded(buf) -> bool:
    """Whether a buffer spans more than one device."""
    return len(buf.sharding.device_set) > 1


def named_layout(buf) -> tuple[np.ndarray, tuple[str, ...], tuple] | None:
    """``(device indices in mesh order, axis names, partition spec entries)`` of a
    buffer laid out over a mesh (even of one device), None for a plain one-device
    buffer (``hlodsl.sharding.sharding_of`` makes the NamedSharding)."""
    s = buf.sharding
    mesh = getattr(s, "mesh", None)
    if len(s.device_set) == 1 and (mesh is None or not hasattr(s, "spec")):
        return None  # a one-device buffer
    devs = backend().devices()
    if mesh is None or not hasattr(s, "spec"):
        raise TypeError(f"a buffer with sharding {s} (not a named sharding) cannot be an "
                        "hlodsl array")
    ids = np.vectorize(devs.index, otypes=[np.int64])(mesh.devices)
    return ids, tuple(mesh.axis_names), tuple(s.spec)


def shards(buf) -> list[tuple[int, tuple, object]]:
    """``(device index, global index, single-device buffer)`` for each local shard."""
    devs = backend().devices()
    return [(devs.index(sh.device), sh.index, sh.data) for sh in buf.addressable_shards]


def is_fully_addressable(buf) -> bool:
    return buf.is_fully_addressable


def readable(buf):
    """A buffer numpy can read for the whole array: ``buf``, or one of its local
    copies when it is replicated over devices of several processes."""
    if not buf.is_fully_addressable and buf.is_fully_replicated:
        return buf.addressable_data(0)
    return buf


def replicate_on(buf, sharding):
    """A one-device (or differently laid out) buffer moved to ``sharding``'s layout."""
    with _x64(True):
        return jax.device_put(buf, jax_sharding(sharding))


def compile_partitioned(text: str, device_ids: list[int]) -> Executable:
    """Compile a module with sharding annotations for the devices ``device_ids``
    (partition i runs on ``device_ids[i]``), through XLA's SPMD partitioner."""
    if PARTITIONER is None:
        raise XlaCompileError("this jaxlib has no Shardy partitioner, which hlodsl's sharding "
                              "annotations need (jaxlib >= 0.4.36)")
    be = backend()
    devs = be.devices()
    n = len(device_ids)
    opts = xc.CompileOptions()
    opts.env_option_overrides = list(compiler_options().items())
    opts.num_replicas, opts.num_partitions = 1, n
    eb = opts.executable_build_options
    eb.use_spmd_partitioning = True
    eb.use_shardy_partitioner = True
    chosen = [devs[i] for i in device_ids]
    # Partition i runs on chosen[i]; the assignment names devices by their global
    # ids (which differ from positions once several processes share the program).
    opts.device_assignment = xc.DeviceAssignment.create(
        np.array([d.id for d in chosen]).reshape(1, n))
    if "lapack_" in text:
        _initialize_lapack()
    try:
        exe = _compile_and_load(be, text, tuple(chosen), opts, ("spmd", n))
    except Exception as e:
        raise XlaCompileError(_explain(text, str(e))) from None
    executable = Executable(exe, text, n)
    _EXECUTABLES.add(executable)
    return executable


def output_blocks(exe: Executable, ranks: list[int]) -> list[list[tuple[int, ...]] | None]:
    """Per output of a partitioned program: the block each partition holds (the
    position of its shard in the grid of shards), or None when XLA laid the output
    out in a way that is not a grid of blocks (maximal, manual)."""
    out = []
    n = exe.num_devices
    shardings = exe._exe.get_output_shardings()
    if shardings is None:  # one partition: nothing is split
        return [[(0,) * rank] * n for rank in ranks]
    for op, rank in zip(shardings, ranks):
        h = xc.HloSharding.from_proto(op)
        if h.is_replicated():
            out.append([(0,) * rank] * n)
            continue
        if not h.is_tiled() or h.is_manual() or h.is_maximal():
            out.append(None)
            continue
        dims = list(h.tile_assignment_dimensions())
        grid = np.asarray(h.tile_assignment_devices()).reshape(dims)
        blocks = [None] * n
        for pos, p in np.ndenumerate(grid):
            blocks[int(p)] = tuple(pos[:rank])
        out.append(blocks if len(dims) >= rank else None)
    return out


def partitioned_executor(exe: Executable, outs: list):
    """``run(args) -> outputs`` for a partitioned program on global buffers; ``outs`` is
    ``[(shape, dtype, sharding)]`` per output. Result handlers are built once here,
    so a call is PJRT's execute and the handlers (as jax.jit's own dispatch)."""
    handlers = [compat.result_handler(_aval(shape, dtype), jax_sharding(s))
                for shape, dtype, s in outs]
    return _handled(exe._exe.execute_sharded, handlers)


def initialize_distributed(coordinator_address: str, num_processes: int, process_id: int,
                           timeout_s: int) -> None:
    """Join a group of processes through PJRT's distributed runtime (jax's coordination
    service), CPU collectives through gloo; before the client starts."""
    if _started():
        raise RuntimeError("hd.distributed.initialize must run before anything else uses "
                           "the runtime (no arrays or compiled functions yet) in this process")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator_address,
                               num_processes=num_processes, process_id=process_id,
                               initialization_timeout=timeout_s,
                               heartbeat_timeout_seconds=timeout_s,
                               shutdown_timeout_seconds=timeout_s,
                               # hlodsl.clusters read the launcher's environment already;
                               # jax's own reading would add requirements of its own.
                               cluster_detection_method="deactivate")


def shutdown_distributed() -> None:
    jax.distributed.shutdown()


def process_index() -> int:
    return backend().process_index()


def process_count() -> int:
    return len({d.process_index for d in backend().devices()})


def local_device_ids() -> list[int]:
    """Indices in ``backend().devices()`` of this process's devices."""
    devs = backend().devices()
    return [devs.index(d) for d in backend().local_devices()]


def from_process_local_data(sharding, local: np.ndarray, global_shape: tuple[int, ...]):
    """The global buffer whose shards on this process's devices come from ``local``."""
    with _x64(True):
        return jax.make_array_from_process_local_data(jax_sharding(sharding),
                                                      _private_copy(local), global_shape)


def cost_analysis(exe: Executable) -> dict[str, float]:
    """XLA's cost estimate of a compiled program, per device: ``flops`` and
    ``bytes accessed`` among others."""
    return dict(exe._exe.cost_analysis())


# -- programs from elsewhere: HLO text for hlodsl.import_hlo ------------------------------

_ELIDED = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*\bconstant\(\{\.\.\.\}\)")
_CONSTANT_LINE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*\bconstant\(")


def computation_text(computation) -> str:
    """HLO text of an ``XlaComputation`` with its source metadata and whole constants.

    ``as_hlo_module().to_string()`` keeps each instruction's stack frame (the
    producer's file and line) but elides large constants as ``{...}``;
    ``as_hlo_text(print_large_constants=True)`` prints them but no metadata. The
    same module prints the same names in both, so elided constants are filled in.
    """
    text = computation.as_hlo_module().to_string()
    if "{...}" not in text:
        return text
    full = {}
    for line in computation.as_hlo_text(print_large_constants=True).splitlines():
        m = _CONSTANT_LINE.match(line)
        if m:
            full[m[1]] = line[line.index("constant("):]
    out = []
    for line in text.splitlines():
        m = _ELIDED.match(line)
        if m and m[1] in full:
            line = line.replace("constant({...})", _constant_call(full[m[1]]))
        out.append(line)
    return "\n".join(out) + "\n"


def _constant_call(text: str) -> str:
    """``constant(...)`` with balanced parentheses from the start of ``text``."""
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch == ")":
            return text[:k + 1]
    return text


def stablehlo_text(module: str | bytes) -> str:
    """HLO text (with source metadata, constants whole) of a StableHLO/MLIR module,
    text or bytecode. XLA prints a ``-0.0`` constant as ``-0``, which reads back as
    ``0.0``: compile the StableHLO itself (``compile_hlo(stablehlo=...)``), not this text."""
    return computation_text(compat.stablehlo_to_computation(module))


def check_hlo_text(text: str) -> None:
    """Raise ``ValueError`` with XLA's own message where ``text`` is not a valid HLO module."""
    try:
        xc.hlo.hlo_module_from_text(text)
    except Exception as e:  # noqa: BLE001 (XLA raises its own status error types)
        raise ValueError(str(e)) from None


def lower_jax(fn, args: tuple):
    """``fn`` lowered by ``jax.jit`` on arrays like ``args`` (a pytree of arrays).

    Returns ``(hlo_text, flatten, unflatten)``: the module's text with source
    metadata, a function from arguments structured as ``args`` to the module's
    parameter list, and one from the module's results to ``fn``'s output
    structure. Unused arguments stay parameters (``keep_unused``), so the
    parameter list is always the flattened arguments.
    """
    leaves, treedef = jax.tree_util.tree_flatten(args)
    specs = [jax.ShapeDtypeStruct(tuple(leaf.type.shape), leaf.type.dtype.np_dtype)
             if hasattr(leaf, "type") else
             jax.ShapeDtypeStruct(np.shape(leaf), np.result_type(leaf)) for leaf in leaves]

    @functools.wraps(fn)  # jax names the module and its op_names after fn
    def flat_fn(*flat):
        return fn(*jax.tree_util.tree_unflatten(treedef, flat))

    lowered = jax.jit(flat_fn, keep_unused=True).lower(*specs)
    out_tree = lowered.out_tree

    def flatten(call_args: tuple) -> list:
        flat, tree = jax.tree_util.tree_flatten(call_args)
        if tree != treedef:
            raise TypeError(f"arguments structured as {tree}, but the jax function was "
                            f"imported for {treedef}")
        return flat

    def unflatten(results):
        flat = list(results) if isinstance(results, tuple) else [results]
        return jax.tree_util.tree_unflatten(out_tree, flat)

    return computation_text(lowered.compiler_ir("hlo")), flatten, unflatten


def jax_stage_text(stage) -> str:
    """HLO text of a jax ``Lowered`` or ``Compiled`` stage (the latter optimised by XLA)."""
    if hasattr(stage, "compiler_ir"):
        return computation_text(stage.compiler_ir("hlo"))
    return stage.as_text()
