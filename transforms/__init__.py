"""Program transformations: the layer above ``hlodsl.ops`` and below ``hlodsl.stdlib``.

Everything here takes a function (or a staged program) and gives another:
derivatives (``grad``, ``vjp``, ``jvp`` and friends, with the rules each op
declares in ``hlodsl.rules``), control flow (``cond``, ``while_loop``,
``fori_loop``, ``scan``) and the conversion of Python ``if``/``while``/``for``
into it, batching (``vmap``), and Python functions called from inside a program
(``pure_callback``, ``io_callback``, ``debug_print``). The core below knows none of this: it is
handed what it needs (``hlodsl.ir.rules.transformations``, the conversion step of
``hlodsl.compile``) when this package is imported.
"""

from hlodsl.compilation import compiler as _compiler

from .autodiff import grad, hessian, hvp, jvp, value_and_grad, vjp
from .associative_scan import associative_scan
from .batching import vmap
from .jacobians import jacfwd, jacrev
from .remat import checkpoint, checkpoint_policies, remat
from .control import cond, fori_loop, scan, switch, while_loop
from .custom import custom_jvp, custom_vjp
from .callbacks import debug_print, io_callback, pure_callback
from .flow import StaleSourceWarning, convert
from . import passes  # noqa: E402  (hands compile its pass pipeline)
from . import sharded  # noqa: E402,F401  (hands compile its partitioned programs)
from .shard_map import shard_map  # noqa: E402
from .hlo_import import HloImportError, import_hlo  # noqa: E402
from .jax_bridge import from_jax  # noqa: E402

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "hvp", "hessian", "jacfwd", "jacrev",
           "remat", "checkpoint", "checkpoint_policies", "associative_scan", "custom_vjp",
           "custom_jvp", "cond", "switch", "while_loop", "fori_loop", "scan", "convert",
           "StaleSourceWarning", "vmap", "passes", "shard_map", "import_hlo", "from_jax",
           "HloImportError", "debug_print", "io_callback", "pure_callback"]

# hd.compile converts Python control flow on arrays with this step.
_compiler.use_conversion(convert)
