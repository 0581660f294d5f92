"""Programs from outside never take the process down (issue 40, items 2 and 3).

HLO text is checked in Python before XLA's parser reads it; StableHLO bytes and
MLIR text are read in a child process; hd.deserialize believes no metadata
the program contradicts. Every failure is an HloImportError or ExportError
naming what is wrong; the fuzz test feeds a few hundred mutated programs
through both doors in one child process (tests/fuzz_import.py;
tests/stress_import_fuzz.py runs thousands).
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import signal
import time

import fuzz_import
import numpy as np
import pytest

import hlodsl as hd
from hlodsl import runtime
from hlodsl.interchange.exported import _HEADER

ARTIFACT = (pathlib.Path(__file__).parent / "data" / "train_step.artifact").read_bytes()


def _module(body: str, computations: str = "") -> str:
    return f"HloModule m\n\n{computations}ENTRY m {{\n{body}\n}}\n"


def _flipped(byte: int, mask: int) -> bytes:
    data = bytearray(ARTIFACT)
    data[byte] ^= mask
    return bytes(data)


# -- HLO text ------------------------------------------------------------------------------

BAD_TEXTS = {
    "parameter_numbered_past_the_count": (  # the text: XLA aborted (param_no)
        ("HloModule m\nENTRY m {\n x = f32[3] parameter(0)\n y = f32[3] parameter(2)\n"
         " ROOT z = f32[3] add(x, y)\n}\n"),
        r"parameters are numbered \[0, 2\]"),
    "reshape_with_another_element_count": (  # XLA aborted (hlo_instruction.cc CHECK)
        _module("  x = f32[6] parameter(0)\n  ROOT y = f32[4] reshape(x)"),
        r"cannot read the module \(ShapeError: .*reshape"),
    "operand_defined_later": (
        _module("  x = f32[3] parameter(0)\n  y = f32[3] add(x, z)\n  ROOT z = f32[3] negate(x)"),
        r"line 5: operand z of y is not defined on an earlier line"),
    "call_of_an_undefined_computation": (
        _module("  x = f32[3] parameter(0)\n  ROOT y = f32[3] call(x), to_apply=nowhere"),
        r"line 5: to_apply=nowhere names no computation defined above"),
    "call_of_a_later_computation": (
        ("HloModule m\n\nENTRY m {\n  x = f32[3] parameter(0)\n"
         "  ROOT y = f32[3] call(x), to_apply=later\n}\n\nlater {\n"
         "  p = f32[3] parameter(0)\n  ROOT q = f32[3] negate(p)\n}\n"),
        r"to_apply=later names no computation defined above"),
    "huge_dimension": (
        _module("  ROOT x = f32[1099511627777] parameter(0)"),
        r"line 4: f32\[1099511627777\] has 1099511627777 elements"),
    "a_stack_frame_that_does_not_exist": (
        _module('  ROOT x = f32[3] parameter(0), metadata={op_name="x" stack_frame_id=7}'),
        r"line 4: stack_frame_id=7 names no row of the StackFrames table"),
    "two_roots": (
        _module("  x = f32[3] parameter(0)\n  ROOT y = f32[3] negate(x)\n"
                "  ROOT z = f32[3] negate(y)"),
        r"line 6: computation m has a second ROOT"),
    "a_line_that_is_not_an_instruction": (  # parse_module used to skip it silently
        _module("  x = f32[3] parameter(0)\n  this is not hlo\n  ROOT y = f32[3] negate(x)"),
        r"line 5: cannot read this line as an instruction: 'this is not hlo'"),
    "an_unclosed_computation": (
        "HloModule m\nENTRY m {\n  ROOT x = f32[3] parameter(0)\n",
        r"line 2: this computation is never closed"),
    "a_signature_that_disagrees": (
        ("HloModule m\nENTRY m (x: f32[4]) -> f32[3] {\n  x = f32[3] parameter(0)\n"
         "  ROOT y = f32[3] negate(x)\n}\n"),
        r"signature declares parameters \(f32\[4\]\) but it has \(f32\[3\]\)"),
    "two_entries": (
        ("HloModule m\nENTRY a {\n  ROOT x = f32[3] parameter(0)\n}\n"
         "ENTRY b {\n  ROOT x = f32[3] parameter(0)\n}\n"),
        r"a second ENTRY computation"),
    "an_unknown_element_type": (
        _module("  ROOT x = f33[3] parameter(0)"), r"cannot read the type 'f33\[3\]'"),
}


@pytest.mark.parametrize("name", list(BAD_TEXTS))
def test_malformed_hlo_text_is_an_import_error_naming_the_line(name):
    text, match = BAD_TEXTS[name]
    with pytest.raises(hd.HloImportError, match=match):
        hd.import_hlo(text)


def test_a_module_without_entry_takes_its_last_computation_as_xla_does():
    """The issue saw StopIteration; XLA's parser takes the last computation."""
    f = hd.import_hlo("HloModule m\n\nmain {\n  x = f32[3] parameter(0)\n"
                      "  ROOT y = f32[3] negate(x)\n}\n")
    np.testing.assert_array_equal(f(hd.array(np.float32([1, 2, 3]))), [-1, -2, -3])


