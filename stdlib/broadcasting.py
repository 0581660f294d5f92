"""numpy broadcasting on top of HLO's strict broadcast, and ``broadcast(f, *xs)``.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl.stdlib import broadcast
>>> broadcast(lambda a, b: a * b + 1, hd.array(np.float32([1, 2])), 3.0)
hlodsl.Array[float32, (2,)]([4., 7.])
"""

from __future__ import annotations

import operator

from hlodsl import ops
from hlodsl.arrays.array import Array
from hlodsl.ir.dispatcher import dispatch
from hlodsl.errors import ShapeError, user_location, with_location

from .promotion import promote

__all__ = ["broadcast_shapes", "broadcast_to", "broadcast_arrays", "broadcast", "ELEMENTWISE"]

_is_array = type.__instancecheck__.__get__(Array)

#: stdlib functions that already act elementwise on whole arrays; ``broadcast``
#: and ``mapreduce`` call them directly instead of wrapping them in a Map.
ELEMENTWISE: set = set()


def _broadcast_shape(shapes) -> tuple[tuple[int, ...] | None, int]:
    """numpy's broadcast shape, or ``(None, failing_dimension)``."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-rank, 0):
        sizes = {s[i] for s in shapes if len(s) >= -i} - {1}
        if len(sizes) > 1:
            return None, i
        out.append(sizes.pop() if sizes else 1)
    return tuple(out), 0


def _raise(what: str, shown: list[str], dim: int):
    loc = user_location()
    raise ShapeError(
        f"{what}: operands {', '.join(shown)} cannot be broadcast together "
        f"(dimension {dim} differs)" + (f"\n  at {loc}" if loc else "")
    )


def broadcast_shapes(*shapes, what: str = "broadcast_shapes", operands=None) -> tuple[int, ...]:
    """numpy's broadcast of several shapes, or a ShapeError naming them all.

    ``operands`` (the arrays' types, say) are shown in the error where the
    shapes are only parts of them (the batch dimensions of ``matmul``).
    """
    shape, dim = _broadcast_shape(shapes)
    if shape is None:
        shown = [str(tuple(s)) for s in shapes]
        if operands is not None:
            shown = [f"{s} (batch dimensions of {o})" for s, o in zip(shown, operands)]
        _raise(what, shown, dim)
    return shape


def _static_shape(shape, what: str) -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of non-negative ints."""
    try:
        many = not isinstance(shape, str) and hasattr(shape, "__len__")
        dims = tuple(operator.index(d) for d in (tuple(shape) if many else (shape,)))
    except TypeError:
        loc = user_location()
        raise TypeError(f"{what}: shape must be a static int or a sequence of ints, got "
                        f"{shape!r}" + (f"\n  at {loc}" if loc else "")) from None
    if any(d < 0 for d in dims):
        loc = user_location()
        raise ValueError(f"{what}: shape {dims} must be non-negative (every dimension >= 0)"
                         + (f"\n  at {loc}" if loc else ""))
    return dims


def broadcast_to(x: Array, shape):
    """``x`` broadcast to ``shape`` by numpy's rules (a reshape then an HLO broadcast)."""
    shape = _static_shape(shape, "broadcast_to")
    if x.shape == shape:
        return x
    broadcast_shapes(x.shape, shape, what="broadcast_to")
    offset = len(shape) - x.ndim
    if offset < 0 or any(d not in (1, shape[offset + i]) for i, d in enumerate(x.shape)):
        raise ShapeError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    # Size-1 dimensions that grow are dropped first: HLO broadcast maps sizes exactly.
    keep = [i for i, d in enumerate(x.shape) if d == shape[offset + i]]
    if len(keep) != x.ndim:
        x = ops.Reshape(tuple(x.shape[i] for i in keep))(x)
    return ops.Broadcast(shape, tuple(offset + i for i in keep))(x)


def broadcast_arrays(*xs, what: str = "broadcast") -> list[Array]:
    """Promote to a common element type and broadcast to a common shape."""
    first = type(xs[0])
    if all(type(x) is first for x in xs) and _is_array(xs[0]):
        return list(xs)  # the common case, already agreed: no promotion work
    arrays = promote(*xs)
    shape, dim = _broadcast_shape([a.shape for a in arrays])
    if shape is None:
        _raise(what, [str(a.type) for a in arrays], dim)
    return [broadcast_to(a, shape) for a in arrays]


@dispatch
def broadcast(f, *xs):
    """Apply ``f`` elementwise over the broadcast of ``xs`` (the paper's ``f.(xs...)``).

    stdlib elementwise functions lower to HLO elementwise instructions; any other
    Python callable is staged on scalars into an HLO ``map``.
    """
    if not callable(f):
        raise TypeError(with_location(f"broadcast: f must be a callable to apply elementwise, "
                                      f"got {type(f).__name__} {f!r}"))
    if not xs:
        raise TypeError(with_location("broadcast: no arrays to apply f over; call "
                                      "broadcast(f, x, ...) with at least one array"))
    arrays = broadcast_arrays(*xs, what=getattr(f, "__name__", "broadcast"))
    if f in ELEMENTWISE:
        return f(*arrays)
    return ops.Map(f)(*arrays)
