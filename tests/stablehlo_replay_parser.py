"""A small parser for the MLIR subset StableHLO's interpreter tests are written in.

It reads what ``stablehlo/tests/interpret/*.mlir`` use: ``func.func`` with SSA
values, ``stablehlo.*`` ops in their pretty and generic forms
(``"stablehlo.op"(%a) <{props}> ({regions}) {attrs} : (types) -> types``),
regions with ``^bb0`` arguments, ``stablehlo.while``'s ``cond``/``do``,
``check.*`` ops, and ``// -----`` splits. Attribute values are kept as raw text;
``stablehlo_replay_ops`` interprets the ones it needs (``dense<...>``,
``array<i64: ...>``, ``#stablehlo.gather<...>``, ...).

>>> case = parse_cases("func.func @f() {\\n  %0 = stablehlo.constant dense<1> : tensor<i64>\\n"
...                    "  check.expect_eq_const %0, dense<1> : tensor<i64>\\n  func.return\\n}",
...                    "f.mlir", split=True)[0]
>>> case.name, [op.name for op in case.entry.ops]
('f', ['stablehlo.constant', 'check.expect_eq_const', 'func.return'])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Case", "Func", "Op", "ParseError", "Region", "parse_cases", "parse_func_text"]

_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_IDENT = re.compile(r"[A-Za-z_][\w.$]*")
_SSA = re.compile(r"%[\w.$#-]+")
_NUMBERISH = re.compile(r"[-+]?[\w.+-]+")
# An SSA result list and '=' : the start of a new statement.
_RESULTS_AHEAD = re.compile(r"%[\w.$#-]+(:\d+)?(\s*,\s*%[\w.$#-]+(:\d+)?)*\s*=(?![=>])")
_TYPE_START = re.compile(r"(tensor<|tuple<|complex<|!|[iuf]\d|ui\d|bf16|index\b|\()")


class ParseError(ValueError):
    """The text is outside the MLIR subset this parser reads."""


@dataclass
class Region:
    """A region's block arguments (name, type text) and its ops."""

    args: list[tuple[str, str]] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)


@dataclass
class Op:
    """One operation: raw attribute texts, bare words (``GT``, ``SIGNED``) and types."""

    name: str
    results: list[str] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    in_types: list[str] | None = None
    out_types: list[str] = field(default_factory=list)
    literal: str | None = None        # a positional literal: dense<...> of constant / check
    literal_type: str | None = None
    strings: list[str] = field(default_factory=list)
    line: int = 0


@dataclass
class Func:
    name: str
    args: list[tuple[str, str]]
    result_types: list[str]
    ops: list[Op]


@dataclass
class Case:
    """One ``// -----`` split: its functions and the one the interpreter runs."""

    file: str
    name: str
    line: int
    funcs: dict[str, Func]
    entry: Func | None
    error: str | None = None


