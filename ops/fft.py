"""Fft: fast Fourier transforms over the trailing 1 to 3 dimensions (HLO fft).

>>> import numpy as np, hlodsl as hd
>>> Fft("RFFT", (4,))(hd.array(np.float32([1, 0, 0, 0])))
hlodsl.Array[complex64, (3,)]([1.+0.j, 1.+0.j, 1.+0.j])
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl.arrays.dtypes import ComplexFloating, complex64, complex128, float32, float64
from hlodsl.errors import require, user_location
from hlodsl.ir.op import HloOp, frozen, result_type_of, wrap_node
from hlodsl.arrays.types import ArrayType

from ._checks import dims, dims_text, one_of

__all__ = ["Fft"]

_REAL = {float32: complex64, float64: complex128}
_COMPLEX = {c: r for r, c in _REAL.items()}


@frozen
class Fft(HloOp, opcode="fft"):
    """Transform the last ``len(fft_length)`` (1 to 3) dims; ``fft_length`` are their sizes.

    - FFT, IFFT (forward, inverse scaled by 1/N): complex -> same complex type;
      the trailing dims must equal ``fft_length``.
    - RFFT: f32 -> c64 or f64 -> c128; trailing dims equal ``fft_length``, and
      the last result dim is ``fft_length[-1] // 2 + 1`` (unchanged when 0).
    - IRFFT: c64 -> f32 or c128 -> f64; trailing dims equal ``fft_length``
      except the last, which is ``fft_length[-1] // 2 + 1`` and becomes
      ``fft_length[-1]`` in the result. The imaginary parts that a real
      signal's spectrum would not have are ignored (as numpy's irfftn).

    XLA's shape inference does not compare ``fft_length`` with the operand for
    FFT/IFFT; the transform of other lengths is not defined, so it is required.
    """

    fft_type: str = attrs.field(converter=one_of("FFT", "IFFT", "RFFT", "IRFFT"))
    fft_length: tuple[int, ...] = attrs.field(converter=dims)

    def __attrs_post_init__(self):
        if self.fft_type not in ("FFT", "IFFT", "RFFT", "IRFFT"):
            raise ValueError(f"{self!r}: fft_type must be FFT, IFFT, RFFT or IRFFT")
        if not 1 <= len(self.fft_length) <= 3 or any(n < 0 for n in self.fft_length):
            raise ValueError(f"{self!r}: fft_length must hold 1 to 3 non-negative sizes")

    def result_type(self, x):
        k, n, kind = len(self.fft_length), self.fft_length, self.fft_type
        require(x.rank >= k, self, (x,), f"a rank-{k} FFT needs an operand of rank >= {k}")
        if kind == "RFFT":
            require(x.dtype in _REAL, self, (x,), "RFFT takes f32 or f64")
        else:
            require(issubclass(x.dtype, ComplexFloating), self, (x,), f"{kind} takes c64 or c128")
        expect = n if kind != "IRFFT" else n[:-1] + ((n[-1] // 2 + 1) if n[-1] else 0,)
        require(x.shape[x.rank - k:] == expect, self, (x,),
                f"the trailing dimensions must be {expect} for {kind} with fft_length {n}")
        batch = x.shape[:x.rank - k]
        if kind == "RFFT":
            return ArrayType(_REAL[x.dtype], batch + n[:-1] + ((n[-1] // 2 + 1) if n[-1] else 0,))
        if kind == "IRFFT":
            return ArrayType(_COMPLEX[x.dtype], batch + n)
        return x

    def stage(self, builder, args):
        n = self.fft_length
        if self.fft_type != "IRFFT" or n[-1] != 1 or 0 in n:
            return HloOp.stage(self, builder, args)
        # NOTE: an IRFFT whose last length is 1 is the real part of the IFFT of the same
        # lengths (a length-1 real transform keeps the real part of its one coefficient).
        # XLA:GPU (cuFFT) squeezed the length-1 axis and ran a C2R of the length before it
        # over that axis instead; a complex transform loses nothing by the squeeze. Recorded
        # as nodes, so transformations see one Fft.
        from .complex_parts import Real

        (x,) = args
        rtype = result_type_of(self, (x.type,))
        loc = user_location()
        inverse = builder.add(Fft("IFFT", n), (builder.node_of(x),), x.type, loc)
        return wrap_node(builder, builder.add(Real(), (inverse,), rtype, loc))

    def attributes(self, operand_types, result_type, ctx):
        return [f"fft_type={self.fft_type}", f"fft_length={dims_text(self.fft_length)}"]

    def reference(self, x):
        axes = tuple(range(np.ndim(x) - len(self.fft_length), np.ndim(x)))
        out = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn,
               "IRFFT": np.fft.irfftn}[self.fft_type](x, s=self.fft_length, axes=axes)
        return out.astype(_dtype_of(self.fft_type, x.dtype))


def _dtype_of(kind: str, dtype: np.dtype) -> np.dtype:
    if kind == "RFFT":
        return np.result_type(dtype, np.complex64)
    if kind == "IRFFT":
        return np.real(np.zeros((), dtype)).dtype
    return dtype


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# All four are linear; the cotangent is their transpose (jax's convention for
# complex values). The DFT matrix is symmetric, so FFT and IFFT transpose to
# themselves. RFFT is the FFT of the complex embedding, cut to n//2 + 1 entries:
# its transpose pads ct back to n, FFTs it and takes the real part. IRFFT's is
# the RFFT of ct, scaled by 1/N, doubled where RFFT dropped a mirrored
# component, and conjugated.

from hlodsl.ir.rules import jvp_rule, vjp_rule  # noqa: E402


@vjp_rule.dispatch
def fft_vjp(op: Fft, ct, out, x):
    from hlodsl.arrays.array import array

    from .broadcast import Broadcast
    from .complex_parts import Real
    from .pad import Pad
    from ._ad import conj_if_complex, mul

    n = op.fft_length
    if op.fft_type in ("FFT", "IFFT"):
        return (op(ct),)
    if op.fft_type == "RFFT":
        full = Pad((0,) * ct.ndim, (0,) * (ct.ndim - 1) + (n[-1] - ct.shape[-1],))(
            ct, array(np.zeros((), ct.dtype.np_dtype)))
        return (Real()(Fft("FFT", n)(full)),)
    spectrum = Fft("RFFT", n)(ct)
    m = spectrum.shape[-1]
    scale = np.full(m, 2.0 / max(np.prod(n), 1))
    scale[0] /= 2
    if n[-1] % 2 == 0 and m > 1:
        scale[-1] /= 2
    scale = Broadcast(spectrum.shape, (spectrum.ndim - 1,))(
        array(scale.astype(spectrum.dtype.np_dtype)))
    return (conj_if_complex(mul(spectrum, scale)),)


@jvp_rule.dispatch
def fft_jvp(op: Fft, tangents: tuple, out, *args):
    return None if tangents[0] is None else op(tangents[0])


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule  # noqa: E402


@batch_rule.dispatch
def fft_batched(op: Fft, args: tuple, dims: tuple):
    return op(*args), 0  # Fft transforms the trailing dimensions: a leading batch dimension is one more
