"""The platform a program is staged for: the runtime's own, or one named for staging only.

What hlodsl emits for some functions depends on the platform that will run
the program: ``xp.linalg`` calls jaxlib's LAPACK kernels on a CPU and
cuSOLVER's on a GPU, ``nn.dot_product_attention`` cuDNN's fused kernel on a
GPU, and ``CollectiveBroadcast`` stages another form where XLA:CPU lacks the
instruction. Every such decision reads ``target_platform()`` while staging:
the runtime's platform, unless ``staging_platform(p)`` names another for this
thread. That is how ``hd.code_hlo(f, *args, platform="gpu")`` and
``hd.export(..., platform="gpu")`` give the module hlodsl would compile on a
GPU, on a machine without one.

Programs that run (``hd.compile``, eager op calls, control flow called
eagerly) are always staged for the runtime's platform (``live_platform``),
and outside staging ``target_platform()`` is the runtime's: a staging target
only changes what is printed or exported.

>>> from hlodsl.ir.graph import Builder
>>> with staging_platform("gpu"), Builder("f"):
...     target_platform()
'gpu'
>>> with staging_platform("gpu"):
...     target_platform() == runtime_platform()   # not staging: an eager call runs here
True
>>> staging_platform("tpu")
Traceback (most recent call last):
ValueError: staging platform: 'tpu' is not one hlodsl stages for; use 'cpu' or 'gpu' (CUDA; 'cuda' is taken as 'gpu')
"""

from __future__ import annotations

import contextlib

from hlodsl.context import STATE

__all__ = ["PLATFORMS", "platform_name", "target_platform", "runtime_platform",
           "staging_platform", "live_platform", "foreign_target"]

#: The platforms hlodsl stages for by name ("gpu" is CUDA, as jax's "cuda").
PLATFORMS = ("cpu", "gpu")
_ALIASES = {"cuda": "gpu"}


def platform_name(value, what: str = "staging platform") -> str:
    """``value`` as one of ``PLATFORMS`` (``"cuda"`` -> ``"gpu"``), else ``ValueError``."""
    name = _ALIASES.get(value, value) if isinstance(value, str) else value
    if name not in PLATFORMS:
        raise ValueError(f"{what}: {value!r} is not one hlodsl stages for; use 'cpu' or 'gpu' "
                         "(CUDA; 'cuda' is taken as 'gpu')")
    return name


def runtime_platform() -> str:
    """The platform of the runtime this process runs programs on (``"cpu"``, ``"gpu"``...)."""
    from hlodsl import runtime

    live = runtime.platform()
    return _ALIASES.get(live, live)


def _named() -> str | None:
    # Only while staging: ops called eagerly (no builder) run here, on the runtime.
    return STATE.platform if STATE.builders else None


def target_platform() -> str:
    """The platform being staged for: ``staging_platform``'s while staging, else the
    runtime's (an op or library function called eagerly runs on the runtime)."""
    return _named() or runtime_platform()


def foreign_target() -> bool:
    """Whether this thread stages for a platform other than the runtime's."""
    named = _named()
    return named is not None and named != runtime_platform()


@contextlib.contextmanager
def _platform(name):
    before = STATE.platform
    STATE.platform = name
    try:
        yield name
    finally:
        STATE.platform = before


def staging_platform(platform):
    """A context in which this thread stages for ``platform`` (``"cpu"``, ``"gpu"``;
    ``None``: the runtime's). Nestable; the previous target comes back on exit."""
    return _platform(None if platform is None else platform_name(platform))


def live_platform():
    """A context that stages for the runtime's platform: what compiles and runs here."""
    return _platform(None)
