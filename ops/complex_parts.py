"""Complex numbers: build one from two reals (Complex), take it apart (Real, Imag).

>>> import numpy as np, hlodsl as hd
>>> z = Complex()(hd.array(np.float32([1, 2])), hd.array(np.float32([3, 4])))
>>> z, Imag()(z)
(hlodsl.Array[complex64, (2,)]([1.+3.j, 2.+4.j]), hlodsl.Array[float32, (2,)]([3., 4.]))
"""

from __future__ import annotations

import numpy as np

from hlodsl.dtypes import ComplexFloating, Floating, complex64, complex128, float32, float64
from hlodsl.errors import require
from hlodsl.op import HloOp, frozen

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
