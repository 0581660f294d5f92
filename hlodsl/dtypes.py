"""``hlodsl.dtypes`` is ``hlodsl.arrays.dtypes`` (the module moved; docs/defining-ops.md imports from this path)."""
import sys

from hlodsl.arrays import dtypes as _module

sys.modules[__name__] = _module
