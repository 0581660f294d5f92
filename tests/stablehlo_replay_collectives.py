"""The reference interpreter's ``interpreter.run_parallel`` and StableHLO's collectives.

``run_parallel`` runs one program on several CPU devices with ``hd.replicated``
(replicas, or partitions), each device on its own inputs; the collectives map
onto ``hlodsl.ops``' AllReduce, AllGather, AllToAll, ReduceScatter,
CollectiveBroadcast and CollectivePermute.

>>> import stablehlo_replay_ops as m
>>> "interpreter.run_parallel" in m.HANDLERS
True
"""

from __future__ import annotations

import re

from stablehlo_replay_ops import (
    HANDLERS,
    Context,
    _handler,
    _struct,
    region_fn,
    run_ops,
)
from stablehlo_replay_parser import Op
from stablehlo_replay_values import Unsupported, int_list

import hlodsl as hd
from hlodsl import ops


def _groups(op: Op, name: str = "replica_groups") -> tuple:
    """``dense<[[0, 1], [2, -1]]> : tensor<2x2xi64>`` as groups (-1 pads ragged groups)."""
    text = op.attrs.get(name)
    if text is None:
        return ()
    rows = re.findall(r"\[([^\[\]]*)\]", text) or [text]
    groups = tuple(tuple(v for v in int_list(row) if v >= 0) for row in rows)
    return tuple(g for g in groups if g)


def _channel(op: Op):
    text = op.attrs.get("channel_handle")
    if text is None:
        return None
    handle = int(_struct(text).get("handle", "0"))
    return handle if handle > 0 else None


def _flag(op: Op, name: str) -> bool:
    return name in op.attrs and op.attrs[name] != "false"


def _global_ids(op: Op) -> bool:
    return _flag(op, "use_global_device_ids")


@_handler("interpreter.run_parallel")
def _run_parallel(op, args, env, ctx):
    grid = [re.findall(r"@([\w.$-]+)", row)
            for row in re.findall(r"\[([^\[\]]*)\]", op.attrs["programs"])]
    names = {n for row in grid for n in row}
    replicas, partitions = len(grid), len(grid[0])
    if len(names) != 1:
        raise Unsupported("unsupported-op", "interpreter.run_parallel of different programs "
                          "per device (hd.replicated runs one program)")
    if replicas > 1 and partitions > 1:
        raise Unsupported("unsupported-op", f"interpreter.run_parallel on a {replicas}x"
                          f"{partitions} replicas x partitions grid (hd.replicated runs one axis)")
    func = ctx.funcs[names.pop()]
    n, nargs = replicas * partitions, len(func.args)
    if any(t.startswith("!stablehlo.token") for _, t in func.args):
        raise Unsupported("unsupported-op", "tokens as values")
    sub = Context(ctx.funcs, {})
    arg_names = [a for a, _ in func.args]

    def program(*xs):
        return tuple(run_ops(func.ops, dict(zip(arg_names, xs)), sub))

    per_arg = [[args[d * nargs + i] for d in range(n)] for i in range(nargs)]
    mode = "partitions" if partitions > 1 else "replicas"
    results = hd.replicated(program, n, mode)(*per_arg)
    return [value for device in results for value in device]


def _collective(build):
    def handler(op, args, env, ctx):
        result = build(op)(*args)
        return list(result) if isinstance(result, tuple) else result
    return handler


HANDLERS["stablehlo.all_reduce"] = lambda op, args, env, ctx: _collective(
    lambda o: ops.AllReduce(region_fn(o.regions[0], env, ctx), _groups(o), _channel(o),
                            _global_ids(o)))(op, args, env, ctx)
HANDLERS["stablehlo.reduce_scatter"] = lambda op, args, env, ctx: _collective(
    lambda o: ops.ReduceScatter(region_fn(o.regions[0], env, ctx),
                                int(o.attrs["scatter_dimension"]), _groups(o), _channel(o),
                                _global_ids(o)))(op, args, env, ctx)
HANDLERS["stablehlo.all_gather"] = _collective(
    lambda o: ops.AllGather(int(o.attrs["all_gather_dim"]), _groups(o), _channel(o),
                            _global_ids(o)))
HANDLERS["stablehlo.collective_broadcast"] = _collective(
    lambda o: ops.CollectiveBroadcast(_groups(o), _channel(o), _flag(o, "has_dynamic_root")))
HANDLERS["stablehlo.collective_permute"] = _collective(
    lambda o: ops.CollectivePermute(_groups(o, "source_target_pairs"), _channel(o)))


@_handler("stablehlo.all_to_all")
def _all_to_all(op, args, env, ctx):
    split, concat = int(op.attrs["split_dimension"]), int(op.attrs["concat_dimension"])
    if split == concat:
        return _collective(lambda o: ops.AllToAll(split, _groups(o), _channel(o)))(
            op, args, env, ctx)
    # HLO's array all-to-all splits and concatenates one dimension; XLA's builder
    # lowers split != concat as below: the blocks get a dimension of their own, which
    # then moves in front of the concat dimension and merges into it (per operand).
    n = int(op.attrs["split_count"])
    shapes = [list(x.shape) for x in args]
    ys = [ops.Reshape(tuple(s[:split] + [n, s[split] // n] + s[split + 1:]))(x)
          for x, s in zip(args, shapes)]
    ys = ops.AllToAll(split, _groups(op), _channel(op))(*ys)
    ys = ys if isinstance(ys, tuple) else (ys,)
    axes = [a for a in range(len(shapes[0]) + 1) if a != split]
    target = concat if concat < split else concat + 1
    axes.insert(axes.index(target), split)
    out = []
    for y, shape in zip(ys, shapes):
        shape[split] //= n
        shape[concat] *= n
        out.append(ops.Reshape(tuple(shape))(ops.Transpose(tuple(axes))(y)))
    return out if len(out) > 1 else out[0]

