"""LU and Cholesky factorizations in HLO, and the solvers and determinants built on them.

The functions here are re-exported by ``hlodsl.stdlib.linalg`` (``xp.linalg``),
where they belong; this module holds them so that each stays a readable size.
XLA has no LU instruction. On CPU, ``lu_factor``, ``solve``, ``inv``,
``det`` and ``slogdet`` call LAPACK's ``getrf`` (and ``trsm``) through jaxlib's
custom-call targets (``stdlib/lapack.py``); on a GPU cuSOLVER's ``getrf`` (and
``potrf`` for ``cholesky``) as jax calls them (``stdlib/cusolver.py``), then
HLO triangular solves; elsewhere they fall back to LU with partial pivoting
written in HLO, one ``while`` loop over the columns whose body works on the
whole batch at once (see docs/linalg.md). ``stdlib/kernels.py`` picks.

>>> import numpy as np, hlodsl as hd
>>> A = hd.array(np.float64([[0, 2], [1, 1]]))
>>> det(A)
hlodsl.Array[float64, ()](-2.)
>>> solve(A, hd.array(np.float64([2, 3])))
hlodsl.Array[float64, (2,)]([2., 1.])
"""

from __future__ import annotations

from collections import namedtuple

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.ir.dispatcher import dispatch
from hlodsl.arrays.dtypes import ComplexFloating, Floating, Inexact, Number, float32, float64, int32
from hlodsl.errors import ShapeError
from hlodsl.transforms.autodiff import vjp
from hlodsl.transforms.custom import custom_jvp, custom_vjp

from . import cusolver, kernels, lapack
from .broadcasting import broadcast_shapes, broadcast_to
from .elementwise import add, log, multiply
from .elementwise_more import _real, conj
from .lu_loop import lu_loop, lu_solve, permutation
from .manipulation import fail
from .matrices import filled, identity, magnitude, main_diagonal, mm, mt, sum_exact, triangle_mask
from .promotion import lift, promote
from .reductions import mapreduce

__all__ = [
    "cholesky", "lu_factor", "solve", "inv", "det", "slogdet", "solve_triangular",
    "SlogdetResult", "LUFactor",
]

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
LUFactor = namedtuple("LUFactor", ["lu", "pivots", "permutation"])


# -- argument checks (shared with linalg.py) ----------------------------------------

def check_numeric(what: str, *xs: Array) -> None:
    """``TypeError`` naming ``what`` unless every array is numeric."""
    for x in xs:
        if not issubclass(x.dtype, Number):
            raise fail(TypeError, f"{what}: needs numeric arrays, got {x.type}")


def check_inexact(what: str, *xs: Array) -> None:
    """``TypeError`` naming ``what`` unless every array is floating-point or complex."""
    for x in xs:
        if not issubclass(x.dtype, Inexact):
            raise fail(TypeError, f"{what}: needs floating-point (or complex) arrays, got "
                                  f"{x.type}; convert with astype first")


def check_square(what: str, x: Array) -> None:
    """``ShapeError`` naming ``what`` unless ``x`` is a stack of square matrices."""
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise fail(ShapeError, f"{what}: needs a stack of square matrices (..., M, M), got "
                               f"shape {x.shape}")


def _factorable(what: str, *xs: Array) -> list[Array]:
    """Floating operands of one element type; float16/bfloat16 are computed in float32."""
    check_inexact(what, *xs)
    xs = promote(*xs)
    if issubclass(xs[0].dtype, Floating) and xs[0].dtype not in (float32, float64):
        xs = [lift(x, float32) for x in xs]
    return xs


def _real_dtype(dtype):
    return {"complex64": float32, "complex128": float64}.get(dtype.__name__, dtype)


