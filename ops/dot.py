"""Dot: general tensor contraction with batch dimensions (HLO dot_general).

>>> import numpy as np, hlodsl as hd
>>> A = hd.array(np.eye(2, dtype=np.float32)); x = hd.array(np.float32([1, 2]))
>>> Dot(lhs_contracting=(1,), rhs_contracting=(0,))(A, x)
hlodsl.Array[float32, (2,)]([1., 2.])
"""

from __future__ import annotations

import string

import attrs
import numpy as np

from hlodsl.arrays.dtypes import ComplexFloating, ElementType, Floating, Number, element_type
from hlodsl.errors import require, user_location
from hlodsl.ir.op import HloOp, frozen, result_type_of, wrap_node
from hlodsl.ir.target import target_platform
from hlodsl.arrays.types import ArrayType

from ._checks import check_dims, dims, dims_text, operand_precision, precision_attributes

__all__ = ["Dot"]


def _optional_dtype(x):
    return None if x is None else element_type(x)


#: HLO's ``algorithm=`` values (xla.PrecisionConfig.Algorithm, lowercased) that XLA:CPU
#: compiles and runs. It runs them all at the operands' own precision (measured: an f32
#: dot with dot_bf16_bf16_f32 keeps f32 products); GPUs honour them.
ALGORITHMS = (
    "dot_any_f8_any_f8_f32", "dot_any_f8_any_f8_f32_fast_accum", "dot_f16_f16_f16",
    "dot_f16_f16_f32", "dot_bf16_bf16_bf16", "dot_bf16_bf16_f32", "dot_bf16_bf16_f32_x3",
    "dot_bf16_bf16_f32_x6", "dot_tf32_tf32_f32", "dot_tf32_tf32_f32_x3", "dot_f32_f32_f32",
    "dot_f64_f64_f64",
)
#: Algorithms XLA knows that the backend here cannot run, with the reason.
REFUSED_ALGORITHMS = {"dot_bf16_bf16_f32_x9": "XLA:CPU crashes (segfault) compiling it"}

_F8_OUT = ("bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2")
#: What XLA:GPU runs each algorithm on: operand element type -> the result element types
#: it allows (XLA's ``algorithm_util::IsSupportedDotAlgorithmOnGpu``, for a dot of two
#: operands of one type, as hlodsl's Dot takes; the f8 ones need compute capability 8.9).
#: ``dot_f16_f16_f16`` and ``dot_bf16_bf16_bf16`` run on no GPU. XLA:GPU fails to compile
#: anything else, so staging for a GPU refuses it with a ShapeError.
GPU_ALGORITHMS: dict[str, dict[str, tuple[str, ...]]] = {
    "dot_any_f8_any_f8_f32": {"float8_e4m3fn": _F8_OUT},
    "dot_any_f8_any_f8_f32_fast_accum": {"float8_e4m3fn": _F8_OUT},
    "dot_f16_f16_f16": {},
    "dot_f16_f16_f32": {"float16": ("float16", "float32")},
    "dot_bf16_bf16_bf16": {},
    "dot_bf16_bf16_f32": {"bfloat16": ("bfloat16", "float32"), "float32": ("float32",)},
    "dot_bf16_bf16_f32_x3": {"float32": ("float32",)},
    "dot_bf16_bf16_f32_x6": {"float32": ("float32",)},
    "dot_tf32_tf32_f32": {"float32": ("float32",)},
    "dot_tf32_tf32_f32_x3": {"float32": ("float32",)},
    "dot_f32_f32_f32": {"float32": ("float32",)},
    "dot_f64_f64_f64": {"float64": ("float64",)},
}


def _gpu_algorithm_message(algorithm: str, operand: str, result: str) -> str:
    takes = GPU_ALGORITHMS[algorithm]
    what = ("; ".join(f"{t} operands to {' or '.join(outs)}" for t, outs in takes.items())
            or "nothing: XLA:GPU has no kernel for it")
    return (f"XLA:GPU cannot run algorithm={algorithm} on {operand} operands with a {result} "
            f"result; it takes {what}")


def _algorithm(x):
    if x is None:
        return None
    name = str(x).lower()
    if name in REFUSED_ALGORITHMS:
        raise ValueError(f"algorithm {name!r} is not supported here: {REFUSED_ALGORITHMS[name]}")
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; one of {', '.join(ALGORITHMS)}")
    return name


