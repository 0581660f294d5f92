"""The source rewrite: a function's ``if``/``while``/``for`` statements as calls of the run time.

``Converter`` rewrites one function definition (and the functions nested in
it): each ``if``, ``while`` and ``for i in range(...)`` becomes a call to the
run time (``if_``, ``while_``, ``for_range``), with the branch or loop body as
a nested function that takes and returns the variables the statement assigns;
``not``/``and``/``or`` in conditions and ``a if t else b`` become calls too,
and every other call goes through ``call`` (so the functions it reaches are
converted in turn). Each run-time call gets a ``Site`` record of where the
statement is and what it assigns (``values.Site``). Statements that cannot
become HLO control flow (a ``return`` that is not in tail position, an
assignment to a global, ...) stay Python, behind ``static_test``, which
fails clearly if their condition turns out symbolic.
"""

from __future__ import annotations

import ast
from collections import Counter

__all__ = ["Converter", "explicit_super", "at", "arguments", "FLOW", "PREFIX", "FRAME_BUILTINS"]

# Names of what conversion adds (the cell holding this module, generated functions,
# loop flags): not identifiers, so no user variable or function can be called the
# same. CPython compiles an AST whatever its names are.
FLOW = "hlodsl.flow"  # the name converted code reaches the run time by (a closure cell)
PREFIX = "hlodsl."  # generated functions and flags
FRAME_BUILTINS = {"super", "locals", "globals", "vars", "dir", "eval", "exec"}


def explicit_super(fdef: ast.FunctionDef) -> None:
    """``super()`` -> ``super(__class__, self)``: conversion moves branch and loop bodies
    into nested functions, where ``super()`` with no arguments finds no ``self``."""
    params = fdef.args.posonlyargs + fdef.args.args
    if not params:
        return
    for n in _own(fdef.body):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" \
                and not n.args and not n.keywords:
            n.args = [at(_name("__class__"), n), at(_name(params[0].arg), n)]


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


def _deletes(nodes) -> list[str]:
    """The variables ``nodes`` delete (``del x``), in order."""
    return [n.id for n in _own(nodes) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del)]


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
                branch.append(at(ast.Return(None), branch[-1] if branch else s))
        return block[:i + 1]
    return block


def at(node, like):
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
    return ast.Call(ast.Attribute(_name(FLOW), attr, ast.Load()), list(args), [])


def arguments(names) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _def(name: str, params, body) -> ast.FunctionDef:
    return ast.FunctionDef(name=name, args=arguments(params), body=body, decorator_list=[],
                           returns=None)


def _simple_expr(e) -> bool:
    """Safe to move into a lambda: no walrus, yield, await or zero-argument super()."""
    for n in ast.walk(e):
        if isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return False
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                and n.func.id in FRAME_BUILTINS:
            return False
    return True


def _thunk(e) -> ast.Lambda:
    return at(ast.Lambda(arguments([]), e), e)


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
    brk = f"{PREFIX}break_{counter[0]}" if any(isinstance(j, ast.Break) for j in jumps) else None
    cont = f"{PREFIX}continue_{counter[0]}" \
        if any(isinstance(j, ast.Continue) for j in jumps) else None
    flags = [f for f in (brk, cont) if f]
    body, _ = _lower_block(loop.body, brk, cont, flags)
    if cont:
        body.insert(0, at(ast.Assign([_name(cont, True)], ast.Constant(False)), loop))
    if brk:
        not_brk = at(ast.UnaryOp(ast.Not(), _name(brk)), loop)
        if isinstance(loop, ast.While):
            loop.test = at(ast.BoolOp(ast.And(), [not_brk, loop.test]), loop.test)
        elif not _range_call(loop):
            body.append(at(ast.If(_helper("stopped", _name(brk)), [at(ast.Break(), loop)], []),
                            loop))
        if loop.orelse:
            loop.orelse = [at(ast.If(not_brk, loop.orelse, []), loop.orelse[0])]
        loop.hlodsl_break = brk
    loop.body = body
    return [at(ast.Assign([_name(f, True)], ast.Constant(False)), loop) for f in flags]


def _lower_block(block, brk, cont, flags) -> tuple[list, bool]:
    out: list = []
    for i, s in enumerate(block):
        if isinstance(s, (ast.Break, ast.Continue)):
            flag = brk if isinstance(s, ast.Break) else cont
            out.append(at(ast.Assign([_name(flag, True)], ast.Constant(True)), s))
            return out, True
        jumped = False
        subs = [("body", s)] if isinstance(s, (ast.With, ast.AsyncWith)) else \
            [("body", s), ("orelse", s)] if isinstance(s, ast.If) else \
            [("body", s), ("orelse", s), ("finalbody", s)] + [("body", h) for h in s.handlers] \
            if isinstance(s, ast.Try) else [("body", c) for c in s.cases] \
            if isinstance(s, ast.Match) else []
        for field, owner in subs:
            new, j = _lower_block(getattr(owner, field), brk, cont, flags)
            setattr(owner, field, new or [at(ast.Pass(), s)])
            jumped |= j
        out.append(s)
        if jumped:
            rest, _ = _lower_block(block[i + 1:], brk, cont, flags)
            if rest:
                flag = _name(flags[0]) if len(flags) == 1 else \
                    ast.BoolOp(ast.Or(), [_name(f) for f in flags])
                out.append(at(ast.If(ast.UnaryOp(ast.Not(), flag), rest, []), rest[0]))
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

    def __init__(self, conv: Converter):
        self.conv = conv

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in FRAME_BUILTINS or \
                isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                and f.value.id == FLOW:
            return node
        new = ast.Call(ast.Attribute(_name(FLOW), "call", ast.Load()), [f, *node.args],
                       node.keywords)
        return at(ast.copy_location(new, node), node)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if not _simple_expr(node):
            return node
        site = self.conv.site("expression", node, (), ())
        new = _helper("if_", self.conv.test(node.test), _thunk(node.body), _thunk(node.orelse),
                      ast.Tuple([], ast.Load()), site)
        return at(ast.copy_location(new, node), node)


