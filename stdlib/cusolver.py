"""jaxlib's cuSOLVER kernels as custom calls: the GPU factorizations behind ``xp.linalg``.

jax's CUDA plugin registers typed-FFI custom-call targets with XLA:GPU
(``cusolver_getrf_ffi``, ``cusolver_potrf_ffi``, ``cusolver_geqrf_ffi``,
``cusolver_orgqr_ffi``, ``cusolver_syevd_ffi``, ``cusolver_gesvdj_ffi``,
``cusolver_gesvd_ffi``, ``cusolver_geev_ffi``, ``cu_lu_pivots_to_permutation``).
Each function here calls its target exactly as jax 0.11.2 does (read from
jax's ``jax/_src/lax/linalg.py`` and checked against what jax emitted on an
H200, tests/golden/): the same operands, result types, layouts,
``output_to_operand_aliasing``, ``num_batch_dims`` frontend attribute and FFI
attributes. Unlike ``stdlib/lapack.py``'s kernel views, matrices here are
ordinary row-major arrays: every matrix operand and result of the largest rank
carries a column-major layout (``{1,2,0}`` for a stack), so XLA lays out (and
copies, where needed) the data as the kernel reads it, as for jax. Leading
dimensions are batch dimensions, which the kernels loop over (or batch).

The result rules are registered with ``ops.register_custom_call_target``:
a ``CustomCall`` of one of these targets that declares other results, or
passes operands the kernel cannot take, is a ``ShapeError``; they also make
programs jax lowered for a GPU importable (``hd.from_jax(..., platform="gpu")``).

Runs on a GPU only; anywhere, ``hd.code_hlo(f, *args, platform="gpu")`` shows
the calls:

>>> import hlodsl as hd
>>> text = hd.code_hlo(lambda a: getrf(a)[0], hd.ArrayType(hd.float32, (4, 32, 32)),
...                    platform="gpu")
>>> print(next(line.strip() for line in text.splitlines() if "custom-call(" in line))
custom-call.1 = (f32[4,32,32]{1,2,0}, s32[4,32]{1,0}, s32[4]{0}) custom-call(a), custom_call_target="cusolver_getrf_ffi", operand_layout_constraints={f32[4,32,32]{1,2,0}}, output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, frontend_attributes={num_batch_dims="1"}, backend_config={}
"""

from __future__ import annotations

import attrs
import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import ComplexFloating, complex64, complex128, float32, float64, int32
from hlodsl.arrays.types import ArrayType, TupleType
from hlodsl.ir.op import frozen
from hlodsl.ir.rules import batch_rule

from .manipulation import fail
from .matrices import filled, spread
from .promotion import lift
from .statistics import cumulative_sum

__all__ = ["available", "CusolverCall", "getrf", "pivots_to_permutation", "potrf", "geqrf",
           "orgqr", "syevd", "svd", "geev", "column_major", "GESVDJ_MAX"]

_DTYPES = (float32, float64, complex64, complex128)
_REAL = {complex64: float32, complex128: float64}
_COMPLEX = {float32: complex64, float64: complex128}
#: jax calls Jacobi's gesvdj up to this many rows and columns, gesvd beyond.
GESVDJ_MAX = 1024


def available() -> bool:
    """Whether ``xp.linalg`` stages cuSOLVER calls now (``kernels.provider()``)."""
    from .kernels import provider

    return provider() == "cusolver"


def column_major(rank: int) -> tuple[int, ...]:
    """The minor-to-major layout of a (stack of) column-major matrices: ``{1,2,0}``..."""
    return (rank - 2, rank - 1) + tuple(range(rank - 3, -1, -1))


def _row_major(rank: int) -> tuple[int, ...]:
    return tuple(range(rank - 1, -1, -1))


@frozen
class CusolverCall(ops.CustomCall):
    """A ``CustomCall`` of a jaxlib cuSOLVER target; its batch rule uses native batching.

    Every operand and result shares the leading batch dimensions (``placeholders``
    lists the results that do not: gesvd's rank-0 stand-ins), so ``vmap`` moves
    the batch dimension first, prepends it to the types and layouts, and counts
    one more in ``num_batch_dims``.
    """

    placeholders: tuple[int, ...] = attrs.field(default=(), converter=tuple)


