"""Programs from elsewhere: jax functions, HLO text and StableHLO imported into hlodsl.

Each imported program is checked against jax, its oracle: values, and
``hd.grad`` (hlodsl's own rules over the imported ops) against ``jax.grad``.
The attention runs under a memory limit below its naive temporaries. Bad
input (an instruction hlodsl cannot run, a custom-call target it does not
know, malformed text) gets an error naming the instruction and its line.
The lowered programs are shared by module-scoped fixtures (one jax lowering
and one import each).
"""

from __future__ import annotations

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import hlodsl as hd
from hlodsl.introspect.hlo_text import opcode_counts, parse_module

RTOL = 2e-5


def close(got, want, rtol=RTOL):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol,
                               atol=rtol * max(1.0, float(np.abs(np.asarray(want)).max())))


def normal(seed, *shape):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


# -- the jax programs ---------------------------------------------------------------------

def mlp_loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def mlp_step(params, x, y):
    grads = jax.grad(mlp_loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)


def grow(x):
    """A while loop whose trip count is data (jax cannot reverse it)."""
    return lax.while_loop(lambda v: jnp.sum(v * v) < 100.0, lambda v: v * 1.5 + 0.1, x)


def rnn(w, xs):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, jnp.sum(h * h)

    h, ys = lax.scan(step, jnp.zeros(w.shape[0], jnp.float32), xs)
    return jnp.sum(h) + jnp.sum(ys)


def power_loop(x):
    return lax.fori_loop(0, 4, lambda i, v: jnp.sin(v) * x, x).sum()


def attention(q, k, v):
    s = q @ k.T / jnp.sqrt(jnp.float32(q.shape[-1]))
    return jax.nn.softmax(s, axis=-1) @ v


@pytest.fixture(scope="module")
def mlp():
    params = {"w1": normal(0, 4, 8), "b1": normal(1, 8), "w2": normal(2, 8, 2),
              "b2": normal(3, 2)}
    x, y = normal(4, 16, 4), normal(5, 16, 2)
    ours = {k: hd.array(v) for k, v in params.items()}
    return params, x, y, ours, hd.from_jax(mlp_step, params, x, y), hd.from_jax(
        mlp_loss, params, x, y)


def test_mlp_training_step_equals_jax(mlp):
    params, x, y, ours, step, _ = mlp
    got = step(ours, hd.array(x), hd.array(y))
    want = mlp_step(params, x, y)
    assert set(got) == set(want)
    for k in want:
        close(got[k], want[k])


def test_grad_of_imported_mlp_loss_equals_jax_grad(mlp):
    # Compiled (an eager hd.grad would compile one module per op of the program).
    params, x, y, ours, _, loss = mlp
    staged = hd.compile(hd.grad(loss))
    got = staged(ours, hd.array(x), hd.array(y))
    want = jax.grad(mlp_loss)(params, x, y)
    for k in want:
        close(got[k], want[k])
    # The imported ops are inlined into the caller's one module, not an opaque call.
    ops_ = opcode_counts(parse_module(hd.code_hlo(staged, ours, hd.array(x), hd.array(y))))
    assert ops_["call"] == 0 and ops_["dot"] >= 3, ops_


def test_while_loop_with_a_data_dependent_trip_count():
    x = normal(6, 3)
    f = hd.from_jax(grow, x)
    close(f(hd.array(x)), grow(x))
    assert "While(" in hd.code_typed(f, hd.array(x))  # no trip count: stays a While
    # Forward mode (jax cannot reverse this loop either).
    t = normal(7, 3)
    _, got = hd.jvp(f, (hd.array(x),), (hd.array(t),))
    close(got, jax.jvp(grow, (x,), (t,))[1], 1e-4)


@pytest.mark.parametrize("fn, shapes", [(rnn, [(3, 3), (6, 3)]), (power_loop, [(5,)])],
                         ids=["scan", "fori_loop"])
def test_counted_loops_have_jax_values_and_gradients(fn, shapes):
    args = [normal(10 + i, *s) for i, s in enumerate(shapes)]
    f = hd.from_jax(fn, *args)
    ours = [hd.array(a) for a in args]
    close(f(*ours), fn(*args))
    argnums = tuple(range(len(args)))
    got = hd.compile(hd.grad(f, argnums=argnums))(*ours)
    want = jax.grad(fn, argnums=argnums)(*args)
    for g, w in zip(got, want, strict=True):
        close(g, w, 1e-4)


