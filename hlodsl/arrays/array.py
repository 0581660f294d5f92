"""``Array[T, Shape]``: immutable shaped arrays typed by element type and shape.

This is the paper's ``XRTArray{T, Shp, N}``: the element type and the static
shape are type parameters, so plum dispatches on element type, rank and shape.
An ``Array`` is either *concrete* (it holds a PJRT device buffer) or *symbolic*
(it stands for a value in a program being staged). Both are instances of the
same class, so the same methods apply to both; ops execute concrete ones and
stage symbolic ones.

Shape parameters in signatures may use ``None`` for "any size" and ``...`` for
"any rank"; the element type may be abstract (``Floating``, ``Number``, ...):

>>> import numpy as np, hlodsl as hd
>>> A = hd.array(np.ones((3, 4), np.float32))
>>> type(A)
hlodsl.Array[float32, (3, 4)]
>>> isinstance(A, hd.Matrix), isinstance(A, hd.Vector), isinstance(A, hd.Matrix[hd.Floating])
(True, False, True)
>>> A.shape, A.dtype, A.ndim, A.size
((3, 4), float32, 2, 12)
"""

from __future__ import annotations

import copyreg

import numpy as np
from plum import CovariantMeta, parametric

from .devices import Device, Shard, default_device
from .dtypes import (
    ElementType, default_inexact, device_refusal, element_type, native_byte_order,
)
from hlodsl.errors import DonatedArrayError, ShapeError, staging_error
from .host_values import HostConversion
from .placement import DevicePlacement
from .types import ArrayType

__all__ = ["Array", "Device", "Shard", "Token", "array", "Scalar", "Vector", "Matrix",
           "is_symbolic", "default_device", "ConsumedBuffer"]

_ANY_SHAPE = ...


