"""``hd.vmap``: every op batched by its rule, against a Python loop and against ``jax.vmap``.

1. Every registered op has a batching rule (its own or its base's) or says why it
   has none (``hlodsl.ir.rules.not_batchable``).
2. The op cases of ``tests/test_ops.py`` and a table of the other ops, each run
   on a batch of three examples (the example's arrays, permuted: every value stays
   in the op's domain) with several ``in_axes`` (batched first, batched last, one
   operand unbatched): ``vmap(op)`` equals the loop of ``op`` over the examples,
   stacked, and ``jax.vmap`` of the matching ``jax.lax`` function.
3. ``in_axes``/``out_axes``/``axis_size`` as jax's, and errors that name the argument.
4. Compositions: per-example gradients (vmap of grad), grad of vmap, vmap of vmap,
   jvp through vmap, vmap under compile (one module, no loop over the batch).
"""

from __future__ import annotations

import functools

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from jax import lax

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops, runtime
from hlodsl.ops import registry
from hlodsl.ir.rules import NotBatchableError, batchable, not_batchable_reason

import test_ops as T

CPU = jax.devices("cpu")[0]
BATCH = 3


# -- 1. coverage ------------------------------------------------------------------------

def test_every_registered_op_is_batchable_or_says_why_not():
    from hlodsl.ops._catalog import library_ops  # not the ops other tests define

    missing = sorted(opcode for opcode, cls in library_ops().items()
                     if not batchable(cls) and not not_batchable_reason(cls))
    assert not missing, f"ops with no batching rule and no not_batchable declaration: {missing}"


def test_an_op_without_a_rule_says_how_to_add_one():
    x = hd.array(np.float32([[1, 2]]))
    call = ops.CustomCall("my_target", hd.ArrayType(hd.float32, (2,)))
    with pytest.raises(NotBatchableError, match="custom call is opaque.*batch_rule"):
        hd.vmap(lambda v: call(v))(x)


# -- 2. every op against the loop and jax.vmap -------------------------------------------

def _variants(a: np.ndarray, scale: bool = False) -> np.ndarray:
    """Three examples from one, stacked along a new first axis: the array and two
    permutations of its values (every value stays inside the op's domain), or, with
    ``scale``, the array times 1, 2 and 1/2 (what keeps a matrix positive definite)."""
    if scale:
        return np.stack([a, a * 2, a / 2]).astype(a.dtype)
    flat = a.reshape(-1)
    return np.stack([a, flat[::-1].reshape(a.shape), np.roll(flat, 1).reshape(a.shape)])


def _axes_patterns(n: int, shared: tuple = ()) -> list[tuple]:
    """in_axes to try for an op of ``n`` operands: all first, all last, one unbatched.
    Operands at ``shared`` positions are never batched (an op's initial values)."""
    patterns = [(0,) * n, (-1,) * n]
    if n > 1:
        patterns += [(None,) + (0,) * (n - 1), (0,) * (n - 1) + (None,)]
    return [tuple(None if i in shared else ax for i, ax in enumerate(p)) for p in patterns]


def _batched(args, axes, scale: bool = False) -> list:
    out = []
    for a, ax in zip(args, axes):
        if ax is None:
            out.append(a)
        else:
            out.append(np.moveaxis(_variants(np.asarray(a), scale), 0,
                                   ax if ax >= 0 else a.ndim))
    return out


def _example(args, axes, b: int) -> list:
    return [a if ax is None else np.take(a, b, axis=ax if ax >= 0 else a.ndim - 1)
            for a, ax in zip(args, axes)]


def _stack(results) -> object:
    if isinstance(results[0], tuple):
        return tuple(_stack([r[i] for r in results]) for i in range(len(results[0])))
    return np.stack([np.asarray(r) for r in results])