# Element types XLA:CPU refuses in a dot ("UNIMPLEMENTED: unsupported operand type S2"),
# and those it takes only without a preferred_element_type (s4/u4 to anything wider fails
# its HLO verifier: "custom element sizes on non-sub-byte types"; so does f4).
_NO_DOT = ("int2", "uint2")
_NO_WIDENING_DOT = ("int4", "uint4", "float4_e2m1fn")


def check_paired_dims(op) -> None:
    """``ValueError`` unless ``op``'s lhs and rhs name as many contracting and as many batch
    dimensions, and the lhs ones are distinct (Dot's and RaggedDot's fields)."""
    if len(op.lhs_contracting) != len(op.rhs_contracting):
        raise ValueError(f"{op!r}: lhs and rhs need as many contracting dimensions")
    if len(op.lhs_batch) != len(op.rhs_batch):
        raise ValueError(f"{op!r}: lhs and rhs need as many batch dimensions")
    check_dims(op, "lhs dimensions", op.lhs_contracting + op.lhs_batch)


@frozen
class Dot(HloOp, opcode="dot"):
    """Contract lhs and rhs over the contracting dims, batched over the batch dims.

    Result shape: batch dims, then lhs's free dims, then rhs's free dims (each
    in operand order). ``preferred_element_type`` sets the result's element type
    (e.g. f32 accumulation of bf16 inputs). ``algorithm`` names HLO's dot
    algorithm (``"dot_bf16_bf16_f32"``, ... see ``ALGORITHMS``) for floating
    operands. XLA:CPU computes at the operands' precision whatever is asked, so the
    module compiled for it drops the algorithm (its small-dot emitter would refuse it);
    ``code_hlo`` and exported programs keep it.

    >>> import hlodsl as hd
    >>> A = hd.array(np.float32([[1, 2]])); B = hd.array(np.float32([[3], [4]]))
    >>> Dot((1,), (0,), algorithm="dot_bf16_bf16_f32")(A, B)
    hlodsl.Array[float32, (1, 1)]([[11.]])
    """

    lhs_contracting: tuple[int, ...] = attrs.field(converter=dims, default=())
    rhs_contracting: tuple[int, ...] = attrs.field(converter=dims, default=())
    lhs_batch: tuple[int, ...] = attrs.field(converter=dims, default=())
    rhs_batch: tuple[int, ...] = attrs.field(converter=dims, default=())
    preferred_element_type: type[ElementType] | None = attrs.field(
        converter=_optional_dtype, default=None)
    algorithm: str | None = attrs.field(converter=_algorithm, default=None)
    precision: tuple[str, str] | None = attrs.field(converter=operand_precision, default=None)

    def __attrs_post_init__(self):
        check_paired_dims(self)
        check_dims(self, "rhs dimensions", self.rhs_contracting + self.rhs_batch)
        if self.algorithm is not None and self.precision not in (None, ("default",) * 2):
            # XLA: "must specify DEFAULT precision config when algorithm is set"
            raise ValueError(f"{self!r}: an algorithm sets the dot's precision itself; give "
                             "precision=None (or 'default') with it")

    def _free(self, t: ArrayType, used) -> tuple[int, ...]:
        return tuple(d for d in range(t.rank) if d not in used)

    def result_type(self, lhs, rhs):
        ops = (lhs, rhs)
        require(lhs.dtype is rhs.dtype, self, ops, "operands must have the same element type")
        require(issubclass(lhs.dtype, Number), self, ops, "operands must be numeric")
        require(lhs.dtype.__name__ not in _NO_DOT, self, ops,
                f"XLA:CPU has no dot of {lhs.dtype.__name__} (UNIMPLEMENTED); convert the "
                "operands to int8 first")
        require(lhs.dtype.__name__ not in _NO_WIDENING_DOT or self.preferred_element_type
                in (None, lhs.dtype), self, ops,
                f"XLA:CPU has no dot of {lhs.dtype.__name__} to another element type (its HLO "
                "verifier fails); convert the operands to "
                f"{'float16' if issubclass(lhs.dtype, Floating) else 'int8'} first")
        require(self.algorithm is None or issubclass(lhs.dtype, Floating), self, ops,
                f"algorithm={self.algorithm} needs floating-point operands")
        out = self.preferred_element_type or lhs.dtype
        if self.algorithm is not None and target_platform() == "gpu":
            allowed = GPU_ALGORITHMS[self.algorithm].get(lhs.dtype.__name__, ())
            require(out.__name__ in allowed, self, ops, _gpu_algorithm_message(
                self.algorithm, lhs.dtype.__name__, out.__name__))
        for name, t, axes in (("lhs", lhs, self.lhs_contracting + self.lhs_batch),
                              ("rhs", rhs, self.rhs_contracting + self.rhs_batch)):
            require(all(a < t.rank for a in axes), self, ops,
                    f"{name} dimension numbers {axes} out of range for rank {t.rank}")
        require(lhs.dims(self.lhs_contracting) == rhs.dims(self.rhs_contracting), self, ops,
                f"contracting dimension sizes differ: lhs {lhs.dims(self.lhs_contracting)} "
                f"vs rhs {rhs.dims(self.rhs_contracting)}")
        require(lhs.dims(self.lhs_batch) == rhs.dims(self.rhs_batch), self, ops,
                f"batch dimension sizes differ: lhs {lhs.dims(self.lhs_batch)} "
                f"vs rhs {rhs.dims(self.rhs_batch)}")
        shape = (lhs.dims(self.lhs_batch)
                 + lhs.dims(self._free(lhs, self.lhs_contracting + self.lhs_batch))
                 + rhs.dims(self._free(rhs, self.rhs_contracting + self.rhs_batch)))
        return ArrayType(out, shape)

    def stage(self, builder, args):
        pet = self.preferred_element_type
        if pet is None or pet is args[0].dtype or not issubclass(pet, ComplexFloating) \
                or target_platform() != "gpu":
            return HloOp.stage(self, builder, args)
        # NOTE: XLA:GPU has no complex GEMM to a wider type ("GEMM is not supported by
        # cublasLt and legacy cublas fallback is removed"): the operands are widened
        # first, the same products and sums in the wider type. Recorded as nodes, so
        # transformations see one Dot.
        from .convert import Convert

        rtype = result_type_of(self, tuple(a.type for a in args))
        loc = user_location()
        wide = tuple(builder.add(Convert(pet), (builder.node_of(a),), ArrayType(pet, a.shape), loc)
                     for a in args)
        return wrap_node(builder, builder.add(attrs.evolve(self, preferred_element_type=None),
                                              wide, rtype, loc))

    def attributes(self, operand_types, result_type, ctx):
        out = []
        if self.lhs_batch:
            out += [f"lhs_batch_dims={dims_text(self.lhs_batch)}",
                    f"rhs_batch_dims={dims_text(self.rhs_batch)}"]
        out += [f"lhs_contracting_dims={dims_text(self.lhs_contracting)}",
                f"rhs_contracting_dims={dims_text(self.rhs_contracting)}"]
        if self.algorithm is not None:
            # The algorithm fixes the precision: XLA requires DEFAULT beside it, whatever
            # hd.config's default_matmul_precision says (jax writes the same).
            return [*out, f"algorithm={self.algorithm}"]
        return out + precision_attributes(self.precision)

    def reference(self, lhs, rhs):
        lhs, rhs = np.asarray(lhs), np.asarray(rhs)
        pet = self.preferred_element_type
        out_dtype = lhs.dtype if pet is None else pet.np_dtype
        # Accumulate in the result type, as XLA does (einsum has no bfloat16: f32 for it).
        work = np.float32 if out_dtype.kind == "V" else out_dtype
        lhs, rhs = lhs.astype(work), rhs.astype(work)
        letters = iter(string.ascii_letters)
        lhs_sub = [next(letters) for _ in range(np.ndim(lhs))]
        rhs_sub = [next(letters) for _ in range(np.ndim(rhs))]
        for a, b in zip(self.lhs_contracting + self.lhs_batch,
                        self.rhs_contracting + self.rhs_batch):
            rhs_sub[b] = lhs_sub[a]
        batch = [lhs_sub[a] for a in self.lhs_batch]
        out = batch + [lhs_sub[d] for d in range(np.ndim(lhs))
                       if d not in self.lhs_contracting + self.lhs_batch] + \
            [rhs_sub[d] for d in range(np.ndim(rhs))
             if d not in self.rhs_contracting + self.rhs_batch]
        spec = f"{''.join(lhs_sub)},{''.join(rhs_sub)}->{''.join(out)}"
        return np.einsum(spec, lhs, rhs).astype(out_dtype)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule


