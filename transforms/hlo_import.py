"""``import_hlo``: an HLO module (or StableHLO, or a jax stage) as an hlodsl function.

The module text is read by the one HLO reader hlodsl has (``hlodsl.hlo_text``);
each instruction becomes a call of the registered op for its opcode, with the
static operands read from its attributes (``hlodsl.transforms.hlo_readers``).
Calling the imported function therefore *stages* those ops: under
``hd.compile`` they are inlined into the caller's module, ``hd.grad`` and
``hd.vmap`` use each op's own rules, and the pass pipeline (``memory_limit``)
sees every instruction. Computations that while, conditional, reduce, sort,
scatter, map, call, ... apply become Python functions that do the same for
their instructions. Each instruction is applied at the source line its
producer recorded in the metadata (``source_file``/``source_line``, or jax's
stack frames), so ``code_hlo`` and ``code_typed`` of the imported program
point at the producer's code.

StableHLO/MLIR text or bytecode and jax ``Lowered``/``Compiled`` stages are
converted to HLO text by jaxlib first (``hlodsl.runtime``).

>>> import numpy as np, hlodsl as hd
>>> f = hd.import_hlo('''HloModule m
... ENTRY m {
...   x = f32[3] parameter(0)
...   ROOT y = f32[3] multiply(x, x)
... }''')
>>> f
import_hlo(m: (f32[3]) -> f32[3])
>>> f(hd.array(np.float32([1, 2, 3])))
hlodsl.Array[float32, (3,)]([1., 4., 9.])
>>> hd.grad(lambda x: hd.stdlib.sum(f(x)))(hd.array(np.float32([1, 2, 3])))
hlodsl.Array[float32, (3,)]([2., 4., 6.])
"""

from __future__ import annotations

import inspect
import keyword
import re
from typing import Any

import numpy as np

from hlodsl import runtime
from hlodsl.compilation.compiler import compile as _compile
from hlodsl.context import STATE
from hlodsl.errors import HloDslError, SourceLocation
from hlodsl.interchange.exported import MAGIC, Exported, deserialize
from hlodsl.introspect.hlo_text import HloComputation, HloModule, Instruction, parse_module, read_type
from hlodsl.ir.staging import stage_types
from hlodsl.arrays.array import array
from hlodsl.arrays.tree import flat_treedef, is_jax_array
from hlodsl.arrays.types import ArrayType, TupleType

from .hlo_readers import Reading, UnsupportedInstruction, read_op

__all__ = ["HloImportError", "ImportedFunction", "import_hlo"]


class HloImportError(HloDslError, ValueError):
    """The program cannot be imported: malformed text, or an instruction hlodsl cannot run."""


_FRAME_TABLE = re.compile(r"^(FileNames|FunctionNames|FileLocations|StackFrames)\s*$")
_SOURCE = re.compile(r'source_file="([^"]*)" source_line=(\d+)')
_FRAME_ID = re.compile(r"stack_frame_id=(\d+)")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')


def _stack_frames(text: str) -> dict[int, SourceLocation]:
    """jax's stack-frame tables (``FileNames`` ... ``StackFrames``): frame id -> its line."""
    tables: dict[str, dict[int, str]] = {}
    current = None
    for line in text.splitlines():
        m = _FRAME_TABLE.match(line)
        if m:
            current = tables.setdefault(m[1], {})
        elif current is not None and line.strip() and line.split()[0].isdigit():
            key, _, rest = line.strip().partition(" ")
            current[int(key)] = rest.strip()
        elif not line.strip():
            current = None
    files, functions = tables.get("FileNames", {}), tables.get("FunctionNames", {})
    locations = {}
    for k, rest in tables.get("FileLocations", {}).items():
        f = re.search(r"file_name_id=(\d+)", rest)
        fn = re.search(r"function_name_id=(\d+)", rest)
        line = re.search(r"\bline=(\d+)", rest)
        if f and line:
            locations[k] = SourceLocation(files.get(int(f[1]), "?").strip('"'), int(line[1]),
                                          functions.get(int(fn[1]), "?").strip('"') if fn else "?")
    out = {}
    for k, rest in tables.get("StackFrames", {}).items():
        loc = re.search(r"file_location_id=(\d+)", rest)
        if loc and int(loc[1]) in locations:
            out[k] = locations[int(loc[1])]
    return out


def _text_of(program: Any) -> str:
    """HLO text for any form ``import_hlo`` takes."""
    if isinstance(program, Exported):
        return program.hlo_text()
    if isinstance(program, (bytes, bytearray)):
        if bytes(program[:len(MAGIC)]) == MAGIC:  # hd.export's bytes: checked, then read
            return deserialize(bytes(program)).hlo_text()
        return runtime.stablehlo_text(bytes(program))
    if isinstance(program, str):
        stripped = program.lstrip()
        if stripped.startswith("HloModule"):
            return program
        if stripped.startswith(("module", "func.func", "#loc", "\"builtin.module\"")) or \
                "stablehlo." in program or "func.func" in program:
            return runtime.stablehlo_text(program)
        raise HloImportError("import_hlo: the text is neither an HLO module (it would start "
                             f"with 'HloModule') nor MLIR; it starts {stripped[:60]!r}")
    if hasattr(program, "compiler_ir") or hasattr(program, "as_text"):
        return runtime.jax_stage_text(program)
    raise HloImportError(f"import_hlo takes HLO text, StableHLO/MLIR text or bytecode, a "
                         f"jax Lowered/Compiled stage, or an hd.export artifact (Exported or "
                         f"its bytes), not {type(program).__name__}")


