"""``hlodsl.compile``: stage a function once per signature into one XLA executable.

A signature is the structure of the arguments, the type (element type and
shape) of every array in it, and the value of every non-array argument. The
first call with a signature stages the function, prints one HLO module,
compiles it and caches the executable; later calls with that signature only
look the entry up and run it.

>>> import numpy as np, hlodsl as hd
>>> f = hd.compile(lambda x, y: x * y + x)
>>> f(hd.array(np.float32(3)), hd.array(np.float32(4)))
hlodsl.Array[float32, ()](15.)
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings

from .bindings import bindings, moved
from hlodsl.cache import BoundedCache
from .call import CallTable, Entry, any_sharded, forget, run_entry, use_sharding
from .call import _SHARDED
from hlodsl.errors import DonationWarning, RecompileWarning, StaticArgumentWarning
from hlodsl.settings import config, memory_size
from .signature import describe
from hlodsl.arrays.scalars import lift_arguments, static_positions
from hlodsl.ir.staging import Staged, stage
from hlodsl.ir.target import live_platform
from hlodsl.arrays.tree import flatten, flatten_traced

__all__ = ["compile", "Compiled", "use_conversion", "use_pipeline", "use_sharding", "Entry",
           "run_entry", "any_sharded", "build_entry"]

# The step that converts a function's Python control flow on arrays before it is
# staged (hlodsl.transforms.flow.convert). The transformations layer hands it in
# when it is imported: the core does not import the layers above it.
_CONVERSION: list = []


def use_conversion(step) -> None:
    """Make ``step(fn) -> fn`` what ``compile(convert=True)`` applies before staging."""
    _CONVERSION[:] = [step]


def _convert(fn):
    return _CONVERSION[0](fn) if _CONVERSION else fn


# What runs passes over a staged program before it is compiled
# (hlodsl.transforms.passes), handed in by the transformations layer as well.
_PIPELINE: list = []


def use_pipeline(runner) -> None:
    """Make ``runner(staged, passes, memory_limit, build) -> Entry`` what compiles a
    signature when ``compile`` is given ``passes`` or a ``memory_limit``.

    ``build(staged)`` prints and compiles a (rewritten) staged program into an
    ``Entry``; the runner returns the entry it settles on, its ``reports`` set.
    """
    _PIPELINE[:] = [runner]


def build_entry(staged: Staged, name: str, passes=None, memory_limit: int | str | None = None,
                donated: tuple[int, ...] = ()):
    """The cache entry of ``staged``: compiled as it is, or through the pass pipeline;
    ``donated`` leaves may give their buffers to results (``Entry.build``).
    ``memory_limit="auto"`` is measured now (``hlodsl.settings.memory_size``)."""
    if memory_limit == "auto":
        memory_limit = memory_size("auto", f"compile({name}): memory_limit")
    if passes is None and memory_limit is None:
        return Entry.build(staged, name, donated)
    if not _PIPELINE:
        raise RuntimeError("passes over staged programs need hlodsl.transforms (import hlodsl)")
    return _PIPELINE[0](staged, passes, memory_limit, lambda s: Entry.build(s, name, donated))


class Compiled(CallTable):
    """A function staged and compiled per signature; call it like the function.

    At most ``cache_size`` signatures (default ``hlodsl.config.compile_cache_size``)
    stay compiled; the least recently used one is dropped, and its executable
    freed, past that. Compiling more than ``hlodsl.config.recompile_warning``
    signatures warns (``RecompileWarning``), naming the argument that changed.
    ``passes`` and ``memory_limit`` rewrite each staged program before XLA
    compiles it (``hlodsl.transforms.passes``; docs/memory.md). A call runs in
    ``hlodsl.call`` (``CallTable``); this class stages and compiles signatures.
    """

    def __init__(self, fn, name: str | None = None, convert: bool = True,
                 cache_size: int | None = None, memory_limit=None, passes=None,
                 in_shardings=None, out_shardings=None, static_argnums=None,
                 static_argnames=None, donate_argnums=None, donate_argnames=None):
        _check_arguments(fn, cache_size)
        fn_name = getattr(fn, "__name__", "fn")
        self._static = static_positions(fn, fn_name, static_argnums, static_argnames)
        self._donate = _donated_positions(fn, fn_name, donate_argnums, donate_argnames,
                                          self._static)
        self.in_shardings, self.out_shardings = in_shardings, out_shardings
        self.sharded = in_shardings is not None or out_shardings is not None
        if self.sharded and (memory_limit is not None or passes is not None):
            raise ValueError("compile: shardings and memory_limit/passes cannot be combined "
                             "yet (the passes do not keep sharding annotations)")
        if self.sharded and self.donates:
            raise ValueError(f"compile({fn_name}): donate_argnums/donate_argnames and "
                             "in_shardings/out_shardings cannot be combined yet (partitioned "
                             "programs do not alias their arguments)")
        # "auto" stays "auto": measured when each signature compiles (build_entry).
        self.memory_limit = None if memory_limit is None else "auto" \
            if isinstance(memory_limit, str) and memory_limit.strip().lower() == "auto" \
            else memory_size(memory_limit)
        self.passes = _check_passes(passes, fn_name)
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "compiled")
        self.convert = convert
        self._staged_fn = None
        functools.update_wrapper(self, fn, updated=())
        # The plans of calls (hlodsl.compilation.call): top-level argument classes -> a cell of
        # ``_entries`` or a Layout. An evicted signature leaves them too.
        plans: dict = {}
        self._plans = plans
        size = (lambda: config.compile_cache_size) if cache_size is None else cache_size
        self._entries = BoundedCache(size, f"signatures of {self.name}",
                                     on_evict=lambda key, entry: forget(plans, entry))
        self._lock = threading.Lock()  # one thread compiles a signature, the others wait
        self.compiles = 0  # signatures compiled so far, evicted ones included
        self._warn_at = config.recompile_warning
        self._warned_statics: set[str] = set()  # arguments warned of (StaticArgumentWarning)
        # The global and closure variables through which staging reached a watched value
        # (an optimiser: hlodsl.compilation.bindings); rebinding one drops the signatures staged with
        # the old value. Empty for most functions: the call path reads one attribute.
        self._bindings: tuple = ()

    @property
    def donates(self) -> bool:
        """Whether some arguments are donated (``donate_argnums`` / ``donate_argnames``)."""
        return bool(self._donate[0] or self._donate[1])

    def _general(self, args, kwargs) -> tuple[list, tuple, list]:
        """``(leaves, signature, cell)`` of a call: flattened as a whole, looked up by
        its whole signature, staged and compiled if new (``CallTable.__call__``)."""
        leaves, key = self._signature(args, kwargs)
        cell = self._entries.slot(key)
        if cell is not None:
            cell[1] = True
            return leaves, key, cell
        args, kwargs = lift_arguments(args, kwargs, *self._static)
        entry = self._compile_entry(key, args, kwargs, leaves)
        return leaves, key, self._entries.slot(key) or [entry, True]

    def _static_values(self, args, kwargs) -> frozenset:
        """Positions in ``(*args, *kwargs.values())`` of the static arguments."""
        pos, names = self._static
        if not pos and not names:
            return frozenset()
        return frozenset([i for i in pos if i < len(args)] +
                         [len(args) + k for k, n in enumerate(kwargs) if n in names])

    def _signature(self, args, kwargs) -> tuple[list, tuple]:
        """``(leaves, cache key)`` of a call: the structure and the leaves' classes."""
        if self._static[0] or self._static[1]:
            args, kwargs = lift_arguments(args, kwargs, *self._static)
            leaves, treedef = flatten((args, kwargs))
        else:  # Python numbers become traced leaves as it flattens
            leaves, treedef = flatten_traced((args, kwargs))
        return leaves, (treedef, tuple(map(type, leaves)))

    def _compile_entry(self, key, args, kwargs, leaves) -> Entry:
        with self._lock:
            entry = self._entries.get(key)  # another thread may have compiled it meanwhile
            if entry is not None:
                return entry
            by_identity: list = []
            described = describe(self.fn, args, kwargs, by_identity)
            found = bindings(self.fn)
            entry = self._compile(args, kwargs)
            self._bindings = found  # every signature staged so far read these same values
            entry.described = described
            self._note_recompile(described)
            self._note_identity_statics(by_identity)
            self._note_unused_donations(entry)
            self._entries.put(key, entry)
            self.compiles += 1
        return entry

    def _donated_leaves(self, args, kwargs) -> tuple[int, ...]:
        """The leaf indices of the donated arguments of this (lifted) call."""
        pos, names = self._donate
        if not pos and not names:
            return ()
        donated: list[int] = []
        n = 0
        for where, value, given in [(f"argument {i}", a, i in pos) for i, a in enumerate(args)] \
                + [(f"argument {k!r}", v, k in names) for k, v in kwargs.items()]:
            count = len(flatten(value)[0])
            if given and not count:
                raise TypeError(f"{self.name}: donate_argnums/donate_argnames name {where}, "
                                f"which holds no array ({_short(value)}): only arrays can be "
                                "donated")
            if given:
                donated += range(n, n + count)
            n += count
        passed = set(range(len(args))) | {self._position_of(k) for k in kwargs}
        missing = sorted(i for i in pos if i not in passed)
        if missing:
            raise ValueError(f"{self.name}: donate_argnums names argument {missing[0]}, which "
                             f"this call does not pass ({len(args)} positional argument"
                             f"{'s' * (len(args) != 1)}"
                             + (f", keywords {', '.join(kwargs)}" if kwargs else "") + ")")
        return tuple(donated)

    def _position_of(self, name: str) -> int | None:
        try:
            params = list(inspect.signature(self.fn).parameters)
        except (TypeError, ValueError):
            return None
        return params.index(name) if name in params else None

    def _note_unused_donations(self, entry) -> None:
        if entry.unused_donations:
            warnings.warn(DonationWarning(
                f"{self.name}: the donated argument {', '.join(map(repr, entry.unused_donations))}"
                " cannot be donated: no result of the program has its element type and shape, so "
                "XLA has no use for the buffer (the array stays readable). Donate the "
                "arguments the results replace, such as parameters and optimiser state"),
                stacklevel=5)

    def _forget_staged(self) -> None:
        """Drop every signature: a variable the staged programs read was rebound."""
        with self._lock:
            if self._bindings and moved(self._bindings):
                self._bindings = ()
                self._entries.clear()  # its on_evict empties the plans too

    #: Whether compiling many signatures warns (eager modules of stdlib functions do not:
    #: their signatures are the user's many eager calls, not a mistake).
    warn_recompiles = True

    def _note_recompile(self, described: dict) -> None:
        limit = config.recompile_warning
        if not self.warn_recompiles or not limit or self.compiles < limit or self.compiles < self._warn_at:
            return
        self._warn_at = 2 * max(self.compiles, limit)
        why = self._difference(described)
        warnings.warn(RecompileWarning(
            f"{self.name} has compiled {self.compiles + 1} signatures"
            + (f"; this call differs from the nearest compiled one in {why}" if why else "")
            + ". Each new signature stages and compiles the function again: pass values "
            "that change from call to call as arrays, not as Python values or new shapes "
            "(hlodsl.config.recompile_warning sets when this warns)"), stacklevel=5)

    def _note_identity_statics(self, by_identity: list) -> None:
        """Warn, once per argument, of a static argument keyed by its identity: the program
        keeps what staging read from it, and mutating it will not recompile."""
        for path, value in by_identity:
            if path in self._warned_statics:
                continue
            self._warned_statics.add(path)
            kind = type(value).__name__
            warnings.warn(StaticArgumentWarning(
                f"{self.name}: static argument '{path}' is a {kind} instance, which compares "
                "and hashes by identity, so the compiled program keeps the attribute values "
                f"staging read from it: mutating it (e.g. {path}.attr = ...) will not "
                "recompile, and later calls run the old values. Pass a value instead: a "
                "frozen attrs class or frozen dataclass (compared by value), a tuple or "
                "namedtuple, or pass what changes as arrays"), stacklevel=5)

    def _difference(self, described: dict) -> str:
        """How ``described`` differs from the nearest signature still cached."""
        best = None
        for entry in reversed(self._entries.values()):  # the newest first, among equals
            old = entry.described
            if old is None:
                continue
            diff = [k for k in dict.fromkeys([*old, *described]) if old.get(k) != described.get(k)]
            if best is None or len(diff) < len(best[0]):
                best = (diff, old)
        if not best or not best[0]:
            return ""
        diff, old = best
        shown = [f"{k}: {old.get(k, 'absent')} before, {described.get(k, 'absent')} now"
                 for k in diff[:3]]
        return "; ".join(shown) + (f" (and {len(diff) - 3} more)" if len(diff) > 3 else "")

    def explain(self, *args, **kwargs) -> str:
        """Whether a call with these arguments would reuse a compiled signature, and if not,
        which argument differs from the nearest one and how.

        >>> import numpy as np, hlodsl as hd
        >>> f = hd.compile(lambda x, scale: x * scale)
        >>> _ = f(hd.array(np.float32([1, 2])), 2.0)
        >>> print(f.explain(hd.array(np.float32([1, 2])), 2.0))
        <lambda>: compiled already (1 signature cached)
        >>> print(f.explain(hd.array(np.float32([1, 2, 3])), -0.0))
        <lambda>: not compiled; nearest signature differs in x: f32[2] before, f32[3] now
        """
        args, kwargs = lift_arguments(args, kwargs, *self._static)
        leaves, treedef = flatten((args, kwargs))
        key = (treedef, tuple(type(a) for a in leaves))
        n = len(self._entries)
        if key in self._entries:
            return f"{self.name}: compiled already ({n} signature{'s' * (n != 1)} cached)"
        why = self._difference(describe(self.fn, args, kwargs))
        return f"{self.name}: not compiled" + (
            f"; nearest signature differs in {why}" if why else " (no signature cached)")

    @property
    def staged_fn(self):
        """The function staging runs: ``fn`` with its Python control flow converted.

        See ``hlodsl.flow``: an ``if``/``while``/``for i in range(...)`` on a
        symbolic array becomes HLO control flow. Converted once, on first use;
        ``fn`` itself with ``convert=False``.
        """
        if self._staged_fn is None:
            self._staged_fn = _convert(self.fn) if self.convert else self.fn
        return self._staged_fn

    def _compile(self, args, kwargs) -> Entry:
        with live_platform():  # what runs here is staged for this runtime's platform
            return self._compile_here(args, kwargs)

    def _compile_here(self, args, kwargs) -> Entry:
        if self.sharded or any_sharded(flatten((args, kwargs))[0]):
            from .argument_shardings import leaf_shardings

            staged = stage(self.staged_fn, args, kwargs, self.name)
            ins, outs = leaf_shardings(self.name, args, kwargs, staged, self.in_shardings,
                                       self.out_shardings)
            given = [s is not None for s in ins]
            leaves = flatten((args, kwargs))[0]
            from hlodsl.arrays.sharding import sharding_of  # arguments without one keep their own layout

            ins = [s if s is not None or not a._sharded else sharding_of(a._buf)
                   for s, a in zip(ins, leaves)]
            return _SHARDED[0].build(staged, self.name, ins, outs, given)
        donated = self._donated_leaves(args, kwargs)
        return build_entry(stage(self.staged_fn, args, kwargs, self.name), self.name,
                           self.passes, self.memory_limit, donated)

    def entry(self, *args, **kwargs) -> Entry:
        """The cache entry for this signature, staging and compiling if needed."""
        if self._bindings and moved(self._bindings):
            self._forget_staged()
        return self._general(args, kwargs)[2][0]

    def memory_stats(self, *args, **kwargs) -> dict[str, int]:
        """XLA's compiled memory statistics (bytes) of this signature, known without running:
        ``argument_size_in_bytes``, ``output_size_in_bytes``, ``alias_size_in_bytes``
        (results that reuse donated arguments' buffers), ``temp_size_in_bytes``,
        ``generated_code_size_in_bytes`` and, where the jaxlib reports it,
        ``peak_memory_in_bytes``.

        >>> import numpy as np, hlodsl as hd
        >>> f = hd.compile(lambda x: (x * 2).sum())
        >>> f.memory_stats(hd.array(np.ones(1000, np.float32)))["argument_size_in_bytes"]
        4000
        """
        return self.entry(*args, **kwargs).exe.memory_stats()

    def report(self, *args, **kwargs) -> str:
        """What the passes over the staged program changed for this signature, a line each."""
        entry = self.entry(*args, **kwargs)
        if not entry.reports:
            return f"{self.name}: no passes ran (give compile passes or a memory_limit)"
        return "\n".join(str(r) for r in entry.reports)

    def cache_size(self) -> int:
        """How many signatures are compiled and cached now."""
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<hlodsl.compile({self.name}): {len(self._entries)} signature(s)>"

    def __reduce__(self):
        # Its executables live in this process's XLA client; they have no portable form.
        raise TypeError(f"cannot pickle compile({self.name}): compiled functions are not "
                        "picklable (their executables belong to this process); pickle the "
                        "function itself, or the arrays, and compile it again where it is "
                        "loaded")


