"""Python functions called from inside a program: ``pure_callback``, ``io_callback``,
``debug_print``.

``jax``'s three, with its signatures: each stages one ``HostCallback`` op
(``ops/host_callback.py``), so it works in a function given to ``hd.compile``,
in the bodies of ``scan``, ``fori_loop``, ``while_loop`` and ``cond``, under
``vmap`` and ``grad``; called eagerly, the function just runs. Arguments are
structures (tuples, lists, dicts) of arrays; the function gets the same
structure of numpy arrays (other values as they were given). ``ordered=True``
chains the call's effect after the previous ordered one (a token: XLA may
otherwise run independent calls in any order, even at once); a body that has
one hands its token on through the loop or branch (``transforms/body.py``).

>>> import numpy as np, hlodsl as hd
>>> @hd.compile
... def f(x):
...     hd.debug_print("x = {}", x, ordered=True)
...     return x * 2
>>> y = f(hd.array(np.float32([1, 2])))
x = [1. 2.]
"""

from __future__ import annotations

from typing import Any, Callable

import attrs
import numpy as np

from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import element_type
from hlodsl.arrays.tree import flatten, unflatten
from hlodsl.arrays.types import ArrayType
from hlodsl.context import STATE
from hlodsl.ops.host_callback import HostCallback, callable_name

from .body import ordered_token
from .structures import error

__all__ = ["pure_callback", "io_callback", "debug_print"]


def pure_callback(callback: Callable, result_shape_dtypes: Any, *args: Any,
                  vmap_method: str | None = None, **kwargs: Any):
    """``callback(*args, **kwargs)`` computed in Python on the host, as part of the program.

    As ``jax.pure_callback``: the function must be pure (its result depends on its
    arguments only), so the program may drop a call whose result is unused, or
    merge two identical calls. It is not differentiable.

    Args:
        callback: gets ``args``/``kwargs`` with numpy arrays for the arrays; returns
            arrays (numpy, or anything ``np.asarray`` takes) in the structure of
            ``result_shape_dtypes``, with exactly those shapes and element types.
        result_shape_dtypes: a structure (tuple, list, dict) of objects with ``shape``
            and ``dtype`` (``jax.ShapeDtypeStruct``, numpy or hlodsl arrays).
        args: structures of arrays (and other values, passed as they are).
        vmap_method: what ``vmap`` does: ``'sequential'`` calls ``callback`` once
            per example; ``'expand_dims'`` once on the batch, unbatched arguments
            with a leading axis of 1; ``'broadcast_all'`` once, every argument
            batched. None (the default): ``vmap`` refuses.
        kwargs: passed to ``callback``.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.float32([0.5, 1.5]))
    >>> spec = np.empty(2, np.float32)
    >>> hd.compile(lambda x: hd.pure_callback(np.sinc, spec, x))(x)
    hlodsl.Array[float32, (2,)]([ 0.63661975, -0.21220659])
    """
    return _call(callback, result_shape_dtypes, args, kwargs, "pure_callback",
                 ordered=False, side_effect=False, vmap_method=vmap_method)


def io_callback(callback: Callable, result_shape_dtypes: Any, *args: Any,
                ordered: bool = False, **kwargs: Any):
    """``callback(*args, **kwargs)`` run on the host for its effect (and its results).

    As ``jax.experimental.io_callback``: the call is never dropped or merged;
    ``ordered=True`` runs it after the ordered effects staged before it (and
    before those after). Under ``vmap`` it is called once per example, in
    order; it is not differentiable. Arguments as ``pure_callback``'s
    (``result_shape_dtypes=None``: no results).

    >>> import numpy as np, hlodsl as hd
    >>> seen = []
    >>> def log(x):
    ...     seen.append(float(x))
    >>> step = hd.compile(lambda x: (hd.io_callback(log, None, x, ordered=True), x + 1)[1])
    >>> step(step(hd.array(1.0)))
    hlodsl.Array[float64, ()](3.)
    >>> seen
    [1.0, 2.0]
    """
    return _call(callback, result_shape_dtypes, args, kwargs, "io_callback",
                 ordered=bool(ordered), side_effect=True, vmap_method="sequential")


def debug_print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:
    """Print ``fmt.format(*args, **kwargs)`` from inside a program, with the values it
    has when it runs (numpy arrays for arrays).

    As ``jax.debug.print``: in a loop body it prints at every step; under ``vmap``
    once per example; under ``grad`` the values of the forward pass, once (not
    again when the backward pass of a ``scan`` or of ``hd.remat`` re-runs the code). ``ordered=True``
    prints in program order among the other ordered prints and io_callbacks;
    unordered prints of one program may come out in any order.

    >>> import numpy as np, hlodsl as hd
    >>> def total(xs):
    ...     def step(c, x):
    ...         hd.debug_print("c={c} x={x}", c=c, x=x)
    ...         return c + x, None
    ...     return hd.scan(step, hd.array(np.int32(0)), xs)[0]
    >>> hd.compile(total)(hd.array(np.int32([1, 2, 3])))
    c=0 x=1
    c=1 x=2
    c=3 x=3
    hlodsl.Array[int32, ()](6)
    """
    if not isinstance(fmt, str):
        raise error(TypeError, f"debug_print: fmt must be a str (a str.format pattern), "
                               f"got {type(fmt).__name__}")
    leaves, tree = flatten((args, kwargs))
    _Format(fmt, tree).check(len(leaves))
    if STATE.recomputing:  # printed when the forward pass ran
        return
    _stage(_Format(fmt, tree), (), leaves, ordered=bool(ordered), side_effect=True,
           vmap_method="sequential")


# -- the flat function the op calls ------------------------------------------------------


