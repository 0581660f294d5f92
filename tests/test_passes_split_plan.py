"""The split planner's invariants, checked on their own (issue 39).

- ``operand_dims`` and ``sliced_op`` agree: for every op the rules accept and
  every dimension they accept it along, the op's own shape rule applied to
  the sliced operand types (``sliced_op`` for the slice's static operands)
  gives the result's type sliced the same way.
- A plan is a partition: no node has two roles (sliced in one region,
  accumulated in another, or in two regions).
- ``split_emit.check`` refuses a plan that ``emit`` could not run (a value
  read whole that no loop fills), and ``Split`` then declines that region and
  says so instead of failing.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops
from hlodsl.arrays.types import TupleType
from hlodsl.ir.staging import stage
from hlodsl.stdlib import nn
from hlodsl.transforms.passes import PassContext, Split
from hlodsl.transforms.passes import split_plan
from hlodsl.transforms.passes.split_emit import PlanError, check
from hlodsl.transforms.passes.split_plan import loops, plan
from hlodsl.transforms.passes.split_rules import operand_dims, shape_of, sliced_op


def _sliced(t, d, size):
    if isinstance(t, TupleType):
        return TupleType(tuple(_sliced(e, d, size) for e in t.elements))
    shape = list(t.shape)
    shape[d] = size
    return attrs.evolve(t, shape=tuple(shape))


def _result_type(node, op, types):
    if type(op).__name__ == "GetTupleElement":
        return types[0].elements[op.index]
    return op.result_type(*types)


def _arr(shape, dtype=np.float32, seed=0):
    return hd.array(np.random.default_rng(seed).normal(size=shape).astype(dtype))


#: Small programs that between them use every op ``operand_dims`` has a rule for.
PROGRAMS = {
    "elementwise": (lambda x, y: xp.clip(xp.where(x > y, -x, xp.exp(y)), -1.0, 1.0)
                    .astype(xp.float64), [(5, 7), (5, 7)]),
    "broadcast": (lambda x, y: x[:, None, :] * y[None, :, :], [(5, 7), (3, 7)]),
    "transpose": (lambda x: xp.permute_dims(x[:, :, None] * x[:, None, :], (2, 0, 1)),
                  [(5, 7)]),
    "reshape": (lambda x: xp.reshape(xp.reshape(x, (5, 7, 1)) + 1.0, (5, 7)), [(5, 7)]),
    "dot": (lambda a, b: xp.matmul(a, b) @ xp.ones((6,)), [(2, 5, 4), (2, 4, 6)]),
    "reduce": (lambda x: (xp.sum(x, axis=0), xp.max(x, axis=1), xp.argmax(x, axis=1)),
               [(5, 7)]),
    "top_k": (lambda x: xp.top_k(x, 3), [(5, 7)]),
    "triangular_solve": (lambda a, b: xp.linalg.solve_triangular(a, b, lower=True),
                         [(4, 4), (4, 6)]),
    "iota": (lambda x: x + xp.astype(xp.arange(7), xp.float32)[None, :], [(5, 7)]),
    "slice": (lambda x: x[:, 1:4] * x[:, 2:5] + xp.sum(x[1:4, :3], axis=0)[None, :],
              [(5, 7)]),
    "concat": (lambda x, y: xp.concat([x, y], axis=1), [(5, 7), (5, 2)]),
    "reverse": (lambda x: xp.flip(x, axis=1) + 1.0, [(5, 7)]),
    "gather": (lambda x, y: (xp.take(x, xp.argmax(y, axis=1), axis=1),
                             xp.take(y, xp.argmax(x, axis=1), axis=0)), [(5, 7), (6, 7)]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_the_slice_of_every_op_is_what_its_shape_rule_gives(name, data):
    fn, shapes = PROGRAMS[name]
    comp = stage(fn, tuple(_arr(s, seed=i) for i, s in enumerate(shapes)), {}).computation
    checked = 0
    for node in comp.nodes:
        for d in range(len(shape_of(node.type))):
            wanted = operand_dims(node, d)
            extent = shape_of(node.type)[d]
            if wanted is None or extent < 2:
                continue
            c = data.draw(st.integers(1, extent - 1), label=f"{node.op!r} along {d}")
            types = [o.type if od is None else _sliced(o.type, od, c)
                     for o, od in zip(node.operands, wanted)]
            got = _result_type(node, sliced_op(node, d, c), types)
            assert got == _sliced(node.type, d, c), (node, d, c)
            checked += 1
    assert checked > 0


def _block(x, wq, wk, wv):
    h = nn.layer_norm(x, x.shape[-1])
    return nn.softmax((h @ wq) @ xp.matrix_transpose(h @ wk), axis=-1) @ (h @ wv)


def _block_comp(grad: bool):
    args = (_arr((256, 16)),) + tuple(_arr((16, 16), seed=i) for i in (1, 2, 3))
    fn = hd.grad(lambda *a: xp.sum(_block(*a)), argnums=(0, 1, 2, 3)) if grad else _block
    return stage(fn, args, {}).computation


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("limit", [16 * 1024, 64 * 1024])
def test_a_plan_gives_each_node_one_role(grad, limit):
    comp = _block_comp(grad)
    regions, _, _ = plan(comp, limit // 8)
    assert regions
    seen: dict[int, str] = {}
    for r in regions:
        assert not set(r.dims) & set(r.accs)
        for key in list(r.dims) + list(r.accs):
            assert key not in seen, "a node in two regions"
            seen[key] = "sliced" if key in r.dims else "accumulated"
    check(comp, loops(comp, regions))  # and the plan can be emitted


def test_check_refuses_a_value_read_whole_that_no_loop_fills():
    comp = _block_comp(False)
    regions, _, _ = plan(comp, 64 * 1024 // 8)
    todo = loops(comp, regions)
    lp = next(lp for lp in todo if lp.exits)
    lp.exits.pop()  # the mutation: the plan forgets to fill a value read whole
    with pytest.raises(PlanError, match="needed whole but no loop fills it|before it exists"):
        check(comp, todo)


def test_split_declines_a_region_its_check_refuses(monkeypatch):
    comp = _block_comp(False)
    real = split_plan.loops

    def forgetful(comp, regions):  # every plan loses a value read whole
        todo = real(comp, regions)
        for lp in todo:
            if lp.exits and lp.region is regions[0]:
                lp.exits.pop()
                break
        return todo

    monkeypatch.setattr("hlodsl.transforms.passes.split.loops", forgetful)
    _, changes = Split()(comp, PassContext(64 * 1024))
    assert any(c.startswith("declined: ") for c in changes), changes
