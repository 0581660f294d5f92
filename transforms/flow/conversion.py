"""``convert``: a function with its Python control flow on arrays made HLO control flow.

``convert(f)`` rewrites ``f`` (``rewrite.Converter``) from its source, checked
against the loaded code (``source``), once per function (cached by code object
and file), and instantiates the result with ``f``'s globals, closure and
defaults. ``call`` is how converted code calls other functions: each plain
Python function it reaches is converted before it runs.
"""

from __future__ import annotations

import ast
import copy
import inspect
import sys
import sysconfig
import textwrap
import threading
import types
import weakref
from typing import Callable

from .rewrite import FLOW, PREFIX, Converter, at, explicit_super
from .source import compile_in_place, rewritten_by_pytest, same_code, \
    source_lines, warn_stale

__all__ = ["convert", "call"]

_LIBRARY_DIRS = tuple({p for k in ("stdlib", "platstdlib", "purelib", "platlib")
                       if (p := sysconfig.get_paths().get(k))})


def convert(fn: Callable) -> Callable:
    """``fn`` with its Python control flow on symbolic arrays converted to HLO control flow.

    Returns a function that behaves as ``fn`` on Python values and concrete
    arrays, and stages an ``if``/``while``/``for i in range(...)`` whose
    condition or bounds are symbolic arrays into an HLO conditional or while
    loop. Functions without source (builtins, lambdas, ``exec``-made code),
    generators and hlodsl's or installed packages' own functions come back
    unchanged. ``hd.compile`` calls this for you (``convert=False`` opts out).

    >>> import numpy as np, hlodsl as hd
    >>> def clip_norm(x):
    ...     n = (x * x).sum()
    ...     while n > 1:
    ...         x = x / 2
    ...         n = (x * x).sum()
    ...     return x
    >>> hd.compile(hd.convert(clip_norm))(hd.array(np.float32([3, 4])))
    hlodsl.Array[float32, (2,)]([0.375, 0.5  ])
    """
    if type(fn) is types.MethodType and type(fn.__func__) is types.FunctionType:
        inner = _converted(fn.__func__)
        return fn if inner is fn.__func__ else types.MethodType(inner, fn.__self__)
    if type(fn) is not types.FunctionType:
        return fn
    return _converted(fn)


def call(fn, /, *args, **kwargs):
    """Converted code's calls: a user function is converted (once) before it is called."""
    t = type(fn)
    if t is types.FunctionType or t is types.MethodType:
        fn = convert(fn)
    return fn(*args, **kwargs)


# Keyed by (code, file): code objects compare equal across files when their
# bytecode, names and line numbers agree (CPython leaves co_filename out).
_CONVERTED_CODES: set = set()
_TEMPLATES: dict[tuple, types.CodeType | None] = {}
_FUNCTIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


_LOCK = threading.RLock()  # conversion caches are shared by the threads that stage


def _converted(fn: types.FunctionType) -> types.FunctionType:
    hit = _FUNCTIONS.get(fn)
    if hit is None:
        with _LOCK:
            hit = _FUNCTIONS.get(fn)
            if hit is None:
                code = _template(fn)
                hit = fn if code is None else _instantiate(fn, code)
                _FUNCTIONS[fn] = hit
    return hit


def _template(fn: types.FunctionType) -> types.CodeType | None:
    """The converted code object of ``fn``'s code (cached by code), or None to leave it."""
    code = fn.__code__
    key = (code, code.co_filename)
    if key in _CONVERTED_CODES or _library(fn):
        return None
    if key in _TEMPLATES:
        return _TEMPLATES[key]
    _TEMPLATES[key] = template = _build(fn)
    return template


def _library(fn) -> bool:
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return True
    g = fn.__globals__
    if g.get("__hlodsl_user_code__") or code.co_filename.startswith("<doctest"):
        return False  # user-style code in a library module, or examples in its docstrings
    if str(g.get("__name__", "")).partition(".")[0] == "hlodsl":
        return True
    return code.co_filename.startswith(_LIBRARY_DIRS)


def _build(fn: types.FunctionType) -> types.CodeType | None:
    code = fn.__code__
    if code.co_name == "<lambda>":
        return _build_lambda(fn)
    lines = source_lines(code)
    if not lines:
        return None  # no source: the REPL, exec(), a deleted file
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (SyntaxError, IndentationError):
        tree = None
    if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) \
            or tree.body[0].name != code.co_name:
        warn_stale(fn)  # something else stands where the function was
        return None
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    fdef = tree.body[0]
    fdef.decorator_list = []
    # The source is read now, from the file as it is now: convert it only if it
    # compiles to the very code that was loaded (the file may have been edited
    # since; running the edited body under hd.compile and the loaded one eagerly
    # would be two different programs).
    original = compile_in_place(fn, copy.deepcopy(fdef), with_flow=False)
    if original is None or not (same_code(original, code) or rewritten_by_pytest(fn, fdef)):
        warn_stale(fn)
        return None
    if "__class__" in code.co_freevars:  # a method that may call super() with no arguments
        explicit_super(fdef)
    Converter(code.co_filename, fdef.name).function(fdef)
    found = compile_in_place(fn, fdef, with_flow=True)
    if found is None or not set(found.co_freevars) <= set(code.co_freevars) | {FLOW}:
        return None
    return _finish(found, fdef.name, fdef.name)


_LAMBDA = f"{PREFIX}lambda"


def _build_lambda(fn: types.FunctionType) -> types.CodeType | None:
    """A lambda's converted code: its expression as the body of a generated ``def``
    (conditional expressions and ``and``/``or``/``not`` on symbolic predicates are
    what a lambda can hold). The lambda is found in the statement that starts on
    its first line; of several there, the one that compiles to its very code."""
    code = fn.__code__
    lines = source_lines(code)
    if not lines:
        return None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (SyntaxError, IndentationError):
        return None  # the lambda starts inside a statement that began on an earlier line
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    for lam in ast.walk(tree):
        if not isinstance(lam, ast.Lambda) or lam.lineno != code.co_firstlineno:
            continue
        fdef = at(ast.FunctionDef(name=_LAMBDA, args=lam.args, body=[at(ast.Return(lam.body),
                                                                          lam.body)],
                                  decorator_list=[], returns=None, type_params=[]), lam)
        ast.fix_missing_locations(fdef)
        original = compile_in_place(fn, copy.deepcopy(fdef), with_flow=False)
        if original is None or not same_code(original, code):
            continue
        Converter(code.co_filename, _LAMBDA).function(fdef)
        found = compile_in_place(fn, fdef, with_flow=True)
        if found is None or not set(found.co_freevars) <= set(code.co_freevars) | {FLOW}:
            return None
        return _finish(found, "<lambda>", fn.__qualname__)
    return None


def _finish(code: types.CodeType, user: str, qual: str) -> types.CodeType:
    """Generated functions take the user's function name (tracebacks, error locations)."""
    generated = code.co_name.startswith(PREFIX)
    name = user if generated else code.co_name
    consts = tuple(_finish(c, name, qual) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    code = code.replace(co_consts=consts, co_name=name,
                        **({"co_qualname": qual} if generated else {}))
    _CONVERTED_CODES.add((code, code.co_filename))
    return code


def _instantiate(fn: types.FunctionType, code: types.CodeType) -> types.FunctionType:
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    flow = sys.modules[__package__]  # the run time converted code calls
    closure = tuple(cells[v] if v in cells else types.CellType(flow) for v in code.co_freevars)
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    for attr in ("__qualname__", "__module__", "__doc__", "__annotations__"):
        setattr(new, attr, getattr(fn, attr))
    return new
