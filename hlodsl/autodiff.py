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
from typing import Callable

import numpy as np

from .array import Array, Token
from .dispatcher import dispatch
from .dtypes import Inexact
from .graph import current_builder
from .context import STATE
from .op import Composite, HloOp, apply_op
from .tree import flatten, unflatten

__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "hvp", "hessian", "vjp_rule", "jvp_rule",
    "nondifferentiable", "register_rule", "link", "rule_classes", "has_derivative", "custom_vjp", "custom_jvp", "zeros_like_array",
]


# -- rules -------------------------------------------------------------------

@dispatch
def vjp_rule(op: HloOp, ct, out, *args):
    """Cotangents of ``op``'s operands, given the cotangent ``ct`` of its result ``out``.

    ``ct`` has the structure of ``out`` (an array, or a tuple for ops with
    several results; zeros stand in for results with no cotangent). Returns one
    entry per operand: an array of the operand's type, or ``None`` for zero
    (and for operands that are not differentiable, such as indices).
    """
    raise NotImplementedError(
        f"no derivative rule for {op!r} (operand types "
        f"{', '.join(str(a.type) for a in args)}): define one with "
        f"@hlodsl.vjp_rule.dispatch for {type(op).__name__}")


@dispatch
def jvp_rule(op: HloOp, tangents: tuple, out, *args):
    """Tangent of ``op``'s result ``out`` given its operands' ``tangents`` (None = zero).

    The default transposes ``vjp_rule``: the pullback ``ct -> vjp_rule(op, ct,
    ...)`` is linear, and the reverse-mode derivative of a linear map applied
    to the tangents is the forward-mode derivative of ``op``. Only the
    differentiable results (not integer indices, not tokens) get tangents.
    """
    leaves = _leaves(out)
    moving_out = [i for i, o in enumerate(leaves) if _differentiable(o)]
    moving = [i for i, t in enumerate(tangents) if t is not None]
    if not moving_out or not moving:
        return None
    present: list[int] = []

    def pullback(*cts_out):
        it = iter(cts_out)
        filled = [next(it) if i in moving_out else
                  (zeros_like_array(o) if isinstance(o, Array) else None)
                  for i, o in enumerate(leaves)]
        cts = tuple(vjp_rule(op, _rebuild(out, iter(filled)), out, *args))
        # Operands without a tangent (constants) and cotangents the rule does
        # not give (None: no derivative) drop out of the transpose.
        present[:] = [i for i in moving if cts[i] is not None]
        return tuple(cts[i] for i in present)

    _, transpose = vjp(pullback, *(zeros_like_array(leaves[i]) for i in moving_out))
    given = tuple(tangents[i] for i in present)
    if not given:
        return None
    t_out = iter(transpose(given))
    return _rebuild(out, iter([next(t_out) if i in moving_out else None
                               for i in range(len(leaves))]))


def nondifferentiable(*op_classes: type) -> None:
    """Declare ops whose results carry no derivative (comparisons, integer ops, RNG).

    >>> from hlodsl import ops
    >>> nondifferentiable(ops.Compare)   # (already declared in ops/compare.py)
    """
    for cls in op_classes:
        def rule(op, ct, out, *args):
            return (None,) * len(args)

        def forward(op, tangents: tuple, out, *args):
            return None

        register_rule(vjp_rule, cls, rule)
        register_rule(jvp_rule, cls, forward)


def rule_classes(generic=None) -> set[type]:
    """The op classes ``generic`` (default: ``vjp_rule``) has a method of their own for."""
    generic = vjp_rule if generic is None else generic
    return {m.signature.types[0] for m in generic.methods} - {HloOp}


def has_derivative(op_class: type) -> bool:
    """Whether ``op_class`` (or a base of it) has a vjp or jvp rule, or is nondifferentiable."""
    if issubclass(op_class, Composite) and op_class.differentiate_expansion:
        return True
    known = rule_classes(vjp_rule) | rule_classes(jvp_rule)
    return any(issubclass(op_class, k) for k in known if isinstance(k, type))


def register_rule(generic, op_class: type, fn: Callable) -> None:
    """Add ``fn`` as ``generic``'s method for ``op_class`` (a class known only at run time).

    ``@vjp_rule.dispatch`` with an ``op: MyOp`` annotation is the usual way;
    this is for rules made in a loop, where the annotation is a variable.
    """
    fn.__annotations__ = {**getattr(fn, "__annotations__", {}), "op": op_class}
    generic.dispatch(fn)


