"""Collectives across replicas or partitions: all-reduce, all-gather, reduce-scatter,
all-to-all, collective-permute, collective-broadcast.

They run in programs executed on several devices (``hlodsl.replicated``).
``replica_groups`` lists the groups of device ids that communicate (empty for
all-reduce means every device). Across SPMD partitions a collective needs a
``channel_id`` and, for groups of global device ids, ``use_global_device_ids``.

AllReduce, AllGather, AllToAll and CollectiveBroadcast are variadic, as in the
StableHLO spec: ``op(x, y)`` gives ``(x', y')``, each operand treated as alone.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import add
>>> hd.replicated(lambda x: AllReduce(add)(x), 1)([np.float32([1, 2])])
[hlodsl.Array[float32, (2,)]([1., 2.])]
"""

from __future__ import annotations

from typing import Callable

import attrs
import numpy as np

from hlodsl.arrays.array import array
from hlodsl.arrays.dtypes import Inexact, int32
from hlodsl.errors import require
from hlodsl.ir.op import HloOp, check_arity, frozen
from hlodsl.ir.staging import stage_computation
from hlodsl.ir.target import target_platform
from hlodsl.arrays.types import ArrayType, TupleType

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


def _one_or_tuple(types):
    """One result per operand: an array for one operand, a tuple for several."""
    return types[0] if len(types) == 1 else TupleType(tuple(types))


class _Collective(HloOp):
    """Shared fields' checks and attributes (channel, groups, global ids)."""

    def _check_groups(self, need: bool, same_size: bool = True) -> None:
        groups = self.replica_groups
        if need and not groups:
            raise ValueError(f"{self!r}: replica_groups must be given (the result shape "
                             "depends on the group size)")
        ids = [d for g in groups for d in g]
        if len(set(ids)) != len(ids) or any(d < 0 for d in ids):
            raise ValueError(f"{self!r}: replica_groups must list distinct device ids")
        # Only where the result shape depends on the group size: XLA runs an all-reduce
        # over groups {0,1},{2}, and refuses an all-gather or reduce-scatter over them.
        if same_size and groups and len({len(g) for g in groups}) != 1:
            raise ValueError(f"{self!r}: all replica groups must have the same size")

    def _check_dimension(self, x: ArrayType, split: bool, types=None) -> None:
        types = (x,) if types is None else types
        require(0 <= self.dimension < x.rank, self, types, "dimension out of range")
        if split:  # the dimension is cut into one block per group member
            require(x.shape[self.dimension] % self.group_size == 0, self, types,
                    f"dimension {self.dimension} must divide by the group size "
                    f"{self.group_size}")

    def _check_call(self, args) -> None:
        types = tuple(a.type for a in args)
        check_arity(self, types)
        self.result_type(*types)  # the shape rule guards the whole call

    def stage(self, builder, args):
        return self._stage_each(builder, args, lambda x: HloOp.stage(self, builder, (x,)))

    def _stage_each(self, builder, args, one):
        """Stage ``one(x)`` per operand, and return one result per operand.

        NOTE: HLO's all-reduce and all-gather are variadic, but XLA's HLO-to-StableHLO
        import fails ("Failed to get shape") on a tuple-shaped collective carrying the
        ``sharding={{manual},...}`` that SPMD programs put on every instruction, and
        all-to-all (with a split dimension) and collective-broadcast take one operand.
        One instruction per operand is the same computation; XLA's combiner passes
        merge collectives where that pays.
        """
        self._check_call(args)
        outs = tuple(one(a) for a in args)
        return outs[0] if len(outs) == 1 else outs

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
    """Every device gets the reduction (by ``computation``) of all group members' operands.

    Groups may differ in size (the result shape does not depend on it). Several
    operands, of any element types, are reduced each on its own (``computation``
    staged at each one's element type): ``AllReduce(add)(x, y) -> (x', y')``.
    """

    computation: Callable = attrs.field(converter=function)
    replica_groups: tuple = attrs.field(converter=_groups, default=())
    channel_id: int | None = attrs.field(converter=optional(non_negative), default=None)
    use_global_device_ids: bool = attrs.field(converter=flag, default=False)

    def __attrs_post_init__(self):
        self._check_groups(need=False, same_size=False)

    def result_type(self, *xs):
        require(len(xs) >= 1, self, xs, "needs at least one operand")
        for x in xs:
            self._scalar_computation(x)
        return _one_or_tuple(xs)

    def attributes(self, operand_types, result_type, ctx):
        comp = self._scalar_computation(operand_types[0])
        return self._common() + [f"to_apply={ctx.computation(comp)}"]


