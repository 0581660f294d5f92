"""jaxlib's LAPACK kernels as custom calls: the CPU factorizations behind ``xp.linalg``.

jaxlib registers typed-FFI custom-call targets ``lapack_<p><routine>_ffi``
(``p`` = ``s``/``d``/``c``/``z`` for float32/float64/complex64/complex128)
with XLA's CPU backend; ``hlodsl.runtime`` binds them whenever a module
mentions ``lapack_``. Leading dimensions of every operand are batch
dimensions, which the kernels loop over natively (in a thread pool), so one
call factors a whole stack of matrices.

LAPACK is column-major, our arrays row-major. Rather than constrain layouts,
each function here takes and returns *kernel views*: a row-major array ``v``
of shape ``(..., r, c)`` whose buffer the kernel reads as the column-major
``r x c`` matrix ``kernel_matrix(v)``. ``to_kernel(x)`` makes the view of
``x`` (one transpose), ``from_kernel(v)`` turns the kernel's answer back into
an ordinary array (one transpose), and ``transposed_view(x)`` is the free
view of ``x``'s transpose (a reshape, no data movement): LU and solves use it
to skip the copies where a transposed factorization serves as well.

Each kernel sizes its work from its operands and writes results of exactly
the types ``_WRITES`` gives. They are registered for ``ops.CustomCall``
(``ops.register_custom_call_target``), so a ``CustomCall`` of one of these
targets that declares other results, or passes operands the kernel cannot
take, is a ``ShapeError`` rather than uninitialised (or overwritten) memory.

Failures: where LAPACK reports one through ``info``, the functions that use
these kernels fill the affected matrices' results with NaN, as jax does
(``nan_where_failed``); a singular matrix is not a failure of ``getrf``.

These targets exist only on the CPU backend: ``available()`` says whether
they are staged now (``stdlib/kernels.py`` picks, by the platform staged for
and ``hlodsl.config.linalg_kernels``); a GPU gets jaxlib's cuSOLVER targets
(``stdlib/cusolver.py``), other backends and ``linalg_kernels = "hlo"`` the
HLO fallbacks of the callers: ``lu_loop.py``, ``jacobi.py``, ``householder.py``.

>>> import numpy as np, hlodsl as hd
>>> a = hd.array(np.float64([[4, 3], [6, 3]]))
>>> lu, ipiv, info = getrf(to_kernel(a))
>>> from_kernel(lu), ipiv, info
(hlodsl.Array[float64, (2, 2)](
  [[6.        , 3.        ],
   [0.66666667, 1.        ]]), hlodsl.Array[int32, (2,)]([2, 2]), hlodsl.Array[int32, ()](0))
"""

from __future__ import annotations

from functools import partial

import attrs
import numpy as np

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import complex64, complex128, float32, float64, int32
from hlodsl.ir.op import frozen
from hlodsl.ir.rules import batch_rule
from hlodsl.arrays.types import ArrayType, TupleType

from .manipulation import fail
from .promotion import lift

__all__ = ["available", "LapackCall", "to_kernel", "from_kernel", "transposed_view",
           "nan_where_failed", "getrf", "trsm", "geqrf", "orgqr", "syevd", "gesdd", "geev"]

_PREFIX = {float32: "s", float64: "d", complex64: "c", complex128: "z"}
_REAL = {complex64: float32, complex128: float64}
_COMPLEX = {float32: complex64, float64: complex128}


def complex_dtype(dtype):
    """The complex type of ``dtype``'s precision (``dtype`` itself if complex)."""
    return _COMPLEX.get(dtype, dtype)


def available() -> bool:
    """Whether ``xp.linalg`` stages LAPACK calls now: ``kernels.provider() == "lapack"``.

    ``hlodsl.config.linalg_kernels`` ``"auto"`` picks them when staging for the
    CPU (where this jaxlib can bind them), ``"hlo"`` never, ``"lapack"`` always, and
    raises ``NotImplementedError`` for another platform (``stdlib/kernels.py``).

    >>> import hlodsl as hd
    >>> hd.config.linalg_kernels = "hlo"
    >>> available()
    False
    >>> hd.config.linalg_kernels = "auto"
    """
    from .kernels import provider

    return provider() == "lapack"


