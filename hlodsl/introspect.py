"""``code_typed`` and ``code_hlo``: look at what a function stages into.

``code_typed(f, *args)`` is the paper's ``@code_typed_xla``: the staged
program, one op call per line with its static operands, operands and inferred
result type. ``code_hlo(f, *args)`` is ``@code_xla``: the HLO module as emitted,
or with ``optimize=True`` as XLA's passes leave it. Both print cleanly in a
terminal and render as HTML in Jupyter.

>>> import numpy as np, hlodsl as hd
>>> x = hd.array(np.ones(3, np.float32))
>>> print(hd.code_typed(lambda x: x * x, x))
function <lambda>(x: Array[float32, (3,)])
  %1 = Multiply()(x, x) :: Array[float32, (3,)]  # ...
  return %1
"""

from __future__ import annotations

import html
import re

from .array import array_class
from .compiler import Compiled, _check_passes, _convert, any_sharded, build_entry
from .compiler import compile as compile_fn
from .graph import Computation
from .printer import module_text
from .runtime import _METADATA, compile_hlo
from .settings import memory_size
from .staging import stage
from .tree import flatten
from .types import ArrayType

__all__ = ["code_typed", "code_hlo", "CodeText"]


class CodeText(str):
    """Program text that prints plainly and renders highlighted in Jupyter."""

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        text = html.escape(str(self))
        text = re.sub(r"(ROOT|ENTRY|HloModule|return|function)",
                      r'<b style="color:#7a3e9d">\1</b>', text)
        text = re.sub(r"\b((?:pred|[suf]\d+|bf16|c64|c128)\[[\d,]*\](?:\{[\d,]*\})?)",
                      r'<span style="color:#2a7a2a">\1</span>', text)
        text = re.sub(r"(::\s*Array\[[^\]]*\]\))", r'<span style="color:#2a7a2a">\1</span>', text)
        return ('<pre style="font-size:12px;line-height:1.3;background:#f7f7f7;'
                f'padding:8px">{text}</pre>')


def _staged(f, args, kwargs, caller: str):
    if not callable(f):
        shown = repr(f) if len(repr(f)) <= 40 else repr(f)[:37] + "..."
        raise TypeError(f"{caller}: f must be a callable (the function to stage), got "
                        f"{type(f).__name__} {shown}; call it as {caller}(f, *args)")
    # What hd.compile would run: Python control flow on arrays converted, so that
    # introspection shows the program compile runs (and works where compile does).
    fn = f.staged_fn if isinstance(f, Compiled) else _convert(f)
    name = f.name if isinstance(f, Compiled) else getattr(f, "__name__", "f")
    return stage(fn, args, kwargs, name), name


def _type_str(t) -> str:
    # The short class name (``Array[float32, (3,)]``): lines stay readable.
    return array_class(t).__qualname__ if isinstance(t, ArrayType) else str(t)


def _typed(comp: Computation) -> list[str]:
    names = {id(p): n for p, n in zip(comp.params, comp.param_names)}
    lines = []
    k = 0
    for node in comp.nodes:
        if id(node) in names:
            continue
        k += 1
        names[id(node)] = f"%{k}"
        operands = ", ".join(names[id(o)] for o in node.operands)
        shown = _type_str(node.type)
        where = f"  # {node.loc.file.rsplit('/', 1)[-1]}:{node.loc.line}" if node.loc else ""
        lines.append(f"  {names[id(node)]} = {node.op!r}({operands}) :: {shown}{where}")
    lines.append(f"  return {names[id(comp.root)]}")
    return lines


def code_typed(f, *args, **kwargs) -> CodeText:
    """The staged program of ``f`` for these arguments, one op call per line."""
    staged, name = _staged(f, args, kwargs, "code_typed")
    comp = staged.computation
    params = ", ".join(f"{n}: {_type_str(p.type)}"
                       for p, n in zip(comp.params, comp.param_names))
    lines = [f"function {name}({params})", *_typed(comp)]
    return CodeText("\n".join(lines))


def code_hlo(f, *args, optimize: bool = False, metadata: bool = False, passes=None,
             memory_limit=None, **kwargs) -> CodeText:
    """The HLO module text of ``f`` for these arguments.

    ``optimize=False`` gives the module as hlodsl emits it (metadata with source
    lines included when ``metadata=True``); ``optimize=True`` compiles it and gives
    the module after XLA's HLO passes. For an ``hd.compile``d function that is
    the executable of its cache entry for these arguments: compiled once, and
    the one its calls run. ``passes`` and ``memory_limit`` (as ``hd.compile``
    takes them; a compiled function's own by default) show the module after
    hlodsl's passes over the staged program.
    """
    for flag, value in (("optimize", optimize), ("metadata", metadata)):
        if not isinstance(value, bool):
            raise TypeError(f"code_hlo: {flag} must be True or False (a bool), got {value!r} "
                            f"({type(value).__name__})")
    if not isinstance(f, Compiled) and passes is None and memory_limit is None and \
            any_sharded(flatten((args, kwargs))[0]):
        f = compile_fn(f)  # sharded arguments: the program partitioned over their mesh
    if isinstance(f, Compiled) and passes is None and memory_limit is None:
        if optimize:
            return CodeText(f.entry(*args, **kwargs).exe.optimized_hlo())
        if f.sharded or any_sharded(flatten((args, kwargs))[0]):
            entry = f.entry(*args, **kwargs)  # the annotated program XLA partitions
            return CodeText(entry.text if metadata else _METADATA.sub("", entry.text))
        if f.passes is not None or f.memory_limit is not None:
            entry = f.entry(*args, **kwargs)  # the rewritten program its calls run
            return CodeText(module_text(entry.staged.computation, f.name, metadata=metadata))
    staged, name = _staged(f, args, kwargs, "code_hlo")
    if passes is not None or memory_limit is not None:
        limit = None if memory_limit is None else memory_size(memory_limit, "code_hlo: memory_limit")
        entry = build_entry(staged, name, _check_passes(passes, name), limit)
        if optimize:
            return CodeText(entry.exe.optimized_hlo())
        staged = entry.staged
    if not optimize:
        return CodeText(module_text(staged.computation, name, metadata=metadata))
    text = module_text(staged.computation, name)
    if "xla.sdy." in text or any_sharded(flatten((args, kwargs))[0]):
        return code_hlo(compile_fn(f), *args, optimize=True, **kwargs)  # partitioned
    exe = compile_hlo(text)
    return CodeText(exe.optimized_hlo())
