"""Derivative rules of the elementwise and shape ops, against jax.vjp / jax.jvp and
finite differences.

Covered: the unary ops (ops/unary.py; complex operands too), the binary ops
(ops/binary.py, ties of max/min included), select, convert, broadcast, reshape,
transpose, and sum/max/min/product reductions (ties in max/min, zeros in the
product, initial values that take part). Piecewise-constant ops have a zero
derivative.

Each op's pullback and tangent must equal jax's for the same lax function,
eagerly and inside ``hd.compile``, on hypothesis-drawn shapes and float32 /
float64 values (the harness, tolerances and the float64 central-difference
check are those of test_autodiff_data_movement.py: float32 rtol = atol = 2e-5,
float64 1e-12 against jax; 1e-6 for finite differences). Operand values are
drawn inside each op's smooth domain (positive for log, away from 0 for abs).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax

import hlodsl as hd
from hlodsl import ops
from hlodsl.ir.op import Composite, frozen
from test_autodiff_data_movement import FLOATS, check, shapes

import ad_harness  # noqa: E402

SETTINGS = settings(max_examples=3, deadline=None)


def _values(seed, shape, dtype, lo=-2.0, hi=2.0, away_from=None):
    """Uniform values in [lo, hi]; ``away_from``: at least 0.1 from that point."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(lo, hi, shape)
    if away_from is not None:
        x = np.where(abs(x - away_from) < 0.1, away_from + np.copysign(0.1, x - away_from), x)
    return x.astype(dtype)


# -- unary ------------------------------------------------------------------------------

UNARY = {  # op: (jax function, domain (lo, hi), a point to stay away from)
    ops.Abs(): (lax.abs, (-2, 2), 0.0),
    ops.Negate(): (lax.neg, (-2, 2), None),
    ops.Exp(): (lax.exp, (-2, 2), None),
    ops.Expm1(): (lax.expm1, (-2, 2), None),
    ops.Log(): (lax.log, (0.2, 3), None),
    ops.Log1p(): (lax.log1p, (-0.8, 3), None),
    ops.Logistic(): (lax.logistic, (-3, 3), None),
    ops.Sqrt(): (lax.sqrt, (0.2, 3), None),
    ops.Rsqrt(): (lax.rsqrt, (0.2, 3), None),
    ops.Cbrt(): (lax.cbrt, (-3, 3), 0.0),
    ops.Tanh(): (lax.tanh, (-2, 2), None),
    ops.Sine(): (lax.sin, (-3, 3), None),
    ops.Cosine(): (lax.cos, (-3, 3), None),
    ops.Tan(): (lax.tan, (-1.2, 1.2), None),
}


@pytest.mark.parametrize("op", list(UNARY), ids=lambda op: type(op).__name__)
@SETTINGS
@given(shape=shapes(0), dtype=st.sampled_from(FLOATS))
def test_unary(op, shape, dtype):
    fn, (lo, hi), away = UNARY[op]
    check(op, [_values(1, shape, dtype, lo, hi, away)], (0,), fn)


@pytest.mark.parametrize("op", [ops.Exp(), ops.Log(), ops.Sine(), ops.Cosine(), ops.Tanh(),
                                ops.Sqrt(), ops.Negate(), ops.Expm1(), ops.Log1p()],
                         ids=lambda op: type(op).__name__)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_unary_on_complex_numbers_follows_jax(op, dtype):
    rng = np.random.default_rng(2)
    z = (rng.uniform(0.2, 1.5, (3,)) + 1j * rng.uniform(-1, 1, (3,))).astype(dtype)
    check(op, [z], (0,), UNARY[op][0])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_abs_of_complex_numbers_follows_jax(dtype):
    # |z| is real: ct * conj(z) / |z| back to z (0 at z = 0), as jax.
    rng = np.random.default_rng(3)
    z = (rng.uniform(-1.5, 1.5, (4,)) + 1j * rng.uniform(-1, 1, (4,))).astype(dtype)
    check(ops.Abs(), [z], (0,), lax.abs)
    _, pullback = hd.vjp(ops.Abs(), hd.array(np.zeros(2, dtype)))
    np.testing.assert_array_equal(np.asarray(pullback(hd.array(np.ones(2, z.real.dtype)))[0]),
                                  np.asarray(jax.vjp(lax.abs, np.zeros(2, dtype))[1](
                                      np.ones(2, z.real.dtype))[0]))


