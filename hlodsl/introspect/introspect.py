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

from hlodsl.arrays.array import array_class
from hlodsl.compilation.compiler import Compiled, _check_passes, _convert, any_sharded, build_entry
from hlodsl.compilation.compiler import compile as compile_fn
from hlodsl.ir.graph import Computation
from .hlo_text import parse_module, source_label
from hlodsl.ir.printer import module_text
from hlodsl.runtime import compile_hlo
from hlodsl.runtime.executables import METADATA as _METADATA
from hlodsl.settings import memory_size
from hlodsl.ir.staging import stage
from hlodsl.ir.target import platform_name, runtime_platform, staging_platform
from hlodsl.arrays.tree import abstract, flatten
from hlodsl.arrays.types import ArrayType

__all__ = ["code_typed", "code_hlo", "CodeText"]


class CodeText(str):
    """Program text that prints plainly and renders as rich HTML in Jupyter.

    Besides the text it knows the module it shows (with metadata, for the
    Python source lines), and for an optimised module the module as emitted
    and XLA's memory statistics: ``summary()`` is the cost of each source
    line, ``passes()`` the opcode counts before and after XLA's passes,
    ``graph()`` a picture of the module (``hlodsl.hlo_graph``).
    """

    _analysis: str | None = None   # the HLO module with metadata
    _before: str | None = None     # the module as emitted (of an optimised one)
    _memory: dict | None = None    # XLA's compiled memory statistics
    _typed: tuple | None = None    # code_typed: (rows, name, [(parameter, type)])
    _program: tuple | None = None  # code_typed: (computation, name), printed when asked
    _run: tuple | None = None      # code_hlo: (f, args, kwargs, passes, memory_limit)

    @classmethod
    def _make(cls, text: str, analysis: str | None = None, before: str | None = None,
              memory: dict | None = None, typed: tuple | None = None) -> CodeText:
        out = cls(text)
        out._analysis, out._before, out._memory, out._typed = analysis, before, memory, typed
        return out

    def __repr__(self) -> str:
        return str(self)

    def _module_text(self) -> str:
        if self._analysis is None and self._program is not None:
            self._analysis = module_text(*self._program, metadata=True)
        return self._analysis or str(self)

    @property
    def memory_stats(self) -> dict | None:
        """XLA's compiled memory statistics (bytes) of an optimised module, else None."""
        return None if self._memory is None else dict(self._memory)

    def summary(self, limit: int | None = 40):
        """Instructions, FLOPs and bytes per Python source line, the costliest first
        (a table: prints as text, renders as HTML)."""
        from .introspect_html import line_table

        return line_table(parse_module(self._module_text()), limit)

    def profile(self, runs: int = 20):
        """Measured time per Python source line and per instruction: the program run
        ``runs`` times under XLA's profiler (``hlodsl.profile``; ``code_hlo`` only)."""
        from .profiler import profile

        if self._run is None:
            raise ValueError("profile(): only the text of code_hlo(f, *args) knows the "
                             "program and its arguments; call hd.profile(f, *args) instead")
        f, args, kwargs, passes, memory_limit, platform = self._run
        if _foreign(platform, False, None, None) is not None:
            raise ValueError(f"profile(): the module was staged for {platform!r}, and this "
                             f"process runs XLA:{runtime_platform().upper()}")
        if passes is not None or memory_limit is not None:  # the program those passes make
            f = compile_fn(f.fn if isinstance(f, Compiled) else f, passes=passes,
                           memory_limit=memory_limit)
        return profile(f, *args, runs=runs, **kwargs)

    def passes(self):
        """Instructions by opcode before and after XLA's passes (``optimize=True`` only)."""
        from .introspect_html import passes_table

        if self._before is None:
            raise ValueError("passes(): only the text of code_hlo(..., optimize=True) knows "
                             "the module before XLA's passes")
        return passes_table(parse_module(self._before), parse_module(str(self)))

    def graph(self, computation: str | None = None, max_nodes: int = 200,
              expand_fusions: bool | None = None):
        """The module (or one named ``computation``) as a graph: SVG through Graphviz's
        ``dot`` where it is installed, else its DOT source (``hlodsl.hlo_graph``)."""
        from .hlo_graph import module_graph

        return module_graph(parse_module(self._module_text()), computation, max_nodes,
                            expand_fusions)

    def html(self, max_lines: int | None = None) -> str:
        """The rich HTML; at most ``max_lines`` instruction lines (a cap for big modules)."""
        from .introspect_html import MAX_LINES, hlo_html, typed_html

        limit = MAX_LINES if max_lines is None else max_lines
        if self._typed is not None:
            return typed_html(*self._typed, self._module_text(), limit)
        if "HloModule" not in self[:200]:
            return f"<pre>{html.escape(str(self))}</pre>"
        return hlo_html(str(self), self._analysis, self._before, self._memory, limit)

    def _repr_html_(self) -> str:
        return self.html()


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


