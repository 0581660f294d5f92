"""Importing and using hlodsl leaves jax's global configuration as the user set it.

A user's own jax code in the same process must behave the same whether or not
hlodsl was imported: ``jax_enable_x64`` stays off (``jnp.zeros(3)`` float32)
unless the user turned it on, while hlodsl's own 64-bit arrays stay 64-bit
and exact through every path that moves data to or from a device.

The test suite itself runs jax with x64 on (tests/conftest.py, for the float64
oracles), so these checks run in a fresh interpreter where nobody turned it on.
"""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.compat

SCRIPT = textwrap.dedent('''
    import numpy as np
    import jax, jax.numpy as jnp

    before = (jax.config.jax_enable_x64, jnp.zeros(3).dtype, jnp.asarray(1.5).dtype)
    import hlodsl as hd
    import hlodsl.stdlib as xp

    exact = {
        "float64": np.array([0.1, 1e-300, 2.0 ** 60 + 1.0, -np.pi]),
        "int64": np.array([2 ** 40 + 1, -(2 ** 62)], np.int64),
        "uint64": np.array([2 ** 64 - 1, 2 ** 33], np.uint64),
        "complex128": np.array([0.1 + 1e-300j, -np.pi + np.e * 1j]),
    }
    for name, host in exact.items():
        a = hd.array(host)                                    # host -> device
        assert str(a.dtype) == name, (name, a.dtype)
        assert np.asarray(a).dtype == host.dtype and (np.asarray(a) == host).all(), name
        twice = a + a                                         # an eager op
        assert np.asarray(twice).dtype == host.dtype, name
        assert (np.asarray(twice) == host + host).all(), name
        f = hd.compile(lambda x: x * 3)                       # a compiled program
        assert (np.asarray(f(a)) == host * 3).all(), name
        assert (np.asarray(f(host)) == host * 3).all(), name  # numpy arguments too
        assert (np.asarray(hd.stdlib.from_dlpack(host)) == host).all(), name

    # Python floats lift to float64 scalars; derivatives and linalg in float64.
    x = hd.array(np.array([0.1, 0.2, 0.3]))
    assert np.asarray(x * 0.1).dtype == np.float64
    g = hd.grad(lambda v: xp.sum(v * v * v))(x)
    assert np.allclose(np.asarray(g), 3 * np.array([0.1, 0.2, 0.3]) ** 2, rtol=1e-15)
    m = np.array([[4.0, 1.0], [1.0, 3.0 + 1e-12]])
    assert np.allclose(np.asarray(xp.linalg.inv(hd.array(m))), np.linalg.inv(m), rtol=1e-13)

    # Sharded: a float64 array split over 8 host devices and a program on them.
    mesh = hd.make_mesh((8,), ("d",))
    s = hd.NamedSharding(mesh, hd.P("d"))
    host = np.arange(16.0) / 3
    y = hd.device_put(host, s)
    assert np.asarray(y).dtype == np.float64 and (np.asarray(y) == host).all()
    h = hd.compile(lambda v: v * 2, in_shardings=(s,), out_shardings=s)
    assert (np.asarray(h(y)) == host * 2).all()

    after = (jax.config.jax_enable_x64, jnp.zeros(3).dtype, jnp.asarray(1.5).dtype)
    assert before == after, (before, after)
    assert after == (False, jnp.float32, jnp.float32), after
    print("ok", before)
''')


def test_importing_hlodsl_leaves_jax_x64_off_and_64_bit_arrays_exact():
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_ENABLE_X64",)}
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().startswith("ok (False,"), out.stdout


def test_a_user_who_turned_x64_on_keeps_it_on():
    script = ("import jax\njax.config.update('jax_enable_x64', True)\nimport hlodsl as hd\n"
              "import jax.numpy as jnp, numpy as np\n"
              "assert (np.asarray(hd.array([1.5]) * 2) == 3.0).all()\n"
              "print(jax.config.jax_enable_x64, jnp.zeros(3).dtype)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["True", "float64"]