@dispatch
def cholesky(x: Array, upper: bool = False):
    """The Cholesky factor of Hermitian positive-definite matrices, ``(..., M, M)``.

    ``x = L @ L^H`` with ``L`` lower triangular (``upper=True``: ``x = U^H @ U``);
    only the lower triangle of ``x`` is read, and the other triangle of the
    result is zero. Like jax (and unlike numpy, which raises), a matrix that
    is not positive definite gives NaNs: XLA's HLO ``cholesky`` reports no
    error, and on CPU the whole factor of such a matrix is NaN.

    >>> import numpy as np, hlodsl as hd
    >>> cholesky(hd.array(np.float64([[4, 2], [2, 5]])))
    hlodsl.Array[float64, (2, 2)](
      [[2., 0.],
       [1., 2.]])
    """
    dtype = x.dtype
    (a,) = _factorable("cholesky", x)
    check_square("cholesky", a)
    kind = kernels.provider()
    if kind == "cusolver" and a.size:
        low = _cholesky_cusolver(a)
    elif kind == "lapack" and a.size:
        low = _cholesky_lapack(a)
    else:
        low = ops.Cholesky(lower=True)(a)
        low = ops.Select()(triangle_mask(a.shape, True), low, filled(0, a.dtype, a.shape))
    if upper:
        low = conj(ops.Transpose(tuple(range(low.ndim - 2)) + (low.ndim - 1, low.ndim - 2))(low))
    return lift(low, dtype)


# -- derivative rules from a forward derivative that is linear in the tangents ----------

def linear_rules(primal, residual, tangent):
    """``primal`` with forward and reverse rules built from one linear ``tangent`` map.

    ``primal(*arrays)`` is opaque to autodiff (it calls LAPACK);
    ``residual(args, out)`` computes constants the derivative needs (or
    returns ``None``), ``tangent(args, out, res, tangents)`` the output's
    tangent, linear in ``tangents`` and written with differentiable ops only.
    Forward mode calls it; reverse mode pulls the cotangent back through it
    with ``hd.vjp`` (the vjp of a linear map is its transpose, in hlodsl's
    complex convention, so no adjoint is written by hand).
    """
    reverse = custom_vjp(primal)  # its rules are defined below

    def jvp_rule(primals, tangents):
        # Through ``reverse``: under a jvp and a tape at once (hvp), the tape records
        # this rule, never the bare LAPACK call (which has no derivative rule).
        out = reverse(*primals)
        return out, tangent(primals, out, residual(primals, out), tangents)

    # Second derivatives: fwd runs with the reverse tapes paused, so it calls the
    # primal through its forward rule (an outer jvp, as in hvp, sees its tangent), and
    # the residual is computed in bwd, where an outer tape records it (computed in fwd,
    # it would count as a constant and drop its derivative from the Hessian).
    forward = custom_jvp(primal).defjvp(jvp_rule)

    def fwd(*args):
        out = forward(*args)
        return out, (args, out)

    def bwd(saved, ct):
        args, out = saved
        res = residual(args, out)
        zeros = [filled(0, a.dtype, a.shape) for a in args]
        _, pullback = vjp(lambda *t: tangent(args, out, res, t), *zeros)
        return tuple(pullback(ct))

    return custom_jvp(reverse.defvjp(fwd, bwd)).defjvp(jvp_rule)


# -- Cholesky on cuSOLVER and LAPACK (HLO's cholesky, XLA's expander, elsewhere) -----------

def _lower_factor(low: Array, info: Array) -> Array:
    """A potrf factor as cholesky returns it: NaN where it failed, the upper triangle 0."""
    low = lapack.nan_where_failed(info, low)
    return ops.Select()(triangle_mask(low.shape, True), low, filled(0, low.dtype, low.shape))


def _cholesky_primal(a: Array) -> Array:
    return _lower_factor(*cusolver.potrf(a, lower=True))  # the lower triangle, as ops.Cholesky


def _cholesky_lapack_primal(a: Array) -> Array:
    # LAPACK's potrf, as jax calls it on a CPU: 4-8x faster at n=64 than XLA's expansion
    # of HLO's cholesky (a while loop over the columns).
    low, info = lapack.potrf(lapack.to_kernel(a), lower=True)
    return _lower_factor(lapack.from_kernel(low), info)


