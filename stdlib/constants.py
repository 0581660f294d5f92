"""The array API standard's constants and data type objects.

The data types are hlodsl's element types under the standard's names
(``bool`` is ``pred``); ``float16`` and ``bfloat16`` are extras the standard
does not list. The constants are Python floats, and ``newaxis`` is ``None``,
as the standard specifies.

>>> import hlodsl.stdlib as xp
>>> xp.bool, xp.float32, xp.pi, xp.newaxis is None
(pred, float32, 3.141592653589793, True)
>>> xp.ones((2,))[:, xp.newaxis].shape
(2, 1)
"""

import math

from hlodsl.arrays.dtypes import (  # noqa: F401  (re-exported under the standard's names)
    bfloat16, complex64, complex128, float16, float32, float64, int8, int16, int32, int64,
    uint8, uint16, uint32, uint64,
)
from hlodsl.arrays.dtypes import pred as bool  # noqa: A004  (the standard's name)

__all__ = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "e", "pi", "inf", "nan", "newaxis",
]

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None
