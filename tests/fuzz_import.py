"""Fuzzing the doors programs from outside come in by: import_hlo and deserialize.

A run is one child process (``python tests/fuzz_import.py SEED N``) that builds
a corpus of real programs (HLO text hlodsl and jax print, a portable artifact,
an ``hd.export``'s bytes) and feeds ``N`` mutations of them, drawn by
hypothesis, to ``hd.import_hlo`` / ``hd.deserialize``. Before each case it
prints the case's number, so a parent that sees the child die or go quiet
knows which case did it. Each outcome is one of:

- ``ok``: imported (and, for an export, called on zeros);
- ``refused``: ``HloImportError`` or ``ExportError``, the documented errors;
- ``escape``: any other exception (a bug: an error of the wrong kind);

and the parent (``run``) adds ``crash`` (the child died) and ``hang`` (no
progress within the limit). The suite runs a few hundred cases
(tests/test_untrusted_programs.py); tests/stress_import_fuzz.py thousands.
"""

from __future__ import annotations

import json
import os
import re
import select
import struct
import subprocess
import sys
import time

#: Seconds a case may take before its run counts as hung (the reader's own timeout,
#: hd.config.untrusted_read_timeout_s, is set below it in the child).
CASE_LIMIT_S = 60.0
READ_TIMEOUT_S = 20.0
KINDS = ("text", "artifact", "export", "mlir")


# -- the corpus -------------------------------------------------------------------------------

def corpus() -> dict:
    import hlodsl.stdlib as xp
    import jax
    import jax.numpy as jnp
    import numpy as np

    import hlodsl as hd
    from hlodsl import runtime

    a = hd.array(np.arange(12, dtype=np.float32).reshape(3, 4))

    def step(p, x):
        value, grads = hd.value_and_grad(lambda p, x: xp.mean(xp.tanh(x @ p["w"]) ** 2))(p, x)
        return hd.tree_map(lambda w, g: w - 0.1 * g, p, grads), value

    exported = hd.export(step, {"w": hd.ArrayType(hd.float32, (3, 4))},
                         hd.ArrayType(hd.float32, (5, 3)))
    texts = [exported.hlo_text()]
    for f in (lambda x: xp.sum(xp.exp(x) @ x.T, axis=0),
              lambda x: hd.fori_loop(0, 3, lambda i, v: v * 2 + 1, x),
              lambda x: hd.cond(xp.sum(x) > 0, lambda v: v + 1, lambda v: v - 1, x),
              lambda x: xp.sort(x, axis=1), lambda x: x[xp.asarray([0, 2])]):
        texts.append(str(hd.code_hlo(f, a)))
    x5 = np.arange(5, dtype=np.float32)
    for g in (lambda x: jnp.cumsum(x) @ x,
              lambda x: jax.lax.scan(lambda c, v: (c + v, c * v), 0.0, x)[1],
              lambda x: jnp.argsort(x)):
        texts.append(runtime.lower_jax(g, (x5,))[0])
    return {"text": texts, "artifact": [exported.artifact()], "export": [exported.serialize()],
            "mlir": [exported.mlir_text()]}


# -- mutations (hypothesis strategies) --------------------------------------------------------

def mutations(programs: dict):
    """A strategy of ``(kind, payload)`` cases: a program of the corpus, mutated."""
    from hypothesis import strategies as st

    def text_case(draw):
        text = draw(st.sampled_from(programs["text"]))
        for _ in range(draw(st.integers(1, 3))):
            text = _mutate_text(draw, text)
        return "text", text

    def bytes_case(draw, kind):
        data = bytearray(draw(st.sampled_from(programs[kind])))
        start = _artifact_start(bytes(data)) if kind == "export" else 0
        for _ in range(draw(st.integers(1, 3))):
            data = _mutate_bytes(draw, data, start)
        if kind == "export" and draw(st.booleans()):
            data = _restamped(bytes(data))  # a digest that matches: the program is read
        return kind, bytes(data)

    def mlir_case(draw):
        return "mlir", _mutate_text(draw, draw(st.sampled_from(programs["mlir"])))

    @st.composite
    def case(draw):
        kind = draw(st.sampled_from(KINDS))
        if kind == "text":
            return text_case(draw)
        if kind == "mlir":
            return mlir_case(draw)
        return bytes_case(draw, kind)

    return case()


