"""Cholesky: the Cholesky factor of Hermitian positive-definite matrices (HLO cholesky).

>>> import numpy as np, hlodsl as hd
>>> Cholesky()(hd.array(np.float32([[4, 2], [2, 5]])))
hlodsl.Array[float32, (2, 2)](
  [[2., 0.],
   [1., 2.]])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import ComplexFloating, Floating
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen

from ._checks import flag

__all__ = ["Cholesky"]


@frozen
class Cholesky(HloOp, opcode="cholesky"):
    """Factor ``a = l @ l^H`` (``lower``) or ``a = u^H @ u``, batched over leading dims.

    ``a``: ``[..., n, n]``, floating or complex; the result has ``a``'s type.
    Only the ``lower`` (else upper) triangle of ``a`` is read, and the factor is
    written to that triangle; XLA leaves the values of the other triangle
    implementation-defined, so use only the factor's triangle.

    A matrix that is not positive definite raises no error: XLA's result is
    implementation-defined. On XLA CPU (as measured here), every element of
    the factor of such a matrix is NaN, whichever pivot fails, while the other
    matrices of a batch are factored normally; check ``isnan`` where the
    input may be indefinite. (The unread triangle comes back zero on CPU.)
    """

    lower: bool = attrs.field(converter=flag, default=True)

    def result_type(self, a):
        require(issubclass(a.dtype, (Floating, ComplexFloating)), self, (a,),
                "the element type must be floating-point or complex")
        require(a.rank >= 2, self, (a,), "a must have rank >= 2")
        require(a.shape[-1] == a.shape[-2], self, (a,), "the two minor dimensions must be equal")
        return a

    def attributes(self, operand_types, result_type, ctx):
        return [f"lower={'true' if self.lower else 'false'}"]

    def reference(self, a):
        """The factor's triangle (the other triangle zero), from ``a``'s read triangle."""
        t = np.tril(a) if self.lower else np.triu(a)
        full = t + np.conj(np.swapaxes(t, -1, -2)) - \
            np.eye(a.shape[-1]) * np.real(np.diagonal(a, axis1=-2, axis2=-1))[..., None, :]
        low = np.linalg.cholesky(full)
        return (low if self.lower else np.conj(np.swapaxes(low, -1, -2))).astype(a.dtype)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# For the factor L of S (S Hermitian, built from the triangle that is read):
# with Phi(X) the lower triangle of X with its diagonal halved, the adjoint of
# dS -> dL is Lbar -> G = L^-H Phi(L^H Lbar) L^-1 (Murray 2016, "Differentiation
# of the Cholesky decomposition"), and the read triangle's cotangent is
# Phi(G + G^H). Adjoint formulas give jax's complex convention by conjugating ct
# on the way in and the result on the way out. The upper form is the lower form
# of a^H (the factor is L^H).

from hlodsl.ir.rules import vjp_rule  # noqa: E402


def _phi(x):
    from hlodsl.arrays.array import array

    from .broadcast import Broadcast
    from ._ad import mul

    m = x.shape[-1]
    scale = np.tri(m, dtype=x.dtype.np_dtype) - 0.5 * np.eye(m, dtype=x.dtype.np_dtype)
    return mul(x, Broadcast(x.shape, (x.ndim - 2, x.ndim - 1))(array(scale)))


@vjp_rule.dispatch
def cholesky_vjp(op: Cholesky, ct, out, a):
    from ._ad import add
    from .triangular_solve import TriangularSolve, conj, matmul, matrix_transpose, triangle

    def adjoint(x):
        return conj(matrix_transpose(x))

    lbar = conj(ct)
    factor = triangle(out, op.lower)
    if op.lower:
        low, lbar = factor, triangle(lbar, True)
    else:
        low, lbar = adjoint(factor), adjoint(triangle(lbar, False))
    p = _phi(matmul(adjoint(low), lbar))
    y = TriangularSolve(left_side=False, lower=True)(low, p)
    g = TriangularSolve(left_side=True, lower=True, transpose_a="ADJOINT")(low, y)
    abar = _phi(add(g, adjoint(g)))
    return (conj(abar if op.lower else adjoint(abar)),)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402


@batch_rule.dispatch
def cholesky_batched(op: Cholesky, args: tuple, dims: tuple):
    return op(*args), 0  # Cholesky factors the trailing two dimensions: a leading batch dimension is one more