def seven_carries(x):
    """A loop of seven carried values and seven results: XLA numbers tuples this long
    (``/*index=5*/``) in types and operand lists alike."""
    def body(_, c):
        return tuple(jnp.sin(a) + b for a, b in zip(c, c[1:] + c[:1]))
    return lax.fori_loop(0, 2, body, tuple(x * (i + 1) for i in range(7)))


def test_tuples_of_more_than_five_elements_import():
    x = normal(12, 4)
    f = hd.from_jax(seven_carries, x)
    assert "/*index=5*/" in f.text  # the form this test is about
    for got, want in zip(f(hd.array(x)), seven_carries(x), strict=True):
        close(got, want)


def spd_solve(a, b):
    """jax's LAPACK calls (potrf, trsm) write column-major ({0,1}) results."""
    import jax.scipy.linalg as jsl

    chol = jnp.linalg.cholesky(a @ a.T + 4 * jnp.eye(a.shape[0], dtype=a.dtype))
    return chol, jsl.solve_triangular(chol, b, lower=True)


def test_custom_calls_writing_column_major_results_read_them_so():
    a, b = normal(13, 6, 6), normal(14, 6, 4)
    f = hd.from_jax(spd_solve, a, b)
    assert "{0,1}" in f.text  # the form this test is about (the factor is not symmetric)
    for got, want in zip(f(hd.array(a), hd.array(b)), spd_solve(a, b), strict=True):
        close(got, want, rtol=1e-4)
    for got, want in zip(hd.compile(f)(hd.array(a), hd.array(b)), spd_solve(a, b), strict=True):
        close(got, want, rtol=1e-4)


def test_vmap_of_an_imported_function_equals_jax_vmap(mlp):
    params, x, y, ours, _, loss = mlp
    xs = normal(8, 3, 16, 4)
    got = hd.vmap(loss, in_axes=(None, 0, None))(ours, hd.array(xs), hd.array(y))
    close(got, jax.vmap(mlp_loss, in_axes=(None, 0, None))(params, xs, y))


def test_attention_runs_under_a_memory_limit_below_its_naive_temporaries():
    n, d = 512, 8
    q, k, v, w = (normal(20 + i, n, d) for i in range(4))
    f = hd.from_jax(attention, q, k, v)
    args = [hd.array(a) for a in (q, k, v)]
    # XLA's count of the temporaries of the imported program as written (jax's own
    # memory_analysis reports none at larger n on XLA:CPU: benchmarks/import_attention.py).
    naive = hd.compile(f).memory_stats(*args)["temp_size_in_bytes"]
    limit = n * n * 4 // 4  # a quarter of one score matrix
    assert naive > 3 * limit
    split = hd.compile(f, memory_limit=limit)
    assert "slices of" in split.report(*args)
    assert split.memory_stats(*args)["temp_size_in_bytes"] <= limit
    close(split(*args), attention(q, k, v), 1e-4)
    # The gradient too, through the imported softmax and dots.
    loss = hd.grad(lambda q, k, v, w: hd.stdlib.sum(f(q, k, v) * w), argnums=(0, 1, 2))
    got = hd.compile(loss, memory_limit=4 * limit)(*args, hd.array(w))
    want = jax.grad(lambda q, k, v: jnp.sum(attention(q, k, v) * w), argnums=(0, 1, 2))(q, k, v)
    for g, wt in zip(got, want, strict=True):
        close(g, wt, 1e-4)


def test_code_hlo_and_code_typed_show_the_producers_source_lines(mlp):
    params, x, y, ours, _, loss = mlp
    line = mlp_loss.__code__.co_firstlineno + 1  # the tanh line
    typed = hd.code_typed(loss, ours, hd.array(x), hd.array(y))
    assert f"test_hlo_import.py:{line}" in typed, typed
    text = hd.code_hlo(loss, ours, hd.array(x), hd.array(y), metadata=True)
    assert f'source_file="{__file__}" source_line={line}' in text, text


# -- other forms of program ----------------------------------------------------------------

def small(x, w):
    return jnp.tanh(x @ w).sum(axis=0) * 2.0


