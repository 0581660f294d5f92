"""Data movement ops against jax.lax: slice, dynamic-slice, dynamic-update-slice,
concatenate, pad, reverse, gather and scatter.

Every op runs eagerly and under ``hd.compile`` on hypothesis-drawn shapes,
element types and static operands, and must equal the jax.lax oracle (and the
op's numpy ``reference`` where it has one) bit for bit: these ops only move
elements. Scatter combiners are chosen so that the order in which updates are
applied cannot change the result (integer add/multiply, max/min, float sums of
small integers), so that comparison is exact too.
"""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax

import hlodsl as hd
from hlodsl import ops

COVERED_OPCODES = {"slice", "dynamic-slice", "dynamic-update-slice", "concatenate", "pad",
                   "reverse", "gather", "scatter"}

DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float16, ml_dtypes.bfloat16,
          np.float32, np.float64, np.complex64]
INDEX_DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64]
SETTINGS = settings(max_examples=12, deadline=None)


def _data(shape, dtype, seed=0, integral=False):
    """Random values of ``dtype``; ``integral`` floats hold small integers (exact sums)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape,
                            endpoint=True).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if not integral and dtype in (np.float32, np.float64):
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-8, 9, shape).astype(dtype)


def _indices(shape, dtype, lo, hi, seed=1):
    """Index values in ``[lo, hi]`` (``lo`` raised to 0 for unsigned types)."""
    lo = max(lo, 0) if np.issubdtype(dtype, np.unsignedinteger) else lo
    return np.random.default_rng(seed).integers(lo, hi, shape, endpoint=True).astype(dtype)


def _run(op, *arrays):
    """``op`` applied eagerly and staged; both results have ``op.result_type``."""
    args = [hd.array(a) for a in arrays]
    expect = op.result_type(*(a.type for a in args))
    eager = op(*args)
    staged = hd.compile(lambda *xs: op(*xs))(*args)
    results = []
    for got in (eager, staged):
        parts = got if isinstance(got, tuple) else (got,)
        types = expect.elements if isinstance(expect, hd.TupleType) else (expect,)
        assert tuple(p.type for p in parts) == tuple(types)
        results.append(tuple(np.asarray(p) for p in parts))
    return results


def _same(got, want):
    """Bit-for-bit equality with the same shape and dtype."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.tobytes() == want.tobytes(), f"\n{got}\n!=\n{want}"


def _check(op, arrays, oracle):
    """Eager and staged results equal ``oracle`` (and the op's reference, if any)."""
    for parts in _run(op, *arrays):
        wants = oracle if isinstance(oracle, tuple) else (oracle,)
        for got, want in zip(parts, wants, strict=True):
            _same(got, want)
    if hasattr(op, "reference"):
        _same(np.asarray(op.reference(*arrays)), np.asarray(wants[0]))


def _shape(min_rank=0, max_rank=3, min_side=0, max_side=4):
    return st.lists(st.integers(min_side, max_side), min_size=min_rank, max_size=max_rank)


# -- slice, reverse, concatenate, pad -------------------------------------------

@SETTINGS
@given(_shape(), st.sampled_from(DTYPES), st.data())
def test_slice_matches_lax_slice(shape, dtype, data):
    start = [data.draw(st.integers(0, n)) for n in shape]
    limit = [data.draw(st.integers(s, n)) for s, n in zip(start, shape)]
    strides = [data.draw(st.integers(1, 3)) for _ in shape]
    x = _data(shape, dtype)
    _check(ops.Slice(start, limit, strides), [x], lax.slice(jnp.asarray(x), start, limit, strides))


@SETTINGS
@given(_shape(), st.sampled_from(DTYPES), st.data())
def test_reverse_matches_lax_rev(shape, dtype, data):
    dims = data.draw(st.permutations(range(len(shape))))[:data.draw(st.integers(0, len(shape)))]
    x = _data(shape, dtype)
    _check(ops.Reverse(dims), [x], lax.rev(jnp.asarray(x), dims))


