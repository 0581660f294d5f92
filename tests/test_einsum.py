"""``xp.einsum`` and ``np.einsum`` on hlodsl arrays, against numpy (values) and jax (gradients).

Subscripts are drawn by hypothesis in numpy's whole grammar: explicit and
implicit outputs, ``...`` with right-aligned broadcasting (size 1 against n),
labels repeated in one operand (diagonals, traces) and size-1 dimensions of
named labels; numpy.einsum is the oracle of every drawn case (a case numpy
refuses must be refused too). Gradients are compared with jax.grad of
jax.numpy.einsum; vmap with a Python loop; staged with eager.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.errors import ShapeError

LETTERS = "abcd"


@st.composite
def einsum_cases(draw):
    """``(subscripts, shapes)`` in numpy's grammar; numpy decides whether it is valid."""
    sizes = {c: draw(st.integers(1, 3)) for c in LETTERS}
    n_ops = draw(st.integers(1, 3))
    ellipsis = draw(st.lists(st.integers(1, 3), max_size=2))
    terms, shapes, any_ellipsis = [], [], False
    for _ in range(n_ops):
        labels = draw(st.lists(st.sampled_from(LETTERS), max_size=3))
        shape = [1 if draw(st.integers(0, 5)) == 0 else sizes[c] for c in labels]
        for c in set(labels):  # a label repeated in one operand has one size there
            at = [i for i, x in enumerate(labels) if x == c]
            for i in at:
                shape[i] = shape[at[0]]
        term = "".join(labels)
        if draw(st.booleans()):
            any_ellipsis = True
            k = draw(st.integers(0, len(ellipsis)))
            dims = [1 if draw(st.integers(0, 3)) == 0 else n for n in ellipsis[len(ellipsis) - k:]]
            at = draw(st.integers(0, len(labels)))
            term = term[:at] + "..." + term[at:]
            shape = shape[:at] + dims + shape[at:]
        terms.append(term)
        shapes.append(tuple(shape))
    subscripts = ",".join(terms)
    if draw(st.booleans()):  # explicit output: some of the labels used, in any order
        used = sorted(set("".join(terms).replace(".", "")))
        out = draw(st.permutations(used))[:draw(st.integers(0, len(used)))]
        out = "".join(out)
        if any_ellipsis:
            at = draw(st.integers(0, len(out)))
            out = out[:at] + "..." + out[at:]
        subscripts += "->" + out
    return subscripts, shapes


