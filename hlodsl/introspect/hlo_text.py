"""Reading HLO module text back: instructions, their Python lines, and what they cost.

``code_hlo`` hands out text, emitted by hlodsl or optimised by XLA; this module
reads either into computations of instructions (name, opcode, result type,
operands, attributes, source line from the metadata), so introspection can
group instructions by the Python line that made them and estimate their cost:

- **FLOPs**: ``dot`` 2 x result elements x contracted size; ``convolution``
  2 x result elements x kernel elements per output feature; elementwise ops
  one per result element; ``reduce`` one per operand element,
  ``reduce-window`` one per result element and window element; data
  movement none. A while body counts once (the trip count is not in the text).
- **bytes**: the size of the results that are written to memory: every
  instruction's outside fusions, none inside a fused computation; aliases
  (``tuple``, ``get-tuple-element``, ``bitcast``) and parameters none.

Derivative instructions carry the name stack ``transpose(jvp(f))`` in their
``op_name`` (``hlodsl.transforms.traces``) and are labelled ``grad of
file:line``; lines of a Jupyter cell read ``In [12], line 3``.

>>> text = '''HloModule m
... ENTRY m {
...   W = f32[4,3] parameter(0)
...   x = f32[3] parameter(1)
...   dot.2 = f32[4] dot(W, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="m/dot.2" source_file="/src/model.py" source_line=7}
...   ROOT tanh.3 = f32[4] tanh(dot.2), metadata={op_name="m/tanh.3" source_file="/src/model.py" source_line=8}
... }'''
>>> module = parse_module(text)
>>> [(i.name, i.opcode, flops(i, module.entry)) for i in module.entry.instructions]
[('W', 'parameter', 0), ('x', 'parameter', 0), ('dot.2', 'dot', 24), ('tanh.3', 'tanh', 4)]
>>> [(r.label, r.instructions, r.flops, r.bytes) for r in line_costs(module)]
[('model.py:7', 1, 24, 16), ('model.py:8', 1, 4, 16)]

``hlodsl.import_hlo`` reads the values too: types, attributes and literals.

>>> read_type("(f32[2,3]{1,0}, s32[])")
TupleType([ArrayType(float32, (2, 3)), ArrayType(int32, ())])
>>> parse_attributes('dimensions={0,1}, to_apply=%add, metadata={op_name="a, b"}')
{'dimensions': '{0,1}', 'to_apply': '%add', 'metadata': '{op_name="a, b"}'}
>>> read_literal("{ {1, 2}, {3, inf} }", ArrayType(from_hlo("f32"), (2, 2)))
array([[ 1.,  2.],
       [ 3., inf]], dtype=float32)
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from math import prod
from typing import NamedTuple

import numpy as np

from hlodsl.arrays.dtypes import from_hlo
from hlodsl.arrays.types import ArrayType, TokenType, TupleType

__all__ = [
    "HloComputation",
    "HloModule",
    "Instruction",
    "LineCost",
    "cell_name",
    "flops",
    "fusion_counts",
    "line_costs",
    "opcode_counts",
    "parameter_paths",
    "parse_attributes",
    "parse_module",
    "read_literal",
    "read_type",
    "result_bytes",
    "source_label",
    "split_top",
]

_ARRAY = re.compile(r"\b(pred|token|[a-z]+\d*(?:e\d+m\d+\w*)?)\[([\d,\s<=?]*)\]")
_BITS = {"pred": 8, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16,
         "bf16": 16, "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64,
         "c64": 64, "c128": 128}
_SOURCE = re.compile(r'source_file="([^"]*)" source_line=(\d+)')
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\b.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s+(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_OPCODE = re.compile(r"\s*([a-z][a-z0-9\-]*)\(")
_CALLED = re.compile(r"\b(calls|to_apply|body|condition|true_computation|false_computation|"
                     r"select|scatter|branch_computations|called_computations)="
                     r"(\{[^}]*\}|%?[\w.\-]+)")

#: Ops that do one operation per result element.
ELEMENTWISE = frozenset({
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "complex", "compare", "cosine",
    "divide", "erf", "exponential", "exponential-minus-one", "floor", "imag", "is-finite",
    "log", "log-plus-one", "logistic", "maximum", "minimum", "multiply", "negate", "not",
    "or", "popcnt", "power", "real", "remainder", "round-nearest-afz",
    "round-nearest-even", "rsqrt", "select", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "sign", "sine", "sqrt", "subtract", "tan", "tanh", "xor", "clz",
})
#: Instructions that name or regroup values without writing memory.
_ALIASES = frozenset({"parameter", "tuple", "get-tuple-element", "bitcast"})
#: Attributes whose computations run once per call (their instructions count).
_EXECUTED = frozenset({"calls", "body", "condition", "true_computation", "false_computation",
                       "branch_computations", "called_computations"})


class Instruction(NamedTuple):
    """One instruction of HLO text, taken apart."""

    name: str
    opcode: str
    type: str         # the result type, as printed (``f32[16,32]{1,0}``, or a tuple)
    operands: tuple   # names of the operand instructions
    attributes: str   # everything after the operands, metadata included
    root: bool
    text: str         # the whole line, stripped
    line: int = 0     # its line number in the module text (1-based; 0 where unknown)

    @property
    def source(self) -> tuple[str, int] | None:
        m = _SOURCE.search(self.attributes)
        return (m[1], int(m[2])) if m else None

    @property
    def op_name(self) -> str | None:
        m = _OP_NAME.search(self.attributes)
        return m[1].replace("\\'", "'").replace('\\"', '"') if m else None

    @property
    def grad_order(self) -> int:
        """How many ``transpose(jvp(...))`` wrap this instruction's name stack."""
        name = self.op_name
        return name.count("transpose(jvp(") if name else 0

    def called(self) -> list[tuple[str, str]]:
        """``(attribute, computation)`` for every computation this instruction applies."""
        out = []
        for key, value in _CALLED.findall(self.attributes):
            for name in value.strip("{}").split(","):
                if name.strip():
                    out.append((key, name.strip().lstrip("%")))
        return out

    def code(self) -> str:
        """The line without its metadata (what a reader wants to see)."""
        return re.sub(r",\s*metadata=\{(?:[^{}\"]|\"(?:[^\"\\]|\\.)*\")*\}", "", self.text)


