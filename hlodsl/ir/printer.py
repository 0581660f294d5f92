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

__all__ = ["module_text", "ModuleText", "PrintContext", "param_ident"]


# Words XLA's HLO lexer reads as keywords: a computation or parameter with
# one of these names would not parse.
_KEYWORDS = {"true", "false", "inf", "nan", "maximal", "replicated", "manual", "unknown",
             "last_tile_dim_replicate", "last_tile_dims", "HloModule", "ENTRY", "ROOT"}


def _ident(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    if name in _KEYWORDS:
        return f"{name}_"
    return name if name and (name[0].isalpha() or name[0] == "_") else f"_{name}"


def param_ident(path: str) -> str:
    """The HLO identifier for a parameter named by its Python path:
    ``params['features'][0]['weight']`` -> ``params.features.0.weight``."""
    return _ident(re.sub(r"""\[['"]?(.*?)['"]?\]""", r".\1", path))


class ModuleText(str):
    """HLO module text that calls Python functions on the host: the text, and those
    functions (``(name, callable)`` pairs, in the order of the ``index`` its
    Python-callback custom calls give), which compiling it needs
    (``hlodsl.runtime.compile_hlo`` reads them here)."""

    __slots__ = ("host_callbacks",)


class PrintContext:
    """Collects sub-computations while an op prints its attributes, and the Python
    functions its host callbacks call."""

    def __init__(self, metadata: bool = True, manual_sharding: bool = False,
                 param_attributes: dict[int, str] | None = None,
                 aliases: tuple[tuple[int | None, int], ...] = (),
                 platform: str | None = None):
        #: The platform the module is printed for (the runtime's by default): ops whose
        #: text differs by platform ask (a host callback's custom-call target does).
        self.platform = platform
        self.host_callbacks: list[tuple[str, object]] = []
        self._callback_index: dict = {}
        self.metadata = metadata
        self.aliases = aliases  # (result index or None for the whole result, parameter)
        self.param_attributes = {} if param_attributes is None else param_attributes
        self.manual_sharding = manual_sharding
        self.blocks: list[str] = []  # printed sub-computations, dependencies first
        self._by_body: dict[tuple, str] = {}  # (required name, body text) -> name
        self._by_comp: dict[tuple, str] = {}
        self._used_names: set[str] = set()
        self.meshes: dict = {}  # hlodsl Mesh -> its name in xla.sdy.meshes

    def computation(self, comp: Computation, name: str | None = None) -> str:
        """The module-level name of ``comp``, printing it first if new. ``name``
        gives it a required name (a prefix, made unique)."""
        key = (id(comp), name)
        known = self._by_comp.get(key)
        if known is not None:
            return known
        body = self._body(comp)
        found = self._by_body.get((name, body))
        if found is None:
            found = self._fresh(name or _ident(comp.name))
            self._by_body[(name, body)] = found
            self.blocks.append(f"{found} {{\n{body}}}\n")
        self._by_comp[key] = found
        return found

    def target_platform(self) -> str:
        if self.platform is None:
            from hlodsl.runtime import platform

            self.platform = platform()
        return self.platform

    def host_callback(self, key, fn, name: str) -> int:
        """The index of the Python function ``fn`` among the module's host callbacks
        (one per ``key``: the op that calls it)."""
        index = self._callback_index.get(key)
        if index is None:
            index = self._callback_index[key] = len(self.host_callbacks)
            self.host_callbacks.append((name, fn))
        return index

    def mesh_name(self, mesh) -> str:
        """The name a sharding annotation uses for ``mesh`` (declared in the header)."""
        name = self.meshes.get(mesh)
        if name is None:
            name = self.meshes[mesh] = "mesh" if not self.meshes else f"mesh_{len(self.meshes)}"
        return name

    def _fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self._used_names:
            k += 1
            name = f"{base}.{k}"
        self._used_names.add(name)
        return name

    def _body(self, comp: Computation, entry: bool = False) -> str:
        names: dict[int, str] = {}
        extra = {id(p): self.param_attributes[i] for i, p in enumerate(comp.params)
                 if i in self.param_attributes} if entry else {}
        param_names = {id(p): n for p, n in zip(comp.params, comp.param_names)}
        lines = []
        for node in comp.nodes:
            path = param_names.get(id(node))
            if path is not None:
                name = param_ident(path)
                if name in names.values():
                    name = f"{name}.{node.id}"
            else:
                name = f"{node.op.opcode}.{node.id}"
            names[id(node)] = name
            operands = [names[id(o)] for o in node.operands]
            text = node.op.emit(operands, tuple(o.type for o in node.operands), node.type, self)
            root = "ROOT " if node is comp.root else ""
            meta = "" if not self.metadata else _metadata(node, f"{_ident(comp.name)}/{name}") \
                if path is None else _param_metadata(path, name)
            shard = _manual_sharding(node.type) if self.manual_sharding else \
                extra.get(id(node), "")
            # A custom call may declare its result's layouts (what its target writes).
            rtype = node.op.result_hlo(node.type) if hasattr(node.op, "result_hlo") \
                else node.type.hlo
            lines.append(f"  {root}{name} = {rtype} {text}{shard}{meta}\n")
        return "".join(lines)

    def entry(self, comp: Computation, name: str) -> str:
        body = self._body(comp, entry=True)
        header = f"HloModule {_ident(name)}"
        if self.meshes:  # Shardy's meshes, named by the annotations that use them
            from hlodsl.arrays.sharding import sdy_mesh

            meshes = ", ".join(f"{n} = {sdy_mesh(m)}" for m, n in self.meshes.items())
            header += f", frontend_attributes={{xla.sdy.meshes={{{meshes}}}}}"
        if self.aliases:  # donated parameters whose buffers results reuse (hd.compile donate_*)
            pairs = ", ".join(f"{{{'' if k is None else k}}}: ({p}, {{}}, may-alias)"
                              for k, p in self.aliases)
            header += f", input_output_alias={{ {pairs} }}"
        header += "\n\n"
        return header + "\n".join(self.blocks) + ("\n" if self.blocks else "") + \
            f"ENTRY {self._fresh(_ident(name))} {{\n{body}}}\n"


def _param_metadata(path: str, name: str) -> str:
    # The readable path, where the identifier had to change it (XLA keeps it in op_name).
    return "" if path == name else f', metadata={{op_name="{_quoted(path)}"}}'


def _quoted(text: str) -> str:
    return text.replace("\\", "/").replace('"', "'")


def _metadata(node, op_name: str) -> str:
    loc = node.loc
    if loc is None:
        return ""
    if loc.function.startswith("transpose("):
        # A derivative instruction (hlodsl.transforms.traces): the name stack
        # ``transpose(jvp(f))`` says so, at the forward line that caused it.
        comp, _, inst = op_name.rpartition("/")
        op_name = f"{comp}/{_quoted(loc.function)}/{inst}"
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
                manual_sharding: bool = False,
                param_attributes: dict[int, str] | None = None,
                aliases: tuple[tuple[int | None, int], ...] = (),
                platform: str | None = None) -> str:
    """The whole HLO module for ``entry`` as XLA's text format.

    ``manual_sharding`` marks every instruction ``sharding={manual}``: each SPMD
    partition runs the program on its own data, as code with explicit
    collectives across partitions expects. ``param_attributes`` appends text
    (a sharding annotation) to entry parameters by position. ``aliases`` pairs
    results with the parameters whose buffers they may reuse (``(result index, parameter)``,
    result index None for a result that is not a tuple): XLA's ``input_output_alias``,
    what buffer donation compiles to. ``platform`` is the one to print for (the
    runtime's by default). A module that calls Python functions comes back as a
    ``ModuleText``, which carries them.
    """
    ctx = PrintContext(metadata, manual_sharding, param_attributes, aliases, platform)
    text = ctx.entry(entry, name or entry.name)
    if not ctx.host_callbacks:
        return text
    text = ModuleText(text)
    text.host_callbacks = tuple(ctx.host_callbacks)
    return text