def _relaid(layout, rank_before: int):
    """``layout`` of a rank-``rank_before`` array for the array with one more leading dim."""
    if layout is None:
        return None
    if rank_before >= 2 and tuple(layout) == column_major(rank_before):
        return column_major(rank_before + 1)
    return _row_major(rank_before + 1)


@batch_rule.dispatch
def cusolver_call_batched(op: CusolverCall, args: tuple, dims: tuple):
    size = next(a.shape[0] for a, d in zip(args, dims) if d is not None)
    args = [a if d is not None else ops.Broadcast((size,) + a.shape,
                                                  tuple(range(1, a.ndim + 1)))(a)
            for a, d in zip(args, dims)]
    tuple_out = isinstance(op.out_type, TupleType)
    types = op.out_type.elements if tuple_out else (op.out_type,)
    out = tuple(t if i in op.placeholders else ArrayType(t.dtype, (size,) + t.shape)
                for i, t in enumerate(types))
    operand_layouts = tuple(_relaid(lay, a.ndim - 1)
                            for lay, a in zip(op.operand_layouts, args))
    result_layouts = tuple(lay if i in op.placeholders else _relaid(lay, t.rank)
                           for i, (lay, t) in enumerate(zip(op.result_layouts, types)))
    attributes = dict(op.frontend_attributes or ())
    attributes["num_batch_dims"] = str(int(attributes.get("num_batch_dims", "0")) + 1)
    new = attrs.evolve(op, out_type=out if tuple_out else out[0],
                       operand_layouts=operand_layouts, result_layouts=result_layouts,
                       frontend_attributes=attributes)
    result = new(*args)
    if not tuple_out:
        return result, 0
    return result, tuple(None if i in op.placeholders else 0 for i in range(len(types)))


def _call(target: str, operands: tuple, out: tuple, attributes: dict | None = None,
          aliases: tuple = ((0,), 0, ()), column_major_layouts: bool = True,
          nonbatch: int = 2, placeholders: tuple = ()):
    """``target`` on ``operands`` as jax's ``_linalg_ffi_lowering`` calls it: arrays of the
    largest operand rank column-major (unless ``column_major_layouts`` is False),
    ``num_batch_dims`` = that rank - ``nonbatch``, FFI attributes sorted by name (as
    MLIR prints a dictionary); ``out`` a tuple of types (one: not a tuple result)."""
    rank = max(a.ndim for a in operands)

    def layout(t):
        major = column_major_layouts and t.rank == rank and rank >= 2
        return column_major(t.rank) if major else _row_major(t.rank)

    call = CusolverCall(
        target, out if len(out) > 1 else out[0],
        dict(sorted((attributes or {}).items())), operand_layouts=tuple(
            layout(a.type) for a in operands),
        result_layouts=tuple(layout(t) for t in out),
        output_operand_aliases=(aliases,) if aliases else None,
        frontend_attributes={"num_batch_dims": str(rank - nonbatch)},
        placeholders=placeholders)
    return call(*operands)


# -- what each kernel writes ------------------------------------------------------------
# Read from jax's lowerings (jax/_src/lax/linalg.py, jax 0.11.2) and jaxlib's cuSOLVER
# FFI handlers: operands and results share the leading batch dimensions, ``info`` is one
# int32 per matrix. A rule raises ValueError for operands or attributes the kernel cannot
# take (ops.CustomCall turns that into a ShapeError naming the call).

def _matrix(types, names: str):
    if len(types) != len(names.split()):
        raise ValueError(f"takes {len(names.split())} operand(s) ({names}), got {len(types)}")
    a = types[0]
    if not isinstance(a, ArrayType) or a.dtype not in _DTYPES or a.rank < 2:
        raise ValueError(f"a must be a stack of float32, float64, complex64 or complex128 "
                         f"matrices (..., M, N), got {a}")
    for name, t in zip(names.split()[1:], types[1:]):
        if not isinstance(t, ArrayType) or t.dtype is not a.dtype:
            raise ValueError(f"{name} must have a's element type {a.dtype.__name__}, got {t}")
    return a, a.shape[:-2], a.shape[-2], a.shape[-1]


def _square(types, names: str = "a"):
    a, batch, m, n = _matrix(types, names)
    if m != n:
        raise ValueError(f"a must be square (..., n, n), got {a}")
    return a, batch, n


