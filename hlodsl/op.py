"""``hlodsl.op`` is ``hlodsl.ir.op`` (the module moved; docs/defining-ops.md imports from this path)."""
import sys

from hlodsl.ir import op as _module

sys.modules[__name__] = _module
