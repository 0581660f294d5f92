"""The project's one plum ``Dispatcher``: stdlib generics and user methods share it.

>>> import hlodsl as hd
>>> @hd.dispatch
... def rank_name(A: hd.Matrix) -> str:
...     return "matrix"
>>> rank_name(hd.array([[1.0]]))
'matrix'
"""

from plum import Dispatcher

__all__ = ["dispatch"]

dispatch = Dispatcher()

