"""Eager ops: how an op called on concrete arrays becomes a compiled one-op module.

``HloOp.__call__`` (hlodsl.op) runs eagerly when nothing is being staged; it
caches one compiled entry per (op, operand types). Staging and compiling sit
on floors above the ops' base class, so this module, above both, hands them
down (``hlodsl.ir.op.use_eager``) when ``hlodsl`` is imported.

>>> import numpy as np, hlodsl as hd
>>> hd.ops.Add()(hd.array(np.float32([1, 2])), hd.array(np.float32([3, 4])))
hlodsl.Array[float32, (2,)]([4., 6.])
"""

from __future__ import annotations

from .compiler import Entry, run_entry
from hlodsl.ir.op import HloOp, use_eager
from hlodsl.ir.staging import stage_types
from hlodsl.ir.target import live_platform
from hlodsl.arrays.tree import flat_treedef

__all__ = ["build"]


def build(op: HloOp, types: tuple) -> Entry:
    """The compiled entry of ``lambda *xs: op(*xs)`` staged on ``types``."""
    with live_platform():  # an eager call runs here: staged for this runtime's platform
        staged = stage_types(lambda *xs: op(*xs), flat_treedef(len(types)), types, op.opcode)
    return Entry.build(staged, f"eager_{op.opcode}")


use_eager(build, run_entry)
