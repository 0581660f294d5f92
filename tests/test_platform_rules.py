"""The platform rules the suite's oracle comparisons use (tests/platform_rules.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlodsl import runtime
from platform_rules import PLATFORM_TOL, cpu_oracle, needs_devices


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
def test_every_platform_tolerance_is_small_and_says_why(key):
    bound, why = PLATFORM_TOL[key]
    assert 0 < bound < 1e-4 and len(why) > 20
