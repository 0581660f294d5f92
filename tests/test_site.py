"""The documentation site (mkdocs.yml) covers every page, and builds with ``--strict``.

The navigation checks need nothing beyond the test extra: a page added to
``docs/`` without an entry in mkdocs.yml's ``nav`` fails here, not only in the
site build. The build itself needs the docs extra (``pip install -e '.[docs]'``)
and is skipped without it; .ci/run installs that extra and runs the same
``mkdocs build --strict`` after the tests, so CI never skips it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MKDOCS_YML = ROOT / "mkdocs.yml"


def _nav_pages() -> list[str]:
    """The ``.md`` paths under mkdocs.yml's ``nav:`` (up to the next top-level key).

    Read as text, not YAML: the test extra has no YAML parser, and the nav is a
    plain list of ``- page.md`` and ``- Title: page.md`` entries.
    """
    text = MKDOCS_YML.read_text(encoding="utf-8")
    nav = re.search(r"^nav:\n((?:[ \t#].*\n|\n)*)", text, re.MULTILINE)
    assert nav, "mkdocs.yml has no nav: section"
    return re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?(\S+\.md)\s*$", nav[1], re.MULTILINE)


def test_every_docs_page_is_in_the_nav():
    pages = set(_nav_pages())
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    missing = sorted(on_disk - pages)
    assert not missing, (
        f"docs pages not in mkdocs.yml's nav: {missing}; add each under nav: "
        "(a guide page under Guide, an API page under API reference)")


def test_every_nav_entry_is_a_page():
    stale = sorted(p for p in _nav_pages() if not (DOCS / p).is_file())
    assert not stale, f"mkdocs.yml's nav names pages that do not exist in docs/: {stale}"
    assert len(_nav_pages()) == len(set(_nav_pages())), "a page is in mkdocs.yml's nav twice"


def test_docs_extra_is_not_a_runtime_dependency():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    runtime = re.search(r"^dependencies = \[(.*?)\]", text, re.MULTILINE | re.DOTALL)[1]
    assert not re.search(r"mkdocs|griffe", runtime), runtime
    assert re.search(r"^docs = \[", text, re.MULTILINE), "pyproject.toml has no docs extra"


needs_mkdocs = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("mkdocs", "mkdocstrings", "mkdocs_jupyter")),
    reason="the docs extra is not installed (pip install -e '.[docs]'); "
           ".ci/run installs it and runs `mkdocs build --strict` itself")


@needs_mkdocs
def test_site_hooks_examples():
    import doctest

    spec = importlib.util.spec_from_file_location("hlodsl_site_hooks", DOCS / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    results = doctest.testmod(hooks, optionflags=doctest.ELLIPSIS, verbose=False)
    assert results.attempted >= 3 and results.failed == 0, results


@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, (
        "mkdocs build --strict failed (a broken link or anchor, a page missing from the nav, "
        "or a docstring mkdocstrings cannot read):\n" + (run.stdout + run.stderr)[-6000:])
    return site


@needs_mkdocs
def test_site_builds_strictly_with_every_page_and_notebook(built_site: Path):
    for page in _nav_pages():
        # docs/x.md -> x/index.html; docs/index.md and docs/api/index.md -> (api/)index.html
        stem = Path(page).with_suffix("")
        html = built_site / (stem.parent if stem.name == "index" else stem) / "index.html"
        assert html.is_file(), f"docs/{page} was not rendered to {html}"
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        html = built_site / "notebooks" / notebook.stem / "index.html"
        assert html.is_file(), f"notebooks/{notebook.name} was not rendered to {html}"
        assert "jp-Cell" in html.read_text(encoding="utf-8"), f"{html} holds no notebook cells"


@needs_mkdocs
def test_api_reference_documents_every_op_module(built_site: Path):
    html = (built_site / "api" / "ops" / "index.html").read_text(encoding="utf-8")
    modules = sorted(p.stem for p in (ROOT / "ops").glob("*.py") if not p.name.startswith("_"))
    missing = [m for m in modules if f'id="hlodsl.ops.{m}"' not in html]
    assert not missing, f"the API reference's ops page has no section for {missing}"
    assert 'id="hlodsl.ops.dot.Dot"' in html  # a module's section lists its ops