def _phi(x: Array) -> Array:
    """The lower triangle of ``x`` with its diagonal halved."""
    lower, upper = triangle_mask(x.shape, True), triangle_mask(x.shape, False)
    half = ops.Multiply()(x, filled(0.5, x.dtype, x.shape))
    return ops.Select()(ops.And()(lower, upper), half,
                        ops.Select()(lower, x, filled(0, x.dtype, x.shape)))


def _cholesky_tangent(args, low, _, tangents):
    # dL = L Phi(L^-1 dS L^-H) (jax's _cholesky_jvp_rule), dS the Hermitian matrix of
    # dA's lower triangle, the triangle cholesky reads (of its diagonal, the real part).
    da = tangents[0]
    zero = filled(0, da.dtype, da.shape)
    lower, upper = triangle_mask(da.shape, True), triangle_mask(da.shape, False)
    strict = ops.Select()(upper, zero, da)
    diagonal = ops.Select()(ops.And()(lower, upper), lift(_real(da), da.dtype), zero)
    ds = ops.Add()(ops.Add()(strict, conj(mt(strict))), diagonal)
    x = ops.TriangularSolve(left_side=True, lower=True)(low, ds)
    y = ops.TriangularSolve(left_side=False, lower=True, transpose_a="ADJOINT")(low, x)
    return mm(low, _phi(y))


_cholesky_cusolver = linear_rules(_cholesky_primal, lambda args, out: None, _cholesky_tangent)
_cholesky_lapack = linear_rules(_cholesky_lapack_primal, lambda args, out: None,
                                _cholesky_tangent)


# -- LU: LAPACK's getrf on CPU, an HLO while loop elsewhere -------------------------------

def _lu(a: Array):
    """``(lu, pivots, permutation)`` of a stack of square matrices (checked by the caller)."""
    vec = a.shape[:-1]
    rows = ops.Iota(int32, vec, len(vec) - 1)()
    if a.size == 0:  # nothing to factor (and no column for the loop body to slice)
        return a, rows, rows
    kind = kernels.provider()
    if kind == "cusolver":
        return _lu_cusolver(a)
    if kind == "lapack":
        raw, ipiv, _ = lapack.getrf(lapack.to_kernel(a))
        piv = ops.Subtract()(ipiv, filled(1, int32, ipiv.shape))  # LAPACK counts from 1
        return lapack.from_kernel(raw), piv, permutation(piv)
    return lu_loop(a)


def _lu_cusolver(a: Array):
    """cuSOLVER's getrf as jax calls it: 0-based pivots, NaN where it failed (``info <
    0``; a singular matrix is not a failure), the permutation by cuSOLVER's kernel."""
    lu, ipiv, info = cusolver.getrf(a)
    piv = ops.Subtract()(ipiv, filled(1, int32, ipiv.shape))
    failed = ops.Compare("LT")(info, filled(0, int32, info.shape))
    lu = ops.Select()(ops.Broadcast(lu.shape, tuple(range(info.ndim)))(failed),
                      filled(float("nan"), lu.dtype, lu.shape), lu)
    return lu, piv, cusolver.pivots_to_permutation(piv, a.shape[-2])


