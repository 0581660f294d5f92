"""jaxlib's LAPACK kernels: whether programs may call them here, and binding them.

>>> isinstance(lapack_kernels(), bool)
True
"""

from __future__ import annotations

import jax

from hlodsl.errors import XlaCompileError

from . import jaxlib_compat as compat
from .client import platform

__all__ = ["lapack_kernels", "initialize_lapack"]


def lapack_kernels(target: str | None = None) -> bool:
    """Whether programs for ``target`` (default: this process's platform) may call
    jaxlib's LAPACK custom-call targets: on the CPU backend, where this jaxlib can bind
    them (``compat.initialize_lapack``)."""
    return (target or platform()) == "cpu" and compat.can_bind_lapack()


def initialize_lapack() -> None:
    """jaxlib registers its LAPACK custom-call targets at import but binds their
    LAPACK routines lazily; a module calling one before that would crash the
    process, so custom calls of ``lapack_*`` targets bind them first."""
    if not compat.initialize_lapack():
        raise XlaCompileError(f"jaxlib {jax.__version__} offers no way to bind its LAPACK "
                              "kernels; set hlodsl.config.linalg_kernels = 'hlo'")
