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

import functools

import jax
import pytest

from hlodsl import runtime

__all__ = ["PLATFORM", "ON_CPU", "cpu_oracle", "needs_devices", "PLATFORM_TOL", "platform_tol"]

PLATFORM = runtime.platform()
ON_CPU = PLATFORM == "cpu"


def cpu_oracle(fn):
    """``fn`` (a function calling jax) run on jax's CPU device with f32 dots at full
    precision: the oracle computes the mathematics exactly as the CPU suite checks it,
    whatever device hlodsl runs on."""

    @functools.wraps(fn)
    def on_cpu(*args, **kwargs):
        with jax.default_device(jax.devices("cpu")[0]), \
                jax.default_matmul_precision("highest"):
            return fn(*args, **kwargs)

    return on_cpu


def needs_devices(n: int):
    """Skip unless the backend has ``n`` devices (tests/conftest.py gives the CPU 8)."""
    return pytest.mark.skipif(runtime.device_count() < n,
                              reason=f"needs {n} devices (tests/conftest.py sets XLA_FLAGS)")


#: (platform, what) -> (relative bound, reason). ``what`` names the comparison.
PLATFORM_TOL: dict[tuple[str, str], tuple[float, str]] = {
    ("gpu", "complex multiply"): (
        2 ** -22, "XLA:GPU contracts a*c - b*d into an FMA: the last bit of each part differs"),
    ("gpu", "complex divide"): (
        2 ** -21, "XLA:GPU's complex division rounds in another order than XLA:CPU's"),
    ("gpu", "complex sign"): (
        2 ** -21, "XLA:GPU computes |z| (sign(z) = z/|z|) with another rounding order"),
    ("gpu", "matmul summation"): (
        2 ** -18, "cuBLAS and XLA:GPU's fused kernels sum a dot's products in different "
                  "orders: eager and compiled differ by cancellation, relative to |a|@|b|"),
}


def platform_tol(what: str) -> float:
    """The relative bound ``PLATFORM_TOL`` allows ``what`` on this platform (0: exact)."""
    return PLATFORM_TOL.get((PLATFORM, what), (0.0, ""))[0]