def test_jaxs_and_hlodsls_own_text_passes_the_check():
    import jax.numpy as jnp

    text = runtime.lower_jax(lambda x: jnp.cumsum(x) @ x, (np.ones(4, np.float32),))[0]
    assert "StackFrames" in text  # the form this is about
    from hlodsl.introspect.hlo_validation import validate_module

    validate_module(text)
    validate_module(hd.code_hlo(lambda x: hd.stdlib.sort(x), hd.array(np.float32([2, 1]))))


# -- StableHLO bytes and MLIR text, read in a child process ---------------------------------

def test_malformed_mlir_text_and_bytecode_are_import_errors():
    with pytest.raises(hd.HloImportError, match="cannot read the MLIR text: .*"):
        hd.import_hlo("module @m {\n  func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
                      "    %0 = stablehlo.frob %x : tensor<3xf32>\n    return %0 : tensor<3xf32>\n"
                      "  }\n}\n")
    with pytest.raises(hd.HloImportError, match="cannot read the StableHLO bytes"):
        hd.import_hlo(b"ML\xefR\x00garbage")


def test_the_untouched_artifact_still_imports():
    f = hd.import_hlo(ARTIFACT)
    assert len(f.parameter_types) == 5


def test_bytes_that_segfault_jaxlibs_reader_are_an_import_error():
    """A flipped bit the analysis found to segfault MLIR's bytecode reader (in process,
    the caller died with SIGSEGV)."""
    with pytest.raises(hd.HloImportError, match=r"crashed the reader \(signal 11"):
        hd.import_hlo(_flipped(3275, 4))
    hd.import_hlo(ARTIFACT)  # a fresh reader serves the next program


def test_bytes_that_hang_jaxlibs_reader_time_out(monkeypatch):
    """A flipped bit that kept the reader busy for minutes in process."""
    monkeypatch.setattr(hd.config, "untrusted_read_timeout_s", 2.0)
    start = time.monotonic()
    with pytest.raises(hd.HloImportError, match="did not finish within 2 s"):
        hd.import_hlo(_flipped(524, 2))
    assert time.monotonic() - start < 15  # the limit, not a speed measurement


def test_a_reader_killed_from_outside_is_replaced():
    hd.import_hlo(ARTIFACT)
    pid = runtime.reader_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    hd.import_hlo(ARTIFACT)
    assert runtime.reader_pid() not in (None, pid)


# -- hd.deserialize checks its metadata against the program ------------------------------------

@pytest.fixture(scope="module")
def exported():
    e = hd.export(lambda x: x * 2, hd.ArrayType(hd.float32, (3,)))
    data = e.serialize()
    _, fmt, n = _HEADER.unpack_from(data)
    return data, fmt, json.loads(data[_HEADER.size:_HEADER.size + n]), data[_HEADER.size + n:]


