"""ReplicaId and PartitionId: which device of a multi-device program is running.

>>> import hlodsl as hd
>>> hd.replicated(lambda: ReplicaId()(), 1)()
[hlodsl.Array[uint32, ()](0)]
"""

from __future__ import annotations

from hlodsl.arrays.dtypes import uint32
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType

__all__ = ["ReplicaId", "PartitionId"]


@frozen
class ReplicaId(HloOp, opcode="replica-id"):
    """The u32 id of the replica running the program."""

    def result_type(self):
        return ArrayType(uint32, ())


@frozen
class PartitionId(HloOp, opcode="partition-id"):
    """The u32 id of the SPMD partition running the program."""

    def result_type(self):
        return ArrayType(uint32, ())


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import nondifferentiable  # noqa: E402

nondifferentiable(ReplicaId, PartitionId)


# -- batching (vmap): nothing to batch (no array operands) -------------------------


from hlodsl.ir.rules import batch_rule, register_rule  # noqa: E402

from ._batch import unbatched_rule  # noqa: E402

register_rule(batch_rule, ReplicaId, unbatched_rule)
register_rule(batch_rule, PartitionId, unbatched_rule)