def _typed(comp: Computation) -> tuple[list[str], list[tuple]]:
    names = {id(p): n for p, n in zip(comp.params, comp.param_names)}
    lines, rows = [], []
    k = 0
    for node in comp.nodes:
        if id(node) in names:
            continue
        k += 1
        names[id(node)] = f"%{k}"
        operands = ", ".join(names[id(o)] for o in node.operands)
        shown = _type_str(node.type)
        loc = node.loc
        where = f"  # {_where(loc)}" if loc else ""
        rows.append((names[id(node)], repr(node.op), operands, shown, loc))
        lines.append(f"  {names[id(node)]} = {node.op!r}({operands}) :: {shown}{where}")
    lines.append(f"  return {names[id(comp.root)]}")
    return lines, rows


def _where(loc) -> str:
    # Derivative instructions carry the name stack transpose(jvp(f)) (transforms.traces).
    return source_label(loc.file, loc.line, loc.function.count("transpose(jvp("))


def code_typed(f, *args, **kwargs) -> CodeText:
    """The staged program of ``f`` for these arguments, one op call per line.

    Parameters are named as the arguments were written, with their path in
    structured arguments (``params['layers'][0]['weight']``); each line ends
    with the Python line that made the call (``In [12], line 3`` in Jupyter,
    ``grad of model.py:41`` for the derivative of that line's op calls).
    """
    staged, name = _staged(f, args, kwargs, "code_typed")
    comp = staged.computation
    params = ", ".join(f"{n}: {_type_str(p.type)}"
                       for p, n in zip(comp.params, comp.param_names))
    body, rows = _typed(comp)
    listed = [(n, _type_str(p.type)) for p, n in zip(comp.params, comp.param_names)]
    out = CodeText._make("\n".join([f"function {name}({params})", *body]),
                         typed=(rows, name, listed))
    out._program = (comp, name)  # the module is printed only if a table or the HTML needs it
    return out


def _hlo(text: str, analysis: str | None = None, exe=None) -> CodeText:
    """The text of a module; of an optimised one (``exe``), with the emitted module and
    XLA's memory statistics."""
    if exe is None:
        return CodeText._make(text, analysis=analysis)
    try:
        memory = exe.memory_stats()
    except (RuntimeError, AttributeError, NotImplementedError):  # a backend without them
        memory = None
    return CodeText._make(text, before=exe.text, memory=memory)


def code_hlo(f, *args, optimize: bool = False, metadata: bool = False, passes=None,
             memory_limit=None, platform: str | None = None, **kwargs) -> CodeText:
    """The HLO module text of ``f`` for these arguments.

    ``optimize=False`` gives the module as hlodsl emits it (metadata with source
    lines included when ``metadata=True``); ``optimize=True`` compiles it and gives
    the module after XLA's HLO passes. For an ``hd.compile``d function that is
    the executable of its cache entry for these arguments: compiled once, and
    the one its calls run. ``passes`` and ``memory_limit`` (as ``hd.compile``
    takes them; a compiled function's own by default) show the module after
    hlodsl's passes over the staged program. ``.profile(runs=N)`` on the result
    runs the program under XLA's profiler (``hlodsl.profile``).

    ``platform`` (``"cpu"`` or ``"gpu"``; default: the runtime's) stages for that
    platform (``hlodsl.ir.target``): on a machine without a GPU,
    ``platform="gpu"`` shows the module hlodsl would compile on one, with its
    cuSOLVER and cuDNN custom calls. Only the module as emitted: ``optimize``,
    ``passes``, ``memory_limit`` and ``.profile()`` need that platform's XLA. (A
    keyword argument of ``f`` named ``platform`` cannot be passed through here.)

    >>> import numpy as np, hlodsl as hd
    >>> from hlodsl.stdlib import linalg
    >>> text = hd.code_hlo(linalg.cholesky, hd.ArrayType(hd.float32, (4, 4)), platform="gpu")
    >>> "cusolver_potrf_ffi" in text, "lapack" in text
    (True, False)
    """
    out = _code_hlo(f, *args, optimize=optimize, metadata=metadata, passes=passes,
                    memory_limit=memory_limit, platform=platform, **kwargs)
    out._run = (f, args, kwargs, passes, memory_limit, platform)
    return out


