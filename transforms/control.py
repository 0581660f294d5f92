"""Control flow on array values: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``.

The combinators of ``jax.lax``, built on the ``Conditional`` and ``While`` ops.
The Python functions they take are staged into HLO sub-computations, so a loop
is one ``while`` instruction whatever its trip count. Operands and loop
carries are structures (tuples, lists, dicts, namedtuples, attrs instances)
of arrays; Python and numpy scalars in them become arrays as ``np.asarray``
types them (``1.0`` is float64, ``1`` int64, ``True`` pred).

The functions may close over symbolic arrays of the program being staged
(``hd.cond(p, lambda: x + 1, lambda: x - 1)`` inside ``hd.compile``): each
function is staged once (``transforms/body.py``), and the arrays it captures
become extra operands of the op. Concrete arrays they close over become
constants.

Called on concrete arrays outside staging, a combinator stages itself as a
small module, compiles it (cached by the module's text, so a repeated call
compiles once) and runs it: eager and staged results come from the same HLO.
Only a *Python* bool predicate (or int index) is resolved in Python, by
calling the chosen branch.

>>> import numpy as np, hlodsl as hd
>>> from hlodsl import ops
>>> x = hd.array(np.float32([1, 2, 3]))
>>> hd.fori_loop(0, 4, lambda i, acc: ops.Add()(acc, x), x)
hlodsl.Array[float32, (3,)]([ 5., 10., 15.])
"""

from __future__ import annotations

import functools

from typing import Any, Callable

import numpy as np

from hlodsl.arrays.array import Array
from .body import Body, ordered_token
from .eager import eager, run_eagerly
from .flow.conversion import convert
from .structures import (
    check_carry, error, flatten_lifting, leaf_paths, name_of, rename, show, types_of,
)
from hlodsl.arrays.dtypes import Integer, int32
from hlodsl.arrays.dtypes import pred as pred_dtype
from hlodsl.errors import ShapeError
from hlodsl.ir.graph import current_builder
from hlodsl.ir.structural import Constant
from hlodsl.arrays.tree import LEAF, _Static, unflatten
from hlodsl.arrays.types import ArrayType

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan"]


# -- public combinators ---------------------------------------------------------------


