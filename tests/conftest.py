"""Test-session set-up that must happen before jax (under hlodsl) is imported."""

import os

# Collectives, SPMD and sharding tests run on 8 CPU devices; single-device programs
# still use device 0. Respect a count the caller has already chosen.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=8").strip()

# The persistent compile cache (hlodsl.disk_cache) is off in tests unless a test
# turns it on: tests count XLA compiles, and a run must not depend on earlier runs.
os.environ.setdefault("HLODSL_CACHE_DIR", "")
