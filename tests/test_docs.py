"""Every example in the docs pages and in the package's docstrings runs and prints what it shows.

Docs pages (``docs/*.md``) run with ``doctest.testfile``; the modules of the
installed ``hlodsl``, ``hlodsl.ops`` and ``hlodsl.stdlib`` packages with
``doctest.testmod``, one test per page and per module. Modules are imported by
their ``hlodsl.`` names: importing ``ops/`` or ``stdlib/`` by file path would
load a second copy of them (and register every op twice).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

from hlodsl.ir import op as op_module
from hlodsl.ir.dispatcher import dispatch as DISPATCHER

DOCS = Path(__file__).resolve().parents[1] / "docs"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
PACKAGES = ("hlodsl", "hlodsl.ops", "hlodsl.stdlib", "hlodsl.transforms")
# Pages written elsewhere that may hold no examples at all.
MAY_HAVE_NO_EXAMPLES = {"benchmarks.md"}
# Modules whose examples run what exists on a CPU only, with the reason (skipped elsewhere).
CPU_ONLY_MODULES = {"hlodsl.stdlib.lapack": "jaxlib's LAPACK kernels are XLA:CPU custom-call "
                                            "targets (stdlib/cusolver.py shows a GPU's)"}


def _modules() -> list[str]:
    names = set()
    for package in PACKAGES:
        pkg = importlib.import_module(package)
        names.add(package)
        for info in pkgutil.walk_packages(pkg.__path__, prefix=package + "."):
            names.add(info.name)
    return sorted(names)


def _is_library_generic(function) -> bool:
    return (getattr(function, "__module__", None) or "").startswith("hlodsl.")


@pytest.fixture(autouse=True)
def _isolated_registries():
    """Examples see only the library's generics, and leave no ops or generics behind.

    plum's ``Dispatcher`` keys generics by function name, so a ``describe`` that
    another test defined with ``@hd.dispatch`` would merge with the ``describe``
    of docs/dispatch.md (and the other way round). The examples also register
    ops (``class Reverse(HloOp, opcode="reverse")``) that a test walking the op
    registry must not find.
    """
    ops_before = dict(op_module._REGISTRY)
    generics_before = dict(DISPATCHER.functions)
    DISPATCHER.functions.clear()
    DISPATCHER.functions.update(
        {name: f for name, f in generics_before.items() if _is_library_generic(f)})
    yield
    op_module._REGISTRY.clear()
    op_module._REGISTRY.update(ops_before)
    DISPATCHER.functions.clear()
    DISPATCHER.functions.update(generics_before)


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_docs_page_examples(page: Path):
    text = page.read_text(encoding="utf-8")
    if page.name in MAY_HAVE_NO_EXAMPLES and not re.search(r"^\s*>>> ", text, re.MULTILINE):
        pytest.skip(f"{page.name} has no doctest examples")
    results = doctest.testfile(str(page), module_relative=False, optionflags=FLAGS,
                               encoding="utf-8", raise_on_error=False, verbose=False)
    assert results.failed == 0, (
        f"{results.failed} of {results.attempted} examples in docs/{page.name} failed "
        "(doctest's report is in the captured stdout)")


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name: str):
    from hlodsl import runtime

    if name in CPU_ONLY_MODULES and runtime.platform() != "cpu":
        pytest.skip(f"on {runtime.platform()}: {CPU_ONLY_MODULES[name]}")
    module = importlib.import_module(name)
    results = doctest.testmod(module, optionflags=FLAGS, raise_on_error=False, verbose=False)
    assert results.failed == 0, (
        f"{results.failed} of {results.attempted} docstring examples in {name} failed "
        "(doctest's report is in the captured stdout)")
