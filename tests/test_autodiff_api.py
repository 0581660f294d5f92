"""The autodiff transformations: grad, value_and_grad, vjp, jvp, hvp, hessian, custom rules.

Oracles: jax.grad / jax.vjp / jax.jvp / jax.hessian on the same Python
function written with jax.numpy, and central finite differences in float64.
Each transformation runs eagerly and inside ``hd.compile``; nested
transformations (grad of grad, jvp of grad) and structures of parameters
(lists of tuples, dicts, attrs instances) are covered. Rules of individual
ops are tested in the other test_autodiff_*.py files.
"""

from __future__ import annotations

import attrs
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops

SETTINGS = settings(max_examples=10, deadline=None)


def close(got, expected, rtol=1e-5, atol=1e-6):
    got_leaves = jax.tree_util.tree_leaves(jax.tree_util.tree_map(np.asarray, got))
    exp_leaves = jax.tree_util.tree_leaves(expected)
    assert len(got_leaves) == len(exp_leaves)
    for g, e in zip(got_leaves, exp_leaves):
        e = np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def mlp(params, x, np):
    h = x
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
    W, b = params[-1]
    out = h @ W + b
    return np.sum(out * out) / out.shape[0]


def _mlp_params(rng, sizes=(5, 4, 3), dtype=np.float64):
    return [(rng.standard_normal((a, b)).astype(dtype), rng.standard_normal(b).astype(dtype))
            for a, b in zip(sizes, sizes[1:])]


def _hd(tree):
    return jax.tree_util.tree_map(hd.array, tree)


# -- grad and value_and_grad -----------------------------------------------------

@SETTINGS
@given(seed=st.integers(0, 2**16), batch=st.integers(1, 4))
def test_grad_of_an_mlp_equals_jax_eagerly_and_compiled(seed, batch):
    rng = np.random.default_rng(seed)
    params = _mlp_params(rng)
    x = rng.standard_normal((batch, 5))
    expected = jax.grad(lambda p: mlp(p, x, jnp))(params)
    ours = hd.grad(lambda p, x: mlp(p, x, xp))
    close(ours(_hd(params), hd.array(x)), expected, rtol=1e-10, atol=1e-12)
    close(COMPILED_MLP_GRAD(_hd(params), hd.array(x)), expected, rtol=1e-10, atol=1e-12)


COMPILED_MLP_GRAD = hd.compile(hd.grad(lambda p, x: mlp(p, x, xp)))


def test_value_and_grad_with_argnums_and_aux():
    a, b = hd.array(np.float64([1.0, 2.0])), hd.array(np.float64([3.0, -1.0]))

    def f(a, b, scale):
        return xp.sum(a * b) * scale, {"norm": xp.sum(a * a)}

    (value, aux), (ga, gb) = hd.value_and_grad(f, argnums=(0, 1), has_aux=True)(a, b, 2.0)
    assert float(value) == 2.0 and float(aux["norm"]) == 5.0
    close((ga, gb), (np.float64([6.0, -2.0]), np.float64([2.0, 4.0])))
    grads, aux = hd.grad(f, argnums=1, has_aux=True)(a, b, 2.0)
    close(grads, np.float64([2.0, 4.0]))


def test_gradients_of_dicts_and_attrs_instances():
    @attrs.frozen
    class Layer:
        w: object
        b: object

    layer = Layer(hd.array(np.float64([1.0, 2.0])), hd.array(np.float64(0.5)))
    g = hd.grad(lambda l, x: xp.sum(xp.sin(l.w * x + l.b)))(layer, hd.array(np.float64(3.0)))
    assert isinstance(g, Layer)
    w, b = np.float64([1.0, 2.0]), 0.5
    close((g.w, g.b), (3 * np.cos(w * 3 + b), np.sum(np.cos(w * 3 + b))))
    g = hd.compile(hd.grad(lambda d: d["a"] * d["b"]))(
        {"a": hd.array(2.0), "b": hd.array(5.0)})
    assert float(g["a"]) == 5.0 and float(g["b"]) == 2.0


def test_an_input_the_output_does_not_depend_on_gets_zeros():
    g = hd.grad(lambda a, b: xp.sum(a * 2.0), argnums=(0, 1))(
        hd.array(np.ones(2)), hd.array(np.ones(3, np.float32)))
    close(g, (np.full(2, 2.0), np.zeros(3, np.float32)))


# -- vjp and jvp ------------------------------------------------------------------

def f_vector(x, y, np):
    return np.sin(x) * y, np.exp(x) @ np.ones((x.shape[0], 2), dtype=x.dtype)