def _mutate_text(draw, text: str) -> str:
    from hypothesis import strategies as st

    lines = text.splitlines()
    how = draw(st.sampled_from(["number", "number", "delete", "duplicate", "rename", "chars"]))
    if how == "number":
        numbers = list(re.finditer(r"-?\d+", text))
        if numbers:
            m = numbers[draw(st.integers(0, len(numbers) - 1))]
            n = int(m[0])
            new = draw(st.sampled_from([-1, 0, 1, n + 1, n - 1, 2 ** 31, 2 ** 63, 10 ** 12, 65]))
            return text[:m.start()] + str(new) + text[m.end():]
    if how == "delete" and lines:
        del lines[draw(st.integers(0, len(lines) - 1))]
    elif how == "duplicate" and lines:
        lines.insert(draw(st.integers(0, len(lines))), lines[draw(st.integers(0, len(lines) - 1))])
    elif how == "rename":
        names = sorted(set(re.findall(r"%?([A-Za-z_][\w.\-]*\.\d+)", text)))
        if len(names) > 1:
            a = names[draw(st.integers(0, len(names) - 1))]
            b = names[draw(st.integers(0, len(names) - 1))]
            return re.sub(re.escape(a) + r"\b", b, text, count=draw(st.integers(1, 3)))
    elif how == "chars" and text:
        k = draw(st.integers(0, len(text) - 1))
        new = draw(st.sampled_from(["(", ")", "{", "}", ",", "=", "[", "]", "\n", "%", "ROOT ",
                                    "ENTRY ", "", "0", "f64", "s32", "tuple", "parameter"]))
        return text[:k] + new + text[k + draw(st.integers(0, 3)):]
    return "\n".join(lines) + "\n"


def _artifact_start(data: bytes) -> int:
    length = struct.unpack_from("<I", data, 10)[0]
    return 14 + length


def _mutate_bytes(draw, data: bytearray, start: int) -> bytearray:
    from hypothesis import strategies as st

    how = draw(st.sampled_from(["flip", "flip", "flip", "byte", "truncate", "insert"]))
    if len(data) <= start:
        return data
    # Positions uniform over the bytes (hypothesis's own integers favour small ones).
    k = draw(st.randoms(use_true_random=False)).randrange(start, len(data))
    if how == "flip":
        data[k] ^= 1 << draw(st.integers(0, 7))
    elif how == "byte":
        data[k] = draw(st.integers(0, 255))
    elif how == "truncate":
        del data[k:]
    else:
        data[k:k] = bytes(draw(st.lists(st.integers(0, 255), min_size=1, max_size=8)))
    return data


def _restamped(data: bytes) -> bytes:
    """Export bytes whose metadata states the (mutated) artifact's length and digest."""
    import hashlib

    try:
        length = struct.unpack_from("<I", data, 10)[0]
        meta = json.loads(data[14:14 + length])
        artifact = data[14 + length:]
        meta["artifact"] = {"bytes": len(artifact), "sha256": hashlib.sha256(artifact).hexdigest()}
    except (struct.error, ValueError, TypeError, UnicodeDecodeError):
        return data
    new = json.dumps(meta, sort_keys=True).encode()
    return data[:10] + struct.pack("<I", len(new)) + new + artifact


# -- one case --------------------------------------------------------------------------------

