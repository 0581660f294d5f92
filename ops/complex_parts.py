"""Complex numbers: build one from two reals (Complex), take it apart (Real, Imag).

>>> import numpy as np, hlodsl as hd
>>> z = Complex()(hd.array(np.float32([1, 2])), hd.array(np.float32([3, 4])))
>>> z, Imag()(z)
(hlodsl.Array[complex64, (2,)]([1.+3.j, 2.+4.j]), hlodsl.Array[float32, (2,)]([3., 4.]))
"""

from __future__ import annotations

import numpy as np

from hlodsl.arrays.dtypes import ComplexFloating, Floating, complex64, complex128, float32, float64
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen

__all__ = ["Complex", "Real", "Imag"]

_COMPLEX = {float32: complex64, float64: complex128}
_REAL = {complex64: float32, complex128: float64}


@frozen
class Complex(HloOp, opcode="complex"):
    """``real + i * imag`` from two f32 (or f64) arrays of equal type."""

    def result_type(self, re, im):
        require(re == im, self, (re, im), "real and imaginary parts must have equal types")
        require(re.dtype in _COMPLEX, self, (re, im), "parts must be f32 or f64")
        return re.with_dtype(_COMPLEX[re.dtype])

    def reference(self, re, im):
        return np.asarray(re) + 1j * np.asarray(im)


class _Part(HloOp):
    def result_type(self, z):
        require(issubclass(z.dtype, (ComplexFloating, Floating)), self, (z,),
                "the operand must be complex or floating-point")
        return z.with_dtype(_REAL.get(z.dtype, z.dtype))


@frozen
class Real(_Part, opcode="real"):
    """The real part (a real operand is returned as is)."""

    def reference(self, z):
        return np.real(z)


@frozen
class Imag(_Part, opcode="imag"):
    """The imaginary part (zeros for a real operand)."""

    def reference(self, z):
        return np.imag(z)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402

# jax's conventions: these ops are R-linear and the cotangent is their plain
# transpose (no conjugation): real <- complex(ct, 0), imag <- complex(0, -ct),
# complex(re, im) <- (real(ct), -imag(ct)).


def _zeros(x):
    from ._ad import full_like
    return full_like(x, 0)


@vjp_rule.dispatch
def complex_vjp(op: Complex, ct, out, re, im):
    from ._ad import neg
    return Real()(ct), neg(Imag()(ct))


@vjp_rule.dispatch
def real_vjp(op: Real, ct, out, z):
    if not issubclass(z.dtype, ComplexFloating):
        return (ct,)
    return (Complex()(ct, _zeros(ct)),)


@vjp_rule.dispatch
def imag_vjp(op: Imag, ct, out, z):
    from ._ad import neg

    if not issubclass(z.dtype, ComplexFloating):
        return (None,)  # the imaginary part of a real array is constant 0
    return (Complex()(_zeros(ct), neg(ct)),)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule, register_rule  # noqa: E402

from ._batch import elementwise_rule  # noqa: E402

register_rule(batch_rule, Complex, elementwise_rule)
register_rule(batch_rule, _Part, elementwise_rule)
