"""Exported artifacts (hlodsl.interchange.exported): HLO text <-> StableHLO portable
artifacts.

An artifact runs through ``compile_hlo`` like any module of ours, its StableHLO module
given as ``stablehlo=`` (and its HLO text, converted by jaxlib, naming it): it shares
the compile options, the persistent cache, LAPACK binding and the error messages.
"""

from __future__ import annotations

from . import jaxlib_compat as compat

__all__ = ["portable_artifact", "artifact_module", "artifact_mlir_text"]


def portable_artifact(text: str, target: str) -> bytes:
    """HLO module text as a StableHLO portable artifact of version ``target``."""
    return compat.to_portable_artifact(compat.hlo_to_stablehlo(text), target)


def artifact_module(artifact: bytes) -> bytes:
    """The StableHLO module (MLIR bytecode) of a portable artifact, as ``compile_hlo``'s
    ``stablehlo`` takes it."""
    return compat.from_portable_artifact(artifact)


def artifact_mlir_text(artifact: bytes) -> str:
    """A StableHLO portable artifact as MLIR text."""
    return compat.portable_artifact_text(artifact)
