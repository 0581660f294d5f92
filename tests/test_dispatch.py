"""Dispatch on Array types: user methods and user ops extend the library from outside."""

import inspect

import numpy as np
import plum
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.ir.dispatcher import methods as dispatch_methods
from hlodsl.ir.op import HloOp, frozen
from hlodsl.errors import require


def test_methods_dispatch_on_rank_element_type_and_shape():
    @hd.dispatch
    def describe(A: hd.Array) -> str:
        return "array"

    @hd.dispatch
    def describe(A: hd.Matrix) -> str:  # noqa: F811
        return "matrix"

    @hd.dispatch
    def describe(A: hd.Matrix[hd.Integer]) -> str:  # noqa: F811
        return "integer matrix"

    @hd.dispatch
    def describe(A: hd.Array[hd.float32, (3, 4)]) -> str:  # noqa: F811
        return "f32 3x4"

    assert describe(hd.array(np.zeros(3))) == "array"
    assert describe(hd.array(np.zeros((2, 2)))) == "matrix"
    assert describe(hd.array(np.zeros((2, 2), np.int8))) == "integer matrix"
    assert describe(hd.array(np.zeros((3, 4), np.float32))) == "f32 3x4"
    assert describe(hd.array(np.zeros((3, 4), np.float64))) == "matrix"


def test_a_user_matmul_method_is_used_by_the_operator_eagerly_and_staged():
    # The method extends the library's matmul for the rest of the session, so it
    # claims shapes no other test uses.
    calls = []

    @hd.dispatch
    def matmul(A: hd.Array[hd.float32, (3, 7)], B: hd.Array[hd.float32, (7, 3)]):
        calls.append("user")
        return hd.ops.Dot((1,), (0,))(A, B) * 2.0  # a deliberately different result

    A = hd.array(np.arange(21, dtype=np.float32).reshape(3, 7))
    B = hd.array(np.arange(21, dtype=np.float32).reshape(7, 3))
    expected = 2 * (np.asarray(A) @ np.asarray(B))
    np.testing.assert_array_equal(np.asarray(A @ B), expected)
    np.testing.assert_array_equal(np.asarray(hd.compile(lambda a, b: a @ b)(A, B)), expected)
    assert calls == ["user", "user"]
    C = hd.array(np.ones((7, 2), np.float32))  # other shapes: the library's method
    np.testing.assert_array_equal(np.asarray(A @ C), np.asarray(A) @ np.asarray(C))


@frozen
class ScaledAdd(HloOp, opcode="test-scaled-add"):
    """A user op: ``x + factor * y`` emitted as HLO, defined outside the package."""

    factor: float = 1.0

    def result_type(self, x, y):
        require(x == y, self, (x, y), "operands must have equal types")
        return x

    def emit(self, operands, operand_types, result_type, ctx):
        # One op may emit a small expression: here as a call of a fused form XLA
        # parses, written with existing opcodes through a sub-computation.
        t = operand_types[0]
        comp = hd.ir.staging.stage_computation(self._scalar, (hd.ArrayType(t.dtype, ()),) * 2)
        dims = ",".join(map(str, range(t.rank)))
        return f"map({', '.join(operands)}), dimensions={{{dims}}}, to_apply={ctx.computation(comp)}"

    def _scalar(self, a, b):
        return a + b * self.factor


def test_a_user_op_registers_and_runs_eagerly_and_staged():
    assert hd.registry()["test-scaled-add"] is ScaledAdd
    x, y = hd.array(np.float32([1, 2])), hd.array(np.float32([10, 20]))
    op = ScaledAdd(0.5)
    np.testing.assert_array_equal(np.asarray(op(x, y)), [6, 12])
    np.testing.assert_array_equal(np.asarray(hd.compile(lambda a, b: op(a, b) + 1)(x, y)), [7, 13])
    assert "ScaledAdd(factor=0.5)" in str(hd.code_typed(lambda a, b: op(a, b), x, y))
    with pytest.raises(hd.ShapeError, match="ScaledAdd"):
        op(x, hd.array(np.float32([1, 2, 3])))


def test_dispatch_on_arrays_hits_plums_resolution_cache():
    @hd.dispatch
    def cached_probe(A: hd.Matrix) -> int:
        return 1

    A = hd.array(np.zeros((2, 2)))
    cached_probe(A)
    assert cached_probe._resolver.is_faithful
    assert (type(A),) in cached_probe._cache


def _public_generics():
    for name in dir(xp):
        obj = getattr(xp, name)
        if isinstance(obj, plum.Function):
            yield name, obj


def test_public_generics_have_docstrings_and_no_ambiguous_methods():
    generics = dict(_public_generics())
    assert {"matmul", "broadcast", "mapreduce", "sum", "exp", "add"} <= set(generics)
    for name, fn in generics.items():
        assert inspect.getdoc(fn), f"{name} has no docstring"
        methods = dispatch_methods(fn)  # the last-resort NoMethodError one ranks below all
        for i, m1 in enumerate(methods):
            for m2 in methods[i + 1:]:
                s1, s2 = m1.signature, m2.signature
                if s1 <= s2 and s2 <= s1:
                    pytest.fail(f"{name}: ambiguous methods {s1} and {s2}")
