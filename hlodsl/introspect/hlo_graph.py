"""A picture of an HLO module: its dataflow graph, through Graphviz's ``dot``.

``code_hlo(...).graph()`` draws one computation (the entry by default): one
box per instruction (opcode, result type, Python line), edges from operands
to users, each fusion as a cluster of its fused instructions, every other
sub-computation (a reduction's ``add``, a loop's body) folded into the
instruction that applies it. Past ``max_nodes`` the fusions are drawn folded
too, and past that again the graph is cut with a note, so a module of
thousands of instructions still gives a picture one can read.

Where Graphviz is installed the graph renders as SVG in Jupyter; without it,
``Graph`` shows its DOT source with a one-line hint.

>>> text = '''HloModule m
... ENTRY m {
...   x = f32[3] parameter(0)
...   ROOT n = f32[3] negate(x)
... }'''
>>> from .hlo_text import parse_module
>>> g = module_graph(parse_module(text))
>>> print(g.dot.splitlines()[0]), "negate" in g.dot
digraph m {
(None, True)
"""

from __future__ import annotations

import html
import shutil
import subprocess

from .hlo_text import ELEMENTWISE, HloModule, parameter_paths, source_label

__all__ = ["Graph", "module_graph"]

HINT = ("Graphviz's `dot` program is not installed: this is the graph's DOT source "
        "(install graphviz, e.g. apt-get install graphviz, to see it drawn)")

_COLOURS = {"dot": "#f6b26b", "convolution": "#f6b26b", "reduce": "#93c47d",
            "reduce-window": "#93c47d", "parameter": "#cfe2f3", "constant": "#eeeeee",
            "fusion": "#d9d2e9", "while": "#ffe599", "conditional": "#ffe599",
            "call": "#ffe599", "custom-call": "#ffe599"}
#: Up to this many boxes, fusions are drawn open (as clusters of their instructions).
FUSED_NODES = 150
_SMALL = frozenset({"constant", "get-tuple-element", "tuple", "bitcast", "parameter"})


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class Graph:
    """A module's graph: ``dot`` holds the DOT source, ``svg()`` draws it (Graphviz)."""

    def __init__(self, dot: str, note: str = ""):
        self.dot = dot
        self.note = note
        self._svg: str | None = None

    def svg(self) -> str | None:
        """The SVG drawing, or None where Graphviz's ``dot`` is not installed."""
        if self._svg is None and shutil.which("dot"):
            done = subprocess.run(["dot", "-Tsvg"], input=self.dot, capture_output=True,
                                  check=False, text=True, timeout=120)
            if done.returncode == 0:
                svg = done.stdout
                self._svg = svg[svg.find("<svg"):] if "<svg" in svg else svg
        return self._svg

    def _repr_svg_(self) -> str | None:
        return self.svg()

    def _repr_html_(self) -> str:
        svg = self.svg()
        note = f"<div><i>{html.escape(self.note)}</i></div>" if self.note else ""
        if svg is None:
            return f"<div><i>{html.escape(HINT)}</i></div>{note}<pre>{html.escape(self.dot)}</pre>"
        return f'{note}<div style="overflow:auto;max-height:900px">{svg}</div>'

    def __str__(self) -> str:
        return self.dot

    def __repr__(self) -> str:
        lead = "" if shutil.which("dot") else f"# {HINT}\n"
        note = f"# {self.note}\n" if self.note else ""
        return lead + note + self.dot


def _label(inst, path: str | None = None) -> str:
    src = inst.source
    where = source_label(src[0], src[1], inst.grad_order) if src else ""
    head = path or (inst.name if inst.opcode == "fusion" else inst.opcode)
    type_ = inst.type if len(inst.type) <= 40 else inst.type[:37] + "..."
    called = [c for k, c in inst.called() if k != "calls"]
    extra = f"\n({', '.join(called)})" if called else ""
    return f"{head}\n{type_}" + extra + (f"\n{where}" if where else "")


def _style(inst) -> str:
    colour = _COLOURS.get(inst.opcode, "#d0e0e3" if inst.opcode in ELEMENTWISE else "#ffffff")
    shape = "ellipse" if inst.opcode == "parameter" else "box"
    border = ', color="#cc0000", penwidth=2' if inst.grad_order else ""
    size = ", fontsize=9" if inst.opcode in _SMALL else ""
    return f'shape={shape}, style="filled,rounded", fillcolor="{colour}"{border}{size}'


def _scalar_constant(inst) -> bool:
    return inst.opcode == "constant" and "[]" in inst.type


