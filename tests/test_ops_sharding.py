"""The sharding annotation ops, each applied by hand on 8 CPU devices.

They are identities on values (or views between a global array and a device's
shard): each must give the values the unannotated program gives, and the
layout it names must be the layout XLA's partitioner produced.
"""

import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops, runtime

COVERED_OPCODES = {"sharding-constraint", "result-sharding", "global-to-local",
                   "local-to-global", "manual-computation"}

pytestmark = [pytest.mark.compat,  # jax/jaxlib-release sensitive paths (.ci/compat)
              pytest.mark.skipif(runtime.device_count() < 8,
                                 reason="needs 8 devices (tests/conftest.py sets XLA_FLAGS)")]


@pytest.fixture(scope="module")
def mesh():
    return hd.make_mesh((4, 2), ("a", "b"))


def rand(*shape):
    return np.random.default_rng(3).standard_normal(shape).astype(np.float32)


def test_sharding_constraint_is_the_identity_laid_out(mesh):
    s = hd.NamedSharding(mesh, hd.P("b", "a"))
    x = rand(4, 8)
    out = hd.compile(lambda v: ops.ShardingConstraint(s)(v * 2))(x)
    np.testing.assert_array_equal(np.asarray(out), x * 2)
    assert out.sharding == s  # the result takes the constrained layout


def test_result_sharding_lays_out_the_result(mesh):
    s = hd.NamedSharding(mesh, hd.P(None, ("a", "b")))
    x = rand(2, 16)
    out = hd.compile(lambda v: ops.ResultSharding(s)(v + 1))(x)
    np.testing.assert_array_equal(np.asarray(out), x + 1)
    assert out.sharding == s
    assert {sh.data.shape for sh in out.addressable_shards} == {(2, 2)}


def test_a_manual_region_by_hand(mesh):
    s_in = hd.NamedSharding(mesh, hd.P("a", "b"))
    s_out = hd.NamedSharding(mesh, hd.P("a"))

    def region(v):
        local = ops.GlobalToLocal((s_in,), ("a", "b"))(v)
        assert local.shape == (2, 3)

        def body(t):  # per device: sum over the "b" devices of the row block
            return hd.stdlib.parallel.psum(t, "b")

        summed = ops.ManualComputation(body, mesh)(local)
        return ops.LocalToGlobal((s_out,), ("a", "b"))(summed)

    x = rand(8, 6)
    out = hd.compile(region)(x)
    want = x.reshape(8, 2, 3).sum(1)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    assert out.shape == (8, 3) and out.sharding == s_out


def test_constraint_derivatives_keep_the_layout(mesh):
    s = hd.NamedSharding(mesh, hd.P("a"))
    x = rand(8, 2)
    g = hd.compile(hd.grad(lambda v: xp.sum(ops.ShardingConstraint(s)(v) ** 2)))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * x, rtol=1e-6)
    y, t = hd.jvp(lambda v: ops.ShardingConstraint(s)(v * 3), (hd.array(x),), (hd.array(x),))
    np.testing.assert_allclose(np.asarray(t), 3 * x, rtol=1e-6)


def test_constraint_under_vmap_leaves_the_batch_dimension_whole(mesh):
    s = hd.NamedSharding(mesh, hd.P("a"))
    x = rand(3, 8, 2)
    f = hd.compile(hd.vmap(lambda v: ops.ShardingConstraint(s)(v) + 1))
    np.testing.assert_array_equal(np.asarray(f(x)), x + 1)
    assert "[{}, {\\\"a\\\"}, {}]" in hd.code_hlo(f, x)


def test_manual_region_ops_are_differentiated_through_shard_map_only(mesh):
    s = hd.NamedSharding(mesh, hd.P("a"))
    region = lambda v: ops.LocalToGlobal((s,), ("a", "b"))(  # noqa: E731
        ops.ManualComputation(lambda t: t * 2, mesh)(ops.GlobalToLocal((s,), ("a", "b"))(v)))
    np.testing.assert_array_equal(np.asarray(hd.compile(region)(rand(8, 2))), rand(8, 2) * 2)
    with pytest.raises(NotImplementedError, match="differentiate through hd.shard_map"):
        hd.compile(hd.grad(lambda v: xp.sum(region(v))))(rand(8, 2))


def test_a_manual_region_must_be_whole(mesh):
    s = hd.NamedSharding(mesh, hd.P("a"))
    x = rand(8, 2)
    with pytest.raises(TypeError, match="runs only inside a staged program"):
        ops.GlobalToLocal((s,), ("a", "b"))(hd.array(x))
    with pytest.raises(ValueError, match="may only go to a ManualComputation"):
        hd.compile(lambda v: ops.GlobalToLocal((s,), ("a", "b"))(v) * 2)(x)
    with pytest.raises(ValueError, match="must take the results of a ManualComputation"):
        hd.compile(lambda v: ops.LocalToGlobal((s,), ("a", "b"))(v[:2]))(x)