@dispatch
def lu_factor(x: Array):
    """LU factorization with partial pivoting of ``(..., M, M)``: ``x[perm] = L @ U``.

    An hlodsl extra, the factorization behind ``solve``, ``inv``, ``det`` and
    ``slogdet``. Returns ``LUFactor(lu, pivots, permutation)``: ``lu`` holds
    ``U`` in its upper triangle and the multipliers of the unit lower
    triangular ``L`` below; ``pivots`` (int32, 0-based, as LAPACK's ``getrf``
    and ``scipy.linalg.lu_factor``) says row ``i`` was swapped with row
    ``pivots[i]`` at step ``i``; ``permutation`` (int32) is the resulting row
    order. Pivots are the first row of largest ``|re| + |im|`` on or below the
    diagonal. Singular matrices factor without error (a zero on ``U``'s diagonal).
    On CPU this is LAPACK's ``getrf``, on a GPU cuSOLVER's; elsewhere an HLO
    ``while`` loop. It has no derivative rule.

    >>> import numpy as np, hlodsl as hd
    >>> f = lu_factor(hd.array(np.float64([[1, 2], [3, 4]])))
    >>> f.lu
    hlodsl.Array[float64, (2, 2)](
      [[3.        , 4.        ],
       [0.33333333, 0.66666667]])
    >>> f.pivots, f.permutation
    (hlodsl.Array[int32, (2,)]([1, 1]), hlodsl.Array[int32, (2,)]([1, 0]))
    """
    dtype = x.dtype
    (a,) = _factorable("lu_factor", x)
    check_square("lu_factor", a)
    lu, piv, perm = _lu(a)
    return LUFactor(lift(lu, dtype), piv, perm)


def _as_columns(what: str, a: Array, b: Array, side: int = -2):
    """``b`` as a stack of ``(M, K)`` right-hand sides, broadcast with ``a``'s batch dims.

    Returns ``(a, b, vector)``; a 1-D ``b`` (``(M,)``) is one column.
    """
    m = a.shape[-1]
    types = (a.type, b.type)
    vector = b.ndim == 1
    if vector:
        b = ops.Reshape((m, 1) if side == -2 else (1, m))(b) if b.shape == (m,) else b
    if b.ndim < 2 or b.shape[side] != m:
        raise fail(ShapeError, f"{what}: x2 must have shape (M,) or (..., M, K) matching x1's "
                               f"M = {m}, got shapes {a.shape} and "
                               f"{b.shape if not vector else (b.shape[0],)}")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], what=what, operands=types)
    return broadcast_to(a, batch + a.shape[-2:]), broadcast_to(b, batch + b.shape[-2:]), vector


def _split_columns(raw: Array, m: int):
    """Kernel views of the first ``m`` columns, and of the rest, of the kernel matrix ``raw``.

    Column-major, the first ``m`` columns are the first ``rows * m`` elements.
    """
    batch, (rows, cols) = raw.shape[:-2], raw.shape[-2:]
    nb = len(batch)
    flat = ops.Reshape(batch + (rows * cols,))(raw)
    head = ops.Slice((0,) * (nb + 1), batch + (rows * m,))(flat)
    tail = ops.Slice((0,) * nb + (rows * m,), batch + (rows * cols,))(flat)
    return ops.Reshape(batch + (rows, m))(head), ops.Reshape(batch + (rows, cols - m))(tail)


def _getrs(augmented: Array, m: int) -> Array:
    """The kernel view of ``A^-1 B`` from the kernel view of ``[A | B]`` (``M x (M + K)``).

    ``getrf`` pivots in the first ``M`` columns only and applies its row
    interchanges and elimination to whole rows, so it leaves ``L^-1 P^T B``
    beside ``U``; one triangular solve with ``U`` finishes (LAPACK's ``gesv``
    without a separate permutation of ``B``).
    """
    raw, _, _ = lapack.getrf(augmented)
    lu, c = _split_columns(raw, m)
    return lapack.trsm(lu, c, left=True, lower=False)


def _solve_primal(a: Array, b: Array) -> Array:
    nb = a.ndim - 2
    return lapack.from_kernel(_getrs(lapack.to_kernel(ops.Concatenate(nb + 1)(a, b)),
                                     a.shape[-1]))


def _inv_primal(a: Array) -> Array:
    # The kernel reads the row-major stack [A; I] (2M x M) as [A^T | I] and solves
    # for A^-T column-major: read row-major, that buffer is A^-1 (no transposes).
    m, batch = a.shape[-1], a.shape[:-2]
    stacked = ops.Concatenate(len(batch))(a, identity(m, a.dtype, batch))
    return _getrs(lapack.transposed_view(stacked), m)


