"""The reader of StableHLO from outside, run as a child process (``hlodsl.runtime.isolated``).

MLIR's bytecode reader and jaxlib's conversion to HLO run in C++ that a
damaged or crafted input can crash (a flipped bit of a portable artifact has
segfaulted it) or hang. So the caller's process never parses such bytes: this
script, started once as ``python -I reader_worker.py NAME`` and kept, reads them
(``NAME``: jaxlib's conversion function, as ``jaxlib_compat`` names it).
It imports jaxlib only (not hlodsl, not jax), so it starts in about half a
second. Each request is a kind byte and a length-prefixed payload on stdin;
each answer a length-prefixed JSON object on stdout (never pickle: the answer
of a child that read hostile bytes is data, not code):

- ``b``: bytes, a portable artifact or an MLIR module (text or bytecode);
- ``a``: a portable artifact only (``hd.deserialize``'s program);
- ``t``: MLIR text (UTF-8);
- ``m``: a portable artifact, answered with its MLIR text only (``mlir``).

The answer holds the module's HLO text (source metadata and whole constants),
its parameter and result types as XLA prints them, and for an artifact the
module's bytecode as this jaxlib wrote it after reading it; or ``error`` with
jaxlib's message.

``merged_constants`` is also what ``hlodsl.runtime.jax_programs`` prints
with; it is pure text work, so this file imports nothing of jaxlib at the top.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import sys

__all__ = ["ANSWER", "HEADER", "merged_constants"]

HEADER = struct.Struct("<cQ")  # request: kind, payload length
ANSWER = struct.Struct("<Q")   # answer: JSON length

_ELIDED = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*\bconstant\(\{\.\.\.\}\)")
_CONSTANT_LINE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*\bconstant\(")


def merged_constants(text: str, full: str) -> str:
    """``text`` (HLO with metadata, large constants elided as ``{...}``) with its elided
    constants taken from ``full`` (the same module printed with every constant)."""
    if "{...}" not in text:
        return text
    whole = {}
    for line in full.splitlines():
        m = _CONSTANT_LINE.match(line)
        if m:
            whole[m[1]] = line[line.index("constant("):]
    out = []
    for line in text.splitlines():
        m = _ELIDED.match(line)
        if m and m[1] in whole:
            line = line.replace("constant({...})", _constant_call(whole[m[1]]))
        out.append(line)
    return "\n".join(out) + "\n"


def _constant_call(text: str) -> str:
    """``constant(...)`` with balanced parentheses from the start of ``text``."""
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch == ")":
            return text[:k + 1]
    return text


def _resolve(name: str):
    """The object a dotted name names (module, then attributes): the conversion function,
    whose private name ``hlodsl.runtime.jaxlib_compat`` keeps and passes in ``argv``."""
    import importlib

    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(f"cannot find {name}")


_TO_COMPUTATION = []  # the conversion function, resolved at start


def _read(kind: bytes, payload: bytes) -> dict:
    from jaxlib.mlir.dialects import stablehlo

    if kind == b"m":
        from jaxlib.mlir import ir

        context = ir.Context()
        stablehlo.register_dialect(context)
        with context:
            return {"mlir": str(stablehlo.deserialize_portable_artifact(context, payload))}

    module = None
    if kind in (b"a", b"b"):
        try:
            module = stablehlo.deserialize_portable_artifact_str(payload)
        except Exception:
            if kind == b"a":
                raise
    source = module if module is not None else \
        payload.decode("utf-8") if kind == b"t" else payload
    computation = _TO_COMPUTATION[0](source, use_tuple_args=False, return_tuple=False)
    text = merged_constants(computation.as_hlo_module().to_string(),
                            computation.as_hlo_text(print_large_constants=True))
    shape = computation.program_shape()
    return {"hlo": text,
            "params": [str(p) for p in shape.parameter_shapes()],
            "result": str(shape.result_shape()),
            "module": None if module is None else base64.b64encode(module).decode()}


def _read_exactly(stream, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def main() -> None:
    try:  # a crash here must not write a core file of the reader's memory
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass
    # Loaded before the first request, not during it.
    _TO_COMPUTATION.append(_resolve(sys.argv[1]))
    from jaxlib.mlir.dialects import stablehlo  # noqa: F401

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            kind, length = HEADER.unpack(_read_exactly(stdin, HEADER.size))
            payload = _read_exactly(stdin, length)
        except EOFError:
            return
        try:
            answer = {"ok": True, **_read(kind, payload)}
        except Exception as e:  # noqa: BLE001 (jaxlib's errors: their message is the answer)
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        data = json.dumps(answer).encode()
        stdout.write(ANSWER.pack(len(data)) + data)
        stdout.flush()


if __name__ == "__main__":
    main()