def check_vmap(op, args, axes, oracle=None, ex=None, scale=False):
    """``vmap(op)`` with ``in_axes=axes`` equals the loop, and ``jax.vmap(oracle)``.

    Floating-point results compare within the op's tolerance: the batched program
    is another XLA fusion than the one-op module (XLA turns x / broadcast(y) into
    x * broadcast(1 / y), one ulp off in f16)."""
    axes = tuple(None if ax is None or np.ndim(a) == 0 and ax is not None and ax < 0 else ax
                 for a, ax in zip(args, axes))
    if all(ax is None for ax in axes):
        return
    batched = _batched(args, axes, scale)
    got = hd.vmap(lambda *xs: op(*xs), in_axes=axes)(*[hd.array(a) for a in batched])
    got = tuple(map(np.asarray, got)) if isinstance(got, tuple) else np.asarray(got)
    loop = _stack([op(*[hd.array(a) for a in _example(batched, axes, b)])
                   for b in range(BATCH)])
    ex = T.Example({}, tuple(args), oracle, exact=False, bitwise=False)
    T.assert_matches(got, loop, ex, f"vmap({op!r}, in_axes={axes}) vs the loop")
    if oracle is not None and not getattr(oracle, "on_host", False):
        with T.quietly():
            want = jax.vmap(oracle, in_axes=axes)(*batched)
        want = tuple(map(np.asarray, want)) if isinstance(want, (tuple, list)) \
            else np.asarray(want)
        T.assert_matches(got, want, ex, f"vmap({op!r}, in_axes={axes}) vs jax.vmap")


BATCHED_CASES = sorted(op for op in T.RUNNABLE if op not in ("iota", "constant", "tuple"))
SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=T.HEALTH)


@pytest.mark.parametrize("opcode", BATCHED_CASES)
def test_vmap_of_each_op_case_equals_the_loop_and_jax(opcode):
    def check(ex):
        if not ex.args or any(np.ndim(a) == 0 for a in ex.args[:1]) and opcode == "dot":
            return
        op = registry()[opcode](**ex.static)
        shared = tuple(range(len(ex.args) // 2, len(ex.args))) if opcode == "reduce" else ()
        for axes in _axes_patterns(len(ex.args), shared):
            check_vmap(op, ex.args, axes, ex.oracle, ex)

    check.__name__ = f"vmap_{opcode.replace('-', '_')}"
    given(T.examples(opcode))(SETTINGS(check))()


def _ints(shape, lo, hi, seed=0):
    return np.random.default_rng(seed).integers(lo, hi, shape).astype(np.int32)


def _floats(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _spd(n, seed=0):
    a = _floats((n, n), seed, np.float64)
    return a @ a.T + n * np.eye(n)


GATHER = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,),
              index_vector_dim=1, slice_sizes=(1, 3))
SCATTER = dict(update_window_dims=(1,), inserted_window_dims=(0,),
               scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
_LAX_GATHER = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                         start_index_map=(0,))
_LAX_SCATTER = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                           scatter_dims_to_operand_dims=(0,))


def _add(a, b):
    return ops.Add()(a, b)


def _max(a, b):
    return ops.Maximum()(a, b)


def _ge(a, b):
    return ops.Compare("GE")(a, b)


def _lt(a, b):
    return ops.Compare("LT")(a, b)


