"""TriangularSolve: solve triangular systems, batched (HLO triangular-solve).

>>> import numpy as np, hlodsl as hd
>>> a = hd.array(np.float32([[2, 0], [1, 1]])); b = hd.array(np.float32([[2], [3]]))
>>> TriangularSolve(left_side=True, lower=True)(a, b)
hlodsl.Array[float32, (2, 1)](
  [[1.],
   [2.]])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import ComplexFloating, Floating
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen

from ._checks import flag, one_of

__all__ = ["TriangularSolve"]

_TRANSPOSES = ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")


@frozen
class TriangularSolve(HloOp, opcode="triangular-solve"):
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for ``x``.

    ``a``: ``[..., m, m]``; ``b``: ``[..., m, n]`` (left side) or ``[..., n, m]``,
    with the same leading batch dims and element type (float or complex); the
    result has ``b``'s type. Only the ``lower`` (else upper) triangle of ``a``
    is read; with ``unit_diagonal`` its diagonal is taken to be ones and not
    read. ``op`` is ``transpose_a``: NO_TRANSPOSE, TRANSPOSE or ADJOINT
    (conjugate transpose). A zero on a read diagonal gives infs/NaNs, no error.
    """

    left_side: bool = attrs.field(converter=flag)
    lower: bool = attrs.field(converter=flag)
    unit_diagonal: bool = attrs.field(converter=flag, default=False)
    transpose_a: str = attrs.field(converter=one_of(*_TRANSPOSES), default="NO_TRANSPOSE")

    def __attrs_post_init__(self):
        if self.transpose_a not in _TRANSPOSES:
            raise ValueError(f"{self!r}: transpose_a must be one of {_TRANSPOSES}")

    def result_type(self, a, b):
        ops = (a, b)
        require(a.dtype is b.dtype and issubclass(a.dtype, (Floating, ComplexFloating)), self,
                ops, "a and b must have the same floating-point or complex element type")
        require(a.rank >= 2 and a.rank == b.rank, self, ops, "a and b must have equal rank >= 2")
        require(a.shape[-1] == a.shape[-2], self, ops,
                "the two minor dimensions of a must be equal")
        shared = -2 if self.left_side else -1
        require(a.shape[-1] == b.shape[shared], self, ops,
                f"b's dimension {b.rank + shared} must equal a's size {a.shape[-1]} "
                f"({'left' if self.left_side else 'right'} side)")
        require(a.shape[:-2] == b.shape[:-2], self, ops, "batch dimensions of a and b differ")
        return b

    def attributes(self, operand_types, result_type, ctx):
        flag = {True: "true", False: "false"}
        return [f"left_side={flag[bool(self.left_side)]}", f"lower={flag[bool(self.lower)]}",
                f"unit_diagonal={flag[bool(self.unit_diagonal)]}",
                f"transpose_a={self.transpose_a}"]

    def reference(self, a, b):
        t = np.tril(a) if self.lower else np.triu(a)
        if self.unit_diagonal:
            m = a.shape[-1]
            t = t * (1 - np.eye(m, dtype=a.dtype)) + np.eye(m, dtype=a.dtype)
        if self.transpose_a != "NO_TRANSPOSE":
            t = np.swapaxes(t, -1, -2)
            t = np.conj(t) if self.transpose_a == "ADJOINT" else t
        if self.left_side:
            return np.linalg.solve(t, b).astype(b.dtype)
        # x @ t = b  <=>  t^T @ x^T = b^T
        x = np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2))
        return np.swapaxes(x, -1, -2).astype(b.dtype)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# With T = op(a) as read (triangle, unit diagonal, transpose) and x the result:
# left side, T x = b gives ct_b = T^-T ct and ct_T = -ct_b x^T; right side,
# x T = b gives ct_b = ct T^-T and ct_T = -x^T ct_b (jax's convention for complex
# values: transposes, not adjoints). ct_a is ct_T brought back through op and
# kept to the triangle that is read.

from hlodsl.ir.rules import vjp_rule  # noqa: E402


def matrix_transpose(x):
    """``x`` with its two minor dimensions swapped."""
    from .reshape import Transpose

    r = x.ndim
    return Transpose(tuple(range(r - 2)) + (r - 1, r - 2))(x)


def conj(x):
    from ._ad import conj_if_complex
    return conj_if_complex(x)


def matmul(a, b):
    """Batched matrix product over the leading dimensions."""
    from .dot import Dot

    batch = tuple(range(a.ndim - 2))
    return Dot(lhs_contracting=(a.ndim - 1,), rhs_contracting=(b.ndim - 2,),
               lhs_batch=batch, rhs_batch=batch)(a, b)


def triangle(x, lower: bool, strict: bool = False):
    """The lower (else upper) triangle of each matrix of ``x``, the rest zero."""
    from hlodsl.arrays.array import array

    from .broadcast import Broadcast
    from .compare import Select
    from ._ad import full_like

    m = x.shape[-1]
    keep = np.tri(m, k=-1 if strict else 0, dtype=bool)
    if not lower:
        keep = keep.T
    mask = Broadcast(x.shape, (x.ndim - 2, x.ndim - 1))(array(keep))
    return Select()(mask, x, full_like(x, 0))


@vjp_rule.dispatch
def triangular_solve_vjp(op: TriangularSolve, ct, out, a, b):
    from ._ad import neg

    # ct_b solves with T^T: transposing op(a) maps NO <-> TRANSPOSE, and ADJOINT
    # (T^T = conj(a)) to a conjugated NO_TRANSPOSE solve.
    if op.transpose_a == "ADJOINT":
        solve = attrs.evolve(op, transpose_a="NO_TRANSPOSE")
        ct_b = conj(solve(a, conj(ct)))
    else:
        flipped = "TRANSPOSE" if op.transpose_a == "NO_TRANSPOSE" else "NO_TRANSPOSE"
        ct_b = attrs.evolve(op, transpose_a=flipped)(a, ct)
    x_t = matrix_transpose(out)
    ct_t = neg(matmul(ct_b, x_t) if op.left_side else matmul(x_t, ct_b))
    if op.transpose_a != "NO_TRANSPOSE":
        ct_t = matrix_transpose(ct_t)
        ct_t = conj(ct_t) if op.transpose_a == "ADJOINT" else ct_t
    return triangle(ct_t, op.lower, strict=op.unit_diagonal), ct_b


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import all_batched  # noqa: E402


@batch_rule.dispatch
def triangular_solve_batched(op: TriangularSolve, args: tuple, dims: tuple):
    return op(*all_batched(args, dims)), 0  # leading dimensions are batch dimensions
