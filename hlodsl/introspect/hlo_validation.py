"""HLO text from outside, checked in Python before XLA's parser sees it.

XLA's HLO parser trusts much of what it reads: a parameter numbered past the
parameter count, or a reshape whose element counts differ, aborts the process
(a failed ``CHECK``), not a Python exception. ``validate_module`` reads the
whole text first and refuses, with the line, everything XLA's parser would
refuse or crash on that hlodsl can tell from the text:

- the first line is ``HloModule <name>``; every other line is a computation
  header, an instruction, a closing ``}``, a blank line, or a row of jax's
  stack-frame tables (no line is skipped unread);
- computations are closed, named once, hold at least one instruction, and at
  most one is the ``ENTRY`` (with none, the last one is, as XLA reads it);
- each computation's parameters are numbered ``0 .. n-1``, once each, and
  agree with its header's signature and the module's
  ``entry_computation_layout``;
- instruction names are unique in a computation, every operand is defined on
  an earlier line of the same computation, and at most one is the ``ROOT``;
- a computation an instruction applies (``to_apply=``, ``body=``, ...) is
  defined above it (so calls cannot recurse);
- every type reads, has at most 64 dimensions and 2**40 elements;
- ``stack_frame_id``\\ s and the tables' own ids refer to rows that exist.

>>> validate_module("HloModule m\\nENTRY m {\\n x = f32[3] parameter(0)\\n"
...                 " y = f32[3] parameter(2)\\n ROOT z = f32[3] add(x, y)\\n}\\n")
Traceback (most recent call last):
hlodsl.introspect.hlo_validation.HloTextError: computation m: its parameters are numbered [0, 2]; \
HLO numbers a computation's parameters 0 .. 1, each once
"""

from __future__ import annotations

import re
from math import prod

from hlodsl.arrays.types import ArrayType, TupleType
from hlodsl.errors import HloDslError

from .hlo_text import (
    _HEADER,
    HloModule,
    _balanced,
    _instruction,
    parse_module,
    read_type,
    split_top,
)

__all__ = ["MAX_ELEMENTS", "MAX_RANK", "HloTextError", "validate_module"]

#: The most elements one instruction's result may have (XLA's sizes are int64 bytes).
MAX_ELEMENTS = 2 ** 40
MAX_RANK = 64

_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_ROW = re.compile(r"^(\d+)\s+(.*)$")
_FRAME_REF = re.compile(r"\bstack_frame_id=(\d+)")
_NAME = re.compile(r"^[A-Za-z_][\w.\-]*$")
#: Opcodes whose parenthesised "operands" are not instruction names.
_LITERAL_OPERANDS = frozenset({"parameter", "constant"})


class HloTextError(HloDslError, ValueError):
    """HLO text that is not a valid module, found before XLA's parser reads it."""


def _fail(message: str, line: int = 0):
    raise HloTextError(f"line {line}: {message}" if line else message)


def validate_module(text: str) -> HloModule:
    """The module ``text`` holds, or ``HloTextError`` naming the first line that is wrong.

    Args:
        text: HLO module text from anywhere.

    Returns:
        The parsed module (``hlodsl.introspect.hlo_text.HloModule``), every line read.
    """
    if not isinstance(text, str):
        raise TypeError(f"HLO text must be a str, got {type(text).__name__}")
    tables = _check_lines(text)
    module = parse_module(text)
    if module.skipped:  # _check_lines accounts for every line: parse_module must agree
        number, line = module.skipped[0]
        _fail(f"cannot read {line.strip()[:80]!r}", number)
    if not module.computations:
        _fail("the module has no computation")
    if sum(c.entry for c in module.computations) > 1:
        lines = [c.instructions[0].line - 1 for c in module.computations if c.entry]
        _fail("a second ENTRY computation (a module has one)", lines[1])
    defined: set[str] = set()
    for comp in module.computations:
        _check_computation(comp, defined, tables)
        defined.add(comp.name)
    _check_entry_layout(module)
    return module


