"""Python operators on ``Array``, installed from the stdlib (numpy-style methods: numpy_interop).

The core ``Array`` class knows nothing of the stdlib (imports point down the
layers), so the stdlib attaches its generics to the class here: ``A @ x + b``
calls ``matmul`` and ``add``, and user methods added to those generics apply
to the operators too. Eagerly, an operator whose arguments' types it has seen
goes straight to their compiled module (``hlodsl.transforms.eager.FastPath``),
without plum's dispatch; a method added to the generic since, staging and
derivatives take the generic again.

A jax array combines with an hlodsl array into an hlodsl array, in either order:
it is adopted as an hlodsl array (its device buffer, without a copy: both are
immutable), as a numpy array or a Python number would be (docs/interop.md).
"""

from __future__ import annotations

import numpy as np

from hlodsl.arrays.array import Array, array
from hlodsl.arrays.tree import is_jax_array
from hlodsl.errors import NoMethodError
from hlodsl.transforms.eager import MISS, FastPath

from . import elementwise as ew
from . import elementwise_more as more
from .linalg import matmul, matrix_transpose
from .manipulation import fail

__all__: list[str] = []


#: What an array combines with under an operator (the generics' own operand types).
_OPERANDS = (Array, bool, int, float, complex, np.ndarray, np.generic)


def _refused(fn, symbol: str, reflected: str, self: Array, other):
    """What an operator does when no method of ``fn`` takes ``other``.

    Python's protocol: a (non-builtin) operand type that implements the
    reflected operator gets its turn (``NotImplemented``); anything else is a
    TypeError that says what an array combines with.
    """
    if isinstance(other, _OPERANDS):
        return None  # the lookup failed deeper down: not the operand's fault
    own = getattr(type(other), reflected, None) if reflected else None
    if own is not None and own is not getattr(object, reflected, None) \
            and type(other).__module__ != "builtins":
        return NotImplemented
    raise fail(TypeError, f"{fn.__name__} ({symbol}): cannot combine {self.type} with "
                          f"{type(other).__name__} {other!r}; the other operand must be a "
                          "number (bool, int, float, complex), a numpy array or an hlodsl "
                          "array")


def _adopted(other):
    """A jax array as an hlodsl array (its buffer, no copy); anything else as it is."""
    return array(other) if is_jax_array(other) else other


def _binary(fn, symbol: str, reflected: str):
    # Eagerly, a type signature seen before goes straight to its compiled module
    # (FastPath); the first call, staging and derivatives take the generic.
    fast = FastPath(fn)

    binary = fast.binary

    def fwd(self, other):
        out = binary(self, other)
        if out is not MISS:
            return out
        other = _adopted(other)
        try:
            out = fn(self, other)
        except NoMethodError:
            out = _refused(fn, symbol, reflected, self, other)
            if out is None:
                raise
            return out
        fast.learn((self, other))
        return out

    def rev(self, other):
        out = binary(other, self)
        if out is not MISS:
            return out
        other = _adopted(other)
        try:
            out = fn(other, self)
        except NoMethodError:
            if _refused(fn, symbol, "", self, other) is None:
                raise
            return None
        fast.learn((other, self))
        return out

    return fwd, rev


def _unary(fn):
    fast = FastPath(fn)

    def method(self):
        out = fast((self,))
        if out is not MISS:
            return out
        out = fn(self)
        fast.learn((self,))
        return out

    return method


for _name, _fn, _symbol in [
        ("add", ew.add, "+"), ("sub", ew.subtract, "-"), ("mul", ew.multiply, "*"),
        ("truediv", ew.divide, "/"), ("pow", ew.pow, "**"), ("matmul", matmul, "@"),
        ("mod", ew.remainder, "%"), ("and", ew.bitwise_and, "&"), ("or", ew.bitwise_or, "|"),
        ("xor", ew.bitwise_xor, "^"), ("floordiv", more.floor_divide, "//"),
        ("lshift", more.bitwise_left_shift, "<<"), ("rshift", more.bitwise_right_shift, ">>")]:
    _fwd, _rev = _binary(_fn, _symbol, f"__r{_name}__")
    setattr(Array, f"__{_name}__", _fwd)
    setattr(Array, f"__r{_name}__", _rev)

for _name, _fn, _symbol, _mirror in [
        ("lt", ew.less, "<", "gt"), ("le", ew.less_equal, "<=", "ge"),
        ("gt", ew.greater, ">", "lt"), ("ge", ew.greater_equal, ">=", "le")]:
    setattr(Array, f"__{_name}__", _binary(_fn, _symbol, f"__{_mirror}__")[0])


def _equality(fn):
    fast = FastPath(fn)

    def method(self, other):
        out = fast((self, other))
        if out is not MISS:
            return out
        other = _adopted(other)
        out = fn(self, other)
        fast.learn((self, other))
        return out

    return method


Array.__eq__, Array.__ne__ = _equality(ew.equal), _equality(ew.not_equal)

Array.__neg__ = _unary(ew.negative)
Array.__pos__ = lambda self: self
Array.__abs__ = _unary(ew.abs)
Array.__invert__ = _unary(ew.bitwise_invert)
Array.__hash__ = None  # __eq__ is elementwise, so arrays are unhashable (as in numpy)


Array.mT = property(lambda self: matrix_transpose(self))


def _array_namespace(self, /, *, api_version: str | None = None):
    if api_version is not None and api_version not in _API_VERSIONS:
        raise ValueError(f"__array_namespace__: api_version={api_version!r} is not supported; "
                         f"hlodsl.stdlib implements {', '.join(_API_VERSIONS)}")
    import hlodsl.stdlib

    return hlodsl.stdlib


_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")
_array_namespace.__doc__ = """The array API namespace of this array: ``hlodsl.stdlib``.

>>> import hlodsl as hd
>>> hd.array([1.0]).__array_namespace__().__name__
'hlodsl.stdlib'
"""
Array.__array_namespace__ = _array_namespace

from . import numpy_interop  # noqa: F401  (numpy's protocols and the numpy-style methods)