@frozen
class _SinhByExp(Composite, opcode="sinh-by-exp-ad-test"):
    """(exp(x) - exp(-x)) / 2, with no derivative rule of its own."""

    def result_type(self, x):
        return x

    def expand(self, x):
        two = ops.Broadcast(x.shape)(hd.array(np.asarray(2, x.dtype.np_dtype)))
        return ops.Divide()(ops.Subtract()(ops.Exp()(x), ops.Exp()(ops.Negate()(x))), two)


def test_a_composite_is_differentiated_through_its_expansion():
    # _SinhByExp has no rule of its own: its expansion's ops are differentiated.
    # (ops.Sinh has its own rule since it takes complex operands: tests/test_complex.py.)
    assert _SinhByExp.differentiate_expansion
    check(_SinhByExp(), [_values(16, (2, 3), np.float64)], (0,), lax.sinh)


@pytest.mark.parametrize("op", [ops.Sign(), ops.Floor(), ops.Ceil(), ops.RoundNearestEven()],
                         ids=lambda op: type(op).__name__)
def test_piecewise_constant_ops_have_zero_derivative(op):
    x = np.float64([-1.5, -0.25, 0.75, 2.5])
    _, pullback = hd.vjp(lambda x: op(x) * x, hd.array(x))
    np.testing.assert_array_equal(np.asarray(pullback(hd.array(np.ones(4)))[0]),
                                  np.asarray(op(hd.array(x))))  # d(c x)/dx = c
    _, tangent = hd.jvp(op, (hd.array(x),), (hd.array(np.ones(4)),))
    np.testing.assert_array_equal(np.asarray(tangent), np.zeros(4))


# -- binary -----------------------------------------------------------------------------

BINARY = {  # op: (jax function, x domain, y domain, y's point to avoid)
    ops.Add(): (lax.add, (-2, 2), (-2, 2), None),
    ops.Subtract(): (lax.sub, (-2, 2), (-2, 2), None),
    ops.Multiply(): (lax.mul, (-2, 2), (-2, 2), None),
    ops.Divide(): (lax.div, (-2, 2), (-2, 2), 0.0),
    ops.Power(): (lax.pow, (0.2, 2), (-2, 2), None),
    ops.Maximum(): (lax.max, (-2, 2), (-2, 2), None),
    ops.Minimum(): (lax.min, (-2, 2), (-2, 2), None),
    ops.Atan2(): (lax.atan2, (-2, 2), (-2, 2), 0.0),
}


@pytest.mark.parametrize("op", list(BINARY), ids=lambda op: type(op).__name__)
@SETTINGS
@given(shape=shapes(0), dtype=st.sampled_from(FLOATS))
def test_binary(op, shape, dtype):
    fn, x_dom, y_dom, y_away = BINARY[op]
    x = _values(3, shape, dtype, *x_dom)
    y = _values(4, shape, dtype, *y_dom, away_from=y_away)
    check(op, [x, y], (0, 1), fn)


@SETTINGS
@given(shape=shapes(0), dtype=st.sampled_from(FLOATS))
def test_remainder_away_from_its_jumps(shape, dtype):
    y = _values(5, shape, dtype, 0.5, 2)
    x = (np.floor(_values(6, shape, np.float64, -4, 4)) + 0.5) * y  # x / y: k + 1/2
    check(ops.Remainder(), [x.astype(dtype), y], (0, 1), lax.rem)


@pytest.mark.parametrize("op,fn", [(ops.Maximum(), lax.max), (ops.Minimum(), lax.min)],
                         ids=["max", "min"])
def test_max_and_min_split_ties_evenly_as_jax(op, fn):
    x, y = np.float64([1.0, 2.0, 3.0]), np.float64([1.0, 3.0, 2.0])
    check(op, [x, y], (0, 1), fn, fd=False)  # a kink at the tie