def outcome(kind: str, payload) -> str:
    import numpy as np

    import hlodsl as hd

    try:
        if kind == "export":
            from hlodsl.arrays.tree import unflatten

            g = hd.deserialize(payload)
            if all(np.prod(t.shape) < 10 ** 6 for t in g.in_types):
                args, kwargs = unflatten(g.in_tree, [hd.array(np.zeros(t.shape, t.dtype.np_dtype))
                                                     for t in g.in_types])
                g(*args, **kwargs)
        else:
            hd.import_hlo(payload)
        return "ok"
    except (hd.HloImportError, hd.ExportError) as e:
        # Which door refused: the reader child crashing or timing out is a refusal too.
        why = "reader crashed" if "crashed the reader" in str(e) else \
            "reader timed out" if "did not finish within" in str(e) else "error"
        return f"refused {why}"
    except Exception as e:  # noqa: BLE001 (an escape: reported by its type)
        return f"escape {type(e).__name__}: {str(e)[:200]}"


def child(seed: int, n: int) -> None:
    """Run ``n`` cases drawn with ``seed``, printing ``case K`` before and ``done K
    OUTCOME`` after each."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    import hlodsl as hd

    hd.config.untrusted_read_timeout_s = READ_TIMEOUT_S
    programs = corpus()
    counter = [0]

    @hseed(seed)
    @settings(max_examples=n, database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck), phases=["generate"])
    @given(mutations(programs))
    def run_one(case):
        kind, payload = case
        k = counter[0]
        counter[0] += 1
        print(f"case {k} {kind}", flush=True)
        print(f"done {k} {outcome(kind, payload)}", flush=True)

    run_one()
    print("finished", flush=True)


# -- the parent ------------------------------------------------------------------------------

def run(seed: int, n: int, limit_s: float = CASE_LIMIT_S) -> dict:
    """One child run: ``{"cases", "ok", "refused", "escapes", "crashes", "hangs", "notes"}``."""
    counts = {"cases": 0, "ok": 0, "refused": 0, "escapes": 0, "crashes": 0, "hangs": 0,
              "by_kind": {}, "notes": []}
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
    import tempfile

    # A pipe left unread could fill and stall the child: its stderr goes to a file.
    err = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, __file__, str(seed), str(n)], stdout=subprocess.PIPE,
                            stderr=err, env=env, text=True)
    current = kind = None
    last = time.monotonic()
    buf = ""
    fd = proc.stdout.fileno()
    started = False
    while True:
        # The first case waits for the corpus (hlodsl's import, jax lowerings).
        wait = limit_s * (3 if not started else 1) - (time.monotonic() - last)
        if wait <= 0:
            proc.kill()
            proc.wait()
            counts["hangs"] += 1
            counts["notes"].append(f"hang at case {current} (seed {seed})")
            break
        ready = select.select([fd], [], [], wait)[0]
        if not ready:
            continue
        chunk = os.read(fd, 65536).decode()
        if not chunk:
            code = proc.wait()
            if current is not None:
                counts["crashes"] += 1
                counts["notes"].append(f"crash (exit {code}) at case {current} (seed {seed}): "
                                       f"{_tail(err, 400)}")
            elif "finished" not in buf:
                counts["notes"].append(f"the child exited {code}: {_tail(err, 800)}")
            break
        buf += chunk
        last = time.monotonic()
        while "\n" in buf:
            line, buf = buf.split("\n", 1)
            if line.startswith("case "):
                started = True
                current = line[5:]
                kind = line.split()[2]
                counts["cases"] += 1
            elif line.startswith("done "):
                result = line.split(" ", 2)[2]
                current = None
                tally = counts["by_kind"].setdefault(kind, {})
                label = result if result == "ok" or result.startswith("refused") else "escape"
                tally[label] = tally.get(label, 0) + 1
                if result == "ok":
                    counts["ok"] += 1
                elif result.startswith("refused"):
                    counts["refused"] += 1
                else:
                    counts["escapes"] += 1
                    counts["notes"].append(f"escape at case {line.split()[1]} (seed {seed}): "
                                           f"{result}")
            elif line == "finished":
                buf = "finished"
    return counts


def _tail(f, n: int) -> str:
    f.seek(0)
    return f.read()[-n:]


if __name__ == "__main__":
    child(int(sys.argv[1]), int(sys.argv[2]))
