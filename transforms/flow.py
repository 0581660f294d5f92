"""Python ``if``/``while``/``for`` on symbolic arrays, converted to HLO control flow.

``convert(f)`` rewrites the source of ``f`` (once per function, cached) so that
each ``if``, ``while`` and ``for i in range(...)`` becomes a call to a helper
of this module, with the branch or loop body as a nested function that takes
and returns the variables the statement assigns. At run time the helper looks
at the condition: a Python value (or a concrete array) runs the Python
statement as written, so control flow on static values keeps unrolling while
staging; a symbolic array makes it ``hd.cond``, ``hd.while_loop`` or
``hd.fori_loop``, with the loop-carried variables inferred. ``hd.compile``
converts the functions it stages and, through them, the plain Python
functions they call.

>>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
>>> def relu_sum(x):
...     s = xp.sum(x)
...     if s > 0:
...         y = x * 2
...     else:
...         y = -x
...     return y
>>> hd.compile(relu_sum)(hd.array(np.float32([-1, -2])))
hlodsl.Array[float32, (2,)]([1., 2.])
>>> "conditional(" in hd.code_hlo(convert(relu_sum), hd.array(np.float32([1, 2])))
True
"""

from __future__ import annotations

import __future__
import ast
import copy
import dis
import inspect
import linecache
import sys
import sysconfig
import textwrap
import threading
import types
import warnings
import weakref
from collections import Counter
from typing import Callable

from hlodsl.tree import static_key

__all__ = ["convert", "StaleSourceWarning"]


class StaleSourceWarning(UserWarning):
    """A function's source file changed after it was loaded: it is not converted."""

# Names of what conversion adds (the cell holding this module, generated functions,
# loop flags): not identifiers, so no user variable or function can be called the
# same. CPython compiles an AST whatever its names are.
_FLOW = "hlodsl.flow"  # the name converted code reaches this module by (a closure cell)
_PREFIX = "hlodsl."  # generated functions and flags
_FRAME_BUILTINS = {"super", "locals", "globals", "vars", "dir", "eval", "exec"}
_LIBRARY_DIRS = tuple({p for k in ("stdlib", "platstdlib", "purelib", "platlib")
                       if (p := sysconfig.get_paths().get(k))})
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


# -- public API ---------------------------------------------------------------------------


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
    if code.co_name == "<lambda>" or code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                                                     | inspect.CO_ASYNC_GENERATOR):
        return True
    g = fn.__globals__
    if g.get("__hlodsl_user_code__") or code.co_filename.startswith("<doctest"):
        return False  # user-style code in a library module, or examples in its docstrings
    if str(g.get("__name__", "")).partition(".")[0] == "hlodsl":
        return True
    return code.co_filename.startswith(_LIBRARY_DIRS)


def _build(fn: types.FunctionType) -> types.CodeType | None:
    code = fn.__code__
    lines = _source_lines(code)
    if not lines:
        return None  # no source: the REPL, exec(), a deleted file
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (SyntaxError, IndentationError):
        tree = None
    if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) \
            or tree.body[0].name != code.co_name:
        _warn_stale(fn)  # something else stands where the function was
        return None
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    fdef = tree.body[0]
    fdef.decorator_list = []
    # The source is read now, from the file as it is now: convert it only if it
    # compiles to the very code that was loaded (the file may have been edited
    # since; running the edited body under hd.compile and the loaded one eagerly
    # would be two different programs).
    original = _compile_in_place(fn, copy.deepcopy(fdef), with_flow=False)
    if original is None or not (_same_code(original, code) or _rewritten_by_pytest(fn, fdef)):
        _warn_stale(fn)
        return None
    if "__class__" in code.co_freevars:  # a method that may call super() with no arguments
        _explicit_super(fdef)
    _Converter(code.co_filename, fdef.name).function(fdef)
    found = _compile_in_place(fn, fdef, with_flow=True)
    if found is None or not set(found.co_freevars) <= set(code.co_freevars) | {_FLOW}:
        return None
    return _finish(found, fdef.name, fdef.name)


