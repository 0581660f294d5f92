"""Reading an array's value on the host: numpy conversion, Python scalars, formatting.

``HostConversion`` is a base class of :class:`hlodsl.Array`: these methods
need a concrete array (one holding a device buffer) and raise a
``StagingError`` that says what to do instead for a symbolic one.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.float32([1.5, 2.5]))
>>> x.tolist(), float(x[1]), f"{x[0]:.2f}"
([1.5, 2.5], 2.5, '1.50')
"""

from __future__ import annotations

import sys

import numpy as np

from . import dtypes
from hlodsl.errors import staging_error

__all__ = ["HostConversion"]


class HostConversion:
    """numpy's and Python's conversions of a concrete array (``__array__``, ``item``, ...)."""

    __slots__ = ()

    def __array__(self, dtype=None, copy=None):
        """numpy's view of the data: read-only and shared (the array is immutable), or a copy.

        ``np.asarray(x)`` shares the device buffer's memory where it can (on
        CPU) and numpy refuses writes to it; ``np.array(x)`` (``copy=True``)
        and a change of dtype give a new, writable array.
        """
        from hlodsl import runtime

        buf = runtime.readable(self._require_value("conversion to numpy"))
        try:
            out = np.asarray(buf)
        except RuntimeError as e:  # a global array some of whose shards are elsewhere
            if runtime.is_fully_addressable(buf):
                raise
            raise ValueError(
                f"{self.type} is sharded over devices of several processes ({self.sharding!r}); "
                "this process holds only .addressable_shards. Compile the program with "
                "out_shardings replicated to have the whole array in every process") from e
        if dtype is not None and np.dtype(dtype) != out.dtype:
            if copy is False:
                raise ValueError(f"converting {self.type} to numpy {np.dtype(dtype)} needs a "
                                 "copy, but copy=False")
            return out.astype(dtype)
        return out.copy() if copy else out

    @property
    def __jax_array__(self):
        """The device buffer, for ``jax.numpy.asarray(x)``: jax arrays are immutable too.

        jax arrays' operators are not given it: ``jax_array + x`` leaves the operation
        to ``x``'s reflected operator, which makes an hlodsl array, as ``x + jax_array``
        does (docs/interop.md).
        """
        from hlodsl.runtime import asked_by_jax_operator

        if asked_by_jax_operator(sys._getframe(1)):
            raise AttributeError("__jax_array__")  # (getattr(x, ..., None) is None there)
        return self._as_jax_array

    def _as_jax_array(self):
        return self._require_value("conversion to a jax array")

    def numpy(self) -> np.ndarray:
        return np.asarray(self)

    def item(self, *args):
        """The element (the only one, or the one ``args`` index) as a Python scalar, as numpy's.

        >>> import hlodsl as hd
        >>> hd.array([1.5, 2.5]).item(1), hd.array(3).item()
        (2.5, 3)
        """
        return self._host(".item()").item(*args)

    def tolist(self):
        """The data as nested Python lists of Python scalars, as numpy's ``tolist``.

        >>> import hlodsl as hd
        >>> hd.array([[1, 2], [3, 4]]).tolist()
        [[1, 2], [3, 4]]
        """
        return self._host(".tolist()").tolist()

    def _host(self, what: str) -> np.ndarray:
        """The data in numpy, or, for a symbolic array, a StagingError that names ``what``."""
        self._require_value(what, "Return the array from the compiled function and convert "
                                  "or format the result outside it")
        return np.asarray(self)

    def __format__(self, spec: str) -> str:
        """``f"{loss:.4f}"``: a scalar array formats as the numpy scalar of its value.

        An empty spec (``f"{x}"``) is ``str(x)``; numpy arrays of rank 1 and up
        take no format spec, and neither do these.

        >>> import numpy as np, hlodsl as hd
        >>> f"{hd.array(np.float32(0.123456)):.4f}", f"{hd.array(7):>3}"
        ('0.1235', '  7')
        """
        if not spec:
            return str(self)
        host = self._host(f"format spec {spec!r}")
        if self.ndim:
            raise TypeError(f"format spec {spec!r}: only scalar (0-dimensional) arrays take a "
                            f"format spec, not {self.type} (numpy arrays refuse it too); format "
                            f"its elements (x.tolist()) or reduce it first")
        return format(host[()], spec)

    def __round__(self, ndigits: int | None = None):
        """``round(x)``: a Python int; ``round(x, n)``: the numpy scalar, as numpy's scalars do.

        >>> import numpy as np, hlodsl as hd
        >>> round(hd.array(np.float32(2.5))), round(hd.array(np.float32(2.567)), 2)
        (2, np.float32(2.57))
        """
        host = self._host("round()")
        if self.ndim:
            raise TypeError(f"round() of an array of shape {self.shape} ({self.type}): only "
                            "scalar (0-dimensional) arrays round to a number; for arrays use "
                            "np.round(x, decimals) or hlodsl.stdlib.round(x)")
        value = host[()]
        if not hasattr(type(value), "__round__") and issubclass(self.dtype, dtypes.Floating):
            # ml_dtypes' bfloat16 has no __round__: round it as numpy's float16 rounds
            rounded = round(float(value), ndigits)
            return rounded if ndigits is None else type(value)(rounded)
        return round(value) if ndigits is None else round(value, ndigits)

    def __bool__(self) -> bool:
        if self._buf is None:
            raise staging_error(_why_not_converted(self.type, sys._getframe(1)))
        self._require_value("Python `if`/`while`/`bool()`")
        if self.size != 1:
            raise ValueError(f"bool(): the truth value of an array of shape {self.shape} "
                             f"({self.type}) is ambiguous: only size-1 arrays convert to bool; "
                             "use xp.any(x) or xp.all(x)")
        return bool(np.asarray(self))

    def __int__(self) -> int:
        self._require_value("int()")
        self._require_scalar("int")
        return int(np.asarray(self))

    def __float__(self) -> float:
        self._require_value("float()")
        self._require_scalar("float")
        return float(np.asarray(self))

    def __complex__(self) -> complex:
        self._require_value("complex()")
        self._require_scalar("complex")
        return complex(np.asarray(self))

    def _require_scalar(self, to: str) -> None:
        if self.ndim:  # as numpy 2 and the array API: no implicit x[0] for shape (1,)
            raise TypeError(f"{to}() of an array of shape {self.shape} ({self.type}): only "
                            f"scalar (0-dimensional, one element) arrays convert to a Python "
                            f"{to}; index or reduce it first")

    def __index__(self) -> int:
        self._require_value("use as a Python index")
        if not issubclass(self.dtype, dtypes.Integer) or self.ndim:
            raise TypeError(f"only integer scalar arrays can be used as an index, not {self.type}")
        return int(np.asarray(self))