@attrs.frozen(eq=False)
class _Flat:
    """The user's function over the flat leaves: rebuilds its arguments, flattens its
    results in the structure of ``result_shape_dtypes``."""

    fn: Callable
    tree: object
    spec: object
    who: str

    @property
    def host_name(self) -> str:
        return f"{callable_name(self.fn)} ({self.who})"

    def __call__(self, *leaves):
        args, kwargs = unflatten(self.tree, leaves)
        out: list = []
        _flatten_like(self.spec, self.fn(*args, **kwargs), out, self.host_name, "result")
        return tuple(out)


@attrs.frozen
class _Format:
    """``print(fmt.format(*args, **kwargs))`` over the flat leaves."""

    fmt: str
    tree: object

    @property
    def host_name(self) -> str:
        return f"debug_print({self.fmt!r})"

    def check(self, n: int) -> None:
        """Format once with placeholders: a bad pattern is an error at the call."""
        args, kwargs = unflatten(self.tree, [_Placeholder()] * n)
        try:
            self.fmt.format(*args, **kwargs)
        except (IndexError, KeyError, ValueError) as e:
            raise error(type(e), f"debug_print: {self.fmt!r} does not fit the arguments "
                                 f"({len(args)} positional, keywords {sorted(kwargs)}): "
                                 f"{e}") from None

    def __call__(self, *leaves):
        args, kwargs = unflatten(self.tree, leaves)
        print(self.fmt.format(*args, **kwargs), flush=True)


class _Placeholder:
    """Stands for an array when the pattern is checked: ``{x.shape}``, ``{x[0]}`` and any
    format spec pass here (the array itself answers them when the program runs)."""

    def __format__(self, spec: str) -> str:
        return ""

    def __getattr__(self, name: str):
        return self

    def __getitem__(self, key):
        return self


# -- staging the op --------------------------------------------------------------------


def _call(callback, spec, args, kwargs, who: str, ordered: bool, side_effect: bool,
          vmap_method):
    if not callable(callback):
        raise error(TypeError, f"{who}: callback must be a function, "
                               f"got {type(callback).__name__}")
    types: list = []
    _spec_types(spec, types, who, "result_shape_dtypes")
    leaves, tree = flatten((args, kwargs))
    if side_effect and not types and STATE.recomputing:  # it ran in the forward pass
        return None
    out = _stage(_Flat(callback, tree, spec, who), tuple(types), leaves, ordered=ordered,
                 side_effect=side_effect, vmap_method=vmap_method)
    return _rebuild(spec, iter(out))


def _stage(fn, types: tuple, leaves: list, ordered: bool, side_effect: bool, vmap_method):
    for x in leaves:
        if not isinstance(x, Array):
            raise error(TypeError, f"{callable_name(fn)}: arguments are arrays and "
                                   f"structures of them, got a {type(x).__name__}")
    builder = STATE.builders[-1] if STATE.builders else None
    # Eagerly, calls run in order anyway; so do those of a body staged to be replayed
    # eagerly (remat's, under an eager grad), which has no program around it to order.
    ordered = ordered and builder is not None and STATE.builders[0].capture is None
    op = HostCallback(fn, types, ordered=ordered, has_side_effect=side_effect,
                      vmap_method=vmap_method)
    if not ordered:
        return op(*leaves)
    token, *out = op(ordered_token(builder), *leaves)
    builder.token = token._node
    return tuple(out)


def _spec_types(spec, out: list, who: str, path: str) -> None:
    """The ``ArrayType``s of the leaves of ``result_shape_dtypes``, in order."""
    if spec is None:
        return
    if isinstance(spec, (tuple, list)) and not hasattr(spec, "dtype"):
        for i, s in enumerate(spec):
            _spec_types(s, out, who, f"{path}[{i}]")
        return
    if isinstance(spec, dict):
        for k, s in spec.items():
            _spec_types(s, out, who, f"{path}[{k!r}]")
        return
    if isinstance(spec, ArrayType):
        out.append(spec)
        return
    if not (hasattr(spec, "shape") and hasattr(spec, "dtype")):
        raise error(TypeError, f"{who}: {path} must have a shape and a dtype "
                               f"(jax.ShapeDtypeStruct, a numpy array), got {spec!r}")
    dtype = spec.dtype if isinstance(spec.dtype, type) else np.dtype(spec.dtype)
    out.append(ArrayType(element_type(dtype), tuple(spec.shape)))


def _flatten_like(spec, value, out: list, name: str, path: str) -> None:
    """The leaves of the callback's ``value``, walked in the structure of ``spec``."""
    if spec is None:
        return
    if isinstance(spec, (tuple, list)) and not hasattr(spec, "dtype"):
        if not isinstance(value, (tuple, list)) or len(value) != len(spec):
            raise TypeError(f"the Python function {name} returned {_short(value)} as {path}, "
                            f"where result_shape_dtypes has a sequence of {len(spec)}")
        for i, (s, v) in enumerate(zip(spec, value)):
            _flatten_like(s, v, out, name, f"{path}[{i}]")
        return
    if isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise TypeError(f"the Python function {name} returned {_short(value)} as {path}, "
                            f"where result_shape_dtypes has a dict of keys {sorted(spec)}")
        for k, s in spec.items():
            _flatten_like(s, value[k], out, name, f"{path}[{k!r}]")
        return
    out.append(value)


def _rebuild(spec, it):
    if spec is None:
        return None
    if isinstance(spec, (tuple, list)) and not hasattr(spec, "dtype"):
        return type(spec)(_rebuild(s, it) for s in spec)
    if isinstance(spec, dict):
        return {k: _rebuild(s, it) for k, s in spec.items()}
    return next(it)


def _short(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) < 50 else text[:47] + '...'}"
