"""Compiling HLO text into executables with hlodsl's XLA options, and running them.

``compile_hlo`` parses and compiles a module (one device, or replicas x partitions),
through the persistent cache; XLA's rejections become ``XlaCompileError`` with the
offending lines of our text. ``Executable.execute`` is the hot path of a compiled call.

>>> import numpy as np
>>> exe = compile_hlo('''HloModule m
... ENTRY e {
...   ROOT c = f32[2] constant({1, 2})
... }''')
>>> [np.asarray(b) for b in exe.execute([])]
[array([1., 2.], dtype=float32)]
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import threading

import numpy as np
import jax
import jaxlib.xla_client as xc

from hlodsl.errors import XlaCompileError

from . import jaxlib_compat as compat
from .buffers import aval, single_device
from .client import backend, device_count, platform, track, x64
from .host_callbacks import Recorded, with_callbacks
from .lapack import initialize_lapack
from .program_options import program_options

__all__ = ["Executable", "compile_hlo", "compile_and_load", "stats", "COMPILER_OPTIONS",
           "compiler_options", "extra_compiler_options", "release_host_memory",
           "cost_analysis", "explain", "with_handlers", "METADATA"]


#: Counters for tests and benchmarks: how many XLA compiles have run.
stats = {"compiles": 0}


class Executable:
    """A compiled XLA program. ``execute(buffers)`` returns the output buffers.

    A tuple-shaped result comes back as one buffer per tuple element.
    """

    __slots__ = ("_exe", "text", "execute", "num_devices", "host_callbacks", "__weakref__")

    def __init__(self, exe, text: str, num_devices: int = 1, host_callbacks: tuple = ()):
        self._exe = exe
        self.text = text
        self.num_devices = num_devices
        #: The Python callables the program calls (jaxlib's executable holds them too).
        self.host_callbacks = host_callbacks
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
        with x64(True):
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




#: XLA debug options hlodsl compiles with, per platform, on top of XLA's
#: defaults. An option also named in ``XLA_FLAGS`` is left to ``XLA_FLAGS``.
#: Edit this dict to change them for the programs compiled after the edit.
#: ``program_options.PROGRAM_RULES`` add options chosen per program over these.
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

    >>> COMPILER_OPTIONS["cpu"]
    {'xla_cpu_experimental_ynn_fusion_type': 'LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT'}
    >>> compiler_options() == COMPILER_OPTIONS.get(platform(), {})  # none set in XLA_FLAGS
    True
    """
    flags = os.environ.get("XLA_FLAGS", "")
    return {k: v for k, v in COMPILER_OPTIONS.get(platform(), {}).items()
            if f"--{k}=" not in flags}


_EXTRA = threading.local()


@contextlib.contextmanager
def extra_compiler_options(options: dict[str, str | bool | int]):
    """XLA options added to the compiles this thread makes inside the block (the
    persistent cache keys them too): ``hd.profile`` compiles its program for XLA:GPU
    with ``xla_gpu_enable_command_buffer`` empty, as jax does for its profiles.

    >>> with extra_compiler_options({"xla_cpu_enable_fast_math": False}):
    ...     _options(1, 1).env_option_overrides[-1]
    ('xla_cpu_enable_fast_math', False)
    """
    before = getattr(_EXTRA, "options", {})
    _EXTRA.options = {**before, **options}
    try:
        yield
    finally:
        _EXTRA.options = before


def _options(num_replicas: int, num_partitions: int, extra: dict | None = None,
             text: str | None = None):
    opts = xc.CompileOptions()
    base = compiler_options()
    chosen = program_options(text, platform(), base) if text is not None else {}
    opts.env_option_overrides = list({**base, **chosen,
                                      **getattr(_EXTRA, "options", {}),
                                      **(extra or {})}.items())
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
                stablehlo: bytes | None = None,
                host_callbacks: tuple | None = None,
                options: dict[str, str] | None = None) -> Executable:
    """Parse and compile HLO module text.

    One device by default; ``num_replicas`` x ``num_partitions`` devices for
    replicated (collectives) or SPMD-partitioned programs. Raises
    ``XlaCompileError`` with XLA's first complaint and the offending lines of
    our text, never a bare XLA dump. ``stablehlo`` (the same program as MLIR
    bytecode, an exported artifact's) is what compiles then, ``text`` only
    names it in errors: XLA's HLO printer writes a ``-0.0`` constant as ``-0``,
    which its parser reads back as ``0.0``, so text converted from StableHLO
    is not the program. ``options`` are XLA debug options for this compile, on top
    of (and over) ``compiler_options()``.

    ``host_callbacks`` are ``(name, callable)`` pairs: the Python functions the
    program's Python-callback custom calls name by index (``hlodsl.runtime.
    host_callbacks``); by default those the text carries (``text.host_callbacks``,
    as ``hlodsl.ir.printer.module_text`` hands them over). Such a program runs to
    completion before its ``execute`` returns, and raises what a callback raised.
    """
    be = backend()
    n = num_replicas * num_partitions
    opts = _options(num_replicas, num_partitions, options, text)
    if "lapack_" in text:
        initialize_lapack()
    if host_callbacks is None:
        host_callbacks = getattr(text, "host_callbacks", ())
    failures: list = []
    callbacks = tuple(Recorded(fn, name, failures) for name, fn in host_callbacks)
    if callbacks and n > 1:
        raise NotImplementedError(
            f"a program over {n} devices calls Python ({', '.join(c.name for c in callbacks)}"
            "): host callbacks run in single-device programs only")
    devices = tuple(be.local_devices()[:n])
    try:
        exe = compile_and_load(be, text, devices, opts, (num_replicas, num_partitions),
                                stablehlo, callbacks)
    except ImportError:
        raise
    except Exception as e:  # XLA raises its own runtime error type; wrap them all
        raise XlaCompileError(explain(text, str(e), be, opts, n)) from None
    executable = Executable(exe, text, n, callbacks)
    if callbacks:
        handlers = None if out_types is None else _handlers(out_types, be.local_devices()[0])
        executable.execute = with_callbacks(exe.execute_sharded, handlers, failures,
                                            _module_name(text))
    elif out_types is not None and n == 1:
        executable.execute = _direct_execute(exe, out_types, be.local_devices()[0])
    track(executable)
    return executable


