"""Process-wide settings: how much hlodsl caches, and when it warns about recompiling.

Every cache hlodsl keeps is bounded by one of these numbers (docs/safety.md
lists them); change them at any time, the caches apply a new limit at their
next insertion.

>>> import hlodsl as hd
>>> hd.config.compile_cache_size
64
>>> hd.config.recompile_warning = 16   # warn later; 0 switches the warning off
>>> hd.config.recompile_warning = 8
>>> hd.config.default_floot = "float32"
Traceback (most recent call last):
AttributeError: hlodsl.config has no setting 'default_floot'; did you mean 'default_float'?

Every value is checked (a count is an int of at least 1, a flag True or False, a
size a number of bytes or ``"2GiB"``). A setting that staging reads
(``linalg_kernels``, ``default_matmul_precision``, ``default_float``) may change
while other threads compile: the change waits until none of them is staging,
then empties the caches; changed from inside a function being staged, it is
refused (``RuntimeError``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import math
import re
import threading

__all__ = ["Config", "config", "memory_size", "format_bytes", "staging_share"]


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
    #: Seconds the child process that reads StableHLO from outside (``hd.import_hlo`` of
    #: bytes or MLIR text, ``hd.deserialize``) may take per program before it is stopped
    #: and the read refused (hlodsl.runtime.isolated).
    untrusted_read_timeout_s: float = 30.0

    def __setattr__(self, name, value):
        if name not in _FIELDS:
            raise AttributeError(_unknown(name))
        value = _VALIDATORS[name](name, value)
        allowed = _CHOICES.get(name)
        if allowed is not None:
            if value not in allowed:
                raise ValueError(f"hlodsl.config.{name}: must be one of "
                                 f"{', '.join(map(repr, allowed))}, got {value!r}")
            if value != getattr(self, name, value):  # (not while __init__ sets it)
                from .cache import clear_all

                # Staging reads it: wait until no thread stages, then change it and empty
                # the caches, so that nothing staged under the old value runs again.
                with _GATE.exclusive(name):
                    super().__setattr__(name, value)
                    clear_all()
                return
        super().__setattr__(name, value)

    def __getattr__(self, name):  # only for names that are not settings
        raise AttributeError(_unknown(name))


def _unknown(name: str) -> str:
    close = difflib.get_close_matches(name, _FIELDS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else \
        f"; the settings are {', '.join(sorted(_FIELDS))}"
    return f"hlodsl.config has no setting {name!r}{hint}"


def _count(minimum: int):
    def check(name, value):
        if type(value) is not int:  # (bool is an int to Python, never a count here)
            raise TypeError(f"hlodsl.config.{name}: must be an int, got {value!r} "
                            f"({type(value).__name__})")
        if value < minimum:
            raise ValueError(f"hlodsl.config.{name}: must be at least {minimum}, got {value}")
        return value
    return check


def _flag(name, value):
    if type(value) is not bool:
        raise TypeError(f"hlodsl.config.{name}: must be True or False, got {value!r}")
    return value


def _choice(name, value):
    if type(value) is not str:
        raise TypeError(f"hlodsl.config.{name}: must be a str, got {value!r} "
                        f"({type(value).__name__})")
    return value


def _bytes(name, value):
    return memory_size(value, f"hlodsl.config.{name}")


def _seconds(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or value <= 0:
        raise ValueError(f"hlodsl.config.{name}: must be a positive, finite number of "
                         f"seconds, got {value!r}")
    return float(value)


def _fraction(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not 0 < value <= 1:
        raise ValueError(f"hlodsl.config.{name}: must be a number in (0, 1], got {value!r}")
    return float(value)


_VALIDATORS = {
    "compile_cache_size": _count(1), "eager_cache_size": _count(1),
    "eager_program_cache_size": _count(1), "eager_module_signatures": _count(1),
    "subcomputation_cache_size": _count(1), "recompile_warning": _count(0),
    "eager_trace_cache": _flag, "persistent_cache": _flag, "persistent_cache_bytes": _bytes,
    "linalg_kernels": _choice, "default_matmul_precision": _choice, "default_float": _choice,
    "untrusted_read_timeout_s": _seconds, "auto_memory_fraction": _fraction,
    "eager_fusion": _flag, "eager_fusion_ops": _count(1), "eager_fusion_repeats": _count(1),
    "eager_fusion_bytes": _count(0), "eager_fusion_cache_size": _count(1),
}
_FIELDS = tuple(_VALIDATORS)


class _Gate:
    """Staging threads share it; a change of a setting staging reads takes it alone.

    A thread holds a share from the start of a staging (or a compile that stages)
    to the insertion of what it made into the caches; it may take it again while it
    holds it. A change waits for every share to end and holds new ones off meanwhile
    (shares are taken before any other hlodsl lock, so none of their holders waits on
    a thread that waits here). A change from a thread that holds a share would wait
    for itself: it is refused instead.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._local = threading.local()

    @contextlib.contextmanager
    def share(self):
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._cond:
                while self._writer:
                    self._cond.wait()
                self._readers += 1
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                with self._cond:
                    self._readers -= 1
                    if self._readers == 0:
                        self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self, name: str):
        if getattr(self._local, "depth", 0):
            raise RuntimeError(
                f"hlodsl.config.{name} cannot change while this thread is staging a function "
                "(a function being compiled, or a transformation of it, set it): set it "
                "before compiling")
        with self._cond:
            while self._writer:
                self._cond.wait()
            self._writer = True
            while self._readers:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


_GATE = _Gate()


def staging_share():
    """A context in which this thread stages (and caches what it staged): settings that
    staging reads do not change meanwhile (hlodsl.config waits for it to end)."""
    return _GATE.share()


#: The values ``Config.linalg_kernels`` takes.
LINALG_KERNELS = ("auto", "hlo", "lapack", "cusolver")
#: HLO's operand precisions (``operand_precision={p,p}`` on a dot or convolution).
PRECISIONS = ("default", "high", "highest")
#: The values ``Config.default_float`` takes.
DEFAULT_FLOATS = ("float64", "float32")
#: Settings read while staging, with the values each takes: changing one empties the caches.
_CHOICES = {"linalg_kernels": LINALG_KERNELS, "default_matmul_precision": PRECISIONS,
            "default_float": DEFAULT_FLOATS}



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
    >>> memory_size(0.5)
    Traceback (most recent call last):
    ValueError: memory_limit: 0.5 is less than one byte; give a positive number of bytes (an int) or a size such as "1MiB"
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
    if value != value or value == float("inf") or value == float("-inf"):
        raise ValueError(f"{what}: must be a positive number of bytes, got {value!r}")
    n = int(value)  # a fraction of a byte rounds down
    if n < 1:
        raise ValueError(f"{what}: {value!r} is less than one byte; give a positive number of "
                         "bytes (an int) or a size such as \"1MiB\"")
    return n


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


#: The settings (``hd.config``); made last, as its validators use the functions above.
config = Config()