@SETTINGS
@given(seed=st.integers(0, 2**16), n=st.integers(1, 5))
def test_vjp_and_jvp_of_a_function_with_two_outputs_equal_jax(seed, n):
    rng = np.random.default_rng(seed)
    x, y, tx, ty = (rng.standard_normal(n) for _ in range(4))
    ct = (rng.standard_normal(n), rng.standard_normal(2))
    out, pullback = hd.vjp(lambda x, y: f_vector(x, y, xp), hd.array(x), hd.array(y))
    jout, jpullback = jax.vjp(lambda x, y: f_vector(x, y, jnp), x, y)
    close(out, jout, rtol=1e-12)
    close(pullback(_hd(ct)), jpullback(ct), rtol=1e-12, atol=1e-12)
    staged = hd.compile(lambda x, y, ct: hd.vjp(lambda x, y: f_vector(x, y, xp), x, y)[1](ct))
    close(staged(hd.array(x), hd.array(y), _hd(ct)), jpullback(ct), rtol=1e-12, atol=1e-12)
    primal, tangent = hd.jvp(lambda x, y: f_vector(x, y, xp), (hd.array(x), hd.array(y)),
                             (hd.array(tx), hd.array(ty)))
    jprimal, jtangent = jax.jvp(lambda x, y: f_vector(x, y, jnp), (x, y), (tx, ty))
    close(tangent, jtangent, rtol=1e-12, atol=1e-12)
    staged = hd.compile(lambda x, y, tx, ty: hd.jvp(
        lambda x, y: f_vector(x, y, xp), (x, y), (tx, ty))[1])
    close(staged(*map(hd.array, (x, y, tx, ty))), jtangent, rtol=1e-12, atol=1e-12)


def test_jvp_matches_central_finite_differences_in_float64():
    rng = np.random.default_rng(7)
    x, t = rng.standard_normal(4), rng.standard_normal(4)

    def f(x):  # composites (sinh, atanh) are differentiated through their expansion
        return xp.sum(xp.sinh(x) * xp.atanh(x / 10.0) + xp.log1p(x * x) + ops.Erf()(x))

    _, tangent = hd.jvp(f, (hd.array(x),), (hd.array(t),))
    eps = 1e-6
    fd = (float(f(hd.array(x + eps * t))) - float(f(hd.array(x - eps * t)))) / (2 * eps)
    assert abs(float(tangent) - fd) < 1e-7 * max(1.0, abs(fd))
    g = hd.grad(f)(hd.array(x))
    assert abs(float(np.dot(np.asarray(g), t)) - fd) < 1e-7 * max(1.0, abs(fd))


def test_a_closure_over_the_primal_itself_is_a_constant():
    x, t = hd.array(3.0), hd.array(1.0)
    _, tangent = hd.jvp(lambda y: y * x, (x,), (t,))
    assert float(tangent) == 3.0  # d/dy (y * x) at y = x: x, not 2x
    assert float(hd.grad(lambda y: y * x)(x)) == 3.0


# -- nesting ----------------------------------------------------------------------

def test_grad_of_grad_and_jvp_of_grad():
    f = lambda x: xp.sum(xp.sin(x) * x * x)  # noqa: E731
    fj = lambda x: jnp.sum(jnp.sin(x) * x * x)  # noqa: E731
    x = np.float64([0.3, -1.2, 2.0])
    close(hd.grad(lambda x: xp.sum(hd.grad(f)(x)))(hd.array(x)),
          jax.grad(lambda x: jnp.sum(jax.grad(fj)(x)))(x), rtol=1e-12)
    v = np.float64([1.0, 0.5, -2.0])
    close(hd.hvp(f, (hd.array(x),), (hd.array(v),)),
          jax.jvp(jax.grad(fj), (x,), (v,))[1], rtol=1e-12)
    close(hd.hessian(f)(hd.array(x)), jax.hessian(fj)(x), rtol=1e-12, atol=1e-14)
    close(hd.compile(hd.hessian(f))(hd.array(x)), jax.hessian(fj)(x), rtol=1e-12, atol=1e-14)


def test_third_derivative_of_a_scalar_function():
    d3 = hd.grad(hd.grad(hd.grad(lambda x: x * x * x * x)))
    assert float(d3(hd.array(2.0))) == 48.0
    assert float(hd.compile(d3)(hd.array(2.0))) == 48.0


# -- staging: a training step is one module ---------------------------------------

def test_a_training_step_stages_into_one_module():
    rng = np.random.default_rng(0)
    params = _hd(_mlp_params(rng, dtype=np.float32))
    x = hd.array(rng.standard_normal((3, 5)).astype(np.float32))

    @hd.compile
    def step(params, x):
        g = hd.grad(lambda p: mlp(p, x, xp))(params)  # closes over the symbolic x
        return [(W - 0.1 * gW, b - 0.1 * gb) for (W, b), (gW, gb) in zip(params, g)]

    text = str(hd.code_hlo(step, params, x))
    assert text.count("ENTRY") == 1 and "dot(" in text
    before = hd.runtime.stats["compiles"]
    new = step(params, x)
    assert hd.runtime.stats["compiles"] == before + 1  # one executable for the whole step
    jparams = jax.tree_util.tree_map(np.asarray, params)
    jg = jax.grad(lambda p: mlp(p, np.asarray(x), jnp))(jparams)
    close(new, [(W - np.float32(0.1) * gW, b - np.float32(0.1) * gb)
                for (W, b), (gW, gb) in zip(jparams, jg)], rtol=1e-5, atol=1e-6)


