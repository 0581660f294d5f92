"""HLO operations as callable objects whose fields are their static operands.

``hlodsl.ops.registry()`` maps each opcode to its class. Every op follows the
HLO spec exactly: no implicit broadcasting or type promotion (that is the
stdlib's job).
"""

from hlodsl.op import HloOp, registry  # noqa: F401
from hlodsl.structural import Constant, GetTupleElement, Parameter, Tuple  # noqa: F401

from .binary import *  # noqa: F401,F403
from .broadcast import Broadcast  # noqa: F401
from .compare import Compare, Select  # noqa: F401
from .convert import Convert  # noqa: F401
from .dot import Dot  # noqa: F401
from .iota import Iota  # noqa: F401
from .map import Map  # noqa: F401
from .reduce import Reduce  # noqa: F401
from .reshape import Reshape, Transpose  # noqa: F401
from .unary import *  # noqa: F401,F403
