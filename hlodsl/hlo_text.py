"""``hlodsl.hlo_text`` is ``hlodsl.introspect.hlo_text`` (the module moved; notebooks/03_introspection.ipynb imports from this path)."""
import sys

from hlodsl.introspect import hlo_text as _module

sys.modules[__name__] = _module