def test_power_at_zero_base_gives_zero_exponent_cotangent():
    x, y = np.float64([0.0, 0.0, 2.0]), np.float64([2.0, 3.0, 0.5])
    check(ops.Power(), [x, y], (0, 1), lax.pow, fd=False)  # x = 0 is an edge of pow's domain


# -- select, convert, shapes ----------------------------------------------------------

@SETTINGS
@given(shape=shapes(0), dtype=st.sampled_from(FLOATS))
def test_select(shape, dtype):
    p = np.random.default_rng(7).integers(0, 2, shape).astype(bool)
    t, f = _values(8, shape, dtype), _values(9, shape, dtype)
    check(ops.Select(), [p, t, f], (1, 2), lambda t, f: lax.select(jnp.asarray(p), t, f))


@pytest.mark.parametrize("src,dst", [(np.float32, np.float64), (np.float64, np.float32),
                                     (np.float64, np.float16), (np.float32, np.complex64),
                                     (np.complex128, np.complex64),
                                     (np.complex64, np.complex128)])
def test_convert(src, dst):
    rng = np.random.default_rng(10)
    x = rng.uniform(-2, 2, (2, 3))
    if np.dtype(src).kind == "c":
        x = x + 1j * rng.uniform(-2, 2, (2, 3))
    x = x.astype(src)
    check(ops.Convert(dst), [x], (0,), lambda x: lax.convert_element_type(x, dst),
          fd=np.dtype(dst).itemsize >= 8 and np.dtype(src).kind != "c")


def test_complex_to_real_goes_through_real_not_convert():
    # Convert refuses complex to real (XLA would drop the imaginary part silently);
    # Real's derivative is the one jax gives convert_element_type(complex -> real).
    z = (np.float64([1.5, -2.0]) + 1j * np.float64([0.5, 3.0])).astype(np.complex128)
    with pytest.raises(hd.ShapeError, match="ops.Real"):
        hd.vjp(ops.Convert(np.float64), hd.array(z))
    check(ops.Real(), [z], (0,), lambda z: jnp.real(z))


def test_convert_from_an_integer_takes_no_cotangent():
    x = hd.array(np.float64([1.5, 2.5]))
    n = hd.array(np.int32([3, 4]))
    _, pullback = hd.vjp(lambda x: x * ops.Convert(np.float64)(n), x)
    np.testing.assert_array_equal(np.asarray(pullback(hd.array(np.ones(2)))[0]), [3, 4])


@SETTINGS
@given(shape=shapes(0, 2), dtype=st.sampled_from(FLOATS), data=st.data())
def test_broadcast_in_dim(shape, dtype, data):
    extra = data.draw(st.lists(st.integers(1, 3), max_size=2))
    out_rank = len(shape) + len(extra)
    dims = sorted(data.draw(st.permutations(range(out_rank)))[:len(shape)])
    if data.draw(st.booleans()):  # operand dimensions placed out of order
        order = data.draw(st.permutations(range(len(shape))))
        dims = [dims[i] for i in order]
    it, out_shape = iter(extra), [0] * out_rank
    for i, d in enumerate(dims):
        out_shape[d] = shape[i]
    out_shape = [n or next(it) for n in out_shape]
    x = _values(11, shape, dtype)
    # NOTE: jax's transpose rule of broadcast_in_dim assumes increasing dimensions (for
    # out-of-order ones its vjp returns the cotangent untransposed): the oracle
    # transposes x into increasing order first, a composition jax differentiates right.
    perm = sorted(range(len(dims)), key=dims.__getitem__)
    check(ops.Broadcast(out_shape, dims), [x], (0,),
          lambda x: lax.broadcast_in_dim(jnp.transpose(x, perm), out_shape, sorted(dims)))


@SETTINGS
@given(shape=shapes(0), dtype=st.sampled_from(FLOATS), data=st.data())
def test_reshape_and_transpose(shape, dtype, data):
    x = _values(12, shape, dtype)
    perm = data.draw(st.permutations(range(len(shape))))
    check(ops.Transpose(perm), [x], (0,), lambda x: lax.transpose(x, perm))
    size = int(np.prod(shape))
    new = data.draw(st.sampled_from([(size,), (1, size), (size, 1, 1), ()] if size == 1
                                    else [(size,), (1, size), (size, 1)]))
    check(ops.Reshape(new), [x], (0,), lambda x: lax.reshape(x, new))


