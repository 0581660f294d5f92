"""Python ``if``/``while``/``for`` on symbolic arrays, converted to HLO control flow.

``convert(f)`` rewrites the source of ``f`` (once per function, cached) so that
each ``if``, ``while`` and ``for i in range(...)`` becomes a call to the run
time of this package, with the branch or loop body as a nested function that takes
and returns the variables the statement assigns. At run time the helper looks
at the condition: a Python value (or a concrete array) runs the Python
statement as written, so control flow on static values keeps unrolling while
staging; a symbolic array makes it ``hd.cond``, ``hd.while_loop`` or
``hd.fori_loop``, with the loop-carried variables inferred. ``hd.compile``
converts the functions it stages and, through them, the plain Python
functions they call.

>>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
>>> def relu_sum(x):
...     s = xp.sum(x)
...     if s > 0:
...         y = x * 2
...     else:
...         y = -x
...     return y
>>> hd.compile(relu_sum)(hd.array(np.float32([-1, -2])))
hlodsl.Array[float32, (2,)]([1., 2.])
>>> "conditional(" in hd.code_hlo(convert(relu_sum), hd.array(np.float32([1, 2])))
True

The package: ``conversion`` (``convert``, ``call``), ``source`` (reading the
source back and checking it against the loaded code), ``rewrite`` (the AST
rewrite), and the run time converted code calls: ``values``, ``branches``
(``if_``), ``loops`` (``while_``, ``for_range``). Converted code reaches the
run time through this package's namespace.
"""

from .branches import if_  # noqa: F401
from .conversion import call, convert  # noqa: F401
from .loops import for_range, while_  # noqa: F401
from .source import StaleSourceWarning  # noqa: F401
from .values import (  # noqa: F401
    Site, Undefined, and_, load, not_, or_, static_range, static_test, stopped, undefined,
)

__all__ = ["convert", "StaleSourceWarning"]
