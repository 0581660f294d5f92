"""HostCallback: a Python function called on the host from inside a compiled program.

XLA runs it as a ``custom-call`` of jaxlib's Python-callback target
(``hlodsl.runtime.callback_target``: one for CPU, one for GPU, chosen by the
platform the module is printed for), whose ``index`` attribute names the
function among those the module's executable holds (``ModuleText``). The
function gets the operands as numpy arrays and returns one array per declared
result type. ``ordered=True``: the first operand and the first result are
tokens, so ordered calls run in the order their tokens chain them.
``has_side_effect``: never dropped when unused, nor merged with an identical
call. Called eagerly, the function simply runs.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.arrays.types import ArrayType
>>> op = HostCallback(lambda x: [np.cumsum(x)], (ArrayType(np.float32, (3,)),))
>>> op(hd.array(np.float32([1, 2, 3])))
(hlodsl.Array[float32, (3,)]([1., 3., 6.]),)
>>> hd.compile(lambda x: op(x)[0] * 2)(hd.array(np.float32([1, 2, 3])))
hlodsl.Array[float32, (3,)]([ 2.,  6., 12.])
"""

from __future__ import annotations

from typing import Callable

import attrs
import numpy as np

from hlodsl.arrays.array import Array, array
from hlodsl.arrays.types import ArrayType, TokenType, TupleType
from hlodsl.context import STATE
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen

from ._checks import flag, function

__all__ = ["HostCallback", "callable_name"]

VMAP_METHODS = (None, "sequential", "sequential_unrolled", "expand_dims", "broadcast_all")


def _types(value) -> tuple:
    value = tuple(value)
    for t in value:
        if not isinstance(t, ArrayType):
            raise TypeError(f"out_types must be ArrayTypes, got {t!r} ({type(t).__name__})")
    return value


def _vmap_method(value):
    if value not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be one of {VMAP_METHODS}, got {value!r}")
    return value


def callable_name(fn) -> str:
    """The name messages give a callback (a wrapper says whose it is: ``host_name``)."""
    return (getattr(fn, "host_name", None) or getattr(fn, "__qualname__", None)
            or getattr(fn, "__name__", None) or repr(fn))


@frozen
class HostCallback(HloOp, opcode="host-callback"):
    """``callback(*operands)`` run in Python on the host; returns a tuple of ``out_types``."""

    callback: Callable = attrs.field(converter=function)
    out_types: tuple[ArrayType, ...] = attrs.field(converter=_types, default=())
    ordered: bool = attrs.field(converter=flag, default=False)
    has_side_effect: bool = attrs.field(converter=flag, default=False)
    vmap_method: str | None = attrs.field(converter=_vmap_method, default=None)

    @property
    def interned(self) -> bool:
        return not self.has_side_effect

    def __call__(self, *args):
        if STATE.recomputing and self.has_side_effect and not self.out_types:
            return tuple(args[:1]) if self.ordered else ()  # it ran in the forward pass
        # Eager: run it here and now; under an eager derivative too, unless it has results
        # (then it is recorded, as a compiled one-op module, for its rule to refuse).
        if not STATE.builders and (not STATE.traces or not self.out_types):
            return self._eager(args)
        return HloOp.__call__(self, *args)

    def result_type(self, *types):
        arrays = types[1:] if self.ordered else types
        if self.ordered:
            require(bool(types) and isinstance(types[0], TokenType), self, types,
                    "an ordered callback takes a token first (the effect it comes after)")
        for i, t in enumerate(arrays):
            require(isinstance(t, ArrayType), self, types,
                    f"operand {i + self.ordered} is {t}: a callback takes arrays")
        return TupleType((TokenType(),) * self.ordered + self.out_types)

    def emit(self, operands, operand_types, result_type, ctx) -> str:
        from hlodsl.runtime import callback_target

        name = callable_name(self.callback)
        index = ctx.host_callback(self, self.run, name)
        text = (f'custom-call({", ".join(operands)}), '
                f'custom_call_target="{callback_target(ctx.target_platform())}"')
        if self.has_side_effect:
            text += ", custom_call_has_side_effect=true"
        # The function's identity is part of the text: modules cached by their text
        # (eager control flow) never run another function's executable.
        label = f"{name} {id(self.callback):#x}".replace("\\", "/").replace('"', "'")
        return (text + f", api_version=API_VERSION_TYPED_FFI, backend_config={{index = {index}"
                f' : ui64}}, frontend_attributes={{hlodsl_host_callback="{label}"}}')

    def run(self, *args) -> tuple:
        """The host side, as the program calls it: numpy arrays in (a None first for the
        token of an ordered call), the declared results out, checked."""
        if self.ordered:
            return (None, *self.results(self.callback(*args[1:])))
        return self.results(self.callback(*args))

    def results(self, out) -> tuple:
        """``out`` (the callback's return) as one numpy array per ``out_types``, or an error."""
        name = callable_name(self.callback)
        if isinstance(out, (np.ndarray, np.generic)) or not isinstance(out, (tuple, list)):
            out = (out,) if self.out_types or out is not None else ()
        if len(out) != len(self.out_types):
            raise TypeError(f"the Python function {name} returned {len(out)} values where "
                            f"{len(self.out_types)} were declared "
                            f"({', '.join(map(str, self.out_types)) or 'none'})")
        return tuple(_result(name, i, v, t) for i, (v, t) in enumerate(zip(out, self.out_types)))

    def _eager(self, args) -> tuple:
        if self.ordered:
            raise TypeError(f"{self!r} takes a token first, and tokens exist only inside "
                            "staged programs: call it inside a function given to hd.compile")
        for i, a in enumerate(args):
            if not isinstance(a, Array):
                raise TypeError(f"{self!r}: operand {i} is a {type(a).__name__}, not an "
                                "hlodsl Array")
        return tuple(array(v) for v in self.results(self.callback(*map(np.asarray, args))))


