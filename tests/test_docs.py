"""Every example in the docs pages and in the package's docstrings runs and prints what it shows.

Docs pages (``docs/*.md``) run as ``doctest.testfile`` runs them; the modules of
the installed ``hlodsl``, ``hlodsl.ops`` and ``hlodsl.stdlib`` packages as
``doctest.testmod`` does, one test per page and per module. Modules are imported
by their ``hlodsl.`` names: importing ``ops/`` or ``stdlib/`` by file path would
load a second copy of them (and register every op twice).

Off the CPU (``HLODSL_PLATFORM=gpu``), three registries below say what the
examples cannot show there, each with its reason, and nothing passes silently:
pages and modules that need several devices skip whole; single examples of
XLA:CPU's own behaviour are taken out of their page's run and reported as a skip
of their own (``test_cpu_only_example``); pages that print emitted dots show
``hd.config``'s default precision, not the suite's "highest".
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import hlodsl as hd
from hlodsl import runtime
from hlodsl.ir import op as op_module
from hlodsl.ir.dispatcher import dispatch as DISPATCHER
from platform_rules import ON_CPU, PLATFORM

DOCS = Path(__file__).resolve().parents[1] / "docs"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
PACKAGES = ("hlodsl", "hlodsl.ops", "hlodsl.stdlib", "hlodsl.transforms")
# Pages written elsewhere that may hold no examples at all.
MAY_HAVE_NO_EXAMPLES = {"benchmarks.md"}
# Modules whose examples run what exists on a CPU only, with the reason (skipped elsewhere).
CPU_ONLY_MODULES = {"hlodsl.stdlib.lapack": "jaxlib's LAPACK kernels are XLA:CPU custom-call "
                                            "targets (stdlib/cusolver.py shows a GPU's)"}

#: Pages and modules whose examples run on several devices (a mesh, ``hd.replicated``):
#: the CPU suite has 8 (tests/conftest.py's XLA_FLAGS), a GPU machine its own GPUs.
NEEDS_DEVICES = {"sharding.md": 8, "hlodsl.arrays.sharding": 2, "hlodsl.ops.collectives": 2}

#: Examples that show XLA:CPU's own behaviour, by (page or module, a line of the
#: example's source): elsewhere they leave their page's run, and test_cpu_only_example
#: reports each as a skip with its reason.
CPU_ONLY_EXAMPLES = {
    ("safety.md", "xp.add(tiny, xp.asarray([0.0], dtype=xp.float64))"):
        "XLA:CPU reads subnormals as zero (the page's subject); GPUs keep them",
    ("safety.md", "xp.multiply(xp.asarray([1e-300]), xp.asarray([1e-10]))"):
        "XLA:CPU flushes a subnormal result to zero (the page's subject); GPUs keep it",
    ("memory.md", 'naive.memory_stats(x, v)["temp_size_in_bytes"]'):
        "XLA:GPU fuses the (n, n) kernel into the matvec's reduction: no temporary at all",
}

#: Pages that print the HLO text of dots as hlodsl emits them by default: they run
#: with ``hd.config.default_matmul_precision = "default"`` (tests/conftest.py sets
#: "highest" off the CPU, which adds ``operand_precision={highest,highest}``).
DEFAULT_PRECISION = {"introspection.md"}


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


def _page_tests(page: Path) -> list[doctest.DocTest]:
    """The page as ``doctest.testfile`` reads it: one test, globals ``__name__ == "__main__"``."""
    text = page.read_text(encoding="utf-8")
    return [doctest.DocTestParser().get_doctest(text, {"__name__": "__main__"}, page.name,
                                                str(page), 0)]


def _module_tests(name: str) -> list[doctest.DocTest]:
    """The module's tests as ``doctest.testmod`` finds them."""
    return doctest.DocTestFinder().find(importlib.import_module(name))


def _cpu_only(where: str, example: doctest.Example) -> str | None:
    """The reason ``example`` of page or module ``where`` shows XLA:CPU only, if it does."""
    for (place, line), why in CPU_ONLY_EXAMPLES.items():
        if place == where and line in example.source:
            return why
    return None