def _shape_str(shape) -> str:
    if shape is _ANY_SHAPE:
        return "..."
    inner = ", ".join(str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


class ArrayMeta(CovariantMeta):
    """Metaclass of ``Array``: readable names, and ``Matrix[float32]``-style aliases."""

    def __getitem__(cls, p):
        # A concrete alias whose element type is the wildcard (``Matrix``) can be
        # narrowed by element type: ``Matrix[float32]`` is ``Array[float32, (None, None)]``.
        if getattr(cls, "_concrete", False):
            dtype, shape = cls._type_parameter
            if dtype is ElementType and not isinstance(p, tuple):
                return Array[p, shape]
        sub = super().__getitem__(p)
        dtype, shape = sub._type_parameter
        dname = "ElementType" if dtype is ElementType else dtype.__name__
        # repr(cls) must equal the "module.qualname" that ``cls | int`` prints
        # (beartype, under plum, checks this), so the readable name is the qualname.
        sub.__qualname__ = sub.__name__ = f"Array[{dname}, {_shape_str(shape)}]"
        sub.__module__ = "hlodsl"
        return sub

    def __repr__(cls) -> str:
        return f"{cls.__module__}.{cls.__qualname__}"


@parametric
class Array(HostConversion, DevicePlacement, metaclass=ArrayMeta):
    """An immutable array whose type carries its element type and static shape.

    ``Array[float32, (3, 4)]`` is the class of float32 3x4 arrays. In dispatch
    signatures, ``Array[Floating, (None, None)]`` matches any float matrix and
    ``Array[int32, ...]`` any int32 array. Create concrete arrays with
    :func:`hlodsl.array`.
    """

    # Method resolution may be cached by argument types: dispatch on ``Array``
    # subclasses depends only on the type parameters (see DESIGN.md pitfalls).
    __faithful__ = True
    # numpy defers ``ndarray + Array`` to us; hlodsl.stdlib (numpy_interop) also installs
    # __array_ufunc__/__array_function__, through which numpy then calls hlodsl code.
    __array_priority__ = 100

    _buf: object  # PJRT buffer (a jax Array, used only as a device buffer)
    _node: object  # staging graph node, when symbolic
    #: A recorded eager result's chain (hlodsl.transforms.lazy) until it runs; the
    #: instance attribute shadows this while the array has no buffer.
    _pending = None
    _node = None  # (a recorded result sets no node of its own)

    @classmethod
    def __init_type_parameter__(cls, dtype=ElementType, shape=_ANY_SHAPE):
        if not (isinstance(dtype, type) and issubclass(dtype, ElementType)):
            dtype = element_type(dtype, caller="Array")
        if shape is not _ANY_SHAPE:
            if isinstance(shape, int):
                shape = (shape,)
            if not isinstance(shape, (tuple, list)) or not all(
                d is None or (isinstance(d, (int, np.integer)) and d >= 0) for d in shape
            ):
                raise TypeError(
                    f"Array shape parameter must be a tuple of non-negative ints or None, "
                    f"or ..., got {shape!r}"
                )
            shape = tuple(None if d is None else int(d) for d in shape)
        return dtype, shape

    @classmethod
    def __le_type_parameter__(cls, left, right) -> bool:
        (ldt, lshape), (rdt, rshape) = left, right
        if not issubclass(ldt, rdt):
            return False
        if rshape is _ANY_SHAPE:
            return True
        if lshape is _ANY_SHAPE or len(lshape) != len(rshape):
            return False
        return all(r is None or l == r for l, r in zip(lshape, rshape))

    # -- construction (internal) ----------------------------------------------

    #: Whether arrays of this class live on several devices (see ``sharded_class``).
    _sharded = False

    @staticmethod
    def _from_buffer(buf, type_: ArrayType) -> Array:
        a = object.__new__(array_class(type_))
        a._buf = buf
        a._node = None
        return a

    @staticmethod
    def _from_node(node) -> Array:
        a = object.__new__(array_class(node.type))
        a._buf = None
        a._node = node
        return a

    def __getattr__(self, name: str):
        # A recorded eager result (hlodsl.transforms.lazy) has no buffer until its chain
        # runs: reading ``_buf`` runs it, so every reader of a value gets one. Arrays that
        # hold a buffer (or a node) never come here: their ``_buf`` is an attribute.
        if name == "_buf":
            chain = self._pending
            if chain is not None:
                return chain.force(self)
        raise AttributeError(f"{type(self).__qualname__!r} object has no attribute {name!r}")

    # -- static properties ---------------------------------------------------

    @property
    def type(self) -> ArrayType:
        """The abstract type (element type and shape) of this array."""
        t = _TYPES.get(type(self))
        return t if t is not None else ArrayType(self.dtype, self.shape)

    @property
    def dtype(self) -> type[ElementType]:
        return type(self)._type_parameter[0]

    @property
    def shape(self) -> tuple[int, ...]:
        return type(self)._type_parameter[1]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return self.type.size

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError(f"len() of a rank-0 array ({self.type}): a scalar has no len; "
                            "len() needs an array of at least 1 dimension")
        return self.shape[0]

    @property
    def is_symbolic(self) -> bool:
        return self._buf is None

    # -- waiting for asynchronous work ------------------------------------------

    def block_until_ready(self) -> Array:
        """This array, once the computation that produces it has finished.

        Programs run asynchronously: a call returns as soon as its work is
        queued, so time a step by waiting on its result. A symbolic array (inside
        ``hd.compile``) is returned as is: the staged program orders its own
        work, and its results are waited on where it is called.

        >>> import hlodsl as hd
        >>> x = hd.array([1.0, 2.0])
        >>> (x * 2).block_until_ready()
        hlodsl.Array[float64, (2,)]([2., 4.])
        """
        if self._buf is not None:
            from hlodsl.runtime import wait

            wait(self._buf)
        return self

    # -- conversion to host --------------------------------------------------

    def _require_value(self, what: str, hint: str | None = None):
        from hlodsl import runtime
        from hlodsl.runtime import check_process

        check_process()  # a forked child cannot read buffers of its parent's XLA
        buf = self._buf
        if buf is None:
            raise staging_error(
                f"{what} needs the value of a symbolic array {self.type} while staging; "
                "its value is only known when the compiled program runs. " + (hint or
                "Use hlodsl.stdlib.where/ops.Select for data-dependent choices"
                " instead of Python control flow")
            )
        if type(buf) is ConsumedBuffer:
            raise buf.error(f"{what} of {self.type}")
        if runtime.is_deleted(buf):  # another array sharing a buffer that was donated
            raise DonatedArrayError(f"{what} of {self.type}: its device buffer was donated "
                                    "to a compiled call (donate_argnums) through another "
                                    "array that shared it, and holds no value any more")
        return buf

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.np_dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the data (all elements), as numpy's ``nbytes``."""
        return self.size * self.itemsize

    # -- pickling and copying: arrays are values ------------------------------------

    def __reduce__(self):
        """Pickled by value: the element type, shape and data (``pickle``, multiprocessing)."""
        return _unpickle, (np.array(self._require_value("pickling"), copy=True),)

    def __copy__(self) -> Array:
        return self  # immutable: a copy is the array itself

    def __deepcopy__(self, memo) -> Array:
        return self

    def __setitem__(self, key, value):
        raise TypeError(f"hlodsl arrays are immutable: write x = x.at[{_key_text(key)}]"
                        f".set({_value_text(value)}) instead (a new array with that update)")

    def __hash__(self):
        raise TypeError("hlodsl arrays are not hashable")

    def __repr__(self) -> str:
        if self._buf is None:
            return f"{type(self)!r}(<symbolic {self._node.name}>)"
        if type(self._buf) is ConsumedBuffer:
            return f"{type(self)!r}(<donated to {self._buf.by}>)"
        from hlodsl import runtime

        if runtime.is_sharded(self._buf):
            s = self.sharding
            layout = (f"replicated over {s.mesh!r}" if s.is_replicated() else
                      f"sharded {s.spec!r} over {s.mesh!r}")
            if not runtime.is_fully_addressable(self._buf):
                return f"{type(self)!r}(<{layout}; not all shards in this process>)"
            body = np.array2string(np.asarray(self), separator=", ", prefix="  ")
            return f"{type(self)!r}(\n  {body},\n  {layout})"
        body = np.array2string(np.asarray(self), separator=", ", prefix="  ")
        return f"{type(self)!r}(\n  {body})" if "\n" in body else f"{type(self)!r}({body})"


def _key_text(key) -> str:
    """An index as the user wrote it, for error messages: ``0``, ``1:3``, ``..., None``."""
    if isinstance(key, tuple):
        return ", ".join(_key_text(k) for k in key) if key else "()"
    if isinstance(key, slice):
        parts = ["" if v is None else _key_text(v) for v in (key.start, key.stop, key.step)]
        return ":".join(parts if key.step is not None else parts[:2])
    if key is Ellipsis:
        return "..."
    if key is None or isinstance(key, (bool, int, np.integer)):
        return repr(key if not isinstance(key, np.integer) else int(key))
    if isinstance(key, list) and len(repr(key)) <= 40:
        return repr(key)
    return "idx"


def _value_text(value) -> str:
    if isinstance(value, (bool, int, float, complex, np.generic)) and len(repr(value)) <= 40:
        return repr(value.item() if isinstance(value, np.generic) else value)
    return "value"


class ConsumedBuffer:
    """What an array holds in place of its device buffer once a compiled call has taken
    the buffer over (``hd.compile(f, donate_argnums=...)``; ``hlodsl.call``).

    One per compiled signature, shared by every array that call consumed: reading any
    of them raises ``DonatedArrayError`` naming the call, whichever way it is read.
    """

    __slots__ = ("by",)

    def __init__(self, by: str):
        self.by = by  # the compiled function that took the buffer over

    def error(self, what: str) -> DonatedArrayError:
        return DonatedArrayError(
            f"{what}: this array was donated to the compiled function '{self.by}' "
            "(donate_argnums/donate_argnames), which took its device buffer over for its "
            "results, so it holds no value any more. Use that call's results instead, or "
            "leave the argument out of donate_argnums")

    def __getattr__(self, name: str):  # any other use of the buffer (runtime, jax)
        raise self.error(f"reading an array ({name})")

    def __repr__(self) -> str:
        return f"<buffer donated to {self.by}>"


_TYPES: dict[type, ArrayType] = {}
_CLASSES: dict[ArrayType, type] = {}


def array_class(t: ArrayType) -> type:
    """The concrete ``Array`` class of an abstract type (cached)."""
    try:
        return _CLASSES[t]
    except KeyError:
        cls = Array[t.dtype, t.shape]
        _CLASSES[t] = cls
        _TYPES[cls] = t
        return cls


def marked_class(t: ArrayType, marker: str, cache: dict) -> type:
    """A subclass of ``array_class(t)`` with the same name and ``marker`` set True
    (cached in ``cache``): dispatch and printing see the same type, while compiled
    functions, which key their signatures by argument class, tell it apart at no cost."""
    cls = cache.get(t)
    if cls is None:
        base = array_class(t)
        cls = type(base.__name__, (base,), {marker: True})
        cls.__qualname__, cls.__module__ = base.__qualname__, base.__module__
        cache[t] = cls
        _TYPES[cls] = t
    return cls


_SHARDED_CLASSES: dict[ArrayType, type] = {}


def sharded_class(t: ArrayType) -> type:
    """The class of arrays of type ``t`` laid out over several devices (cached)."""
    return marked_class(t, "_sharded", _SHARDED_CLASSES)


def is_symbolic(x) -> bool:
    """True for arrays that stand for values of a program being staged."""
    return isinstance(x, Array) and x._buf is None


def array(x, dtype=None) -> Array:
    """A concrete array from a numpy array, a nested list, or a Python/numpy scalar.

    numpy dtypes are kept (float64 stays float64); Python floats become float64,
    ints int64 and bools pred, as in numpy (floats become float32, and complex
    numbers complex64, where ``hd.config.default_float = "float32"``).

    >>> import hlodsl as hd
    >>> hd.array([1.0, 2.0])
    hlodsl.Array[float64, (2,)]([1., 2.])
    >>> hd.array(3, dtype=hd.float32)
    hlodsl.Array[float32, ()](3.)
    """
    from hlodsl import runtime

    if isinstance(x, Array):
        if dtype is None or element_type(dtype) is x.dtype:
            return x
        x = np.asarray(x)
    if dtype is None and runtime.is_buffer(x):  # a jax array: immutable, so shared
        return Array._from_buffer(runtime.adopt(x), ArrayType(element_type(x.dtype), x.shape))
    np_dtype = None if dtype is None else element_type(dtype, caller="array").np_dtype
    host = _to_host(x, np_dtype)
    if np_dtype is None and type(x) in _PYTHON_NUMBERS and host.dtype.kind in "fc":
        host = host.astype(default_inexact(element_type(host.dtype)).np_dtype, copy=False)
    t = ArrayType(element_type(host.dtype, caller="array"), host.shape)
    why = device_refusal(t)
    if why is not None:  # before the transfer, which fails (or XLA, which aborts)
        raise ShapeError(f"array: cannot make an array of {t}: {why}")
    # Arrays are immutable values: data that someone else can still write (a numpy
    # array, a buffer, a torch tensor) is copied; numpy's own conversion of Python
    # values (and any dtype conversion) already made a private array.
    private = isinstance(x, _PYTHON_VALUES) or (
        isinstance(x, np.ndarray) and not np.may_share_memory(host, x))
    return Array._from_buffer(runtime.to_device(host, private=private), t)


_PYTHON_VALUES = (bool, int, float, complex, list, tuple, np.generic)
#: Python values whose floats take ``config.default_float`` (numpy scalars keep their type).
_PYTHON_NUMBERS = (float, complex, list, tuple)


def _to_host(x, np_dtype) -> np.ndarray:
    """``np.asarray(x, np_dtype)``, its failures (and its object arrays) said as ``array``'s."""
    try:
        host = np.asarray(x, dtype=np_dtype)
    except OverflowError as e:
        raise OverflowError(f"array: {e} (converting {_what(x, np_dtype)})") from None
    except ValueError as e:
        if "inhomogeneous" in str(e):
            raise ValueError(f"array: ragged nested sequence {_short(x)} (its shape is "
                             "inhomogeneous); nested lists must be rectangular, each level "
                             "of the same length") from None
        raise ValueError(f"array: cannot convert {_what(x, np_dtype)}: {e}") from None
    except TypeError as e:
        raise TypeError(f"array: cannot convert {_what(x, np_dtype)} ({e}); give a number, "
                        "a bool, a (nested) list of them or an array") from None
    host = native_byte_order(host)  # big-endian data: swapped once, into a private copy
    if host.dtype == object and not isinstance(x, np.ndarray):
        for v in host.flat:  # numpy keeps ints beyond 64 bits as Python objects
            if isinstance(v, int) and not -2**63 <= v < 2**64:
                raise OverflowError(f"array: the Python int {_short(v)} is too large: "
                                    "XLA's integers are at most 64-bit (int64, uint64)")
        raise TypeError(f"array: cannot convert {_what(x, None)}: numpy makes an object "
                        "array of it, which has no XLA element type; give a number, a bool, "
                        "a (nested) list of them or an array of a supported element type")
    return host


def _what(x, np_dtype) -> str:
    to = "an array" if np_dtype is None else np.dtype(np_dtype).name
    return f"{'None' if x is None else f'{type(x).__name__} {_short(x)}'} to {to}"


def _short(x) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _unpickle(host: np.ndarray) -> Array:
    from hlodsl import runtime

    t = ArrayType(element_type(host.dtype), host.shape)
    return Array._from_buffer(runtime.to_device(host, private=True), t)


def _array_class_of(dtype, shape) -> type:
    return Array if dtype is None else Array[dtype, shape]


def _reduce_array_class(cls):
    """``Array[float32, (5,)]`` pickles as the recipe ``Array[float32, (5,)]``, not by name."""
    if getattr(cls, "_concrete", False):
        return _array_class_of, cls._type_parameter
    return _array_class_of, (None, None)


# plum's @parametric derives a metaclass of its own from ArrayMeta: register that one.
copyreg.pickle(type(Array), _reduce_array_class)


Array.__module__ = "hlodsl"


class Token:
    """A symbolic HLO token: orders side-effecting ops inside a staged program.

    Tokens exist only while staging (XLA does not hand them back to Python);
    ops that take or return tokens are called inside ``hlodsl.compile``.
    """

    __slots__ = ("_node", "_buf")

    def __init__(self, node):
        self._node = node
        self._buf = None

    @property
    def type(self):
        return self._node.type

    def __repr__(self) -> str:
        return f"Token(<symbolic {self._node.name}>)"

    def __reduce__(self):
        raise TypeError("cannot pickle a Token: tokens exist only inside a staged program "
                        "(hlodsl.compile), where they order side effects; they have no value "
                        "to save")

    def __copy__(self) -> Token:
        return self  # a symbolic value: copies are the token itself, as for arrays

    def __deepcopy__(self, memo) -> Token:
        return self

Scalar = Array[ElementType, ()]
Vector = Array[ElementType, (None,)]
Matrix = Array[ElementType, (None, None)]
