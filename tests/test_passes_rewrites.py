"""The rewriting passes: MatrixChain and Distances change the program, never the result."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
from hlodsl import stdlib as xp

Distances, MatrixChain = hd.passes.Distances, hd.passes.MatrixChain

FEW = settings(max_examples=20, deadline=None)
sizes = st.integers(1, 40)
floats = st.sampled_from([np.float32, np.float64])
RTOL = {np.float32: 1e-5, np.float64: 1e-12}


def arrays(seed: int, *shapes, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [hd.array(rng.normal(size=s).astype(dtype)) for s in shapes]


def same(fn, args, passes, rtol):
    """``fn`` with ``passes`` equals ``fn`` as written; returns the rewritten one.

    Reordered sums round differently, so the tolerance is relative to the
    largest entry (an entry near zero may be a cancellation of large terms).
    """
    rewritten = hd.compile(fn, passes=passes)
    got, want = rewritten(*args), hd.compile(fn)(*args)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        w = np.asarray(w)
        np.testing.assert_allclose(np.asarray(g), w, rtol=rtol,
                                   atol=rtol * max(1.0, float(np.abs(w).max(initial=0))))
    return rewritten


def changed(f, *args) -> bool:
    report = str(f.report(*args))
    return "nothing changed" not in report


# -- MatrixChain ------------------------------------------------------------------------


def draw_tree(data, lo: int, hi: int):
    """A random way of writing the product of factors lo..hi: a factor index, or
    (left, right, wrap) where wrap transposes or scales the product (or is None)."""
    if lo == hi:
        return lo
    k = data.draw(st.integers(lo, hi - 1))
    wrap = data.draw(st.sampled_from([None, None, "T", "mul", "rmul", "div", "neg"]))
    return draw_tree(data, lo, k), draw_tree(data, k + 1, hi), wrap


def span(tree) -> tuple[int, int]:
    return (tree, tree) if isinstance(tree, int) else (span(tree[0])[0], span(tree[1])[1])


def write(tree, ms, transposed: bool = False):
    """The product ``tree`` of ``ms`` (transposed if asked), written with ``@``, ``.T``,
    scalings; vectors (1-D) only at the ends."""
    if isinstance(tree, int):
        m = ms[tree]
        return m.T if transposed and m.ndim == 2 else m
    left, right, wrap = tree
    lo, hi = span(tree)
    matrix = not (lo == 0 and ms[0].ndim == 1) and not (hi == len(ms) - 1 and ms[-1].ndim == 1)
    if wrap == "T" and matrix:
        return write((left, right, None), ms, not transposed).T
    out = (write(right, ms, True) @ write(left, ms, True) if transposed
           else write(left, ms) @ write(right, ms))
    return {"mul": lambda o: o * 2.5, "rmul": lambda o: 2.5 * o, "div": lambda o: o / 4,
            "neg": lambda o: -o}.get(wrap, lambda o: o)(out)


@FEW
@given(p=st.lists(sizes, min_size=4, max_size=6), left=st.booleans(), right=st.booleans(),
       dtype=floats, seed=st.integers(0, 99), data=st.data())
def test_chains_written_any_way_keep_their_result(p, left, right, dtype, seed, data):
    k = len(p) - 1
    flips = data.draw(st.lists(st.booleans(), min_size=k, max_size=k))
    shapes = [(p[i + 1], p[i]) if flips[i] else (p[i], p[i + 1]) for i in range(k)]
    if left:
        shapes[0] = (p[1],)
    if right:
        shapes[-1] = (p[-2],)
    args = arrays(seed, *shapes, dtype=dtype)
    tree = draw_tree(data, 0, k - 1)

    def chain(*ms):
        ms = [m.T if f and m.ndim == 2 else m for m, f in zip(ms, flips)]
        return write(tree, ms)

    f = same(chain, args, [MatrixChain()], RTOL[dtype])
    for line in str(f.report(*args)).splitlines()[1:]:  # each change is cheaper
        before, after = line.split(", ")[-1].split(" flops")[0].split(" -> ")
        assert float(after) <= float(before)


def test_a_b_v_runs_as_two_matrix_vector_products():
    a, b, v = arrays(0, (64, 64), (64, 64), (64,))
    f = same(lambda a, b, v: a @ b @ v, (a, b, v), [MatrixChain()], 1e-12)
    assert "((0 1) 2) -> (0 (1 2))" in str(f.report(a, b, v))
    assert "f64[64,64] dot(" not in hd.code_hlo(f, a, b, v)


@pytest.mark.parametrize("fn", [
    lambda a, b, v: (a.T @ b).T @ v,
    lambda a, b, v: 2 * (a @ b) @ v,
    lambda a, b, v: -((a @ b) / 3).T @ v,
    lambda a, b, v: v @ (a @ b @ v) * 2.0,
], ids=["transposed", "scaled", "negated-divided-transposed", "inside-a-vector-product"])
def test_it_looks_through_transposes_and_scalings(fn):
    a, b, v = arrays(0, (64, 64), (64, 64), (64,))
    f = same(fn, (a, b, v), [MatrixChain()], 1e-12)
    assert changed(f, a, b, v)
    assert "f64[64,64] dot(" not in hd.code_hlo(f, a, b, v)


@pytest.mark.parametrize("fn, shapes", [
    (lambda a, b, v: a @ (b @ v), ((64, 64), (64, 64), (64,))),  # already cheapest
    (lambda a, b, v: (a @ b @ v, a @ b), ((64, 64), (64, 64), (64,))),  # a @ b read twice
    (lambda a, b, v: xp.tanh(a @ b) @ v, ((64, 64), (64, 64), (64,))),  # not a product
    (lambda a, b, v: (a @ b) * b @ v, ((64, 64), (64, 64), (64,))),  # not a scalar
    (lambda a, b, v: a @ b @ v, ((4, 32, 32), (4, 32, 32), (4, 32, 1))),  # batched
    (lambda a, b, v: v @ a @ b, ((64, 64), (64, 64), (64,))),  # cheapest as written
], ids=["cheapest", "read-twice", "tanh", "elementwise", "batched", "vector-first"])
def test_what_matrix_chain_leaves_alone(fn, shapes):
    args = arrays(0, *shapes)
    assert not changed(same(fn, args, [MatrixChain()], 0), *args)


def test_gradients_through_a_reordered_chain():
    a, b, v = arrays(1, (20, 30), (30, 25), (25,))
    loss = hd.grad(lambda a, b, v: xp.sum(xp.sin(a @ b @ v)), argnums=(0, 1, 2))
    same(loss, (a, b, v), [MatrixChain()], 1e-10)
    # With respect to a only, a @ b is read once: the gradient program is reordered too.
    loss = hd.grad(lambda a, b, v: xp.sum(xp.sin(a @ b @ v)), argnums=0)
    assert changed(same(loss, (a, b, v), [MatrixChain()], 1e-10), a, b, v)


# -- Distances --------------------------------------------------------------------------


def sq_dist(x, y):
    return xp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)


@FEW
@given(n=st.integers(2, 40), m=st.integers(2, 40), d=st.integers(2, 16),
       batch=st.sampled_from([(), (3,), (2, 2)]), form=st.sampled_from(["pow", "mul", "square"]),
       swap=st.booleans(), last=st.booleans(), dtype=floats, seed=st.integers(0, 99))
def test_squared_distances_as_a_dot_equal_the_naive_form(n, m, d, batch, form, swap, last,
                                                          dtype, seed):
    x, y = arrays(seed, (*batch, n, d), (*batch, m, d), dtype=dtype)
    nb = len(batch)
    axis = -1 if last else nb + 2
    square = {"pow": lambda t: t ** 2, "mul": lambda t: t * t, "square": xp.square}[form]

    def fn(x, y):
        bx = xp.expand_dims(x, nb + 1)  # (..., n, 1, d)
        by = xp.expand_dims(y, nb)  # (..., 1, m, d)
        return xp.sum(square(by - bx if swap else bx - by), axis=axis)

    f = same(fn, (x, y), [Distances()], RTOL[dtype])
    assert "one dot" in str(f.report(x, y))
    assert f"[{','.join(map(str, (*batch, n, m, d)))}]" not in hd.code_hlo(f, x, y)
    assert np.all(np.asarray(f(x, y)) >= 0)


def test_distances_of_a_point_to_itself_are_zero_not_negative():
    x, = arrays(6, (50, 8), dtype=np.float32)
    x = hd.array(np.asarray(x) * 100 + 1000)  # large norms: the expansion cancels badly
    f = hd.compile(lambda x: xp.sqrt(sq_dist(x, x)), passes=[Distances()])
    out = np.asarray(f(x))
    assert "one dot" in str(f.report(x)) and not np.isnan(out).any() and (out >= 0).all()


@pytest.mark.parametrize("fn", [
    lambda x, y: xp.sqrt(sq_dist(x, y)),
    lambda x, y: xp.exp(-sq_dist(x, y) / 2) @ xp.ones(y.shape[0]),
], ids=["sqrt", "inside-a-kernel"])
def test_what_reads_the_sum_reads_the_new_value(fn):
    x, y = arrays(2, (30, 4), (20, 4))
    f = same(fn, (x, y), [Distances()], 1e-12)
    assert "one dot" in str(f.report(x, y))
    assert "[30,20,4]" not in hd.code_hlo(f, x, y)


@pytest.mark.parametrize("fn, shapes", [
    (lambda x, y: xp.sum((x - y) ** 2, axis=-1), ((30, 4), (30, 4))),
    (lambda x, y: xp.sum((x[:, None, :] - y[None, :, :]) ** 3, axis=-1), ((30, 4), (20, 4))),
    (lambda x, y: xp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=0), ((30, 4), (20, 4))),
    (lambda x, y: xp.max((x[:, None, :] - y[None, :, :]) ** 2, axis=-1), ((30, 4), (20, 4))),
    (lambda x, y: xp.sum(xp.abs(x[:, None, :] - y[None, :, :]), axis=-1), ((30, 4), (20, 4))),
    (lambda x, y: (sq_dist(x, y), x[:, None, :] - y[None, :, :]), ((30, 4), (20, 4))),
], ids=["elementwise", "cube", "sum-over-a-free-axis", "max", "l1", "difference-read-twice"])
def test_what_distances_leaves_alone(fn, shapes):
    args = arrays(4, *shapes)
    assert not changed(same(fn, args, [Distances()], 0), *args)


@pytest.mark.parametrize("dtype", [np.int32, np.float16])
def test_integer_and_half_precision_distances_stay_as_written(dtype):
    x = hd.array(np.arange(12).reshape(4, 3).astype(dtype))
    assert not changed(same(sq_dist, (x, x), [Distances()], 0), x, x)


def test_gradients_through_rewritten_distances():
    x, y = arrays(5, (15, 3), (10, 3))
    scale = hd.array(np.float64(0.7))

    def kernel(x, y, s):
        return xp.sum(xp.exp(-sq_dist(x, y) / s))

    # With respect to the length scale only the sum is read: it is rewritten.
    f = same(hd.grad(kernel, argnums=2), (x, y, scale), [Distances()], 1e-9)
    assert changed(f, x, y, scale)
    # With respect to the points, the gradient reads the difference itself: the
    # (n, m, d) tensor exists anyway, so the sum stays as written.
    f = same(hd.grad(kernel, argnums=(0, 1)), (x, y, scale), [Distances()], 1e-9)
    assert not changed(f, x, y, scale)


# -- MatrixChain through sums and broadcasts of products ---------------------------------

# Each writes (A @ B) @ x (or a row of it) without ``@`` for the last product.
SUMS = {
    "rows times a broadcast vector": lambda a, b, x, y: xp.sum((a @ b) * x[None, :], axis=1),
    "a broadcast vector times columns": lambda a, b, x, y: xp.sum(y[:, None] * (a @ b), axis=0),
    "transposed product": lambda a, b, x, y: xp.sum((a @ b).T * y[None, :], axis=1),
    "row sums": lambda a, b, x, y: xp.sum(a @ b, axis=1),
    "column sums": lambda a, b, x, y: xp.sum(a @ b, axis=0),
    "rank-3 product": lambda a, b, x, y: xp.sum(a[:, :, None] * b[None, :, :], axis=1) @ x,
}


@pytest.mark.parametrize("name", sorted(SUMS))
@settings(max_examples=2, deadline=None)
@given(n=st.integers(8, 40), k=st.integers(8, 40), m=st.integers(8, 40),
       seed=st.integers(0, 99))
def test_sums_of_products_are_dots_that_join_the_chain(name, n, k, m, seed):
    fn = SUMS[name]
    args = arrays(seed, (n, k), (k, m), (m,), (n,))
    f = same(fn, args, [MatrixChain()], 1e-12)
    report = f.report(*args)
    assert "-> one dot of" in report and "-> (0 (1 2))" in report, report
    # Every product left is a matrix times a vector: no n x m (nor n x k x m) product.
    dots = [line.split("=")[1].split()[0] for line in hd.code_hlo(f, *args).splitlines()
            if " dot(" in line]
    assert dots and all("," not in t for t in dots), dots
    loss = lambda a, b, x, y: xp.sum(fn(a, b, x, y) ** 2)  # noqa: E731
    same(hd.grad(loss, argnums=(0, 1, 2, 3)), args, [MatrixChain()], 1e-10)


@pytest.mark.parametrize("fn", [
    lambda a, b, x, y: xp.sum(a * x[None, :], axis=1),  # a plain mat-vec: nothing to gain
    lambda a, b, x, y: xp.max((a @ b) * x[None, :], axis=1),  # not a sum
    lambda a, b, x, y: xp.sum((a @ b) * x[None, :], axis=1) + xp.sum(a @ b),  # product read twice
])
def test_sums_that_are_no_chain_are_left_as_written(fn):
    args = arrays(0, (6, 5), (5, 5), (5,), (6,))
    f = same(fn, args, [MatrixChain()], 1e-12)
    assert "one dot" not in f.report(*args)