def _type_of(value):
    if isinstance(value, (tuple, list)):
        return TupleType(tuple(_type_of(v) for v in value))
    return getattr(value, "type", None)


class _Computation:
    """One computation of the module as a Python function of arrays (and tuples of them).

    Ops take these as their computation operands (a while's body, a reduction);
    one object per computation, so ops that apply the same one compare equal.
    """

    def __init__(self, owner: ImportedFunction, comp: HloComputation):
        self.owner, self.comp = owner, comp
        self.__name__ = self.__qualname__ = re.sub(r"[^\w]", "_", comp.name)
        self.params = sorted((i for i in comp.instructions if i.opcode == "parameter"),
                             key=lambda i: int(i.operands[0]))
        self.types = tuple(read_type(i.type) for i in self.params)

    def __call__(self, *args):
        return self.owner._evaluate(self.comp, args)

    def __repr__(self) -> str:
        return f"<imported computation {self.comp.name}>"


def _signature(params: list[Instruction]) -> inspect.Signature:
    """Positional parameters named as the producer named them (jax: the argument names
    in ``op_name``), else after the parameter instructions; made unique."""
    names: list[str] = []
    for p in params:
        m = _OP_NAME.search(p.attributes)
        name = m[1] if m and m[1].isidentifier() else re.sub(r"\.\d+$", "", p.name)
        name = re.sub(r"\W", "_", name)
        name = name if name.isidentifier() and not keyword.iskeyword(name) else f"p{len(names)}"
        while name in names:
            name += "_"
        names.append(name)
    return inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY)
                              for n in names])


class ImportedFunction:
    """An imported HLO module: call it on arrays of its parameter types.

    ``parameter_types`` and ``result_type`` give its signature; ``text`` the
    HLO text it was read from. Calling it stages its instructions as hlodsl
    ops (inlined into whatever is being staged); called on concrete arrays
    outside staging, it runs as one compiled module (cached per signature).
    """

    def __init__(self, text: str, name: str | None = None):
        self.text = text
        self.module: HloModule = parse_module(text)
        self._frames = _stack_frames(text)
        self._by_name = self.module.by_name()
        self._functions: dict[str, _Computation] = {}
        self.__name__ = self.__qualname__ = name or re.sub(r"[^\w]", "_", self.module.name)
        entry = self._function(self.module.entry.name)
        self.parameter_types = entry.types
        root = next((i for i in self.module.entry.instructions if i.root),
                    self.module.entry.instructions[-1])
        self.result_type = read_type(root.type)
        self.__signature__ = _signature(entry.params)
        self._compiled = None
        # Every instruction is read once up front, so an unsupported one is reported
        # now, with its line, not in the middle of staging a caller.
        self._ops: dict[tuple[str, str], Any] = {}
        self._types: dict[str, dict] = {}
        for comp in self.module.computations:
            self._read_computation(comp)
        # Staging it once checks every declared type against the ops' shape rules now.
        if all(isinstance(t, ArrayType) for t in self.parameter_types):
            stage_types(self, flat_treedef(len(self.parameter_types)), self.parameter_types,
                        self.__name__)

    # -- reading ---------------------------------------------------------------

    def _function(self, name: str) -> _Computation:
        fn = self._functions.get(name)
        if fn is None:
            comp = self._by_name.get(name)
            if comp is None:
                raise HloImportError(f"import_hlo: the module has no computation {name!r}")
            fn = self._functions[name] = _Computation(self, comp)
        return fn

    def _read_computation(self, comp: HloComputation) -> None:
        types = self._types[comp.name] = {i.name: read_type(i.type) for i in comp.instructions}
        for inst in comp.instructions:
            try:
                operand_types = tuple(types[o] for o in inst.operands) \
                    if inst.opcode not in ("parameter", "constant") else ()
                reading = Reading(inst, operand_types, types[inst.name], self._function,
                                  comp, self._by_name)
                self._ops[(comp.name, inst.name)] = read_op(reading)
            except UnsupportedInstruction as e:
                raise HloImportError(f"import_hlo: line {inst.line}: cannot import "
                                     f"{inst.opcode!r}: {e}\n  {inst.code()}") from None
            except (TypeError, ValueError, KeyError) as e:
                raise HloImportError(f"import_hlo: line {inst.line}: cannot read "
                                     f"{inst.opcode!r} ({type(e).__name__}: {e})\n  "
                                     f"{inst.code()}") from None

    def _location(self, inst: Instruction) -> SourceLocation | None:
        name = _OP_NAME.search(inst.attributes)
        function = name[1] if name else inst.name
        m = _SOURCE.search(inst.attributes)
        if m:
            return SourceLocation(m[1], int(m[2]), function)
        m = _FRAME_ID.search(inst.attributes)
        if m and int(m[1]) in self._frames:
            return self._frames[int(m[1])]._replace(function=function)
        return None

    # -- running -----------------------------------------------------------------

    def _evaluate(self, comp: HloComputation, args: tuple):
        fn = self._functions[comp.name]
        if len(args) != len(fn.params):
            raise TypeError(f"{comp.name} takes {len(fn.params)} argument(s), got {len(args)}")
        env: dict[str, Any] = {p.name: a for p, a in zip(fn.params, args)}
        root = None
        for inst in comp.instructions:
            if inst.opcode != "parameter":
                apply = self._ops[(comp.name, inst.name)]
                previous = STATE.location
                STATE.location = self._location(inst) or previous
                try:
                    value = apply([] if inst.opcode == "constant"
                                  else [env[o] for o in inst.operands])
                finally:
                    STATE.location = previous
                self._check_result(comp, inst, value)
                env[inst.name] = value
            if inst.root:
                root = inst
        return env[(root or comp.instructions[-1]).name]

    def _check_result(self, comp: HloComputation, inst: Instruction, value) -> None:
        """The op's shape rule must give the type the text declares: a module whose
        declared types are wrong is refused, never run with other types."""
        declared = self._types[comp.name][inst.name]
        got = _type_of(value)
        if got != declared:
            raise HloImportError(f"import_hlo: line {inst.line}: the text declares {declared} "
                                 f"but {inst.opcode} of its operands gives {got}\n  "
                                 f"{inst.code()}")

    def _check(self, args: tuple) -> None:
        if len(args) != len(self.parameter_types):
            raise TypeError(f"{self!r} takes {len(self.parameter_types)} argument(s), "
                            f"got {len(args)}")
        for i, (a, t) in enumerate(zip(args, self.parameter_types)):
            got = TupleType(tuple(x.type for x in a)) if isinstance(a, (tuple, list)) \
                else getattr(a, "type", None)
            if got != t:
                raise TypeError(f"{self!r}: argument {i} must be {t}, got "
                                f"{got if got is not None else type(a).__name__}")

    def __call__(self, *args):
        args = tuple(_as_array(a, t) for a, t in zip(args, self.parameter_types)) \
            + args[len(self.parameter_types):]
        self._check(args)
        if not STATE.builders and not STATE.traces:
            # Outside staging: one compiled module, not one eager module per instruction.
            if self._compiled is None:
                self._compiled = _compile(self, name=self.__name__)
            return self._compiled(*args)
        return self._evaluate(self.module.entry, args)

    def __repr__(self) -> str:
        params = ", ".join(str(t) for t in self.parameter_types)
        return f"import_hlo({self.__name__}: ({params}) -> {self.result_type})"


