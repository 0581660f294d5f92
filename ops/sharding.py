"""Sharding annotations for XLA's SPMD partitioner (Shardy).

These are not computations: each is an identity (or a change of view between
the global array and one device's shard) that carries a layout for the
partitioner, in the form Shardy reads from HLO text (custom calls with
``xla.sdy.*`` frontend attributes). ``hd.compile(..., in_shardings=...)``,
``hd.with_sharding_constraint`` and ``hd.shard_map`` stage them; they are
public so that users can see and extend what those stage.

- ``ShardingConstraint(s)``: the value, laid out as ``s`` from here on.
- ``ResultSharding(s)``: the layout of a program's result (on its root).
- ``GlobalToLocal(shardings, axes)`` / ``LocalToGlobal(shardings, axes)``: the
  entry into and exit from a region of per-device code (``shard_map``) that is
  manual over the mesh ``axes``.
- ``ManualComputation(body)``: that per-device code, as a ``call`` that XLA
  must not inline before partitioning.

>>> from hlodsl.arrays.sharding import make_mesh, NamedSharding, P
>>> from hlodsl.arrays.types import ArrayType
>>> import numpy as np
>>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))
>>> ShardingConstraint(s).result_type(ArrayType(np.float32, (4, 2)))
ArrayType(float32, (4, 2))
"""

from __future__ import annotations

from typing import Callable

import attrs

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.sharding import Mesh, NamedSharding, manual_mesh
from hlodsl.ir.staging import stage_computation
from hlodsl.arrays.types import ArrayType, TupleType

from ._checks import function

__all__ = ["ShardingConstraint", "ResultSharding", "GlobalToLocal", "LocalToGlobal",
           "ManualComputation"]


def _sharding(value) -> NamedSharding:
    if not isinstance(value, NamedSharding):
        raise TypeError(f"expected a hd.NamedSharding, got {value!r} ({type(value).__name__})")
    return value


def _shardings(value) -> tuple[NamedSharding, ...]:
    if isinstance(value, NamedSharding):
        return (value,)
    return tuple(_sharding(v) for v in value)


def _mesh(value) -> Mesh:
    if not isinstance(value, Mesh):
        raise TypeError(f"expected a hd.Mesh, got {value!r} ({type(value).__name__})")
    return value


def _axes(value) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(a, str) for a in value):
        raise TypeError(f"expected a tuple of mesh axis names, got {value!r}")
    return tuple(value)


def _per_value(shardings, types, ctx) -> str:
    """``#sdy.sharding_per_value<[...]>`` for ``shardings`` of arrays of ``types``,
    escaped for a frontend attribute string."""
    parts = []
    for s, t in zip(shardings, types):
        name = ctx.mesh_name(s.mesh)
        parts.append(s.sdy(t.rank, name)[len("#sdy.sharding"):])
    return ("#sdy.sharding_per_value<[" + ", ".join(parts) + "]>").replace('"', '\\"')


def _manual_axes(axes) -> str:
    return ("#sdy<manual_axes{" + ", ".join(f'"{a}"' for a in axes) + "}>").replace('"', '\\"')


class _Annotation(HloOp):
    """An annotation emitted as a ``custom-call`` (or ``call``) of a fixed target;
    registered under its own name, as XLA has no opcode for it."""

    hlo_opcode = "custom-call"
    #: Part of a manual region: meaningful only inside a staged program, in order.
    manual_region = False

    def __call__(self, *args):
        from hlodsl.ir.graph import current_builder

        if self.manual_region and current_builder() is None:
            raise TypeError(
                f"{type(self).__name__} marks a shard_map region and runs only inside a "
                "staged program (hd.compile), as GlobalToLocal -> ManualComputation -> "
                "LocalToGlobal; hd.shard_map stages all three")
        return super().__call__(*args)

    def emit(self, operands, operand_types, result_type, ctx) -> str:
        text = f"{self.hlo_opcode}({', '.join(operands)})"
        for attr in self.attributes(operand_types, result_type, ctx):
            text += ", " + attr
        return text