@pytest.fixture(scope="module")
def lowered():
    x, w = normal(30, 4, 3), normal(31, 3, 5)
    return x, w, jax.jit(small).lower(x, w)


def _forms(lowered):
    _, _, lo = lowered
    buf = io.BytesIO()
    lo.compiler_ir("stablehlo").operation.write_bytecode(buf)
    return {"lowered": lo, "compiled": lo.compile(), "stablehlo text": lo.as_text(),
            "stablehlo bytecode": buf.getvalue(), "hlo text": lo.as_text(dialect="hlo")}


@pytest.mark.compat
@pytest.mark.parametrize("form", ["lowered", "compiled", "stablehlo text", "stablehlo bytecode",
                                  "hlo text"])
def test_every_form_of_a_jax_program_imports(lowered, form):
    x, w, _ = lowered
    f = hd.import_hlo(_forms(lowered)[form])
    close(f(hd.array(x), hd.array(w)), small(x, w))


def test_large_constants_the_printer_elides_are_read_whole():
    table = normal(40, 64, 5)  # printed as constant({...}) beside the metadata

    def lookup(x):
        return jnp.tanh(x @ table)

    x = normal(41, 2, 64)
    close(hd.from_jax(lookup, x)(hd.array(x)), lookup(x))


def test_eager_call_runs_one_compiled_module_and_checks_argument_types(lowered):
    x, w, lo = lowered
    f = hd.import_hlo(lo)
    close(f(hd.array(x), hd.array(w)), small(x, w))
    with pytest.raises(TypeError, match=r"argument 1 must be f32\[3,5\], got f32\[5,3\]"):
        f(hd.array(x), hd.array(w.T.copy()))


# -- errors ----------------------------------------------------------------------------------

def _module(body: str) -> str:
    return "HloModule m\n\nENTRY m {\n" + body + "\n}\n"


def test_an_instruction_hlodsl_cannot_import_is_named_with_its_line():
    text = _module("  x = f32[2,3]{1,0} parameter(0)\n"
                   "  ROOT b = f32[3,2]{0,1} bitcast(x)")
    with pytest.raises(hd.HloImportError, match=r"line 5: cannot import 'bitcast'.*layout") as e:
        hd.import_hlo(text)
    assert "bitcast(x)" in str(e.value)


def test_a_custom_call_target_hlodsl_cannot_run_is_refused():
    text = _module('  x = f32[3] parameter(0)\n'
                   '  ROOT y = f32[3] custom-call(x), custom_call_target="my_gpu_kernel"')
    with pytest.raises(hd.HloImportError, match=r"line 5: .*'my_gpu_kernel' is not one hlodsl"):
        hd.import_hlo(text)


@pytest.mark.parametrize("text, match", [
    (_module("  x = f32[3] parameter(0)\n  ROOT y = f32[3] frobnicate(x)"), "XLA's parser"),
    (_module("  x = f32[3] parameter(0)\n  ROOT y = f32[4] negate(x)"),
     r"line 5: the text declares f32\[4\] but negate of its operands gives f32\[3\]"),
    ("not a module", "neither an HLO module"),
])
def test_malformed_text_gets_a_clear_error(text, match):
    with pytest.raises(hd.HloImportError, match=match):
        hd.import_hlo(text)


def test_something_else_is_refused():
    with pytest.raises(hd.HloImportError, match="takes HLO text"):
        hd.import_hlo(42)


def test_imported_functions_take_numpy_and_jax_arrays_and_numbers_as_compiled_ones_do():
    w, x = normal(51, 2, 3), normal(52, 3)
    f = hd.from_jax(lambda p, x, s: jnp.tanh(p["w"] @ x) * s, {"w": w}, x, np.float32(2))
    want = np.tanh(w @ x) * 3
    close(f({"w": w}, x, 3.0), want)  # numpy arrays, and a Python float for an f32 scalar
    close(f({"w": jnp.asarray(w)}, hd.array(x), np.float32(3)), want)  # a jax array too
    close(hd.compile(lambda w: f({"w": w}, x, 3))(hd.array(w)), want)  # inside staging
    with pytest.raises(TypeError, match=r"argument 0 must be f32\[2,3\], got f64\[2,3\]"):
        f({"w": w.astype(np.float64)}, x, 3.0)  # converted as it is, not cast