#: opcode -> [(op, args, jax oracle or None)]: the ops tests/test_ops.py has no case for.
OTHER_CASES = {
    "slice": [(ops.Slice((1, 0), (4, 3), (2, 1)), (_floats((5, 3)),),
               lambda x: lax.slice(x, (1, 0), (4, 3), (2, 1)))],
    "reverse": [(ops.Reverse((1,)), (_floats((2, 3)),), lambda x: lax.rev(x, (1,)))],
    "pad": [(ops.Pad((1, -1), (0, 2), (1, 0)), (_floats((3, 4)), np.float32(7)),
             lambda x, v: lax.pad(x, v, ((1, 0, 1), (-1, 2, 0))))],
    "concatenate": [(ops.Concatenate(1), (_floats((2, 3)), _floats((2, 1), 1)),
                     lambda a, b: lax.concatenate([a, b], 1))],
    "clamp": [(ops.Clamp(), (np.float32(-0.5), _floats((2, 3)), np.float32(0.5)), lax.clamp),
              (ops.Clamp(), (_floats((4,), 1), _floats((4,)), _floats((4,), 2) + 3), lax.clamp)],
    "dynamic-slice": [(ops.DynamicSlice((2, 2)), (_floats((4, 5)), np.int32(1), np.int32(4)),
                       lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 2)))],
    "dynamic-update-slice": [
        (ops.DynamicUpdateSlice(), (_floats((4, 5)), _floats((2, 2), 1), np.int32(3),
                                    np.int32(1)),
         lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)))],
    "gather": [(ops.Gather(**GATHER), (_floats((5, 3)), _ints((4, 1), 0, 5)),
                lambda x, i: lax.gather(x, i, _LAX_GATHER, (1, 3)))],
    "scatter": [(ops.Scatter(_add, **SCATTER), (_floats((5, 3)), _ints((4, 1), 0, 5),
                                                 _floats((4, 3), 1)),
                 lambda x, i, u: lax.scatter_add(x, i, u, _LAX_SCATTER))],
    "sort": [(ops.Sort(_lt, 1), (_floats((2, 5)),), lambda x: lax.sort(x, dimension=1)),
             (ops.Sort(lambda a, b, c, d: ops.Compare("LT")(a, b), 0, True),
              (_ints((6,), 0, 3), _floats((6,))), None)],
    "topk": [(ops.TopK(2), (_floats((3, 5)),), lambda x: lax.top_k(x, 2))],
    "fft": [(ops.Fft("FFT", (4,)), (_floats((2, 4)).astype(np.complex64),),
             lambda x: jnp.fft.fft(x))],
    "cholesky": [(ops.Cholesky(lower=True), (_spd(3),),
                  lambda a: jnp.linalg.cholesky(a))],
    "triangular-solve": [(ops.TriangularSolve(left_side=True, lower=True),
                          (np.tril(_spd(3)), _floats((3, 2), 1, np.float64)),
                          lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True,
                                                                   lower=True))],
    "reduce-window": [(ops.ReduceWindow(_max, (2, 2), (1, 2)), (_floats((4, 4)),
                                                                np.float32(-np.inf)),
                       lambda x, i: lax.reduce_window(x, i, lax.max, (2, 2), (1, 2),
                                                      "VALID"))],
    "select-and-scatter": [(ops.SelectAndScatter(_ge, _add, (2, 2), (2, 2)),
                            (_floats((4, 4)), _floats((2, 2), 1), np.float32(0)), None)],
    "reduce-precision": [(ops.ReducePrecision(5, 10), (_floats((2, 3)),),
                          lambda x: lax.reduce_precision(x, 5, 10))],
    "copy": [(ops.Copy(), (_floats((2, 3)),), lambda x: x)],
    "bitcast-convert": [(ops.BitcastConvert(hd.int32), (_floats((2, 3)),),
                         lambda x: lax.bitcast_convert_type(x, jnp.int32))],
    "complex": [(ops.Complex(), (_floats((3,)), _floats((3,), 1)), lax.complex)],
    "real": [(ops.Real(), (_floats((3,)).astype(np.complex64),), lax.real)],
    "imag": [(ops.Imag(), (_floats((3,)).astype(np.complex64),), lax.imag)],
    "convolution": [
        (ops.Convolution(window_strides=(1,), padding=((1, 0),)),
         (_floats((2, 3, 5)), _floats((4, 3, 2), 1)),
         lambda l, r: lax.conv_general_dilated(l, r, (1,), ((1, 0),))),
        (ops.Convolution(feature_group_count=3), (_floats((1, 6, 5)), _floats((6, 2, 2), 1)),
         lambda l, r: lax.conv_general_dilated(l, r, (1,), "VALID", feature_group_count=3)),
        (ops.Convolution(batch_group_count=2), (_floats((4, 2, 5)), _floats((6, 2, 2), 1)),
         lambda l, r: lax.conv_general_dilated(l, r, (1,), "VALID", batch_group_count=2)),
        (ops.Convolution(lhs_spec="b01f", rhs_spec="01io", out_spec="b01f"),
         (_floats((1, 4, 4, 2)), _floats((2, 2, 2, 3), 1)),
         lambda l, r: lax.conv_general_dilated(l, r, (1, 1), "VALID",
                                               dimension_numbers=("NHWC", "HWIO", "NHWC")))],
    "batch-norm-training": [(ops.BatchNormTraining(1e-3, 1),
                             (_floats((2, 3, 4)), _floats((3,), 1), _floats((3,), 2)), None)],
    "batch-norm-inference": [(ops.BatchNormInference(1e-3, 0),
                              (_floats((3, 4)), _floats((3,), 1), _floats((3,), 2),
                               _floats((3,), 3), np.abs(_floats((3,), 4)) + 1), None)],
    "batch-norm-grad": [(ops.BatchNormGrad(1e-3, 1),
                         (_floats((2, 3)), _floats((3,), 1), _floats((3,), 2),
                          np.abs(_floats((3,), 3)) + 1, _floats((2, 3), 4)), None)],
    "call": [(ops.Call(lambda a, b: ops.Multiply()(a, ops.Add()(a, b))),
              (_floats((3,)), _floats((3,), 1)), lambda a, b: a * (a + b))],
    "opt-barrier": [(lambda a, b: ops.OptimizationBarrier()(a, b), (_floats((2,)), _ints((3,), 0, 9)),
                     None)],
    "while": [(lambda n, x: ops.While(lambda s: ops.Compare("LT")(s[0], s[1]),
                                      lambda s: (ops.Add()(s[0], hd.array(np.int32(1))), s[1],
                                                 ops.Multiply()(s[2], s[2])))(
                   hd.array(np.int32(0)), n, x)[2],
               (np.int32(2), _floats((3,)) * 0.5), None)],
    "conditional": [
        (lambda p, x, y: ops.Conditional(lambda a: ops.Multiply()(a, a),
                                         lambda b: ops.Negate()(b))(p, x, y),
         (np.bool_(True), _floats((3,)), _floats((3,), 1)), None),
        (lambda i, x: ops.Conditional(branch_computations=(
            lambda a: ops.Add()(a, a), lambda a: ops.Negate()(a), lambda a: a))(i, x, x, x),
         (np.int32(1), _floats((2,))), None)],
}

