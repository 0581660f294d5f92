"""Errors raised by hlodsl, and the user's source location they point at.

Every error that a user's program can provoke names the op, its static
operands, the argument types and the line of the user's code that made the
call, found by walking the stack past hlodsl's own frames.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import plum

from .context import STATE

__all__ = [
    "HloDslError", "ShapeError", "StagingError", "XlaCompileError", "MemoryLimitError",
    "ExportError", "CheckpointError",
    "NoMethodError", "ArraySizeError", "DonatedArrayError", "RecompileWarning",
    "StaticArgumentWarning", "DonationWarning",
    "SourceLocation", "user_location", "require",
]

# Modules whose frames are library internals, not the user's call site.
_INTERNAL_PREFIXES = ("hlodsl", "plum", "beartype", "attr", "contextlib", "functools")


#: Classes whose methods are library code even when defined in user modules
#: (HloOp: a user op's shape rule is not where the user called the op).
internal_classes: list[type] = []


class HloDslError(Exception):
    """Base class of all errors raised by hlodsl."""


class ShapeError(HloDslError, TypeError):
    """An op's shape rule rejected its operands or static operands."""


class StagingError(HloDslError):
    """A Python construct cannot be staged (e.g. ``if`` on a symbolic array)."""


class XlaCompileError(HloDslError):
    """XLA rejected a module that hlodsl emitted."""


class MemoryLimitError(HloDslError, MemoryError):
    """A program cannot be made to fit its ``memory_limit`` (``hd.compile(f, memory_limit=...)``)."""


class ExportError(HloDslError, ValueError):
    """A program ``hd.export`` cannot export, or bytes ``hd.deserialize`` cannot read
    (not an export, damaged, or written by a newer hlodsl or StableHLO: the message names
    both versions)."""


class CheckpointError(HloDslError, ValueError):
    """A checkpoint ``hd.load`` cannot read (not a checkpoint, damaged or truncated), or a
    tree ``hd.save`` cannot save (a value that is not an array, number, string or None)."""


class ArraySizeError(HloDslError, ValueError):
    """An array type whose element count or size in bytes XLA cannot count (over int64).

    A ``ValueError``, as numpy's "array is too big". ``op`` is the op whose
    result it would have been, once known.
    """

    op = None

    def of(self, op, operand_types) -> ArraySizeError:
        """This error said as ``op``'s, applied to ``operand_types``, at the user's line."""
        if self.op is not None:  # an inner op already said it
            return self
        types = ", ".join(str(t) for t in operand_types)
        err = ArraySizeError(with_location(f"{op!r} cannot be applied to ({types}): "
                                           f"its result {self}"))
        err.op = op
        return err


class NoMethodError(HloDslError, plum.NotFoundLookupError, TypeError):
    """No method of a generic function takes arguments of these types.

    A ``TypeError``, as numpy and the array API raise for operands of the wrong
    type, and plum's ``NotFoundLookupError``, which code written against plum
    catches. ``f_name``, ``target`` (the arguments) and ``methods`` are plum's.
    """

    def __init__(self, message: str, f_name: str | None = None, target: tuple = (),
                 methods=()):
        Exception.__init__(self, message)  # args: what str(), pickling and tracebacks use
        # plum's attributes, set here: its (compiled) __init__ refuses a subclass's instance.
        self.f_name, self.target, self.methods = f_name, target, methods
        self.max_suggestions = 3

    # plum renders its lookup errors with rich; this one is already plain text.
    def __str__(self) -> str:
        return self.args[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.args[0]!r})"

    def __rich_console__(self, console, options):
        yield self.args[0]

    def __reduce__(self):
        # The arguments and methods need not pickle (functions, arrays): the message does.
        return type(self), (self.args[0], self.f_name)


class DonatedArrayError(HloDslError, RuntimeError):
    """An array was read after a compiled call took over its buffer (``hd.compile(f,
    donate_argnums=...)``): the message names that call. A ``RuntimeError``, as jax
    raises for a deleted array."""


class RecompileWarning(UserWarning):
    """A compiled function keeps compiling new signatures (``hlodsl.config.recompile_warning``)."""


class StaticArgumentWarning(UserWarning):
    """A static argument of a compiled function is keyed by identity: mutating it does not
    recompile (docs/staging.md, "Static arguments")."""


class DonationWarning(UserWarning):
    """A donated argument could not be donated: no result of the compiled program has its
    element type and shape, so XLA has nowhere to reuse its buffer (it stays readable)."""


class SourceLocation(NamedTuple):
    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


def _is_internal(frame) -> bool:
    g = frame.f_globals
    if g.get("__hlodsl_user_code__"):  # e.g. hlodsl.demo: library file, user-style code
        return False
    if g.get("__name__", "").startswith(_INTERNAL_PREFIXES):
        return True
    owner = frame.f_locals.get("self") if frame.f_code.co_varnames[:1] == ("self",) else None
    return owner is not None and isinstance(owner, tuple(internal_classes))


def user_location(skip: int = 1) -> SourceLocation | None:
    """The innermost stack frame that is not hlodsl (or plum) code.

    While a staged program is replayed (``hlodsl.interpret``), the line of the
    instruction being replayed: the user's line that made it.
    """
    if STATE.location is not None:
        return STATE.location
    frame = sys._getframe(skip)
    while frame is not None and _is_internal(frame):
        frame = frame.f_back
    if frame is None:
        return None
    return SourceLocation(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


def with_location(message: str) -> str:
    """``message`` followed by the user's line that made the failing call, where known."""
    loc = user_location(2)
    return f"{message}\n  at {loc}" if loc else message


def require(condition: bool, op, operand_types, message: str) -> None:
    """Raise a ``ShapeError`` naming ``op``, its operand types and the user's line.

    Shape rules call this; ``message`` says which constraint of the op failed.
    """
    if condition:
        return
    types = ", ".join(str(t) for t in operand_types)
    raise ShapeError(with_location(f"{op!r} cannot be applied to ({types}): {message}"))


def staging_error(message: str) -> StagingError:
    return StagingError(with_location(message))