class HloComputation(NamedTuple):
    name: str
    entry: bool
    instructions: list
    header: str

    def shapes(self) -> dict[str, str]:
        return {i.name: i.type for i in self.instructions}


class HloModule(NamedTuple):
    name: str
    header: str
    computations: list  # in text order: the entry last
    #: ``(line number, line)`` of the lines inside computations that are not
    #: instructions hlodsl can read (none in text XLA or hlodsl printed; the
    #: validator of text from outside, ``hlo_validation``, refuses them).
    skipped: tuple = ()

    @property
    def entry(self) -> HloComputation:
        """The ``ENTRY`` computation; without one, the last (as XLA's parser takes it)."""
        if not self.computations:
            raise ValueError(f"the HLO module {self.name} has no computation")
        return next((c for c in reversed(self.computations) if c.entry), self.computations[-1])

    def by_name(self) -> dict[str, HloComputation]:
        return {c.name: c for c in self.computations}


def _balanced(text: str, start: int) -> int:
    """The index just past the parenthesis that closes the one at ``text[start]``."""
    depth = 0
    quoted = False
    for k in range(start, len(text)):
        ch = text[k]
        if ch == '"' and text[k - 1] != "\\":
            quoted = not quoted
        elif quoted:
            continue
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(text)


#: XLA numbers the elements of long tuples, types and operand lists alike, every
#: fifth one: ``(f32[], ..., /*index=5*/f32[])``, ``tuple(%a, ..., /*index=5*/%f)``.
_INDEX_COMMENT = re.compile(r"/\*index=\d+\*/")


