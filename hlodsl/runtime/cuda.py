"""What jax's CUDA plugin offers a program on this runtime: cuSOLVER's custom-call
targets, the cuSOLVER and cuDNN versions, the device's compute capability.

Each answers for the runtime hlodsl runs on; on a machine without a GPU they
say so (False, None), and code staging for a GPU without one
(``hlodsl.ir.target``) assumes what docs/gpu.md states instead.

>>> cusolver_kernels() in (True, False), compute_capability() is None or len(compute_capability())
(True, ...)
"""

from __future__ import annotations

from . import jaxlib_compat as compat
from .client import backend, platform

__all__ = ["cusolver_kernels", "cusolver_version", "cudnn_version", "compute_capability"]


def cusolver_kernels() -> bool:
    """Whether programs may call jaxlib's cuSOLVER targets (``cusolver_getrf_ffi``...):
    on a GPU whose jaxlib registered them with XLA."""
    return platform() == "gpu" and "cusolver_getrf_ffi" in compat.cuda_solver_targets()


def cusolver_version() -> int | None:
    """cuSOLVER's version (11.7.1 is 11701) on a GPU, else None (unknown)."""
    return compat.cuda_library_version("cusolver") if platform() == "gpu" else None


def cudnn_version() -> int | None:
    """cuDNN's version (9.10.0 is 91000) on a GPU, else None (unknown)."""
    return compat.cuda_library_version("cudnn") if platform() == "gpu" else None


def compute_capability() -> tuple[int, int] | None:
    """The first device's CUDA compute capability (``(9, 0)`` on an H100/H200), or None."""
    if platform() != "gpu":
        return None
    value = getattr(backend().local_devices()[0], "compute_capability", None)
    try:
        major, minor = str(value).split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None
