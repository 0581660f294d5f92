"""Sharded arrays and partitioned programs on 8 CPU devices, against one device.

Every sharded program must equal the same program on one device (rtol 1e-5,
f32), each device must hold exactly its shard, and the partitioned module must
be XLA's (collectives inserted by Shardy), not something hlodsl split itself.
tests/conftest.py sets ``--xla_force_host_platform_device_count=8``.
"""

import re

import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import runtime
from hlodsl.stdlib.parallel import all_gather, axis_index, pmean, ppermute, psum, psum_scatter

pytestmark = [pytest.mark.compat,  # jax/jaxlib-release sensitive paths (.ci/compat)
              pytest.mark.skipif(runtime.device_count() < 8,
                                 reason="needs 8 devices (tests/conftest.py sets XLA_FLAGS)")]

RTOL = 1e-5


@pytest.fixture(scope="module")
def mesh():
    return hd.make_mesh((4, 2), ("data", "model"))


@pytest.fixture(scope="module")
def line():
    return hd.make_mesh((8,), ("d",))


def S(mesh, *spec):
    return hd.NamedSharding(mesh, hd.P(*spec))


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# -- sharded arrays -----------------------------------------------------------------------

def test_device_put_gives_each_device_exactly_its_shard(mesh):
    a = rand(16, 6)
    x = hd.device_put(a, S(mesh, "data", "model"))
    assert x.sharding == S(mesh, "data", "model")
    shards = x.addressable_shards
    assert len(shards) == 8
    for shard in shards:
        assert shard.data.shape == (4, 3)
        np.testing.assert_array_equal(np.asarray(shard.data), a[shard.index])
        assert shard.index == x.sharding.index(shard.device, a.shape)
    np.testing.assert_array_equal(np.asarray(x), a)


def test_replicated_over_an_axis_means_copies_along_it(mesh):
    a = rand(8, 2)
    x = hd.device_put(a, S(mesh, "data"))
    blocks = {(s.device.id, s.index[0].start) for s in x.addressable_shards}
    # devices (i, 0) and (i, 1) of the mesh hold the same rows
    assert blocks == {(2 * i + j, 2 * i) for i in range(4) for j in range(2)}


def test_sharded_repr_shows_the_layout_and_device_refuses(mesh):
    x = hd.device_put(np.arange(8.0, dtype=np.float32), S(mesh, "data"))
    assert "sharded P('data') over Mesh(data=4, model=2" in repr(x)
    with pytest.raises(ValueError, match="sharded over several devices"):
        x.device
    assert hd.array([1.0]).sharding is None


def test_sharded_array_does_not_alias_its_numpy_source(line):
    a = np.arange(16, dtype=np.float32)
    x = hd.device_put(a, S(line, "d"))
    a[:] = -1
    np.testing.assert_array_equal(np.asarray(x), np.arange(16, dtype=np.float32))


def test_device_put_refuses_a_layout_that_does_not_divide(line):
    with pytest.raises(ValueError, match=r"dimension 0 of shape \(12,\).*8 shards"):
        hd.device_put(np.zeros(12, np.float32), S(line, "d"))


# -- partitioned compilation --------------------------------------------------------------

def mlp(params, x):
    (w1, b1), (w2, b2) = params
    return xp.nn.relu(x @ w1 + b1) @ w2 + b2


def mlp_params(seed=0):
    return ((rand(16, 32, seed=seed) * 0.3, rand(32, seed=seed + 1) * 0.1),
            (rand(32, 8, seed=seed + 2) * 0.3, rand(8, seed=seed + 3) * 0.1))


def test_compile_with_shardings_equals_one_device(mesh):
    params, x = mlp_params(), rand(32, 16, seed=9)
    want = hd.compile(mlp)(params, x)
    sharded = hd.compile(mlp, in_shardings=(None, S(mesh, "data")),
                         out_shardings=S(mesh, "data", "model"))
    got = sharded(params, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=RTOL, atol=1e-6)
    assert got.sharding == S(mesh, "data", "model")
    assert {s.data.shape for s in got.addressable_shards} == {(8, 4)}


def test_shardings_are_read_off_sharded_arguments(mesh):
    a, b = rand(16, 8), rand(8, 4, seed=1)
    xa = hd.device_put(a, S(mesh, "data", "model"))
    f = hd.compile(lambda a, b: xp.sum(a @ b, axis=0))
    got = f(xa, b)
    np.testing.assert_allclose(np.asarray(got), (a @ b).sum(0), rtol=RTOL)
    assert got.sharding is not None and got.sharding.mesh == mesh
    text = hd.code_hlo(f, xa, b)
    assert '#sdy.sharding<@mesh, [{\\"data\\"}, {\\"model\\"}]>' in text
    optimized = hd.code_hlo(f, xa, b, optimize=True)
    assert "all-reduce" in optimized and "_spmd" in optimized