class _Scanner:
    def __init__(self, text: str, pos: int = 0, line0: int = 0):
        self.text, self.pos, self.line0 = text, pos, line0

    def ws(self) -> None:
        text = self.text
        while self.pos < len(text):
            c = text[self.pos]
            if c.isspace():
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            else:
                break

    def line(self) -> int:
        return self.line0 + self.text.count("\n", 0, self.pos) + 1

    def peek(self, s: str) -> bool:
        self.ws()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str) -> None:
        if not self.accept(s):
            raise ParseError(f"line {self.line()}: expected {s!r}, found "
                             f"{self.text[self.pos:self.pos + 40]!r}")

    def match(self, pattern: re.Pattern) -> str | None:
        self.ws()
        m = pattern.match(self.text, self.pos)
        if not m:
            return None
        self.pos = m.end()
        return m.group(0)

    def at_end(self) -> bool:
        self.ws()
        return self.pos >= len(self.text)

    def string(self) -> str:
        self.ws()
        assert self.text[self.pos] == '"'
        i = self.pos + 1
        while self.text[i] != '"':
            i += 2 if self.text[i] == "\\" else 1
        s = self.text[self.pos + 1:i]
        self.pos = i + 1
        return s

    def balanced(self) -> str:
        """The text from an opening bracket to its match, brackets included."""
        self.ws()
        start, stack, i, text = self.pos, [], self.pos, self.text
        while i < len(text):
            c = text[i]
            if c == '"':
                i += 1
                while text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
            elif text.startswith("//", i):  # a comment may hold any bracket: "while (i < 10)"
                end = text.find("\n", i)
                i = len(text) - 1 if end < 0 else end
            elif text.startswith("->", i):
                i += 1
            elif c in _OPEN:
                stack.append(_OPEN[c])
            elif stack and c == stack[-1]:
                stack.pop()
                if not stack:
                    self.pos = i + 1
                    return text[start:self.pos]
            elif c in ")]}":
                raise ParseError(f"line {self.line()}: unbalanced {c!r}")
            i += 1
        raise ParseError(f"line {self.line()}: unterminated {text[start]!r}")


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside brackets and strings."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = text.index('"', i + 1)
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if text.startswith("->", i):
            cur.append("->")
            i += 2
            continue
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _type(sc: _Scanner) -> str:
    sc.ws()
    if sc.peek("!"):
        name = sc.match(re.compile(r"![\w.]+"))
        return name + (sc.balanced() if sc.text.startswith("<", sc.pos) else "")
    name = sc.match(_IDENT)
    if name is None:
        raise ParseError(f"line {sc.line()}: expected a type at {sc.text[sc.pos:sc.pos + 30]!r}")
    if sc.text.startswith("<", sc.pos):
        name += sc.balanced()
    return name


def _type_list(sc: _Scanner) -> list[str]:
    if sc.peek("("):
        inner = sc.balanced()[1:-1]
        return [_type(_Scanner(t)) for t in _split_top(inner)] if inner.strip() else []
    types = [_type(sc)]
    while True:
        save = sc.pos
        if sc.accept(",") and (sc.ws() or _TYPE_START.match(sc.text, sc.pos)):
            types.append(_type(sc))
            continue
        sc.pos = save
        return types


def _signature(sc: _Scanner, op: Op) -> None:
    if sc.peek("("):
        op.in_types = _type_list(sc)
        sc.expect("->")
        op.out_types = _type_list(sc)
    else:
        op.out_types = _type_list(sc)


def _attr_dict(text: str) -> dict[str, str]:
    out = {}
    for item in _split_top(text.strip()[1:-1]):
        key, _, value = item.partition("=")
        value = value.strip()
        # "dimension = 0 : i64": the scalar's type is not part of its value.
        m = re.fullmatch(r"(.*?)\s*:\s*([iuf]\d+|index|ui\d+)", value, re.DOTALL)
        if m and not value.startswith("dense"):
            value = m.group(1)
        out[key.strip()] = value if value else "true"
    return out


def _value(sc: _Scanner) -> str:
    """A pretty-form ``key = value`` value, as raw text."""
    sc.ws()
    text = sc.text
    if sc.peek('"'):
        return '"' + sc.string() + '"'
    if text[sc.pos] in "[{<":
        value = sc.balanced()
        # dot_general's "[0] x [1]" and convolution's "[b, 0, f]x[...]->[...]"
        while True:
            m = re.compile(r"\s*(x|->)\s*(?=\[)").match(text, sc.pos)
            if not m:
                return value
            sc.pos = m.end()
            value += m.group(1) + sc.balanced()
    if text[sc.pos] == "#":
        value = sc.match(re.compile(r"#[\w.]+"))
        return value + (sc.balanced() if text.startswith("<", sc.pos) else "")
    word = sc.match(_NUMBERISH)
    if word is None:
        raise ParseError(f"line {sc.line()}: expected a value at {text[sc.pos:sc.pos + 30]!r}")
    if text.startswith("<", sc.pos):
        word += sc.balanced()
    # "tolerance = 0.001 : f64 : tensor<...>": drop the scalar's own type.
    m = re.compile(r"\s*:\s*[iuf]\d+\s*(?=:)").match(text, sc.pos)
    if m:
        sc.pos = m.end()
    return word