def _other_cases():
    for opcode, cases in OTHER_CASES.items():
        for k, (op, args, oracle) in enumerate(cases):
            yield pytest.param(op, args, oracle, id=f"{opcode}-{k}")


def _as_op(op):
    return op if isinstance(op, hd.HloOp) else _Fn(op)


class _Fn:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *xs):
        return self.fn(*xs)

    def __repr__(self):
        return getattr(self.fn, "__name__", "fn")


#: Operands that stay unbatched (initial values: jax.vmap refuses to batch them too).
SHARED = {"reduce-window": (1,), "select-and-scatter": (2,)}
#: Cases whose examples are scaled copies, not permutations (matrices stay SPD).
SCALED = {"cholesky", "triangular-solve"}


@pytest.mark.parametrize("op, args, oracle", list(_other_cases()))
def test_vmap_of_the_other_ops_equals_the_loop_and_jax(request, op, args, oracle):
    opcode = request.node.callspec.id.rsplit("-", 1)[0]
    for axes in _axes_patterns(len(args), SHARED.get(opcode, ())):
        check_vmap(_as_op(op), args, axes, oracle, scale=opcode in SCALED)


def test_vmap_of_a_condition_that_differs_per_example_runs_until_all_are_done():
    def halve_until_small(x):
        return hd.while_loop(lambda v: xp.max(xp.abs(v)) > 1, lambda v: v / 2, x)

    xs = np.float32([[8, 1], [0.5, 0.25], [3, -40]])
    got = np.asarray(hd.vmap(halve_until_small)(hd.array(xs)))
    loop = np.stack([np.asarray(halve_until_small(hd.array(x))) for x in xs])
    np.testing.assert_array_equal(got, loop)


