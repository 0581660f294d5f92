"""Automatic differentiation: ``grad``, ``vjp``, ``jvp`` and friends, by per-op rules.

Derivatives are transformations of the op calls a function makes. While a
differentiated function runs (eagerly, or being staged by ``hd.compile``),
every HLO op call on a value that depends on the inputs is *observed*:

- reverse mode (``vjp``, ``grad``) records the call on a tape; the pullback
  walks the tape backwards and asks ``vjp_rule(op, ct, out, *args)`` for the
  cotangents of the op's operands;
- forward mode (``jvp``) computes the tangent of each result as it goes, with
  ``jvp_rule(op, tangents, out, *args)``.

Both rules are plum generics dispatched on the op's class, so an op's
derivatives live in its own module next to its shape rule, and a user's op
gets derivatives the same way (``@vjp_rule.dispatch``). ``jvp_rule`` has a
default for every op with a ``vjp_rule``: the transpose of the (linear)
pullback, so only ops without a reverse rule (``While``) need their own.

The rules are written with ops, so derivative code is itself observed: grad
of grad, jvp of grad (``hvp``) and derivatives inside ``hd.compile`` all work,
and a training step stages into one HLO module.

>>> import numpy as np, hlodsl as hd
>>> import hlodsl.stdlib as xp
>>> f = lambda x: xp.sum(xp.sin(x) * x)
>>> x = hd.array(np.float32([0.0, 1.0]))
>>> hd.grad(f)(x)                       # sin(x) + x cos(x)
hlodsl.Array[float32, (2,)]([0.       , 1.3817732])
>>> hd.compile(hd.grad(f))(x)           # the same, as one compiled module
hlodsl.Array[float32, (2,)]([0.       , 1.3817732])
"""

from __future__ import annotations

import functools
import operator
from typing import Callable

import numpy as np

from hlodsl.arrays.array import Array, Token
from hlodsl.arrays.dtypes import Floating
from hlodsl.ir.op import HloOp
from hlodsl.ops._ad import zeros_like_array
from hlodsl.ir.rules import jvp_rule, transformations, vjp_rule
from hlodsl.arrays.tree import _Static, flatten, unflatten

from .flow import convert
from .structures import error, name_of, show
from .traces import JvpTrace, Tape, alias, differentiable, leaves_of, rebuild

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "hvp", "hessian"]


# -- forward mode for every op: the transpose of its reverse rule ----------------------

@jvp_rule.dispatch
def jvp_by_transposing_vjp(op: HloOp, tangents: tuple, out, *args):
    """``jvp_rule``'s default for every op: the transpose of its ``vjp_rule``.

    It transposes ``vjp_rule``: the pullback ``ct -> vjp_rule(op, ct,
    ...)`` is linear, and the reverse-mode derivative of a linear map applied
    to the tangents is the forward-mode derivative of ``op``. Only the
    differentiable results (not integer indices, not tokens) get tangents.
    """
    leaves = leaves_of(out)
    moving_out = [i for i, o in enumerate(leaves) if differentiable(o)]
    moving = [i for i, t in enumerate(tangents) if t is not None]
    if not moving_out or not moving:
        return None
    present: list[int] = []

    def pullback(*cts_out):
        it = iter(cts_out)
        filled = [next(it) if i in moving_out else
                  (zeros_like_array(o) if isinstance(o, Array) else None)
                  for i, o in enumerate(leaves)]
        cts = tuple(vjp_rule(op, rebuild(out, iter(filled)), out, *args))
        # Operands without a tangent (constants) and cotangents the rule does
        # not give (None: no derivative) drop out of the transpose.
        present[:] = [i for i in moving if cts[i] is not None]
        return tuple(cts[i] for i in present)

    _, transpose = vjp(pullback, *(zeros_like_array(leaves[i]) for i in moving_out))
    given = tuple(tangents[i] for i in present)
    if not given:
        return None
    t_out = iter(transpose(given))
    return rebuild(out, iter([next(t_out) if i in moving_out else None
                               for i in range(len(leaves))]))



# -- checks ------------------------------------------------------------------------

def _ones_like(x: Array) -> Array:
    from hlodsl import ops
    from hlodsl.arrays.array import array

    one = array(np.ones((), x.dtype.np_dtype))
    return ops.Broadcast(x.shape)(one) if x.shape else one


