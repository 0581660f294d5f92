"""What a test needs to know about the platform the suite runs on (HLODSL_PLATFORM).

The suite runs on XLA:CPU in CI and on a GPU where one is at hand (``.ci/device``).
A test that compares with an oracle must compare with the same mathematics on
both, so the rules live here, each with its reason, never as a silent pass:

- ``cpu_oracle(fn)``: jax as the oracle, run on jax's CPU device at full
  precision. jax's own GPU paths are not oracles: its f32 dots run in TF32
  by default, its GPU ``ragged_dot`` fails to compile for batched or reordered
  dimension numbers, and its GPU ``select_and_gather_add`` packs two f64 into
  one 64-bit word (f32 each). On a CPU this changes nothing.
- ``needs_devices(n)``: a skip for tests of several devices where the backend
  has fewer (the CPU suite gets 8 from tests/conftest.py's XLA_FLAGS; a GPU
  machine has its GPUs).
- ``PLATFORM_TOL``: where XLA:GPU's numerics differ from XLA:CPU's in the last
  bits, the bound a comparison allows there, with the reason.

Tests of XLA:CPU's own behaviour carry ``@pytest.mark.cpu_only(reason=...)``
instead (tests/conftest.py skips them elsewhere with the reason).
"""

from __future__ import annotations

import contextlib
import functools

import jax
import numpy as np
import pytest

from hlodsl import runtime

__all__ = ["PLATFORM", "ON_CPU", "jax_on_cpu", "cpu_oracle", "needs_devices", "PLATFORM_TOL",
           "platform_tol", "flush_subnormals"]

PLATFORM = runtime.platform()
ON_CPU = PLATFORM == "cpu"


@contextlib.contextmanager
def jax_on_cpu():
    """jax, inside the block, computes on its CPU device with f32 dots at full precision
    (hlodsl is not affected: it places its arrays itself)."""
    with jax.default_device(jax.devices("cpu")[0]), jax.default_matmul_precision("highest"):
        yield


def cpu_oracle(fn):
    """``fn`` (a function calling jax) run under ``jax_on_cpu``: the oracle computes the
    mathematics exactly as the CPU suite checks it, whatever device hlodsl runs on."""

    @functools.wraps(fn)
    def on_cpu(*args, **kwargs):
        with jax_on_cpu():
            return fn(*args, **kwargs)

    return on_cpu


def needs_devices(n: int):
    """Skip unless the backend has ``n`` devices (tests/conftest.py gives the CPU 8)."""
    return pytest.mark.skipif(runtime.device_count() < n,
                              reason=f"needs {n} devices (tests/conftest.py sets XLA_FLAGS)")


#: (platform, what) -> (bound in ulps of the element type, reason): where XLA:GPU's
#: results differ from XLA:CPU's (or from jax's on the same GPU) in the last bits. A
#: comparison looks its bound up with ``platform_tol``; without an entry it is exact.
PLATFORM_TOL: dict[tuple[str, str], tuple[int, str]] = {
    ("gpu", "complex multiply"): (
        2, "XLA:GPU contracts a*c - b*d into FMAs: a part differs in its last bit, "
           "relative to the product's modulus"),
    ("gpu", "complex divide"): (
        2, "XLA:GPU's complex division rounds in another order than jax's program on the "
           "same GPU, and keeps subnormal parts that one flushes"),
    ("gpu", "complex sign"): (
        2, "XLA:GPU computes sign(z) = z / |z| with another rounding than jax's program"),
    ("gpu", "complex convert"): (
        0, "narrowed to a subnormal part, hlodsl's program keeps it where jax's flushes it "
           "on the same GPU"),
    ("gpu", "matmul summation"): (
        16, "cuBLAS and XLA:GPU's fused kernels sum a dot's products in different orders: "
            "eager and compiled results differ by rounding, relative to |a| @ |b|"),
}


def platform_tol(what: str, dtype) -> float | None:
    """The relative bound ``PLATFORM_TOL`` gives ``what`` on this platform for ``dtype``
    (its ulps times the type's epsilon), or None: compare exactly."""
    entry = PLATFORM_TOL.get((PLATFORM, what))
    if entry is None:
        return None
    return entry[0] * float(np.finfo(np.dtype(dtype)).eps)


def flush_subnormals(x: np.ndarray) -> np.ndarray:
    """``x`` with subnormal parts as zeros of their sign (what XLA:CPU's arithmetic reads)."""
    def flushed(part):
        tiny = np.finfo(part.dtype).tiny
        return np.where(np.abs(part) < tiny, np.copysign(0, part), part).astype(part.dtype)

    if not np.iscomplexobj(x):
        return flushed(x)
    out = np.empty_like(x)
    out.real, out.imag = flushed(x.real), flushed(x.imag)
    return out
