"""Convolution: XLA's general dilated, grouped convolution (HLO convolution).

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.float32([[[1, 2, 3, 4]]])); k = hd.array(np.float32([[[1, 1]]]))
>>> Convolution()(x, k)   # layouts default to (batch, feature, spatial...) / (out, in, spatial...)
hlodsl.Array[float32, (1, 1, 3)]([[[3., 5., 7.]]])
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from hlodsl.dtypes import ComplexFloating, Floating, Integer, Number, element_type
from hlodsl.errors import require
from hlodsl.op import HloOp, frozen
from hlodsl.types import ArrayType

from ._checks import check_permutation

__all__ = ["Convolution"]


def _spec(labels: str):
    """Converter: a layout as dims (major, minor, spatial...), or XLA's label string."""
    def convert(value):
        if value is None or not isinstance(value, str):
            return None if value is None else tuple(int(v) for v in value)
        order = labels + "".join(str(i) for i in range(len(value) - 2))
        if sorted(value) != sorted(order):
            raise ValueError(f"Convolution: dim labels {value!r} must use each of "
                             f"{order!r} once")
        return tuple(value.index(c) for c in order)
    return convert


def _optional(convert):
    """Converter: ``None`` (the field's default for any rank) or ``convert(value)``."""
    return lambda value: None if value is None else convert(value)


_ints = _optional(lambda v: tuple(int(i) for i in v))


def _labels(spec, major: str) -> str:
    out = [""] * len(spec)
    for k, d in enumerate(spec):
        out[d] = major[k] if k < 2 else str(k - 2)
    return "".join(out)


def _bound(size: int, dilation: int) -> int:
    return 0 if size == 0 else (size - 1) * dilation + 1


def _accumulates(src, pref) -> bool:
    """XLA's MaybeUpcast, kept to the combinations that mean something (as jax's)."""
    if src is pref:
        return True
    if issubclass(src, Integer):
        return issubclass(pref, Floating) or (
            issubclass(pref, Integer) and pref.np_dtype.itemsize >= src.np_dtype.itemsize)
    return any(issubclass(src, k) and issubclass(pref, k) for k in (Floating, ComplexFloating))