def cond(pred: Any, true_fn: Callable, false_fn: Callable, *operands: Any):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``, chosen at run time.

    Args:
        pred: a ``pred[]`` (bool scalar) array, or a Python bool (then the
            choice is static: the chosen branch is simply called).
        true_fn: a function of the operands; it and ``false_fn`` must return
            the same structure of arrays with the same element types and shapes.
        false_fn: a function of the operands, as ``true_fn``.
        operands: any structures of arrays, passed to the chosen branch.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.float32([1, 2]))
    >>> f = hd.compile(lambda p, x: hd.cond(p, lambda: x * 2, lambda: -x))
    >>> f(hd.array(True), x), f(hd.array(False), x)
    (hlodsl.Array[float32, (2,)]([2., 4.]), hlodsl.Array[float32, (2,)]([-1., -2.]))
    """
    _check_callables("cond", true_fn=true_fn, false_fn=false_fn)
    true_fn, false_fn = convert(true_fn), convert(false_fn)  # as hd.compile converts
    for what, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        _check_arity("cond", what, fn, len(operands),
                     f"{what}(*operands) with {len(operands)} operand(s)")
    if isinstance(pred, (bool, np.bool_)):
        return (true_fn if pred else false_fn)(*operands)
    if not isinstance(pred, Array):
        raise error(TypeError, f"cond: the predicate must be a bool scalar array or a Python "
                               f"bool, got {type(pred).__name__}")
    if pred.type != ArrayType(pred_dtype, ()):
        raise error(ShapeError, f"cond: the predicate must be a pred[] (bool scalar) array, "
                                f"got {pred.type}; compare it (x != 0) or reduce it first")
    if eager():
        return run_eagerly(_branches_staged, "cond", "cond", pred,
                            (true_fn, false_fn), operands)
    return _branches_staged("cond", pred, (true_fn, false_fn), operands)


def switch(index: Any, branches, *operands: Any):
    """``branches[index](*operands)``, the index clamped to ``[0, len(branches))``.

    As ``jax.lax.switch``: an out-of-range index runs the first or the last
    branch. A Python int index chooses statically.

    Args:
        index: an integer scalar array (any integer type), or a Python int.
        branches: a sequence of functions of the operands, all returning the
            same structure and types.
        operands: any structures of arrays, passed to the chosen branch.

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.int32([1, 2]))
    >>> branches = [lambda v: v, lambda v: v * 10, lambda v: -v]
    >>> run = hd.compile(hd.switch)
    >>> for i in (-5, 1, 9):
    ...     print(run(hd.array(np.int32(i)), branches, x))
    hlodsl.Array[int32, (2,)]([1, 2])
    hlodsl.Array[int32, (2,)]([10, 20])
    hlodsl.Array[int32, (2,)]([-1, -2])
    """
    if callable(branches) or not hasattr(branches, "__len__"):
        raise error(TypeError, f"switch: branches must be a sequence of functions, "
                               f"got {type(branches).__name__}")
    branches = tuple(branches)
    if not branches:
        raise error(ValueError, "switch: needs at least one branch")
    _check_callables("switch", **{f"branches[{i}]": f for i, f in enumerate(branches)})
    branches = tuple(convert(f) for f in branches)
    for i, fn in enumerate(branches):
        _check_arity("switch", f"branches[{i}]", fn, len(operands),
                     f"branches[{i}](*operands) with {len(operands)} operand(s)")
    if _is_static_int(index):
        return branches[min(max(int(index), 0), len(branches) - 1)](*operands)
    if not isinstance(index, Array):
        raise error(TypeError, f"switch: the index must be an integer scalar array or a "
                               f"Python int, got {type(index).__name__}")
    if index.shape != () or not issubclass(index.dtype, Integer):
        raise error(ShapeError, f"switch: the index must be an integer scalar array, "
                                f"got {index.type}")
    if eager():
        return run_eagerly(_branches_staged, "switch", "switch", index, branches, operands)
    return _branches_staged("switch", index, branches, operands)


def while_loop(cond_fn: Callable, body_fn: Callable, init: Any):
    """``state = init; while cond_fn(state): state = body_fn(state)``, as one HLO loop.

    Args:
        cond_fn: the state -> a ``pred[]`` scalar array.
        body_fn: the state -> the next state, with the structure, element
            types and shapes of ``init``.
        init: any structure of arrays.

    Returns:
        The final state, in ``init``'s structure.

    >>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
    >>> def collatz_steps(n):
    ...     def step(s):
    ...         k, n = s
    ...         odd = (n % 2) == 1
    ...         return k + 1, hd.cond(odd, lambda: 3 * n + 1, lambda: xp.floor_divide(n, 2))
    ...     return hd.while_loop(lambda s: s[1] != 1, step, (hd.array(np.int32(0)), n))[0]
    >>> hd.compile(collatz_steps)(hd.array(np.int32(27)))
    hlodsl.Array[int32, ()](111)
    """
    _check_callables("while_loop", cond_fn=cond_fn, body_fn=body_fn)
    cond_fn, body_fn = convert(cond_fn), convert(body_fn)
    for what, fn in (("cond_fn", cond_fn), ("body_fn", body_fn)):
        _check_arity("while_loop", what, fn, 1, f"{what}(state)")
    if eager():
        return run_eagerly(_while_staged, "while_loop", cond_fn, body_fn, init)
    return _while_staged(cond_fn, body_fn, init)


def fori_loop(lower: Any, upper: Any, body_fn: Callable, init: Any):
    """``for i in range(lower, upper): carry = body_fn(i, carry)``, as one HLO loop.

    With Python (or numpy) int bounds the trip count is static and the loop
    is a ``scan`` of known length (``i`` is int32 for Python ints); with an
    integer scalar array for either bound it is a ``while_loop`` and ``i``
    has the bounds' element type.

    Args:
        lower: an int or integer scalar array.
        upper: an int or integer scalar array.
        body_fn: ``(i, carry) -> carry``, keeping ``init``'s structure and types.
        init: any structure of arrays.

    >>> import numpy as np, hlodsl as hd
    >>> def power(x, n):       # x ** n by repeated multiplication, n at run time
    ...     return hd.fori_loop(0, n, lambda i, y: y * x, hd.array(np.float32(1)))
    >>> hd.compile(power)(hd.array(np.float32(2)), hd.array(np.int32(10)))
    hlodsl.Array[float32, ()](1024.)
    """
    _check_callables("fori_loop", body_fn=body_fn)
    body_fn = convert(body_fn)
    _check_arity("fori_loop", "body_fn", fn=body_fn, n=2, call="body_fn(i, carry)")
    check = _carry_checker("fori_loop", "body_fn", "init", init)
    if _is_static_int(lower) and _is_static_int(upper):
        start = _counter_start(int(lower), _index_dtype(lower, upper))

        def step(carry, _):
            i, x = carry
            return (_add_one(i), check(body_fn(i, x))), None

        rename(step, body_fn)
        step.__fingerprint__ = (body_fn,)  # what it stages: body_fn (eager trace cache)

        (_, out), _ = _scan_impl(step, (start, init), None, max(int(upper) - int(lower), 0),
                                 False)
        return out
    lo, hi = _dynamic_bounds(lower, upper)

    def body(s):
        i, n, x = s
        return _add_one(i), n, check(body_fn(i, x))

    def below_upper(s):
        return _ops().Compare("LT")(s[0], s[1])

    below_upper.__qualname__ = "below_upper"
    below_upper.__fingerprint__ = ()
    body.__fingerprint__ = (body_fn,)

    return while_loop(below_upper, rename(body, body_fn), (lo, hi, init))[2]


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False):
    """Loop ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``; stack the ``y``.

    Same semantics as ``jax.lax.scan``: ``xs`` is a structure of arrays
    sliced along axis 0 (or ``None`` with ``length`` given); the result is
    ``(final carry, ys)`` where ``ys`` has ``y``'s structure with a leading
    axis of size ``length``. ``reverse=True`` runs from the last slice to the
    first and still stores ``y`` of slice ``k`` at ``ys[k]``.

    >>> import numpy as np, hlodsl as hd
    >>> def cumsum(total, x):
    ...     total = total + x
    ...     return total, total
    >>> xs = hd.array(np.float32([1, 2, 3, 4]))
    >>> hd.compile(lambda xs: hd.scan(cumsum, hd.array(np.float32(0)), xs))(xs)
    (hlodsl.Array[float32, ()](10.), hlodsl.Array[float32, (4,)]([ 1.,  3.,  6., 10.]))
    >>> hd.scan(cumsum, hd.array(np.float32(0)), xs, reverse=True)[1]
    hlodsl.Array[float32, (4,)]([10.,  9.,  7.,  4.])
    """
    _check_callables("scan", f=f)
    f = convert(f)
    _check_arity("scan", "f", f, 2, "f(carry, x)")
    if length is not None and (not _is_static_int(length) or int(length) < 0):
        raise error(ValueError, f"scan: length must be a non-negative Python int, "
                                f"got {length!r}")
    return _scan_impl(f, init, xs, None if length is None else int(length), bool(reverse))


# -- the one implementation of scan and static-bound fori_loop -----------------------


def _scan_impl(f: Callable, init, xs, length: int | None, reverse: bool):
    """``scan`` on checked static arguments: eager or staged.

    fori_loop with static bounds comes here too (with ``xs=None`` and its trip
    count as ``length``), so wrapping this one function (e.g. with a custom
    derivative rule) covers both.
    """
    from hlodsl.context import STATE

    if STATE.traces:  # reverse mode: record the scan with its pullback (transforms/scan_ad.py)
        from .scan_ad import scan_with_pullback

        out = scan_with_pullback(_scan_forward, _scan_capturing, f, init, xs, length, reverse)
        if out is not None:
            return out
    return _scan_forward(f, init, xs, length, reverse)


def _scan_forward(f: Callable, init, xs, length: int | None, reverse: bool):
    if eager():
        return run_eagerly(_scan_staged, "scan", f, init, xs, length, reverse)
    return _scan_staged(f, init, xs, length, reverse)


def _scan_staged(f, init, xs, length, reverse):
    return _scan_capturing(f, init, xs, length, reverse)[0]


def _scan_capturing(f, init, xs, length, reverse):
    """``((final carry, ys), captured)``: the scan as one While whose body stages ``f`` once.

    The loop state is ``(i, *carry, *xs, *captured, *ys)``: ``f`` is staged with
    the first part as inputs, the arrays it uses from outside are added as it
    runs, and the output buffers ``ys`` come last, once ``f``'s results say
    their types.
    """
    ops = _ops()
    c_leaves, c_tree = flatten_lifting(init)
    x_leaves, x_tree = flatten_lifting(xs)
    length = _scan_length(x_leaves, x_tree, length)
    c_types = types_of(c_leaves)
    x_types = tuple(ArrayType(t.dtype, t.shape[1:]) for t in types_of(x_leaves))
    nc, nx = len(c_leaves), len(x_leaves)
    i_type = ArrayType(int32, ())

    def step(i, *state):
        zero = _constant(0, int32)
        carry, xs_now = state[:nc], state[nc:]
        k = ops.Subtract()(_constant(length - 1, int32), i) if reverse else i
        x = [ops.Reshape(t.shape)(ops.DynamicSlice((1, *t.shape))(a, k, *[zero] * t.rank))
             for a, t in zip(xs_now, x_types)]
        out = flatten_lifting(f(unflatten(c_tree, carry), unflatten(x_tree, x)))
        return i, k, out

    if length == 0:  # no step to slice for: f is staged on one slice, for its types
        body = Body(name_of(f), (*c_types, *x_types), tupled=True)
        out, out_tree = body.run(lambda *ls: flatten_lifting(
            f(unflatten(c_tree, ls[:nc]), unflatten(x_tree, ls[nc:]))))
        i = k = None
    else:
        body = Body(name_of(f), (i_type, *c_types, *types_of(x_leaves)), tupled=True)
        i, k, (out, out_tree) = body.run(step)
    if not (isinstance(out_tree, tuple) and out_tree[0] in (tuple, list)
            and len(out_tree[1]) == 2):
        raise error(ShapeError, f"scan: f must return a pair (carry, y), it returns "
                                f"{show(out_tree, types_of(out))}")
    new_c_tree, y_tree = out_tree[1]
    check_carry("scan", "f", "init", c_tree, c_types, new_c_tree, types_of(out[:nc]))
    y_types = types_of(out[nc:])
    bufs = [ops.Broadcast((length, *t.shape))(_constant(0, t.dtype)) for t in y_types]
    if length == 0:
        return (unflatten(c_tree, c_leaves), unflatten(y_tree, bufs)), body.captured
    captured = list(body.captured)  # the loop state's layout is fixed from here on
    ys_now = body.arrays([body.add_input(ArrayType(t.dtype, (length, *t.shape)))
                          for t in y_types])
    with body.within():
        zero = _constant(0, int32)
        ys = [ops.DynamicUpdateSlice()(buf, ops.Reshape((1, *y.shape))(y), k, *[zero] * y.ndim)
              for buf, y in zip(ys_now, out[nc:])]
        nxt = _add_one(i)
    inputs = body.inputs
    step_comp = body.finish([nxt, *out[:nc], *inputs[1 + nc:1 + nc + nx],
                             *body.captured_outputs, *ys], force_tuple=True)
    test = Body("below_length", tuple(body.types), tupled=True)
    below = test.run(lambda i, *rest: ops.Compare("LT")(i, _constant(length, int32)))
    state = (_constant(0, int32), *c_leaves, *x_leaves, *captured, *bufs)
    final = ops.While(test.finish([below]), step_comp)(*state)
    ny0 = 1 + nc + nx + len(captured)
    body.continue_token(final[1 + nc + nx:ny0])
    return (unflatten(c_tree, final[1:1 + nc]), unflatten(y_tree, final[ny0:])), captured


def _described(value) -> str:
    """A Python value for a message: its type and (short) repr."""
    text = repr(value)
    return f"a {type(value).__name__} ({text if len(text) < 60 else text[:57] + '...'})"


def _static_values(tree) -> list:
    """The non-array values (other than None) a treedef holds."""
    if isinstance(tree, _Static):
        return [] if tree.value is None else [tree.value]
    if tree is LEAF or not isinstance(tree, tuple):
        return []
    return [v for part in tree[1:] for child in (part if isinstance(part, tuple) else ())
            for v in _static_values(child)]


def _scan_length(leaves, tree, length):
    bad = _static_values(tree)
    if bad:
        raise error(TypeError, f"scan: xs must be an array or a structure of arrays (or None, "
                               f"with length), but it holds {_described(bad[0])}")
    paths = leaf_paths(tree, "xs")
    for path, a in zip(paths, leaves):
        if a.ndim == 0:
            raise error(ShapeError, f"scan: every array in xs needs a leading axis to scan "
                                    f"over; {path} is {a.type}")
    sizes = {a.shape[0] for a in leaves}
    if len(sizes) > 1:
        shown = ", ".join(f"{p}: {a.type}" for p, a in zip(paths, leaves))
        raise error(ShapeError, f"scan: the arrays in xs must have one leading size, "
                                f"got {shown}")
    if not sizes:
        if length is None:
            raise error(ValueError, "scan: give xs with at least one array, or length")
        return length
    (size,) = sizes
    if length is not None and length != size:
        raise error(ValueError, f"scan: length={length} but the arrays in xs have leading "
                                f"size {size}")
    return size


# -- staged implementations of cond/switch and while_loop ------------------------------


def _stage_function(fn: Callable, call: Callable, types: tuple, captured=None,
                    param_name: str = "state"):
    """Stage ``call`` (which calls the user's ``fn``) once, as a tupled body over ``types``:
    ``(body, result leaves, result treedef)``."""
    body = Body(name_of(fn), types, tupled=True, captured=captured, param_name=param_name)

    def staged(*leaves):
        out = flatten_lifting(call(*leaves))
        for x in out[0]:
            if not isinstance(x, Array):
                raise error(TypeError, f"{name_of(fn)} returned a {type(x).__name__}; the "
                                       "functions given to control flow return arrays")
        return out

    out_leaves, out_tree = body.run(staged)
    return body, out_leaves, out_tree


def _branches_staged(who: str, selector, branches: tuple, operands: tuple):
    ops = _ops()
    if who == "switch" and len(branches) == 1:
        return branches[0](*operands)
    leaves, tree = flatten_lifting(operands)
    types = types_of(leaves)
    names = ("true_fn", "false_fn") if who == "cond" else \
        tuple(f"branches[{i}]" for i in range(len(branches)))
    staged = [_stage_function(fn, lambda *ls, fn=fn: fn(*unflatten(tree, ls)), types,
                              param_name="operand") for fn in branches]
    _, first, out_tree = staged[0]
    out_types = types_of(first)
    for name, (_, out, t) in zip(names[1:], staged[1:]):
        if (t, types_of(out)) != (out_tree, out_types):
            python = _static_values(out_tree) + _static_values(t)
            if python:
                raise error(TypeError, f"{who}: {names[0]} returns "
                                       f"{show(out_tree, out_types)}, {name} returns "
                                       f"{show(t, types_of(out))}: the branches must return "
                                       "arrays (or the same Python values), and "
                                       f"{_described(python[0])} differs between them")
            raise error(ShapeError, f"{who}: the branches must return the same structure "
                                    f"and types: {names[0]} returns "
                                    f"{show(out_tree, out_types)}, {name} returns "
                                    f"{show(t, types_of(out))}")
    # An ordered effect in one branch: every branch takes the program's token and
    # returns its last one, which the program's next ordered effect takes.
    threads = any(body.threads_token for body, _, _ in staged)
    token = ordered_token(current_builder()) if threads else None
    # Each branch is its own computation, with its own operand: the operands and the
    # outside arrays that branch (and only that branch) uses.
    computations = [body.finish(out if token is None else [*out, body.last_token(token)],
                                force_tuple=threads)
                    for body, out, _ in staged]
    if not out_types and not any(c.has_side_effect for c in computations):
        return unflatten(out_tree, [])  # nothing to choose between
    operands_ = [(*leaves, *body.captured) for body, _, _ in staged]
    if who == "cond":
        out = ops.Conditional(*computations)(selector, *operands_)
    else:
        last = len(branches) - 1
        index = ops.Clamp()(_constant(0, selector.dtype), selector,
                            _constant(last, selector.dtype))
        if index.dtype is not int32:
            index = ops.Convert(int32)(index)
        out = ops.Conditional(branch_computations=computations)(index, *operands_)
    out = out if isinstance(out, tuple) else (out,)
    if threads:
        current_builder().token = out[-1]._node
        out = out[:-1]
    return unflatten(out_tree, out)


def _while_staged(cond_fn, body_fn, init):
    ops = _ops()
    leaves, tree = flatten_lifting(init)
    if not leaves:
        raise error(TypeError, f"while_loop: init must hold at least one array or number to "
                               f"carry through the loop, got {_described(init)}")
    types = types_of(leaves)
    n = len(leaves)
    test, c_out, c_tree = _stage_function(cond_fn, lambda *ls: cond_fn(unflatten(tree, ls)),
                                          types)
    if c_tree is not LEAF or types_of(c_out)[0] != ArrayType(pred_dtype, ()):
        raise error(ShapeError, f"while_loop: cond_fn must return a pred[] (bool scalar) "
                                f"array, it returns {show(c_tree, types_of(c_out))}")
    # The body takes the condition's captured arrays first (same tuple positions),
    # then its own; the condition then takes the body's too: one state for both.
    body, b_out, b_tree = _stage_function(body_fn, lambda *ls: body_fn(unflatten(tree, ls)),
                                          types, captured=test.captured)
    check_carry("while_loop", "body_fn", "init", tree, types, b_tree, types_of(b_out))
    test.take_captures(body.captured)
    condition = test.finish(c_out)
    step = body.finish([*b_out, *body.captured_outputs], force_tuple=True)
    final = ops.While(condition, step)(*leaves, *body.captured)
    body.continue_token(final[n:])
    return unflatten(tree, final[:n])


# -- structures, checks and small helpers ---------------------------------------------


def _ops():
    from hlodsl import ops

    return ops


def _check_arity(who: str, what: str, fn: Callable, n: int, call: str) -> None:
    """A function that cannot take the ``n`` arguments control flow passes it is an error
    naming the combinator and the function, before anything is staged."""
    import inspect

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins: let the call speak
        return
    try:
        signature.bind(*([None] * n))
    except TypeError:
        raise error(TypeError, f"{who}: {what}{signature} cannot take the {n} argument(s) "
                               f"{who} passes it: it is called as {call}") from None


def _check_callables(who: str, **fns) -> None:
    for name, fn in fns.items():
        if not callable(fn):
            raise error(TypeError, f"{who}: {name} must be a function, "
                                   f"got {type(fn).__name__}")


def _is_static_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _constant(value, dtype) -> Array:
    return Constant(np.asarray(value, dtype.np_dtype))()


def _add_one(i: Array) -> Array:
    return _ops().Add()(i, _constant(1, i.dtype))


def _index_dtype(lower, upper) -> np.dtype:
    """int32 for Python int bounds, else the numpy bounds' type; int64 where that overflows."""
    numpy_bounds = [b for b in (lower, upper) if isinstance(b, np.integer)]
    dtype = np.result_type(*numpy_bounds) if numpy_bounds else np.dtype(np.int32)
    info = np.iinfo(dtype)
    fits = all(info.min <= int(b) and int(b) + 1 <= info.max for b in (lower, upper))
    return dtype if fits else np.dtype(np.int64)


def _dynamic_bounds(lower, upper) -> tuple[Array, Array]:
    arrays = [b for b in (lower, upper) if isinstance(b, Array)]
    for name, b in (("lower", lower), ("upper", upper)):
        if isinstance(b, Array):
            if b.shape != () or not issubclass(b.dtype, Integer):
                raise error(ShapeError, f"fori_loop: {name} must be an int or an integer "
                                        f"scalar array, got {b.type}")
        elif not _is_static_int(b):
            raise error(TypeError, f"fori_loop: {name} must be an int or an integer scalar "
                                   f"array, got {type(b).__name__}")
    dtype = arrays[0].dtype
    if any(b.dtype is not dtype for b in arrays):
        raise error(ShapeError, f"fori_loop: lower and upper must have one element type, "
                                f"got {lower.type} and {upper.type}")
    lo, hi = (b if isinstance(b, Array) else _constant(b, dtype) for b in (lower, upper))
    return lo, hi


@functools.lru_cache(maxsize=256)
def _counter_start(value: int, dtype) -> Array:
    """The loop counter's first value as an array, made once (not a transfer per call)."""
    from hlodsl.arrays.array import array

    return array(np.asarray(value, dtype))


def _carry_checker(who, what, root, init) -> Callable:
    """Checks a loop body's result against ``init`` (errors named for the caller)."""
    expected = []

    def check(out):
        if not expected:  # lifting scalars stages constants: only inside a builder
            leaves, tree = flatten_lifting(init)
            expected.append((tree, types_of(leaves)))
        out_leaves, out_tree = flatten_lifting(out)
        check_carry(who, what, root, *expected[0], out_tree, types_of(out_leaves))
        return out

    return check