def _module_name(text: str) -> str:
    m = re.match(r"HloModule ([^\s,]+)", text)
    return m.group(1) if m else "module"


def compile_and_load(be, text: str, devices: tuple, opts, shape: tuple,
                      stablehlo: bytes | None = None, host_callbacks: tuple = ()):
    """XLA's executable for ``text`` (or its ``stablehlo``) on ``devices``: loaded from
    the persistent cache (hlodsl.runtime.disk_cache) when an earlier process compiled it, else
    compiled and stored. A program with ``host_callbacks`` (Python functions it calls) is
    never cached on disk: a later process would have no functions to call."""
    from . import disk_cache

    device_list = xc.DeviceList(devices)
    if host_callbacks:
        module = compat.hlo_to_stablehlo(text, be.platform) if stablehlo is None else stablehlo
        exe = compat.compile_with_host_callbacks(be, module, device_list, opts,
                                                 list(host_callbacks))
        stats["compiles"] += 1
        return exe
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
    module = compat.hlo_to_stablehlo(text, be.platform) if stablehlo is None else stablehlo
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
    return with_handlers(exe.execute_sharded, _handlers(out_types, device))


def _handlers(out_types, device) -> list:
    sharding = single_device(device)
    return [compat.result_handler(aval(shape, dtype), sharding) for shape, dtype in out_types]


def with_handlers(execute_sharded, handlers):
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


METADATA = re.compile(r", metadata=\{[^}]*\}")


_GRID = re.compile(r"Kernel '([^']+)' launch needs more blocks \((\d+), (\d+)\) than allowed "
                   r"by hardware \((\d+), (\d+)\)")
_ARRAY = re.compile(r"\b([a-z]+\d*[a-z0-9]*)\[([\d,]+)\]")


def _largest_array(text: str) -> str:
    """The array type of the most elements that ``text`` names (``f32[2305843009213693951]``)."""
    best, size = "", -1
    for m in _ARRAY.finditer(text):
        n = int(np.prod([int(d) for d in m.group(2).split(",")], dtype=object))
        if n > size:
            best, size = m.group(0), n
    return best


def explain(text: str, message: str, be=None, opts=None, n: int = 1) -> str:
    """Our message for an XLA rejection: its most precise error and the lines it names.

    A kernel grid larger than the device allows is no bug of hlodsl's but an array too
    large for any kernel (XLA:GPU's RET_CHECK says it in its own words):

    >>> print(explain("ROOT z = f32[4611686018427387903] broadcast(c)", "INTERNAL: RET_CHECK "
    ...               "failure ... Kernel 'loop_broadcast_fusion' launch needs more blocks "
    ...               "(2147483393, 8388609) than allowed by hardware (2147483647, 65535)."))
    XLA:GPU cannot launch a kernel over f32[4611686018427387903]: its kernel
    'loop_broadcast_fusion' needs a grid of 2147483393 x 8388609 blocks, the device
    allows 2147483647 x 65535; no GPU kernel covers an array this large (nor does any
    GPU's memory)
    """
    grid = _GRID.search(message)
    if grid:
        kernel, bx, by, lx, ly = grid.groups()
        return (f"XLA:GPU cannot launch a kernel over {_largest_array(text)}: its kernel "
                f"'{kernel}' needs a grid of {bx} x {by} blocks, the device allows {lx} x {ly}; "
                "no GPU kernel covers an array this large (nor does any GPU's memory)")
    lines = text.splitlines()
    # With source metadata, verifier errors name Python lines (file:line:col);
    # compiling once more without it makes them name the HLO instruction.
    source = re.search(r"^(?:[A-Z_]+: )?(.+?):(\d+):\d+: error", message, flags=re.MULTILINE)
    if source and be is not None and "metadata=" in text:
        try:
            be.compile_and_load(compat.hlo_to_stablehlo(METADATA.sub("", text), be.platform),
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


def cost_analysis(exe: Executable) -> dict[str, float]:
    """XLA's cost estimate of a compiled program, per device: ``flops`` and
    ``bytes accessed`` among others."""
    return dict(exe._exe.cost_analysis())