# -- traces: what observes op calls ------------------------------------------

def _differentiable(x) -> bool:
    return isinstance(x, Array) and issubclass(x.dtype, Inexact)


def _leaves(out) -> list:
    if isinstance(out, tuple):
        return [y for x in out for y in _leaves(x)]
    return [out]


def _map_leaves(out, fn):
    if isinstance(out, tuple):
        return tuple(_map_leaves(x, fn) for x in out)
    return fn(out)


def _rebuild(out, it):
    if isinstance(out, tuple):
        return tuple(_rebuild(x, it) for x in out)
    return next(it)


class _Trace:
    """An active transformation: observes op calls made in its own staging context."""

    def __init__(self):
        self.builder = current_builder()
        self.active = True

    def __enter__(self):
        STATE.traces.append(self)
        return self

    def __exit__(self, *exc):
        STATE.traces.remove(self)

    def paused(self):
        return _Paused(self)


class _Paused:
    def __init__(self, traces):
        self.traces = traces if isinstance(traces, list) else [traces]

    def __enter__(self):
        self.was = [t.active for t in self.traces]
        for t in self.traces:
            t.active = False

    def __exit__(self, *exc):
        for t, a in zip(self.traces, self.was):
            t.active = a


class Tape(_Trace):
    """Reverse mode: records the op calls that depend on watched arrays."""

    def __init__(self):
        super().__init__()
        self.tracked: dict[int, Array] = {}  # keeps the arrays alive, so ids stay unique
        self.entries: list[tuple[Callable, tuple, object]] = []

    def sees(self, args) -> bool:
        tracked = self.tracked
        return any(id(a) in tracked for a in args)

    def watch(self, x: Array) -> None:
        self.tracked[id(x)] = x

    def record(self, rule: Callable, args: tuple, out) -> None:
        """``rule(ct, out) -> cotangents of args`` is called by the backward pass."""
        for leaf in _leaves(out):
            if _differentiable(leaf):
                self.tracked[id(leaf)] = leaf
        self.entries.append((rule, args, out))

    def record_op(self, op, args, out) -> None:
        self.record(functools.partial(_op_vjp, op, args), args, out)

    def backward(self, outs: list, cts: list) -> dict[int, Array]:
        """Cotangents of everything reached from ``outs`` given ``cts`` (None = zero)."""
        acc: dict[int, Array] = {}
        for o, c in zip(outs, cts):
            if c is not None and id(o) in self.tracked:
                _accumulate(acc, o, c)
        with self.paused():
            for rule, args, out in reversed(self.entries):
                leaves = _leaves(out)
                cts_out = [acc.pop(id(leaf), None) for leaf in leaves]
                if all(c is None for c in cts_out):
                    continue
                filled = iter(c if c is not None else
                              (zeros_like_array(leaf) if isinstance(leaf, Array) else None)
                              for c, leaf in zip(cts_out, leaves))
                in_cts = rule(_rebuild(out, filled), out)
                for a, c in zip(args, in_cts):
                    if c is not None and id(a) in self.tracked:
                        _accumulate(acc, a, c)
        return acc


def _op_vjp(op, args, ct, out):
    cts = tuple(vjp_rule(op, ct, out, *args))
    if len(cts) != len(args):
        raise TypeError(f"vjp_rule for {op!r} returned {len(cts)} cotangents for "
                        f"{len(args)} operands")
    return cts


def _accumulate(acc: dict, x: Array, c) -> None:
    if not isinstance(c, Array) or c.type != x.type:
        raise TypeError(f"a derivative rule produced a cotangent of type "
                        f"{getattr(c, 'type', type(c).__name__)} for a value of type {x.type}")
    prev = acc.get(id(x))
    if prev is None:
        acc[id(x)] = c
    else:
        from hlodsl import ops
        acc[id(x)] = ops.Add()(prev, c)