@frozen
class LapackCall(ops.CustomCall):
    """A ``CustomCall`` of a jaxlib LAPACK target; its batch rule uses native batching.

    Every operand and result of these targets carries the same leading batch
    dimensions, so ``vmap`` moves each batch dimension first (broadcasting
    unbatched operands) and prepends it to the result types.
    """


@batch_rule.dispatch
def lapack_call_batched(op: LapackCall, args: tuple, dims: tuple):
    size = next(a.shape[0] for a, d in zip(args, dims) if d is not None)
    args = [a if d is not None else ops.Broadcast((size,) + a.shape,
                                                  tuple(range(1, a.ndim + 1)))(a)
            for a, d in zip(args, dims)]
    types = op.out_type.elements if isinstance(op.out_type, TupleType) else (op.out_type,)
    batched = tuple(ArrayType(t.dtype, (size,) + t.shape) for t in types)
    new = attrs.evolve(op, out_type=batched if isinstance(op.out_type, TupleType) else batched[0])
    out = new(*args)
    return out, (tuple(0 for _ in types) if isinstance(out, tuple) else 0)


def _target(routine: str, dtype) -> str:
    if dtype not in _PREFIX:
        raise fail(TypeError, f"LAPACK {routine}: needs float32, float64, complex64 or "
                              f"complex128, got {dtype.__name__}")
    return f"lapack_{_PREFIX[dtype]}{routine}_ffi"


def _call(routine: str, x: Array, *operands: Array, **attributes):
    """``routine``'s kernel for ``x``'s element type on ``(x, *operands)``; the
    result types are what the kernel writes. ``attributes``: one character each."""
    attributes = {k: np.uint8(ord(v)) for k, v in attributes.items()}
    out = _WRITES[routine](x.dtype, tuple(a.type for a in (x, *operands)), attributes)
    return LapackCall(_target(routine, x.dtype), out, attributes)(x, *operands)


# -- what each kernel writes ------------------------------------------------------------
# Read from jaxlib's kernels (jaxlib/cpu/lapack_kernels.cc) and jax's lowerings of them
# (jax/_src/lax/linalg.py): operands and results share the leading batch dimensions,
# ``info`` is one int32 per matrix. A rule raises ValueError for operands or attributes
# the kernel cannot take (ops.CustomCall turns that into a ShapeError naming the call).

def _operands(dtype, types, names: str) -> tuple:
    """The operand types, one per (space-separated) name, each an array of ``dtype``."""
    if len(types) != len(names.split()):
        raise ValueError(f"takes {len(names.split())} operand(s) ({names}), got {len(types)}")
    for name, t in zip(names.split(), types):
        if not isinstance(t, ArrayType) or t.dtype is not dtype:
            raise ValueError(f"{name} must be {dtype.__name__} (the target's element "
                             f"type), got {t}")
    return types


def _matrices(t, name: str, batch=None):
    """``(batch, rows, cols)`` of a stack of matrices ``t`` (with ``batch``, if given)."""
    if t.rank < 2 or (batch is not None and t.shape[:-2] != batch):
        expect = "rank >= 2" if batch is None else f"batch dimensions {batch}"
        raise ValueError(f"{name} must be a stack of matrices with {expect}, got {t}")
    return t.shape[:-2], t.shape[-2], t.shape[-1]


def _square(t, name: str):
    batch, m, n = _matrices(t, name)
    if m != n:
        raise ValueError(f"{name} must be square (..., n, n), got {t}")
    return batch, n


def _char(attributes: dict, name: str, allowed: str) -> str:
    value = attributes.get(name)
    if not (isinstance(value, (int, np.integer)) and chr(value) in allowed):
        raise ValueError(f"needs the attribute {name}, one of {', '.join(allowed)} as "
                         f"np.uint8(ord(c)), got {value!r}")
    return chr(value)


def _info(batch) -> ArrayType:
    return ArrayType(int32, batch)


def _potrf(dtype, types, attributes):
    (a,) = _operands(dtype, types, "a")
    batch, _ = _square(a, "a")
    _char(attributes, "uplo", "LU")
    return TupleType((a, _info(batch)))


def _getrf(dtype, types, attributes):
    (a,) = _operands(dtype, types, "a")
    batch, m, n = _matrices(a, "a")
    return TupleType((a, ArrayType(int32, batch + (min(m, n),)), _info(batch)))


