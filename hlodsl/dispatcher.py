"""``hlodsl.dispatcher`` is ``hlodsl.ir.dispatcher`` (the module moved; docs/dispatch.md imports from this path)."""
import sys

from hlodsl.ir import dispatcher as _module

sys.modules[__name__] = _module