def _explicit_super(fdef: ast.FunctionDef) -> None:
    """``super()`` -> ``super(__class__, self)``: conversion moves branch and loop bodies
    into nested functions, where ``super()`` with no arguments finds no ``self``."""
    params = fdef.args.posonlyargs + fdef.args.args
    if not params:
        return
    for n in _own(fdef.body):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" \
                and not n.args and not n.keywords:
            n.args = [_at(_name("__class__"), n), _at(_name(params[0].arg), n)]


def _source_lines(code: types.CodeType) -> list[str]:
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


def _compile_in_place(fn, fdef, with_flow: bool) -> types.CodeType | None:
    """``fdef`` compiled where ``fn`` was defined: in its class, with its free variables."""
    code = fn.__code__
    parts = fn.__qualname__.split(".")
    cls = parts[-2] if len(parts) > 1 and parts[-2] != "<locals>" else None
    inner = fdef if cls is None else \
        ast.ClassDef(name=cls, bases=[], keywords=[], body=[fdef], decorator_list=[])
    cells = [v for v in code.co_freevars if not (cls and v == "__class__")] + \
        ([_FLOW] if with_flow else [])
    # A module-level function (or class) reads its own name as a global, to call
    # itself or name its class; in the factory the name would be a local, so it is
    # declared global there too.
    top = fdef.name if cls is None else cls
    module_level = "<locals>" not in fn.__qualname__ and top not in code.co_freevars
    factory = ast.FunctionDef(
        name=f"{_PREFIX}factory", args=_arguments([]), decorator_list=[], returns=None,
        body=([ast.Global([top])] if module_level else [])
        + [ast.Assign([ast.Name(v, ast.Store())], ast.Constant(None)) for v in cells]
        + [inner])
    module = ast.Module([_at(factory, fdef)], [])
    ast.fix_missing_locations(module)
    try:
        compiled = compile(module, code.co_filename, "exec",
                           flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    return _find_code(compiled, fdef.name)


_CODE_FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_varnames",
                "co_names", "co_freevars", "co_cellvars")
# Compiled alone, a function's method calls may come out as LOAD_METHOD where the
# whole module gave PUSH_NULL and LOAD_ATTR (CPython skips the method-call form on
# names it knows were imported): the same program either way.
_SAME_OP = {"LOAD_METHOD": "LOAD_ATTR"}
_NOISE = {"CACHE", "EXTENDED_ARG", "RESUME", "NOP", "PUSH_NULL"}


def _same_code(a: types.CodeType, b: types.CodeType, top: str | None = None) -> bool:
    """Whether two code objects are one program (line numbers and names of code aside)."""
    top = a.co_name if top is None else top
    if any(getattr(a, f) != getattr(b, f) for f in _CODE_FIELDS) \
            or len(a.co_consts) != len(b.co_consts) \
            or _program(a, top) != _program(b, top):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _same_code(x, y, top):
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


def _rewritten_by_pytest(fn, fdef) -> bool:
    """pytest compiles test modules with their ``assert`` statements rewritten."""
    loader = fn.__globals__.get("__loader__")
    return type(loader).__module__.startswith("_pytest") and \
        any(isinstance(n, ast.Assert) for n in ast.walk(fdef))


def _warn_stale(fn) -> None:
    warnings.warn(
        f"hlodsl: the source of {fn.__qualname__} in {fn.__code__.co_filename} does not match "
        "the code that was loaded (the file changed after it was imported, or the function "
        "was generated by other code), so its Python control flow on arrays is not "
        "converted; reload the module to convert it",
        StaleSourceWarning, stacklevel=4)


def _find_code(code: types.CodeType, name: str):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            if c.co_name == name and c.co_name != f"{_PREFIX}factory":
                return c
            hit = _find_code(c, name)
            if hit is not None:
                return hit
    return None


