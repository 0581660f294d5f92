"""HLO module text: the entry computation plus every sub-computation it references.

Sub-computations (the staged Python callables of Map, Reduce, ...) are printed
before their users and deduplicated by their text, so structurally identical
computations are emitted once. Instruction names are local to a computation,
which XLA's parser allows. Each instruction carries the user's source line in
its metadata, so optimised HLO can be traced back to Python.
"""

from __future__ import annotations

import re

from .graph import Computation

__all__ = ["module_text", "PrintContext"]


# Words XLA's HLO lexer reads as keywords: a computation or parameter with
# one of these names would not parse.
_KEYWORDS = {"true", "false", "inf", "nan", "maximal", "replicated", "manual", "unknown",
             "last_tile_dim_replicate", "last_tile_dims", "HloModule", "ENTRY", "ROOT"}


def _ident(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    if name in _KEYWORDS:
        return f"{name}_"
    return name if name and (name[0].isalpha() or name[0] == "_") else f"_{name}"


class PrintContext:
    """Collects sub-computations while an op prints its attributes."""

    def __init__(self, metadata: bool = True, manual_sharding: bool = False):
        self.metadata = metadata
        self.manual_sharding = manual_sharding
        self.blocks: list[str] = []  # printed sub-computations, dependencies first
        self._by_body: dict[str, str] = {}  # body text -> computation name
        self._by_comp: dict[int, str] = {}
        self._used_names: set[str] = set()

    def computation(self, comp: Computation) -> str:
        """The module-level name of ``comp``, printing it first if new."""
        name = self._by_comp.get(id(comp))
        if name is not None:
            return name
        body = self._body(comp)
        name = self._by_body.get(body)
        if name is None:
            name = self._fresh(_ident(comp.name))
            self._by_body[body] = name
            self.blocks.append(f"{name} {{\n{body}}}\n")
        self._by_comp[id(comp)] = name
        return name

    def _fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self._used_names:
            k += 1
            name = f"{base}.{k}"
        self._used_names.add(name)
        return name

    def _body(self, comp: Computation) -> str:
        names: dict[int, str] = {}
        param_names = {id(p): n for p, n in zip(comp.params, comp.param_names)}
        lines = []
        for node in comp.nodes:
            if id(node) in param_names:
                name = _ident(param_names[id(node)])
                if name in names.values():
                    name = f"{name}.{node.id}"
            else:
                name = f"{node.op.opcode}.{node.id}"
            names[id(node)] = name
            operands = [names[id(o)] for o in node.operands]
            text = node.op.emit(operands, tuple(o.type for o in node.operands), node.type, self)
            root = "ROOT " if node is comp.root else ""
            meta = _metadata(node, f"{_ident(comp.name)}/{name}") if self.metadata else ""
            shard = _manual_sharding(node.type) if self.manual_sharding else ""
            lines.append(f"  {root}{name} = {node.type.hlo} {text}{shard}{meta}\n")
        return "".join(lines)

    def entry(self, comp: Computation, name: str) -> str:
        body = self._body(comp)
        header = f"HloModule {_ident(name)}\n\n"
        return header + "\n".join(self.blocks) + ("\n" if self.blocks else "") + \
            f"ENTRY {self._fresh(_ident(name))} {{\n{body}}}\n"


def _metadata(node, op_name: str) -> str:
    loc = node.loc
    if loc is None:
        return ""
    file = loc.file.replace("\\", "/").replace('"', "'")
    # XLA keeps source_file/source_line through its passes only with an op_name;
    # "computation/instruction" also lets verifier errors name the instruction.
    return (f', metadata={{op_name="{op_name}" '
            f'source_file="{file}" source_line={loc.line}}}')


def _manual_sharding(t) -> str:
    elements = getattr(t, "elements", None)
    if elements is None:
        return ", sharding={manual}"
    return ", sharding={" + ", ".join("{manual}" for _ in elements) + "}"


def module_text(entry: Computation, name: str | None = None, metadata: bool = True,
                manual_sharding: bool = False) -> str:
    """The whole HLO module for ``entry`` as XLA's text format.

    ``manual_sharding`` marks every instruction ``sharding={manual}``: each SPMD
    partition runs the program on its own data, as code with explicit
    collectives across partitions expects.
    """
    return PrintContext(metadata, manual_sharding).entry(entry, name or entry.name)
