"""Process-wide settings: how much hlodsl caches, and when it warns about recompiling.

Every cache hlodsl keeps is bounded by one of these numbers (docs/safety.md
lists them); change them at any time, the caches apply a new limit at their
next insertion.

>>> import hlodsl as hd
>>> hd.config.compile_cache_size
64
>>> hd.config.recompile_warning = 16   # warn later; 0 switches the warning off
>>> hd.config.recompile_warning = 8
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["Config", "config", "memory_size", "format_bytes"]


@dataclasses.dataclass
class Config:
    """The settings; ``hlodsl.config`` is the one instance."""

    #: Signatures (compiled executables) kept per ``hd.compile``d function; the least
    #: recently used one is dropped past it (``hd.compile(f, cache_size=...)`` overrides).
    compile_cache_size: int = 64
    #: One-op modules kept for eager op calls, over all ops and operand types.
    eager_cache_size: int = 4096
    #: Small modules kept for control flow and transformations run eagerly.
    eager_program_cache_size: int = 256
    #: Control flow run eagerly reuses its staged program while the functions it
    #: stages read the same code, globals and closure values (transforms.fingerprint);
    #: False stages at every call.
    eager_trace_cache: bool = True
    #: Signatures kept compiled per stdlib function called eagerly (each call of an
    #: elementwise function on concrete arrays runs as one module per signature).
    eager_module_signatures: int = 16
    #: Eager elementwise ops (and the stdlib functions that compile to one rounding
    #: instruction) on small arrays are recorded, not run, until a value is read, and a
    #: chain of them runs as one executable once its structure recurs (hlodsl.transforms
    #: .lazy; docs/staging.md): the values are bit for bit those of running them one by
    #: one. False runs every eager op at once.
    eager_fusion: bool = True
    #: A recorded chain runs when it has this many ops (or when a value is read).
    eager_fusion_ops: int = 32
    #: A chain's structure seen this many times is compiled into one executable (before
    #: that, its ops run one by one when it runs).
    eager_fusion_repeats: int = 2
    #: The largest result (bytes) an eager op may have to be recorded.
    eager_fusion_bytes: int = 65536
    #: Compiled chains kept (the least recently used is dropped).
    eager_fusion_cache_size: int = 256
    #: Staged sub-computations (the Python callables given to Map, Reduce, While, ...).
    subcomputation_cache_size: int = 4096
    #: A function that has compiled more signatures than this warns once, naming the
    #: argument that keeps changing (then again at twice as many, and so on); 0: never.
    recompile_warning: int = 8
    #: Compiled executables are also kept on disk for later processes (hlodsl.runtime.disk_cache;
    #: ``HLODSL_CACHE_DIR`` moves the directory, empty switches it off).
    persistent_cache: bool = True
    #: Bytes the persistent cache directory may hold; the least recently used go first.
    persistent_cache_bytes: int = 2**30
    #: Kernels of ``xp.linalg``'s factorizations (LU, Cholesky, eigh, eig, SVD, QR):
    #: ``"auto"`` calls jaxlib's LAPACK on a CPU, cuSOLVER on a GPU, where jaxlib has
    #: them, and HLO loops elsewhere; ``"hlo"`` always the HLO loops; ``"lapack"`` or
    #: ``"cusolver"`` those kernels, an error on a platform without them. The platform
    #: is the one staged for (``hlodsl.ir.target``). Read when a function is staged; a
    #: change empties hlodsl's caches, so every compiled function and eager op stages
    #: again with the new kernels at its next call.
    linalg_kernels: str = "auto"
    #: The precision of every dot and convolution whose ``precision`` is not given
    #: (``ops.Dot``, ``ops.Convolution``, and so ``matmul``, ``tensordot``, ``einsum``,
    #: ``nn.linear``, ``nn.conv``...), as jax's ``jax_default_matmul_precision``:
    #: ``"default"`` lets the backend choose (TF32 for float32 on recent NVIDIA GPUs),
    #: ``"high"`` (bf16x3 / TF32x3 there) and ``"highest"`` (full float32). XLA:CPU
    #: computes at the operands' own precision whatever is asked. Read when a function
    #: is staged; a change empties hlodsl's caches, as ``linalg_kernels`` does.
    default_matmul_precision: str = "default"
    #: The floating type of values that do not say theirs: Python floats (``hd.array(1.0)``,
    #: ``x_int + 0.5``, a float argument of a compiled function), creation functions given
    #: no ``dtype`` (``zeros``, ``ones``, ``full``, ``eye``, ``arange``, ``linspace``) and
    #: ``default_dtypes()``: ``"float64"`` (numpy's) or ``"float32"`` (what an ML user
    #: expects; complex numbers are then complex64). numpy arrays keep their own type.
    #: Read when a function is staged; a change empties hlodsl's caches.
    default_float: str = "float64"
    #: ``memory_limit="auto"`` (``hd.compile``, ``hd.code_hlo``) is this fraction of the
    #: memory free when a signature compiles: the device's (what its allocator has not
    #: handed out), or on a CPU the host's available memory.
    auto_memory_fraction: float = 0.8

    def __setattr__(self, name, value):
        allowed = _CHOICES.get(name)
        if allowed is not None:
            if value not in allowed:
                raise ValueError(f"hlodsl.config.{name}: must be one of "
                                 f"{', '.join(map(repr, allowed))}, got {value!r}")
            if value != getattr(self, name, value):  # (not while __init__ sets it)
                from .cache import clear_all

                super().__setattr__(name, value)
                clear_all()  # programs staged under the old setting must not run again
                return
        super().__setattr__(name, value)


#: The values ``Config.linalg_kernels`` takes.
LINALG_KERNELS = ("auto", "hlo", "lapack", "cusolver")
#: HLO's operand precisions (``operand_precision={p,p}`` on a dot or convolution).
PRECISIONS = ("default", "high", "highest")
#: The values ``Config.default_float`` takes.
DEFAULT_FLOATS = ("float64", "float32")
#: Settings read while staging, with the values each takes: changing one empties the caches.
_CHOICES = {"linalg_kernels": LINALG_KERNELS, "default_matmul_precision": PRECISIONS,
            "default_float": DEFAULT_FLOATS}


config = Config()


_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


#: What ``memory_size("auto")`` measures: the free memory of the runtime's first device,
#: in bytes. The runtime (a floor above) hands it down when it is imported.
_FREE_MEMORY: list = []


def use_free_memory(measure) -> None:
    """Make ``measure() -> bytes`` what ``memory_size("auto")`` takes its fraction of."""
    _FREE_MEMORY[:] = [measure]


def memory_size(value, what: str = "memory_limit") -> int:
    """Bytes from an int or a string with a unit: ``"1GiB"``, ``"500 MB"``, ``"2e9"``.

    ``"auto"``: ``config.auto_memory_fraction`` of the memory free now on the
    runtime's device (the host's available memory on a CPU).

    >>> memory_size("1GiB"), memory_size("1.5 GB"), memory_size(4096)
    (1073741824, 1500000000, 4096)
    >>> 0 < memory_size("auto")
    True
    >>> memory_size("a lot")
    Traceback (most recent call last):
    ValueError: memory_limit: 'a lot' is not a size; give bytes (an int) or a number and a unit: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB ("1GiB", "500 MB"), or "auto"
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"{what}: give bytes (an int) or a string such as \"1GiB\", got "
                        f"{value!r} ({type(value).__name__})")
    if isinstance(value, str) and value.strip().lower() == "auto":
        return _auto(what)
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*", value)
        unit = m and _UNITS.get(m.group(2).lower())
        if not unit:
            raise ValueError(f"{what}: {value!r} is not a size; give bytes (an int) or a number "
                             "and a unit: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB (\"1GiB\", "
                             "\"500 MB\"), or \"auto\"")
        value = float(m.group(1)) * unit
    if value != value or value <= 0 or value == float("inf"):
        raise ValueError(f"{what}: must be a positive number of bytes, got {value!r}")
    return int(value)


def _auto(what: str) -> int:
    fraction = config.auto_memory_fraction
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) \
            or not 0 < fraction <= 1:
        raise ValueError(f"hlodsl.config.auto_memory_fraction: must be a number in (0, 1], "
                         f"got {fraction!r}")
    if not _FREE_MEMORY:
        raise RuntimeError(f"{what}: 'auto' measures the device's free memory through "
                           "hlodsl.runtime (import hlodsl)")
    free = int(fraction * _FREE_MEMORY[0]())
    if free <= 0:
        raise ValueError(f"{what}: 'auto' found no free memory on the device; give a size")
    return free


def format_bytes(n: int) -> str:
    """``n`` bytes in the largest binary unit that keeps it at least 1: ``"1.5 GiB"``."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"