def _check_fits(op, s: NamedSharding, t, types) -> None:
    require(isinstance(t, ArrayType), op, types, "annotates arrays only")
    try:
        s.check(t.shape, repr(op))
    except ValueError as e:
        require(False, op, types, str(e).split(": ", 1)[-1])


@frozen
class ShardingConstraint(_Annotation, opcode="sharding-constraint"):
    """``x`` itself, laid out as ``sharding`` (the partitioner moves data if needed)."""

    sharding: NamedSharding = attrs.field(converter=_sharding)

    def result_type(self, x):
        _check_fits(self, self.sharding, x, (x,))
        return x

    def attributes(self, operand_types, result_type, ctx):
        return ['custom_call_target="Sharding"',
                f'frontend_attributes={{xla.sdy.sharding="'
                f'{_per_value([self.sharding], [result_type], ctx)}"}}']


@frozen
class ResultSharding(_Annotation, opcode="result-sharding"):
    """``x`` itself, as a program result laid out as ``sharding``."""

    sharding: NamedSharding = attrs.field(converter=_sharding)

    @property
    def interned(self) -> bool:
        return False  # a side-effecting marker: one per result

    def result_type(self, x):
        _check_fits(self, self.sharding, x, (x,))
        return x

    def attributes(self, operand_types, result_type, ctx):
        return ['custom_call_target="xla.sdy.FuncResultSharding"',
                "custom_call_has_side_effect=true",
                f'frontend_attributes={{xla.sdy.sharding="'
                f'{_per_value([self.sharding], [result_type], ctx)}"}}']


def _tuple_or_single(types):
    return types[0] if len(types) == 1 else TupleType(tuple(types))


def _one_per_operand(op, types) -> None:
    """The manual-region boundaries take one sharding per operand."""
    require(len(types) == len(op.shardings), op, types,
            f"has {len(op.shardings)} shardings for {len(types)} operands")


@frozen
class GlobalToLocal(_Annotation, opcode="global-to-local"):
    """Global arrays laid out as ``shardings`` -> the shard each device holds (manual
    over the mesh ``axes``); several operands give a tuple."""

    manual_region = True

    shardings: tuple[NamedSharding, ...] = attrs.field(converter=_shardings)
    axes: tuple[str, ...] = attrs.field(converter=_axes)

    @property
    def interned(self) -> bool:
        return False

    def result_type(self, *types):
        _one_per_operand(self, types)
        for s, t in zip(self.shardings, types):
            _check_fits(self, s, t, types)
        return _tuple_or_single([ArrayType(t.dtype, s.shard_shape(t.shape))
                                 for s, t in zip(self.shardings, types)])

    def attributes(self, operand_types, result_type, ctx):
        return ['custom_call_target="xla.sdy.GlobalToLocalShape"',
                "custom_call_has_side_effect=true",
                f'frontend_attributes={{xla.sdy.in_shardings="'
                f'{_per_value(self.shardings, operand_types, ctx)}",'
                f'xla.sdy.manual_axes="{_manual_axes(self.axes)}"}}']


@frozen
class LocalToGlobal(_Annotation, opcode="local-to-global"):
    """Per-device shards -> the global arrays they make up when laid out as
    ``shardings`` (manual over the mesh ``axes``); several operands give a tuple."""

    manual_region = True

    shardings: tuple[NamedSharding, ...] = attrs.field(converter=_shardings)
    axes: tuple[str, ...] = attrs.field(converter=_axes)

    @property
    def interned(self) -> bool:
        return False

    def result_type(self, *types):
        _one_per_operand(self, types)
        out = []
        for s, t in zip(self.shardings, types):
            require(isinstance(t, ArrayType), self, types, "takes arrays only")
            require(len(s.spec) <= t.rank, self, types,
                    f"{s.spec!r} names more dimensions than the shard {t} has")
            out.append(ArrayType(t.dtype, tuple(n * s.parts(d) for d, n in enumerate(t.shape))))
        return _tuple_or_single(out)

    def attributes(self, operand_types, result_type, ctx):
        results = result_type.elements if isinstance(result_type, TupleType) else (result_type,)
        return ['custom_call_target="xla.sdy.LocalToGlobalShape"',
                "custom_call_has_side_effect=true",
                f'frontend_attributes={{xla.sdy.manual_axes="{_manual_axes(self.axes)}",'
                f'xla.sdy.out_shardings="{_per_value(self.shardings, results, ctx)}"}}']