class Converter:
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
                hoisted.append(at(kind(names), fdef))
        fdef.body = _strip_declarations(fdef.body) or [at(ast.Pass(), fdef)]
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
            return at(_helper("not_", self.test(e.operand)), e)
        if isinstance(e, ast.BoolOp):
            name = "and_" if isinstance(e.op, ast.And) else "or_"
            return at(_helper(name, *[_thunk(self.test(v)) for v in e.values]), e)
        return self.calls(e)

    def site(self, kind: str, node, names, live, reason: str | None = None,
             break_flag: int | None = None) -> ast.Constant:
        """The statement's ``Site`` (values.Site), as a tuple constant of the code."""
        return ast.Constant((kind, self.file, node.lineno, self.user, tuple(names),
                             tuple(live), reason, break_flag))

    def fresh(self, what: str, node) -> str:
        self.count += 1
        return f"{PREFIX}{what}_{node.lineno}_{self.count}"

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
            return [at(ast.Expr(value), node)]
        target = ast.Tuple([_name(n, True) for n in names], ast.Store())
        out = [at(ast.Assign([target], value), node)]
        for n in names:  # a variable left unbound by the statement stays unbound
            out.append(at(ast.If(_helper("undefined", _name(n)),
                                  [ast.Delete([ast.Name(n, ast.Del())])], []), node))
        return out

    def static(self, test, kind: str, node, reason: str):
        return at(_helper("static_test", test, self.site(kind, node, (), (), reason)), test)

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
                body.append(at(ast.Return(self.load(names, depth + 1)), s))
            branches.append(at(_def(name, names, body), s))
        call = _helper("if_", self.test(s.test), _name(true_name), _name(false_name),
                       self.load(names, depth), self.site("return" if returning else "if",
                                                          s, names, live))
        if returning:
            return [*branches, at(ast.Return(call), s)]
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
        deleted = _deletes(s.body + s.orelse)
        if deleted:
            return f"deletes the variable '{deleted[0]}' (del)"
        return None

    def loop_reason(self, loop) -> str | None:
        outside = self.outside(loop.body)
        if outside:
            return outside
        if _has(loop.body, ast.Return):
            return "contains a `return`"
        deleted = _deletes(loop.body)
        if deleted:
            return f"deletes the variable '{deleted[0]}' (del)"
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
        test = at(_def(test_name, names, [at(ast.Return(self.test(s.test)), s.test)]), s)
        body = self.block(s.body, depth + 1)
        body.append(at(ast.Return(self.load(names, depth + 1)), s))
        call = _helper("while_", _name(test_name), _name(body_name), self.load(names, depth),
                       self.site("while loop", s, names, live))
        return [test, at(_def(body_name, names, body), s), *self.assign(names, call, s),
                *self.block(s.orelse, depth)]

    def for_stmt(self, s: ast.For, depth: int) -> list:
        if not _range_call(s):
            s.iter = self.calls(s.iter)
            s.body, s.orelse = self.block(s.body, depth), self.block(s.orelse, depth)
            return [s]
        reason = self.loop_reason(s)
        args = [self.calls(a) for a in s.iter.args]
        if reason:
            s.iter = at(_helper("static_range", _name("range"), ast.Tuple(args, ast.Load()),
                                 self.site("for loop", s, (), (), reason)), s.iter)
            s.body, s.orelse = self.block(s.body, depth), self.block(s.orelse, depth)
            return [s]
        target = s.target.id
        names = [target] + sorted(_assigned(s.body) - {target})
        live = self.live(names, s.body + [s.target])
        brk = getattr(s, "hlodsl_break", None)
        body_name = self.fresh("for_body", s)
        body = self.block(s.body, depth + 1)
        body.append(at(ast.Return(self.load(names, depth + 1)), s))
        extra = names.index(brk) if brk else None
        call = _helper("for_range", _name("range"), ast.Tuple(args, ast.Load()),
                       _name(body_name), self.load(names, depth),
                       self.site("for loop", s, names, live, break_flag=extra))
        return [at(_def(body_name, names, body), s), *self.assign(names, call, s),
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
                    setattr(s, field, _strip_declarations(sub) or [at(ast.Pass(), s)])
            for h in getattr(s, "handlers", ()):
                h.body = _strip_declarations(h.body) or [at(ast.Pass(), h)]
            for c in getattr(s, "cases", ()):
                c.body = _strip_declarations(c.body) or [at(ast.Pass(), c)]
        out.append(s)
    return out
