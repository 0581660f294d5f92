"""What every pass shares: the ``Pass`` protocol and the ``PassContext`` passes read.

It sits below the passes and the pipeline that lists them, so no pass imports
the pipeline (transforms/passes had an import circle of five through it).

>>> PassContext(memory_limit=1 << 20).attempt
0
"""

from __future__ import annotations

from typing import Protocol

import attrs

from hlodsl.ir.graph import Computation

__all__ = ["Pass", "PassContext"]


class Pass(Protocol):
    """What a pass is: a name, and a function of the program and the context."""

    name: str

    def __call__(self, comp: Computation, ctx: PassContext) -> tuple[Computation, list[str]]:
        ...


@attrs.frozen
class PassContext:
    """What passes know beyond the program.

    ``memory_limit``: bytes of temporary memory the program may use (None: no
    limit). ``attempt``: 0 first; each later attempt follows a compile that
    went over the limit, and passes that can should make pieces ``shrink``
    times the size they first chose (at most half the last attempt's, less
    where XLA's count was far over the limit). ``estimates`` collects what
    the passes expect XLA's temporary bytes to be (``Split``'s cost model),
    ``whole`` the large values they could not keep from existing whole.
    """

    memory_limit: int | None = None
    attempt: int = 0
    shrink: float = 1.0
    #: Passes that size pieces append their estimate of XLA's temporary bytes here.
    estimates: list[int] = attrs.Factory(list)
    #: Passes append (bytes, line) for each large value they leave whole, and why:
    #: what a ``MemoryLimitError`` names when the program does not fit.
    whole: list[tuple[int, str]] = attrs.Factory(list)
