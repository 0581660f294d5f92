"""What hlodsl hands PJRT is StableHLO every backend takes (jaxlib_compat.legalize).

XLA's HLO -> StableHLO conversion leaves an ``mhlo.copy`` for HLO ``copy`` (XLA:GPU:
"failed to legalize operation 'mhlo.copy'"; a portable artifact: "dialect 'mhlo' is
unknown") and a ``stablehlo.dot`` with a discardable ``algorithm`` attribute for a
dot without batch dimensions (XLA:CPU drops the algorithm, XLA:GPU refuses the op).
The checks read the bytecode as MLIR text; the GPU itself is not needed to see them.
"""

import re

import numpy as np
import pytest

import hlodsl as hd
from hlodsl import ops
from hlodsl.runtime import jaxlib_compat as compat


def _stablehlo(f, *args) -> str:
    return compat.module_text(compat.hlo_to_stablehlo(str(hd.code_hlo(f, *args))))


def _mhlo_ops(text: str) -> list[str]:
    """mhlo operations (module attributes named mhlo.* are not operations)."""
    return re.findall(r"(?:=|^)\s*\"?(mhlo\.[a-z_]+)\b(?! =)", text, re.M)


X = hd.array(np.float32([1.5, -2.0]))


def test_a_copy_reaches_the_compiler_as_its_operand():
    def f(x):  # a copy at the root, inside a loop body, and of a scalar pad
        y = hd.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, ops.Copy()(c[1])),
                          (hd.array(np.int32(0)), x))[1]
        return ops.Copy()(y), ops.Pad((), (), ())(hd.array(np.float32(2)), hd.array(np.float32(0)))

    assert str(hd.code_hlo(f, X)).count(" copy(") >= 2  # the op is what hlodsl prints
    text = _stablehlo(f, X)
    assert _mhlo_ops(text) == [] and "copy" not in text.replace("cross_program", "")
    out = hd.compile(f)(X)
    np.testing.assert_array_equal(np.asarray(out[0]), np.asarray(X))
    assert float(out[1]) == 2.0


def test_an_exported_copy_round_trips():
    exported = hd.export(lambda x: ops.Copy()(x), hd.ArrayType(hd.float32, (2,)))
    back = hd.deserialize(exported.serialize())
    np.testing.assert_array_equal(np.asarray(back(X)), np.asarray(X))


A = hd.array(np.float32([[1, 2, 3], [4, 5, 6]]))
B = hd.array(np.float32([[1, 0], [0, 1], [1, 1]]))
ALGORITHM = "dot_bf16_bf16_f32"


def _algorithm_dot(a, b):
    return ops.Dot((1,), (0,), algorithm=ALGORITHM)(a, b)


def test_a_rank_2_algorithm_dot_reaches_the_compiler_as_dot_general_with_its_algorithm():
    text = _stablehlo(_algorithm_dot, A, B)
    assert "stablehlo.dot " not in text and "stablehlo.dot_general" in text
    assert re.search(r"contracting_dims = \[1\] x \[0\].*algorithm = <lhs_precision_type = bf16",
                     text)
    vector = _stablehlo(lambda a, v: ops.Dot((1,), (0,), algorithm=ALGORITHM)(a, v),
                        A, hd.array(np.float32([1, 2, 3])))
    assert "stablehlo.dot_general" in vector and "algorithm = <" in vector
    plain = _stablehlo(lambda a, b: ops.Dot((1,), (0,))(a, b), A, B)  # left as XLA wrote it
    assert "stablehlo.dot " in plain


def test_xla_cpu_compiles_every_dot_without_its_algorithm():
    # XLA:CPU computes at the operands' precision whatever is asked, and its elemental
    # emitter (small dots) refuses any algorithm, as jax's own jit does on a 1x2 @ 2x1 dot:
    # for XLA:CPU the legalized module drops it; the portable one (export, a GPU) keeps it.
    if hd.runtime.platform() != "cpu":
        pytest.skip(f"on {hd.runtime.platform()}: the algorithm is compiled as given")
    tiny_a, tiny_b = hd.array(np.float32([[1, 2]])), hd.array(np.float32([[3], [4]]))
    assert float(np.asarray(hd.compile(_algorithm_dot)(tiny_a, tiny_b))[0, 0]) == 11.0
    np.testing.assert_array_equal(np.asarray(hd.compile(_algorithm_dot)(A, B)),
                                  np.asarray(A) @ np.asarray(B))
    text = str(hd.code_hlo(_algorithm_dot, A, B))
    assert f"algorithm={ALGORITHM}" in text  # the program hlodsl staged says what was asked
    assert "algorithm = " not in compat.module_text(compat.hlo_to_stablehlo(text, "cpu"))
    assert "algorithm = " in compat.module_text(compat.hlo_to_stablehlo(text))


def test_a_module_with_neither_is_handed_on_as_xla_converted_it():
    data = b"ML\xefR" + b"\x00" * 16  # not parsed at all: no copy, no algorithm in it
    assert compat.legalize(data) is data


def test_a_copy_that_carries_a_sharding_stays():
    # A sharded copy is a hint to XLA's partitioner (no such copy comes from hlodsl's ops).
    text = ("HloModule m\n\nENTRY m {\n  x = f32[8] parameter(0)\n"
            "  ROOT c = f32[8] copy(x), sharding={devices=[2]0,1}\n}\n")
    assert "mhlo.copy" in compat.module_text(compat.hlo_to_stablehlo(text))