@SETTINGS
@given(_shape(min_rank=1), st.sampled_from(DTYPES), st.data())
def test_concatenate_matches_lax_concatenate(shape, dtype, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    xs = [_data(shape[:dim] + [n] + shape[dim + 1:], dtype, seed=i) for i, n in enumerate(sizes)]
    _check(ops.Concatenate(dim), xs, lax.concatenate([jnp.asarray(x) for x in xs], dim))


@SETTINGS
@given(_shape(), st.sampled_from(DTYPES), st.data())
def test_pad_with_negative_and_interior_padding_matches_lax_pad(shape, dtype, data):
    low, high, interior = [], [], []
    for n in shape:
        interior.append(data.draw(st.integers(0, 2)))
        low.append(data.draw(st.integers(-3, 3)))
        dilated = n + max(n - 1, 0) * interior[-1]
        high.append(data.draw(st.integers(max(-3, -(low[-1] + dilated)), 3)))
    x, value = _data(shape, dtype), _data((), dtype, seed=7)
    want = lax.pad(jnp.asarray(x), jnp.asarray(value), list(zip(low, high, interior)))
    _check(ops.Pad(low, high, interior), [x, value], want)


# -- dynamic-slice, dynamic-update-slice ----------------------------------------

def _starts(data, shape, dtype):
    """Start indices as index-typed scalars, often out of range (XLA clamps them)."""
    return [_indices((), dtype, -4, n + 4, seed=data.draw(st.integers(0, 99))) for n in shape]


@SETTINGS
@given(_shape(), st.sampled_from(DTYPES), st.sampled_from(INDEX_DTYPES), st.data())
def test_dynamic_slice_matches_lax_dynamic_slice(shape, dtype, index_dtype, data):
    sizes = [data.draw(st.integers(0, n)) for n in shape]
    x, starts = _data(shape, dtype), _starts(data, shape, index_dtype)
    want = lax.dynamic_slice(jnp.asarray(x), [jnp.asarray(s) for s in starts], sizes,
                             allow_negative_indices=False)
    _check(ops.DynamicSlice(sizes), [x, *starts], want)


@SETTINGS
@given(_shape(), st.sampled_from(DTYPES), st.sampled_from(INDEX_DTYPES), st.data())
def test_dynamic_update_slice_matches_lax(shape, dtype, index_dtype, data):
    update = _data([data.draw(st.integers(0, n)) for n in shape], dtype, seed=3)
    x, starts = _data(shape, dtype), _starts(data, shape, index_dtype)
    want = lax.dynamic_update_slice(jnp.asarray(x), jnp.asarray(update),
                                    [jnp.asarray(s) for s in starts],
                                    allow_negative_indices=False)
    _check(ops.DynamicUpdateSlice(), [x, update, *starts], want)


@pytest.mark.parametrize("start", [-5, -1, 0, 4, 7, 8, 100])
def test_dynamic_slice_clamps_out_of_range_starts_into_the_operand(start):
    x = np.arange(10, dtype=np.int32) * 3
    clamped = min(max(start, 0), 10 - 3)  # XLA: start = clamp(start, 0, dim - size)
    _check(ops.DynamicSlice(3), [x, np.int32(start)], x[clamped:clamped + 3])
    want = x.copy()
    want[clamped:clamped + 3] = [-1, -2, -3]
    _check(ops.DynamicUpdateSlice(), [x, np.int32([-1, -2, -3]), np.int32(start)], want)


# -- gather and scatter ---------------------------------------------------------

@st.composite
def _index_layout(draw, operand_shape, batching_dims, index_count):
    """Indices shape, index_vector_dim and batching dims, and how jax sees them.

    The index batch dimensions are the operand's batching dimensions plus up to
    two more, in a drawn order; the index vector dimension goes anywhere, or is
    implicit (index_vector_dim == rank) when vectors have one entry. jax wants
    the index vector last: ``from_jax`` moves it from there to its place.
    """
    sizes = [operand_shape[d] for d in batching_dims] + draw(
        st.lists(st.integers(1, 3), max_size=2))
    order = draw(st.permutations(range(len(sizes))))
    batch = [sizes[i] for i in order]
    ivd = draw(st.integers(0, len(batch)))
    implicit = index_count == 1 and ivd == len(batch) and draw(st.booleans())
    jax_batching = [order.index(j) for j in range(len(batching_dims))]
    own_batching = [p if p < ivd else p + 1 for p in jax_batching]

    def from_jax(indices):
        return indices[..., 0] if implicit else np.moveaxis(indices, -1, ivd)

    return ivd, tuple(own_batching), tuple(jax_batching), batch, from_jax


def _start_indices(batch, index_dtype, operand_shape, mapped, window, slack, seed=1):
    """Index vectors (last axis) whose entry j starts a window in ``mapped[j]``.

    Mostly in range, up to ``slack`` beyond either end (clamped by gather,
    dropped by scatter).
    """
    rng = np.random.default_rng(seed)
    low = 0 if np.issubdtype(index_dtype, np.unsignedinteger) else -slack
    out = np.zeros(tuple(batch) + (len(mapped),), index_dtype)
    for j, d in enumerate(mapped):
        out[..., j] = rng.integers(low, operand_shape[d] - window[d] + slack, batch,
                                   endpoint=True)
    return out


@st.composite
def _dimension_layout(draw):
    """Operand shape, batching dims, index-mapped dims and dropped (size-1) dims."""
    rank = 3 - draw(st.integers(0, 2))  # hypothesis favours small draws: mostly rank 3
    shape = draw(_shape(min_rank=rank, max_rank=rank, min_side=1))
    dims = list(range(rank))
    batching = sorted(draw(st.permutations(dims))[:draw(st.sampled_from([0, 0, 1, 2]))])
    rest = [d for d in dims if d not in batching]
    # Mostly every other dimension indexed, the most telling case; fewer down to none.
    mapped = tuple(draw(st.permutations(rest))[:len(rest) - draw(st.integers(0, len(rest)))])
    dropped = sorted(d for d in rest if draw(st.booleans()))
    return shape, tuple(batching), mapped, tuple(dropped)


@settings(max_examples=25, deadline=None)
@given(_dimension_layout(), st.sampled_from(DTYPES), st.sampled_from(INDEX_DTYPES), st.data())
def test_gather_matches_lax_gather(layout, dtype, index_dtype, data):
    shape, batching, start_index_map, collapsed = layout
    ivd, idx_batching, jax_batching, batch, from_jax = data.draw(
        _index_layout(shape, batching, len(start_index_map)))
    slice_sizes = [1 if d in collapsed + batching else data.draw(st.integers(0, n))
                   for d, n in enumerate(shape)]
    n_offset = len(shape) - len(collapsed) - len(batching)
    offset_dims = sorted(data.draw(st.permutations(range(n_offset + len(batch))))[:n_offset])
    op = ops.Gather(offset_dims=offset_dims, collapsed_slice_dims=collapsed,
                    start_index_map=start_index_map, index_vector_dim=ivd,
                    slice_sizes=slice_sizes, operand_batching_dims=batching,
                    start_indices_batching_dims=idx_batching)
    x = _data(shape, dtype)
    jax_indices = _start_indices(batch, index_dtype, shape, start_index_map, slice_sizes, 2)
    dn = lax.GatherDimensionNumbers(
        offset_dims=tuple(offset_dims), collapsed_slice_dims=collapsed,
        start_index_map=start_index_map, operand_batching_dims=batching,
        start_indices_batching_dims=jax_batching)
    want = lax.gather(jnp.asarray(x), jnp.asarray(jax_indices), dn, slice_sizes,
                      mode=lax.GatherScatterMode.CLIP)  # XLA clamps starts, as CLIP does
    _check(op, [x, from_jax(jax_indices)], want)


def _add(a, b):
    return ops.Add()(a, b)


def _mul(a, b):
    return ops.Multiply()(a, b)


def _max(a, b):
    return ops.Maximum()(a, b)


def _min(a, b):
    return ops.Minimum()(a, b)


def _overwrite(a, b):
    return b


def _to_f64(a, b):
    return ops.Convert(np.float64)(b)


def _add_and_max(a0, a1, u0, u1):
    return ops.Add()(a0, u0), ops.Maximum()(a1, u1)


COMBINERS = {"add": (_add, lax.scatter_add), "mul": (_mul, lax.scatter_mul),
             "max": (_max, lax.scatter_max), "min": (_min, lax.scatter_min)}
SCATTER_DTYPES = [np.int8, np.uint16, np.int32, np.int64, np.float16, ml_dtypes.bfloat16,
                  np.float32, np.float64]


@settings(max_examples=25, deadline=None)
@given(_dimension_layout(), st.sampled_from(SCATTER_DTYPES), st.sampled_from(INDEX_DTYPES),
       st.sampled_from(sorted(COMBINERS)), st.data())
def test_scatter_matches_lax_scatter(layout, dtype, index_dtype, combiner, data):
    shape, batching, scatter_dims, inserted = layout
    if combiner == "mul" and not np.issubdtype(dtype, np.integer):
        combiner = "max"  # float products would round differently in another order
    ivd, idx_batching, jax_batching, batch, from_jax = data.draw(
        _index_layout(shape, batching, len(scatter_dims)))
    window_sizes = [1 if d in inserted + batching else data.draw(st.integers(1, n))
                    for d, n in enumerate(shape)]
    window = [w for d, w in enumerate(window_sizes) if d not in inserted + batching]
    rank = len(window) + len(batch)
    window_dims = sorted(data.draw(st.permutations(range(rank)))[:len(window)])
    w, b = iter(window), iter(batch)
    update_shape = [next(w) if d in window_dims else next(b) for d in range(rank)]
    fn, oracle = COMBINERS[combiner]
    op = ops.Scatter(fn, update_window_dims=window_dims, inserted_window_dims=inserted,
                     scatter_dims_to_operand_dims=scatter_dims, index_vector_dim=ivd,
                     input_batching_dims=batching, scatter_indices_batching_dims=idx_batching)
    x, updates = _data(shape, dtype, integral=True), _data(update_shape, dtype, 5, True)
    # Windows reaching outside the operand are skipped whole (jax: FILL_OR_DROP).
    jax_indices = _start_indices(batch, index_dtype, shape, scatter_dims, window_sizes, 1)
    dn = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(window_dims), inserted_window_dims=inserted,
        scatter_dims_to_operand_dims=scatter_dims, operand_batching_dims=batching,
        scatter_indices_batching_dims=jax_batching)
    want = oracle(jnp.asarray(x), jnp.asarray(jax_indices), jnp.asarray(updates), dn,
                  mode=lax.GatherScatterMode.FILL_OR_DROP)
    _check(op, [x, from_jax(jax_indices), updates], want)


