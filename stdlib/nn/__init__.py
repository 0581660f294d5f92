"""Neural-network building blocks over the stdlib: layers, activations, losses, optimisers.

Every function takes and returns hlodsl arrays (or structures of them), so it
runs eagerly and stages into one module under ``hd.compile``, and
``hd.grad`` differentiates through it. Layouts follow PyTorch (channels
first; weights ``(out, in, *kernel)``), so ``from_torch`` loads a
``state_dict`` as is. Randomness takes explicit keys (``key``, ``split``).

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import nn
>>> k1, k2 = nn.split(nn.key(0))
>>> W, b = nn.kaiming_uniform(k1, (3, 4)), nn.zeros(None, (3,))
>>> x = nn.normal(k2, (2, 4))
>>> @hd.compile
... def loss(params, x, labels):
...     return nn.cross_entropy(nn.linear(nn.relu(x), *params), labels)
>>> g = hd.grad(loss)((W, b), x, hd.array(np.int32([0, 2])))
>>> g[0].shape, g[1].shape
((3, 4), (3,))
"""

from . import activations, attention, gradients, init, layers, losses, normalization, optim  # noqa: F401
from . import random, sampling, weights  # noqa: F401
from . import schedules  # noqa: F401  (nn.schedules.warmup_cosine, ...: not star-imported)
from .activations import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .gradients import *  # noqa: F401,F403
from .init import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .losses import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .optim import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from .weights import *  # noqa: F401,F403