def _is_region(brace_text: str) -> bool:
    inner = brace_text[1:-1].lstrip()
    inner = re.sub(r"^(//[^\n]*\n\s*)+", "", inner)
    return inner.startswith(("^", "%", '"')) or bool(re.match(r"[a-z_]+\.[a-z_]+", inner))


def _region(text: str, line0: int) -> Region:
    sc = _Scanner(text[1:-1], 0, line0)
    region = Region()
    if sc.accept("^"):
        sc.match(_IDENT)
        if sc.peek("("):
            for item in _split_top(sc.balanced()[1:-1]):
                name, _, typ = item.partition(":")
                region.args.append((name.strip(), typ.strip()))
        sc.expect(":")
    region.ops = _ops(sc)
    return region


def _ops(sc: _Scanner) -> list[Op]:
    ops = []
    while not sc.at_end() and not sc.peek("}"):
        ops.append(_op(sc))
    return ops


def _results(sc: _Scanner) -> list[str]:
    names = []
    while True:
        name = sc.match(_SSA)
        count = sc.match(re.compile(r":\d+"))
        names += [f"{name}#{i}" for i in range(int(count[1:]))] if count else [name]
        if not sc.accept(","):
            break
    sc.expect("=")
    return names


def _op(sc: _Scanner) -> Op:
    sc.ws()
    line = sc.line()
    results = _results(sc) if _RESULTS_AHEAD.match(sc.text, sc.pos) else []
    if sc.peek('"'):
        op = Op(sc.string(), results, line=line)
        _generic(sc, op)
    else:
        name = sc.match(_IDENT)
        if name is None:
            raise ParseError(f"line {sc.line()}: expected an op at "
                             f"{sc.text[sc.pos:sc.pos + 40]!r}")
        op = Op(name, results, line=line)
        _pretty(sc, op)
    return op


def _generic(sc: _Scanner, op: Op) -> None:
    inner = sc.balanced()[1:-1]
    op.operands = [t.strip() for t in _split_top(inner)] if inner.strip() else []
    if sc.peek("<{"):
        op.attrs.update(_attr_dict(sc.balanced()[1:-1]))
    if sc.peek("("):
        line = sc.line()
        for region_text in _split_top(sc.balanced()[1:-1]):
            op.regions.append(_region(region_text, line - 1))
    if sc.peek("{"):
        op.attrs.update(_attr_dict(sc.balanced()))
    sc.expect(":")
    _signature(sc, op)


def _pretty(sc: _Scanner, op: Op) -> None:
    text = sc.text
    while True:
        sc.ws()
        if sc.pos >= len(text) or text[sc.pos] == "}":
            return
        c = text[sc.pos]
        if c == "%":
            if _RESULTS_AHEAD.match(text, sc.pos):
                return
            op.operands.append(sc.match(_SSA))
        elif c == ",":
            sc.pos += 1
        elif c == ":":
            sc.pos += 1
            _signature(sc, op)
            sc.ws()
            if not re.compile(r"(cond|do|attributes)\b").match(text, sc.pos):
                return
        elif c == "(":
            group = sc.balanced()[1:-1]
            for item in _split_top(group):
                lhs, eq, rhs = item.partition("=")
                if eq:  # stablehlo.while(%arg = %init, ...)
                    op.attrs.setdefault("iter_args", "")
                    op.attrs["iter_args"] += lhs.strip() + ","
                    op.operands.append(rhs.strip())
                elif item.startswith("%"):
                    op.operands.append(item)
        elif c == "[":
            op.attrs["brackets"] = sc.balanced()
        elif c == "{":
            line = sc.line()
            body = sc.balanced()
            if _is_region(body):
                op.regions.append(_region(body, line - 1))
            else:
                op.attrs.update(_attr_dict(body))
        elif c == '"':
            op.strings.append(sc.string())
        elif c == "@":
            op.attrs["callee"] = sc.match(re.compile(r"@[\w.$-]+"))[1:]
        else:
            save = sc.pos
            word = sc.match(re.compile(r"[\w.$+-]+"))
            if word is None:
                raise ParseError(f"line {sc.line()}: unexpected {text[sc.pos:sc.pos + 40]!r}")
            if re.fullmatch(r"[a-z_]+\.[\w.]+", word):
                sc.pos = save  # the next statement's op name ("check.expect_eq ...")
                return
            if text.startswith("<", sc.pos):  # dense<...>, array<...>
                op.literal = word + sc.balanced()
                if sc.accept(":"):
                    op.literal_type = _type(sc)
            elif sc.accept("="):
                op.attrs[word] = _value(sc)
            else:
                op.words.append(word)