def _check_lines(text: str) -> dict[str, dict[int, str]]:
    """Every line is one the module may hold; jax's stack-frame tables, by id."""
    tables: dict[str, dict[int, str]] = {}
    table: dict[int, str] | None = None
    open_at = 0
    seen_module = False
    for number, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            table = None
            continue
        if not seen_module:
            if not re.match(r"^HloModule\s+[\w.\-]+", s):
                _fail(f"an HLO module starts 'HloModule <name>', not {s[:60]!r}", number)
            seen_module = True
            continue
        if open_at == 0 and s in _TABLES:
            if s in tables:
                _fail(f"a second {s} table", number)
            table = tables[s] = {}
            continue
        if table is not None:
            m = _ROW.match(s)
            if m is None:
                _fail(f"not a row of a stack-frame table: {s[:60]!r}", number)
            table[int(m[1])] = m[2]
            continue
        if open_at == 0:
            if s.startswith("HloModule"):
                _fail("a second 'HloModule' line", number)
            if _HEADER.match(line) is None:
                _fail(f"expected a computation header ('name {{' or 'ENTRY name {{'), "
                      f"got {s[:60]!r}", number)
            open_at = number
        elif s == "}":
            open_at = 0
        elif _instruction(line, number) is None:
            _fail(f"cannot read this line as an instruction: {s[:80]!r}", number)
    if not seen_module:
        _fail("the text is empty: an HLO module starts 'HloModule <name>'")
    if open_at:
        _fail("this computation is never closed with '}'", open_at)
    _check_tables(tables)
    return tables


def _ids(row: str, key: str) -> list[int]:
    return [int(v) for v in re.findall(rf"\b{key}=(\d+)", row)]


def _check_tables(tables: dict) -> None:
    files, functions = tables.get("FileNames", {}), tables.get("FunctionNames", {})
    locations, frames = tables.get("FileLocations", {}), tables.get("StackFrames", {})
    for k, row in locations.items():
        for ref, known, what in ((_ids(row, "file_name_id"), files, "FileNames"),
                                 (_ids(row, "function_name_id"), functions, "FunctionNames")):
            if any(r not in known for r in ref):
                _fail(f"FileLocations row {k} refers to a {what} row that does not exist")
    for k, row in frames.items():
        if any(r not in locations for r in _ids(row, "file_location_id")):
            _fail(f"StackFrames row {k} refers to a FileLocations row that does not exist")
        if any(r != 0 and (r not in frames or r > k) for r in _ids(row, "parent_frame_id")):
            _fail(f"StackFrames row {k}: its parent_frame_id is not an earlier frame")


def _type(text: str, line: int):
    try:
        t = read_type(text)
    except (ValueError, KeyError, TypeError, OverflowError) as e:
        _fail(f"cannot read the type {text!r} ({e})", line)
    for a in _arrays(t):
        if len(a.shape) > MAX_RANK:
            _fail(f"{text} has {len(a.shape)} dimensions (at most {MAX_RANK})", line)
        if prod(a.shape) > MAX_ELEMENTS:
            _fail(f"{text} has {prod(a.shape)} elements (at most 2**40)", line)
    return t


def _arrays(t) -> list:
    if isinstance(t, TupleType):
        return [a for e in t.elements for a in _arrays(e)]
    return [t] if isinstance(t, ArrayType) else []


