"""Per-thread staging state: the builders being staged into, the active transformations,
and the platform being staged for.

Staging is a property of the thread that does it: while one thread stages a
function, another may run eager ops or stage a function of its own, and
neither may see the other's builders or derivative tapes. Everything that
says "what is being staged right now" reads this module's ``STATE``, one
instance per thread (``threading.local``).

>>> import threading, hlodsl as hd, numpy as np
>>> from .ir.graph import Builder
>>> seen = []
>>> with Builder("main thread"):
...     t = threading.Thread(target=lambda: seen.append(current_builder()))
...     t.start(); t.join()
>>> seen
[None]
"""

from __future__ import annotations

import threading

__all__ = ["STATE", "current_builder"]


class _State(threading.local):
    """What one thread is staging: a stack of builders and of transformations."""

    def __init__(self):
        #: Builders being staged into, innermost last (``hlodsl.ir.graph.Builder``).
        self.builders: list = []
        #: Active transformations observing op calls, outermost first (autodiff's traces).
        self.traces: list = []
        #: While a staged program is replayed (``hlodsl.ir.interpret``): the source line of
        #: the instruction being replayed, which stands for the user's line in errors
        #: and in the metadata of the nodes the replay makes.
        self.location = None
        #: While a derivative runs forward code again (the backward pass of ``scan`` or
        #: ``remat``): its side effects (``hd.debug_print``) happened in the forward pass.
        self.recomputing = False
        #: The platform programs are staged for (``"cpu"``, ``"gpu"``), or None: the
        #: runtime's own. Set by ``hlodsl.ir.target.staging_platform``.
        self.platform = None


STATE = _State()


def current_builder():
    """The innermost builder this thread is staging into, or ``None`` when running eagerly."""
    builders = STATE.builders
    return builders[-1] if builders else None