class JvpTrace(_Trace):
    """Forward mode: carries a tangent alongside every value that depends on the inputs."""

    def __init__(self):
        super().__init__()
        self.tangents: dict[int, tuple[Array, Array]] = {}  # id -> (primal, tangent)

    def sees(self, args) -> bool:
        tangents = self.tangents
        return any(id(a) in tangents for a in args)

    def tangent(self, x):
        hit = self.tangents.get(id(x))
        return None if hit is None else hit[1]

    def set(self, x, t) -> None:
        if t is None or not _differentiable(x):
            return
        if not isinstance(t, Array) or t.type != x.type:
            raise TypeError(f"a derivative rule produced a tangent of type "
                            f"{getattr(t, 'type', type(t).__name__)} for a value of type "
                            f"{x.type}")
        self.tangents[id(x)] = (x, t)

    def record_op(self, op, args, out) -> None:
        tangents = tuple(self.tangent(a) for a in args)
        with self.paused():
            t_out = jvp_rule(op, tangents, out, *args)
        self.set_structure(out, t_out)

    def set_structure(self, out, t_out) -> None:
        if t_out is None:
            return
        if isinstance(out, tuple):
            for o, t in zip(out, t_out):
                self.set_structure(o, t)
        else:
            self.set(out, t_out)


def observed_call(op: HloOp, builder, args: tuple):
    """An op call while transformations are active (``HloOp.__call__`` routes here)."""
    traces = [t for t in STATE.traces if t.active and t.builder is builder and t.sees(args)]
    if not traces:
        return apply_op(op, builder, args)
    if isinstance(op, Composite) and op.differentiate_expansion:
        # Differentiate what the composite stages as: its ops are observed one by one.
        return op.stage(builder, args)
    out = apply_op(op, builder, args)
    for t in traces:
        t.record_op(op, args, out)
    return out


def _alias(x: Array) -> Array:
    """A new Array object for ``x``'s value, linked to x for the traces that see x.

    Each transformation watches its own input objects, so a function that also
    closes over the very array it is differentiated at treats the closure as a
    constant (and nested transformations never confuse their inputs).
    """
    y = fresh(x)
    link(y, x)
    return y


def fresh(x: Array) -> Array:
    """A new Array object for ``x``'s buffer or node, which no trace knows yet."""
    return Array._from_buffer(x._buf, x.type) if x._buf is not None else Array._from_node(x._node)


def link(alias: Array, source: Array) -> None:
    """Make ``alias`` carry ``source``'s derivatives in the active transformations.

    Traces follow Array objects; code that stands one array object for
    another (a fresh input, a captured closure value bound to an operand)
    links them so reverse and forward mode see through the substitution.
    """
    if not STATE.traces:
        return
    builder = current_builder()
    for t in STATE.traces:
        if t.active and t.builder is builder and t.sees((source,)):
            if isinstance(t, Tape):
                t.record(lambda ct, out: (ct,), (source,), alias)
            else:
                t.set(alias, t.tangent(source))


# -- zeros and checks ----------------------------------------------------------

def zeros_like_array(x: Array) -> Array:
    """An array of zeros of ``x``'s type (eager or staged, wherever x lives)."""
    from hlodsl import ops
    from .array import array

    zero = array(np.zeros((), x.dtype.np_dtype))
    return ops.Broadcast(x.shape)(zero) if x.shape else zero


def _ones_like(x: Array) -> Array:
    from hlodsl import ops
    from .array import array

    one = array(np.ones((), x.dtype.np_dtype))
    return ops.Broadcast(x.shape)(one) if x.shape else one


def _as_leaves(what: str, value, role: str) -> tuple[list, object]:
    leaves, tree = flatten(value)
    for i, x in enumerate(leaves):
        if isinstance(x, Token):
            raise TypeError(f"{what}: {role} leaf {i} is a token; tokens have no derivative")
        if not _differentiable(x):
            raise TypeError(
                f"{what}: {role} leaf {i} has type {x.type} ({x.dtype.__name__}): "
                "derivatives are taken with "
                "respect to floating-point (or complex) arrays only; pass integer and "
                "boolean values as non-differentiated arguments (argnums)")
    return leaves, tree


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
    return _vjp(f, primals, has_aux, "vjp")


