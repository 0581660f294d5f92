"""``hlodsl.tree`` is ``hlodsl.arrays.tree`` (the module moved; notebooks/02_models.ipynb imports from this path)."""
import sys

from hlodsl.arrays import tree as _module

sys.modules[__name__] = _module