def test_vmap_of_rng_draws_independent_examples_in_each_bound():
    lo, hi = hd.array(np.float32([0, 10, 100])), hd.array(np.float32([1, 11, 200]))
    draws = np.asarray(hd.vmap(lambda a, b: ops.Rng("uniform", (500,))(a, b))(lo, hi))
    assert draws.shape == (3, 500)
    for row, a, b in zip(draws, [0, 10, 100], [1, 11, 200]):
        assert a <= row.min() and row.max() < b and row.std() > 0.2 * (b - a)


def test_collectives_batch_on_one_replica():
    x = np.float32([[1, 2, 3, 4], [5, 6, 7, 8]])

    def f(v):
        return hd.vmap(lambda r: ops.AllReduce(_add, replica_groups=((0,),))(r))(v)

    out = hd.replicated(f, 1)([x])[0]
    np.testing.assert_array_equal(np.asarray(out), x)


# -- 3. in_axes, out_axes, axis_size and errors -------------------------------------------

def test_in_axes_and_out_axes_as_in_jax():
    a, b = _floats((2, 3)), _floats((3, 2), 1)
    for in_axes, out_axes in [((0, 1), 0), ((1, 0), 1), ((0, None), -1), ((-1, -2), 0)]:
        b_ = b if in_axes[1] is not None else b[:, 0]
        got = hd.vmap(lambda x, y: x * y, in_axes=in_axes, out_axes=out_axes)(
            hd.array(a), hd.array(b_))
        want = jax.vmap(lambda x, y: x * y, in_axes=in_axes, out_axes=out_axes)(a, b_)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_structured_arguments_and_results():
    params = {"w": hd.array(_floats((3,))), "b": hd.array(np.float32(1))}
    xs = hd.array(_floats((4, 3), 1))
    out = hd.vmap(lambda p, x: {"y": xp.sum(p["w"] * x) + p["b"], "x": x},
                  in_axes=({"w": None, "b": None}, 0), out_axes={"y": 0, "x": 1})(params, xs)
    want = np.asarray(xs) @ np.asarray(params["w"]) + 1
    np.testing.assert_allclose(np.asarray(out["y"]), want, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(out["x"]), np.asarray(xs).T)


def test_axis_size_broadcasts_results_that_do_not_depend_on_the_batch():
    out = hd.vmap(lambda: hd.array(np.float32([1, 2])), axis_size=3)()
    np.testing.assert_array_equal(np.asarray(out), np.float32([[1, 2]] * 3))
    x = hd.array(np.float32([5]))
    np.testing.assert_array_equal(np.asarray(hd.vmap(lambda a, b: a + b, in_axes=(None, 0))(
        x, hd.array(np.float32([1, 2, 3])))), [[6], [7], [8]])