def _why_not_converted(t, frame) -> str:
    """The message for a Python ``if``/``while``/``bool()`` on a symbolic array: why the
    code where it happened was not converted to HLO control flow, and what to use."""
    import linecache

    code = frame.f_code
    where = f"in {code.co_name} ({code.co_filename}:{frame.f_lineno})"
    head = (f"Python `if`/`while`/`and`/`or`/`bool()` needs the value of a symbolic array "
            f"{t} {where}; its value is only known when the compiled program runs. ")
    alternatives = ("Use hd.cond(pred, true_fn, false_fn, ...) or xp.where(pred, a, b) for a "
                    "choice, hd.while_loop / hd.fori_loop for a loop")
    named = code.co_filename.startswith("<doctest") or not code.co_filename.startswith("<")
    if not named or not linecache.getlines(code.co_filename):
        why = ("hlodsl converts Python control flow only in code whose source it can read, "
               "and this code has none (the plain Python REPL, python -c, stdin or exec). ")
    elif code.co_name == "<lambda>":
        why = ("This lambda was not converted (a lambda is converted when it starts on the "
               "first line of its statement; write a def otherwise). ")
    else:
        why = ("This code was not converted: hd.compile converts the functions it runs and "
               "the plain Python functions they call, but not generators, operator methods, "
               "plum generics, installed packages or functions made by exec, and "
               "hd.compile(..., convert=False) converts nothing. ")
    return head + why + alternatives