#: The numpy kinds a Python number of each type may stand for (as compiled and exported
#: functions take them).
_KINDS = {bool: "b", int: "biuf", float: "f", complex: "c"}


def _as_array(x, t):
    """An argument as compiled functions take it: a numpy array or scalar, or a jax
    array, as an hlodsl array (of its own element type: ``_check`` then says if it is not
    the parameter's); a Python number as an array of parameter type ``t`` if of its kind;
    tuples for tuple parameters element by element; anything else as it is."""
    if isinstance(t, TupleType) and type(x) in (tuple, list) and len(x) == len(t.elements):
        return type(x)(_as_array(v, u) for v, u in zip(x, t.elements))
    if isinstance(x, (np.ndarray, np.generic)) or is_jax_array(x):
        return array(x)
    if type(x) in _KINDS and isinstance(t, ArrayType) and \
            t.dtype.np_dtype.kind in _KINDS[type(x)]:
        return array(np.asarray(x, t.dtype.np_dtype))
    return x


def import_hlo(program: Any, name: str | None = None) -> ImportedFunction:
    """An hlodsl function that computes what ``program`` computes.

    Args:
        program: HLO module text (as ``hd.code_hlo`` or XLA prints it),
            StableHLO/MLIR text or bytecode, a jax ``Lowered``/``Compiled`` stage,
            or an ``hd.export`` artifact (an ``Exported`` or its serialized bytes).
        name: the function's name (default: the module's).

    Returns:
        An ``ImportedFunction``: its parameters are the entry computation's
        (``f(*arrays)``), its result the root's (a tuple root gives a tuple).

    Raises:
        HloImportError: for malformed text (XLA's parser says where), or an
            instruction hlodsl cannot import (named with its line).

    >>> import numpy as np, hlodsl as hd
    >>> text = hd.code_hlo(lambda x: x * 2, hd.array(np.float32([1, 2])))
    >>> hd.import_hlo(text)(hd.array(np.float32([3, 4])))
    hlodsl.Array[float32, (2,)]([6., 8.])
    """
    text = _text_of(program)
    try:
        runtime.check_hlo_text(text)
    except ValueError as e:
        raise HloImportError(f"import_hlo: XLA's parser rejects the module: {e}") from None
    return ImportedFunction(text, name)
