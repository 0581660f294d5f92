"""Variadic collectives, unequal all-reduce groups and CollectiveBroadcast on CPU, against numpy.

Each test computes the spec's semantics per device with numpy (``_broadcast``,
``_group_of``) and runs the op with ``hd.replicated`` on 2-8 CPU devices.
"""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
from hlodsl import ops, runtime
from hlodsl.ops import collectives
from hlodsl.ir.printer import module_text
from hlodsl.ir.staging import stage
from hlodsl.stdlib import add, maximum

pytestmark = pytest.mark.skipif(runtime.device_count() < 8,
                                reason="needs 8 devices (tests/conftest.py sets XLA_FLAGS)")


def _run(fn, n, *per_device, mode="replicas"):
    """Per device, the results as a tuple of numpy arrays."""
    return [tuple(np.asarray(v) for v in (r if isinstance(r, tuple) else (r,)))
            for r in hd.replicated(fn, n, mode)(*per_device)]


def _values(n, shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        return [rng.random(shape) < 0.5 for _ in range(n)]
    if np.issubdtype(np.dtype(dtype), np.integer):
        return [rng.integers(-50, 50, shape).astype(dtype) for _ in range(n)]
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        return [(rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
                for _ in range(n)]
    return [rng.standard_normal(shape).astype(dtype) for _ in range(n)]


def _group_of(groups, d):
    return next((g for g in groups if d in g), None)


def _same_bits(got, want):
    """Bitwise equality: -0.0 and NaN payloads must come through unchanged."""
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (got, want)


# -- all-reduce: groups of different sizes, several operands ----------------------------

@pytest.mark.parametrize("n, groups", [(3, ((0, 1), (2,))), (5, ((4, 0, 2), (1, 3))),
                                       (8, ((0,), (1, 2, 3, 4, 5, 6, 7))),
                                       (4, ((3, 1, 2), (0,)))])
@pytest.mark.parametrize("comp, ref", [(add, np.sum), (maximum, np.max)])
def test_all_reduce_over_groups_of_different_sizes(n, groups, comp, ref):
    xs = _values(n, (2, 3), np.int64, n)
    for d, (got,) in enumerate(_run(ops.AllReduce(comp, groups), n, xs)):
        want = ref(np.stack([xs[m] for m in _group_of(groups, d)]), axis=0)
        np.testing.assert_array_equal(got, want)


@settings(max_examples=6, deadline=None)
@given(n=st.integers(2, 8), shapes=st.lists(st.lists(st.integers(0, 3), max_size=2),
                                            min_size=2, max_size=3),
       dtype=st.sampled_from([np.float32, np.int32, np.float64]), seed=st.integers(0, 99))
def test_all_reduce_of_several_operands_reduces_each(n, shapes, dtype, seed):
    per_operand = [_values(n, tuple(s), dtype, seed + i) for i, s in enumerate(shapes)]
    groups = (tuple(range(0, n, 2)), tuple(range(1, n, 2)))  # unequal when n is odd
    out = _run(ops.AllReduce(add, groups), n, *per_operand)
    for d, results in enumerate(out):
        assert len(results) == len(shapes)
        for xs, got in zip(per_operand, results):
            want = np.sum(np.stack([xs[m] for m in _group_of(groups, d)]), axis=0)
            np.testing.assert_allclose(got, want.astype(dtype), rtol=1e-6)
            assert got.dtype == np.dtype(dtype)


def test_all_reduce_of_operands_of_different_element_types():
    n, groups = 3, ((2, 0), (1,))
    xs, ys = _values(n, (2,), np.int8, 20), _values(n, (1, 3), np.float64, 21)
    for d, (gx, gy) in enumerate(_run(ops.AllReduce(maximum, groups), n, xs, ys)):
        members = _group_of(groups, d)
        _same_bits(gx, np.max(np.stack([xs[m] for m in members]), axis=0))
        _same_bits(gy, np.max(np.stack([ys[m] for m in members]), axis=0))
    a, b = hd.array(np.zeros(2, np.float32)), hd.array(np.zeros((3, 1), np.int32))
    text = module_text(stage(lambda a, b: ops.AllReduce(add)(a, b), (a, b), {}).computation)
    # one instruction per operand, each with the reduction at its own element type
    assert "f32[2] all-reduce(a), replica_groups={}, to_apply=" in text
    assert "s32[3,1] all-reduce(b), replica_groups={}, to_apply=" in text


@pytest.mark.parametrize("op", [ops.AllReduce(add, ((0, 1, 2, 3),), 1, True),
                                ops.AllGather(0, ((0, 1, 2, 3),), 1, True),
                                ops.AllToAll(0, ((0, 1, 2, 3),), 1)])
def test_several_operands_across_partitions(op):
    xs, ys = _values(4, (4,), np.float32, 22), _values(4, (4, 1), np.int32, 23)
    out = _run(op, 4, xs, ys, mode="partitions")
    single = [_run(op, 4, vs, mode="partitions") for vs in (xs, ys)]
    for d in range(4):
        _same_bits(out[d][0], single[0][d][0])
        _same_bits(out[d][1], single[1][d][0])


# -- all-gather and all-to-all: several operands of any element types --------------------

@pytest.mark.parametrize("mode", ["replicas", "partitions"])
def test_all_gather_of_several_operands_of_different_types(mode):
    n, groups = 4, ((0, 2), (3, 1))
    kw = {"channel_id": 1, "use_global_device_ids": True} if mode == "partitions" else {}
    xs, ys = _values(n, (2, 3), np.int64, 1), _values(n, (1, 2), np.float16, 2)
    zs = _values(n, (3,), np.bool_, 3)
    out = _run(ops.AllGather(0, groups, **kw), n, xs, ys, zs, mode=mode)
    for d, results in enumerate(out):
        for vs, got in zip((xs, ys, zs), results):
            _same_bits(got, np.concatenate([vs[m] for m in _group_of(groups, d)], axis=0))


def test_all_to_all_of_several_operands_exchanges_each_alone():
    n, groups = 4, ((0, 1, 2, 3),)
    xs, ys = _values(n, (4, 2), np.float32, 4), _values(n, (3, 8), np.int16, 5)
    out = _run(ops.AllToAll(0, groups), n, xs, _values(n, (8,), np.int8, 6))
    zs = _values(n, (2, 4), np.complex64, 7)
    out2 = _run(ops.AllToAll(1, groups), n, zs, ys)
    for d in range(n):
        _same_bits(out[d][0], np.stack([xs[s][d] for s in range(n)]))
        # along dimension 1, device d gets block d (size 1 of zs, 2 of ys) of every device
        _same_bits(out2[d][0], np.concatenate([zs[s][:, d:d + 1] for s in range(n)], axis=1))
        _same_bits(out2[d][1], np.concatenate([ys[s][:, 2 * d:2 * d + 2] for s in range(n)],
                                              axis=1))
    x, y = hd.array(np.zeros(4, np.float32)), hd.array(np.zeros((4, 2), np.int32))
    # XLA's all-to-all with a split dimension takes one operand: one instruction each.
    text = module_text(stage(lambda x, y: ops.AllToAll(0, groups)(x, y), (x, y), {}).computation)
    assert "f32[4] all-to-all(x), replica_groups={{0,1,2,3}}, dimensions={0}" in text
    assert "s32[4,2] all-to-all(y), replica_groups={{0,1,2,3}}, dimensions={0}" in text


def test_group_size_checks_stay_where_the_shape_depends_on_it():
    for make in (lambda g: ops.AllGather(0, g), lambda g: ops.ReduceScatter(add, 0, g),
                 lambda g: ops.AllToAll(0, g)):
        with pytest.raises(ValueError, match="same size"):
            make(((0, 1), (2,)))
    ops.AllReduce(add, ((0, 1), (2,)))
    ops.CollectiveBroadcast(((0, 1), (2,)))
    x = hd.array(np.zeros((4,), np.float32))
    with pytest.raises(hd.ShapeError, match=r"AllToAll.*f32\[4\].*f32\[3\].*divide"):
        ops.AllToAll(0, ((0, 1),))(x, hd.array(np.zeros((3,), np.float32)))
    with pytest.raises(hd.ShapeError, match="at least one operand"):
        ops.AllGather(0, ((0, 1),))()


# -- collective-broadcast: exact on CPU, through collective-permutes ---------------------

def _broadcast(xs, groups):
    """The spec: a group member gets the group's first member's operand; others zeros."""
    out = []
    for d in range(len(xs)):
        g = _group_of(groups, d)
        out.append(xs[g[0]] if g is not None else np.zeros_like(xs[d]))
    return out


GROUPS = [(2, ((0, 1),)), (2, ((1, 0),)), (4, ((2, 1),)), (4, ((2, 1, 0),)),
          (4, ((3,), (1, 0, 2))), (8, ((7, 0, 3), (1, 2), (5,))), (8, (tuple(range(7, -1, -1)),))]
DTYPES = [np.int64, np.float32, np.complex64, np.bool_, np.uint8, ml_dtypes.bfloat16]


@pytest.mark.parametrize("n, groups", GROUPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_collective_broadcast_sends_each_groups_first_members_operand(n, groups, dtype):
    xs = _values(n, (2, 3), dtype, n)
    if np.issubdtype(np.dtype(dtype), np.floating) or dtype is ml_dtypes.bfloat16:
        for d, x in enumerate(xs):  # signed zeros and NaNs travel unchanged
            x[0, 0], x[1, 1] = (-0.0, np.nan) if d % 2 else (np.inf, -0.0)
    out = _run(ops.CollectiveBroadcast(groups), n, xs)
    for (got,), want in zip(out, _broadcast(xs, groups)):
        _same_bits(got, want)


def test_collective_broadcast_across_partitions_and_of_several_operands():
    n, groups = 4, ((3, 0), (1,))  # device 2 is in no group
    xs, ys = _values(n, (2,), np.int32, 7), _values(n, (), np.float64, 8)
    op = ops.CollectiveBroadcast(groups, channel_id=3)
    out = _run(op, n, xs, ys, mode="partitions")
    for d, (gx, gy) in enumerate(out):
        _same_bits(gx, _broadcast(xs, groups)[d])
        _same_bits(gy, _broadcast(ys, groups)[d])
    # the brief's repro: replicas, no channel
    got = _run(ops.CollectiveBroadcast(((0, 1),)), 2, [np.int64([1, 2]), np.int64([3, 4])])
    assert [r[0].tolist() for r in got] == [[1, 2], [1, 2]]


def test_collective_broadcast_emits_the_instruction_where_the_backend_has_it(monkeypatch):
    x = hd.array(np.zeros(2, np.float32))
    op = ops.CollectiveBroadcast(((0, 1, 2, 3),))
    cpu = module_text(stage(lambda x: op(x), (x,), {}).computation)
    assert runtime.platform() != "cpu" or ("collective-broadcast" not in cpu and
                                           "collective-permute" in cpu)
    monkeypatch.setattr(collectives, "NO_COLLECTIVE_BROADCAST", frozenset())
    text = module_text(stage(lambda x: op(x), (x,), {}).computation)
    assert "collective-broadcast(x), replica_groups={{0,1,2,3}}" in text
    y = hd.array(np.zeros(3, np.int32))
    text = module_text(stage(lambda x, y: op(x, y), (x, y), {}).computation)
    assert "s32[3] collective-broadcast(y), replica_groups={{0,1,2,3}}" in text


# -- derivatives and batching, per operand -----------------------------------------------

def test_sum_all_reduce_of_several_operands_pulls_back_each_cotangent():
    groups = ((0, 2), (1,))

    def step(x, y, cx, cy):
        _, pullback = hd.vjp(lambda x, y: ops.AllReduce(add, groups)(x * x, y * 3.0), x, y)
        return pullback((cx, cy))

    n = 3
    xs, ys = _values(n, (2,), np.float64, 9), _values(n, (3, 1), np.float64, 10)
    cxs, cys = _values(n, (2,), np.float64, 11), _values(n, (3, 1), np.float64, 12)
    for d, (gx, gy) in enumerate(_run(step, n, xs, ys, cxs, cys)):
        members = _group_of(groups, d)
        np.testing.assert_allclose(gx, 2 * xs[d] * sum(cxs[m] for m in members), rtol=1e-12)
        np.testing.assert_allclose(gy, 3 * sum(cys[m] for m in members), rtol=1e-12)


def test_all_gather_of_several_operands_pulls_back_each_block():
    groups = ((0, 1),)

    def step(x, y):  # d/dx sum(w * gather(x)): each device's block of w, summed over readers
        def f(x, y):
            gx, gy = ops.AllGather(0, groups)(x, y)
            return hd.stdlib.sum(gx * hd.array(np.float64([1, 2, 3, 4]))) + \
                hd.stdlib.sum(gy * gy)
        return hd.grad(f, argnums=(0, 1))(x, y)

    xs, ys = _values(2, (2,), np.float64, 13), _values(2, (1, 2), np.float64, 14)
    gathered_y = np.concatenate(ys, axis=0)
    for d, (gx, gy) in enumerate(_run(step, 2, xs, ys)):
        np.testing.assert_allclose(gx, 2 * np.float64([1, 2, 3, 4])[2 * d:2 * d + 2])
        np.testing.assert_allclose(gy, 2 * 2 * gathered_y[d:d + 1], rtol=1e-12)


def test_variadic_collectives_batch_with_unbatched_operands():
    v, w = np.float32([[1, 2], [3, 4], [5, 6]]), np.float32([7, 8, 9])

    def f(v, w):
        return hd.vmap(lambda r, s: ops.AllReduce(add, ((0, 1),))(r, s), in_axes=(0, None))(v, w)

    out = _run(f, 2, [v, 2 * v], [w, w])
    for rv, rw in out:
        np.testing.assert_array_equal(rv, 3 * v)
        np.testing.assert_array_equal(rw, np.broadcast_to(2 * w, (3, 3)))


# -- collective-broadcast with a dynamic root (the StableHLO spec's has_dynamic_root) ----

@pytest.mark.parametrize("n, groups", [(2, ((0, 1),)), (4, ((2, 1, 0),)),
                                       (5, ((4, 0, 2), (1, 3))), (8, ((7, 0, 3, 5), (1, 2)))])
def test_collective_broadcast_from_dynamic_roots(n, groups):
    rng = np.random.default_rng(n)
    xs, ys = _values(n, (2,), np.int64, 30), _values(n, (1, 3), np.float32, 31)
    m = min(len(g) for g in groups)  # a root is a position in every group
    roots = np.int32([m - 1, rng.integers(0, m)])  # m - 1: never the first member
    op = ops.CollectiveBroadcast(groups, has_dynamic_root=True)
    out = _run(op, n, xs, ys, [roots] * n)
    for d, (gx, gy) in enumerate(out):
        g = _group_of(groups, d)
        for vs, got, r in ((xs, gx, roots[0]), (ys, gy, roots[1])):
            _same_bits(got, vs[g[r]] if g is not None else np.zeros_like(vs[d]))


def test_collective_broadcast_checks_its_root_operand():
    x = hd.array(np.zeros(2, np.float32))
    op = ops.CollectiveBroadcast(((0, 1),), has_dynamic_root=True)
    with pytest.raises(hd.ShapeError, match=r"root operand must be s32\[1\]"):
        op(x, hd.array(np.int64([0])))
    with pytest.raises(hd.ShapeError, match=r"root operand must be s32\[2\]"):
        op(x, x, hd.array(np.int32([0])))
    with pytest.raises(hd.ShapeError, match="data operands and then the root"):
        op(hd.array(np.int32([0])))


def test_collective_broadcast_batches_on_cpu():
    v = np.float32([[1, 2], [3, 4], [5, 6]])

    def f(v):
        return hd.vmap(lambda r: ops.CollectiveBroadcast(((1, 0),))(r))(v)

    out = _run(f, 2, [v, -v])
    for (got,) in out:
        np.testing.assert_array_equal(got, -v)


def test_integer_operands_of_variadic_collectives_get_no_cotangent():
    def step(x, k):
        def f(x):
            y, j = ops.AllReduce(add, ((0, 1),))(x * x, k)
            g, _ = ops.AllGather(0, ((0, 1),))(y, j)
            return hd.stdlib.sum(g)
        return hd.grad(f)(x)

    xs = [np.float64([1.0, 2.0]), np.float64([3.0, -1.0])]
    for d, (g,) in enumerate(_run(step, 2, xs, [np.int32([1, 2])] * 2)):
        np.testing.assert_allclose(g, 2 * xs[d] * 2 * 2, rtol=1e-12)  # 2 readers, 2 summands
