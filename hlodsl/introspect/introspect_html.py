"""The HTML that ``code_typed`` and ``code_hlo`` show in Jupyter.

One ``<div class="hlodsl">`` with its own ``<style>`` block (colours for light
and dark Jupyter themes): a header line, the cost of each Python source line
(instructions, FLOPs, bytes; ``hlodsl.hlo_text``), for an optimised module the
opcode counts before and after XLA's passes, its fusions and XLA's memory
statistics, then the code: the entry computation open, every sub-computation
folded in a ``<details>``, each instruction coloured (names, types, opcodes)
with its Python line in a gutter whose tooltip holds the full path and the
line's code. Modules over ``max_lines`` instructions are cut with a message.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.ones(3, np.float32))
>>> page = hd.code_hlo(lambda x: x * x, x)._repr_html_()
>>> page.startswith('<div class="hlodsl"') and "<details" in page and "<style>" in page
True
"""

from __future__ import annotations

import html
import itertools
import linecache
import re

from .hlo_text import (
    HloModule,
    Instruction,
    LineCost,
    fusion_counts,
    line_costs,
    opcode_counts,
    parameter_paths,
    parse_module,
    source_label,
)

__all__ = [
    "Table",
    "hlo_html",
    "human",
    "line_table",
    "memory_table",
    "passes_table",
    "typed_html",
]

#: Instruction lines rendered before the rest is cut (a module of thousands of
#: lines stays quick to open and to scroll).
MAX_LINES = 2000

_CSS = """
.hlodsl{--hd-op:#8250df;--hd-ty:#116329;--hd-nm:#0550ae;--hd-at:#6e7781;--hd-src:#953800;
 --hd-grad:#cf222e;--hd-bg:rgba(127,127,127,.07);--hd-bar:rgba(130,80,223,.25);
 font-family:var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,Consolas,monospace);
 font-size:12px;line-height:1.4;color:inherit}
[data-jp-theme-light="false"] .hlodsl,.vscode-dark .hlodsl,.hlodsl.hd-dark,
[data-vscode-theme-kind*="dark"] .hlodsl{--hd-op:#d2a8ff;--hd-ty:#7ee787;--hd-nm:#79c0ff;
 --hd-at:#8b949e;--hd-src:#ffa657;--hd-grad:#ff7b72;--hd-bar:rgba(210,168,255,.25)}
.hlodsl .hd-row{display:flex;flex-wrap:wrap;gap:8px 32px;align-items:flex-start}
.hlodsl .hd-head{font-weight:600;margin:2px 0 6px}
.hlodsl details{margin:2px 0}
.hlodsl summary{cursor:pointer;font-weight:600}
.hlodsl summary .hd-at{font-weight:400}
.hlodsl pre{margin:2px 0 6px;padding:6px 8px;background:var(--hd-bg);overflow-x:auto;
 font-size:12px;line-height:1.35;white-space:pre}
.hlodsl table{border-collapse:collapse;margin:2px 0 8px;font-size:12px}
.hlodsl th,.hlodsl td{padding:1px 8px;text-align:right;border-bottom:1px solid rgba(127,127,127,.2)}
.hlodsl th{font-weight:600}
.hlodsl td.hd-l,.hlodsl th.hd-l{text-align:left}
.hlodsl td.hd-code{text-align:left;max-width:46em;overflow:hidden;text-overflow:ellipsis;
 white-space:nowrap}
.hlodsl .hd-op{color:var(--hd-op);font-weight:600}
.hlodsl .hd-ty{color:var(--hd-ty)}
.hlodsl .hd-nm{color:var(--hd-nm)}
.hlodsl .hd-at{color:var(--hd-at)}
.hlodsl .hd-kw{color:var(--hd-op);font-weight:700}
.hlodsl .hd-src{color:var(--hd-src);display:inline-block;width:25ch;overflow:hidden;
 text-overflow:ellipsis;vertical-align:bottom;white-space:nowrap}
.hlodsl .hd-grad{color:var(--hd-grad)}
.hlodsl .hd-note{color:var(--hd-at);font-style:italic}
.hlodsl .hd-bar{display:inline-block;height:.8em;background:var(--hd-bar);vertical-align:middle}
"""

_esc = html.escape


def human(n: float, unit: str = "") -> str:
    """``1234567`` -> ``'1.23 M'``: counts and sizes with three significant digits.

    >>> human(1234567), human(999), human(1034240, "B"), human(5 * 2 ** 20, "B")
    ('1.23 M', '999', '1010 KiB', '5.00 MiB')
    """
    steps = ((2 ** 30, "GiB"), (2 ** 20, "MiB"), (2 ** 10, "KiB")) if unit == "B" else \
        ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
    for step, name in steps:
        if n >= step:
            v = n / step
            digits = 0 if v >= 100 else 1 if v >= 10 else 2
            return f"{v:.{digits}f} {name}" + ("" if unit == "B" else unit)
    return f"{int(n)} {unit}".rstrip()