# -- reductions -----------------------------------------------------------------------

_add = ad_harness.add
_max = ad_harness.maximum
_min = ad_harness.minimum
_mul = ad_harness.multiply
def _reduce_nothing(x, init):
    """XLA's reduce over no dimensions returns the operand: the initial value is unused."""
    return x + 0 * init


def test_reduce_over_no_dimensions_is_the_identity():
    x = hd.array(np.float32([2.0, 3.0]))
    for fn, identity in ((_add, 0.0), (_mul, 1.0), (_max, -np.inf)):
        out = ops.Reduce(fn, ())(x, hd.array(np.float32(identity)))
        np.testing.assert_array_equal(np.asarray(out), [2.0, 3.0])
        with pytest.raises(hd.ShapeError, match="identity"):  # nothing is reduced, but
            ops.Reduce(fn, ())(x, hd.array(np.float32(1.5)))  # still not the identity


@SETTINGS
@given(shape=shapes(1), dtype=st.sampled_from(FLOATS), data=st.data())
def test_sum_with_its_initial_value(shape, dtype, data):
    # The initial value must be add's identity (XLA requires it); its cotangent is
    # still the sum of the result's.
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)))))
    x, init = _values(13, shape, dtype), np.asarray(0, dtype)
    check(ops.Reduce(_add, dims), [x, init], (0,), lambda x: jnp.sum(x, dims))
    # No finite differences in the initial value: moved off 0, it would be refused.
    check(ops.Reduce(_add, dims), [x, init], (0, 1),
          lambda x, i: jnp.sum(x, dims) + i if dims else _reduce_nothing(x, i), fd=False)


@pytest.mark.parametrize("kind", ["max", "min"])
@SETTINGS
@given(shape=shapes(1), dtype=st.sampled_from(FLOATS), data=st.data())
def test_max_and_min_share_the_cotangent_among_ties(kind, shape, dtype, data):
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)))))
    # Values on a coarse grid: ties are common.
    x = np.random.default_rng(14).integers(-2, 3, shape).astype(dtype)
    fn, jfn, init = {"max": (_max, jnp.max, -np.inf), "min": (_min, jnp.min, np.inf)}[kind]
    check(ops.Reduce(fn, dims), [x, np.asarray(init, dtype)], (0,),
          lambda x: jfn(x, dims), fd=False)  # ties are kinks


def test_max_gives_the_cotangent_to_a_symbolic_initial_value_that_wins():
    # A known initial value must be the identity (-inf: it never wins). A symbolic
    # one is not checked (XLA's result is implementation-defined; over dimensions
    # of size > 1 XLA:CPU folds it in once): the rule then takes it as one more
    # candidate.
    x = np.float64([[1.0, 5.0], [3.0, 3.0]])
    op = ops.Reduce(_max, (1,))
    with pytest.raises(hd.ShapeError, match="identity"):
        hd.vjp(op, hd.array(x), hd.array(4.0))

    def pullback(x, init, ct):
        return hd.vjp(op, x, init)[1](ct)

    g_x, g_init = hd.compile(pullback)(hd.array(x), hd.array(4.0),
                                       hd.array(np.float64([1.0, 1.0])))
    np.testing.assert_array_equal(np.asarray(g_x), [[0, 1], [0, 0]])
    assert float(g_init) == 1.0
    g_x, g_init = pullback(hd.array(x), hd.array(-np.inf), hd.array(np.float64([1.0, 1.0])))
    np.testing.assert_array_equal(np.asarray(g_x), [[0, 1], [0.5, 0.5]])
    assert g_init is None or float(g_init) == 0.0


def _argmax_pair(av, ai, bv, bi):
    """argmax's (value, index) combine: the larger value, the lower index on ties."""
    take_a = ops.Or()(ops.Compare("GT")(av, bv),
                      ops.And()(ops.Compare("EQ")(av, bv), ops.Compare("LT")(ai, bi)))
    return ops.Select()(take_a, av, bv), ops.Select()(take_a, ai, bi)


