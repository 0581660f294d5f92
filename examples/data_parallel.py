"""Data-parallel MLP training over every device of every process.

Single process (8 host devices):
    XLA_FLAGS=--xla_force_host_platform_device_count=8 python examples/data_parallel.py
Two processes with 2 devices each:
    python -m hlodsl.launch -n 2 examples/data_parallel.py [out.npz]

The global batch is split over all devices; each process builds its part of
the batch from its own rows and the parameters are replicated, so one
compiled step (XLA inserts the gradient all-reduce) updates the same
parameters everywhere. Process 0 writes the final parameters to ``out.npz``.
"""

import sys

import numpy as np

import hlodsl as hd
import hlodsl.stdlib as xp

if hd.distributed.launcher() is not None:  # hlodsl.launch, srun or mpirun started us
    hd.distributed.initialize()

STEPS, BATCH, D_IN, D_HID, D_OUT = 3, 32, 16, 32, 4


def init_params():
    rng = np.random.default_rng(0)
    return ((rng.normal(size=(D_IN, D_HID)).astype(np.float32) * 0.3, np.zeros(D_HID, np.float32)),
            (rng.normal(size=(D_HID, D_OUT)).astype(np.float32) * 0.3, np.zeros(D_OUT, np.float32)))


def dataset():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(BATCH, D_IN)).astype(np.float32)
    return x, np.tanh(x[:, :D_OUT] * 2).astype(np.float32)


def loss(params, x, y):
    (w1, b1), (w2, b2) = params
    return xp.mean((xp.nn.relu(x @ w1 + b1) @ w2 + b2 - y) ** 2)


def step(params, x, y):
    grads = hd.grad(loss)(params, x, y)
    return hd.tree_map(lambda p, g: p - 0.1 * g, params, grads)


def main(out_path=None):
    n_dev = len(hd.devices())
    mesh = hd.make_mesh((n_dev,), ("batch",))
    batch, replicated = hd.NamedSharding(mesh, hd.P("batch")), hd.NamedSharding(mesh, hd.P())
    x, y = dataset()
    # This process's rows: the blocks of its own devices, in mesh order.
    mine = [d.id for d in hd.distributed.local_devices()]
    rows = np.concatenate([np.arange(BATCH)[batch.index(d, (BATCH,))] for d in mine])
    xs = hd.distributed.make_array_from_process_local_data(batch, x[rows])
    ys = hd.distributed.make_array_from_process_local_data(batch, y[rows])
    params = hd.tree_map(lambda p: hd.distributed.make_array_from_process_local_data(
        replicated, p, p.shape), init_params())
    p_sh = ((replicated, replicated), (replicated, replicated))
    train = hd.compile(step, in_shardings=(p_sh, batch, batch), out_shardings=p_sh)
    for i in range(STEPS):
        params = train(params, xs, ys)
    flat = [np.asarray(p) for p in hd.tree_leaves(params)]
    print(f"process {hd.distributed.process_index()} of {hd.distributed.process_count()}: "
          f"{n_dev} devices, checksum {sum(float(np.abs(f).sum()) for f in flat):.6f}")
    if out_path and hd.distributed.process_index() == 0:
        np.savez(out_path, *flat)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