class Table:
    """Rows with a header: prints as aligned text, renders as an HTML table.

    >>> print(Table(["opcode", "count"], [["dot", 2], ["add", 10]]))
    opcode  count
    dot         2
    add        10
    """

    def __init__(self, header: list[str], rows: list[list], title: str = "",
                 left: frozenset | set = frozenset({0}),
                 html_cells: list[list[str]] | None = None):
        self.header, self.rows, self.title, self.left = header, rows, title, left
        self._html_cells = html_cells

    def __str__(self) -> str:
        cells = [self.header] + [[str(c) for c in r] for r in self.rows]
        widths = [max(len(r[k]) for r in cells) for k in range(len(self.header))]
        lines = ["  ".join(c.ljust(w) if k in self.left else c.rjust(w)
                           for k, (c, w) in enumerate(zip(r, widths))).rstrip() for r in cells]
        return "\n".join(([self.title] if self.title else []) + lines)

    def __repr__(self) -> str:
        return str(self)

    def table_html(self) -> str:
        cls = ['class="hd-l"' if k in self.left else "" for k in range(len(self.header))]
        head = "".join(f"<th {c}>{_esc(h)}</th>" for c, h in zip(cls, self.header))
        body = self._html_cells or [[_esc(str(c)) for c in r] for r in self.rows]
        rows = "".join("<tr>" + "".join(f"<td {c}>{v}</td>" for c, v in zip(cls, r)) + "</tr>"
                       for r in body)
        return f"<table><tr>{head}</tr>{rows}</table>"

    def _repr_html_(self) -> str:
        title = f'<div class="hd-head">{_esc(self.title)}</div>' if self.title else ""
        return f'<div class="hlodsl"><style>{_CSS}</style>{title}{self.table_html()}</div>'


# -- tables ------------------------------------------------------------------------------

def _code_of(row: LineCost) -> str:
    return linecache.getline(row.file, row.line).strip() if row.file else ""


def line_table(module: HloModule, limit: int | None = 40) -> Table:
    """The cost of each Python source line of ``module``, costliest first."""
    rows = line_costs(module)
    total_flops = sum(r.flops for r in rows) or 1
    shown = rows if limit is None else rows[:limit]
    text_rows, cells = [], []
    for r in shown:
        share = r.flops / total_flops
        code = _code_of(r)
        text_rows.append([r.label, r.instructions, human(r.flops), human(r.bytes, "B"),
                          f"{share:.0%}", code[:60]])
        label = _esc(r.label)
        if r.label.startswith("grad of"):
            label = f'<span class="hd-grad">{label}</span>'
        title = f' title="{_esc(r.file)}:{r.line}"' if r.file else ""
        bar = f'<span class="hd-bar" style="width:{max(1, round(60 * share))}px"></span>'
        cells.append([f"<span{title}>{label}</span>", str(r.instructions), human(r.flops),
                      human(r.bytes, "B"), f"{bar} {share:.0%}", _esc(code)])
    more = len(rows) - len(shown)
    title = "Cost by Python source line" + (f" (the {len(shown)} costliest of {len(rows)})"
                                            if more else "")
    table = Table(["source", "instructions", "FLOPs", "bytes", "FLOP share", "code"],
                  text_rows, title, left={0, 5}, html_cells=cells)
    return table


def passes_table(before: HloModule, after: HloModule, limit: int = 15) -> Table:
    """Instructions by opcode as emitted and after XLA's passes (all computations)."""
    b, a = opcode_counts(before), opcode_counts(after)
    a_entry = opcode_counts(after, entry_only=True)
    ops = sorted(set(b) | set(a), key=lambda o: (-max(b[o], a[o]), o))
    rows = [[o, b[o], a[o], a_entry[o]] for o in ops[:limit]]
    if len(ops) > limit:
        rest = ops[limit:]
        rows.append([f"({len(rest)} more opcodes)", sum(b[o] for o in rest),
                     sum(a[o] for o in rest), sum(a_entry[o] for o in rest)])
    rows.append(["total", sum(b.values()), sum(a.values()), sum(a_entry.values())])
    return Table(["opcode", "emitted", "optimised", "optimised, entry only"], rows,
                 "Instructions by opcode, before and after XLA's passes")


