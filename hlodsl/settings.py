"""Process-wide settings: how much hlodsl caches, and when it warns about recompiling.

Every cache hlodsl keeps is bounded by one of these numbers (docs/safety.md
lists them); change them at any time, the caches apply a new limit at their
next insertion.

>>> import hlodsl as hd
>>> hd.config.compile_cache_size
64
>>> hd.config.recompile_warning = 16   # warn later; 0 switches the warning off
>>> hd.config.recompile_warning = 8
"""

from __future__ import annotations

import dataclasses

__all__ = ["Config", "config"]


@dataclasses.dataclass
class Config:
    """The settings; ``hlodsl.config`` is the one instance."""

    #: Signatures (compiled executables) kept per ``hd.compile``d function; the least
    #: recently used one is dropped past it (``hd.compile(f, cache_size=...)`` overrides).
    compile_cache_size: int = 64
    #: One-op modules kept for eager op calls, over all ops and operand types.
    eager_cache_size: int = 4096
    #: Small modules kept for control flow and transformations run eagerly.
    eager_program_cache_size: int = 256
    #: Staged sub-computations (the Python callables given to Map, Reduce, While, ...).
    subcomputation_cache_size: int = 4096
    #: A function that has compiled more signatures than this warns once, naming the
    #: argument that keeps changing (then again at twice as many, and so on); 0: never.
    recompile_warning: int = 8


config = Config()