def _solve_hlo_primal(a: Array, b: Array) -> Array:
    lu, _, perm = _lu(a)
    return lu_solve(lu, perm, b)


def _inv_hlo_primal(a: Array) -> Array:
    lu, _, perm = _lu(a)
    return lu_solve(lu, perm, identity(a.shape[-1], a.dtype, a.shape[:-2]))


def _inverse(args, out):
    # The differentiable inverse, not a bare primal: a second derivative differentiates
    # this residual too (a kernel's call has no rule of its own, so it would count as a
    # constant and drop d(A^-1) from the Hessian), and reverse mode must never reach the
    # HLO kernels' LU loop (a while loop with a data-dependent trip count).
    return _INV[kernels.provider()](args[0])


def _solve_tangent(args, x, a_inv, tangents):
    da, db = tangents  # dx = A^-1 (db - dA x)
    return mm(a_inv, ops.Subtract()(db, mm(da, x)))


def _inv_tangent(args, x, _, tangents):
    return ops.Negate()(mm(mm(x, tangents[0]), x))  # dX = -X dA X


def _solve_cusolver_primal(a: Array, b: Array) -> Array:
    # jax's GPU solve: getrf, the rows of b permuted, two HLO triangular solves (cuBLAS).
    lu, _, perm = _lu_cusolver(a)
    return lu_solve(lu, perm, b)


def _inv_cusolver_primal(a: Array) -> Array:
    return _solve_cusolver_primal(a, identity(a.shape[-1], a.dtype, a.shape[:-2]))


# Each kernel provider's solve and inverse (kernels.provider()), with the same derivative
# rules: autodiff never differentiates a factorization (a kernel's call has no rule; the
# HLO loop's pivot search and data-dependent trip count have none worth having).
_SOLVE = {"lapack": linear_rules(_solve_primal, _inverse, _solve_tangent),
          "cusolver": linear_rules(_solve_cusolver_primal, _inverse, _solve_tangent),
          "hlo": linear_rules(_solve_hlo_primal, _inverse, _solve_tangent)}
_INV = {"lapack": linear_rules(_inv_primal, lambda args, out: None, _inv_tangent),
        "cusolver": linear_rules(_inv_cusolver_primal, lambda args, out: None, _inv_tangent),
        "hlo": linear_rules(_inv_hlo_primal, lambda args, out: None, _inv_tangent)}


@dispatch
def solve(x1: Array, x2: Array):
    """Solve ``x1 @ x = x2`` for ``x``; ``x1`` is ``(..., M, M)``.

    ``x2`` is one vector ``(M,)`` (the result is ``(..., M)``) or a stack of
    right-hand sides ``(..., M, K)`` whose batch dims broadcast with x1's (the
    2023.12 rule). LU with partial pivoting, then triangular solves: on CPU
    LAPACK's ``getrf`` of ``[x1 | x2]`` and one ``trsm``, on a GPU cuSOLVER's
    ``getrf`` and two HLO triangular solves (as jax). A singular ``x1``
    raises no error: the result holds infs or NaNs. Differentiable in both
    arguments (``dx = x1^-1 (dx2 - dx1 x)``).

    >>> import numpy as np, hlodsl as hd
    >>> A = hd.array(np.float32([[2, 1], [4, 4]]))
    >>> solve(A, hd.array(np.float32([4, 12])))
    hlodsl.Array[float32, (2,)]([1., 2.])
    """
    dtype = promote(x1, x2)[0].dtype
    a, b = _factorable("solve", x1, x2)
    check_square("solve", a)
    a, b, vector = _as_columns("solve", a, b)
    out = _SOLVE[kernels.provider() if a.size and b.size else "hlo"](a, b)
    return lift(ops.Reshape(out.shape[:-1])(out) if vector else out, dtype)