def memory_table(stats: dict) -> Table:
    """XLA's compiled memory statistics, in readable units."""
    rows = [[k.removesuffix("_size_in_bytes").replace("_", " "), human(v, "B"), v]
            for k, v in stats.items()]
    return Table(["memory", "size", "bytes"], rows, "XLA's compiled memory statistics")


# -- code -----------------------------------------------------------------------------------

_TYPE = re.compile(r"((?:pred|token|[a-z]+\d+)\[[^\]]*\](?:\{[^}]*\})?)")


def _source_cell(file: str | None, line: int | None, grad: int, label: str | None = None) -> str:
    if file is None:
        return '<span class="hd-src"></span>'
    label = label or source_label(file, line, grad)
    code = linecache.getline(file, line).strip()
    title = _esc(f"{file}:{line}" + (f"\n{code}" if code else "")
                 + ("\n(derivative of this line)" if grad else ""), quote=True)
    cls = "hd-src hd-grad" if grad else "hd-src"
    return f'<span class="{cls}" title="{title}">{_esc(label)}</span>'


def _instruction_html(inst: Instruction, note: str = "") -> str:
    src = inst.source
    gutter = _source_cell(src[0], src[1], inst.grad_order) if src else _source_cell(None, None, 0)
    code = inst.code()
    head, _, tail = code.partition(" = ")
    root = head.startswith("ROOT ")
    name = head[5:] if root else head
    rest = tail.removeprefix(inst.type)
    opcode = inst.opcode
    after = rest.lstrip()[len(opcode):] if rest.lstrip().startswith(opcode) else rest
    body = _esc(after)
    body = re.sub(r"(%?[A-Za-z_][\w.\-]*)(?=[,)])", r'<span class="hd-nm">\1</span>', body, count=64)
    args_end = body.find(")")
    if args_end >= 0 and len(body) > args_end + 1:
        body = body[:args_end + 1] + f'<span class="hd-at">{body[args_end + 1:]}</span>'
    kw = '<span class="hd-kw">ROOT</span> ' if root else ""
    comment = f'  <span class="hd-note"># {_esc(note)}</span>' if note else ""
    return (f'{gutter} {kw}<span class="hd-nm">{_esc(name)}</span> = '
            f'<span class="hd-ty">{_esc(inst.type)}</span> <span class="hd-op">{opcode}</span>'
            f"{body}{comment}")


def _computation_html(comp, budget: list[int], notes: dict[str, str], opened: bool) -> str:
    shown = comp.instructions[: max(0, budget[0])]
    budget[0] -= len(shown)
    lines = [_instruction_html(i, notes.get(i.name, "") if comp.entry else "") for i in shown]
    cut = len(comp.instructions) - len(shown)
    if cut:
        lines.append(f'<span class="hd-note">... {cut} more instructions not shown '
                     "(the display is capped; print() the text for all of it)</span>")
    kind = "ENTRY " if comp.entry else ""
    summary = (f'<span class="hd-kw">{kind}</span>{_esc(comp.name)} '
               f'<span class="hd-at">({len(comp.instructions)} instructions)</span>')
    return (f"<details{' open' if opened else ''}><summary>{summary}</summary>"
            f"<pre>{chr(10).join(lines)}</pre></details>")


def _module_code(module: HloModule, max_lines: int, notes: dict[str, str]) -> str:
    budget = [max_lines]
    parts = [_computation_html(module.entry, budget, notes, True)]
    subs = [c for c in module.computations if not c.entry]
    if subs:
        inner = []
        for c in subs:
            if budget[0] <= 0:
                inner.append(f'<div class="hd-note">... {len(subs) - len(inner)} more '
                             "sub-computations not shown (the display is capped at "
                             f"{max_lines} instructions)</div>")
                break
            inner.append(_computation_html(c, budget, notes, False))
        n = sum(len(c.instructions) for c in subs)
        plural = "s" if len(subs) != 1 else ""
        parts.append(f"<details><summary>{len(subs)} sub-computation{plural} "
                     f'<span class="hd-at">({n} instructions; fused computations, '
                     f"reductions' and loops' bodies)</span></summary>{''.join(inner)}</details>")
    return "".join(parts)


def _section(title: str, body: str, opened: bool = True) -> str:
    return f"<details{' open' if opened else ''}><summary>{_esc(title)}</summary>{body}</details>"


def _wrap(head: str, sections: list[str]) -> str:
    return (f'<div class="hlodsl"><style>{_CSS}</style><div class="hd-head">{head}</div>'
            + "".join(sections) + "</div>")