@frozen
class Convolution(HloOp, opcode="convolution"):
    """``lhs`` convolved with the kernel ``rhs``, as ``lax.conv_general_dilated``.

    Layouts: ``lhs_spec`` = (batch, feature, spatial...) dims of lhs,
    ``rhs_spec`` = (output feature, input feature, spatial...) dims of rhs,
    ``out_spec`` = (batch, feature, spatial...) dims of the result; each may be
    given as XLA's labels (``"b01f"``, ``"01io"``); ``None`` is the identity.
    Window fields have one entry per spatial dim (``None``: strides and
    dilations 1, padding 0; negative padding crops). With G =
    ``feature_group_count``: lhs features = G * rhs input features, G divides
    the output features. With B = ``batch_group_count``: B divides the lhs
    batch and the output features, and the result batch is lhs batch / B.
    Spatial result size: ``(padded - dilated_kernel) // stride + 1`` (0 if the
    kernel does not fit), padded = ``(n-1)*lhs_dilation + 1 + lo + hi``.
    """

    window_strides: tuple[int, ...] | None = attrs.field(converter=_ints, default=None)
    padding: tuple[tuple[int, int], ...] | None = attrs.field(
        converter=_optional(lambda v: tuple((int(lo), int(hi)) for lo, hi in v)), default=None)
    lhs_dilation: tuple[int, ...] | None = attrs.field(converter=_ints, default=None)
    rhs_dilation: tuple[int, ...] | None = attrs.field(converter=_ints, default=None)
    lhs_spec: tuple[int, ...] | None = attrs.field(converter=_spec("bf"), default=None)
    rhs_spec: tuple[int, ...] | None = attrs.field(converter=_spec("oi"), default=None)
    out_spec: tuple[int, ...] | None = attrs.field(converter=_spec("bf"), default=None)
    feature_group_count: int = attrs.field(converter=int, default=1)
    batch_group_count: int = attrs.field(converter=int, default=1)
    preferred_element_type: type | None = attrs.field(converter=_optional(element_type),
                                                      default=None)

    def __attrs_post_init__(self):
        for spec in (self.lhs_spec, self.rhs_spec, self.out_spec):
            if spec is not None:
                check_permutation(self, spec)
        counts = {len(s) - 2 for s in (self.lhs_spec, self.rhs_spec, self.out_spec) if s}
        counts |= {len(w) for w in (self.window_strides, self.padding, self.lhs_dilation,
                                    self.rhs_dilation) if w is not None}
        if len(counts) > 1 or min(counts, default=0) < 0:
            raise ValueError(f"{self!r}: layouts and window fields disagree on the "
                             f"number of spatial dimensions ({sorted(counts)})")
        for name in ("window_strides", "lhs_dilation", "rhs_dilation"):
            if any(v < 1 for v in getattr(self, name) or ()):
                raise ValueError(f"{self!r}: {name} must be positive")
        if self.feature_group_count < 1 or self.batch_group_count < 1:
            raise ValueError(f"{self!r}: group counts must be positive")
        if self.feature_group_count > 1 and self.batch_group_count > 1:
            raise ValueError(f"{self!r}: feature_group_count and batch_group_count "
                             "cannot both exceed 1")
        if self.preferred_element_type is not None and \
                not issubclass(self.preferred_element_type, Number):
            raise ValueError(f"{self!r}: preferred_element_type must be numeric")

    def _resolved(self, rank: int):
        """Layouts and window fields with their defaults for operands of ``rank``."""
        n, ident = rank - 2, tuple(range(rank))
        return (self.lhs_spec or ident, self.rhs_spec or ident, self.out_spec or ident,
                self.window_strides or (1,) * n, self.padding or ((0, 0),) * n,
                self.lhs_dilation or (1,) * n, self.rhs_dilation or (1,) * n)

    def result_type(self, lhs, rhs):
        ops, fgc, bgc = (lhs, rhs), self.feature_group_count, self.batch_group_count
        require(lhs.dtype is rhs.dtype and issubclass(lhs.dtype, Number), self, ops,
                "lhs and rhs must have the same numeric element type")
        require(lhs.rank == rhs.rank >= 2, self, ops, "lhs and rhs must have equal rank >= 2")
        ls, rs, os, strides, pads, ldil, rdil = self._resolved(lhs.rank)
        require(len(ls) == lhs.rank and all(len(w) == lhs.rank - 2 for w in (
            strides, pads, ldil, rdil)), self, ops, "the layouts and window fields are for "
            f"{len(ls) - 2} spatial dimensions, the operands have {lhs.rank - 2}")
        batch, feat, in_sp = lhs.shape[ls[0]], lhs.shape[ls[1]], lhs.dims(ls[2:])
        out_f, in_f, k_sp = rhs.shape[rs[0]], rhs.shape[rs[1]], rhs.dims(rs[2:])
        require(feat % fgc == 0 and feat // fgc == in_f, self, ops,
                f"lhs features ({feat}) must equal feature_group_count ({fgc}) * "
                f"rhs input features ({in_f})")
        require(out_f % fgc == 0, self, ops, f"rhs output features ({out_f}) must be "
                f"divisible by feature_group_count ({fgc})")
        require(out_f % bgc == 0 and batch % bgc == 0, self, ops,
                f"rhs output features ({out_f}) and lhs batch ({batch}) must be "
                f"divisible by batch_group_count ({bgc})")
        require(all(k > 0 for k in k_sp), self, ops, "kernel spatial sizes must be positive")
        pref = self.preferred_element_type
        require(pref is None or _accumulates(lhs.dtype, pref), self, ops,
                f"preferred_element_type {pref} cannot accumulate {lhs.dtype}: floats and "
                "complex keep their kind, integers go to floats or not narrower integers")
        shape = [0] * lhs.rank
        shape[os[0]], shape[os[1]] = batch // bgc, out_f
        for i, (n, k) in enumerate(zip(in_sp, k_sp)):
            padded = _bound(n, ldil[i]) + pads[i][0] + pads[i][1]
            window = _bound(k, rdil[i])
            shape[os[2 + i]] = 0 if window > padded else (padded - window) // strides[i] + 1
        return ArrayType(pref or lhs.dtype, shape)

    def attributes(self, operand_types, result_type, ctx):
        ls, rs, os, strides, pads, ldil, rdil = self._resolved(operand_types[0].rank)
        rhs = operand_types[1]
        parts = ["size=" + "x".join(str(rhs.shape[d]) for d in rs[2:])]
        if any(s != 1 for s in strides):
            parts.append("stride=" + "x".join(map(str, strides)))
        if any(p != (0, 0) for p in pads):
            parts.append("pad=" + "x".join(f"{lo}_{hi}" for lo, hi in pads))
        for name, dil in (("lhs_dilate", ldil), ("rhs_dilate", rdil)):
            if any(d != 1 for d in dil):
                parts.append(f"{name}=" + "x".join(map(str, dil)))
        out = [f"window={{{' '.join(parts)}}}"] if strides else []
        out.append(f"dim_labels={_labels(ls, 'bf')}_{_labels(rs, 'oi')}->{_labels(os, 'bf')}")
        if self.feature_group_count > 1:
            out.append(f"feature_group_count={self.feature_group_count}")
        if self.batch_group_count > 1:
            out.append(f"batch_group_count={self.batch_group_count}")
        return out

    def reference(self, lhs, rhs):
        ls, rs, os, strides, pads, ldil, rdil = self._resolved(np.ndim(lhs))
        rtype = self.result_type(ArrayType(lhs.dtype, lhs.shape), ArrayType(rhs.dtype, rhs.shape))
        # Exact accumulation: int64 for integers (wrapping like XLA's on the cast back).
        wide = np.int64 if rtype.dtype.np_dtype.kind in "iu" else np.float64
        acc, n, all2 = np.result_type(rtype.dtype.np_dtype, wide), len(ls) - 2, (slice(None),) * 2
        x, w = np.transpose(lhs, ls).astype(acc), np.transpose(rhs, rs).astype(acc)

        def dilate(a, dil):  # zeros between elements
            out = np.zeros(a.shape[:2] + tuple(map(_bound, a.shape[2:], dil)), acc)
            out[all2 + tuple(slice(None, None, d) for d in dil)] = a
            return out
        x, w = dilate(x, ldil), dilate(w, rdil)
        x = np.pad(x, [(0, 0)] * 2 + [(max(lo, 0), max(hi, 0)) for lo, hi in pads])
        x = x[all2 + tuple(slice(max(-lo, 0), max(s + min(hi, 0), 0))
                           for (lo, hi), s in zip(pads, x.shape[2:]))]
        spatial = tuple(rtype.shape[d] for d in os[2:])
        win = sliding_window_view(x, w.shape[2:], axis=tuple(range(2, n + 2))) if all(
            spatial) else np.zeros(x.shape[:2] + spatial + w.shape[2:], acc)
        win = win[all2 + tuple(slice(0, s * st, st) for s, st in zip(spatial, strides))]
        B, G = self.batch_group_count, self.feature_group_count
        win = win.reshape((B, x.shape[0] // B, G, x.shape[1] // G) + win.shape[2:])
        w = w.reshape((B, G, w.shape[0] // (B * G)) + w.shape[1:])
        sp, ks = list(range(10, 10 + n)), list(range(20, 20 + n))
        out = np.einsum(win, [0, 1, 2, 3, *sp, *ks], w, [0, 2, 4, 3, *ks], [1, 0, 2, 4, *sp])
        out = out.reshape((out.shape[0], rtype.shape[os[1]]) + spatial)
        return np.transpose(out, np.argsort(os)).astype(rtype.dtype.np_dtype)