def _instruction(line: str, number: int = 0) -> Instruction | None:
    m = _INSTRUCTION.match(_INDEX_COMMENT.sub("", line))
    if m is None:
        return None
    rest = m[3]
    if rest.startswith("("):  # a tuple type
        end = _balanced(rest, 0)
    else:
        end = rest.find(" ")
        end = len(rest) if end < 0 else end
    type_, rest = rest[:end], rest[end:]
    op = _OPCODE.match(rest)
    if op is None:
        return None
    open_ = op.end() - 1
    close = _balanced(rest, open_)
    inner = rest[open_ + 1:close - 1]
    operands = tuple(tok.split()[-1].lstrip("%") for tok in split_top(inner) if tok.strip())
    attributes = rest[close:].lstrip(", ")
    return Instruction(m[2], op[1], type_, operands, attributes, bool(m[1]), line.strip(), number)


def parse_module(text: str) -> HloModule:
    """The computations of HLO module ``text`` (as emitted or as XLA prints it)."""
    name, header = "module", ""
    computations: list[HloComputation] = []
    current: HloComputation | None = None
    skipped = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("HloModule"):
            header = line
            name = line.split()[1].rstrip(",") if len(line.split()) > 1 else name
        elif current is None:
            m = _HEADER.match(line)
            if m:
                current = HloComputation(m[2], bool(m[1]), [], line)
        elif line.strip() == "}":
            computations.append(current)
            current = None
        else:
            inst = _instruction(line, number)
            if inst is not None:
                # Operands that are literals (a constant's value) are not instructions.
                current.instructions.append(inst)
            elif line.strip():
                skipped.append((number, line))
    return HloModule(name, header, computations, tuple(skipped))


_TYPE = re.compile(r"\s*(?:(\()|(\))|(,)|(token)\[\]|(\w+)\[([^\]]*)\](?:\{[^}]*\})?)")


def read_type(text: str):
    """``ArrayType``, ``TupleType`` or ``TokenType`` of an HLO type (layouts ignored).

    XLA numbers the elements of long tuples with comments (``/*index=5*/``):
    they are skipped.

    >>> read_type("(f32[2]{0}, s32[], f32[], f32[], f32[], /*index=5*/pred[3,4]{1,0})")
    ... # doctest: +NORMALIZE_WHITESPACE
    TupleType([ArrayType(float32, (2,)), ArrayType(int32, ()), ArrayType(float32, ()),
               ArrayType(float32, ()), ArrayType(float32, ()), ArrayType(pred, (3, 4))])
    """
    text = _INDEX_COMMENT.sub("", text)
    pos = 0

    def one():
        nonlocal pos
        m = _TYPE.match(text, pos)
        if m is None:
            raise ValueError(f"cannot read the type {text!r}")
        pos = m.end()
        if m[1]:
            elements = []
            while True:
                m2 = _TYPE.match(text, pos)
                if m2 is not None and m2[2]:
                    pos = m2.end()
                    return TupleType(tuple(elements))
                if elements:
                    m3 = _TYPE.match(text, pos)
                    if m3 is None or not m3[3]:
                        raise ValueError(f"cannot read the type {text!r}")
                    pos = m3.end()
                elements.append(one())
        if m[4]:
            return TokenType()
        if m[5] is None:
            raise ValueError(f"cannot read the type {text!r}")
        dims = [d.strip() for d in m[6].split(",") if d.strip()]
        if any(not d.isdigit() for d in dims):
            raise ValueError(f"dynamic dimensions ({text}) are not supported: hlodsl shapes "
                             "are static")
        return ArrayType(from_hlo(m[5]), tuple(int(d) for d in dims))

    return one()