def _operands(shapes, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@settings(max_examples=60, deadline=None)
@given(einsum_cases())
def test_einsum_matches_numpy_on_drawn_subscripts(case):
    subscripts, shapes = case
    arrays = _operands(shapes)
    try:
        want = np.einsum(subscripts, *arrays)
    except ValueError:
        with pytest.raises((ValueError, ShapeError)):
            xp.einsum(subscripts, *[hd.array(a) for a in arrays])
        return
    got = xp.einsum(subscripts, *[hd.array(a) for a in arrays])
    assert got.shape == np.shape(want), (subscripts, shapes)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


# Each covers one part of the grammar: matmul, batch, ellipsis broadcast, diagonal, trace,
# an outer product, a three-operand chain, a sum of a repeated label over two operands.
CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("...ij,...jk->...ik", [(3, 2, 3), (1, 3, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ijk,ik->j", [(2, 3, 2), (2, 2)]),
    ("iij,j->i", [(2, 2, 3), (3,)]),
]


@pytest.mark.parametrize("subscripts,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_gradient_matches_jax(subscripts, shapes):
    arrays = _operands(shapes, seed=1)
    w = np.random.default_rng(2).standard_normal(np.einsum(subscripts, *arrays).shape)
    nums = tuple(range(len(arrays)))

    def loss(*xs):
        return xp.sum(xp.einsum(subscripts, *xs) * hd.array(w))

    def loss_jax(*xs):
        return jnp.sum(jnp.einsum(subscripts, *xs) * w)

    got = hd.grad(loss, argnums=nums)(*[hd.array(a) for a in arrays])
    want = jax.jit(jax.grad(loss_jax, argnums=nums))(*arrays)
    for g, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-12, atol=1e-12)


def test_einsum_under_vmap_equals_a_loop_and_staged_equals_eager():
    a, b = _operands([(4, 2, 3), (3, 3)], seed=3)
    f = lambda x, y: xp.einsum("ij,jj->ji", x, y)  # noqa: E731  (a diagonal inside vmap)
    got = hd.vmap(f, in_axes=(0, None))(hd.array(a), hd.array(b))
    want = np.stack([np.einsum("ij,jj->ji", a[i], b) for i in range(4)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    staged = hd.compile(lambda x, y: xp.einsum("bij,jj->bji", x, y))(hd.array(a), hd.array(b))
    np.testing.assert_allclose(np.asarray(staged), want, rtol=1e-12)


def test_numpy_einsum_on_hlodsl_arrays_and_the_sublist_form():
    a, b, c = _operands([(2, 3), (3, 4), (4,)], seed=4)
    ha, hb, hc = map(hd.array, (a, b, c))
    got = np.einsum("ij,jk,k->i", ha, hb, hc)
    assert isinstance(got, hd.Array)
    np.testing.assert_allclose(np.asarray(got), np.einsum("ij,jk,k->i", a, b, c), rtol=1e-12)
    mixed = np.einsum("ij,jk", ha, b, optimize=True)  # a numpy operand, numpy's keyword
    np.testing.assert_allclose(np.asarray(mixed), a @ b, rtol=1e-12)
    sub = xp.einsum(ha, [0, 1], hb, [1, 2], [0, 2])
    np.testing.assert_allclose(np.asarray(sub), np.einsum(a, [0, 1], b, [1, 2], [0, 2]),
                               rtol=1e-12)
    assert np.einsum_path("ij,jk,k->i", ha, hb, hc)[0] == \
        np.einsum_path("ij,jk,k->i", a, b, c, optimize="greedy")[0]


@pytest.mark.parametrize("optimize", [False, True, "optimal", "auto",
                                      ["einsum_path", (1, 2), (0, 1)]])
def test_every_contraction_order_gives_numpys_answer(optimize):
    a, b, c = _operands([(2, 3), (3, 4), (4, 2)], seed=5)
    got = xp.einsum("ij,jk,kl->li", *map(hd.array, (a, b, c)), optimize=optimize)
    np.testing.assert_allclose(np.asarray(got), np.einsum("ij,jk,kl->li", a, b, c), rtol=1e-12)


def test_einsum_keeps_integer_and_boolean_types_as_numpy():
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = xp.einsum("ij,ij->i", hd.array(i), hd.array(i))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.einsum("ij,ij->i", i, i))
    m = np.array([[True, False], [False, False]])
    got = xp.einsum("ij,jk->ik", hd.array(m), hd.array(m))
    np.testing.assert_array_equal(np.asarray(got), np.einsum("ij,jk->ik", m, m))


@pytest.mark.parametrize("subscripts,shapes,match", [
    ("ij,jk->ik", [(2, 3), (4, 2)], r"label 'j'.*size 3.*4"),
    ("ij,jk->iz", [(2, 3), (3, 2)], r"output label 'z'.*in no operand"),
    ("ij->ii", [(2, 2)], r"'i'.*more than once"),
    ("ij", [(2, 3, 4)], r"operand 0 of shape \(2, 3, 4\) has 3 dimension"),
    ("ij,jk", [(2, 3)], r"2 operand\(s\) but 1"),
    ("i1", [(2, 2)], r"invalid character"),
    ("...i->i", [(2, 3)], r"no '\.\.\.'"),
])
def test_bad_subscripts_are_named(subscripts, shapes, match):
    with pytest.raises((ValueError, ShapeError), match=match):
        xp.einsum(subscripts, *[hd.array(np.ones(s)) for s in shapes])


def test_implicit_output_is_alphabetical_with_capitals_first():
    a = np.ones((2, 3, 4))
    assert xp.einsum("cBa", hd.array(a)).shape == np.einsum("cBa", a).shape == (3, 4, 2)