def _rebuilt(exported, change, artifact=None) -> bytes:
    _, fmt, meta, art = exported
    meta = json.loads(json.dumps(meta))
    change(meta)
    if artifact is not None:
        art = artifact
        meta["artifact"] = {"bytes": len(art), "sha256": hashlib.sha256(art).hexdigest()}
    j = json.dumps(meta, sort_keys=True).encode()
    return _HEADER.pack(b"HLODSLX\n", fmt, len(j)) + j + art


def _set(path, value):
    def change(meta):
        *head, last = path
        target = meta
        for k in head:
            target = target[k]
        target[last] = value
    return change


LIES = {
    # the issue's: an int32 result over float32 bits, a 3-element buffer typed f32[1000000]
    "out_dtype": (_set(["out_types", 0, "dtype"], "int32"),
                  r"out_types\[0\] says s32\[3\] but the program returns f32\[3\]"),
    "out_shape": (_set(["out_types", 0, "shape"], [1000000]),
                  r"out_types\[0\] says f32\[1000000\] but the program returns f32\[3\]"),
    "in_shape": (_set(["in_types", 0, "shape"], [4]),
                 r"in_types\[0\] says f32\[4\] but the program takes f32\[3\]"),
    "no_stablehlo_version": (lambda m: m["versions"].pop("stablehlo"),
                             r"versions: has no 'stablehlo'"),
    "in_tree_of_more_leaves": (_set(["in_tree"], {"tuple": [{"tuple": ["array", "array"]},
                                                            {"dict": []}]}),
                               r"in_tree holds 2 arrays but in_types lists 1"),
    "object_dtype": (_set(["in_types", 0, "dtype"], "object"),
                     r"in_types\[0\].dtype: 'object' is not an element type"),
    "in_tree_unreadable": (_set(["in_tree"], {"tuple": 5}), r"field in_tree: cannot be read"),
    "negative_dimension": (_set(["out_types", 0, "shape"], [-3]),
                           r"out_types\[0\].shape: \[-3\] is not a list"),
    "name_not_a_string": (_set(["name"], 7), r"field name: must be a string"),
    "bad_digest": (_set(["artifact", "sha256"], "xyz"), r"artifact.sha256: must be 64"),
}


@pytest.mark.parametrize("name", list(LIES))
def test_metadata_the_program_contradicts_or_that_is_malformed_is_refused(exported, name):
    change, match = LIES[name]
    with pytest.raises(hd.ExportError, match=match):
        hd.deserialize(_rebuilt(exported, change))


def test_every_metadata_field_deleted_is_named(exported):
    _, _, meta, _ = exported
    for key in sorted(set(meta) - {"donated"}):
        with pytest.raises(hd.ExportError, match=rf"no field '{key}'"):
            hd.deserialize(_rebuilt(exported, lambda m, k=key: m.pop(k)))


def test_an_untouched_export_still_runs_and_prints(exported):
    g = hd.deserialize(exported[0])
    np.testing.assert_array_equal(g(hd.array(np.float32([1, 2, 3]))), [2, 4, 6])
    assert "stablehlo.multiply" in g.mlir_text()
    assert "multiply" in g.hlo_text()


def test_a_crashing_artifact_under_a_matching_digest_is_an_export_error(exported):
    """The digest only catches accidents: one restamped over crafted bytes is checked by
    reading the program in the child, which the bytes may crash."""
    data = _rebuilt(exported, lambda m: None, artifact=_flipped(3275, 4))
    with pytest.raises(hd.ExportError, match="crashed the reader"):
        hd.deserialize(data)


# -- fuzz ---------------------------------------------------------------------------------------

def test_fuzzed_programs_never_crash_hang_or_escape():
    """200 hypothesis-drawn mutations of real HLO text, MLIR text, artifacts and export
    bytes, run in one child process: each is imported (or refused with HloImportError /
    ExportError); none kills the process, hangs, or raises anything else."""
    result = fuzz_import.run(seed=0, n=200)
    assert result["cases"] == 200, result
    assert (result["crashes"], result["hangs"], result["escapes"]) == (0, 0, 0), result["notes"]
    assert result["refused"] > 100 and result["ok"] > 5, result  # the mutations do bite



