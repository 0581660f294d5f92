"""Copy: the same values in a new buffer (XLA uses it to materialise layouts).

>>> import numpy as np, hlodsl as hd
>>> Copy()(hd.array(np.int8([1, 2])))
hlodsl.Array[int8, (2,)]([1, 2])
"""

from __future__ import annotations

import numpy as np

from hlodsl.ir.op import HloOp, frozen

__all__ = ["Copy"]


@frozen
class Copy(HloOp, opcode="copy"):
    def result_type(self, x):
        return x

    def reference(self, x):
        return np.copy(x)


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402


@vjp_rule.dispatch
def copy_vjp(op: Copy, ct, out, x):
    return (ct,)


# -- batching (vmap): the op on operands whose batch dimension is first ----------------


from hlodsl.ir.rules import batch_rule, register_rule  # noqa: E402

from ._batch import elementwise_rule  # noqa: E402

register_rule(batch_rule, Copy, elementwise_rule)
