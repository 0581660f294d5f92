"""A function's source, read back, and checked against the code that was loaded.

Conversion rewrites a function's *source*, which Python does not keep: it is
read from the file (``linecache``) when the function is first converted. The
file may have changed since the module was imported, so the source is used
only if it compiles, in the function's own scope, to the very code object that
was loaded (``same_code``); otherwise the function is left as it is, with a
``StaleSourceWarning``.
"""

from __future__ import annotations

import __future__
import ast
import dis
import inspect
import linecache
import types
import warnings

from hlodsl.arrays.tree import static_key

from .rewrite import FLOW, PREFIX, arguments, at

__all__ = ["StaleSourceWarning", "source_lines", "compile_in_place", "same_code",
           "rewritten_by_pytest", "warn_stale", "find_code"]

_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


class StaleSourceWarning(UserWarning):
    """A function's source file changed after it was loaded: it is not converted."""


def source_lines(code: types.CodeType) -> list[str]:
    """The lines of the block that starts at ``code``'s first line in its file, as the
    file is now (not ``inspect.getsourcelines``: it would follow ``__wrapped__``)."""
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename)
    if not lines or len(lines) < code.co_firstlineno:
        return []
    try:
        return inspect.getblock(lines[code.co_firstlineno - 1:])
    except (SyntaxError, IndentationError):  # tokenizing a block that is not one
        return []


def compile_in_place(fn, fdef, with_flow: bool) -> types.CodeType | None:
    """``fdef`` compiled where ``fn`` was defined: in its class, with its free variables."""
    code = fn.__code__
    parts = fn.__qualname__.split(".")
    cls = parts[-2] if len(parts) > 1 and parts[-2] != "<locals>" else None
    inner = fdef if cls is None else \
        ast.ClassDef(name=cls, bases=[], keywords=[], body=[fdef], decorator_list=[])
    cells = [v for v in code.co_freevars if not (cls and v == "__class__")] + \
        ([FLOW] if with_flow else [])
    # A module-level function (or class) reads its own name as a global, to call
    # itself or name its class; in the factory the name would be a local, so it is
    # declared global there too.
    top = fdef.name if cls is None else cls
    module_level = "<locals>" not in fn.__qualname__ and top not in code.co_freevars
    factory = ast.FunctionDef(
        name=f"{PREFIX}factory", args=arguments([]), decorator_list=[], returns=None,
        body=([ast.Global([top])] if module_level else [])
        + [ast.Assign([ast.Name(v, ast.Store())], ast.Constant(None)) for v in cells]
        + [inner])
    module = ast.Module([at(factory, fdef)], [])
    ast.fix_missing_locations(module)
    try:
        compiled = compile(module, code.co_filename, "exec",
                           flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    return find_code(compiled, fdef.name)


_CODE_FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_varnames",
                "co_names", "co_freevars", "co_cellvars")
# Compiled alone, a function's method calls may come out as LOAD_METHOD where the
# whole module gave PUSH_NULL and LOAD_ATTR (CPython skips the method-call form on
# names it knows were imported): the same program either way.
_SAME_OP = {"LOAD_METHOD": "LOAD_ATTR"}
_NOISE = {"CACHE", "EXTENDED_ARG", "RESUME", "NOP", "PUSH_NULL"}


def same_code(a: types.CodeType, b: types.CodeType, top: str | None = None) -> bool:
    """Whether two code objects are one program (line numbers and names of code aside)."""
    top = a.co_name if top is None else top
    if any(getattr(a, f) != getattr(b, f) for f in _CODE_FIELDS) \
            or len(a.co_consts) != len(b.co_consts) \
            or _program(a, top) != _program(b, top):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not same_code(x, y, top):
                return False
        elif type(x) is not type(y) or static_key(_local(x, top)) != static_key(_local(y, top)):
            return False
    return True


def _local(value, top: str):
    """A class's ``__qualname__`` constant from where ``top`` starts: compiled alone, the
    function sits in another scope than in its module, so the prefix differs."""
    if isinstance(value, str):
        k = value.find(f"{top}.<locals>.")
        if k > 0:
            return value[k:]
    return value


def _program(code: types.CodeType, top: str) -> list:
    """The instructions of ``code`` as (operation, argument), jumps by target position."""
    every = list(dis.get_instructions(code))
    instructions = [i for i in every if i.opname not in _NOISE]
    # A jump lands on the first kept instruction at or after its target.
    position, kept = {}, len(instructions)
    for i in reversed(every):
        if i.opname not in _NOISE:
            kept -= 1
        position[i.offset] = kept
    out = []
    for i in instructions:
        if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs:
            arg = position.get(i.argval)
        elif isinstance(i.argval, types.CodeType):
            arg = i.argval.co_name
        else:
            arg = _local(i.argval, top)
        out.append((_SAME_OP.get(i.opname, i.opname), repr(arg)))
    return out


def rewritten_by_pytest(fn, fdef) -> bool:
    """pytest compiles test modules with their ``assert`` statements rewritten."""
    loader = fn.__globals__.get("__loader__")
    return type(loader).__module__.startswith("_pytest") and \
        any(isinstance(n, ast.Assert) for n in ast.walk(fdef))


def warn_stale(fn) -> None:
    warnings.warn(
        f"hlodsl: the source of {fn.__qualname__} in {fn.__code__.co_filename} does not match "
        "the code that was loaded (the file changed after it was imported, or the function "
        "was generated by other code), so its Python control flow on arrays is not "
        "converted; reload the module to convert it",
        StaleSourceWarning, stacklevel=4)


def find_code(code: types.CodeType, name: str):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            if c.co_name == name and c.co_name != f"{PREFIX}factory":
                return c
            hit = find_code(c, name)
            if hit is not None:
                return hit
    return None
