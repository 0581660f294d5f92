"""Test-session set-up that must happen before jax (under hlodsl) is imported."""

import os

# Collectives, SPMD and sharding tests run on 8 CPU devices; single-device programs
# still use device 0. Respect a count the caller has already chosen.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=8").strip()

# The persistent compile cache (hlodsl.runtime.disk_cache) is off in tests unless a test
# turns it on: tests count XLA compiles, and a run must not depend on earlier runs.
os.environ.setdefault("HLODSL_CACHE_DIR", "")

# Hypothesis draws the same examples on every run (derandomize): a commit that passed
# passes again, and a run does not fail on a corner case that only a new random draw
# finds, long after the change that caused it. To look for such cases, draw fresh
# examples: `pytest --hypothesis-profile=explore` (failures are kept in .hypothesis/
# and replayed first), or `python tests/stress_ops.py 100` for every op's oracle check.
# jax is the oracle of most tests, many of them in float64: the oracle runs with x64 on,
# as a user comparing against jax in 64 bits would set it. hlodsl itself leaves the flag
# alone (tests/test_jax_config.py checks that, and hlodsl's 64-bit types, with it off).
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

from hypothesis import settings  # noqa: E402

settings.register_profile("deterministic", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile("deterministic")


# -- the platform the suite runs on (HLODSL_PLATFORM=gpu pytest: the suite on a GPU) -----
# Tests written against XLA:CPU's behaviour are marked `cpu_only` and skipped elsewhere,
# with the reason the mark gives. Elsewhere, float32 dots and convolutions run at full
# precision (TF32 is a GPU's default), hlodsl's and jax's (the oracle, and the programs
# hd.from_jax lowers), so the oracle comparisons keep their float32 tolerances;
# tests/test_precision.py checks the setting itself. tests/platform_rules.py has the
# rest of what differs by platform.
import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cpu_only(reason): tests of XLA:CPU's own behaviour (its LAPACK kernels, "
                   "its options, its numerics); skipped on other platforms with the reason")


def pytest_collection_modifyitems(config, items):
    from hlodsl import runtime

    platform = runtime.platform()
    if platform == "cpu":
        return
    import hlodsl as hd

    hd.config.default_matmul_precision = "highest"
    jax.config.update("jax_default_matmul_precision", "highest")
    for item in items:
        mark = item.get_closest_marker("cpu_only")
        if mark is not None:
            why = mark.kwargs.get("reason") or (mark.args[0] if mark.args else "XLA:CPU only")
            item.add_marker(pytest.mark.skip(reason=f"on {platform}: {why}"))