def _run(where: str, tests: list[doctest.DocTest], on_cpu: bool = ON_CPU):
    """Run the examples as doctest does, less those of XLA:CPU's own behaviour off the CPU,
    under the configuration the page shows; ``(failed, attempted)``."""
    if where in NEEDS_DEVICES and runtime.device_count() < NEEDS_DEVICES[where]:
        pytest.skip(f"needs {NEEDS_DEVICES[where]} devices (tests/conftest.py sets XLA_FLAGS)")
    runner = doctest.DocTestRunner(verbose=False, optionflags=FLAGS)
    precision = hd.config.default_matmul_precision
    if where in DEFAULT_PRECISION:
        hd.config.default_matmul_precision = "default"
    try:
        for test in tests:
            if not on_cpu:
                test.examples = [e for e in test.examples if _cpu_only(where, e) is None]
            runner.run(test)
    finally:
        hd.config.default_matmul_precision = precision
    return runner.summarize(verbose=False)


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_docs_page_examples(page: Path):
    text = page.read_text(encoding="utf-8")
    if page.name in MAY_HAVE_NO_EXAMPLES and not re.search(r"^\s*>>> ", text, re.MULTILINE):
        pytest.skip(f"{page.name} has no doctest examples")
    failed, attempted = _run(page.name, _page_tests(page))
    assert failed == 0, (f"{failed} of {attempted} examples in docs/{page.name} failed "
                         "(doctest's report is in the captured stdout)")


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name: str):
    if name in CPU_ONLY_MODULES and not ON_CPU:
        pytest.skip(f"on {PLATFORM}: {CPU_ONLY_MODULES[name]}")
    failed, attempted = _run(name, _module_tests(name))
    assert failed == 0, (
        f"{failed} of {attempted} docstring examples in {name} failed "
        "(doctest's report is in the captured stdout)")


def _examples(where: str) -> list[doctest.Example]:
    tests = _page_tests(DOCS / where) if where.endswith(".md") else _module_tests(where)
    return [e for t in tests for e in t.examples]


@pytest.mark.parametrize("key", sorted(CPU_ONLY_EXAMPLES), ids=lambda k: f"{k[0]}: {k[1]}")
def test_cpu_only_example(key):
    """Each entry still names one example (on the CPU it runs in its page); elsewhere the
    example is this skip, with its reason."""
    where, line = key
    assert sum(line in e.source for e in _examples(where)) == 1, (
        f"CPU_ONLY_EXAMPLES: no single example of {where} holds {line!r}")
    if not ON_CPU:
        pytest.skip(f"on {PLATFORM}: {CPU_ONLY_EXAMPLES[key]}")


def test_the_registries_name_pages_and_modules_that_exist():
    names = {p.name for p in DOCS.glob("*.md")} | set(_modules())
    assert set(NEEDS_DEVICES) | DEFAULT_PRECISION | {w for w, _ in CPU_ONLY_EXAMPLES} \
        | set(CPU_ONLY_MODULES) <= names


def test_a_page_of_emitted_dots_shows_the_default_precision_whatever_the_suite_sets(
        monkeypatch):
    # What a GPU run configures (tests/conftest.py), here: the page must still pass.
    monkeypatch.setattr(hd.config, "default_matmul_precision", "highest")
    failed, attempted = _run("introspection.md", _page_tests(DOCS / "introspection.md"))
    assert failed == 0 and attempted > 10
    assert hd.config.default_matmul_precision == "highest"  # restored after the page


def test_off_the_cpu_the_cpu_only_examples_leave_the_run():
    page = "safety.md"
    kept = _examples(page)
    tests = _page_tests(DOCS / page)
    runner_examples = []

    class Recording(doctest.DocTestRunner):
        def run(self, test, *args, **kwargs):
            runner_examples.extend(test.examples)
            return super().run(test, *args, **kwargs)

    real = doctest.DocTestRunner
    doctest.DocTestRunner = Recording
    try:
        failed, _ = _run(page, tests, on_cpu=False)
    finally:
        doctest.DocTestRunner = real
    dropped = [e for e in kept if _cpu_only(page, e)]
    assert len(dropped) == 2 and failed == 0
    assert len(runner_examples) == len(kept) - 2
