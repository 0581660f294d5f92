"""StableHLO ops with regions (reduce, sort, scatter, while, if, case, ...) as ``hlodsl.ops`` calls.

A region becomes a Python function hlodsl stages into a sub-computation. HLO's
loop and branch bodies cannot capture values of the enclosing program, so the
values a ``while``/``if``/``case`` region uses from outside become extra
operands, as XLA's StableHLO-to-HLO conversion makes them.

>>> import stablehlo_replay_ops as m
>>> "stablehlo.while" in m.HANDLERS and "func.call" in m.HANDLERS
True
"""

from __future__ import annotations

from stablehlo_replay_ops import (
    _attr,
    _bool,
    _handler,
    _ints,
    _pairs,
    _struct,
    _walk,
    region_fn,
    run_ops,
)
from stablehlo_replay_values import Unsupported, int_list

import hlodsl as hd
from hlodsl import ops


@_handler("stablehlo.scatter")
def _scatter(op, args, env, ctx):
    d = _struct(op.attrs["scatter_dimension_numbers"])
    get = lambda k: int_list(d.get(k, "[]"))
    fn = region_fn(op.regions[0], env, ctx)
    return ops.Scatter(fn, get("update_window_dims"), get("inserted_window_dims"),
                       get("scatter_dims_to_operand_dims"), int(d["index_vector_dim"]),
                       get("input_batching_dims"), get("scatter_indices_batching_dims"),
                       _bool(op, "indices_are_sorted"), _bool(op, "unique_indices"))(*args)


@_handler("stablehlo.reduce")
def _reduce(op, args, env, ctx):
    return ops.Reduce(region_fn(op.regions[0], env, ctx), _ints(op, "dimensions"))(*args)


@_handler("stablehlo.reduce_window")
def _reduce_window(op, args, env, ctx):
    dims = _ints(op, "window_dimensions")
    ones = (1,) * len(dims)
    return ops.ReduceWindow(region_fn(op.regions[0], env, ctx), dims,
                            _ints(op, "window_strides", default=ones),
                            _pairs(_attr(op, "padding"), len(dims)),
                            _ints(op, "base_dilations", default=ones),
                            _ints(op, "window_dilations", default=ones))(*args)


@_handler("stablehlo.select_and_scatter")
def _select_and_scatter(op, args, env, ctx):
    dims = _ints(op, "window_dimensions")
    return ops.SelectAndScatter(region_fn(op.regions[0], env, ctx),
                                region_fn(op.regions[1], env, ctx), dims,
                                _ints(op, "window_strides", default=(1,) * len(dims)),
                                _pairs(_attr(op, "padding"), len(dims)))(*args)


@_handler("stablehlo.sort")
def _sort(op, args, env, ctx):
    result = ops.Sort(region_fn(op.regions[0], env, ctx), int(_attr(op, "dimension", default="-1")),
                      _bool(op, "is_stable"))(*args)
    return list(result) if isinstance(result, tuple) else result


@_handler("stablehlo.map")
def _map(op, args, env, ctx):
    return ops.Map(region_fn(op.regions[0], env, ctx))(*args)


def captures(regions, env: dict, bound=()) -> list[str]:
    """Names a region uses from ``env`` (HLO's loop and branch bodies cannot capture:
    they become extra operands, as XLA's StableHLO-to-HLO conversion does)."""
    defined, used = set(bound), []
    for op in _walk([o for r in regions for o in r.ops]):
        used += [n for n in op.operands if n not in used]
        defined.update(op.results)
        defined.update(n for r in op.regions for n, _ in r.args)
    for r in regions:
        defined.update(n for n, _ in r.args)
    return [n for n in used if n not in defined and n in env and isinstance(env[n], hd.Array)]


@_handler("stablehlo.while")
def _while(op, args, env, ctx):
    if op.attrs.get("iter_args"):
        names = [n for n in op.attrs["iter_args"].split(",") if n]
    else:
        names = [n for n, _ in op.regions[0].args]
    extra = captures(op.regions, env, names)
    names = names + extra
    cond = region_fn(op.regions[0], env, ctx, names, tupled=True)
    run_body = region_fn(op.regions[1], env, ctx, names, tupled=True)

    def body(state):  # the captured values ride along unchanged
        return tuple(run_body(state)) + tuple(state[len(names) - len(extra):])

    result = ops.While(lambda s: cond(s)[0], body)(*args, *[env[n] for n in extra])
    result = list(result) if isinstance(result, tuple) else [result]
    return result[:len(result) - len(extra)]


def _branches(op, env, ctx):
    fns, operands = [], []
    for region in op.regions:
        names = captures([region], env)
        run = region_fn(region, env, ctx, names, tupled=True)
        fns.append(lambda xs, run=run: run(tuple(xs)))
        operands.append([env[n] for n in names])
    return fns, operands


def _unpack(result):
    return list(result) if isinstance(result, tuple) else [result]


@_handler("stablehlo.if")
def _if(op, args, env, ctx):
    (true_fn, false_fn), operands = _branches(op, env, ctx)
    return _unpack(ops.Conditional(true_fn, false_fn)(args[0], *operands))


@_handler("stablehlo.case")
def _case(op, args, env, ctx):
    fns, operands = _branches(op, env, ctx)
    return _unpack(ops.Conditional(branch_computations=tuple(fns))(args[0], *operands))


def _call(name, args, ctx):
    func = ctx.funcs.get(name)
    if func is None:
        raise Unsupported("unsupported-op", f"call of @{name}, not in this case")
    local = {n: a for (n, _), a in zip(func.args, args)}
    return run_ops(func.ops, local, ctx)


@_handler("func.call")
def _func_call(op, args, env, ctx):
    return _call(op.attrs["callee"], args, ctx)


@_handler("stablehlo.composite")
def _composite(op, args, env, ctx):
    return _call(_attr(op, "decomposition").lstrip("@"), args, ctx)


