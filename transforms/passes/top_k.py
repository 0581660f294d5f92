"""``BlockedTopK``: the top ``k`` of long rows in two rounds, the row read once.

XLA:CPU selects a ``topk`` with one scan per row that costs 2 to 4 ns per
element (``python -m benchmarks.top_k``), slower than the dot that makes a
kNN's distances. Faiss does the selection while it reads the distances
block by block; this pass does the same in two rounds of ops XLA runs fast:

1. the row, of ``n`` elements, is cut into ``n/g`` contiguous groups of ``g``
   and each group's largest element found, by one reduction that XLA fuses
   with what produced the row (a kNN's distance expansion) and runs
   vectorised;
2. the top ``k`` of those maxima names the ``k`` groups that can hold the
   answer (a group outside them has ``k`` larger maxima above all its
   elements), and the topk of the original op runs over just those ``k * g``
   elements, gathered in their original order.

With ``g`` near ``sqrt(n / k)`` the second round reads ``2 sqrt(n k)``
elements instead of ``n``. The result is the op's own, bit for bit, indices
included: the maxima are taken over integer keys that order the elements as
XLA's topk does (IEEE totalOrder: ``-0.0`` below ``0.0``, NaNs by sign), so
no NaN or signed zero can be mis-ranked, and of groups with equal maxima the
lower one is kept, as the op keeps the lower index of equal elements (the
gathered groups are put back in ascending order for the same reason).

What it rewrites: a ``TopK`` over float16, bfloat16, float32, float64 or a
signed integer type, either order, any leading dimensions, whose rows hold
at least ``min_length`` elements (4096) and 8 ``k g``. It runs after ``Split``
in ``hd.compile``'s memory-limit pipeline, inside loop bodies too, so that
each slice of a split kNN selects in two rounds.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl import ops
>>> x = hd.array(np.random.default_rng(0).normal(size=(3, 20_000)).astype(np.float32))
>>> top = lambda x: ops.TopK(5)(x)
>>> f = hd.compile(top, passes=[BlockedTopK()])
>>> all(np.array_equal(a, b) for a, b in zip(f(x), hd.compile(top)(x)))
True
>>> print(f.report(x).splitlines()[1])
  TopK(k=5) of f32[3,20000]: 2 rounds, 312 groups of 64 and one of 32 (the max of each group, then 320 elements)
"""

from __future__ import annotations

import math

import numpy as np

from hlodsl import ops
from hlodsl.arrays.dtypes import bfloat16, float16, float32, float64, int8, int16, int32, int64
from hlodsl.ir.graph import Computation, Node
from hlodsl.arrays.types import ArrayType

from .bodies import in_bodies
from .context import PassContext
from .rewrite import rewrite

__all__ = ["BlockedTopK", "blocked_top_k", "group_size", "take"]

#: The signed integer of each float width whose order, after ``_key``, is the float's
#: total order.
_KEY_TYPES = {float16: int16, bfloat16: int16, float32: int32, float64: int64}
_SIGNED = (int8, int16, int32, int64)
#: Elements a group's maximum is taken over in one vector (f32 lanes of AVX2): the
#: groups are a multiple of it, so that XLA reduces whole vectors.
_LANES = 8
_MIN_GROUP = 32


def group_size(n: int, k: int) -> int:
    """The group size for rows of ``n`` elements and ``k`` best: the power of two nearest
    ``0.75 sqrt(n / k)``, at least 32.

    Round 2 costs about 5 ns per gathered element (``k g`` a row), the topk of
    round 1 about 3 ns per group (``n / g``): their sum is least near
    ``0.75 sqrt(n / k)``. Powers of two because XLA:CPU vectorises a reduction
    over ``g`` only then: at 10⁴ x 6,250 f32, groups of 32, 64 or 256 took 0.6
    to 0.8 ns per element, groups of 24, 40, 48 or 96 took 2.1 to 3.8.
    """
    best = 0.75 * math.sqrt(n / max(k, 1))
    return max(_MIN_GROUP, 2 ** round(math.log2(max(best, 1))))


def _const(value, dtype) -> object:
    return ops.Constant(np.asarray(value, dtype.np_dtype))()


def _full(shape, value, dtype):
    return ops.Broadcast(tuple(shape), ())(_const(value, dtype))


def _flip_negatives(bits):
    """``bits`` with all but the sign bit flipped where the sign bit is set: float bits
    read as signed integers order negatives backwards, and this puts them in order
    (it is its own inverse)."""
    kt = bits.type.dtype
    width = kt.np_dtype.itemsize * 8
    sign = ops.ShiftRightArithmetic()(bits, _full(bits.type.shape, width - 1, kt))
    return ops.Xor()(bits, ops.And()(sign, _full(bits.type.shape, 2 ** (width - 1) - 1, kt)))


def _key(x, largest: bool):
    """Signed integers ordered as XLA's topk ranks ``x``: the better the larger."""
    dtype = x.type.dtype
    key = _flip_negatives(ops.BitcastConvert(_KEY_TYPES[dtype])(x)) if dtype in _KEY_TYPES \
        else x
    return key if largest else ops.Not()(key)  # bitwise not reverses a signed order