def _finish(code: types.CodeType, user: str, qual: str) -> types.CodeType:
    """Generated functions take the user's function name (tracebacks, error locations)."""
    generated = code.co_name.startswith(_PREFIX)
    name = user if generated else code.co_name
    consts = tuple(_finish(c, name, qual) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    code = code.replace(co_consts=consts, co_name=name,
                        **({"co_qualname": qual} if generated else {}))
    _CONVERTED_CODES.add((code, code.co_filename))
    return code


def _instantiate(fn: types.FunctionType, code: types.CodeType) -> types.FunctionType:
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    flow = sys.modules[__name__]
    closure = tuple(cells[v] if v in cells else types.CellType(flow) for v in code.co_freevars)
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    for attr in ("__qualname__", "__module__", "__doc__", "__annotations__"):
        setattr(new, attr, getattr(fn, attr))
    return new


# -- the source transformation ------------------------------------------------------------

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)


def _own(nodes, into_loops: bool = True):
    """The nodes of ``nodes`` in their own scope (nested scopes are yielded, not entered)."""
    stack = list(nodes) if isinstance(nodes, list) else [nodes]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _SCOPES) or (not into_loops and isinstance(n, _LOOPS)):
            continue
        stack.extend(ast.iter_child_nodes(n))


def _assigned(nodes) -> set[str]:
    out: set[str] = set()
    for n in _own(nodes):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.update(a.asname or a.name.split(".")[0] for a in n.names if a.name != "*")
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            out.add(n.rest)
    return out


def _loads(nodes) -> Counter:
    """Reads of each name, nested scopes included (``x += 1`` reads ``x``)."""
    c: Counter = Counter()
    for root in nodes if isinstance(nodes, list) else [nodes]:
        for n in ast.walk(root):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                c[n.id] += 1
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                c[n.target.id] += 1
    return c


def _has(nodes, kinds, into_loops: bool = True) -> bool:
    return any(isinstance(n, kinds) for n in _own(nodes, into_loops))


def _deletes(nodes) -> bool:
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del) for n in _own(nodes))


