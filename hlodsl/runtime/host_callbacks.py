"""Programs that call Python on the host: the custom-call target, and running them.

jaxlib registers a custom-call target that calls back into Python from a
compiled program, one per kind of device: ``xla_ffi_python_cpu_callback`` and
``xla_ffi_python_gpu_callback`` (typed FFI; the instruction's ``index``
attribute picks the Python callable among those the executable was compiled
with). On a GPU the target copies the operands to the host, calls Python and
copies the results back. ``callback_target`` names the one for a platform.

A program that calls Python runs to completion before its call returns (the
Python side effects have happened, in order, when the caller goes on), and an
exception raised by the Python function comes out of that call as itself,
with a note naming the function: jaxlib only reports the callback's failure
as a runtime error with its traceback in the text.

>>> callback_target("cpu"), callback_target("cuda")
('xla_ffi_python_cpu_callback', 'xla_ffi_python_gpu_callback')
"""

from __future__ import annotations

import threading
from typing import Callable

__all__ = ["callback_target", "Recorded", "with_callbacks"]

_TARGETS = {"cpu": "xla_ffi_python_cpu_callback", "cuda": "xla_ffi_python_gpu_callback",
            "rocm": "xla_ffi_python_gpu_callback", "gpu": "xla_ffi_python_gpu_callback"}


def callback_target(platform: str) -> str:
    """The custom-call target that calls Python from a program compiled for ``platform``."""
    target = _TARGETS.get(platform)
    if target is None:
        raise NotImplementedError(
            f"calling Python from a compiled program (debug_print, pure_callback, "
            f"io_callback) is supported on CPU and GPU (cuda, rocm), not on {platform!r}")
    return target


class Recorded:
    """A Python callable as a compiled program holds it: an exception it raises is kept
    (for the call that ran the program to raise) before jaxlib turns it into text."""

    __slots__ = ("fn", "name", "failures")

    def __init__(self, fn: Callable, name: str, failures: list):
        self.fn = fn
        self.name = name
        self.failures = failures  # shared by the callables of one executable

    def __call__(self, *args):
        try:
            return self.fn(*args)
        except BaseException as e:  # re-raised by the call that ran the program
            self.failures.append((threading.get_ident(), self.name, e))
            raise


def with_callbacks(execute_sharded: Callable, handlers: list | None, failures: list,
                   program: str) -> Callable:
    """``execute(buffers) -> outputs`` for a program holding ``Recorded`` callables: it
    waits for the program to finish (its callbacks have run when it returns) and raises
    the first exception a callback raised, as itself.

    ``handlers`` turn outputs into buffers (``with_handlers``'s); None: PJRT's own
    (one device's buffer per output, as ``LoadedExecutable.execute`` gives them)."""

    def execute(buffers):
        mark = len(failures)
        try:
            results = execute_sharded(buffers, with_tokens=True)
            outs = (results.consume_with_handlers(handlers) if handlers is not None
                    else [bufs[0] for bufs in results.disassemble_into_single_device_arrays()])
            results.consume_token().block_until_ready()
        except Exception as e:  # the runtime's report of a failed callback, or another error
            raise_recorded(failures, mark, program, e)
            raise
        return outs

    return execute


def raise_recorded(failures: list, mark: int, program: str, error: Exception) -> None:
    """Raise the exception a callback recorded after ``mark`` (this thread's first), if any."""
    me = threading.get_ident()
    mine = [f for f in failures[mark:] if f[0] == me] or failures[mark:]
    if not mine:
        return
    del failures[mark:]
    _, name, exc = mine[0]
    exc.add_note(f"(raised by the Python function {name}, called from the compiled "
                 f"program {program})")
    raise exc from exc.__cause__  # not chained to jaxlib's report of it