def _check_computation(comp, defined: set, tables: dict) -> None:
    header_line = comp.instructions[0].line - 1 if comp.instructions else 0
    if comp.name in defined:
        _fail(f"a second computation named {comp.name}", header_line)
    if not comp.instructions:
        _fail(f"computation {comp.name} has no instructions")
    names: dict[str, object] = {}
    params: dict[int, object] = {}
    roots = []
    frames = tables.get("StackFrames", {})
    for inst in comp.instructions:
        if inst.name in names:
            _fail(f"{inst.name} is defined twice in computation {comp.name}", inst.line)
        t = _type(inst.type, inst.line)
        if inst.opcode == "parameter":
            if len(inst.operands) != 1 or not inst.operands[0].isdigit():
                _fail(f"a parameter takes its number, parameter(0), not "
                      f"parameter({', '.join(inst.operands)})", inst.line)
            k = int(inst.operands[0])
            if k in params:
                _fail(f"parameter number {k} is used twice in computation {comp.name}",
                      inst.line)
            params[k] = t
        elif inst.opcode not in _LITERAL_OPERANDS:
            for o in inst.operands:
                if not _NAME.match(o):
                    _fail(f"operand {o!r} of {inst.name} is not an instruction name", inst.line)
                if o not in names:
                    _fail(f"operand {o} of {inst.name} is not defined on an earlier line of "
                          f"computation {comp.name}", inst.line)
        for key, called in inst.called():
            if called not in defined:
                _fail(f"{key}={called} names no computation defined above this one", inst.line)
        for ref in _FRAME_REF.findall(inst.attributes):
            if int(ref) not in frames:
                _fail(f"stack_frame_id={ref} names no row of the StackFrames table", inst.line)
        if inst.root:
            roots.append(inst)
        names[inst.name] = t
    if len(roots) > 1:
        _fail(f"computation {comp.name} has a second ROOT", roots[1].line)
    if sorted(params) != list(range(len(params))):
        _fail(f"computation {comp.name}: its parameters are numbered {sorted(params)}; HLO "
              f"numbers a computation's parameters 0 .. {len(params) - 1}, each once")
    _check_signature(comp, [params[k] for k in range(len(params))],
                     names[(roots[0] if roots else comp.instructions[-1]).name], header_line)


def _check_signature(comp, param_types: list, result, line: int) -> None:
    """A header ``name (x: f32[3], ...) -> f32[3] {`` agrees with the parameters and root."""
    header = comp.header
    start = header.find("(")
    arrow = header.rfind("->")
    if start < 0 or arrow < start:
        return  # no signature (``ENTRY m {``): nothing to agree with
    try:
        inner = header[start + 1:header.rindex(")", 0, arrow)]
    except ValueError:
        _fail(f"cannot read the signature of computation {comp.name}", line)
    declared = []
    for part in split_top(inner):
        if part.strip():
            _, colon, type_ = part.partition(":")
            if not colon:
                _fail(f"cannot read the parameter {part.strip()!r} of computation "
                      f"{comp.name}'s signature", line)
            declared.append(_type(type_.strip(), line))
    if declared != param_types:
        _fail(f"computation {comp.name}'s signature declares parameters "
              f"({', '.join(map(str, declared))}) but it has "
              f"({', '.join(map(str, param_types))})", line)
    returned = _type(header[arrow + 2:].rstrip().rstrip("{").strip(), line)
    if returned != result:
        _fail(f"computation {comp.name}'s signature returns {returned} but its root is "
              f"{result}", line)


def _check_entry_layout(module: HloModule) -> None:
    start = module.header.find("entry_computation_layout={")
    if start < 0:
        return
    brace = module.header.index("{", start)
    layout = module.header[brace + 1:_balanced(module.header, brace) - 1]
    arrow = layout.rfind("->")
    entry = module.entry
    params = sorted((i for i in entry.instructions if i.opcode == "parameter"),
                    key=lambda i: int(i.operands[0]))
    try:
        declared = read_type(layout[:arrow]) if arrow > 0 else None
    except (ValueError, KeyError, TypeError, OverflowError) as e:
        _fail(f"cannot read the module's entry_computation_layout ({e})", 1)
    if declared is None or not isinstance(declared, TupleType) or \
            list(declared.elements) != [read_type(p.type) for p in params]:
        _fail(f"the module's entry_computation_layout ({layout[:80]}) does not agree with the "
              f"parameters of its entry computation {entry.name}", 1)