def _vjp(f: Callable, primals: tuple, has_aux: bool, what: str):
    leaves, tree = _as_leaves(what, primals, "primal")
    with Tape() as tape:
        inputs = [_alias(x) for x in leaves]
        for x in inputs:
            tape.watch(x)
        out = f(*unflatten(tree, inputs))
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("vjp(has_aux=True): the function must return (output, aux), got "
                            f"{type(out).__name__}")
        out, aux = out
    out_leaves, out_tree = flatten(out)

    def pullback(ct):
        ct_leaves, ct_tree = flatten(ct)
        if ct_tree != out_tree or len(ct_leaves) != len(out_leaves):
            raise TypeError(f"vjp pullback: the cotangent's structure {ct_tree} does not "
                            f"match the output's {out_tree}")
        for o, c in zip(out_leaves, ct_leaves):
            if isinstance(o, Array) and c.type != o.type:
                raise TypeError(f"vjp pullback: cotangent of type {c.type} for an output "
                                f"of type {o.type}")
        acc = tape.backward(out_leaves, ct_leaves)
        grads = [acc.get(id(x)) for x in inputs]
        grads = [g if g is not None else zeros_like_array(x) for g, x in zip(grads, inputs)]
        return unflatten(tree, grads)

    return (out, pullback, aux) if has_aux else (out, pullback)


def _argnums_call(f, args, kwargs, argnums):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not -len(args) <= i < len(args):
            raise ValueError(f"argnums {argnums} out of range for {len(args)} positional "
                             "arguments")

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

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        g, diff = _argnums_call(f, args, kwargs, argnums)
        res = _vjp(g, diff, has_aux, f"grad of {getattr(f, '__name__', 'a function')!r}")
        out, pullback = res[0], res[1]
        if not (isinstance(out, Array) and out.shape == () and _differentiable(out)):
            got = out.type if isinstance(out, Array) else type(out).__name__
            raise TypeError(f"grad of {getattr(f, '__name__', f)!r}: the function must return "
                            f"a scalar floating-point array, it returned {got}"
                            + ("" if has_aux else "; use vjp for non-scalar outputs or "
                               "has_aux=True to return extra values"))
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
    vg = value_and_grad(f, argnums, has_aux)

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
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp(f, primals, tangents): primals and tangents must be tuples")
    leaves, tree = _as_leaves("jvp", tuple(primals), "primal")
    t_leaves, t_tree = flatten(tuple(tangents))
    if t_tree != tree:
        raise TypeError(f"jvp: the tangents' structure {t_tree} does not match the "
                        f"primals' {tree}")
    for x, t in zip(leaves, t_leaves):
        if not isinstance(t, Array) or t.type != x.type:
            raise TypeError(f"jvp: tangent of type {getattr(t, 'type', type(t).__name__)} "
                            f"for a primal of type {x.type}")
    with JvpTrace() as trace:
        inputs = [_alias(x) for x in leaves]
        for x, t in zip(inputs, t_leaves):
            trace.set(x, t)
        out = f(*unflatten(tree, inputs))
    aux = None
    if has_aux:
        out, aux = out
    out_leaves, out_tree = flatten(out)
    t_out = []
    for o in out_leaves:
        t = trace.tangent(o)
        t_out.append(t if t is not None or not _differentiable(o) else zeros_like_array(o))
    t_out = unflatten(out_tree, t_out)
    return (out, t_out, aux) if has_aux else (out, t_out)


def hvp(f: Callable, primals: tuple, tangents: tuple):
    """Hessian-vector product of scalar ``f``: forward mode over reverse mode.

    >>> import numpy as np, hlodsl as hd
    >>> hd.hvp(lambda x: x * x * x, (hd.array(2.0),), (hd.array(1.0),))
    hlodsl.Array[float64, ()](12.)
    """
    t_out = jvp(grad(f, argnums=tuple(range(len(primals)))), tuple(primals),
                tuple(tangents))[1]
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

    @functools.wraps(f)
    def hessian_f(x):
        from hlodsl import ops
        from .array import array

        x = x if isinstance(x, Array) else array(x)
        g = grad(f)
        rows = []
        for i in range(x.size):
            basis = np.zeros(x.size, x.dtype.np_dtype)
            basis[i] = 1
            t = array(basis.reshape(x.shape))
            row = jvp(g, (x,), (t,))[1]
            rows.append(ops.Reshape((1,) + x.shape)(row))
        if not rows:
            return array(np.zeros(x.shape * 2, x.dtype.np_dtype))
        stacked = ops.Concatenate(0)(*rows) if len(rows) > 1 else rows[0]
        return ops.Reshape(x.shape + x.shape)(stacked)

    return hessian_f