# -- user-defined derivatives -------------------------------------------------------

def test_custom_vjp_replaces_the_reverse_rule_and_forward_mode_uses_the_body():
    @hd.custom_vjp
    def scaled_identity(x):
        return x

    scaled_identity.defvjp(lambda x: (x, None), lambda res, ct: (ct * 3.0,))
    f = lambda x: xp.sum(scaled_identity(x) * 2.0)  # noqa: E731
    x = hd.array(np.float64([1.0, 2.0]))
    close(hd.grad(f)(x), np.float64([6.0, 6.0]))
    close(hd.compile(hd.grad(f))(x), np.float64([6.0, 6.0]))
    close(hd.jvp(f, (x,), (hd.array(np.ones(2)),))[1], np.float64(4.0))
    close(f(x), np.float64(6.0))  # without a transformation: just the function


def test_custom_jvp_rule_is_used_by_forward_mode():
    @hd.custom_jvp
    def softplus(x):
        return xp.log1p(xp.exp(x))

    softplus.defjvp(lambda p, t: (softplus.fun(p[0]), t[0] * xp.exp(p[0]) /
                                  (1.0 + xp.exp(p[0]))))
    x = np.float64([-1.0, 0.0, 3.0])
    _, tangent = hd.jvp(softplus, (hd.array(x),), (hd.array(np.ones(3)),))
    close(tangent, 1 / (1 + np.exp(-x)), rtol=1e-12)


def test_custom_jvp_over_custom_vjp_gives_each_mode_its_rule():
    def body(x):
        return x * 1.0

    inner = hd.custom_vjp(body).defvjp(lambda x: (body(x), None), lambda res, ct: (ct * 3.0,))
    f = hd.custom_jvp(inner).defjvp(lambda p, t: (body(p[0]), t[0] * 5.0))
    assert f.__name__ == "body"
    x = hd.array(np.float64([1.0, 2.0]))
    close(hd.grad(lambda x: xp.sum(f(x)))(x), np.float64([3.0, 3.0]))
    close(hd.jvp(f, (x,), (hd.array(np.ones(2)),))[1], np.float64([5.0, 5.0]))
    close(f(x), np.float64([1.0, 2.0]))


# -- errors -------------------------------------------------------------------------

def test_derivatives_with_respect_to_integers_are_an_error():
    with pytest.raises(TypeError, match="int32.*floating-point"):
        hd.grad(lambda n: xp.sum(n))(hd.array(np.int32([1, 2])))


def test_grad_needs_a_scalar_output():
    with pytest.raises(TypeError, match="scalar floating-point array.*f64\\[2\\]"):
        hd.grad(lambda x: x * 2.0)(hd.array(np.ones(2)))


def test_a_cotangent_of_the_wrong_structure_or_type_is_an_error():
    _, pullback = hd.vjp(lambda x: (x, x), hd.array(np.ones(2)))
    with pytest.raises(TypeError, match="structure"):
        pullback(hd.array(np.ones(2)))
    with pytest.raises(TypeError, match="cotangent of type f32\\[2\\]"):
        pullback((hd.array(np.ones(2, np.float32)), hd.array(np.ones(2))))


def test_an_op_without_a_rule_names_itself():
    @hd.op.frozen
    class Twice(hd.HloOp, opcode="twice-autodiff-test"):
        def result_type(self, x):
            return x

        def emit(self, operands, operand_types, result_type, ctx):
            return f"add({operands[0]}, {operands[0]})"

    try:
        with pytest.raises(NotImplementedError, match="Twice.*vjp_rule.dispatch"):
            hd.grad(lambda x: xp.sum(Twice()(x)))(hd.array(np.ones(2)))
    finally:
        hd.op._REGISTRY.pop("twice-autodiff-test", None)


def test_a_user_op_gets_derivatives_by_dispatch():
    @hd.op.frozen
    class Cube(hd.op.Composite, opcode="cube-autodiff-test"):
        differentiate_expansion = False

        def result_type(self, x):
            return x

        def expand(self, x):
            return ops.Multiply()(x, ops.Multiply()(x, x))

    @hd.vjp_rule.dispatch
    def _(op: Cube, ct, out, x):
        return (ops.Multiply()(ct, ops.Multiply()(hd.array(np.full(x.shape, 3.0)),
                                                   ops.Multiply()(x, x))),)

    try:
        x = hd.array(np.float64([1.0, 2.0]))
        close(hd.grad(lambda x: xp.sum(Cube()(x)))(x), np.float64([3.0, 12.0]))
        # forward mode: the default jvp_rule transposes the vjp rule
        close(hd.jvp(Cube(), (x,), (hd.array(np.ones(2)),))[1], np.float64([3.0, 12.0]))
    finally:
        hd.op._REGISTRY.pop("cube-autodiff-test", None)
