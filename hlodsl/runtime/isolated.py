"""Reading StableHLO from outside in a child process, so that no input can crash the caller.

``read_stablehlo(data)`` sends the bytes (a portable artifact, MLIR bytecode)
or MLIR text to one long-lived child, ``reader_worker.py``, started with this
Python when first needed (about half a second, once per process; each request
after that costs a few milliseconds). The child parses, verifies and converts
the module; this process only ever reads what the child printed from a module
it read (HLO text, and bytecode the child's MLIR wrote). A child that dies on
the input (a segfault) or takes longer than the timeout (it is then killed)
gives ``UntrustedInputError``, and the next request starts a fresh child.

>>> reading = read_stablehlo('''module @m {
...   func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
...     %0 = stablehlo.add %x, %x : tensor<3xf32>
...     return %0 : tensor<3xf32>
...   }
... }''')
>>> reading.params, reading.result
(['f32[3]{0}'], 'f32[3]{0}')
>>> read_stablehlo(b"\\x00not a module")
Traceback (most recent call last):
hlodsl.runtime.isolated.UntrustedInputError: ...
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import NamedTuple

from hlodsl.settings import config

from . import jaxlib_compat as compat
from .reader_worker import ANSWER, HEADER

__all__ = [
    "StableHloReading",
    "UntrustedInputError",
    "artifact_mlir_text_isolated",
    "read_stablehlo",
    "reader_pid",
]

_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reader_worker.py")


class UntrustedInputError(ValueError):
    """The child reading a program from outside refused it, crashed on it, or timed out."""


class StableHloReading(NamedTuple):
    """What the child read: HLO text, types as XLA prints them, an artifact's module."""

    hlo_text: str
    params: list        # each parameter's type (``f32[3,8]{1,0}``)
    result: str         # the result's type (a tuple type for several results)
    module: bytes | None  # an artifact's StableHLO module, as bytecode the child wrote


class _Reader:
    """The child process and the pipe to it (one request at a time)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.owner = 0  # the pid that started it (a forked process starts its own)
        self.stderr = None

    def start(self) -> subprocess.Popen:
        if self.proc is not None and self.owner == os.getpid() and self.proc.poll() is None:
            return self.proc
        self.stop()
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (the child writes it while it lives)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
        self.proc = subprocess.Popen([sys.executable, "-I", _WORKER, compat.TO_COMPUTATION],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=env,
                                     close_fds=True)
        self.owner = os.getpid()
        return self.proc

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or self.owner != os.getpid():
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def request(self, kind: bytes, payload: bytes, timeout_s: float) -> dict:
        with self.lock:
            proc = self.start()
            deadline = time.monotonic() + timeout_s
            try:
                proc.stdin.write(HEADER.pack(kind, len(payload)) + payload)
                proc.stdin.flush()
                size = ANSWER.unpack(self._read(proc, ANSWER.size, deadline))[0]
                return json.loads(self._read(proc, size, deadline))
            except TimeoutError:
                self.stop()
                raise UntrustedInputError(
                    f"reading it did not finish within {timeout_s:g} s (the reader was "
                    "stopped; hd.config.untrusted_read_timeout_s sets the limit)") from None
            except (EOFError, BrokenPipeError, ConnectionResetError):
                code = proc.wait()
                why = self._why(code)
                self.proc = None
                raise UntrustedInputError(f"it crashed the reader ({why}): the input is "
                                          "damaged or not StableHLO") from None

    @staticmethod
    def _read(proc, n: int, deadline: float) -> bytes:
        fd = proc.stdout.fileno()
        chunks, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _why(self, code: int) -> str:
        if code < 0:
            try:
                return f"signal {-code}, {signal.Signals(-code).name}"
            except ValueError:
                return f"signal {-code}"
        tail = b""
        if self.stderr is not None:
            self.stderr.seek(max(0, self.stderr.seek(0, 2) - 300))
            tail = self.stderr.read()
        return f"exit code {code}" + (f": {tail.decode(errors='replace').strip()}" if tail else "")


_READER = _Reader()
atexit.register(_READER.stop)


def reader_pid() -> int | None:
    """The child's process id, where one runs (tests kill it to see a crash handled)."""
    proc = _READER.proc
    return proc.pid if proc is not None and proc.poll() is None else None


def artifact_mlir_text_isolated(artifact: bytes, timeout_s: float | None = None) -> str:
    """A portable artifact from outside as MLIR text, printed by the child."""
    timeout_s = config.untrusted_read_timeout_s if timeout_s is None else timeout_s
    answer = _READER.request(b"m", bytes(artifact), timeout_s)
    if not isinstance(answer, dict) or not answer.get("ok") or \
            not isinstance(answer.get("mlir"), str):
        error = answer.get("error") if isinstance(answer, dict) else None
        raise UntrustedInputError(str(error or "the reader gave no answer"))
    return answer["mlir"]


def read_stablehlo(data: bytes | str, *, artifact: bool = False,
                   timeout_s: float | None = None) -> StableHloReading:
    """``data`` (a portable artifact, MLIR bytecode or MLIR text) read in the child.

    Args:
        data: the program. ``artifact=True`` accepts a portable artifact only.
        timeout_s: how long the child may take (default
            ``hd.config.untrusted_read_timeout_s``).

    Raises:
        UntrustedInputError: jaxlib refused the input (its message), or it crashed or
            hung the child.
    """
    timeout_s = config.untrusted_read_timeout_s if timeout_s is None else timeout_s
    if isinstance(data, str):
        kind, payload = b"t", data.encode("utf-8", errors="surrogatepass")
    else:
        kind, payload = (b"a" if artifact else b"b"), bytes(data)
    answer = _READER.request(kind, payload, timeout_s)
    if not isinstance(answer, dict) or not answer.get("ok"):
        error = answer.get("error") if isinstance(answer, dict) else None
        raise UntrustedInputError(str(error or "the reader gave no answer"))
    try:
        module = answer["module"]
        return StableHloReading(str(answer["hlo"]), [str(p) for p in answer["params"]],
                                str(answer["result"]),
                                None if module is None else base64.b64decode(module))
    except (KeyError, TypeError, ValueError) as e:
        raise UntrustedInputError(f"the reader's answer is malformed ({e})") from None
