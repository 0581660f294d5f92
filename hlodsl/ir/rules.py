"""The rules an op has besides its shape rule: derivatives and batching, declared here.

Each rule is a plum generic dispatched on the op's class. The core declares
them; each op's module (in ``hlodsl.ops``) fills them in beside the op, and the
transformations (``hlodsl.transforms``) call them:

- ``vjp_rule(op, ct, out, *args)``: cotangents of the operands (reverse mode);
- ``jvp_rule(op, tangents, out, *args)``: the tangent of the result (forward mode;
  by default the transpose of ``vjp_rule``, installed by the transformations);
- ``batch_rule(op, args, dims)``: the op applied to operands carrying an extra batch
  dimension (``vmap``).

An op whose results carry no derivative says so with ``nondifferentiable``; an
op that cannot be batched says why with ``not_batchable``. ``tests`` check that
every registered op has both kinds of rule, or a declaration.

Some rules need a transformation itself: the derivative of ``While`` is the
forward-mode derivative of its body. The core cannot import the layer that
implements transformations (it sits above the ops), so that layer hands its
entry points in, to ``transformations``, when it is imported.

>>> from hlodsl import ops
>>> ops.Exp in rule_classes(vjp_rule), has_derivative(ops.Compare)
(True, True)
"""

from __future__ import annotations

import inspect
import typing
from typing import Callable

from .dispatcher import dispatch, methods
from hlodsl.errors import HloDslError
from . import op as _op
from .op import Composite, HloOp

__all__ = [
    "vjp_rule", "jvp_rule", "batch_rule", "nondifferentiable", "not_batchable",
    "register_rule", "rule_classes", "has_derivative", "batchable", "not_batchable_reason",
    "own_batch_rule",
    "NotBatchableError", "transformations",
]


class NotBatchableError(HloDslError, NotImplementedError):
    """An op reached by ``vmap`` has no batching rule (or cannot have one)."""


# -- the generics ---------------------------------------------------------------------

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


@dispatch.abstract
def jvp_rule(op: HloOp, tangents: tuple, out, *args):
    """Tangent of ``op``'s result ``out`` given its operands' ``tangents`` (None = zero).

    The transformations layer installs the default for every op: the
    transpose of ``vjp_rule``. Ops without a reverse rule (``While``) give
    their own.
    """


@dispatch
def batch_rule(op: HloOp, args: tuple, dims: tuple):
    """``op`` applied to ``args`` whose batch dimension is ``dims[i]`` (0, or None: unbatched).

    Every batched operand carries its batch dimension first. Returns
    ``(result, result_dims)``: the result as ``op`` returns it (an array or a
    tuple of arrays) and, in the same structure, where each result's batch
    dimension is (any position, or None for a result every example shares).
    """
    reason = not_batchable_reason(type(op))
    raise NotBatchableError(
        f"vmap: {op!r} cannot be batched"
        + (f": {reason}" if reason else
           f": it has no batching rule; define one with @hlodsl.batch_rule.dispatch for "
           f"{type(op).__name__} (operand types {', '.join(str(a.type) for a in _flat(args))})"))


def _flat(args) -> list:
    out = []
    for a in args:
        out += list(a) if isinstance(a, tuple) else [a]
    return out


# -- declarations ------------------------------------------------------------------------

def register_rule(generic, op_class: type, fn: Callable) -> None:
    """Add ``fn`` as ``generic``'s method for ``op_class`` (a class known only at run time).

    ``@vjp_rule.dispatch`` with an ``op: MyOp`` annotation is the usual way;
    this is for rules made in a loop, where the annotation is a variable.
    """
    def rule(op, *rest):
        return fn(op, *rest)

    # A wrapper per class (one function may serve several: plum reads annotations),
    # with the generic's own signature, the op's class in place of HloOp's.
    base = next((m.implementation for m in methods(generic)
                 if m.signature.types[0] is HloOp), fn)  # an abstract generic: fn's own
    hints = typing.get_type_hints(base)  # string annotations (PEP 563) made types
    signature = inspect.signature(base)
    params = [q.replace(annotation=hints.get(q.name, q.empty))
              for q in signature.parameters.values()]
    rule.__signature__ = signature.replace(
        parameters=[params[0].replace(annotation=op_class), *params[1:]])
    rule.__annotations__ = {**hints, params[0].name: op_class}
    rule.__name__ = rule.__qualname__ = f"{getattr(fn, '__name__', 'rule')}_of_{op_class.__name__}"
    rule.__doc__ = fn.__doc__
    generic.dispatch(rule)