def _as_leaves(what: str, value, role: str) -> tuple[list, object]:
    leaves, tree = flatten(value)
    for i, x in enumerate(leaves):
        if isinstance(x, Token):
            raise TypeError(f"{what}: {role} leaf {i} is a token; tokens have no derivative")
        if not differentiable(x):
            raise TypeError(
                f"{what}: {role} leaf {i} has type {x.type} ({x.dtype.__name__}): "
                "derivatives are taken with "
                "respect to floating-point (or complex) arrays only; pass integer and "
                "boolean values as non-differentiated arguments (argnums)")
    return leaves, tree


def _check_callable(what: str, f) -> None:
    if not callable(f):
        raise error(TypeError, f"{what}: f must be a callable (the function to "
                               f"differentiate), got {type(f).__name__} {f!r}")


def _check_array_args(what: str, args, positions) -> None:
    """A TypeError for a differentiated argument that is a plain Python value, not arrays."""
    for i, x in zip(positions, args):
        if isinstance(flatten(x)[1], _Static):
            raise error(TypeError, f"{what}: argument {i} is {type(x).__name__} {x!r}, but "
                                   "derivatives are taken with respect to floating-point "
                                   "arrays (or structures of them); hlodsl.array(x) makes one")


def _types(leaves) -> list:
    return [getattr(x, "type", type(x).__name__) for x in leaves]


def _pair(what: str, out):
    """``(output, aux)`` from a function called with ``has_aux=True``."""
    if not (isinstance(out, tuple) and len(out) == 2):
        got = out.type if isinstance(out, Array) else type(out).__name__
        raise error(TypeError, f"{what}: with has_aux=True the function must return a pair "
                               f"(output, aux), got {got}")
    return out


# -- the transformations ---------------------------------------------------------

def vjp(f: Callable, *primals, has_aux: bool = False):
    """``(f(*primals), pullback)``; ``pullback(ct)`` gives one cotangent per primal.

    Primals and outputs may be structures (tuples, lists, dicts, attrs
    instances) of floating-point arrays; ``ct`` has the output's structure.

    >>> import numpy as np, hlodsl as hd
    >>> y, pullback = hd.vjp(lambda a, b: a * b, hd.array(2.0), hd.array(3.0))
    >>> pullback(hd.array(1.0))
    (hlodsl.Array[float64, ()](3.), hlodsl.Array[float64, ()](2.))
    """
    _check_callable("vjp", f)
    _check_array_args("vjp", primals, range(len(primals)))
    return _vjp(f, primals, has_aux, "vjp")


def _vjp(f: Callable, primals: tuple, has_aux: bool, what: str):
    f = convert(f)  # its Python control flow on arrays, as hd.compile converts it
    leaves, tree = _as_leaves(what, primals, "primal")
    with Tape() as tape:
        inputs = [alias(x) for x in leaves]
        for x in inputs:
            tape.watch(x)
        out = f(*unflatten(tree, inputs))
    aux = None
    if has_aux:
        out, aux = _pair(what, out)
    out_leaves, out_tree = flatten(out)

    def pullback(ct):
        ct_leaves, ct_tree = flatten(ct)
        if ct_tree != out_tree or len(ct_leaves) != len(out_leaves):
            raise error(TypeError, f"vjp pullback: the cotangent {show(ct_tree, _types(ct_leaves))}"
                                   f" does not match the output's structure "
                                   f"{show(out_tree, _types(out_leaves))}; give one array of "
                                   "each output leaf's type, in the output's structure")
        for o, c in zip(out_leaves, ct_leaves):
            if isinstance(o, Array) and c.type != o.type:
                raise error(TypeError, f"vjp pullback: cotangent of type {c.type} for an output "
                                       f"of type {o.type}")
        acc = tape.backward(out_leaves, ct_leaves)
        grads = [acc.get(id(x)) for x in inputs]
        grads = [g if g is not None else zeros_like_array(x) for g, x in zip(grads, inputs)]
        return unflatten(tree, grads)

    return (out, pullback, aux) if has_aux else (out, pullback)


def _argnums(argnums, what: str) -> tuple[int, ...]:
    """``argnums`` as a tuple of ints without repeats (checked when grad is built)."""
    nums = tuple(argnums) if isinstance(argnums, (tuple, list)) else (argnums,)
    try:
        nums = tuple(operator.index(i) for i in nums)
    except TypeError:
        raise error(TypeError, f"{what}: argnums must be an int or a tuple of ints, got "
                               f"{type(argnums).__name__} {argnums!r}") from None
    if len(set(nums)) != len(nums):
        raise error(ValueError, f"{what}: argnums {argnums!r} repeats an argument; give "
                                "distinct positions (each argument gets one gradient)")
    return nums