def _dot_transpose(op: Dot, ct, other, mine_rank, mine_c, mine_b, other_c, other_b,
                   ct_free_mine, ct_free_other):
    """Cotangent of one Dot operand ("mine") from ct and the other operand.

    ct's dimensions are batch, lhs free, rhs free; contracting ct's "other"
    free dimensions with the other operand's free dimensions (batched over the
    batch dimensions) gives batch + my free + my contracting dims (in the order
    of the other's contracting dims sorted), which a transpose puts back.
    """
    from .convert import Convert
    from .reshape import Transpose

    other_free = tuple(d for d in range(other.ndim) if d not in other_c + other_b)
    nb = len(mine_b)
    if ct.dtype is not other.dtype:  # preferred_element_type: work in ct's type
        other = Convert(ct.dtype)(other)
    # The transposed dots keep the forward one's precision (as jax's transpose rule).
    mine_free = tuple(d for d in range(mine_rank) if d not in mine_c + mine_b)
    other_rest = sorted(other_c)  # the other's dims left in res, ascending
    order = list(mine_b) + list(mine_free) + [mine_c[other_c.index(d)] for d in other_rest]
    perm = tuple(order.index(d) for d in range(mine_rank))
    swapped = list(mine_b) + [mine_c[other_c.index(d)] for d in other_rest] + list(mine_free)
    if perm != tuple(range(mine_rank)) and swapped == list(range(mine_rank)):
        # The operands the other way round give the cotangent in its own layout: no
        # transpose after the dot (XLA:CPU folds one into the dot as a transposed
        # operand, which its library kernels do not take: a weight gradient ran on
        # Eigen's kernel at a fifth of YNNPACK's speed).
        return Dot(lhs_contracting=other_free, rhs_contracting=ct_free_other,
                   lhs_batch=other_b, rhs_batch=tuple(range(nb)),
                   precision=op.precision)(other, ct)
    res = Dot(lhs_contracting=ct_free_other, rhs_contracting=other_free,
              lhs_batch=tuple(range(nb)), rhs_batch=other_b,
              precision=op.precision)(ct, other)
    if perm != tuple(range(mine_rank)):
        res = Transpose(perm)(res)
    return res