@dispatch
def inv(x: Array):
    """The inverse of each matrix of ``x`` (``(..., M, M)``), by LU with partial pivoting.

    On CPU, LAPACK's ``getrf`` of ``[x | I]`` and one ``trsm``. Differentiable
    (``dX = -X dx X``).

    >>> import numpy as np, hlodsl as hd
    >>> inv(hd.array(np.float64([[2, 0], [0, 4]])))
    hlodsl.Array[float64, (2, 2)](
      [[0.5 , 0.  ],
       [0.  , 0.25]])
    """
    dtype = x.dtype
    (a,) = _factorable("inv", x)
    check_square("inv", a)
    return lift(_INV[kernels.provider() if a.size else "hlo"](a), dtype)


def _plus_zero(x: Array) -> Array:
    """``x`` with -0.0 as +0.0: a zero pivot times a negative sign is 0, as numpy gives it."""
    zero = filled(0, x.dtype, x.shape)
    return ops.Select()(ops.Compare("EQ")(x, zero), zero, x)


def _det_factors(a: Array):
    """``(diagonal of U, +-1 of the row permutation)`` of square ``a`` (non-empty)."""
    kind = kernels.provider()
    if kind == "cusolver":  # as jax: getrf alone (the permutation is not needed)
        raw, ipiv, _ = cusolver.getrf(a)
        piv = ops.Subtract()(ipiv, filled(1, int32, ipiv.shape))
        d = main_diagonal(raw)
    elif kind == "lapack":
        # det(A) = det(A^T): factor the transpose the kernel sees for free.
        raw, ipiv, _ = lapack.getrf(a)
        piv = ops.Subtract()(ipiv, filled(1, int32, ipiv.shape))
        d = main_diagonal(raw)
    else:
        lu, piv, _ = _lu(a)
        d = main_diagonal(lu)
    swaps = ops.Compare("NE")(piv, ops.Iota(int32, piv.shape, piv.ndim - 1)())
    count = sum_exact(lift(swaps, int32), -1)
    odd = ops.Compare("EQ")(ops.Remainder()(count, filled(2, int32, count.shape)),
                            filled(1, int32, count.shape))
    parity = ops.Select()(odd, filled(-1, a.dtype, count.shape), filled(1, a.dtype, count.shape))
    return d, parity


def _det_primal(a: Array) -> Array:
    if a.size == 0:  # an empty product: 1
        return filled(1, a.dtype, a.shape[:-2])
    d, parity = _det_factors(a)
    return _plus_zero(ops.Multiply()(parity, mapreduce(None, multiply, d, axis=-1)))


def _slogdet_primal(a: Array):
    if a.size == 0:
        return SlogdetResult(filled(1, a.dtype, a.shape[:-2]),
                             filled(0, _real_dtype(a.dtype), a.shape[:-2]))
    d, parity = _det_factors(a)
    mag = magnitude(d)
    if issubclass(d.dtype, ComplexFloating):
        nonzero = ops.Compare("NE")(mag, filled(0, mag.dtype, mag.shape))
        safe = ops.Select()(nonzero, mag, filled(1, mag.dtype, mag.shape))
        unit = ops.Select()(nonzero, ops.Divide()(d, lift(safe, d.dtype)),
                            filled(0, d.dtype, d.shape))
    else:
        unit = ops.Sign()(d)
    sign = ops.Multiply()(parity, mapreduce(None, multiply, unit, axis=-1))
    logabs = mapreduce(None, add, log(mag), axis=-1)
    return SlogdetResult(_plus_zero(sign), logabs)


def _trace_of_product(a_inv: Array, da: Array) -> Array:
    """``trace(a_inv @ da)`` without the product: ``sum(a_inv^T * da)``."""
    return sum_exact(sum_exact(ops.Multiply()(mt(a_inv), da), -1), -1)


def _det_tangent(args, det_a, a_inv, tangents):
    return ops.Multiply()(det_a, _trace_of_product(a_inv, tangents[0]))