# -- user-defined derivatives -----------------------------------------------------

class custom_vjp:
    """A function with a user-given reverse-mode derivative.

    ``fwd(*args) -> (out, residuals)`` runs instead of the function when a
    derivative is being taken; ``bwd(residuals, ct)`` returns one cotangent per
    positional argument (``None`` for zero). Forward mode differentiates the
    function's own body.

    >>> import numpy as np, hlodsl as hd
    >>> import hlodsl.stdlib as xp
    >>> @hd.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> def fwd(x):
    ...     return x, None
    >>> def bwd(res, ct):
    ...     return (xp.clip(ct, -1.0, 1.0),)
    >>> _ = clip_gradient.defvjp(fwd, bwd)
    >>> hd.grad(lambda x: xp.sum(clip_gradient(x) * 5.0))(hd.array([1.0, 2.0]))
    hlodsl.Array[float64, (2,)]([1., 1.])
    """

    def __init__(self, fun: Callable):
        # update_wrapper first: it copies a wrapped custom_vjp/custom_jvp's own
        # attributes (its fun among them) into ours, so that both can be stacked.
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = self.bwd = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> "custom_vjp":
        self.fwd, self.bwd = fwd, bwd
        return self

    def __call__(self, *args):
        if self.fwd is None:
            raise TypeError(f"custom_vjp {self.__name__!r}: call defvjp(fwd, bwd) first")
        leaves, tree = flatten(args)
        builder = current_builder()
        tapes = [t for t in STATE.traces if isinstance(t, Tape) and t.active
                 and t.builder is builder and t.sees(leaves)]
        if not tapes:
            return self.fun(*args)
        with _Paused(tapes):
            out, residuals = self.fwd(*args)
        out_leaves, out_tree = flatten(out)
        n_args = len(args)
        bwd, name = self.bwd, self.__name__

        def rule(ct, _out):
            cts = bwd(residuals, unflatten(out_tree, list(ct)))
            if not isinstance(cts, (tuple, list)) or len(cts) != n_args:
                raise TypeError(f"custom_vjp {name!r}: bwd must return a tuple of {n_args} "
                                f"cotangents (one per argument), got {cts!r}")
            flat = []
            for a, c in zip(args, cts):
                a_leaves, _ = flatten(a)
                if c is None:
                    flat += [None] * len(a_leaves)
                else:
                    flat += flatten(c)[0]
            return flat

        for t in tapes:
            t.record(rule, tuple(leaves), tuple(out_leaves))
        return out


class custom_jvp:
    """A function with a user-given forward-mode derivative.

    ``jvp_fn(primals, tangents) -> (out, tangent_out)``; reverse mode
    differentiates through what ``jvp_fn`` computes for the primal output.

    >>> import numpy as np, hlodsl as hd
    >>> import hlodsl.stdlib as xp
    >>> @hd.custom_jvp
    ... def f(x):
    ...     return xp.sin(x)
    >>> _ = f.defjvp(lambda p, t: (xp.sin(p[0]), 2.0 * t[0]))
    >>> hd.jvp(f, (hd.array(0.0),), (hd.array(1.0),))[1]
    hlodsl.Array[float64, ()](2.)
    """

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)  # first, as in custom_vjp
        self.fun = fun
        self.jvp_fn = None

    def defjvp(self, jvp_fn: Callable) -> "custom_jvp":
        self.jvp_fn = jvp_fn
        return self

    def __call__(self, *args):
        leaves, tree = flatten(args)
        builder = current_builder()
        traces = [t for t in STATE.traces if isinstance(t, JvpTrace) and t.active
                  and t.builder is builder and t.sees(leaves)]
        if not traces or self.jvp_fn is None:
            return self.fun(*args)
        # The innermost forward trace uses the rule; outer transformations (paused
        # ones aside) differentiate through what the rule computes.
        trace = traces[-1]
        tangents = [trace.tangent(x) for x in leaves]
        tangents = [t if t is not None else
                    (zeros_like_array(x) if _differentiable(x) else None)
                    for t, x in zip(tangents, leaves)]
        with trace.paused():
            out, t_out = self.jvp_fn(args, unflatten(tree, tangents))
        out_leaves, _ = flatten(out)
        for o, t in zip(out_leaves, flatten(t_out)[0]):
            trace.set(o, t)
        return out