@vjp_rule.dispatch
def dot_vjp(op: Dot, ct, out, lhs, rhs):
    from .convert import Convert

    nb = len(op.lhs_batch)
    n_lf = lhs.ndim - len(op.lhs_contracting) - nb
    ct_lhs_free = tuple(range(nb, nb + n_lf))
    ct_rhs_free = tuple(range(nb + n_lf, ct.ndim))
    ct_lhs = _dot_transpose(op, ct, rhs, lhs.ndim, op.lhs_contracting, op.lhs_batch,
                            op.rhs_contracting, op.rhs_batch, ct_lhs_free, ct_rhs_free)
    ct_rhs = _dot_transpose(op, ct, lhs, rhs.ndim, op.rhs_contracting, op.rhs_batch,
                            op.lhs_contracting, op.lhs_batch, ct_rhs_free, ct_lhs_free)
    if ct_lhs.dtype is not lhs.dtype:
        ct_lhs = Convert(lhs.dtype)(ct_lhs)
    if ct_rhs.dtype is not rhs.dtype:
        ct_rhs = Convert(rhs.dtype)(ct_rhs)
    return ct_lhs, ct_rhs


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule

from ._batch import shifted


@batch_rule.dispatch
def dot_batched(op: Dot, args: tuple, dims: tuple):
    lhs, rhs = args
    lc, rc = op.lhs_contracting, op.rhs_contracting
    lb, rb = op.lhs_batch, op.rhs_batch
    kw = {"preferred_element_type": op.preferred_element_type, "algorithm": op.algorithm,
          "precision": op.precision}
    if dims[0] is not None and dims[1] is not None:  # one more batch dimension, first
        return Dot(shifted(lc), shifted(rc), (0, *shifted(lb)), (0, *shifted(rb)), **kw)(
            lhs, rhs), 0
    if dims[0] is not None:  # a free dimension of lhs: after the batch dims in the result
        return Dot(shifted(lc), rc, shifted(lb), rb, **kw)(lhs, rhs), len(lb)
    free_lhs = lhs.ndim - len(lc) - len(lb)  # a free dimension of rhs: after lhs's
    return Dot(lc, shifted(rc), lb, shifted(rb), **kw)(lhs, rhs), len(lb) + free_lhs