@frozen
class AllGather(_Collective, opcode="all-gather"):
    """Concatenate the group members' operands along ``dimension``, in group order.

    Several operands (any element types and shapes) are gathered each on its own:
    ``AllGather(0, groups)(x, y) -> (x', y')``.
    """

    dimension: int = attrs.field(converter=non_negative)
    replica_groups: tuple = attrs.field(converter=_groups)
    channel_id: int | None = attrs.field(converter=optional(non_negative), default=None)
    use_global_device_ids: bool = attrs.field(converter=flag, default=False)

    def __attrs_post_init__(self):
        self._check_groups(need=True)

    def result_type(self, *xs):
        require(len(xs) >= 1, self, xs, "needs at least one operand")
        out = []
        for x in xs:
            self._check_dimension(x, split=False, types=xs)
            shape = list(x.shape)
            shape[self.dimension] *= self.group_size
            out.append(ArrayType(x.dtype, shape))
        return _one_or_tuple(out)

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
    """Split along ``dimension`` into group-size blocks, send block j to member j, concatenate.

    Several operands give a tuple, each operand exchanged on its own (XLA's
    all-to-all with a split dimension takes one operand: a RET_CHECK in
    ``HloInstruction``).
    """

    dimension: int = attrs.field(converter=non_negative)
    replica_groups: tuple = attrs.field(converter=_groups)
    channel_id: int | None = attrs.field(converter=optional(non_negative), default=None)

    use_global_device_ids = False  # not an attribute of all-to-all

    def __attrs_post_init__(self):
        self._check_groups(need=True)

    def result_type(self, *xs):
        require(len(xs) >= 1, self, xs, "needs at least one operand")
        for x in xs:
            self._check_dimension(x, split=True, types=xs)
        return _one_or_tuple(xs)

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


#: Platforms whose XLA backend lacks ``collective-broadcast`` (XLA:CPU: "not supported
#: by XLA:CPU ThunkEmitter"); there CollectiveBroadcast stages as collective-permutes.
NO_COLLECTIVE_BROADCAST = frozenset({"cpu"})


@frozen
class CollectiveBroadcast(_Collective, opcode="collective-broadcast"):
    """Every member of a group gets the operand of the group's first member.

    A device in no group gets zeros (the StableHLO spec). Several operands give a
    tuple, each operand broadcast on its own. With ``has_dynamic_root`` the last
    operand is an ``s32[N]`` (N data operands): result j comes from the group member
    at position ``root[j]`` instead of the first.

    Where XLA lacks the instruction (``NO_COLLECTIVE_BROADCAST``: CPU), and for a
    dynamic root (which HLO's instruction lacks), it stages as an exact composite
    of collective-permutes, each device selecting by its id the one it receives
    from (the others give it zeros): values only move, so every element type,
    signed zeros and NaNs included, arrives unchanged.

    >>> import numpy as np, hlodsl as hd
    >>> hd.replicated(CollectiveBroadcast(((1, 0),)), 2)([np.int64([1, 2]), np.int64([3, 4])])
    [hlodsl.Array[int64, (2,)]([3, 4]), hlodsl.Array[int64, (2,)]([3, 4])]
    """

    replica_groups: tuple = attrs.field(converter=_groups)
    channel_id: int | None = attrs.field(converter=optional(non_negative), default=None)
    has_dynamic_root: bool = attrs.field(converter=flag, default=False)

    use_global_device_ids = False

    def __attrs_post_init__(self):
        self._check_groups(need=True, same_size=False)

    def result_type(self, *xs):
        if not self.has_dynamic_root:
            require(len(xs) >= 1, self, xs, "needs at least one operand")
            return _one_or_tuple(xs)
        # (C4): the data operands, then their roots as s32[N]
        require(len(xs) >= 2, self, xs, "needs data operands and then the root operand")
        require(xs[-1] == ArrayType(int32, (len(xs) - 1,)), self, xs,
                f"the root operand must be s32[{len(xs) - 1}] (one root per data operand)")
        return _one_or_tuple(xs[:-1])

    def stage(self, builder, args):
        if self.has_dynamic_root:
            self._check_call(args)
            root, data = args[-1], args[:-1]
            outs = tuple(self._by_rounds(x, _entry(root, j)) for j, x in enumerate(data))
            return outs[0] if len(outs) == 1 else outs
        if target_platform() in NO_COLLECTIVE_BROADCAST:  # the platform staged for
            return self._stage_each(builder, args, self._by_permutes)
        return super().stage(builder, args)

    def _device_id(self):
        from .device_ids import PartitionId, ReplicaId

        # collective-permute's group mode follows channel_id as this op's does:
        # without one, groups are replica ids; with one, partition ids.
        return (ReplicaId() if self.channel_id is None else PartitionId())()

    def _by_permutes(self, x):
        """Permute k sends each group's first member to its k-th; each device keeps its one."""
        me = self._device_id()
        size = max(len(g) for g in self.replica_groups)
        pairs = [tuple((g[0], g[k]) for g in self.replica_groups if k < len(g))
                 for k in range(size)]
        # Permute 0 sends each source to itself: sources get x, devices in no group zeros.
        out = CollectivePermute(pairs[0], self.channel_id)(x)
        for k_pairs in pairs[1:]:
            received = CollectivePermute(k_pairs, self.channel_id)(x)
            out = _select(_is_one_of(me, [t for _, t in k_pairs]), received, out)
        return out

    def _by_rounds(self, x, root):
        """Round k sends member (i + k) mod m of each group to member i; each device keeps
        round (root - i) mod m, whose sender is the member at position root."""
        from .binary import Add, Remainder, Subtract

        me, groups = self._device_id(), self.replica_groups
        position, size = _s32(0), _s32(1)  # devices in no group: round 0, which gives zeros
        for g in groups:
            for i, d in enumerate(g):
                mine = _is_one_of(me, [d])
                position = _select(mine, _s32(i), position)
                size = _select(mine, _s32(len(g)), size)
        k = Remainder()(Add()(Subtract()(root, position), size), size)
        out = None
        for kk in range(max(len(g) for g in groups)):
            pairs = tuple((g[(i + kk) % len(g)], g[i]) for g in groups if kk < len(g)
                          for i in range(len(g)))
            received = CollectivePermute(pairs, self.channel_id)(x)
            out = received if out is None else _select(_is_one_of(k, [kk], _s32), received, out)
        return out

    def attributes(self, operand_types, result_type, ctx):
        return self._common()