@SETTINGS
@given(st.integers(1, 6), st.integers(0, 3), st.sampled_from(DTYPES), st.booleans(), st.data())
def test_scatter_overwrites_rows_at_unique_indices(n, m, dtype, sort, data):
    rows = data.draw(st.permutations(range(n)))[:data.draw(st.integers(0, n))]
    rows = sorted(rows) if sort else rows
    indices = np.int32(rows).reshape(len(rows), 1)
    x, updates = _data((n, m), dtype), _data((len(rows), m), dtype, seed=2)
    op = ops.Scatter(_overwrite, update_window_dims=(1,), inserted_window_dims=(0,),
                     scatter_dims_to_operand_dims=(0,), index_vector_dim=1,
                     indices_are_sorted=sort, unique_indices=True)
    want = x.copy()
    want[rows] = updates
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    jax_want = lax.scatter(jnp.asarray(x), jnp.asarray(indices), jnp.asarray(updates), dn,
                           indices_are_sorted=sort, unique_indices=True)
    _same(np.asarray(jax_want), want)
    _check(op, [x, indices, updates], want)


@SETTINGS
@given(st.integers(1, 5), st.integers(0, 6), st.data())
def test_variadic_scatter_combines_each_operand_with_its_own_update(n, k, data):
    indices = _indices((k,), np.int32, -1, n)  # implicit index vector dimension
    xs = _data((n, 2), np.int32), _data((n, 2), np.float32, seed=3)  # max: order-free
    us = _data((k, 2), np.int32, seed=4), _data((k, 2), np.float32, seed=6)
    op = ops.Scatter(_add_and_max, update_window_dims=(1,), inserted_window_dims=(0,),
                     scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    mode, idx = lax.GatherScatterMode.FILL_OR_DROP, jnp.asarray(indices[:, None])
    want = (lax.scatter_add(jnp.asarray(xs[0]), idx, jnp.asarray(us[0]), dn, mode=mode),
            lax.scatter_max(jnp.asarray(xs[1]), idx, jnp.asarray(us[1]), dn, mode=mode))
    _check(op, [xs[0], xs[1], indices, us[0], us[1]], tuple(np.asarray(w) for w in want))


# -- HLO text -------------------------------------------------------------------

def _instruction(op, *arrays) -> str:
    """The entry computation's root instruction (printed last) of ``op`` staged alone."""
    text = hd.code_hlo(lambda *xs: op(*xs), *(hd.array(a) for a in arrays))
    return [ln for ln in text.splitlines() if ln.lstrip().startswith("ROOT")][-1]


def test_hlo_text_spells_attributes_as_xla_prints_them():
    # Expected strings are how XLA prints these ops (jax.jit(...).lower().as_text("hlo")).
    x, i = np.zeros((4, 5), np.float32), np.int32(1)
    assert "slice={[0:4:1], [1:3:2]}" in _instruction(ops.Slice((0, 1), (4, 3), (1, 2)), x)
    assert "dynamic-slice(xs, arg1, arg2), dynamic_slice_sizes={2,2}" in \
        _instruction(ops.DynamicSlice((2, 2)), x, i, i)
    assert "dynamic-update-slice(xs, arg1, arg2, arg3)" in \
        _instruction(ops.DynamicUpdateSlice(), x, x[:2, :2], i, i)
    assert "padding=0_1_0x2_-1_1" in _instruction(ops.Pad((0, 2), (1, -1), (0, 1)), x,
                                                  np.float32(0))
    assert "dimensions={0,1}" in _instruction(ops.Reverse((0, 1)), x)
    assert "dimensions={1}" in _instruction(ops.Concatenate(1), x, x)
    gather = ops.Gather(offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,),
                        index_vector_dim=2, slice_sizes=(1, 1, 5), operand_batching_dims=(0,),
                        start_indices_batching_dims=(0,), indices_are_sorted=True)
    assert ("offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, "
            "operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, "
            "slice_sizes={1,1,5}, indices_are_sorted=true") in \
        _instruction(gather, np.zeros((2, 4, 5), np.float32), np.zeros((2, 3, 1), np.int32))
    scatter = ops.Scatter(_overwrite, update_window_dims=(2,), inserted_window_dims=(1,),
                          scatter_dims_to_operand_dims=(1,), index_vector_dim=2,
                          input_batching_dims=(0,), scatter_indices_batching_dims=(0,),
                          indices_are_sorted=True, unique_indices=True)
    line = _instruction(scatter, np.zeros((2, 4, 5), np.float32), np.zeros((2, 3, 1), np.int32),
                        np.zeros((2, 3, 5), np.float32))
    assert ("update_window_dims={2}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, "
            "input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2, "
            "indices_are_sorted=true, unique_indices=true, to_apply=_overwrite") in line