def _check_arguments(fn, cache_size) -> None:
    if not callable(fn):
        raise TypeError(f"compile({_short(fn)}): fn must be a callable (a function), got "
                        f"{type(fn).__name__}")
    if cache_size is not None and (
            isinstance(cache_size, bool) or not isinstance(cache_size, int)):
        raise TypeError(f"compile({getattr(fn, '__name__', 'fn')}): cache_size must be a "
                        f"positive int or None, got {cache_size!r} ({type(cache_size).__name__})")
    if cache_size is not None and cache_size < 1:
        raise ValueError(f"compile({getattr(fn, '__name__', 'fn')}): cache_size must be a "
                         f"positive int (at least 1 signature) or None, got {cache_size}")


def _check_passes(passes, name: str):
    if passes is None:
        return None
    if isinstance(passes, (str, bytes)) or not hasattr(passes, "__iter__"):
        raise TypeError(f"compile({name}): passes must be a sequence of passes (callables "
                        f"such as hlodsl.passes.MatrixChain()), got {_short(passes)}")
    passes = tuple(passes)
    for p in passes:
        if not callable(p):
            raise TypeError(f"compile({name}): each pass must be callable as "
                            f"pass(computation, context), got {_short(p)}")
    return passes


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def compile(fn=None, *, name: str | None = None, convert: bool = True,
            cache_size: int | None = None, memory_limit=None, passes=None,
            in_shardings=None, out_shardings=None, static_argnums=None, static_argnames=None,
            donate_argnums=None, donate_argnames=None):
    """Stage ``fn`` into one HLO module per signature and run it with XLA.

    Usable as ``compile(f)`` or as a decorator ``@compile``. Arrays in the
    arguments (also inside tuples, lists, dicts and attrs instances) are
    dynamic, and so are Python floats and complex numbers and numpy scalars
    (traced as scalar parameters, weakly typed for Python numbers:
    ``hlodsl.scalars``); every other argument (ints, bools, strings, ...) is
    static and part of the signature. ``static_argnums`` / ``static_argnames``
    make arguments static by position or name.
    Python ``if``/``while``/``for i in range(...)`` on symbolic arrays in ``fn``
    and the functions it calls become HLO control flow (``hlodsl.flow``);
    ``convert=False`` stages ``fn`` exactly as written. ``cache_size`` bounds the
    signatures kept compiled (default ``hlodsl.config.compile_cache_size``).

    ``memory_limit`` (bytes, ``"1GiB"``, or ``"auto"``: a fraction,
    ``hlodsl.config.auto_memory_fraction``, of the memory free on the device
    when a signature compiles; the host's on a CPU) makes each signature's temporary
    memory (XLA's own count) stay under it: passes over the staged program
    reorder dot chains, replace naive distance computations and split what
    produces large tensors into loops over slices, or compiling raises
    ``hlodsl.MemoryLimitError`` naming the tensor that could not be split.
    ``passes`` gives the passes to run instead of that default pipeline
    (``hlodsl.passes``). Both apply where the function is called, not when it
    is inlined into another staged function.

    ``in_shardings`` / ``out_shardings`` lay the arguments and results out over
    a mesh of devices (``hd.NamedSharding``; one for all, or one per positional
    argument / result, nested like them; None leaves one to its own layout or,
    for results, to XLA) and compile the program with XLA's SPMD partitioner
    (docs/sharding.md). Sharded arguments alone do the same without them.

    ``donate_argnums`` / ``donate_argnames`` hand the buffers of those arguments'
    arrays over to the results (XLA's input/output aliasing): a training step that
    replaces its parameters then needs no second copy of them. A donated array
    cannot be read after the call (``hd.DonatedArrayError`` names the call); one
    with no result of its element type and shape is not donated (a
    ``hd.DonationWarning`` says so), nor is a rank-0 array (docs/memory.md).
    """
    options = (name, convert, cache_size, memory_limit, passes, in_shardings, out_shardings,
               static_argnums, static_argnames, donate_argnums, donate_argnames)
    if fn is None:
        return lambda f: Compiled(f, *options)
    if isinstance(fn, Compiled) and options[3:] == (None,) * 8:
        return fn
    if isinstance(fn, Compiled):
        fn = fn.fn
    return Compiled(fn, *options)


def _donated_positions(fn, name: str, donate_argnums, donate_argnames, static):
    """``(positions, names)`` of the donated arguments, checked against ``fn``'s signature
    and the static ones."""
    pos, names = static_positions(fn, name, donate_argnums, donate_argnames, "donate")
    both = sorted(names & static[1]) or sorted(pos & static[0])
    if both:
        raise ValueError(f"compile({name}): argument {both[0]!r} is both static and donated "
                         "(static_argnums/names and donate_argnums/names); a static argument "
                         "holds no buffer to donate")
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return pos, names
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return pos, names
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    wrong = sorted(i for i in pos if not 0 <= i < n)
    if wrong:
        raise ValueError(f"compile({name}): donate_argnums={donate_argnums!r} is out of range: "
                         f"{name}{inspect.signature(fn)} has {n} positional parameter"
                         f"{'s' * (n != 1)}")
    return pos, names
