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

from hlodsl.arrays.dtypes import ComplexFloating, Floating, Integer, Number, element_type
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType

from ._checks import (check_permutation, integer, num_windows, operand_precision,
                      precision_attributes)

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
    Spatial result size: ``(padded - dilated_kernel) // stride + 1``, padded =
    ``(n-1)*lhs_dilation + 1 + lo + hi``. A kernel larger than the padded input
    gives size 0, as the StableHLO spec defines it (``is_empty_window``, C25)
    and jax.lax and XLA compute it; padding that crops more than the input
    holds (padded < 0) is a ``ShapeError``, as in ``lax.conv_general_dilated``.
    """

    window_strides: tuple[int, ...] | None = attrs.field(converter=_ints, default=None)
    padding: tuple[tuple[int, int], ...] | None = attrs.field(
        converter=_optional(lambda v: tuple((int(lo), int(hi)) for lo, hi in v)), default=None)
    lhs_dilation: tuple[int, ...] | None = attrs.field(converter=_ints, default=None)
    rhs_dilation: tuple[int, ...] | None = attrs.field(converter=_ints, default=None)
    lhs_spec: tuple[int, ...] | None = attrs.field(converter=_spec("bf"), default=None)
    rhs_spec: tuple[int, ...] | None = attrs.field(converter=_spec("oi"), default=None)
    out_spec: tuple[int, ...] | None = attrs.field(converter=_spec("bf"), default=None)
    feature_group_count: int = attrs.field(converter=integer, default=1)
    batch_group_count: int = attrs.field(converter=integer, default=1)
    preferred_element_type: type | None = attrs.field(converter=_optional(element_type),
                                                      default=None)
    precision: tuple[str, str] | None = attrs.field(converter=operand_precision, default=None)

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
            shape[os[2 + i]] = num_windows(self, ops, f"spatial dimension {i} (lhs dimension "
                                           f"{ls[2 + i]})", n, pads[i], k, strides[i],
                                           ldil[i], rdil[i])
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
        return out + precision_attributes(self.precision)

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


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# Both cotangents are convolutions again (as jax's conv_general_dilated transpose
# rules): ct_lhs convolves ct with the spatially reversed kernel, its in/out
# features swapped, strides and lhs dilation trading places; ct_rhs convolves
# lhs with ct, batch and feature dims swapped, strides and rhs dilation trading
# places. Feature groups of one are batch groups of the other.

from hlodsl.ir.rules import jvp_rule, vjp_rule  # noqa: E402
from hlodsl.arrays.dtypes import Inexact  # noqa: E402


def _split_axis(x, axis: int, major: int):
    """Reshape ``axis`` into (major, size // major), both kept in place."""
    from .reshape import Reshape

    shape = list(x.shape)
    shape[axis:axis + 1] = [major, shape[axis] // major]
    return Reshape(tuple(shape))(x)


def _merge_axis(x, src: int, dst: int):
    """Fold axis ``src`` into ``dst`` (numbered without src) as its major part."""
    from .reshape import Reshape, Transpose

    perm = [i for i in range(x.ndim) if i != src]
    perm.insert(dst, src)
    if perm != list(range(x.ndim)):
        x = Transpose(tuple(perm))(x)
    out = list(x.shape)
    out[dst:dst + 2] = [out[dst] * out[dst + 1]]
    return Reshape(tuple(out))(x)


def _swap(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _lhs_padding(in_sp, k_sp, strides, out_sp, pads, ldil, rdil):
    pads_out = []
    for n, k, s, o, (lo, _), ld, rd in zip(in_sp, k_sp, strides, out_sp, pads, ldil, rdil):
        before = _bound(k, rd) - lo - 1
        after = _bound(n, ld) + _bound(k, rd) - 1 - _bound(o, s) - before
        pads_out.append((before, after))
    return tuple(pads_out)


def _rhs_padding(in_sp, k_sp, strides, out_sp, pads, ldil, rdil):
    pads_out = []
    for n, k, s, o, (lo, _), ld, rd in zip(in_sp, k_sp, strides, out_sp, pads, ldil, rdil):
        hi = (_bound(o, s) - _bound(n, ld)) + (_bound(k, rd) - lo - 1)
        pads_out.append((lo, hi))
    return tuple(pads_out)


def _conv_ct_lhs(op: Convolution, ct, lhs, rhs):
    from .reverse import Reverse

    ls, rs, os, strides, pads, ldil, rdil = op._resolved(lhs.ndim)
    fgc, bgc = op.feature_group_count, op.batch_group_count
    if fgc > 1 or bgc > 1:
        # Move the group factor from the kernel's output features to its input features.
        groups = max(fgc, bgc)
        rhs = _merge_axis(_split_axis(rhs, rs[0], groups), rs[0], rs[1])
    padding = _lhs_padding(lhs.type.dims(ls[2:]), rhs.type.dims(rs[2:]), strides,
                           ct.type.dims(os[2:]), pads, ldil, rdil)
    out = Convolution(window_strides=ldil, padding=padding, lhs_dilation=strides,
                      rhs_dilation=rdil, lhs_spec=os, rhs_spec=_swap(rs), out_spec=ls,
                      feature_group_count=max(fgc, bgc),
                      precision=op.precision)(ct, Reverse(rs[2:])(rhs))
    if bgc > 1:
        out = _merge_axis(_split_axis(out, ls[1], bgc), ls[1], ls[0])
    return out


def _conv_ct_rhs(op: Convolution, ct, lhs, rhs):
    ls, rs, os, strides, pads, ldil, rdil = op._resolved(lhs.ndim)
    fgc, bgc = op.feature_group_count, op.batch_group_count
    padding = _rhs_padding(lhs.type.dims(ls[2:]), rhs.type.dims(rs[2:]), strides,
                           ct.type.dims(os[2:]), pads, ldil, rdil)
    return Convolution(window_strides=rdil, padding=padding, lhs_dilation=ldil,
                       rhs_dilation=strides, lhs_spec=_swap(ls), rhs_spec=_swap(os),
                       out_spec=_swap(rs), feature_group_count=bgc,
                       batch_group_count=fgc, precision=op.precision)(lhs, ct)


@vjp_rule.dispatch
def convolution_vjp(op: Convolution, ct, out, lhs, rhs):
    from .convert import Convert
    from ._ad import zeros_like_array

    if not issubclass(lhs.dtype, Inexact):
        return None, None
    if ct.size == 0:
        return zeros_like_array(lhs), zeros_like_array(rhs)
    if ct.dtype is not lhs.dtype:  # preferred_element_type: work in ct's type
        lhs_w, rhs_w = Convert(ct.dtype)(lhs), Convert(ct.dtype)(rhs)
    else:
        lhs_w, rhs_w = lhs, rhs
    ct_lhs, ct_rhs = _conv_ct_lhs(op, ct, lhs_w, rhs_w), _conv_ct_rhs(op, ct, lhs_w, rhs_w)
    if ct.dtype is not lhs.dtype:
        ct_lhs, ct_rhs = Convert(lhs.dtype)(ct_lhs), Convert(rhs.dtype)(ct_rhs)
    return ct_lhs, ct_rhs


@jvp_rule.dispatch
def convolution_jvp(op: Convolution, tangents: tuple, out, *args):
    # Bilinear: d(lhs * rhs) = dlhs * rhs + lhs * drhs.
    from ._ad import add

    (t_lhs, t_rhs), (lhs, rhs) = tangents, args
    parts = [op(t_lhs, rhs)] if t_lhs is not None else []
    if t_rhs is not None:
        parts.append(op(lhs, t_rhs))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else add(*parts)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------
# The examples are folded into a dimension the convolution already has: into the
# batch of lhs when only lhs is batched, into the output features of the kernel
# when only the kernel is, and into the feature groups when both are (each example
# its own group). Dimension numbers below are per example, as the op's specs are.

from hlodsl.ir.rules import batch_rule  # noqa: E402


def _merge_into(x, src: int, dst: int):
    """``x`` with dimension ``src`` folded into dimension ``dst`` (numbered without
    ``src``), as its major part."""
    from .reshape import Reshape, Transpose

    perm = [i for i in range(x.ndim) if i != src]
    perm.insert(dst, src)
    moved = Transpose(tuple(perm))(x) if perm != list(range(x.ndim)) else x
    shape = list(moved.shape)
    shape[dst:dst + 2] = [shape[dst] * shape[dst + 1]]
    return Reshape(tuple(shape))(moved)


def _split_out(x, src: int, major: int):
    """``x`` with dimension ``src`` split into ``(major, rest)``."""
    from .reshape import Reshape

    shape = list(x.shape)
    shape[src:src + 1] = [major, shape[src] // major]
    return Reshape(tuple(shape))(x)


@batch_rule.dispatch
def convolution_batched(op: Convolution, args: tuple, dims: tuple):
    lhs, rhs = args
    rank = (lhs.ndim - 1) if dims[0] is not None else lhs.ndim
    ls, rs, os = op._resolved(rank)[:3]
    fgc, bgc = op.feature_group_count, op.batch_group_count
    size = (lhs if dims[0] is not None else rhs).shape[0]
    same = {f.name: getattr(op, f.name) for f in attrs.fields(Convolution)}
    if dims[0] is not None and dims[1] is not None:
        if bgc > 1:
            new_lhs, same["batch_group_count"] = _merge_into(lhs, 0, ls[0]), bgc * size
        else:
            new_lhs, same["feature_group_count"] = _merge_into(lhs, 0, ls[1]), fgc * size
        out = Convolution(**same)(new_lhs, _merge_into(rhs, 0, rs[0]))
        return _split_out(out, os[1], size), os[1]
    if dims[0] is not None:
        if bgc == 1:
            out = Convolution(**same)(_merge_into(lhs, 0, ls[0]), rhs)
            return _split_out(out, os[0], size), os[0]
        # Batch groups split lhs's batch: the examples go inside each group.
        grouped = _split_out(lhs, ls[0] + 1, bgc)              # (B, ..., G, N/G, ...)
        grouped = _merge_into(grouped, 0, ls[0] + 1)           # (..., G, B*N/G, ...)
        out = Convolution(**same)(_merge_into(grouped, ls[0], ls[0]), rhs)
        return _split_out(out, os[0], size), os[0]
    if fgc == 1 and bgc == 1:
        out = Convolution(**same)(lhs, _merge_into(rhs, 0, rs[0]))
        return _split_out(out, os[1], size), os[1]
    # Groups must stay outermost in the kernel's output features: split them out,
    # fold the examples in under them, and undo the same on the result.
    groups = fgc if fgc > 1 else bgc
    kernel = _split_out(rhs, rs[0] + 1, groups)                # (B, ..., G, O/G, ...)
    kernel = _merge_into(kernel, 0, rs[0] + 1)                 # (..., G, B*O/G, ...)
    out = Convolution(**same)(lhs, _merge_into(kernel, rs[0], rs[0]))
    out = _split_out(out, os[1], groups)                       # (..., G, B*O/G, ...)
    out = _split_out(out, os[1] + 1, size)                     # (..., G, B, O/G, ...)
    return _merge_into(out, os[1], os[1] + 1), os[1]           # (..., B, G*O/G, ...)