def _argnums_call(f, args, kwargs, argnums, what: str):
    nums, n = _argnums(argnums, what), len(args)
    for i in nums:
        if not -n <= i < n:
            raise error(ValueError, f"{what}: argnums {argnums!r} is out of range for {n} "
                                    f"positional argument{'' if n == 1 else 's'} (each must "
                                    f"be in [-{n}, {n}))")
    if len({i % n for i in nums}) != len(nums):
        raise error(ValueError, f"{what}: argnums {argnums!r} names an argument twice (for "
                                f"{n} positional arguments); give distinct positions")
    _check_array_args(what, [args[i] for i in nums], nums)

    def g(*diff):
        a = list(args)
        for i, v in zip(nums, diff):
            a[i] = v
        return f(*a, **kwargs)

    return g, tuple(args[i] for i in nums)


def value_and_grad(f: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False):
    """``f``'s value and its gradient with respect to the ``argnums`` arguments.

    ``f`` must return a scalar floating-point array (with ``has_aux``: a pair
    ``(scalar, aux)``, and the value part of the result is ``(scalar, aux)``).

    >>> import numpy as np, hlodsl as hd
    >>> hd.value_and_grad(lambda x: x * x)(hd.array(3.0))
    (hlodsl.Array[float64, ()](9.), hlodsl.Array[float64, ()](6.))
    """
    return _value_and_grad(f, argnums, has_aux, "value_and_grad")


def _value_and_grad(f: Callable, argnums, has_aux: bool, what: str):
    """``value_and_grad``, with errors that name ``what`` (grad, hessian, hvp)."""
    _check_callable(what, f)
    _argnums(argnums, what)
    label = f"{what} of {name_of(f)!r}"
    converted = convert(f)

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        g, diff = _argnums_call(converted, args, kwargs, argnums, label)
        res = _vjp(g, diff, has_aux, label)
        out, pullback = res[0], res[1]
        # A real scalar only: the gradient of a complex output is not defined
        # (which of its vjps with 1 or 1j?); vjp takes a complex cotangent.
        if not (isinstance(out, Array) and out.shape == () and issubclass(out.dtype, Floating)):
            got = out.type if isinstance(out, Array) else type(out).__name__
            raise TypeError(f"{label}: the function must return "
                            "a scalar floating-point array of a real type (not complex), it "
                            f"returned {got}"
                            + ("" if has_aux else "; use vjp for non-scalar or complex outputs, "
                               "or has_aux=True to return extra values"))
        grads = pullback(_ones_like(out))
        grads = grads[0] if isinstance(argnums, int) else grads
        return ((out, res[2]) if has_aux else out), grads

    return value_and_grad_f


def grad(f: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False):
    """The gradient of a scalar-valued ``f`` with respect to argument(s) ``argnums``.

    >>> import numpy as np, hlodsl as hd
    >>> hd.grad(lambda x: x * x * x)(hd.array(2.0))
    hlodsl.Array[float64, ()](12.)
    >>> hd.grad(hd.grad(lambda x: x * x * x))(hd.array(2.0))
    hlodsl.Array[float64, ()](12.)
    """
    return _grad(f, argnums, has_aux, "grad")


def _grad(f: Callable, argnums, has_aux: bool, what: str):
    vg = _value_and_grad(f, argnums, has_aux, what)

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        (value, grads) = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return grad_f


def jvp(f: Callable, primals: tuple, tangents: tuple, has_aux: bool = False):
    """``(f(*primals), tangent of f's output)`` for the given input tangents.

    >>> import numpy as np, hlodsl as hd
    >>> import hlodsl.stdlib as xp
    >>> hd.jvp(xp.sin, (hd.array(0.0),), (hd.array(2.0),))
    (hlodsl.Array[float64, ()](0.), hlodsl.Array[float64, ()](2.))
    """
    return _jvp(f, primals, tangents, has_aux, "jvp")