def test_eager_ops_on_sharded_arrays_run_partitioned(mesh):
    a = rand(8, 4)
    x = hd.device_put(a, S(mesh, "data", "model"))
    y = xp.exp(x) * 2 + x
    np.testing.assert_allclose(np.asarray(y), np.exp(a) * 2 + a, rtol=RTOL)
    assert y.sharding == S(mesh, "data", "model")
    np.testing.assert_allclose(float(xp.sum(x)), a.sum(), rtol=RTOL)


def test_a_call_with_another_layout_compiles_for_it(line, mesh):
    f = hd.compile(lambda a: a * 3)
    a = rand(16, 2)
    first = f(hd.device_put(a, S(line, "d")))
    second = f(hd.device_put(a, S(mesh, None, "model")))
    np.testing.assert_allclose(np.asarray(first), a * 3, rtol=RTOL)
    np.testing.assert_allclose(np.asarray(second), a * 3, rtol=RTOL)
    assert second.sharding.mesh == mesh


def test_with_sharding_constraint_lays_out_an_intermediate(mesh):
    a = rand(16, 8)

    def f(a):
        h = hd.with_sharding_constraint(a * 2, S(mesh, None, "model"))
        return h + 1

    g = hd.compile(f, in_shardings=S(mesh, "data"))
    np.testing.assert_allclose(np.asarray(g(a)), a * 2 + 1, rtol=RTOL)
    assert 'custom_call_target="Sharding"' in hd.code_hlo(g, a)
    eager = hd.with_sharding_constraint(hd.array(a), S(mesh, "data"))
    assert eager.sharding == S(mesh, "data")


def test_shardings_over_two_meshes_are_refused(mesh, line):
    f = hd.compile(lambda a, b: a + b, in_shardings=(S(mesh, "data"), S(line, "d")))
    with pytest.raises(ValueError, match="one mesh"):
        f(rand(8), rand(8))


def test_in_shardings_must_match_the_arguments(mesh):
    f = hd.compile(lambda a: a, in_shardings=(S(mesh), S(mesh)))
    with pytest.raises(TypeError, match="one entry per positional argument"):
        f(rand(8))
    g = hd.compile(lambda p: p["w"], in_shardings=({"v": S(mesh)},))
    with pytest.raises(TypeError, match="does not match the structure"):
        g({"w": rand(8)})


# -- training steps: data parallel, 2-D, FSDP ---------------------------------------------

def loss(params, x, y):
    return xp.mean((mlp(params, x) - y) ** 2)


def sgd_step(params, x, y):
    g = hd.grad(loss)(params, x, y)
    return hd.tree_map(lambda p, d: p - 0.1 * d, params, g)


def _replicated_tree(mesh, params):
    return tuple((S(mesh), S(mesh)) for _ in params)


def _flat(tree):
    return [v for t in tree for v in _flat(t)] if isinstance(tree, tuple) else [tree]


@pytest.mark.parametrize("layout", ["data-parallel", "data-x-model", "fsdp"])
def test_training_steps_equal_one_device_step_for_step(mesh, line, layout):
    params, x, y = mlp_params(), rand(32, 16, seed=5), rand(32, 8, seed=6)
    if layout == "data-parallel":
        m, p_sh, x_sh = line, _replicated_tree(line, params), S(line, "d")
    elif layout == "data-x-model":  # hidden units split over "model", batch over "data"
        m = mesh
        p_sh = ((S(mesh, None, "model"), S(mesh, "model")), (S(mesh, "model"), S(mesh)))
        x_sh = S(mesh, "data")
    else:  # FSDP: every parameter's first dimension split over all 8 devices
        m = line
        p_sh = ((S(line, "d"), S(line, "d")), (S(line, "d"), S(line, "d")))
        x_sh = S(line, "d")
    step = hd.compile(sgd_step, in_shardings=(p_sh, x_sh, x_sh), out_shardings=p_sh)
    one = hd.compile(sgd_step)
    p1, p8 = params, params
    for _ in range(3):
        p1, p8 = one(p1, x, y), step(p8, x, y)
    for got, want, s in zip(hd.tree_leaves(p8), hd.tree_leaves(p1), _flat(p_sh)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=RTOL, atol=1e-6)
        assert got.sharding == s or (s.is_replicated() and got.sharding.is_replicated())
    assert m.size == 8


def test_fsdp_holds_an_eighth_of_the_parameters_per_device(line):
    w, x = np.ones((1024, 256), np.float32), np.ones((64, 1024), np.float32)
    f = lambda w, x: xp.sum(x @ w)  # noqa: E731
    replicated = hd.compile(f, in_shardings=(S(line), S(line, "d")))
    fsdp = hd.compile(f, in_shardings=(S(line, "d"), S(line, "d")))
    x_bytes = x.nbytes // 8  # the batch is split in both
    rep = replicated.memory_stats(w, x)["argument_size_in_bytes"] - x_bytes
    shr = fsdp.memory_stats(w, x)["argument_size_in_bytes"] - x_bytes
    assert rep == w.nbytes and shr == w.nbytes // 8
    assert float(fsdp(w, x)) == pytest.approx(float((x @ w).sum()), rel=RTOL)
    assert "all-gather" in hd.code_hlo(fsdp, w, x, optimize=True)