def split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and quotes."""
    parts, depth, start, quoted, k = [], 0, 0, False, 0
    while k < len(text):
        ch = text[k]
        if quoted:
            if ch == "\\":
                k += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:k])
            start = k + 1
        k += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_attributes(text: str) -> dict[str, str]:
    """``key=value`` attributes of an instruction (values as text)."""
    out = {}
    for part in split_top(text):
        key, eq, value = part.partition("=")
        if eq:
            out[key.strip()] = value.strip()
    return out


_LITERAL_TOKEN = re.compile(r"\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)|[^\s{},()]+")


def _number(token: str):
    t = token.lower()
    if t in ("true", "false"):
        return t == "true"
    if t in ("nan", "-nan", "+nan"):
        return float("nan")
    if t in ("inf", "+inf", "-inf"):
        return float(t)
    try:
        value = int(t)
    except ValueError:
        return float(t)
    # XLA prints a float -0.0 as "-0": keep its sign (an integer type casts it to 0).
    return -0.0 if value == 0 and t.startswith("-") else value


def read_literal(text: str, t: ArrayType) -> np.ndarray:
    """The value of a ``constant(...)``'s literal ``text`` as an array of type ``t``."""
    if "..." in text:
        raise ValueError("the constant's value was left out of the text ({...}); print the "
                         "module with large constants")
    values = []
    for m in _LITERAL_TOKEN.finditer(text):
        if m[1] is not None:
            values.append(complex(_number(m[1]), _number(m[2])))
        else:
            values.append(_number(m[0]))
    np_dtype = t.dtype.np_dtype
    if len(values) != int(np.prod(t.shape)):
        raise ValueError(f"the literal has {len(values)} elements, its type {t} needs "
                         f"{int(np.prod(t.shape))}")
    if np.dtype(np_dtype).kind in "iub":
        out = np.array(values, dtype=object).astype(np_dtype)
    else:
        wide = np.complex128 if np.dtype(np_dtype).kind == "c" else np.float64
        out = np.array(values, dtype=wide).astype(np_dtype)
    return out.reshape(t.shape)


def _arrays(type_: str) -> list[tuple[str, tuple[int, ...]]]:
    out = []
    for dtype, dims in _ARRAY.findall(type_):
        if dtype == "token":
            continue
        sizes = tuple(int(d.strip().lstrip("<=")) for d in dims.split(",") if d.strip()
                      and d.strip().lstrip("<=").isdigit())
        out.append((dtype, sizes))
    return out


def _elements(type_: str) -> int:
    return sum(prod(dims) for _, dims in _arrays(type_))