def _result(name: str, i: int, value, t: ArrayType) -> np.ndarray:
    want = t.dtype.np_dtype
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype != want:
        raise TypeError(f"the Python function {name} returned {value.dtype}{list(value.shape)} "
                        f"as result {i}, declared {t} (the element types must match)")
    out = np.asarray(value, dtype=want)
    if out.shape != t.shape:
        raise ValueError(f"the Python function {name} returned shape {out.shape} as result "
                         f"{i}, declared {t}")
    return out


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ----------------------------
# A Python function is opaque: its results have no derivative hlodsl can know. One
# without results (a print) has nothing to differentiate.

from hlodsl.ir.rules import NotBatchableError, batch_rule, vjp_rule  # noqa: E402


@vjp_rule.dispatch
def host_callback_vjp(op: HostCallback, ct, out, *args):
    if not op.out_types:
        return (None,) * len(args)
    raise NotImplementedError(
        f"the Python function {callable_name(op.callback)} has no derivative (it runs "
        "outside the program hlodsl differentiates); wrap the function that calls it in "
        "hlodsl.custom_vjp (or custom_jvp) and give its derivative there")


# -- batching (vmap) ---------------------------------------------------------------------
# 'sequential' (what io_callback and debug_print do): one call of the function per
# example, in order, in one host callback. 'expand_dims' / 'broadcast_all': one call on
# the whole batch, unbatched operands with a leading axis of 1 / of the batch size.


@attrs.frozen
class Sequential:
    """``callback`` called once per example: batched operands sliced, results stacked."""

    callback: Callable
    batched: tuple[bool, ...]
    size: int

    def __call__(self, *args):
        outs = [self.callback(*(a[k] if b else a for a, b in zip(args, self.batched)))
                for k in range(self.size)]
        if not outs or outs[0] is None:
            return None
        return tuple(np.stack(rs) for rs in zip(*(_as_tuple(o) for o in outs)))

    @property
    def host_name(self) -> str:
        return f"{callable_name(self.callback)} (per example)"


def _as_tuple(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


@batch_rule.dispatch
def host_callback_batched(op: HostCallback, args: tuple, dims: tuple):
    from hlodsl import ops

    size = next(a.shape[0] for a, d in zip(args, dims) if d is not None)
    method = op.vmap_method
    if method is None and not op.has_side_effect:
        raise NotBatchableError(
            f"vmap: the Python function {callable_name(op.callback)} needs a vmap_method "
            "('sequential': once per example; 'expand_dims' or 'broadcast_all': once on "
            "the batch): hlodsl cannot know how the Python function treats a batch axis")
    token, arrays = (args[:1], args[1:]) if op.ordered else ((), args)
    batched = tuple(d is not None for d in dims[len(token):])
    out_types = tuple(ArrayType(t.dtype, (size, *t.shape)) for t in op.out_types)
    if method in (None, "sequential", "sequential_unrolled"):
        callback = Sequential(op.callback, batched, size)
    else:
        callback = op.callback
        arrays = tuple(a if b else (ops.Reshape((1, *a.shape)) if method == "expand_dims" else
                                    ops.Broadcast((size, *a.shape),
                                                  tuple(range(1, a.ndim + 1))))(a)
                       for a, b in zip(arrays, batched))
    new = attrs.evolve(op, callback=callback, out_types=out_types)
    out = new(*token, *arrays)
    return out, (None,) * len(token) + (0,) * len(out_types)