def _trsm(dtype, types, attributes):
    a, b = _operands(dtype, types, "a b")
    batch, k = _square(a, "a")
    _, m, n = _matrices(b, "b", batch)
    left = _char(attributes, "side", "LR") == "L"
    if k != (m if left else n):
        raise ValueError(f"a ({a}) must be {m if left else n} x {m if left else n} to solve "
                         f"{'a x = b' if left else 'x a = b'} for b ({b})")
    for name, allowed in (("uplo", "LU"), ("trans_x", "NTC"), ("diag", "NU")):
        _char(attributes, name, allowed)
    return b


def _geqrf(dtype, types, attributes):
    (a,) = _operands(dtype, types, "a")
    batch, m, n = _matrices(a, "a")
    return TupleType((a, ArrayType(dtype, batch + (min(m, n),))))


def _orgqr(dtype, types, attributes):
    a, tau = _operands(dtype, types, "a tau")
    batch, m, n = _matrices(a, "a")
    if tau.rank != a.rank - 1 or tau.shape[:-1] != batch or not m >= n >= tau.shape[-1]:
        raise ValueError(f"a ({a}) and tau ({tau}) must be (..., M, N) and (..., K) with "
                         "M >= N >= K (LAPACK's orgqr)")
    return a


def _syevd(dtype, types, attributes):
    (a,) = _operands(dtype, types, "a")
    batch, n = _square(a, "a")
    _char(attributes, "mode", "VN")
    _char(attributes, "uplo", "LU")
    return TupleType((a, ArrayType(_REAL.get(dtype, dtype), batch + (n,)), _info(batch)))


def _gesdd(dtype, types, attributes):
    (a,) = _operands(dtype, types, "a")
    batch, m, n = _matrices(a, "a")
    k = min(m, n)
    # Mode N computes no vectors: u and vt are placeholders the kernel never writes.
    u, vt = {"A": ((m, m), (n, n)), "S": ((m, k), (k, n)),
             "N": ((m, 1), (1, n))}[_char(attributes, "mode", "ASN")]
    return TupleType((a, ArrayType(_REAL.get(dtype, dtype), batch + (k,)),
                      ArrayType(dtype, batch + u), ArrayType(dtype, batch + vt), _info(batch)))


def _geev(dtype, types, attributes):
    (a,) = _operands(dtype, types, "a")
    batch, n = _square(a, "a")
    _char(attributes, "compute_left", "NV")
    _char(attributes, "compute_right", "NV")
    # Real input: the eigenvalues' real and imaginary parts apart; the eigenvectors come
    # back complex either way (the kernel unpacks conjugate pairs itself).
    cdtype = _COMPLEX.get(dtype, dtype)
    w = (ArrayType(dtype, batch + (n,)),) * 2 if dtype in _COMPLEX else \
        (ArrayType(cdtype, batch + (n,)),)
    vectors = ArrayType(cdtype, a.shape)
    return TupleType((*w, vectors, vectors, _info(batch)))


#: routine -> its rule, ``rule(dtype, operand_types, attributes) -> result type``.
_WRITES = {"potrf": _potrf, "getrf": _getrf, "trsm": _trsm, "geqrf": _geqrf,
           "orgqr": _orgqr, "ungqr": _orgqr, "syevd": _syevd, "heevd": _syevd,
           "gesdd": _gesdd, "geev": _geev}
#: The routines that exist only for real, or only for complex, element types.
_ONLY = {"orgqr": (float32, float64), "syevd": (float32, float64),
         "ungqr": (complex64, complex128), "heevd": (complex64, complex128)}

for _routine, _rule in _WRITES.items():
    for _dtype in _ONLY.get(_routine, tuple(_PREFIX)):
        ops.register_custom_call_target(_target(_routine, _dtype), partial(_rule, _dtype))
del _routine, _rule, _dtype


# -- kernel views ---------------------------------------------------------------------

def _swap(shape: tuple) -> tuple:
    return shape[:-2] + (shape[-1], shape[-2])


def _transpose(x: Array) -> Array:
    n = x.ndim
    return ops.Transpose(tuple(range(n - 2)) + (n - 1, n - 2))(x)


def to_kernel(x: Array) -> Array:
    """The kernel view of ``x``: same shape, its buffer holds ``x`` column-major."""
    return ops.Reshape(x.shape)(_transpose(x))


def from_kernel(v: Array) -> Array:
    """The matrices a kernel left in the view ``v``, as an ordinary (row-major) array."""
    return _transpose(ops.Reshape(_swap(v.shape))(v))