def module_graph(module: HloModule, computation: str | None = None,
                 max_nodes: int = 200, expand_fusions: bool | None = None) -> Graph:
    """The graph of ``computation`` (a name; the entry by default) of ``module``.

    Fusions are drawn as clusters of their fused instructions while that keeps
    the picture under ``FUSED_NODES`` boxes (``expand_fusions`` says it
    instead); at most ``max_nodes`` boxes are drawn, then a note.
    """
    comps = module.by_name()
    if computation is None:
        comp = module.entry
    elif computation in comps:
        comp = comps[computation]
    else:
        names = ", ".join(sorted(comps))
        raise ValueError(f"graph: no computation named {computation!r} in module "
                         f"{module.name}; it has {names}")
    paths = parameter_paths(module) if comp.entry else {}

    def fused_size(inst) -> int:
        inner = [comps.get(c) for k, c in inst.called() if k == "calls"]
        return sum(sum(i.opcode != "parameter" for i in c.instructions) for c in inner if c)

    expanded = sum(fused_size(i) if i.opcode == "fusion" else 1 for i in comp.instructions)
    expand = expanded <= min(max_nodes, FUSED_NODES) if expand_fusions is None else expand_fusions
    notes = []
    if not expand and expand_fusions is None and any(i.opcode == "fusion"
                                                     for i in comp.instructions):
        notes.append(f"fusions drawn folded (open they would make {expanded} boxes; "
                     "graph(expand_fusions=True) opens them)")
    lines = [f"digraph {_quote(module.name) if not module.name.isidentifier() else module.name} {{",
             '  graph [rankdir=TB, fontname="Helvetica", fontsize=10, nodesep=0.25, ranksep=0.3];',
             '  node [fontname="Helvetica", fontsize=10, margin="0.08,0.03", height=0.3];',
             '  edge [color="#777777", arrowsize=0.6];']
    ids: dict[str, str] = {}       # instruction name -> node id (a fusion: its root's)
    count = 0
    drawn = 0
    for inst in comp.instructions:
        if drawn >= max_nodes:
            break
        fused = [comps.get(c) for k, c in inst.called() if k == "calls"]
        if expand and inst.opcode == "fusion" and fused and fused[0] is not None:
            count += 1
            inner = fused[0]
            kind = inst.attributes.split("kind=", 1)[-1].split(",", 1)[0] if "kind=" in \
                inst.attributes else ""
            lines.append(f"  subgraph cluster_{count} {{")
            lines.append(f'    label={_quote(f"{inst.name} ({kind})")}; style="rounded,dashed"; '
                         'color="#8e7cc3"; fontsize=9;')
            local: dict[str, str] = {}
            crossing = []  # edges into the cluster, written outside it: an edge
            # statement inside a cluster would pull its outside node into the cluster
            for sub in inner.instructions:
                if _scalar_constant(sub):
                    continue
                if sub.opcode == "parameter":
                    k = int(sub.operands[0]) if sub.operands and sub.operands[0].isdigit() else -1
                    if 0 <= k < len(inst.operands) and ids.get(inst.operands[k]):
                        local[sub.name] = ids[inst.operands[k]]
                    continue
                node = f"n{count}_{len(local)}"
                local[sub.name] = node
                drawn += 1
                lines.append(f"    {node} [label={_quote(_label(sub))}, {_style(sub)}];")
                for o in dict.fromkeys(sub.operands):
                    if o in local:
                        inside = local[o].startswith(f"n{count}_")
                        (lines if inside else crossing).append(f"    {local[o]} -> {node};")
            lines.append("  }")
            lines += crossing
            root = next((i for i in inner.instructions if i.root), inner.instructions[-1])
            ids[inst.name] = local.get(root.name, f"n{count}_0")
            continue
        if _scalar_constant(inst):
            ids[inst.name] = None  # drawn as no node: scalar constants only add clutter
            continue
        count += 1
        node = f"n{count}"
        ids[inst.name] = node
        drawn += 1
        path = paths.get(int(inst.operands[0])) if inst.opcode == "parameter" and \
            inst.operands and inst.operands[0].isdigit() else None
        lines.append(f"  {node} [label={_quote(_label(inst, path))}, {_style(inst)}];")
        for o in dict.fromkeys(inst.operands):
            if ids.get(o):
                lines.append(f"  {ids[o]} -> {node};")
    left = len(comp.instructions) - sum(1 for i in comp.instructions if i.name in ids)
    if left > 0:
        notes.append(f"{left} more instructions of {comp.name} not drawn "
                     f"(graph(max_nodes=...) draws more)")
        lines.append(f"  more [label={_quote(notes[-1])}, shape=note];")
    lines.append("}")
    return Graph("\n".join(lines) + "\n", "; ".join(notes))
