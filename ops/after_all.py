"""AfterAll: a token ordered after every token it joins.

Tokens order side effects (side-effecting custom calls, infeed/outfeed,
send/recv). ``AfterAll()()`` makes a fresh token; ``AfterAll()(t1, t2)`` one
that comes after both. Tokens exist only inside staged programs, so AfterAll
is called inside a function given to ``hlodsl.compile``; a token reaches the
module only through an op whose array result the program uses.

>>> import numpy as np, hlodsl as hd
>>> def f(x):
...     token = AfterAll()()
...     return hd.ops.OptimizationBarrier()(x, AfterAll()(token, token))[0]
>>> print(hd.code_hlo(f, hd.array(np.float32([1, 2]))))
HloModule f
ENTRY f {
  x = f32[2] parameter(0)
  after-all.1 = token[] after-all()
  after-all.2 = token[] after-all(after-all.1, after-all.1)
  tuple.3 = (f32[2], token[]) tuple(x, after-all.2)
  opt-barrier.4 = (f32[2], token[]) opt-barrier(tuple.3)
  ROOT get-tuple-element.5 = f32[2] get-tuple-element(opt-barrier.4), index=0
}
"""

from __future__ import annotations

from hlodsl.errors import require, staging_error
from hlodsl.ir.graph import current_builder
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import TokenType

__all__ = ["AfterAll"]


@frozen
class AfterAll(HloOp, opcode="after-all"):
    """A token after all operand tokens (zero or more): ``AfterAll()(*tokens)``."""

    def __call__(self, *tokens):
        if current_builder() is None:
            raise staging_error(f"{self!r} makes a token, and tokens exist only inside "
                                "staged programs: call it inside a function given to "
                                "hlodsl.compile")
        return HloOp.__call__(self, *tokens)

    def result_type(self, *types):
        for i, t in enumerate(types):
            require(isinstance(t, TokenType), self, types,
                    f"operands must be tokens, operand {i} is {t}")
        return TokenType()


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import nondifferentiable  # noqa: E402

nondifferentiable(AfterAll)


# -- batching (vmap): nothing to batch (no array operands) -------------------------


from hlodsl.ir.rules import batch_rule, register_rule  # noqa: E402

from ._batch import unbatched_rule  # noqa: E402

register_rule(batch_rule, AfterAll, unbatched_rule)