def transposed_view(x: Array) -> Array:
    """The kernel view of ``x``'s matrix transposes, shape ``(..., N, M)``, without a copy."""
    return ops.Reshape(_swap(x.shape))(x)


def nan_where_failed(info: Array, x: Array) -> Array:
    """``x`` with every matrix (or vector) of a batch entry whose ``info != 0`` set to NaN."""
    nb = info.ndim
    bad = ops.Broadcast(x.shape, tuple(range(nb)))(
        ops.Compare("NE")(info, ops.Broadcast(info.shape)(lift(0, int32))))
    return ops.Select()(bad, ops.Broadcast(x.shape)(lift(float("nan"), x.dtype)), x)


# -- the routines (operands and results are kernel views) -------------------------------

def potrf(a: Array, lower: bool = True):
    """Cholesky of Hermitian ``(..., N, N)``, its ``lower`` (else upper) triangle read:
    ``(factor, info)``; the other triangle of ``factor`` is left as it was in ``a``, and
    ``info > 0`` means the leading minor of that order is not positive definite."""
    return _call("potrf", a, uplo="L" if lower else "U")


def getrf(a: Array):
    """LU with partial pivoting of ``(..., M, N)``: ``(lu, ipiv, info)``.

    ``ipiv`` (int32, ``(..., min(M, N))``) is 1-based as in LAPACK; ``info > 0``
    means ``U[info-1, info-1]`` is exactly zero (the factorization is complete).
    """
    return _call("getrf", a)


def trsm(a: Array, b: Array, *, left: bool = True, lower: bool = True, trans: str = "N",
         unit: bool = False) -> Array:
    """Solve ``op(a) x = b`` (``left``) or ``x op(a) = b``; ``op``: ``N``, ``T`` or ``C``.

    ``a``: ``(..., K, K)`` triangular (only the ``lower``/upper triangle is read),
    ``b``: ``(..., M, N)`` with the same batch dims; the result has ``b``'s shape.
    """
    return _call("trsm", a, b, side="L" if left else "R", uplo="L" if lower else "U",
                 trans_x=trans, diag="U" if unit else "N")


def geqrf(a: Array):
    """Householder QR of ``(..., M, N)``: ``(a_out, tau)``, tau ``(..., min(M, N))``."""
    return _call("geqrf", a)


def orgqr(a: Array, tau: Array) -> Array:
    """The first ``N`` columns of ``Q`` from ``geqrf``'s reflectors in ``a`` ``(..., M, N)``."""
    routine = "ungqr" if a.dtype in _REAL else "orgqr"
    return _call(routine, a, tau)


def syevd(a: Array, vectors: bool = True):
    """Eigenvalues (ascending, real) and eigenvectors (columns) of Hermitian ``(..., M, M)``.

    Reads the lower triangle; returns ``(v, w, info)``.
    """
    routine = "heevd" if a.dtype in _REAL else "syevd"
    return _call(routine, a, mode="V" if vectors else "N", uplo="L")


def gesdd(a: Array, mode: str):
    """Divide-and-conquer SVD of ``(..., M, N)``: ``(s, u, vt, info)``.

    ``mode``: ``'A'`` (``u`` is ``M x M``, ``vt`` ``N x N``), ``'S'`` (``M x K`` and
    ``K x N``, ``K = min(M, N)``) or ``'N'`` (singular values only: ``u`` and ``vt``
    are ``M x 1`` and ``1 x N`` placeholders the kernel does not write).
    """
    _, s, u, vt, info = _call("gesdd", a, mode=mode)
    return s, u, vt, info


def geev(a: Array, vectors: bool = True):
    """Eigenvalues and right eigenvectors of a general (non-symmetric) ``(..., M, M)``.

    Returns ``(w, vr, info)``: ``w`` complex ``(..., M)``, ``vr`` the kernel
    view of the complex eigenvectors (columns of unit 2-norm whose
    largest-magnitude entry is real), ``info > 0`` where the QR iteration did
    not converge. For real input the kernel gives the real and imaginary parts
    of ``w`` and unpacks the eigenvectors of conjugate pairs itself. Left
    eigenvectors are not computed; with ``vectors=False`` neither are the right.
    """
    *w, _, vr, info = _call("geev", a, compute_left="N", compute_right="V" if vectors else "N")
    return (ops.Complex()(*w) if len(w) == 2 else w[0]), vr, info