def parse_func_text(text: str, line0: int = 0) -> dict[str, Func]:
    """Every ``func.func`` in ``text`` (a module's ``module {...}`` wrapper is looked into)."""
    funcs: dict[str, Func] = {}
    sc = _Scanner(text, 0, line0)
    while not sc.at_end():
        if sc.accept("module"):
            sc.match(re.compile(r"@[\w.$-]+"))
            if sc.accept("attributes"):
                sc.balanced()
            body = sc.balanced()
            funcs.update(parse_func_text(body[1:-1], sc.line() - 1 - body.count("\n")))
            continue
        sc.expect("func.func")
        sc.match(re.compile(r"(public|private)\b"))
        name = sc.match(re.compile(r"@[\w.$-]+"))[1:]
        args = []
        inner = sc.balanced()[1:-1]
        for item in _split_top(inner) if inner.strip() else []:
            arg, _, typ = item.partition(":")
            args.append((arg.strip(), re.sub(r"\s*\{.*\}\s*$", "", typ.strip(), flags=re.DOTALL)))
        result_types = []
        if sc.accept("->"):
            result_types = _type_list(sc)
        if sc.accept("attributes"):
            sc.balanced()
        body_line = sc.line()
        body = sc.balanced()
        region = _region(body, body_line - 1)
        funcs[name] = Func(name, args, result_types, region.ops)
    return funcs


def _entry(funcs: dict[str, Func]) -> Func | None:
    # The interpreter runs @main, or the module's only function.
    if "main" in funcs:
        return funcs["main"]
    return next(iter(funcs.values())) if len(funcs) == 1 else None


def parse_cases(text: str, file: str, split: bool | None = None) -> list[Case]:
    """The cases of one .mlir file: one per ``// -----`` split when its RUN line splits."""
    if split is None:
        split = "split-input-file" in text
    chunks, line0 = [], 0
    # "// // -----" (one in triangular_solve.mlir) splits as well.
    pieces = re.split(r"^(?://\s*)*// -----.*$", text, flags=re.MULTILINE) if split else [text]
    for piece in pieces:
        chunks.append((piece, line0))
        line0 += piece.count("\n")
    cases = []
    for piece, line0 in chunks:
        if "func.func" not in piece:
            continue
        m = re.search(r"func\.func\s+(?:public\s+|private\s+)?@([\w.$-]+)", piece)
        line = line0 + piece.count("\n", 0, m.start()) + 1
        try:
            funcs = parse_func_text(piece, line0)
        except (ParseError, IndexError, ValueError, TypeError, AttributeError) as e:
            cases.append(Case(file, m.group(1), line, {}, None, error=f"{type(e).__name__}: {e}"))
            continue
        entry = _entry(funcs)
        name = entry.name if entry else m.group(1)
        cases.append(Case(file, name, line, funcs, entry,
                          None if entry else "no @main among several functions"))
    return cases
