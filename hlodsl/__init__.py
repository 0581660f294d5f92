"""hlodsl: XLA's HLO operations embedded in Python by multiple dispatch.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import exp, sum
>>> softmax = hd.compile(lambda xs: exp(xs) / sum(exp(xs)))
>>> softmax(hd.array(np.zeros(4, np.float32)))
hlodsl.Array[float32, (4,)]([0.25, 0.25, 0.25, 0.25])
"""

from .arrays.dtypes import (  # noqa: F401
    Bool, ComplexFloating, ElementType, Floating, Inexact, Integer, Number, SignedInteger,
    UnsignedInteger, bfloat16, bool_, complex64, complex128, element_type, float16, float32,
    float64, int8, int16, int32, int64, pred, uint8, uint16, uint32, uint64,
)
from .arrays.dtypes import (  # noqa: F401  (narrow storage types: a subset of ops runs on them)
    float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2,
    float8_e5m2fnuz, float8_e8m0fnu, int2, int4, uint2, uint4,
)
from .arrays.dtypes import (  # noqa: F401  (sub-byte floats: see dtypes.py for what XLA:CPU runs)
    float4_e2m1fn, float6_e2m3fn, float6_e3m2fn,
)
from .settings import config  # noqa: F401
from .errors import (  # noqa: F401
    ArraySizeError, DonatedArrayError, DonationWarning, ExportError, HloDslError,
    MemoryLimitError, NoMethodError, RecompileWarning, ShapeError, StagingError,
    StaticArgumentWarning, XlaCompileError,
)
from .arrays.types import ArrayType, TupleType  # noqa: F401
from .arrays.array import Array, Matrix, Scalar, Vector, array, is_symbolic  # noqa: F401
from .arrays.tree import block_until_ready, tree_leaves, tree_map  # noqa: F401
from .arrays.pytrees import register_dataclass, register_pytree_node  # noqa: F401
from .interchange.checkpoint import load, save  # noqa: F401  (hd.checkpoint is remat, below)
from .ir.dispatcher import dispatch  # noqa: F401
from .ir.op import HloOp, registry  # noqa: F401
from .compilation.compiler import Compiled, compile  # noqa: F401
from .compilation import one_op  # noqa: F401  (eager op calls: hands staging and compiling to the ops)
from .ir import interpret  # noqa: F401  (hands replay to Computation.__call__)
from .introspect.introspect import code_hlo, code_typed  # noqa: F401
from .interchange.exported import Exported, deserialize, export  # noqa: F401
from .introspect.profiler import profile  # noqa: F401
from .ir.rules import batch_rule, jvp_rule, vjp_rule  # noqa: F401
from .parallel.replicated import replicated  # noqa: F401
from .arrays.sharding import Mesh, NamedSharding, P, PartitionSpec, devices, make_mesh  # noqa: F401
from .parallel import distributed  # noqa: F401  (hd.distributed.initialize, ...)
# Module paths the docs name, kept where they were before the core moved into rooms
# (each is the moved module itself): hlodsl.op, .dtypes, .dispatcher, .tree, .hlo_text.
from . import dispatcher, dtypes, hlo_text, op, tree  # noqa: E402,F401

# The layers above the core: hlodsl's public face gathers them.
from . import ops  # noqa: E402,F401
from .transforms import (  # noqa: E402,F401
    StaleSourceWarning, associative_scan, checkpoint, checkpoint_policies, cond, convert,
    custom_jvp, custom_vjp, debug_print, fori_loop, grad, hessian, hvp, io_callback, jacfwd,
    jacrev, jvp, pure_callback, remat, scan, switch, value_and_grad, vjp, vmap, while_loop,
)
from . import transforms, stdlib  # noqa: E402,F401
from .transforms import passes  # noqa: E402,F401
from .transforms.sharded import device_put, with_sharding_constraint  # noqa: E402,F401
from .transforms.shard_map import shard_map  # noqa: E402,F401
from .transforms.hlo_import import HloImportError, import_hlo  # noqa: E402,F401
from .transforms.jax_bridge import from_jax  # noqa: E402,F401

__version__ = "0.1.0"
