"""The generic array library: plum generics that bottom out in HLO ops.

>>> import numpy as np, hlodsl as hd
>>> import hlodsl.stdlib as xp
>>> W = hd.array(np.eye(2, dtype=np.float32)); x = hd.array(np.float32([1, 2]))
>>> xp.matmul(W, x) + 1
hlodsl.Array[float32, (2,)]([2., 3.])
"""

__array_api_version__ = "2025.12"

from . import operators  # noqa: F401  (installs Array's operators and methods)
from .constants import *  # noqa: F401,F403  (dtypes under the standard's names, e, pi, ...)
from .info import __array_namespace_info__  # noqa: F401
from .broadcasting import broadcast, broadcast_to  # noqa: F401  (broadcast_arrays/_shapes: manipulation)
from .creation import *  # noqa: F401,F403
from .data_types import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .elementwise_more import *  # noqa: F401,F403
from .index_update import IndexUpdate  # noqa: F401  (installs x.at on Array)
from .indexing import getitem, take, take_along_axis  # noqa: F401  (installs x[...], iter(x))
from .einsum import einsum, einsum_path  # noqa: F401
from .linalg import matmul, matrix_transpose, tensordot, vecdot  # noqa: F401  (and xp.linalg)
from . import fft  # noqa: F401,E402  (the fft extension: xp.fft)
from . import special  # noqa: F401,E402  (scipy.special's functions: xp.special)
from .special import digamma, erf, erfc, erfinv, lgamma  # noqa: F401,E402
from .manipulation import *  # noqa: F401,F403
from .promotion import result_dtype  # noqa: F401
from .reductions import max, mapreduce, mean, min, prod, sum  # noqa: F401
from .statistics import *  # noqa: F401,F403
from .searching import *  # noqa: F401,F403  (after statistics: it uses cumulative_sum)
from .sets import *  # noqa: F401,F403
from . import parallel  # noqa: F401,E402  (collectives by mesh axis, for hd.shard_map)
from . import nn  # noqa: F401,E402  (layers, losses, optimisers; hlodsl.stdlib.models uses it)
