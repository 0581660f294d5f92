"""``HloOp``: the base of every HLO operation, and what calling one means.

An op is a frozen attrs class whose fields are the op's *static operands*;
calling it on arrays applies it to the *dynamic operands* (the paper's
``HloDot(dims)(A, B)``). A subclass supplies three things, all in one place:

- ``result_type(*operand_types)``: the shape rule (the paper's transfer
  function); it raises ``ShapeError`` through ``require`` when violated;
- ``attributes(operand_types, result_type, ctx)``: the HLO text attributes
  (``dimensions={0}``, ``to_apply=...``) after the operand list;
- optionally ``reference(*numpy_arrays)``: a numpy model used by the tests.

Subclassing with ``opcode="..."`` registers the op; nothing else is edited.

Calling an op while a function is being staged records a node; calling it on
concrete arrays otherwise compiles a one-op module (cached by op and operand
types) and runs it.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, ClassVar

import attrs

from hlodsl.arrays.array import Array, Token
from hlodsl.errors import ArraySizeError, internal_classes, require, staging_error, user_location
from hlodsl.cache import BoundedCache
from hlodsl.settings import config
from hlodsl.context import STATE
from hlodsl.arrays.dtypes import device_refusal
from .graph import OPCODES, Builder
from hlodsl.arrays.tree import static_key
from hlodsl.arrays.types import ArrayType, TokenType, TupleType

__all__ = ["HloOp", "Composite", "frozen", "registry", "op_fields", "apply_op", "observed_call",
           "use_eager", "op_class"]

# The graph's opcode table (the builder makes parameters and constants from it).
_REGISTRY = OPCODES

# Concrete Array classes are real subclasses of Array: the C-level check skips
# plum's parametric __instancecheck__ (a Python call) on this hot path.
_is_array = type.__instancecheck__.__get__(Array)


def frozen(cls=None, **kwargs):
    """``attrs.frozen`` for op classes: a call-like repr, and checked, exact static operands.

    Every field is a static operand. A value its converter rejects raises an
    error naming the op and the field (not the converter's bare complaint),
    and fields compare by ``hlodsl.arrays.tree.static_key``: ``Scale(0.0)`` and
    ``Scale(-0.0)`` are different ops, so they are never shared as one node.

    >>> @frozen
    ... class Scale(HloOp):
    ...     factor: float = 1.0
    >>> Scale(2.0), Scale(), Scale(0.0) == Scale(-0.0)
    (Scale(factor=2.0), Scale(), False)
    """
    kwargs.setdefault("repr", False)
    kwargs.setdefault("field_transformer", _static_operands)
    if kwargs.get("eq", True) is not False:
        kwargs.setdefault("cache_hash", True)  # ops are hashed by every eager call and node
    if cls is None:
        return lambda c: _checked_init(attrs.frozen(c, **kwargs))
    return _checked_init(attrs.frozen(cls, **kwargs))


def _checked_init(cls):
    """Make a wrong construction (``Exp(x)``, ``Reshape((3,), 1, 2)``) name the op class.

    Python's own complaint names the class that defined ``__init__`` (``Unary``,
    not ``Exp``) and does not say that arrays go in the call, not the constructor.
    """
    init = cls.__dict__.get("__init__")
    if init is None:
        return cls

    def __init__(self, *args, **kwargs):
        try:
            init(self, *args, **kwargs)
        except TypeError as e:
            _check_construction(type(self), init, args, kwargs, e)
            raise  # the arguments bind: a converter or a check refused a value

    __init__.__signature__ = inspect.signature(init)
    __init__.__doc__, __init__.__qualname__ = init.__doc__, init.__qualname__
    cls.__init__ = __init__
    return cls


def _check_construction(cls, init, args, kwargs, error: TypeError) -> None:
    """Raise a TypeError naming ``cls`` if ``args``/``kwargs`` do not fit its static operands."""
    try:
        inspect.signature(init).bind(None, *args, **kwargs)
    except TypeError:
        pass
    else:
        return
    name = cls.__name__
    given = ", ".join([_describe(a) for a in args] +
                      [f"{k}={_describe(v)}" for k, v in kwargs.items()])
    call = f"{name}()({_operand_names(cls)})"
    fields = [f.name for f in attrs.fields(cls) if f.init] if attrs.has(cls) else []
    if not fields:
        raise TypeError(f"{name}({given}): {name} has no static operands; the arrays it "
                        f"applies to go in the call, as {call}") from None
    if len(args) > len(fields):
        why = f"got {len(args)} positional arguments"
    else:
        why = str(error).replace(f"{init.__qualname__}()", name)
    raise TypeError(f"{name}({given}): {why}; {name} takes the static operands "
                    f"({', '.join(fields)}), and the arrays it applies to go in the call, as "
                    f"{name}(...)({_operand_names(cls)})") from None


def _describe(value) -> str:
    if _is_array(value):
        return f"<array {value.type}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _operand_names(cls) -> str:
    if not hasattr(cls, "result_type"):
        return "..."
    params = list(_shape_rule_signature(cls).parameters.values())[1:]
    return ", ".join(p.name if p.kind is not p.VAR_POSITIONAL else "*operands" for p in params)


def _static_operands(cls, fields):
    out = []
    for f in fields:
        changes = {}
        if f.converter is not None and callable(f.converter):
            changes["converter"] = _named_converter(cls.__name__, f.name, f.converter)
        if f.eq and f.eq_key is None:
            changes["eq_key"] = static_key
        out.append(f.evolve(**changes) if changes else f)
    return out


def _named_converter(op: str, field: str, convert):
    """``convert``, with its failures reported as a bad static operand of ``op``."""
    convert = getattr(convert, "inner", convert)  # an inherited field: re-wrap the original

    def convert_static_operand(value):
        try:
            return convert(value)
        except Exception as e:  # noqa: BLE001 (any converter failure is a bad operand)
            cls = e.__class__ if isinstance(e, (TypeError, ValueError)) else TypeError
            raise cls(f"{op}: static operand {field}={value!r} is not valid: {e}") from None

    convert_static_operand.inner = convert
    return convert_static_operand


def registry() -> dict[str, type]:
    """Opcode name -> op class, for every registered op (a copy)."""
    return dict(_REGISTRY)


def op_class(opcode: str) -> type:
    """The registered op class of ``opcode``: how shared helpers (``hlodsl.ops._ad``,
    ``_batch``) build ops without importing the modules that define them.

    >>> op_class("add").__name__
    'Add'
    """
    try:
        return _REGISTRY[opcode]
    except KeyError:
        raise LookupError(f"no op is registered with opcode {opcode!r} (is hlodsl.ops "
                          "imported?)") from None


class HloOp:
    """Base class of HLO operations. Subclasses are ``@attrs.frozen`` classes."""

    opcode: ClassVar[str]
    #: Identical (op, operands) nodes are shared; ops with side effects opt out.
    interned: ClassVar[bool] = True

    def __init_subclass__(cls, opcode: str | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if opcode is not None:
            cls.opcode = opcode
        elif "opcode" not in cls.__dict__:
            return  # an abstract base (Unary, Binary, ...), not an op
        # attrs' slotted classes are rebuilt from the class dict (opcode
        # included), so the rebuilt class replaces the first registration.
        opcode = cls.opcode
        known = _REGISTRY.get(opcode)
        same = known is not None and (known.__module__, known.__qualname__) == \
            (cls.__module__, cls.__qualname__)
        if known is not None and not same:
            raise TypeError(f"opcode {opcode!r} is already registered by "
                            f"{known.__module__}.{known.__qualname__}")
        _REGISTRY[opcode] = cls

    # -- the three rules an op supplies -------------------------------------

    def result_type(self, *operand_types) -> ArrayType | TupleType:
        raise NotImplementedError(f"{type(self).__name__} has no shape rule")

    def attributes(self, operand_types, result_type, ctx) -> list[str]:
        """HLO attributes after the operand list, e.g. ``["dimensions={0}"]``."""
        return []

    def emit(self, operands: list[str], operand_types, result_type, ctx) -> str:
        """The instruction text after ``name = type``: opcode, operands, attributes."""
        text = f"{self.opcode}({', '.join(operands)})"
        for attr in self.attributes(operand_types, result_type, ctx):
            text += ", " + attr
        return text

    # -- calling ------------------------------------------------------------

    def __call__(self, *args: Any):
        for i, a in enumerate(args):
            if not _is_array(a) and type(a) is not Token:
                raise TypeError(
                    f"{self!r}: operand {i} is a {type(a).__name__}, not an hlodsl Array. "
                    "Ops take arrays only (hlodsl.array(x) makes one; the stdlib functions "
                    "also accept Python scalars)"
                )
        state = STATE  # this thread's staging state (hlodsl.context)
        builder = state.builders[-1] if state.builders else None
        if state.traces:  # empty unless a derivative is being taken: one check
            return observed_call(self, builder, args)
        if builder is None:
            return _eager(self, args)
        return self.stage(builder, args)

    def stage(self, builder: Builder, args):
        """Record this op applied to ``args`` in ``builder``; returns symbolic result(s)."""
        types = tuple(a.type for a in args)
        check_arity(self, types)
        rtype = result_type_of(self, types)
        # NOTE: a type XLA aborts on (float6 here) never reaches it: refused at the op.
        why = device_refusal(rtype) or next(filter(None, map(device_refusal, types)), None)
        if why is not None:
            require(False, self, types, why)
        node = builder.add(self, tuple(builder.node_of(a) for a in args), rtype, user_location())
        return wrap_node(builder, node)

    def __repr__(self) -> str:
        # Fields still at their defaults are left out, so reprs read like the call.
        shown = [f for f in op_fields(self)
                 if f.default is attrs.NOTHING or getattr(self, f.name) != f.default]
        fields = ", ".join(f"{f.name}={_short(getattr(self, f.name))}" for f in shown)
        return f"{type(self).__name__}({fields})"


def result_type_of(op: HloOp, types: tuple):
    """``op.result_type(*types)``; a result XLA cannot address is refused as ``op``'s."""
    try:
        return op.result_type(*types)
    except ArraySizeError as e:
        raise e.of(op, types) from None