def test_padding_a_scalar_is_the_identity():
    # XLA's text format has no padding config for rank 0: the op emits a copy.
    _check(ops.Pad((), ()), [np.float32(2.5), np.float32(0)], np.float32(2.5))


# -- errors ---------------------------------------------------------------------

BAD_STATIC_OPERANDS = [
    (lambda: ops.Slice((0, 2), (1, 1)), "start index must be <= its limit"),
    (lambda: ops.Slice((0,), (1,), (0,)), "strides must be positive"),
    (lambda: ops.Slice((-1,), (1,)), "non-negative"),
    (lambda: ops.Slice((0, 0), (1,)), "one entry per dimension"),
    (lambda: ops.DynamicSlice((2, -1)), "non-negative"),
    (lambda: ops.Concatenate(-1), "non-negative"),
    (lambda: ops.Pad((0,), (0,), (-1,)), "interior padding must be non-negative"),
    (lambda: ops.Pad((0, 1), (0,)), "one entry per"),
    (lambda: ops.Reverse((1, 1)), "repeats"),
    (lambda: ops.Gather((1, 0), (), (0,), 1, (1, 1)), "offset_dims must be sorted"),
    (lambda: ops.Gather((1,), (0,), (0,), 1, (2, 1)), "slice size <= 1"),
    (lambda: ops.Gather((1,), (0,), (0,), 1, (1, 1, 1)), "every operand dimension"),
    (lambda: ops.Gather((1,), (0,), (2,), 1, (1, 1)), "start_index_map (2,) out of range"),
    (lambda: ops.Gather((1,), (), (0,), 1, (1, 1), operand_batching_dims=(0,),
                        start_indices_batching_dims=(0,)), "must be disjoint"),
    (lambda: ops.Gather((1,), (), (1,), 1, (1, 1), operand_batching_dims=(0,)),
     "same length"),
    (lambda: ops.Gather((1,), (0,), (0,), 1, (1, 1), operand_batching_dims=(),
                        start_indices_batching_dims=()), None),
    (lambda: ops.Scatter(_add, (1,), (1, 0), (0,), 1), "inserted_window_dims must be sorted"),
    (lambda: ops.Scatter(_add, (1,), (0,), (0, 0), 1), "distinct"),
    (lambda: ops.Scatter(_add, (1,), (0,), (1,), 1, input_batching_dims=(1,),
                         scatter_indices_batching_dims=(0,)), "must be disjoint"),
    (lambda: ops.Scatter(_add, (1,), (0,), (0,), 0, input_batching_dims=(1,),
                         scatter_indices_batching_dims=(0,)), "not a batching dimension"),
]