def _ends_with_return(block) -> bool:
    if not block:
        return False
    last = block[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _ends_with_return(last.body) \
        and _ends_with_return(last.orelse)


def _tail_returns(block) -> bool:
    """Every path of ``block`` ends in a ``return``, and it has no other ``return``."""
    if not block or _has(block[:-1], ast.Return):
        return False
    last = block[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _tail_returns(last.body) and _tail_returns(last.orelse)


def _normalize(block: list, tail: bool) -> list:
    """``if c: return a`` + rest -> ``if c: return a`` / ``else: rest``, so both branches return.

    ``tail``: falling off the end of ``block`` returns None from the function.
    """
    for i, s in enumerate(block):
        if not (isinstance(s, ast.If) and _has(s, ast.Return)):
            continue
        rest = block[i + 1:]
        b, e = _ends_with_return(s.body), _ends_with_return(s.orelse)
        if b and not e:
            s.orelse = s.orelse + rest
        elif e and not b:
            s.body = s.body + rest
        elif not b and rest:
            continue  # returns deep inside both branches, code after: left as it is
        s.body, s.orelse = _normalize(s.body, tail), _normalize(s.orelse, tail)
        for branch in (s.body, s.orelse):
            if tail and not _ends_with_return(branch):
                branch.append(_at(ast.Return(None), branch[-1] if branch else s))
        return block[:i + 1]
    return block


def _at(node, like):
    """Generated ``node`` (and its generated parts) at ``like``'s first line, for tracebacks."""
    line, col = like.lineno, like.col_offset
    for n in ast.walk(node):
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None:
            n.lineno = n.end_lineno = line
            n.col_offset = n.end_col_offset = col
    return node


def _name(n: str, store: bool = False) -> ast.Name:
    return ast.Name(n, ast.Store() if store else ast.Load())


def _helper(attr: str, *args) -> ast.Call:
    return ast.Call(ast.Attribute(_name(_FLOW), attr, ast.Load()), list(args), [])


def _arguments(names) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _def(name: str, params, body) -> ast.FunctionDef:
    return ast.FunctionDef(name=name, args=_arguments(params), body=body, decorator_list=[],
                           returns=None)


def _simple_expr(e) -> bool:
    """Safe to move into a lambda: no walrus, yield, await or zero-argument super()."""
    for n in ast.walk(e):
        if isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return False
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                and n.func.id in _FRAME_BUILTINS:
            return False
    return True


def _thunk(e) -> ast.Lambda:
    return _at(ast.Lambda(_arguments([]), e), e)


def _lower_jumps(block: list, counter: list) -> list:
    """``break``/``continue`` in loops -> flags in the loop's variables plus guards.

    A loop that contains a ``return`` is left to Python, jumps included.
    """
    out = []
    for s in block:
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and not isinstance(s, _SCOPES):
                setattr(s, field, _lower_jumps(sub, counter))
        for h in getattr(s, "handlers", ()):
            h.body = _lower_jumps(h.body, counter)
        for c in getattr(s, "cases", ()):
            c.body = _lower_jumps(c.body, counter)
        if isinstance(s, (ast.While, ast.For)) and not _has(s.body, ast.Return):
            out.extend(_lower_loop(s, counter))
        out.append(s)
    return out


def _lower_loop(loop, counter: list) -> list:
    jumps = [n for n in _own(loop.body, into_loops=False)
             if isinstance(n, (ast.Break, ast.Continue))]
    if not jumps:
        return []
    counter[0] += 1
    brk = f"{_PREFIX}break_{counter[0]}" if any(isinstance(j, ast.Break) for j in jumps) else None
    cont = f"{_PREFIX}continue_{counter[0]}" \
        if any(isinstance(j, ast.Continue) for j in jumps) else None
    flags = [f for f in (brk, cont) if f]
    body, _ = _lower_block(loop.body, brk, cont, flags)
    if cont:
        body.insert(0, _at(ast.Assign([_name(cont, True)], ast.Constant(False)), loop))
    if brk:
        not_brk = _at(ast.UnaryOp(ast.Not(), _name(brk)), loop)
        if isinstance(loop, ast.While):
            loop.test = _at(ast.BoolOp(ast.And(), [not_brk, loop.test]), loop.test)
        elif not _range_call(loop):
            body.append(_at(ast.If(_helper("stopped", _name(brk)), [_at(ast.Break(), loop)], []),
                            loop))
        if loop.orelse:
            loop.orelse = [_at(ast.If(not_brk, loop.orelse, []), loop.orelse[0])]
        loop.hlodsl_break = brk
    loop.body = body
    return [_at(ast.Assign([_name(f, True)], ast.Constant(False)), loop) for f in flags]


def _lower_block(block, brk, cont, flags) -> tuple[list, bool]:
    out: list = []
    for i, s in enumerate(block):
        if isinstance(s, (ast.Break, ast.Continue)):
            flag = brk if isinstance(s, ast.Break) else cont
            out.append(_at(ast.Assign([_name(flag, True)], ast.Constant(True)), s))
            return out, True
        jumped = False
        subs = [("body", s)] if isinstance(s, (ast.With, ast.AsyncWith)) else \
            [("body", s), ("orelse", s)] if isinstance(s, ast.If) else \
            [("body", s), ("orelse", s), ("finalbody", s)] + [("body", h) for h in s.handlers] \
            if isinstance(s, ast.Try) else [("body", c) for c in s.cases] \
            if isinstance(s, ast.Match) else []
        for field, owner in subs:
            new, j = _lower_block(getattr(owner, field), brk, cont, flags)
            setattr(owner, field, new or [_at(ast.Pass(), s)])
            jumped |= j
        out.append(s)
        if jumped:
            rest, _ = _lower_block(block[i + 1:], brk, cont, flags)
            if rest:
                flag = _name(flags[0]) if len(flags) == 1 else \
                    ast.BoolOp(ast.Or(), [_name(f) for f in flags])
                out.append(_at(ast.If(ast.UnaryOp(ast.Not(), flag), rest, []), rest[0]))
            return out, True
    return out, False


def _range_call(loop) -> bool:
    it = loop.iter
    return isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) \
        and isinstance(it, ast.Call) and isinstance(it.func, ast.Name) \
        and it.func.id == "range" and 1 <= len(it.args) <= 3 and not it.keywords \
        and not any(isinstance(a, ast.Starred) for a in it.args)


class _Calls(ast.NodeTransformer):
    """Calls -> ``call(f, ...)``; ``a if t else b`` -> ``if_(t, ...)``."""

    def __init__(self, conv: _Converter):
        self.conv = conv

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in _FRAME_BUILTINS or \
                isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                and f.value.id == _FLOW:
            return node
        new = ast.Call(ast.Attribute(_name(_FLOW), "call", ast.Load()), [f, *node.args],
                       node.keywords)
        return _at(ast.copy_location(new, node), node)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if not _simple_expr(node):
            return node
        site = self.conv.site("expression", node, (), ())
        new = _helper("if_", self.conv.test(node.test), _thunk(node.body), _thunk(node.orelse),
                      ast.Tuple([], ast.Load()), site)
        return _at(ast.copy_location(new, node), node)


class _Converter:
    """Rewrites the statements of one source function (and the functions nested in it)."""

    def __init__(self, filename: str, user: str):
        self.file = filename
        self.user = user
        self.count = 0
        self.jumps = [0]
        self.globals: set[str] = set()
        self.declared: set[str] = set()  # global and nonlocal names of the function
        self.all_loads: Counter = Counter()

    # -- scopes ---------------------------------------------------------------------

    def function(self, fdef):
        if _has(fdef.body, (ast.Yield, ast.YieldFrom, ast.Await)):
            return fdef
        declared = [n for n in _own(fdef.body) if isinstance(n, (ast.Global, ast.Nonlocal))]
        hoisted = []
        for kind in (ast.Global, ast.Nonlocal):  # function-wide: kept at the top
            names = sorted({x for d in declared if isinstance(d, kind) for x in d.names})
            if names:
                hoisted.append(_at(kind(names), fdef))
        fdef.body = _strip_declarations(fdef.body) or [_at(ast.Pass(), fdef)]
        outer = self.globals, self.declared, self.all_loads, self.user
        self.user = fdef.name
        self.globals = {x for d in declared if isinstance(d, ast.Global) for x in d.names}
        self.declared = {x for d in declared for x in d.names}
        fdef.body = _normalize(fdef.body, tail=True)
        fdef.body = _lower_jumps(fdef.body, self.jumps)
        self.all_loads = _loads(fdef.body)
        fdef.body = hoisted + self.block(fdef.body, depth=0)
        self.globals, self.declared, self.all_loads, self.user = outer
        return fdef

    def block(self, stmts, depth: int) -> list:
        out: list = []
        for s in stmts:
            out.extend(self.stmt(s, depth))
        return out

    def stmt(self, s, depth: int) -> list:
        if isinstance(s, ast.If):
            return self.if_stmt(s, depth)
        if isinstance(s, ast.While):
            return self.while_stmt(s, depth)
        if isinstance(s, ast.For):
            return self.for_stmt(s, depth)
        if isinstance(s, ast.FunctionDef):
            return [self.function(s)]
        if isinstance(s, (ast.AsyncFunctionDef, ast.ClassDef, ast.AsyncFor, ast.AsyncWith)):
            return [s]
        if isinstance(s, ast.With):
            s.items = [self.calls(i) for i in s.items]
            s.body = self.block(s.body, depth)
            return [s]
        if isinstance(s, ast.Try):
            s.body = self.block(s.body, depth)
            for h in s.handlers:
                h.body = self.block(h.body, depth)
            s.orelse = self.block(s.orelse, depth)
            s.finalbody = self.block(s.finalbody, depth)
            return [s]
        if isinstance(s, ast.Match):
            s.subject = self.calls(s.subject)
            for c in s.cases:
                c.body = self.block(c.body, depth)
            return [s]
        return [self.calls(s)]

    # -- expressions ----------------------------------------------------------------

    def calls(self, node):
        return _Calls(self).visit(node)

    def test(self, e):
        """``not``/``and``/``or`` in a condition -> helpers that also take symbolic arrays."""
        if not _simple_expr(e):
            return self.calls(e)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return _at(_helper("not_", self.test(e.operand)), e)
        if isinstance(e, ast.BoolOp):
            name = "and_" if isinstance(e.op, ast.And) else "or_"
            return _at(_helper(name, *[_thunk(self.test(v)) for v in e.values]), e)
        return self.calls(e)

    def site(self, kind: str, node, names, live, extra=None) -> ast.Constant:
        return ast.Constant((kind, self.file, node.lineno, self.user, tuple(names),
                             tuple(live), extra))

    def fresh(self, what: str, node) -> str:
        self.count += 1
        return f"{_PREFIX}{what}_{node.lineno}_{self.count}"

    def live(self, names, inside) -> list[str]:
        loads = _loads(inside)
        return [n for n in names if self.all_loads[n] > loads[n]]

    def load(self, names, depth: int) -> ast.Call:
        """The current values of ``names`` (an ``Undefined`` for each unbound one)."""
        args = [ast.Call(_name("locals"), [], []), ast.Constant(tuple(names))]
        glob = [n for n in names if n in self.globals] if depth == 0 else []
        if glob:
            args += [ast.Call(_name("globals"), [], []), ast.Constant(tuple(glob))]
        return _helper("load", *args)

    def assign(self, names, value, node) -> list:
        if not names:
            return [_at(ast.Expr(value), node)]
        target = ast.Tuple([_name(n, True) for n in names], ast.Store())
        out = [_at(ast.Assign([target], value), node)]
        for n in names:  # a variable left unbound by the statement stays unbound
            out.append(_at(ast.If(_helper("undefined", _name(n)),
                                  [ast.Delete([ast.Name(n, ast.Del())])], []), node))
        return out

    def static(self, test, kind: str, node, reason: str):
        return _at(_helper("static_test", test, self.site(kind, node, (), (), reason)), test)

    # -- statements -----------------------------------------------------------------

    def if_stmt(self, s: ast.If, depth: int) -> list:
        returning = _has(s, ast.Return)
        reason = self.if_reason(s, returning)
        if reason:
            s.test = self.static(self.test(s.test), "if", s, reason)
            s.body, s.orelse = self.block(s.body, depth), self.block(s.orelse, depth)
            return [s]
        names = sorted(_assigned(s.body + s.orelse))
        live = ["<return>"] if returning else self.live(names, s)
        true_name, false_name = self.fresh("if_true", s), self.fresh("if_false", s)
        branches = []
        for name, body in ((true_name, s.body), (false_name, s.orelse)):
            body = self.block(body, depth + 1)
            if not returning:
                body.append(_at(ast.Return(self.load(names, depth + 1)), s))
            branches.append(_at(_def(name, names, body), s))
        call = _helper("if_", self.test(s.test), _name(true_name), _name(false_name),
                       self.load(names, depth), self.site("return" if returning else "if",
                                                          s, names, live))
        if returning:
            return [*branches, _at(ast.Return(call), s)]
        return [*branches, *self.assign(names, call, s)]

    def outside(self, nodes) -> str | None:
        """A global or nonlocal variable the statements assign: a symbolic branch or loop
        body cannot give one a value (it would be a symbolic array left behind)."""
        names = sorted(_assigned(nodes) & self.declared)
        if not names:
            return None
        kind = "global" if names[0] in self.globals else "nonlocal"
        return f"assigns the {kind} variable '{names[0]}'"

    def if_reason(self, s: ast.If, returning: bool) -> str | None:
        outside = self.outside(s.body + s.orelse)
        if outside:
            return outside
        if returning and not (_tail_returns(s.body) and _tail_returns(s.orelse)):
            return "has a `return` that is not the last statement of both of its branches"
        if _has(s.body + s.orelse, (ast.Break, ast.Continue), into_loops=False):
            return "contains a `break` or `continue` of a loop that is left to Python " \
                   "(one with a `return` in it)"
        if any(isinstance(x, ast.Raise) for x in s.body + s.orelse):
            return "raises an exception in a branch"
        if _deletes(s.body + s.orelse):
            return "deletes a variable"
        return None

    def loop_reason(self, loop) -> str | None:
        outside = self.outside(loop.body)
        if outside:
            return outside
        if _has(loop.body, ast.Return):
            return "contains a `return`"
        if _deletes(loop.body):
            return "deletes a variable"
        return None

    def while_stmt(self, s: ast.While, depth: int) -> list:
        reason = self.loop_reason(s)
        if reason:
            s.test = self.static(self.test(s.test), "while loop", s, reason)
            s.body, s.orelse = self.block(s.body, depth), self.block(s.orelse, depth)
            return [s]
        names = sorted(_assigned(s.body))
        live = self.live(names, [s.test, *s.body])
        test_name, body_name = self.fresh("while_test", s), self.fresh("while_body", s)
        test = _at(_def(test_name, names, [_at(ast.Return(self.test(s.test)), s.test)]), s)
        body = self.block(s.body, depth + 1)
        body.append(_at(ast.Return(self.load(names, depth + 1)), s))
        call = _helper("while_", _name(test_name), _name(body_name), self.load(names, depth),
                       self.site("while loop", s, names, live))
        return [test, _at(_def(body_name, names, body), s), *self.assign(names, call, s),
                *self.block(s.orelse, depth)]

    def for_stmt(self, s: ast.For, depth: int) -> list:
        if not _range_call(s):
            s.iter = self.calls(s.iter)
            s.body, s.orelse = self.block(s.body, depth), self.block(s.orelse, depth)
            return [s]
        reason = self.loop_reason(s)
        args = [self.calls(a) for a in s.iter.args]
        if reason:
            s.iter = _at(_helper("static_range", _name("range"), ast.Tuple(args, ast.Load()),
                                 self.site("for loop", s, (), (), reason)), s.iter)
            s.body, s.orelse = self.block(s.body, depth), self.block(s.orelse, depth)
            return [s]
        target = s.target.id
        names = [target] + sorted(_assigned(s.body) - {target})
        live = self.live(names, s.body + [s.target])
        brk = getattr(s, "hlodsl_break", None)
        body_name = self.fresh("for_body", s)
        body = self.block(s.body, depth + 1)
        body.append(_at(ast.Return(self.load(names, depth + 1)), s))
        extra = names.index(brk) if brk else None
        call = _helper("for_range", _name("range"), ast.Tuple(args, ast.Load()),
                       _name(body_name), self.load(names, depth),
                       self.site("for loop", s, names, live, extra))
        return [_at(_def(body_name, names, body), s), *self.assign(names, call, s),
                *self.block(s.orelse, depth)]


def _strip_declarations(block: list) -> list:
    out = []
    for s in block:
        if isinstance(s, (ast.Global, ast.Nonlocal)):
            continue
        if not isinstance(s, _SCOPES):
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(s, field, None)
                if isinstance(sub, list):
                    setattr(s, field, _strip_declarations(sub) or [_at(ast.Pass(), s)])
            for h in getattr(s, "handlers", ()):
                h.body = _strip_declarations(h.body) or [_at(ast.Pass(), h)]
            for c in getattr(s, "cases", ()):
                c.body = _strip_declarations(c.body) or [_at(ast.Pass(), c)]
        out.append(s)
    return out


# The run time lives in flow_runtime.py; converted code reaches it as attributes
# of this module (through the closure cell named by _FLOW).
from .flow_runtime import (  # noqa: E402,F401
    Undefined, and_, for_range, if_, load, not_, or_, static_range, static_test, stopped,
    undefined, while_,
)
