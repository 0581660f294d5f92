"""Collectives across replicas or partitions: all-reduce, all-gather, reduce-scatter,
all-to-all, collective-permute, collective-broadcast.

They run in programs executed on several devices (``hlodsl.replicated``).
``replica_groups`` lists the groups of device ids that communicate (empty for
all-reduce means every device). Across SPMD partitions a collective needs a
``channel_id`` and, for groups of global device ids, ``use_global_device_ids``.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import add
>>> hd.replicated(lambda x: AllReduce(add)(x), 1)([np.float32([1, 2])])
[hlodsl.Array[float32, (2,)]([1., 2.])]
"""

from __future__ import annotations

from typing import Callable

import attrs

from hlodsl.errors import require
from hlodsl.op import HloOp, frozen
from hlodsl.staging import stage_computation
from hlodsl.types import ArrayType

from ._checks import flag, function, integer, non_negative, optional

__all__ = ["AllReduce", "AllGather", "ReduceScatter", "AllToAll", "CollectivePermute",
           "CollectiveBroadcast"]


def _sequence(value, what: str, whole) -> tuple:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"expected a sequence of {what}, got {whole!r}" +
                        ("" if value is whole else f": {value!r} ({type(value).__name__}) "
                         "is not a sequence"))
    return tuple(value)


def _groups(value) -> tuple[tuple[int, ...], ...]:
    """Converter: groups of device ids, such as ``((0, 1), (2, 3))``."""
    what = "groups of device ids (tuples of ints), such as ((0, 1), (2, 3))"
    return tuple(tuple(integer(d) for d in _sequence(g, what, value))
                 for g in _sequence(value, what, value))


def _pairs(value) -> tuple[tuple[int, int], ...]:
    """Converter: (source, target) pairs of device ids."""
    what = "(source, target) pairs of device ids (ints)"
    pairs = tuple(_sequence(p, what, value) for p in _sequence(value, what, value))
    if any(len(p) != 2 for p in pairs):
        raise ValueError(f"expected a sequence of {what}, got {value!r}")
    return tuple((integer(s), integer(t)) for s, t in pairs)


def _groups_text(groups) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"


class _Collective(HloOp):
    """Shared fields' checks and attributes (channel, groups, global ids)."""

    def _check_groups(self, need: bool) -> None:
        groups = self.replica_groups
        if need and not groups:
            raise ValueError(f"{self!r}: replica_groups must be given (the result shape "
                             "depends on the group size)")
        ids = [d for g in groups for d in g]
        if len(set(ids)) != len(ids) or any(d < 0 for d in ids):
            raise ValueError(f"{self!r}: replica_groups must list distinct device ids")
        if groups and len({len(g) for g in groups}) != 1:
            raise ValueError(f"{self!r}: all replica groups must have the same size")

    def _check_dimension(self, x: ArrayType, split: bool) -> None:
        require(0 <= self.dimension < x.rank, self, (x,), "dimension out of range")
        if split:  # the dimension is cut into one block per group member
            require(x.shape[self.dimension] % self.group_size == 0, self, (x,),
                    f"dimension {self.dimension} must divide by the group size "
                    f"{self.group_size}")

    @property
    def group_size(self) -> int:
        return len(self.replica_groups[0])

    def _common(self) -> list[str]:
        out = [] if self.channel_id is None else [f"channel_id={self.channel_id}"]
        out.append(f"replica_groups={_groups_text(self.replica_groups)}")
        if self.use_global_device_ids:
            out.append("use_global_device_ids=true")
        return out

    def _scalar_computation(self, t: ArrayType):
        scalar = ArrayType(t.dtype, ())
        comp = stage_computation(self.computation, (scalar, scalar))
        require(comp.result_type == scalar, self, (t,),
                f"the reduction must return {scalar}, it returns {comp.result_type}")
        return comp


@frozen
class AllReduce(_Collective, opcode="all-reduce"):
    """Every device gets the reduction (by ``computation``) of all group members' operands."""

    computation: Callable = attrs.field(converter=function)
    replica_groups: tuple = attrs.field(converter=_groups, default=())
    channel_id: int | None = attrs.field(converter=optional(non_negative), default=None)
    use_global_device_ids: bool = attrs.field(converter=flag, default=False)

    def __attrs_post_init__(self):
        self._check_groups(need=False)

    def result_type(self, x):
        self._scalar_computation(x)
        return x

    def attributes(self, operand_types, result_type, ctx):
        comp = self._scalar_computation(operand_types[0])
        return self._common() + [f"to_apply={ctx.computation(comp)}"]


@frozen
class AllGather(_Collective, opcode="all-gather"):
    """Concatenate the group members' operands along ``dimension``, in group order."""

    dimension: int = attrs.field(converter=non_negative)
    replica_groups: tuple = attrs.field(converter=_groups)
    channel_id: int | None = attrs.field(converter=optional(non_negative), default=None)
    use_global_device_ids: bool = attrs.field(converter=flag, default=False)

    def __attrs_post_init__(self):
        self._check_groups(need=True)

    def result_type(self, x):
        self._check_dimension(x, split=False)
        shape = list(x.shape)
        shape[self.dimension] *= self.group_size
        return ArrayType(x.dtype, shape)

    def attributes(self, operand_types, result_type, ctx):
        return self._common() + [f"dimensions={{{self.dimension}}}"]