def _jvp(f: Callable, primals, tangents, has_aux: bool, what: str):
    """``jvp``, with errors that name ``what`` (hvp, hessian)."""
    _check_callable(what, f)
    f = convert(f)
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise error(TypeError, f"{what}(f, primals, tangents): primals and tangents must be "
                               f"tuples, got {type(primals).__name__} and "
                               f"{type(tangents).__name__}")
    _check_array_args(what, primals, range(len(primals)))
    leaves, tree = _as_leaves(what, tuple(primals), "primal")
    t_leaves, t_tree = flatten(tuple(tangents))
    if t_tree != tree:
        raise error(TypeError, f"{what}: the tangents {show(t_tree, _types(t_leaves))} do not "
                               f"match the primals {show(tree, _types(leaves))} ({len(t_leaves)} "
                               f"tangents for {len(leaves)} primals); give one tangent of each "
                               "primal's type, in the primals' structure")
    for x, t in zip(leaves, t_leaves):
        if not isinstance(t, Array) or t.type != x.type:
            raise error(TypeError, f"{what}: tangent of type "
                                   f"{getattr(t, 'type', type(t).__name__)} for a primal of "
                                   f"type {x.type}")
    with JvpTrace() as trace:
        inputs = [alias(x) for x in leaves]
        for x, t in zip(inputs, t_leaves):
            trace.set(x, t)
        out = f(*unflatten(tree, inputs))
    aux = None
    if has_aux:
        out, aux = _pair(what, out)
    out_leaves, out_tree = flatten(out)
    t_out = []
    for o in out_leaves:
        t = trace.tangent(o)
        t_out.append(t if t is not None or not differentiable(o) else zeros_like_array(o))
    t_out = unflatten(out_tree, t_out)
    return (out, t_out, aux) if has_aux else (out, t_out)


def hvp(f: Callable, primals: tuple, tangents: tuple):
    """Hessian-vector product of scalar ``f``: forward mode over reverse mode.

    >>> import numpy as np, hlodsl as hd
    >>> hd.hvp(lambda x: x * x * x, (hd.array(2.0),), (hd.array(1.0),))
    hlodsl.Array[float64, ()](12.)
    """
    _check_callable("hvp", f)
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise error(TypeError, f"hvp(f, primals, tangents): primals and tangents must be "
                               f"tuples, got {type(primals).__name__} and "
                               f"{type(tangents).__name__}")
    g = _grad(f, tuple(range(len(primals))), False, "hvp")
    t_out = _jvp(g, tuple(primals), tuple(tangents), False, "hvp")[1]
    return t_out[0] if len(primals) == 1 else t_out


def hessian(f: Callable):
    """The Hessian of scalar ``f`` at one array argument, shape ``x.shape + x.shape``.

    Built from ``x.size`` Hessian-vector products, so a staged Hessian holds
    ``x.size`` copies of the derivative program: meant for small inputs.

    >>> import numpy as np, hlodsl as hd
    >>> import hlodsl.stdlib as xp
    >>> hd.hessian(lambda x: xp.sum(x * x * x))(hd.array([1.0, 2.0]))
    hlodsl.Array[float64, (2, 2)](
      [[ 6.,  0.],
       [ 0., 12.]])
    """

    _check_callable("hessian", f)
    label = f"hessian of {name_of(f)!r}"

    @functools.wraps(f)
    def hessian_f(*args):
        from hlodsl import ops
        from hlodsl.arrays.array import array

        if len(args) != 1:
            raise error(TypeError, f"{label}: takes one argument x (the Hessian is taken with "
                                   f"respect to a single array), got {len(args)} positional "
                                   "arguments")
        (x,) = args
        if not isinstance(x, Array):
            try:
                x = array(x)
            except (TypeError, ValueError):
                raise error(TypeError, f"{label}: x must be a floating-point array, got "
                                       f"{type(x).__name__} {x!r}") from None
        if not differentiable(x):
            raise error(TypeError, f"{label}: x has type {x.type}, but the Hessian is taken "
                                   "with respect to a floating-point array")
        g = _grad(f, 0, False, "hessian")
        rows = []
        for i in range(x.size):
            basis = np.zeros(x.size, x.dtype.np_dtype)
            basis[i] = 1
            t = array(basis.reshape(x.shape))
            row = _jvp(g, (x,), (t,), False, "hessian")[1]
            rows.append(ops.Reshape((1,) + x.shape)(row))
        if not rows:
            return array(np.zeros(x.shape * 2, x.dtype.np_dtype))
        stacked = ops.Concatenate(0)(*rows) if len(rows) > 1 else rows[0]
        return ops.Reshape(x.shape + x.shape)(stacked)

    return hessian_f


# The rules of ops that hold functions (While, Conditional, Call, Map) differentiate
# those functions: the ops layer reaches these through hlodsl.ir.rules.
transformations.vjp = vjp
transformations.jvp = jvp
