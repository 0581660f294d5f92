"""Which kernels ``xp.linalg``'s factorizations call: LAPACK, cuSOLVER, or HLO loops.

XLA has no instruction for LU, QR, eigen- or singular value decompositions.
jaxlib registers native kernels for them as custom-call targets: LAPACK's
for XLA:CPU (``stdlib/lapack.py``), cuSOLVER's for XLA:GPU
(``stdlib/cusolver.py``). ``provider()`` picks, while a function is staged,
from the platform staged for (``hlodsl.ir.target``) and
``hlodsl.config.linalg_kernels``:

| ``linalg_kernels`` | CPU | GPU (CUDA) | other |
|---|---|---|---|
| ``"auto"`` | ``"lapack"`` | ``"cusolver"`` | ``"hlo"`` |
| ``"hlo"`` | ``"hlo"`` | ``"hlo"`` | ``"hlo"`` |
| ``"lapack"`` | ``"lapack"`` | error | error |
| ``"cusolver"`` | error | ``"cusolver"`` | error |

"auto" falls back to ``"hlo"`` where this jaxlib lacks the platform's kernels
(a GPU plugin without cuSOLVER targets); staging for a GPU on a machine
without one assumes them (what jax's CUDA plugin registers).

>>> import hlodsl as hd
>>> provider()                       # this CPU's
'lapack'
>>> seen = []                        # what a function staged for a GPU asks
>>> _ = hd.code_hlo(lambda a: seen.append(provider()) or a, hd.ArrayType(hd.float32, (2,)),
...                 platform="gpu")
>>> seen
['cusolver']
>>> hd.config.linalg_kernels = "hlo"
>>> provider()
'hlo'
>>> hd.config.linalg_kernels = "auto"
"""

from __future__ import annotations

from hlodsl import runtime
from hlodsl.ir.target import foreign_target, target_platform
from hlodsl.settings import LINALG_KERNELS, config

from .manipulation import fail

__all__ = ["provider", "PROVIDERS", "geev_supported", "GEEV_CUSOLVER"]

#: What ``provider()`` returns.
PROVIDERS = ("lapack", "cusolver", "hlo")
#: Each platform's native kernels.
_NATIVE = {"cpu": "lapack", "gpu": "cusolver"}
#: The cuSOLVER version whose ``cusolverDnXgeev`` jax calls (11.7.1): older ones lack it.
GEEV_CUSOLVER = 11701


def _usable(native: str, target: str) -> bool:
    if native == "lapack":
        return runtime.lapack_kernels(target)
    return foreign_target() or runtime.cusolver_kernels()


def provider() -> str:
    """``"lapack"``, ``"cusolver"`` or ``"hlo"``: the kernels staged now (module docstring)."""
    kernels = config.linalg_kernels
    if kernels not in LINALG_KERNELS:  # set around Config's check (object.__setattr__)
        raise fail(ValueError, f"hlodsl.config.linalg_kernels: must be one of "
                               f"{', '.join(map(repr, LINALG_KERNELS))}, got {kernels!r}")
    if kernels == "hlo":
        return "hlo"
    target = target_platform()
    native = _NATIVE.get(target)
    usable = native is not None and _usable(native, target)
    if kernels == "auto":
        return native if usable else "hlo"
    if kernels == native and usable:
        return kernels
    where = {"lapack": "jaxlib's LAPACK kernels exist only on the CPU (in a jaxlib that "
                       "can bind them)",
             "cusolver": "jaxlib's cuSOLVER kernels exist only on a CUDA GPU (with jax's "
                         "CUDA plugin)"}[kernels]
    raise fail(NotImplementedError, f"hlodsl.config.linalg_kernels = {kernels!r}, but {where} "
                                    f"and this stages for {target!r}; use 'auto' or 'hlo'")


def geev_supported() -> bool:
    """Whether cuSOLVER's ``geev`` (``linalg.eig``) may be called: cuSOLVER 11.7.1 or newer
    on this GPU; assumed when its version is unknown or the GPU is not this machine's."""
    if foreign_target():
        return True
    version = runtime.cusolver_version()
    return version is None or version >= GEEV_CUSOLVER