@frozen
class ReduceScatter(_Collective, opcode="reduce-scatter"):
    """All-reduce, then device i of a group keeps the i-th block along ``dimension``."""

    computation: Callable = attrs.field(converter=function)
    dimension: int = attrs.field(converter=non_negative)
    replica_groups: tuple = attrs.field(converter=_groups)
    channel_id: int | None = attrs.field(converter=optional(non_negative), default=None)
    use_global_device_ids: bool = attrs.field(converter=flag, default=False)

    def __attrs_post_init__(self):
        self._check_groups(need=True)

    def result_type(self, x):
        self._check_dimension(x, split=True)
        self._scalar_computation(x)
        shape = list(x.shape)
        shape[self.dimension] //= self.group_size
        return ArrayType(x.dtype, shape)

    def attributes(self, operand_types, result_type, ctx):
        comp = self._scalar_computation(operand_types[0])
        return self._common() + [f"dimensions={{{self.dimension}}}",
                                 f"to_apply={ctx.computation(comp)}"]


@frozen
class AllToAll(_Collective, opcode="all-to-all"):
    """Split along ``dimension`` into group-size blocks, send block j to member j, concatenate."""

    dimension: int = attrs.field(converter=non_negative)
    replica_groups: tuple = attrs.field(converter=_groups)
    channel_id: int | None = attrs.field(converter=optional(non_negative), default=None)

    use_global_device_ids = False  # not an attribute of all-to-all

    def __attrs_post_init__(self):
        self._check_groups(need=True)

    def result_type(self, x):
        self._check_dimension(x, split=True)
        return x

    def attributes(self, operand_types, result_type, ctx):
        return self._common() + [f"dimensions={{{self.dimension}}}"]


@frozen
class CollectivePermute(HloOp, opcode="collective-permute"):
    """Device ``t`` receives the operand of device ``s`` for each pair; others get zeros."""

    source_target_pairs: tuple = attrs.field(converter=_pairs)
    channel_id: int | None = attrs.field(converter=optional(non_negative), default=None)

    def __attrs_post_init__(self):
        sources = [s for s, _ in self.source_target_pairs]
        targets = [t for _, t in self.source_target_pairs]
        if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
            raise ValueError(f"{self!r}: each device may send once and receive once")

    def result_type(self, x):
        return x

    def attributes(self, operand_types, result_type, ctx):
        pairs = "{" + ",".join(f"{{{s},{t}}}" for s, t in self.source_target_pairs) + "}"
        channel = [] if self.channel_id is None else [f"channel_id={self.channel_id}"]
        return channel + [f"source_target_pairs={pairs}"]


@frozen
class CollectiveBroadcast(_Collective, opcode="collective-broadcast"):
    """Every member of a group gets the operand of the group's first member.

    XLA's CPU backend does not implement it (``UNIMPLEMENTED ... ThunkEmitter``);
    it compiles for GPU.
    """

    replica_groups: tuple = attrs.field(converter=_groups)
    channel_id: int | None = attrs.field(converter=optional(non_negative), default=None)

    use_global_device_ids = False

    def __attrs_post_init__(self):
        self._check_groups(need=True)

    def result_type(self, x):
        return x

    def attributes(self, operand_types, result_type, ctx):
        return self._common()


# -- derivatives (hlodsl.rules, used by hlodsl.transforms) ------------------------------------------------
# The cotangent of a sum all-reduce is the sum all-reduce of the cotangent (every
# device's input reaches every device's output once).

from hlodsl.rules import register_rule, vjp_rule  # noqa: E402


@vjp_rule.dispatch
def all_reduce_vjp(op: AllReduce, ct, out, x):
    from .reduce import reduction_kind

    if reduction_kind(op, x.dtype) != "add":
        raise NotImplementedError(f"no derivative rule for {op!r}: only a sum all-reduce "
                                  "is differentiated")
    return (op(ct),)


# All-gather and sum reduce-scatter over the same groups are each other's transposes:
# the block a device contributed comes back summed over every device that read it.
# A permutation's cotangent travels the inverse pairs.

def _add(a, b):
    from .binary import Add

    return Add()(a, b)


@vjp_rule.dispatch
def all_gather_vjp(op: AllGather, ct, out, x):
    return (ReduceScatter(_add, op.dimension, op.replica_groups, op.channel_id,
                          op.use_global_device_ids)(ct),)


@vjp_rule.dispatch
def reduce_scatter_vjp(op: ReduceScatter, ct, out, x):
    from .reduce import reduction_kind

    if reduction_kind(op, x.dtype) != "add":
        raise NotImplementedError(f"no derivative rule for {op!r}: only a sum reduce-scatter "
                                  "is differentiated")
    return (AllGather(op.dimension, op.replica_groups, op.channel_id,
                      op.use_global_device_ids)(ct),)


@vjp_rule.dispatch
def collective_permute_vjp(op: CollectivePermute, ct, out, x):
    return (CollectivePermute(tuple((t, s) for s, t in op.source_target_pairs),
                              op.channel_id)(ct),)


def _no_rule(op, ct, out, *args):
    raise NotImplementedError(
        f"no derivative rule for {op!r}: of the collectives, sum AllReduce, AllGather, sum "
        "ReduceScatter and CollectivePermute are differentiated (wrap others in "
        "hlodsl.custom_vjp)")


for _cls in (AllToAll, CollectiveBroadcast):
    register_rule(vjp_rule, _cls, lambda op, ct, out, *args: _no_rule(op, ct, out, *args))


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.rules import batch_rule  # noqa: E402


@batch_rule.dispatch
def collective_batched(op: _Collective, args: tuple, dims: tuple):
    # Every element crosses devices on its own: a leading dimension changes nothing
    # but the dimension numbers after it.
    if hasattr(op, "dimension"):
        op = attrs.evolve(op, dimension=op.dimension + 1)
    return op(*args), 0


@batch_rule.dispatch
def permute_batched(op: CollectivePermute, args: tuple, dims: tuple):
    return op(*args), 0