def _u32(value: int):
    return array(np.uint32(value))


def _s32(value: int):
    return array(np.int32(value))


def _is_one_of(scalar, values, constant=_u32):
    """pred[]: whether ``scalar`` equals one of ``values``."""
    from .binary import Or
    from .compare import Compare

    out = None
    for v in values:
        eq = Compare("EQ")(scalar, constant(v))
        out = eq if out is None else Or()(out, eq)
    return out


def _select(p, on_true, on_false):
    from .compare import Select

    return Select()(p, on_true, on_false)


def _entry(vector, j: int):
    """``vector[j]`` as a scalar."""
    from .reshape import Reshape
    from .slice import Slice

    return Reshape(())(Slice((j,), (j + 1,), (1,))(vector))


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------
# The cotangent of a sum all-reduce is the sum all-reduce of the cotangent (every
# device's input reaches every device's output once). The variadic collectives treat
# each operand alone, so their rules apply per operand.

from hlodsl.ir.rules import register_rule, vjp_rule  # noqa: E402


def _each(ct) -> tuple:
    return ct if isinstance(ct, tuple) else (ct,)


@vjp_rule.dispatch
def all_reduce_vjp(op: AllReduce, ct, out, *xs):
    from .reduce import reduction_kind

    if reduction_kind(op, xs[0].dtype) != "add":
        raise NotImplementedError(f"no derivative rule for {op!r}: only a sum all-reduce "
                                  "is differentiated")
    if len(xs) == 1:
        return (op(ct),)
    # Integer operands of a variadic all-reduce get no cotangent (as Sort's do).
    keep = [i for i, x in enumerate(xs) if issubclass(x.dtype, Inexact)]
    summed = _each(op(*(ct[i] for i in keep))) if keep else ()
    out = [None] * len(xs)
    for i, c in zip(keep, summed):
        out[i] = c
    return tuple(out)


# All-gather and sum reduce-scatter over the same groups are each other's transposes:
# the block a device contributed comes back summed over every device that read it.
# A permutation's cotangent travels the inverse pairs.

def _add(a, b):
    from .binary import Add

    return Add()(a, b)


@vjp_rule.dispatch
def all_gather_vjp(op: AllGather, ct, out, *xs):
    scatter = ReduceScatter(_add, op.dimension, op.replica_groups, op.channel_id,
                            op.use_global_device_ids)
    if len(xs) == 1:
        return (scatter(ct),)
    return tuple(scatter(c) if issubclass(x.dtype, Inexact) else None for x, c in zip(xs, ct))


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


from hlodsl.ir.rules import batch_rule  # noqa: E402

from ._batch import all_batched  # noqa: E402


@batch_rule.dispatch
def collective_batched(op: _Collective, args: tuple, dims: tuple):
    # Every element crosses devices on its own: a leading dimension changes nothing
    # but the dimension numbers after it. Unbatched operands of a variadic collective
    # get the batch dimension too (one call carries all operands).
    if hasattr(op, "dimension"):
        op = attrs.evolve(op, dimension=op.dimension + 1)
    out = op(*(args if len(args) == 1 else all_batched(args, dims)))
    return out, (tuple(0 for _ in out) if isinstance(out, tuple) else 0)


@batch_rule.dispatch
def permute_batched(op: CollectivePermute, args: tuple, dims: tuple):
    return op(*args), 0