def nondifferentiable(*op_classes: type) -> None:
    """Declare ops whose results carry no derivative (comparisons, integer ops, RNG).

    >>> from hlodsl import ops
    >>> nondifferentiable(ops.Compare)   # (already declared in ops/compare.py)
    """
    for cls in op_classes:
        def no_cotangents(op, ct, out, *args):
            return (None,) * len(args)

        def no_tangent(op, tangents: tuple, out, *args):
            return None

        name = cls.__name__.lower()
        no_cotangents.__name__ = no_cotangents.__qualname__ = f"{name}_has_no_vjp"
        no_tangent.__name__ = no_tangent.__qualname__ = f"{name}_has_no_jvp"
        register_rule(vjp_rule, cls, no_cotangents)
        register_rule(jvp_rule, cls, no_tangent)


_NOT_BATCHABLE: dict[type, str] = {}


def not_batchable(*op_classes: type, reason: str) -> None:
    """Declare ops ``vmap`` cannot batch, and why (the error ``vmap`` raises says it).

    >>> class Probe(HloOp, opcode="probe-doc-example"):
    ...     pass
    >>> not_batchable(Probe, reason="it reads the device's state")
    >>> not_batchable_reason(Probe)
    "it reads the device's state"
    """
    for cls in op_classes:
        _NOT_BATCHABLE[cls] = reason


def not_batchable_reason(op_class: type) -> str | None:
    """Why ``op_class`` (or a base of it) was declared not batchable, else None."""
    for cls in op_class.__mro__:
        if cls in _NOT_BATCHABLE:
            return _NOT_BATCHABLE[cls]
    return None


def rule_classes(generic=None) -> set[type]:
    """The op classes ``generic`` (default: ``vjp_rule``) has a method of their own for."""
    generic = vjp_rule if generic is None else generic
    return {m.signature.types[0] for m in methods(generic)} - {HloOp}


def has_derivative(op_class: type) -> bool:
    """Whether ``op_class`` (or a base of it) has a vjp or jvp rule, or is nondifferentiable."""
    if issubclass(op_class, Composite) and op_class.differentiate_expansion:
        return True
    known = rule_classes(vjp_rule) | rule_classes(jvp_rule)
    return any(issubclass(op_class, k) for k in known if isinstance(k, type))


_OWN: dict = {}  # composite class -> has a batching rule of its own, per count of methods


def own_batch_rule(op_class: type) -> bool:
    """Whether composite ``op_class`` (or a composite base of it) has a ``batch_rule`` of its
    own: ``vmap`` then batches it by that rule instead of batching what it expands to.

    >>> from hlodsl import ops
    >>> class Twice(Composite, opcode="twice-doc-example"):
    ...     def result_type(self, x):
    ...         return x
    ...     def expand(self, x):
    ...         return ops.Add()(x, x)
    >>> own_batch_rule(Twice)
    False
    >>> @batch_rule.dispatch
    ... def _(op: Twice, args: tuple, dims: tuple):
    ...     return Twice()(*args), 0
    >>> own_batch_rule(Twice)
    True
    """
    count = len(methods(batch_rule))
    known = _OWN.get(op_class)
    if known is not None and known[0] == count:
        return known[1]
    own = any(isinstance(k, type) and issubclass(k, Composite) and issubclass(op_class, k)
              for k in rule_classes(batch_rule))
    _OWN[op_class] = (count, own)
    return own


_op._OWN_BATCH_RULE[:] = [own_batch_rule]


def batchable(op_class: type) -> bool:
    """Whether ``vmap`` has a rule for ``op_class`` (its own, or a base class's)."""
    if not_batchable_reason(op_class) is not None:
        return False
    if issubclass(op_class, Composite):
        return True  # batched as what it expands to
    return any(issubclass(op_class, k) for k in rule_classes(batch_rule) if isinstance(k, type))


# -- what the transformations layer hands in -----------------------------------------------

class _Transformations:
    """Entry points of ``hlodsl.transforms``, for the rules of ops that hold functions.

    ``vjp(f, *primals)`` and ``jvp(f, primals, tangents)`` as ``hlodsl.vjp``/``jvp``;
    ``batch(computation, args, dims)`` runs a staged computation on batched
    operands (``vmap``'s interpreter). Set when ``hlodsl.transforms`` is imported.
    """

    vjp: Callable | None = None
    jvp: Callable | None = None
    batch: Callable | None = None

    def __getattribute__(self, name):
        value = object.__getattribute__(self, name)
        if value is None:
            raise RuntimeError(f"hlodsl.transforms is not imported, so rules cannot use "
                               f"its {name}; import hlodsl")
        return value


transformations = _Transformations()