def _unkey(key, dtype, largest: bool):
    """The elements whose keys are ``key``, bit for bit."""
    if not largest:
        key = ops.Not()(key)
    return ops.BitcastConvert(dtype)(_flip_negatives(key)) if dtype in _KEY_TYPES else key


def _ascending(a, b):
    return ops.Compare("LT")(a, b)


def take(table, pos):
    """``table[..., pos[..., j]]`` for each ``j``: a gather along the last dimension,
    the leading ones matched (both operands small; XLA:CPU runs a one-hot sum of
    the same at 8 ns an element, this at 2)."""
    *batch, _ = table.type.shape
    nb = len(batch)
    window = ops.Gather(offset_dims=(), collapsed_slice_dims=(nb,), start_index_map=(nb,),
                        index_vector_dim=nb + 1, slice_sizes=(1,) * (nb + 1),
                        operand_batching_dims=tuple(range(nb)),
                        start_indices_batching_dims=tuple(range(nb)))
    return window(table, ops.Reshape(pos.type.shape + (1,))(pos))


def blocked_top_k(op: ops.TopK, x, g: int):
    """``op(x)`` in two rounds over groups of ``g`` (see the module docstring)."""
    *batch, n = x.type.shape
    nb, k = len(batch), op.k
    groups, tail = divmod(n, g)
    whole = x if not tail else ops.Slice((0,) * (nb + 1), tuple(batch) + (groups * g,),
                                         (1,) * (nb + 1))(x)
    # Round 1: each group's maximum key, over whole vectors (XLA fuses the two
    # reductions with the producer of ``x``), ranked as the op ranks elements.
    key = _key(whole, op.largest)
    kt = key.type.dtype
    blocks = ops.Reshape(tuple(batch) + (groups, g // _LANES, _LANES))(key)
    lowest = _const(np.iinfo(kt.np_dtype).min, kt)
    maxima = ops.Reduce(ops.Maximum(), (nb + 1, nb + 2))(blocks, lowest)
    _, chosen = op(_unkey(maxima, x.type.dtype, op.largest))
    chosen = ops.Sort(_ascending, nb, is_stable=False)(chosen)  # back in row order
    # Round 2: the chosen groups side by side in row order, then the last, short
    # group (which round 1 left out), and the op over those.
    window = ops.Gather(offset_dims=(nb + 1,), collapsed_slice_dims=(nb,),
                        start_index_map=(nb,), index_vector_dim=nb + 1,
                        slice_sizes=(1,) * nb + (1, g),
                        operand_batching_dims=tuple(range(nb)),
                        start_indices_batching_dims=tuple(range(nb)))
    gathered = window(ops.Reshape(tuple(batch) + (groups, g))(whole),
                      ops.Reshape(tuple(batch) + (k, 1))(chosen))
    candidates = ops.Reshape(tuple(batch) + (k * g,))(gathered)
    if tail:
        rest = ops.Slice((0,) * nb + (groups * g,), tuple(batch) + (n,), (1,) * (nb + 1))(x)
        candidates = ops.Concatenate(nb)(candidates, rest)
    values, pos = op(candidates)
    size = tuple(batch) + (k,)

    def full(v):
        return _full(size, v, int32)

    start = ops.Multiply()(take(chosen, ops.Divide()(pos, full(g))), full(g))
    index = ops.Add()(start, ops.Remainder()(pos, full(g)))
    if tail:  # a position past the gathered groups is in the short group
        in_rest = ops.Compare("GE")(pos, full(k * g))
        index = ops.Select()(in_rest, ops.Add()(pos, full(groups * g - k * g)), index)
    return values, index


def _tail(n: int, g: int) -> str:
    return f" and one of {n % g}" if n % g else ""


def _applies(node: Node, min_length: int) -> bool:
    if type(node.op) is not ops.TopK or not isinstance(node.operands[0].type, ArrayType):
        return False
    t = node.operands[0].type
    n, k = t.shape[-1], node.op.k
    if k < 1 or n < min_length or 8 * k * group_size(n, k) > n:
        return False  # round 2 would read an eighth of the row or more: no gain
    return t.dtype in _KEY_TYPES or t.dtype in _SIGNED


class BlockedTopK:
    """The two-round top-k rewrite, for rows of at least ``min_length`` elements."""

    name = "blocked_top_k"

    def __init__(self, min_length: int = 4096):
        self.min_length = min_length

    def __call__(self, comp: Computation, ctx: PassContext) -> tuple[Computation, list[str]]:
        comp, inner = in_bodies(comp, lambda body: self(body, ctx))
        found = [n for n in comp.nodes if _applies(n, self.min_length)]
        if not found:
            return comp, inner
        changes = []

        def rule(node, values, new):
            if not _applies(node, self.min_length):
                return None
            x = values[0]
            n, k = x.type.shape[-1], node.op.k
            g = group_size(n, k)
            changes.append(f"{node.op!r} of {x.type}: 2 rounds, {n // g} groups of {g}{_tail(n, g)} "
                           f"(the max of each group, then {k * g} elements)")
            return blocked_top_k(node.op, x, g)

        return rewrite(comp, rule), inner + changes
