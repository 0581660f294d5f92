"""docs/ops.md agrees with the registry; every XLA opcode is offered or explained.

(That every registered op has a differential test is checked in tests/test_ops.py.)"""

import pathlib

import pytest

from hlodsl.ops import _catalog

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.compat
def test_docs_ops_page_is_generated_from_the_registry():
    page = (ROOT / "docs" / "ops.md").read_text()
    assert page == _catalog.render(), (
        "docs/ops.md is stale: regenerate it with "
        "`python -m hlodsl.ops._catalog > docs/ops.md`")


@pytest.mark.compat  # each jaxlib's XLA has its own opcodes
def test_every_xla_opcode_is_registered_or_explained():
    registered = set(_catalog.library_ops())
    unexplained = [op for op in _catalog.xla_opcodes()
                   if op not in registered and op not in _catalog.UNCOVERED]
    assert not unexplained, f"XLA opcodes neither offered nor explained: {unexplained}"
    assert not registered & set(_catalog.UNCOVERED), "an offered opcode is listed as uncovered"