def observed_call(op: HloOp, builder, args: tuple):
    """An op call while transformations are active (``HloOp.__call__`` routes here).

    A transformation (``hlodsl.transforms``: reverse and forward mode) is an
    object on this thread's ``STATE.traces`` with a ``builder`` (the staging
    context it watches), an ``active`` flag, ``sees(args)`` (whether the call
    involves values it follows) and ``record_op(op, args, out)``. The core
    only routes calls to them; what they do is theirs.
    """
    traces = [t for t in STATE.traces if t.active and t.builder is builder and t.sees(args)]
    if not traces:
        return apply_op(op, builder, args)
    if isinstance(op, Composite) and op.differentiate_expansion:
        # Transform what the composite stages as: its ops are observed one by one.
        return op.stage(builder, args)
    out = apply_op(op, builder, args)
    for t in traces:
        t.record_op(op, args, out)
    return out


def apply_op(op: HloOp, builder: Builder | None, args):
    """Run ``op`` on ``args``: eagerly when ``builder`` is None, else record it there."""
    if builder is None:
        return _eager(op, args)
    return op.stage(builder, args)


#: ``[own(cls) -> bool]``: whether composite class ``cls`` has a batching rule of its own
#: (``hlodsl.ir.rules`` hands it in).
_OWN_BATCH_RULE: list = []