#: The name prefix Shardy's import looks for on a manual region's body.
MANUAL_BODY = "xla.sdy.manual_computation_body"


@frozen
class ManualComputation(_Annotation, opcode="manual-computation"):
    """``body(*shards)`` run by each device on its own shards: a ``call`` kept
    out of line (``inlineable="false"``) until the partitioner has seen it."""

    manual_region = True

    hlo_opcode = "call"

    body: Callable = attrs.field(converter=function)
    mesh: Mesh = attrs.field(converter=_mesh)

    @property
    def interned(self) -> bool:
        return False

    def result_type(self, *types):
        with manual_mesh(self.mesh):  # psum & co. in the body name this mesh's axes
            return stage_computation(self.body, types).result_type

    def attributes(self, operand_types, result_type, ctx):
        with manual_mesh(self.mesh):
            comp = stage_computation(self.body, tuple(operand_types))
        return [f"to_apply={ctx.computation(comp, MANUAL_BODY)}",
                'frontend_attributes={inlineable="false"}']


# -- derivatives and batching (hlodsl.ir.rules, used by hlodsl.transforms) --------------------
# A layout annotation is the identity on values: its cotangent and tangent take the
# same layout. The manual region's ops are differentiated as a whole by
# hd.shard_map (its reverse is another shard_map); applied by hand they say so.
# Under vmap a layout gains an unsplit leading (batch) dimension.

from hlodsl.ir.rules import batch_rule, jvp_rule, not_batchable, register_rule, vjp_rule  # noqa: E402

from ._batch import move_to_front  # noqa: E402


@vjp_rule.dispatch
def constraint_vjp(op: ShardingConstraint, ct, out, x):
    return (op(ct),)


@jvp_rule.dispatch
def constraint_jvp(op: ShardingConstraint, tangents: tuple, out, x):
    return None if tangents[0] is None else op(tangents[0])


@vjp_rule.dispatch
def result_vjp(op: ResultSharding, ct, out, x):
    return (ct,)


@jvp_rule.dispatch
def result_jvp(op: ResultSharding, tangents: tuple, out, x):
    return tangents[0]


def _manual_rule(op, *rest):
    raise NotImplementedError(
        f"no derivative rule for {type(op).__name__} alone: differentiate through "
        "hd.shard_map, whose reverse is another shard_map (forward mode is not supported)")


for _cls in (GlobalToLocal, LocalToGlobal, ManualComputation):
    register_rule(vjp_rule, _cls, _manual_rule)
    register_rule(jvp_rule, _cls, _manual_rule)


def _batched_sharding(s: NamedSharding) -> NamedSharding:
    from hlodsl.arrays.sharding import PartitionSpec

    return NamedSharding(s.mesh, PartitionSpec(None, *s.spec))


@batch_rule.dispatch
def constraint_batched(op: ShardingConstraint, args: tuple, dims: tuple):
    (x,), (d,) = args, dims
    if d is None:
        return op(x), None
    return type(op)(_batched_sharding(op.sharding))(move_to_front(x, d)), 0


@batch_rule.dispatch
def result_batched(op: ResultSharding, args: tuple, dims: tuple):
    (x,), (d,) = args, dims
    if d is None:
        return op(x), None
    return type(op)(_batched_sharding(op.sharding))(move_to_front(x, d)), 0


not_batchable(GlobalToLocal, LocalToGlobal, ManualComputation, reason=(
    "a shard_map region cuts arrays by mesh axes; vmap the function given to "
    "hd.shard_map instead"))
