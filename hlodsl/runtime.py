"""The PJRT runtime, through jaxlib: the only module of hlodsl that imports jax.

jax is used here as a runtime only: its PJRT client compiles the HLO text we
emit, and jax ``Array`` objects serve as device buffers. Nothing of jax's
tracing, ``jit``, ``lax`` or ``numpy`` implements any part of hlodsl. Every
call that depends on the jax/jaxlib version (tested: 0.10.2) lives in this file.

>>> exe = compile_hlo('''HloModule m
... ENTRY e {
...   ROOT c = f32[2] constant({1, 2})
... }''')
>>> [to_host(b) for b in exe.execute([])]
[array([1., 2.], dtype=float32)]
"""

from __future__ import annotations

import os
import re

import numpy as np

# XLA's C++ logging would print device banners on every start; keep warnings.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import jax  # noqa: E402

# 64-bit element types need x64 enabled, or jax silently narrows f64/s64
# buffers to 32 bits when we move them to the device.
jax.config.update("jax_enable_x64", True)

import jaxlib.xla_client as xc  # noqa: E402
from jax.extend import backend as _jax_backend  # noqa: E402

from .errors import XlaCompileError  # noqa: E402

__all__ = ["backend", "platform", "to_device", "to_host", "compile_hlo", "Executable", "stats"]

#: Counters for tests and benchmarks: how many XLA compiles have run.
stats = {"compiles": 0}

_backend = None


def backend():
    """The PJRT client: GPU where a plugin is installed, else CPU.

    ``HLODSL_PLATFORM=cpu`` (or ``gpu``) forces a platform.
    """
    global _backend
    if _backend is None:
        _backend = _jax_backend.get_backend(os.environ.get("HLODSL_PLATFORM") or None)
    return _backend


def platform() -> str:
    return backend().platform


def to_device(host: np.ndarray):
    """Copy a host array to the default device; returns the device buffer."""
    return jax.device_put(host, backend().devices()[0])


def to_host(buf) -> np.ndarray:
    return np.asarray(buf)


class Executable:
    """A compiled XLA program. ``execute(buffers)`` returns the output buffers.

    A tuple-shaped result comes back as one buffer per tuple element.
    """

    __slots__ = ("_exe", "text", "execute")

    def __init__(self, exe, text: str):
        self._exe = exe
        self.text = text
        # Bound once: the hot path of a compiled call is this single call.
        self.execute = exe.execute

    def optimized_hlo(self) -> str:
        """The module after XLA's HLO passes (fusion, layout, scheduling)."""
        return self._exe.hlo_modules()[0].to_string()

    def memory_stats(self) -> dict[str, int]:
        """XLA's compiled memory statistics (bytes), known without running."""
        s = self._exe.get_compiled_memory_stats()
        keys = ("argument_size_in_bytes", "output_size_in_bytes",
                "alias_size_in_bytes", "temp_size_in_bytes", "generated_code_size_in_bytes")
        return {k: getattr(s, k) for k in keys}


def _hlo_to_mlir(text: str) -> bytes:
    module = xc.hlo.hlo_module_from_text(text)
    return xc._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())


def compile_hlo(text: str) -> Executable:
    """Parse and compile HLO module text for the first device of the backend.

    Raises ``XlaCompileError`` with XLA's first complaint and the offending
    lines of our text, never a bare XLA dump.
    """
    be = backend()
    try:
        mlir = _hlo_to_mlir(text)
        exe = be.compile_and_load(mlir, xc.DeviceList(tuple(be.devices()[:1])),
                                  xc.CompileOptions())
    except Exception as e:  # XLA raises its own runtime error type; wrap them all
        raise XlaCompileError(_explain(text, str(e))) from None
    stats["compiles"] += 1
    return Executable(exe, text)


def _explain(text: str, message: str) -> str:
    """Our message for an XLA rejection: its first error and the lines it names."""
    lines = text.splitlines()
    errors = re.findall(r"error: (.*?)(?:, error:|$)", message, flags=re.MULTILINE)
    # The last specific complaint is XLA's most precise one; the StableHLO
    # round-trip adds a generic "Failed to parse" that says nothing.
    errors = [re.sub(r'^loc\("[^"]*"\):\s*', "", e) for e in errors
              if not e.startswith("Failed to parse using StableHLO")]
    first = errors[-1] if errors else (message.splitlines() or [""])[0]
    shown: list[int] = []
    for m in re.finditer(r"was parsing (\d+):(\d+)", message):
        shown.append(int(m.group(1)))
    # Verifier errors name instructions (``loc("add.3")``) rather than lines.
    for name in re.findall(r'loc\("([^"]+)"\)', message):
        shown += [i for i, ln in enumerate(lines, 1)
                  if re.match(rf"\s*(ROOT )?%?{re.escape(name)} = ", ln)]
    shown = list(dict.fromkeys(n for n in shown if 0 < n <= len(lines)))
    msg = f"XLA rejected the HLO module hlodsl emitted: {first.strip()}"
    if shown:
        msg += "\noffending lines:\n" + "\n".join(f"  {n:4d} | {lines[n - 1]}" for n in shown[:5])
    return msg + ("\n(a bug in hlodsl or in a user-defined op's emission; "
                  "hlodsl.code_hlo shows the whole module)")
