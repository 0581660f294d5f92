"""HLO text literals: how a numpy array is spelled in a ``constant(...)``.

>>> import ml_dtypes, numpy as np
>>> literal_text(np.array([[1, 2], [3, 4]], np.int32))
'{ {1, 2}, {3, 4} }'
>>> literal_text(np.array([np.inf, 0.5], np.float32))
'{inf, 0.5}'
>>> literal_text(np.array([-2, 1], ml_dtypes.int2))
'{-2, 1}'
"""

from __future__ import annotations

import math

import numpy as np

from hlodsl.arrays.dtypes import _is_ml_integer

__all__ = ["literal_text"]


def _real(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    # repr of the float64 value is exact for every narrower float, so the
    # parser rounds it back to the same bits.
    return repr(v)


def _scalar(v, kind: str) -> str:
    if kind == "b":
        return "true" if v else "false"
    if kind in "iu":
        return str(int(v))
    if kind == "c":
        return f"({_real(float(v.real))}, {_real(float(v.imag))})"
    return _real(float(v))


def literal_text(value: np.ndarray) -> str:
    """The HLO text of ``value``'s elements, nested in braces by dimension."""
    value = np.asarray(value)
    kind = value.dtype.kind
    if kind == "V":  # ml_dtypes (bfloat16, int4, float8_*, ...) report kind 'V'
        kind = "i" if _is_ml_integer(value.dtype) else "f"
    if value.ndim == 0:
        return _scalar(value[()], kind)
    flat = [_scalar(v, kind) for v in value.reshape(-1)]

    def nest(offset: int, dims: tuple[int, ...]) -> str:
        if len(dims) == 1:
            return "{" + ", ".join(flat[offset:offset + dims[0]]) + "}"
        step = math.prod(dims[1:])
        inner = [nest(offset + i * step, dims[1:]) for i in range(dims[0])]
        return "{ " + ", ".join(inner) + " }"

    return nest(0, value.shape)