class Composite(HloOp):
    """An op that stages as an expression of other ops instead of one instruction.

    A subclass gives ``result_type`` (checked on every call) and
    ``expand(*arrays)``, which calls other ops; that expression is what
    staging records, eagerly and under ``compile``. It is how to add an op
    that no single HLO instruction expresses, or that a backend lacks.

    Derivatives and ``vmap`` see the ops ``expand`` calls, unless the class
    has rules of its own: a ``vjp_rule`` with ``differentiate_expansion =
    False``, a ``batch_rule`` (``vmap`` then batches the composite as a unit).

    >>> from hlodsl import ops
    >>> class Square(Composite, opcode="square-doc-example"):
    ...     def result_type(self, x):
    ...         return x
    ...     def expand(self, x):
    ...         return ops.Multiply()(x, x)
    >>> import numpy as np, hlodsl as hd
    >>> Square()(hd.array(np.float32([3])))
    hlodsl.Array[float32, (1,)]([9.])
    """

    #: Derivatives see the ops ``expand`` calls. A composite with its own
    #: ``vjp_rule`` (one that differentiates better as a unit) sets this False.
    differentiate_expansion: ClassVar[bool] = True

    def expand(self, *args):
        raise NotImplementedError(f"{type(self).__name__} has no expand()")

    def stage(self, builder, args):
        if getattr(builder, "keeps_composites", False) and _OWN_BATCH_RULE \
                and _OWN_BATCH_RULE[0](type(self)) \
                and not any(t.active and t.builder is builder for t in STATE.traces):
            # vmap's example program: recorded whole, so that vmap batches it by its own
            # rule (hlodsl.transforms.batching interprets that program, never prints it).
            return HloOp.stage(self, builder, args)
        types = tuple(a.type for a in args)
        check_arity(self, types)
        result_type_of(self, types)  # the shape rule still guards the call
        return self.expand(*args)

    def emit(self, operands, operand_types, result_type, ctx) -> str:
        raise TypeError(f"{self!r} is a composite: it stages as other ops, never as itself")


