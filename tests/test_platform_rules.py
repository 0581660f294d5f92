"""The platform rules the suite's oracle comparisons use (tests/platform_rules.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlodsl import runtime
from platform_rules import PLATFORM_TOL, cpu_oracle, flush_subnormals, needs_devices


def test_cpu_oracle_runs_jax_on_its_cpu_device_at_full_precision():
    seen = {}

    @cpu_oracle
    def square(x):
        seen["device"] = jax.config.jax_default_device
        seen["precision"] = jax.config.jax_default_matmul_precision
        return jnp.asarray(x) @ jnp.asarray(x)

    before = jax.config.jax_default_matmul_precision  # None; "highest" off the CPU
    out = square(np.eye(2, dtype=np.float32))
    assert {d.platform for d in out.devices()} == {"cpu"}
    assert seen == {"device": jax.devices("cpu")[0], "precision": "highest"}
    assert jax.config.jax_default_device is None  # only while the oracle runs
    assert jax.config.jax_default_matmul_precision == before


def test_needs_devices_skips_with_the_reason_where_the_backend_has_fewer():
    fewer, enough = needs_devices(runtime.device_count() + 1), needs_devices(1)
    assert fewer.args == (True,) and enough.args == (False,)
    assert fewer.kwargs["reason"] == (f"needs {runtime.device_count() + 1} devices "
                                      "(tests/conftest.py sets XLA_FLAGS)")


@pytest.mark.parametrize("key", list(PLATFORM_TOL))
def test_every_platform_tolerance_is_a_few_ulps_and_says_why(key):
    ulps, why = PLATFORM_TOL[key]
    assert 0 <= ulps <= 16 and len(why) > 40


def test_platform_tolerances_are_the_platforms_own(monkeypatch):
    import platform_rules

    monkeypatch.setattr(platform_rules, "PLATFORM", "gpu")
    assert platform_rules.platform_tol("complex multiply", np.complex64) == 2 * 2.0 ** -23
    assert platform_rules.platform_tol("complex multiply", np.float64) == 2 * 2.0 ** -52
    assert platform_rules.platform_tol("add", np.float32) is None
    monkeypatch.setattr(platform_rules, "PLATFORM", "cpu")
    assert platform_rules.platform_tol("complex multiply", np.complex64) is None


def test_flush_subnormals_keeps_signs_and_normal_values():
    x = np.complex64([complex(1e-45, -0.0), complex(-1e-40, 2.0), complex(np.nan, -2e-38)])
    got = flush_subnormals(x)
    assert np.signbit(got.real).tolist() == [False, True, False]
    assert np.signbit(got.imag).tolist() == [True, False, True]
    assert got[0] == 0 and got[1] == 2j and np.isnan(got[2].real) and got[2].imag == np.float32(-2e-38)