def test_scan_and_while_inside_a_sharded_program(line):
    a = rand(16, 4)

    def f(a):
        def body(c, row):
            return c + row, c.sum()
        total, sums = hd.scan(body, xp.zeros(4, dtype=xp.float32), a)
        n = hd.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (0, a))
        return total, sums, n[1]

    want = hd.compile(f)(a)
    got = hd.compile(f, in_shardings=S(line, "d"))(a)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=RTOL, atol=1e-5)


# -- shard_map: per-device code with collectives by axis name ------------------------------

def _jax_shard_map(body, mesh_shape, names, in_spec, out_spec):
    import jax
    from jax.sharding import PartitionSpec as JP

    jm = jax.make_mesh(mesh_shape, names, axis_types=(jax.sharding.AxisType.Auto,) * len(names))
    return jax.jit(jax.shard_map(body, mesh=jm, in_specs=JP(*in_spec), out_specs=JP(*out_spec)))


def test_shard_map_collectives_equal_jax(mesh):
    import jax

    a = rand(16, 4)

    def body(x):
        g = all_gather(x, "model", axis=0, tiled=True)
        return (psum(x, "data") + axis_index("model").astype(xp.float32) +
                ppermute(x, "data", [(0, 1), (1, 2), (2, 3), (3, 0)]) +
                psum_scatter(g, "model", scatter_dimension=0, tiled=True))

    def jbody(x):
        g = jax.lax.all_gather(x, "model", axis=0, tiled=True)
        return (jax.lax.psum(x, "data") + jax.lax.axis_index("model") +
                jax.lax.ppermute(x, "data", [(0, 1), (1, 2), (2, 3), (3, 0)]) +
                jax.lax.psum_scatter(g, "model", scatter_dimension=0, tiled=True))

    got = hd.shard_map(body, mesh, hd.P("data", "model"), hd.P("data", "model"))(a)
    want = _jax_shard_map(jbody, (4, 2), ("data", "model"), ("data", "model"),
                          ("data", "model"))(a)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=RTOL)
    assert got.sharding == S(mesh, "data", "model")


def test_shard_map_stacked_gather_and_mean(line):
    a = rand(8, 3)
    got = hd.shard_map(lambda x: all_gather(pmean(x, "d"), "d"), line, hd.P("d"), hd.P())(a)
    np.testing.assert_allclose(np.asarray(got), np.broadcast_to(a.mean(0), (8, 1, 3)),
                               rtol=RTOL, atol=1e-6)


def test_shard_map_body_sees_its_shard(line):
    seen = []

    def body(x, w):
        seen.append((x.shape, w.shape))
        return x @ w

    a, w = rand(16, 4), rand(4, 2, seed=1)
    got = hd.shard_map(body, line, (hd.P("d"), hd.P()), hd.P("d"))(a, w)
    assert seen[0] == ((2, 4), (4, 2))
    np.testing.assert_allclose(np.asarray(got), a @ w, rtol=RTOL)


def test_grad_through_shard_map_equals_one_device(mesh):
    w, a = rand(4, 3), rand(16, 4, seed=2)

    def loss_map(w, a):
        def body(w, a):
            return pmean(xp.sum((a @ w) ** 2, keepdims=True), ("data", "model"))
        return xp.sum(hd.shard_map(body, mesh, (hd.P(), hd.P(("data", "model"))), hd.P())(w, a))

    def loss_one(w, a):
        return xp.sum((a @ w) ** 2) / 8

    want = hd.compile(hd.grad(loss_one, argnums=(0, 1)))(w, a)
    got = hd.compile(hd.grad(loss_map, argnums=(0, 1)))(w, a)
    for g, x in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(x), rtol=RTOL, atol=1e-6)
    eager = hd.grad(loss_map)(w, a)
    np.testing.assert_allclose(np.asarray(eager), np.asarray(want[0]), rtol=RTOL, atol=1e-6)


def test_grad_of_gathers_and_permutes_in_shard_map(line):
    a = rand(16, 2)

    def f(a):
        def body(x):
            g = all_gather(x, "d", axis=0, tiled=True)
            return ppermute(x, "d", [(i, (i + 1) % 8) for i in range(8)]) * g[:2]
        return xp.sum(hd.shard_map(body, line, hd.P("d"), hd.P("d"))(a) ** 2)

    def reference(a):
        blocks = a.reshape(8, 2, 2)
        return xp.sum((xp.roll(blocks, 1, axis=0) * blocks[0]) ** 2)

    want = hd.compile(hd.grad(reference))(a)
    got = hd.compile(hd.grad(f))(a)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=RTOL, atol=1e-6)


def test_collectives_by_axis_name_need_shard_map():
    with pytest.raises(hd.StagingError, match="shard_map"):
        psum(hd.array([1.0]), "d")


def test_the_partitioned_module_names_its_mesh(mesh):
    f = hd.compile(lambda a: a + 1, in_shardings=S(mesh, "data"))
    text = hd.code_hlo(f, rand(8))
    assert re.search(r'xla\.sdy\.meshes=\{mesh = #sdy\.mesh<\["data"=4, "model"=2\]>\}', text)