@pytest.mark.parametrize("make, message", BAD_STATIC_OPERANDS)
def test_bad_static_operands_fail_at_construction(make, message):
    if message is None:  # a valid op, so the table cannot pass by rejecting everything
        make()
        return
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


f32_34, f32_3, i32 = np.zeros((3, 4), np.float32), np.zeros(3, np.float32), np.int32(0)
_rows = dict(update_window_dims=(1,), inserted_window_dims=(0,),
             scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
BAD_OPERANDS = [
    (ops.Slice((0, 0), (3, 5)), [f32_34], "exceeds the size 4 of dimension 1"),
    (ops.Slice((0,), (3,)), [f32_34], "1 start indices for a rank-2 operand"),
    (ops.DynamicSlice((2, 2)), [f32_34, i32], "one start index per operand dimension"),
    (ops.DynamicSlice((2, 2)), [f32_34, i32, np.int64(0)], "the same element type"),
    (ops.DynamicSlice((2, 2)), [f32_34, i32, np.float32(0)], "integer scalars"),
    (ops.DynamicSlice((2, 2)), [f32_34, i32, np.int32([0])], "integer scalars"),
    (ops.DynamicSlice((4, 2)), [f32_34, i32, i32], "slice size 4 exceeds"),
    (ops.DynamicUpdateSlice(), [f32_34, np.zeros((4, 1), np.float32), i32, i32],
     "update size 4 exceeds"),
    (ops.DynamicUpdateSlice(), [f32_34, np.zeros((1, 1), np.int32), i32, i32],
     "same element type"),
    (ops.Concatenate(0), [f32_34, np.zeros((3, 5), np.float32)], "differ only in dimension 0"),
    (ops.Concatenate(0), [f32_34, np.zeros((3, 4), np.float64)], "same element type"),
    (ops.Concatenate(0), [f32_34, f32_3], "same rank"),
    (ops.Concatenate(2), [f32_34], "out of range for rank 2"),
    (ops.Pad((0,), (0,)), [f32_34, np.float32(0)], "1 entries for a rank-2"),
    (ops.Pad((0,), (0,)), [f32_3, np.float64(0)], "scalar of the operand's element type"),
    (ops.Pad((-2,), (-2,)), [f32_3, np.float32(0)], "negative size -1"),
    (ops.Reverse(2), [f32_34], "out of range for rank 2"),
    (ops.Gather((1,), (0,), (0,), 1, (1, 4)), [f32_34, np.float32([[0]])], "integer type"),
    (ops.Gather((1,), (0,), (0,), 1, (1, 5)), [f32_34, np.int32([[0]])], "slice size 5"),
    (ops.Gather((1,), (0,), (0,), 1, (1, 4)), [f32_34, np.int32([[0, 1]])],
     "index vectors have 2 entries"),
    (ops.Gather((1,), (0,), (0,), 3, (1, 4)), [f32_34, np.int32([[0]])], "index_vector_dim 3"),
    (ops.Gather((2,), (0,), (0,), 1, (1, 4)), [f32_34, np.int32([[0]])], "offset_dims (2,)"),
    (ops.Gather((1, 2), (0,), (0,), 1, (1, 1, 4)), [f32_34, np.int32([[0]])], "3 slice sizes"),
    (ops.Gather((2,), (1,), (1,), 2, (1, 1, 4), operand_batching_dims=(0,),
                start_indices_batching_dims=(0,)),
     [np.zeros((2, 3, 4), np.float32), np.zeros((3, 1, 1), np.int32)], "batching dimensions"),
    (ops.Scatter(_add, **_rows), [f32_34, np.int32([[0]])], "N operands"),
    (ops.Scatter(_add, **_rows), [f32_34, np.int32([[0]]), np.zeros((1, 5), np.float32)],
     "exceeds the operand window bound 4"),
    (ops.Scatter(_add, **_rows), [f32_34, np.int32([[0]]), np.zeros((2, 4), np.float32)],
     "must match the indices' batch dimensions (1,)"),
    (ops.Scatter(_add, **_rows), [f32_34, np.int32([[0]]), np.zeros((1, 4), np.int32)],
     "update must have its operand's element type"),
    (ops.Scatter(_add, **_rows), [f32_34, np.int32([[0]]), np.zeros(4, np.float32)],
     "updates must have rank 2"),
    (ops.Scatter(_add, **_rows), [f32_3, np.int32([[0]]), np.zeros((1, 4), np.float32)],
     "must together have the operand's rank 1"),
    (ops.Scatter(_to_f64, **_rows),
     [f32_34, np.int32([[0]]), np.zeros((1, 4), np.float32)], "the computation must return"),
]


@pytest.mark.parametrize("op, arrays, message", BAD_OPERANDS,
                         ids=[f"{op.opcode}-{i}" for i, (op, _, _) in enumerate(BAD_OPERANDS)])
def test_bad_operand_shapes_raise_shape_errors_eagerly_and_staged(op, arrays, message):
    args = [hd.array(a) for a in arrays]
    types = ", ".join(str(a.type) for a in args)
    for run in (op, hd.compile(lambda *xs: op(*xs))):
        with pytest.raises(hd.ShapeError) as e:
            run(*args)
        text = str(e.value)
        assert f"{op!r} cannot be applied to ({types})" in text
        assert message in text, text