def hlo_html(text: str, analysis: str | None = None, before: str | None = None,
             memory: dict | None = None, max_lines: int = MAX_LINES) -> str:
    """The HTML of HLO module ``text``; ``analysis`` is the same module with metadata
    (for the source lines), ``before`` the emitted module of an optimised one."""
    module = parse_module(analysis or text)
    shown = parse_module(text) if analysis else module
    n = sum(len(c.instructions) for c in module.computations)
    costs = line_costs(module)
    head = (f'<span class="hd-kw">HloModule</span> {_esc(module.name)} '
            f'<span class="hd-at">· {n} instructions in {len(module.computations)} computations'
            f" · {human(sum(r.flops for r in costs))}FLOP estimated</span>")
    sections = [_section(line_table(module).title, line_table(module).table_html())]
    paths = parameter_paths(parse_module(before)) if before else parameter_paths(module)
    side = []
    if before is not None:
        prior = parse_module(before)
        fusions = fusion_counts(module)
        kinds = ", ".join(f"{k} {v}" for k, v in fusions.most_common()) or "none"
        body = (passes_table(prior, module).table_html()
                + f'<div>fusions: {sum(fusions.values())} ({_esc(kinds)})</div>')
        side.append(_section("XLA's passes: instructions by opcode, before and after", body))
    if memory:
        side.append(_section("XLA's compiled memory statistics",
                             memory_table(memory).table_html()))
    if side:
        sections.append(f'<div class="hd-row">{"".join(side)}</div>')
    notes = {i.name: paths[int(i.operands[0])] for i in shown.entry.instructions
             if i.opcode == "parameter" and i.operands and i.operands[0].isdigit()
             and paths.get(int(i.operands[0]), i.name) != i.name}
    with_sources = _merge_sources(shown, module) if analysis else shown
    sections.append(_module_code(with_sources, max_lines, notes))
    return _wrap(head, sections)


def _merge_sources(shown: HloModule, analysed: HloModule) -> HloModule:
    """``shown`` (printed without metadata) with the metadata of ``analysed``, line by line."""
    by_comp = analysed.by_name()
    comps = []
    for c in shown.computations:
        other = {i.name: i for i in by_comp[c.name].instructions} if c.name in by_comp else {}
        insts = [i._replace(attributes=other[i.name].attributes) if i.name in other else i
                 for i in c.instructions]
        comps.append(c._replace(instructions=insts))
    return shown._replace(computations=comps)


def typed_html(rows: list[tuple], name: str, params: list[tuple[str, str]], analysis: str,
               max_lines: int = MAX_LINES) -> str:
    """The HTML of ``code_typed``: ``rows`` are ``(result, op, operands, type, loc)``,
    ``params`` ``(name, type)``."""
    module = parse_module(analysis)
    head = (f'<span class="hd-kw">function</span> {_esc(name)}'
            f'<span class="hd-at">({len(params)} parameters, {len(rows)} op calls)</span>')
    listed = "\n".join(f'<span class="hd-nm">{_esc(n)}</span>: <span class="hd-ty">{_esc(t)}'
                        "</span>" for n, t in params)
    lines = []
    for result, op, operands, type_, loc in itertools.islice(rows, max_lines):
        grad = loc.function.count("transpose(jvp(") if loc else 0
        gutter = _source_cell(loc.file, loc.line, grad) if loc else _source_cell(None, None, 0)
        name, _, statics = op.partition("(")
        lines.append(f'{gutter} <span class="hd-nm">{_esc(result)}</span> = '
                     f'<span class="hd-op">{_esc(name)}</span><span class="hd-at">({_esc(statics)}'
                     f'</span>(<span class="hd-nm">{_esc(operands)}</span>) :: '
                     f'<span class="hd-ty">{_esc(type_)}</span>')
    if len(rows) > max_lines:
        lines.append(f'<span class="hd-note">... {len(rows) - max_lines} more op calls not '
                     "shown (the display is capped; print() the text for all of it)</span>")
    code = (f"<details open><summary>{len(rows)} op calls</summary>"
            f"<pre>{chr(10).join(lines)}</pre></details>")
    table = line_table(module)
    signature = _section(f"{len(params)} parameters", f"<pre>{listed}</pre>", len(params) <= 8)
    parts = [signature, _section(table.title, table.table_html()), code]
    subs = [c for c in module.computations if not c.entry]
    if subs:  # what Reduce, Map, While, ... apply: shown as the HLO they print to
        budget = [max(0, max_lines - len(rows))]
        inner = "".join(_computation_html(c, budget, {}, False) for c in subs)
        plural = "s" if len(subs) != 1 else ""
        parts.append(_section(f"{len(subs)} sub-computation{plural} (as HLO)", inner, False))
    return _wrap(head, parts)