# A user op's shape rule runs in user code; its frames are not the call site.
internal_classes.append(HloOp)


@functools.cache
def _shape_rule_signature(cls) -> inspect.Signature:
    return inspect.signature(cls.result_type)


def check_arity(op, types) -> None:
    """A wrong number of operands is a ShapeError naming the op, not a Python TypeError."""
    try:
        _shape_rule_signature(type(op)).bind(op, *types)
    except TypeError:
        params = list(_shape_rule_signature(type(op)).parameters.values())[1:]
        wanted = ", ".join(p.name if p.kind is not p.VAR_POSITIONAL else f"*{p.name}"
                           for p in params)
        require(False, op, types, f"takes operands ({wanted}), got {len(types)}")


def op_fields(op) -> tuple:
    return attrs.fields(type(op)) if attrs.has(type(op)) else ()


def _short(value) -> str:
    if isinstance(value, type):
        return value.__name__
    if callable(value):
        return getattr(value, "__qualname__", None) or getattr(value, "__name__", repr(value))
    return repr(value)


def wrap_node(builder: Builder, node):
    """Python value of a node: an Array, or a tuple (of GTEs) for tuple-shaped nodes."""
    if isinstance(node.type, ArrayType):
        return Array._from_node(node)
    if isinstance(node.type, TokenType):
        return Token(node)
    get = _REGISTRY["get-tuple-element"]  # hlodsl.ir.structural, a floor above this one
    return tuple(
        wrap_node(builder, builder.add(get(i), (node,), t, node.loc))
        for i, t in enumerate(node.type.elements)
    )


# -- eager execution: one cached one-op module per (op, operand types) ---------

# Ops holding a fresh lambda make a new key on every call: the cache is bounded
# (hlodsl.config.eager_cache_size), so a loop of such calls cannot grow it.
_EAGER = BoundedCache(lambda: config.eager_cache_size, "eager one-op modules")


def _eager(op: HloOp, args):
    key = (op, tuple(a.type for a in args))
    entry = _EAGER.get(key)
    if entry is None:
        entry = _EAGER.put(key, _compile_eager(op, key[1]))
    for a in args:
        if a._buf is None:
            raise staging_error(
                f"a symbolic array {a.type} escaped the function being staged and was "
                f"passed to {op!r} outside of staging"
            )
    if any(getattr(type(a), "_sharded", False) for a in args):
        return _ONE_OP[1](entry, args)  # over the mesh of the sharded operands
    return entry.run(args)


def _compile_eager(op: HloOp, types):
    """Eager semantics are staged semantics of a one-op function."""
    if any(isinstance(t, TokenType) for t in types):
        raise staging_error(f"{op!r} takes a token: tokens exist only inside staged "
                            "programs (call it inside a function given to hlodsl.compile)")
    return _ONE_OP[0](op, types)


def _no_compiler(*args):
    raise RuntimeError("eager op calls need hlodsl.one_op (import hlodsl)")


# Staging and compiling sit on floors above the ops' base: hlodsl.compilation.one_op hands in
# how a one-op module is built (op, types -> compiled entry) and how an entry runs
# over the mesh of sharded operands.
_ONE_OP = [_no_compiler, _no_compiler]


def use_eager(build, run_sharded) -> None:
    """Install eager execution: ``build(op, types)`` makes the compiled entry of a one-op
    module, ``run_sharded(entry, args)`` runs it on sharded operands (hlodsl.one_op)."""
    _ONE_OP[:] = [build, run_sharded]