def _foreign(platform, optimize: bool, passes, memory_limit) -> str | None:
    """The platform to stage for when it is not the runtime's (else None), checking
    that nothing asked for needs that platform's XLA."""
    if platform is None:
        return None
    target = platform_name(platform, "code_hlo: platform")
    live = runtime_platform()
    if target == live:
        return None
    for name, given in (("optimize=True", optimize),
                        ("passes (a compiled function's own too)", passes is not None),
                        ("memory_limit", memory_limit is not None)):
        if given:
            raise ValueError(f"code_hlo: {name} compiles with the platform's XLA, and this "
                             f"process runs XLA:{live.upper()}, not {target!r}; leave it out "
                             f"to see the module hlodsl emits for {target!r}")
    return target


def _code_hlo(f, *args, optimize: bool = False, metadata: bool = False, passes=None,
              memory_limit=None, platform=None, **kwargs) -> CodeText:
    for flag, value in (("optimize", optimize), ("metadata", metadata)):
        if not isinstance(value, bool):
            raise TypeError(f"code_hlo: {flag} must be True or False (a bool), got {value!r} "
                            f"({type(value).__name__})")
    args, kwargs = abstract(args), abstract(kwargs)
    own = isinstance(f, Compiled) and (f.passes is not None or f.memory_limit is not None)
    target = _foreign(platform, optimize, passes if passes is not None or not own else "own",
                      memory_limit)
    if target is not None:  # staged fresh: compiled entries are the runtime platform's
        with staging_platform(target):
            staged, name = _staged(f, args, kwargs, "code_hlo")
        return _hlo(module_text(staged.computation, name, metadata=metadata),
                    module_text(staged.computation, name))
    if not isinstance(f, Compiled) and passes is None and memory_limit is None and \
            any_sharded(flatten((args, kwargs))[0]):
        f = compile_fn(f)  # sharded arguments: the program partitioned over their mesh
    if isinstance(f, Compiled) and passes is None and memory_limit is None:
        if optimize:
            exe = f.entry(*args, **kwargs).exe
            return _hlo(exe.optimized_hlo(), exe=exe)
        if f.sharded or any_sharded(flatten((args, kwargs))[0]):
            entry = f.entry(*args, **kwargs)  # the annotated program XLA partitions
            return _hlo(entry.text if metadata else _METADATA.sub("", entry.text), entry.text)
        if f.donates:  # the module with its input_output_alias header, as compiled
            text = f.entry(*args, **kwargs).exe.text
            return _hlo(text if metadata else _METADATA.sub("", text), text)
        if f.passes is not None or f.memory_limit is not None:
            entry = f.entry(*args, **kwargs)  # the rewritten program its calls run
            return _hlo(module_text(entry.staged.computation, f.name, metadata=metadata),
                        module_text(entry.staged.computation, f.name))
    staged, name = _staged(f, args, kwargs, "code_hlo")
    if passes is not None or memory_limit is not None:
        limit = None if memory_limit is None else memory_size(memory_limit, "code_hlo: memory_limit")
        entry = build_entry(staged, name, _check_passes(passes, name), limit)
        if optimize:
            return _hlo(entry.exe.optimized_hlo(), exe=entry.exe)
        staged = entry.staged
    text = module_text(staged.computation, name)
    if not optimize:
        return _hlo(module_text(staged.computation, name, metadata=metadata), text)
    if "xla.sdy." in text or any_sharded(flatten((args, kwargs))[0]):
        return code_hlo(compile_fn(f), *args, optimize=True, **kwargs)  # partitioned
    exe = compile_hlo(text)
    return _hlo(exe.optimized_hlo(), exe=exe)