def _flag(attributes: dict, name: str) -> bool:
    value = attributes.get(name)
    if not isinstance(value, bool):
        raise ValueError(f"needs the bool attribute {name}, got {value!r}")
    return value


def _info(batch) -> ArrayType:
    return ArrayType(int32, batch)


def _getrf(types, attributes):
    a, batch, m, n = _matrix(types, "a")
    return TupleType((a, ArrayType(int32, batch + (min(m, n),)), _info(batch)))


def _potrf(types, attributes):
    a, batch, _ = _square(types)
    _flag(attributes, "lower")
    return TupleType((a, _info(batch)))


def _geqrf(types, attributes):
    a, batch, m, n = _matrix(types, "a")
    return TupleType((a, ArrayType(a.dtype, batch + (min(m, n),))))


def _orgqr(types, attributes):
    a, batch, m, n = _matrix(types, "a tau")
    tau = types[1]
    if tau.rank != a.rank - 1 or tau.shape[:-1] != batch or not m >= n >= tau.shape[-1]:
        raise ValueError(f"a ({a}) and tau ({tau}) must be (..., M, N) and (..., K) with "
                         "M >= N >= K")
    return a


def _syevd(types, attributes):
    a, batch, n = _square(types)
    _flag(attributes, "lower")
    if attributes.get("algorithm") not in (0, 1, 2):
        raise ValueError(f"needs the attribute algorithm, 0 (default), 1 (QR) or 2 (Jacobi) "
                         f"as np.uint8, got {attributes.get('algorithm')!r}")
    return TupleType((a, ArrayType(_REAL.get(a.dtype, a.dtype), batch + (n,)), _info(batch)))


def _gesvdj(types, attributes):
    a, batch, m, n = _matrix(types, "a")
    full, _ = _flag(attributes, "full_matrices"), _flag(attributes, "compute_uv")
    k = min(m, n)
    s = ArrayType(_REAL.get(a.dtype, a.dtype), batch + (k,))
    u = ArrayType(a.dtype, batch + (m, m if full else k))
    v = ArrayType(a.dtype, batch + (n, n if full else k))
    return TupleType((a, s, u, v, _info(batch)))


def _gesvd(types, attributes):
    a, batch, m, n = _matrix(types, "a")
    full, uv = _flag(attributes, "full_matrices"), _flag(attributes, "compute_uv")
    transposed = _flag(attributes, "transposed")
    k = min(m, n)
    s = ArrayType(_REAL.get(a.dtype, a.dtype), batch + (k,))
    if uv:
        u = ArrayType(a.dtype, batch + ((m, m) if full else (m, k)))
        vt = ArrayType(a.dtype, batch + ((n, n) if full else (k, n)))
    else:  # jax's stand-ins: the kernel writes no vectors
        u = vt = ArrayType(a.dtype, ())
    return TupleType((a, s, vt, u, _info(batch)) if transposed else (a, s, u, vt, _info(batch)))


def _geev(types, attributes):
    a, batch, n = _square(types)
    _flag(attributes, "left"), _flag(attributes, "right")
    w = ArrayType(_COMPLEX.get(a.dtype, a.dtype), batch + (n,))
    return TupleType((a, w, a, a, _info(batch)))


def _pivots_to_permutation(types, attributes, declared):
    if len(types) != 1 or not isinstance(types[0], ArrayType) or types[0].dtype is not int32 \
            or types[0].rank < 1:
        raise ValueError(f"takes one operand, int32 pivots (..., K), got {types}")
    piv = types[0]
    if not (isinstance(declared, ArrayType) and declared.dtype is int32
            and declared.shape[:-1] == piv.shape[:-1] and declared.rank == piv.rank
            and declared.shape[-1] >= piv.shape[-1]):
        raise ValueError(f"writes an int32 permutation (..., M) with M >= K and the pivots' "
                         f"batch dimensions {piv.shape[:-1]}, not {declared}")
    return declared


#: target -> its rule, ``rule(operand_types, attributes) -> result type``.
_WRITES = {"cusolver_getrf_ffi": _getrf, "cusolver_potrf_ffi": _potrf,
           "cusolver_geqrf_ffi": _geqrf, "cusolver_orgqr_ffi": _orgqr,
           "cusolver_syevd_ffi": _syevd, "cusolver_gesvdj_ffi": _gesvdj,
           "cusolver_gesvd_ffi": _gesvd, "cusolver_geev_ffi": _geev}