def result_bytes(inst: Instruction) -> int:
    """Bytes of ``inst``'s result (all elements of a tuple)."""
    return sum(prod(dims) * _BITS.get(dtype, 32) // 8 for dtype, dims in _arrays(inst.type))


def _dims(attributes: str, key: str) -> tuple[int, ...]:
    m = re.search(rf"\b{key}=\{{([\d,]*)\}}", attributes)
    return tuple(int(d) for d in m[1].split(",") if d) if m else ()


def flops(inst: Instruction, comp: HloComputation, shapes: dict | None = None) -> int:
    """Estimated floating-point operations of ``inst`` (see the module's docstring)."""
    op = inst.opcode
    out = _elements(inst.type)
    if op in ELEMENTWISE:
        return out
    if op not in ("dot", "convolution", "reduce", "reduce-window", "map"):
        return 0
    shapes = comp.shapes() if shapes is None else shapes
    operand = [_arrays(shapes.get(o, "")) for o in inst.operands]
    if op == "dot":
        lhs = operand[0][0][1] if operand and operand[0] else ()
        return 2 * out * prod(lhs[d] for d in _dims(inst.attributes, "lhs_contracting_dims")
                              if d < len(lhs))
    if op == "convolution":
        kernel = operand[1][0][1] if len(operand) > 1 and operand[1] else ()
        labels = re.search(r"dim_labels=\w+_(\w+)->", inst.attributes)
        o = labels[1].find("o") if labels else len(kernel) - 1
        per_output = prod(kernel) // kernel[o] if kernel and 0 <= o < len(kernel) else 0
        return 2 * out * per_output
    if op == "reduce":
        inputs = operand[: max(1, len(operand) // 2)]
        return sum(prod(a[0][1]) for a in inputs if a)
    if op == "reduce-window":
        window = re.search(r"window=\{size=([\dx]+)", inst.attributes)
        return out * (prod(int(s) for s in window[1].split("x")) if window else 1)
    return out  # map: one application per element


def cell_name(file: str) -> str | None:
    """``In [12]`` for the file IPython compiled cell 12 into (None outside IPython).

    IPython's compiler keeps a map from the file names it gives cells to their
    execution counts (``get_ipython().compile._filename_map``).
    """
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        number = shell.compile._filename_map.get(file) if shell is not None else None
    except (AttributeError, TypeError):  # another IPython: file names stay as they are
        return None
    return None if number is None else f"In [{number}]"


def source_label(file: str, line: int, grad: int = 0) -> str:
    """``model.py:41``, ``In [12], line 3`` or ``grad of model.py:41``."""
    cell = cell_name(file)
    base = file.replace("\\", "/").rsplit("/", 1)[-1]
    where = f"{cell}, line {line}" if cell else f"{base}:{line}"
    return "grad of " * grad + where


class LineCost(NamedTuple):
    """What one Python source line costs in a module."""

    label: str           # ``model.py:41``, ``grad of model.py:41``, or ``(no source)``
    file: str | None
    line: int | None
    instructions: int
    flops: int
    bytes: int


def _walk(module: HloModule):
    """``(instruction, computation, fused)`` for each instruction that runs, once per run:
    the entry's, and those of the computations they call (fusions, loops, branches,
    calls); not the scalar computations that reduce, map, sort, ... apply."""
    comps = module.by_name()
    shapes_of: dict[str, dict] = {}

    def visit(comp: HloComputation, fused: bool, depth: int):
        if depth > 64:
            return
        shapes = shapes_of.setdefault(comp.name, comp.shapes())
        for inst in comp.instructions:
            yield inst, comp, fused, shapes
            for key, called in inst.called():
                if key in _EXECUTED or (key == "to_apply" and inst.opcode == "call"):
                    sub = comps.get(called)
                    if sub is not None:
                        yield from visit(sub, fused or inst.opcode == "fusion", depth + 1)

    return visit(module.entry, False, 0)


def line_costs(module: HloModule) -> list[LineCost]:
    """Instructions, FLOPs and bytes per Python source line, the costliest first.

    Parameters and fusion wrappers are not counted as instructions (a fusion's
    fused instructions are); instructions without a source line share one row.
    """
    rows: dict = {}
    for inst, comp, fused, shapes in _walk(module):
        if inst.opcode == "parameter":
            continue
        src = inst.source
        key = (src, inst.grad_order) if src else (None, 0)
        row = rows.setdefault(key, [0, 0, 0])
        if inst.opcode != "fusion":
            row[0] += 1
        row[1] += flops(inst, comp, shapes)
        if not fused and inst.opcode not in _ALIASES:
            row[2] += result_bytes(inst)
    out = [LineCost(source_label(src[0], src[1], grad) if src else "(no source)",
                    src[0] if src else None, src[1] if src else None, *row)
           for (src, grad), row in rows.items()]
    return sorted(out, key=lambda r: (-r.flops, -r.bytes, -r.instructions, r.label))


def opcode_counts(module: HloModule, entry_only: bool = False) -> Counter:
    """Instructions by opcode: in the entry computation, or in every computation."""
    comps = [module.entry] if entry_only else module.computations
    return Counter(i.opcode for c in comps for i in c.instructions)


def fusion_counts(module: HloModule) -> Counter:
    """Fusion instructions by kind (``kLoop``, ``kInput``, ``kOutput``, ``kCustom``)."""
    return Counter((re.search(r"kind=(\w+)", i.attributes) or [None, "?"])[1]
                   for c in module.computations for i in c.instructions if i.opcode == "fusion")


def parameter_paths(module: HloModule) -> dict[int, str]:
    """The entry parameters' readable paths by number (their ``op_name``, else their name)."""
    out = {}
    for inst in module.entry.instructions:
        if inst.opcode == "parameter" and inst.operands and inst.operands[0].isdigit():
            out[int(inst.operands[0])] = inst.op_name or inst.name
    return out