def test_a_reduction_selecting_value_index_pairs_gives_the_chosen_element_the_cotangent():
    # argmax's variadic reduce (stdlib.searching; the LU loop's pivot search): the value
    # result is one element of each row, so its derivative is that element's, the first
    # of equal maxima (the index decides); the indices take none.
    x = np.float64([[1.0, 5.0, 3.0], [7.0, 2.0, 7.0]])
    op = ops.Reduce(_argmax_pair, (1,))
    index = np.broadcast_to(np.arange(3), x.shape).astype(np.int64)
    init = (hd.array(-np.inf), hd.array(np.int64(2 ** 62)))

    def value(x):
        return op(x, hd.array(index), *init)[0]

    ct = np.float64([2.0, 3.0])
    (g,) = hd.vjp(value, hd.array(x))[1](hd.array(ct))
    np.testing.assert_array_equal(np.asarray(g), [[0, 2, 0], [3, 0, 0]])
    want = jax.vjp(lambda x: jnp.max(x + np.float64([[0, 0, 0], [0, 0, -1e-9]]), 1), x)[1](ct)
    np.testing.assert_allclose(np.asarray(g), want[0])
    t = np.float64([[0.5, 1.0, 2.0], [4.0, 8.0, 16.0]])
    tangent = hd.compile(lambda x, t: hd.jvp(value, (x,), (t,))[1])(hd.array(x), hd.array(t))
    np.testing.assert_array_equal(np.asarray(tangent), [1.0, 4.0])

    def not_a_selection(av, ai, bv, bi):  # the index is not the chosen element's
        take_a = ops.Compare("GT")(av, bv)
        return ops.Select()(take_a, av, bv), ops.Select()(take_a, bi, ai)

    with pytest.raises(NotImplementedError, match="select one whole"):
        hd.vjp(lambda x: ops.Reduce(not_a_selection, (1,))(x, hd.array(index), *init)[0],
               hd.array(x))[1](hd.array(ct))


@SETTINGS
@given(shape=shapes(1), dtype=st.sampled_from(FLOATS), zeros=st.integers(0, 3), data=st.data())
def test_product_with_zeros_and_an_initial_value(shape, dtype, zeros, data):
    # The initial value must be multiply's identity, 1 (XLA drops any other over
    # dimensions of size 1); its cotangent is still the product's.
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)))))
    rng = np.random.default_rng(15)
    x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)
    x.flat[rng.permutation(x.size)[:zeros]] = 0  # none, one or several zeros per group
    x, init = x.astype(dtype), np.asarray(1, dtype)
    check(ops.Reduce(_mul, dims), [x, init], (0,), lambda x: jnp.prod(x, dims))
    # No finite differences in the initial value: moved off 1, it would be refused.
    check(ops.Reduce(_mul, dims), [x, init], (0, 1),
          lambda x, i: jnp.prod(x, dims) * i if dims else _reduce_nothing(x, i), fd=False)
    with pytest.raises(hd.ShapeError, match="not 1.0, the identity of Multiply"):
        ops.Reduce(_mul, dims)(hd.array(x), hd.array(np.asarray(1.5, dtype)))


def test_product_rule_multiplies_a_symbolic_initial_value_in_explicitly():
    # Its own reductions start from the identity (a concrete 1.5 there would be
    # refused); a symbolic initial value is one more factor, as XLA:CPU computes
    # it over dimensions of size > 1.
    x = np.float64([[2.0, 0.0, 3.0], [0.5, 4.0, -1.0]])
    op = ops.Reduce(_mul, (1,))

    def pullback(x, init, ct):
        return hd.vjp(op, x, init)[1](ct)

    ct = np.float64([1.0, 2.0])
    g_x, g_init = hd.compile(pullback)(hd.array(x), hd.array(1.5), hd.array(ct))
    jax_x, jax_init = jax.vjp(lambda x, i: jnp.prod(x, 1) * i, x, 1.5)[1](ct)
    np.testing.assert_allclose(np.asarray(g_x), np.asarray(jax_x), rtol=1e-12)
    np.testing.assert_allclose(float(g_init), float(jax_init), rtol=1e-12)