for _target, _rule in _WRITES.items():
    ops.register_custom_call_target(_target, _rule)
ops.register_custom_call_target("cu_lu_pivots_to_permutation", _pivots_to_permutation,
                                declared=True)
del _target, _rule


# -- the routines: ordinary (row-major) arrays in and out -------------------------------

def _check(a: Array, what: str) -> None:
    if a.dtype not in _DTYPES:
        raise fail(TypeError, f"cuSOLVER {what}: needs float32, float64, complex64 or "
                              f"complex128, got {a.dtype.__name__}")


def getrf(a: Array):
    """LU with partial pivoting of ``(..., M, N)``: ``(lu, ipiv, info)``, ``ipiv`` 1-based."""
    _check(a, "getrf")
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    out = (a.type, ArrayType(int32, batch + (min(m, n),)), ArrayType(int32, batch))
    return _call("cusolver_getrf_ffi", (a,), out)


def pivots_to_permutation(pivots: Array, m: int) -> Array:
    """The row order (``(..., m)``) of 0-based row interchanges ``pivots`` (``(..., K)``)."""
    out = (ArrayType(int32, pivots.shape[:-1] + (m,)),)
    return _call("cu_lu_pivots_to_permutation", (pivots,), out, aliases=(),
                 column_major_layouts=False, nonbatch=1)


def potrf(a: Array, lower: bool = True):
    """Cholesky of Hermitian ``(..., N, N)`` (its ``lower`` triangle read): ``(factor, info)``."""
    _check(a, "potrf")
    return _call("cusolver_potrf_ffi", (a,), (a.type, ArrayType(int32, a.shape[:-2])),
                 {"lower": bool(lower)})


def geqrf(a: Array):
    """Householder QR of ``(..., M, N)``: ``(r_and_reflectors, tau)``."""
    _check(a, "geqrf")
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    return _call("cusolver_geqrf_ffi", (a,), (a.type, ArrayType(a.dtype, batch + (min(m, n),))))


def orgqr(a: Array, tau: Array) -> Array:
    """The ``N`` columns of ``Q`` from ``geqrf``'s reflectors in ``a`` (``(..., M, N)``)."""
    return _call("cusolver_orgqr_ffi", (a, tau), (a.type,), aliases=((), 0, ()))


def syevd(a: Array, lower: bool = True, algorithm: int = 0):
    """Eigenvectors (columns) and eigenvalues (real, ascending) of Hermitian ``(..., N, N)``:
    ``(v, w, info)``; ``algorithm``: 0 (cuSOLVER's default), 1 (QR), 2 (Jacobi)."""
    _check(a, "syevd")
    real = _REAL.get(a.dtype, a.dtype)
    out = (a.type, ArrayType(real, a.shape[:-1]), ArrayType(int32, a.shape[:-2]))
    return _call("cusolver_syevd_ffi", (a,), out,
                 {"lower": bool(lower), "algorithm": np.uint8(algorithm)})


def _transpose(x: Array) -> Array:
    n = x.ndim
    return ops.Transpose(tuple(range(n - 2)) + (n - 1, n - 2))(x)


def _slice(x: Array, rows: int, cols: int) -> Array:
    if x.shape[-2:] == (rows, cols):
        return x
    return ops.Slice((0,) * x.ndim, x.shape[:-2] + (rows, cols))(x)


