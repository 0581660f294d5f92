"""Collectives on 4 CPU devices, as replicas and as SPMD partitions, against numpy."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
from hlodsl import ops, runtime
from hlodsl.stdlib import add, maximum

COVERED_OPCODES = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                   "collective-permute", "collective-broadcast", "replica-id", "partition-id"}

N = 4
ALL = ((0, 1, 2, 3),)
MODES = ["replicas", "partitions"]

pytestmark = pytest.mark.skipif(runtime.device_count() < N,
                                reason="needs 4 devices (tests/conftest.py sets XLA_FLAGS)")


def _run(fn, *per_device, mode="replicas"):
    return [tuple(np.asarray(v) for v in (r if isinstance(r, tuple) else (r,)))
            for r in hd.replicated(fn, N, mode)(*per_device)]


def _channel(mode, k):
    """Cross-partition collectives need a channel and global device ids."""
    return dict(channel_id=k, use_global_device_ids=True) if mode == "partitions" else {}


def _data(shape, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for _ in range(N)]


def test_device_ids():
    assert [int(r[0]) for r in _run(lambda: ops.ReplicaId()())] == [0, 1, 2, 3]
    ids = _run(lambda: ops.PartitionId()(), mode="partitions")
    assert [int(r[0]) for r in ids] == [0, 1, 2, 3]


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=5, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=0, max_size=2), seed=st.integers(0, 99))
def test_all_reduce_sums_and_maxes_over_every_device(mode, shape, seed):
    xs = _data(tuple(shape), seed)
    for comp, ref in ((add, np.sum), (maximum, np.max)):
        op = ops.AllReduce(comp, ALL, **_channel(mode, 1))
        for (got,) in _run(op, xs, mode=mode):
            np.testing.assert_allclose(got, ref(np.stack(xs), axis=0), rtol=1e-6)


def test_all_reduce_within_groups():
    xs = [np.float32([d]) for d in range(N)]
    out = _run(ops.AllReduce(add, ((0, 1), (2, 3))), xs)
    assert [float(r[0][0]) for r in out] == [1, 1, 5, 5]


@pytest.mark.parametrize("mode", MODES)
def test_all_gather_concatenates_in_group_order(mode):
    xs = _data((2, 3), 1)
    op = ops.AllGather(1, ALL, **_channel(mode, 2))
    for (got,) in _run(op, xs, mode=mode):
        np.testing.assert_array_equal(got, np.concatenate(xs, axis=1))


@pytest.mark.parametrize("mode", MODES)
def test_reduce_scatter_keeps_each_devices_block(mode):
    xs = _data((8, 2), 2)
    op = ops.ReduceScatter(add, 0, ALL, **_channel(mode, 3))
    total = np.sum(np.stack(xs), axis=0)
    for d, (got,) in enumerate(_run(op, xs, mode=mode)):
        np.testing.assert_allclose(got, total[2 * d:2 * d + 2], rtol=1e-6)


def test_all_to_all_transposes_blocks():
    xs = [np.arange(4, dtype=np.float32) + 10 * d for d in range(N)]
    for d, (got,) in enumerate(_run(ops.AllToAll(0, ALL), xs)):
        np.testing.assert_array_equal(got, [xs[s][d] for s in range(N)])


@pytest.mark.parametrize("mode", MODES)
def test_collective_permute_shifts_and_zero_fills(mode):
    xs = _data((3,), 3)
    pairs = ((0, 1), (1, 2), (2, 3))  # device 0 receives nothing
    op = ops.CollectivePermute(pairs, channel_id=4 if mode == "partitions" else None)
    out = [r[0] for r in _run(op, xs, mode=mode)]
    np.testing.assert_array_equal(out[0], np.zeros(3, np.float32))
    for s, t in pairs:
        np.testing.assert_array_equal(out[t], xs[s])


def test_collective_broadcast_runs_where_xla_lacks_the_instruction():
    # XLA:CPU has no collective-broadcast ("not supported by XLA:CPU ThunkEmitter"):
    # hlodsl stages it as collective-permutes there (tests/test_ops_collectives_variadic.py).
    xs = _data((2,), 4)
    for (got,) in _run(ops.CollectiveBroadcast(((1, 0, 2, 3),)), xs):
        np.testing.assert_array_equal(got, xs[1])


def test_collectives_validate_their_static_operands_and_shapes():
    with pytest.raises(ValueError, match="distinct"):
        ops.AllReduce(add, ((0, 1), (1, 2)))
    with pytest.raises(ValueError, match="same size"):
        ops.AllGather(0, ((0, 1, 2), (3,)))
    with pytest.raises(ValueError, match="must be given"):
        ops.ReduceScatter(add, 0, ())
    with pytest.raises(ValueError, match="send once"):
        ops.CollectivePermute(((0, 1), (0, 2)))
    x = hd.array(np.zeros((3, 2), np.float32))
    with pytest.raises(hd.ShapeError, match=r"ReduceScatter.*f32\[3,2\].*divide"):
        ops.ReduceScatter(add, 0, ALL)(x)
    with pytest.raises(hd.ShapeError, match=r"AllGather.*dimension out of range"):
        ops.AllGather(2, ALL)(x)


def test_replicated_checks_its_arguments():
    with pytest.raises(ValueError, match="per-device values"):
        hd.replicated(lambda x: x, N)([np.zeros(2)])
    with pytest.raises(TypeError, match="device 1"):
        hd.replicated(lambda x: x, 2)([np.zeros(2), np.zeros(3)])
    with pytest.raises(ValueError, match="mode"):
        hd.replicated(lambda x: x, 2, mode="pipeline")
