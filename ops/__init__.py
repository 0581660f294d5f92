"""HLO operations as callable objects whose fields are their static operands.

Every module of this package is imported here, so defining an op class in a
new module is all it takes to add an op: subclassing ``HloOp`` with
``opcode=...`` registers it in ``hlodsl.ops.registry()``, and the names in a
module's ``__all__`` become ``hlodsl.ops.<Name>``. Every op follows the HLO spec
exactly: no implicit broadcasting or type promotion (that is the stdlib's job).
"""

import importlib
import pkgutil

from hlodsl.ir.op import HloOp, frozen, registry  # noqa: F401
from hlodsl.ir.structural import Constant, GetTupleElement, Parameter, Tuple  # noqa: F401


def _import_all() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name in getattr(module, "__all__", ()):
            globals()[name] = getattr(module, name)


_import_all()