def svd(a: Array, full_matrices: bool, compute_uv: bool = True):
    """``(s, u, vh, info)`` of ``(..., M, N)`` as jax computes it on a GPU: Jacobi's
    ``gesvdj`` up to ``GESVDJ_MAX`` rows and columns (whose ``econ`` mode jax uses
    above 32 x 32 only; below, full factors are sliced), else ``gesvd``. Without
    ``compute_uv``, ``u`` and ``vh`` are None."""
    _check(a, "svd")
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    real = ArrayType(_REAL.get(a.dtype, a.dtype), batch + (k,))
    info = ArrayType(int32, batch)
    if m <= GESVDJ_MAX and n <= GESVDJ_MAX:
        econ = not full_matrices and m > 32 and n > 32
        u_t = ArrayType(a.dtype, batch + (m, k if econ else m))
        v_t = ArrayType(a.dtype, batch + (n, k if econ else n))
        _, s, u, v, info = _call("cusolver_gesvdj_ffi", (a,), (a.type, real, u_t, v_t, info),
                                 {"full_matrices": not econ, "compute_uv": bool(compute_uv)})
        if not compute_uv:
            return s, None, None, info
        vh = _transpose(v)
        if issubclass(a.dtype, ComplexFloating):
            vh = ops.Complex()(ops.Real()(vh), ops.Negate()(ops.Imag()(vh)))
        if not full_matrices and not econ:
            u, vh = _slice(u, m, k), _slice(vh, k, n)
        return s, u, vh, info
    transposed = m < n
    if compute_uv:
        u_t = ArrayType(a.dtype, batch + ((m, m) if full_matrices else (m, k)))
        vt_t = ArrayType(a.dtype, batch + ((n, n) if full_matrices else (k, n)))
        placeholders = ()
    else:
        u_t = vt_t = ArrayType(a.dtype, ())
        placeholders = (2, 3)
    out = (a.type, real, vt_t, u_t, info) if transposed else (a.type, real, u_t, vt_t, info)
    _, s, first, second, info = _call(
        "cusolver_gesvd_ffi", (a,), out,
        {"full_matrices": bool(full_matrices), "compute_uv": bool(compute_uv),
         "transposed": transposed},
        column_major_layouts=not transposed, placeholders=placeholders)
    if not compute_uv:
        return s, None, None, info
    # jax's unpacking of the results, names and all: the third result is "u" (and
    # the fourth "vt") unless transposed, when they swap.
    return (s, second, first, info) if transposed else (s, first, second, info)


def _unpack_conjugate_pairs(w: Array, vr: Array) -> Array:
    """Complex eigenvectors from geev's packed real ones (jax's ``_unpack_conjugate_pairs``):
    a conjugate pair's vectors are ``re + i im`` and ``re - i im`` from two adjacent
    columns ``re, im``."""
    cdtype = w.dtype
    zero = filled(0, vr.dtype, vr.shape)
    if vr.size == 0:
        return ops.Complex()(vr, zero)
    imag = ops.Imag()(w)
    is_real = ops.Compare("EQ")(imag, filled(0, imag.dtype, imag.shape))
    count = cumulative_sum(lift(ops.Not()(is_real), int32), axis=-1, dtype=int32)
    start = ops.Compare("EQ")(ops.Remainder()(count, filled(2, int32, count.shape)),
                              filled(1, int32, count.shape))
    nb = vr.ndim - 1
    left = ops.Pad((0,) * nb + (-1,), (0,) * nb + (1,), (0,) * (nb + 1))(vr, lift(0, vr.dtype))
    right = ops.Pad((0,) * nb + (1,), (0,) * nb + (-1,), (0,) * (nb + 1))(vr, lift(0, vr.dtype))
    at = tuple(d for d in range(vr.ndim) if d != vr.ndim - 2)
    is_real, start = spread(is_real, vr.shape, at), spread(start, vr.shape, at)
    re = ops.Select()(ops.Or()(is_real, start), vr, right)
    im = ops.Select()(start, left, ops.Negate()(vr))
    im = ops.Select()(is_real, zero, im)
    out = ops.Complex()(re, im)
    return out if out.dtype is cdtype else lift(out, cdtype)


def geev(a: Array, vectors: bool = True):
    """Eigenvalues (complex, ``(..., N)``) and right eigenvectors (complex columns) of
    general ``(..., N, N)``: ``(w, vr, info)``; ``vr`` is None without ``vectors``."""
    _check(a, "geev")
    cdtype = _COMPLEX.get(a.dtype, a.dtype)
    out = (a.type, ArrayType(cdtype, a.shape[:-1]), a.type, a.type, ArrayType(int32, a.shape[:-2]))
    _, w, _, vr, info = _call("cusolver_geev_ffi", (a,), out,
                              {"left": False, "right": bool(vectors)}, aliases=())
    if not vectors:
        return w, None, info
    return w, (vr if a.dtype is cdtype else _unpack_conjugate_pairs(w, vr)), info
