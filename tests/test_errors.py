"""Bad input gets a clear hlodsl error at the user's line, never an XLA dump."""

import numpy as np
import pytest

import hlodsl as hd
from hlodsl import ops
from hlodsl.ir.op import HloOp, frozen

THIS_FILE = __file__


def _line_of(text: str) -> int:
    with open(THIS_FILE) as f:
        return next(i for i, ln in enumerate(f, 1) if text in ln)


def test_matmul_shape_mismatch_names_op_static_operands_types_and_line():
    W, x = hd.array(np.ones((3, 4), np.float32)), hd.array(np.ones(3, np.float32))

    def dense(W, x):
        return W @ x  # the offending line

    for run in (dense, hd.compile(dense)):
        with pytest.raises(hd.ShapeError) as e:
            run(W, x)
        msg = str(e.value)
        assert "Dot(lhs_contracting=(1,), rhs_contracting=(0,))" in msg
        assert "f32[3,4]" in msg and "f32[3]" in msg
        assert f"{THIS_FILE}:{_line_of('# the offending line')}" in msg


def test_adding_incompatible_shapes_names_the_function_types_and_line():
    a, b = hd.array(np.ones((3, 4), np.float32)), hd.array(np.ones((4, 3), np.float32))
    with pytest.raises(hd.ShapeError) as e:
        hd.compile(lambda a, b: a + b)(a, b)  # add-line
    msg = str(e.value)
    assert msg.startswith("add:") and "f32[3,4]" in msg and "f32[4,3]" in msg
    assert f":{_line_of('# add-line')} " in msg


def test_ops_never_broadcast_and_say_so():
    a, b = hd.array(np.ones((3, 4), np.float32)), hd.array(np.ones(4, np.float32))
    with pytest.raises(hd.ShapeError, match=r"Add\(\) cannot be applied to \(f32\[3,4\], f32\[4\]\)"):
        ops.Add()(a, b)


def test_ops_take_arrays_only():
    with pytest.raises(TypeError, match="operand 1 is a float"):
        ops.Add()(hd.array(np.float32(1)), 2.0)


def test_python_if_on_a_symbolic_array_says_what_to_use_instead():
    def relu_if(x):
        if x > 0:  # the if-line
            return x
        return -x

    with pytest.raises(hd.StagingError) as e:
        hd.compile(relu_if, convert=False)(hd.array(np.float32(1)))
    msg = str(e.value)
    assert "symbolic" in msg and "hd.cond" in msg and "xp.where" in msg
    assert f":{_line_of('# the if-line')} " in msg
    assert float(relu_if(hd.array(np.float32(-2)))) == 2.0  # eagerly it is plain Python


def test_converting_a_symbolic_array_to_numpy_is_a_staging_error():
    with pytest.raises(hd.StagingError, match="conversion to numpy"):
        hd.compile(lambda x: np.asarray(x))(hd.array(np.float32(1)))


def test_sub_computations_cannot_capture_enclosing_symbolic_arrays():
    def f(x):
        return ops.Map(lambda a: a * x)(x)

    with pytest.raises(hd.StagingError, match="pass the array as an operand"):
        hd.compile(f)(hd.array(np.ones(3, np.float32)))


def test_escaped_symbolic_arrays_are_rejected():
    leaked = []
    hd.compile(lambda x: leaked.append(x) or x)(hd.array(np.float32(1)))
    with pytest.raises(hd.StagingError, match="escaped"):
        ops.Negate()(leaked[0])


@frozen
class BadEmission(HloOp, opcode="test-bad-emission"):
    """A user op whose emission XLA cannot parse."""

    def result_type(self, x):
        return x


def test_hlo_that_xla_rejects_is_reported_with_our_message_and_the_lines():
    x = hd.array(np.ones(3, np.float32))
    with pytest.raises(hd.XlaCompileError) as e:
        BadEmission()(x)
    msg = str(e.value)
    assert msg.startswith("XLA rejected the HLO module hlodsl emitted:")
    assert "offending lines:" in msg and "test-bad-emission(" in msg
    assert len(msg.splitlines()) < 10  # our summary, not XLA's whole dump


@frozen
class WrongShapeRule(HloOp, opcode="negate-wrong-rule"):
    """Emits a valid opcode with a result type XLA's verifier refuses."""

    def result_type(self, x):
        return hd.ArrayType(x.dtype, (x.shape[0] + 1,))

    def emit(self, operands, operand_types, result_type, ctx):
        return f"negate({operands[0]})"


def test_verifier_errors_point_at_the_instruction():
    with pytest.raises(hd.XlaCompileError) as e:
        WrongShapeRule()(hd.array(np.ones(3, np.float32)))
    assert "negate(" in str(e.value).split("offending lines:")[1]


def test_bad_static_operands_fail_at_construction():
    with pytest.raises(ValueError, match="not a permutation"):
        ops.Transpose((0, 0))
    with pytest.raises(ValueError, match="as many contracting"):
        ops.Dot(lhs_contracting=(1,), rhs_contracting=())
    with pytest.raises(ValueError, match="direction"):
        ops.Compare("SOMETIMES")


def test_a_computation_of_the_wrong_arity_is_named_with_its_signature():
    x = hd.array(np.ones(2, np.float32))
    with pytest.raises(hd.StagingError, match=r"lambda\(a, b\) given to an op is called with 1"):
        ops.Map(lambda a, b: a + b)(x)