@pytest.mark.parametrize("call, message", [
    (lambda: hd.vmap(lambda a, b: a + b)(hd.array(np.ones(2)), hd.array(np.ones(3))),
     r"different sizes \(size 2: a; size 3: b\)"),
    (lambda: hd.vmap(lambda a: a, in_axes=(0, 0))(hd.array(np.ones(2))),
     r"in_axes has 2 entries .* 1 positional"),
    (lambda: hd.vmap(lambda a: a)(hd.array(1.0)), r"a scalar has no axis"),
    (lambda: hd.vmap(lambda a: a, in_axes=2)(hd.array(np.ones((2, 2)))),
     r"in_axes 2 for a .* must be in \[-2, 2\)"),
    (lambda: hd.vmap(lambda a: a, in_axes=None)(hd.array(np.ones(2))), r"give axis_size"),
    (lambda: hd.vmap(lambda a: a, in_axes="0"), r"in_axes must be an int, None"),
    (lambda: hd.vmap(lambda a: a, out_axes=None)(hd.array(np.ones(2))),
     r"out_axes is None for result, but it depends on the batch"),
    (lambda: hd.vmap(lambda a: a, in_axes=({"x": 0},))(hd.array(np.ones(2))),
     r"in_axes\[0\] is a structure \{'x': 0\} but the argument there is not"),
])
def test_errors_name_the_argument_and_what_is_allowed(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


# -- 4. compositions -------------------------------------------------------------------------

def _mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = xp.tanh(x @ w1 + b1)
    return xp.sum((h @ w2 + b2 - y) ** 2)


def _jax_mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jnp.tanh(x @ w1 + b1)
    return jnp.sum((h @ w2 + b2 - y) ** 2)


def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    params = [(rng.standard_normal((4, 8)).astype(np.float32),
               rng.standard_normal(8).astype(np.float32)),
              (rng.standard_normal((8, 2)).astype(np.float32),
               rng.standard_normal(2).astype(np.float32))]
    x, y = rng.standard_normal((5, 4)).astype(np.float32), \
        rng.standard_normal((5, 2)).astype(np.float32)
    return params, x, y


def _hd(tree):
    return hd.tree_map(hd.array, tree) if not isinstance(tree, np.ndarray) else hd.array(tree)


def test_per_example_gradients_equal_jax_and_compile_to_one_module_without_a_loop():
    params, x, y = _mlp()
    per_example = hd.vmap(hd.grad(_mlp_loss), in_axes=(None, 0, 0))
    hp = [tuple(map(hd.array, layer)) for layer in params]
    got = hd.compile(per_example)(hp, hd.array(x), hd.array(y))
    want = jax.vmap(jax.grad(_jax_mlp_loss), in_axes=(None, 0, 0))(params, x, y)
    for g, w in zip(hd.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)
    eager = per_example(hp, hd.array(x), hd.array(y))
    for g, w in zip(hd.tree_leaves(eager), hd.tree_leaves(got)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)
    text = hd.code_hlo(hd.compile(per_example), hp, hd.array(x), hd.array(y), optimize=True)
    assert " while(" not in text and "dot(" in text


def test_grad_of_a_vmapped_function_equals_jax():
    params, x, y = _mlp(1)
    hp = [tuple(map(hd.array, layer)) for layer in params]

    def total(p, xs, ys):
        return xp.sum(hd.vmap(_mlp_loss, in_axes=(None, 0, 0))(p, xs, ys))

    def jax_total(p, xs, ys):
        return jnp.sum(jax.vmap(_jax_mlp_loss, in_axes=(None, 0, 0))(p, xs, ys))

    want = jax.grad(jax_total)(params, x, y)
    for run in (hd.grad(total), hd.compile(hd.grad(total))):
        got = run(hp, hd.array(x), hd.array(y))
        for g, w in zip(hd.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)


def test_vmap_of_vmap_and_jvp_through_vmap():
    a = _floats((2, 3, 4))
    inner = lambda v: xp.sum(xp.sin(v) * v)  # noqa: E731
    got = hd.vmap(hd.vmap(inner))(hd.array(a))
    want = jax.vmap(jax.vmap(lambda v: jnp.sum(jnp.sin(v) * v)))(a)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
    t = _floats((2, 3, 4), 1)
    _, tangent = hd.jvp(hd.vmap(hd.vmap(inner)), (hd.array(a),), (hd.array(t),))
    _, jt = jax.jvp(jax.vmap(jax.vmap(lambda v: jnp.sum(jnp.sin(v) * v))), (a,), (t,))
    np.testing.assert_allclose(np.asarray(tangent), np.asarray(jt), rtol=1e-5, atol=1e-6)
    vj = hd.vmap(lambda v, w: hd.jvp(inner, (v,), (w,))[1])(hd.array(a[0]), hd.array(t[0]))
    np.testing.assert_allclose(np.asarray(vj), np.asarray(jt)[0], rtol=1e-5, atol=1e-6)


def test_vmap_captures_arrays_of_the_program_around_it():
    def f(w, xs):
        return hd.vmap(lambda x: xp.sum(w * x))(xs)

    w, xs = hd.array(_floats((3,))), hd.array(_floats((4, 3), 1))
    want = np.asarray(xs) @ np.asarray(w)
    np.testing.assert_allclose(np.asarray(hd.compile(f)(w, xs)), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(hd.grad(lambda w: xp.sum(f(w, xs)))(w)),
                               np.asarray(xs).sum(0), rtol=1e-5)


def test_eager_vmap_compiles_once_per_signature():
    f = hd.vmap(lambda v: xp.sum(v * v))
    x = hd.array(_floats((4, 3)))
    f(x)
    before = runtime.stats["compiles"]
    for _ in range(3):
        f(x)
    assert runtime.stats["compiles"] == before


def test_vmap_of_a_newton_solver_loop_equals_the_loop():
    def newton_sqrt(a):
        return hd.fori_loop(0, 20, lambda i, x: 0.5 * (x + a / x), a)

    a = np.float32([1, 2, 9, 100])
    got = np.asarray(hd.compile(hd.vmap(newton_sqrt))(hd.array(a)))
    np.testing.assert_allclose(got, np.sqrt(a), rtol=1e-6)
    loop = np.stack([np.asarray(newton_sqrt(hd.array(v))) for v in a])
    np.testing.assert_allclose(got, loop, rtol=1e-7)


def _clip_by_norm(x):
    n = xp.sqrt(xp.sum(x * x))
    if n > 1:
        x = x / n
    return x


def test_python_control_flow_in_the_mapped_function_is_converted():
    xs = np.float32([[3, 4], [0.3, 0.4], [0, 2]])
    got = np.asarray(hd.vmap(_clip_by_norm)(hd.array(xs)))
    loop = np.stack([np.asarray(_clip_by_norm(hd.array(x))) for x in xs])
    np.testing.assert_allclose(got, loop, rtol=1e-6)


class _Cube(hd.op.Composite, opcode="cube-vmap-test"):
    """x ** 3, expanded as two multiplies: its own batch rule is counted."""

    def result_type(self, x):
        return x

    def expand(self, x):
        return ops.Multiply()(ops.Multiply()(x, x), x)


_CUBE_RULE_CALLS: list = []


@hd.batch_rule.dispatch
def _cube_batched(op: _Cube, args: tuple, dims: tuple):
    _CUBE_RULE_CALLS.append(dims)
    return _Cube()(*args), 0


def test_a_composites_own_batch_rule_is_what_vmap_uses():
    xs = np.float32([[1, 2], [3, -1], [0.5, 2]])
    want = xs ** 3 + 1
    f = lambda x: _Cube()(x) + 1
    for run in (hd.vmap(f), hd.compile(hd.vmap(f)), hd.vmap(hd.vmap(f))):
        before = len(_CUBE_RULE_CALLS)
        np.testing.assert_allclose(np.asarray(run(hd.array(xs))), want)
        assert len(_CUBE_RULE_CALLS) > before  # the rule, not the expansion, was batched
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda x: x ** 3 + 1)(xs)), want)
    grad = hd.grad(lambda x: xp.sum(hd.vmap(_Cube())(x)))(hd.array(xs))
    np.testing.assert_allclose(np.asarray(grad), 3 * xs ** 2, rtol=1e-6)
    before = len(_CUBE_RULE_CALLS)  # unbatched operands: applied as they are
    hd.vmap(lambda x, c: _Cube()(c) * x, in_axes=(0, None))(hd.array(xs), hd.array(xs[0]))
    assert len(_CUBE_RULE_CALLS) == before