def _slogdet_tangent(args, out, a_inv, tangents):
    t = _trace_of_product(a_inv, tangents[0])
    if not issubclass(t.dtype, ComplexFloating):
        return SlogdetResult(filled(0, t.dtype, t.shape), t)
    re = ops.Real()(t)  # d log|det| = Re t; the sign turns by i Im t
    return SlogdetResult(ops.Multiply()(ops.Subtract()(t, lift(re, t.dtype)), out.sign), re)


_det_rules = linear_rules(_det_primal, _inverse, _det_tangent)
_slogdet_rules = linear_rules(_slogdet_primal, _inverse, _slogdet_tangent)


@dispatch
def det(x: Array):
    """The determinant of each matrix of ``x`` (``(..., M, M) -> (...)``).

    The product of ``U``'s diagonal from LU with partial pivoting (LAPACK's
    ``getrf`` on CPU), signed by the row permutation; exactly 0 for a matrix
    that factors with a zero pivot. Differentiable (``d det = det tr(x^-1 dx)``;
    NaN at singular matrices).

    >>> import numpy as np, hlodsl as hd
    >>> det(hd.array(np.float32([[[0, 1], [1, 0]], [[1, 2], [2, 4]]])))
    hlodsl.Array[float32, (2,)]([-1.,  0.])
    """
    dtype = x.dtype
    (a,) = _factorable("det", x)
    check_square("det", a)
    return lift(_det_rules(a), dtype)


@dispatch
def slogdet(x: Array):
    """``SlogdetResult(sign, logabsdet)`` of each matrix: ``det = sign * exp(logabsdet)``.

    ``sign`` has ``x``'s element type (for complex ``x``, a number of modulus
    1), ``logabsdet`` its real type; a singular matrix gives ``sign = 0`` and
    ``logabsdet = -inf``. Differentiable (``d logabsdet = Re tr(x^-1 dx)``).

    >>> import numpy as np, hlodsl as hd
    >>> sign, logabsdet = slogdet(hd.array(np.float64([[0, -3], [1, 0]])))
    >>> sign, logabsdet
    (hlodsl.Array[float64, ()](1.), hlodsl.Array[float64, ()](1.09861229))
    """
    dtype = x.dtype
    (a,) = _factorable("slogdet", x)
    check_square("slogdet", a)
    sign, logabs = _slogdet_rules(a)
    return SlogdetResult(lift(sign, dtype), lift(logabs, _real_dtype(dtype)))


@dispatch
def solve_triangular(a: Array, b: Array, lower: bool = False, left: bool = True,
                     unit_diagonal: bool = False):
    """Solve ``a @ x = b`` (``left``) or ``x @ a = b`` for triangular ``a`` (an hlodsl extra).

    ``a``: ``(..., M, M)``, of which only the ``lower`` (else upper) triangle
    is read (and not its diagonal with ``unit_diagonal``); ``b``: ``(M,)`` or
    ``(..., M, K)`` (left) / ``(..., K, M)`` (right), batch dims broadcast.
    One HLO ``triangular-solve``.

    >>> import numpy as np, hlodsl as hd
    >>> a = hd.array(np.float64([[2, 0], [1, 1]]))
    >>> solve_triangular(a, hd.array(np.float64([2, 3])), lower=True)
    hlodsl.Array[float64, (2,)]([1., 2.])
    """
    for name, flag in (("lower", lower), ("left", left), ("unit_diagonal", unit_diagonal)):
        if not isinstance(flag, bool):
            raise fail(TypeError, f"solve_triangular: {name} must be a bool, got {flag!r}")
    dtype = promote(a, b)[0].dtype
    a, b = _factorable("solve_triangular", a, b)
    check_square("solve_triangular", a)
    a, b, vector = _as_columns("solve_triangular", a, b, -2 if left else -1)
    out = ops.TriangularSolve(left_side=left, lower=lower, unit_diagonal=unit_diagonal)(a, b)
    return lift(ops.Reshape(out.shape[:-2] + (a.shape[-1],))(out) if vector else out, dtype)
