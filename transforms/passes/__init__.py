"""Passes over the staged program (the eXLA paper's memory-safe compilation, and more).

``hd.compile(f, memory_limit="1GiB")`` runs the default pipeline on each staged
signature before XLA compiles it; ``hd.compile(f, passes=[...])`` runs the
passes given; ``hd.code_hlo(f, *args, passes=..., memory_limit=...)`` shows the
module they give and ``f.report(*args)`` what each changed. docs/memory.md
describes the passes, their rules and their limits.
"""

from hlodsl.compilation import compiler as _compiler

from .context import Pass, PassContext
from .pipeline import Report, compile_with_passes, default_passes, run_passes
from .rewrite import nbytes, rewrite, users
from .distances import Distances
from .matrix_chain import MatrixChain
from .split import Split
from .top_k import BlockedTopK

__all__ = ["Pass", "PassContext", "Report", "run_passes", "compile_with_passes",
           "default_passes", "rewrite", "users", "nbytes", "Split", "MatrixChain", "Distances",
           "BlockedTopK"]

_compiler.use_pipeline(compile_with_passes)
