"""mkdocs hooks for the documentation site (``hooks:`` in mkdocs.yml; not a page).

What plain mkdocs configuration cannot say:

- **The API reference's source tree.** ``hlodsl.ops``, ``hlodsl.stdlib`` and
  ``hlodsl.transforms`` live in the top-level folders ``ops/``, ``stdlib/`` and
  ``transforms/`` (pyproject's ``[tool.setuptools.package-dir]``). griffe, which
  mkdocstrings uses, looks for a package's modules in its folder, finds
  ``hlodsl/`` but not those folders inside it, so the hook lays out
  ``build/api-src/hlodsl`` as the installed package looks: links to
  ``hlodsl/``'s entries plus one per mapped subpackage, read from
  pyproject.toml so a new mapping needs no edit here.
- **Whole packages in the API reference.** A line ``::: hlodsl.ops.*`` in a
  page of ``docs/api/`` stands for one mkdocstrings directive per public module
  of that package (sorted; options indented under the line apply to each),
  found in the source tree, so a new module is documented without an edit. A
  module that another page of ``docs/api/`` names in a directive of its own
  (as ``::: hlodsl.stdlib.linalg``) is left to that page.
- **The notebooks.** ``notebooks/*.ipynb`` sit outside ``docs/``; every one of
  them is added to the site (rendered by mkdocs-jupyter from its stored outputs,
  never executed) and to a "Notebooks" section of the navigation, by glob, so a
  new notebook appears without editing mkdocs.yml.

And, for mkdocstrings, ``FenceDoctests``: a griffe extension (``extensions:`` in
mkdocs.yml) that shows the docstrings' doctest examples as Python code. Our
docstrings hold examples in their text, not under a Google ``Examples:``
heading, and Markdown would read ``>>>`` as nested quotes and an output such as
``Array[float32, (2,)]([1., 2.])`` as a link. It also tidies what inspecting
the imported modules finds (mkdocs.yml says why the reference inspects).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import griffe
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

try:
    import tomllib
except ImportError:  # Python 3.10: the docs extra installs tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
API_SRC = ROOT / "build" / "api-src"
NOTEBOOKS = ROOT / "notebooks"
API_PAGES = ROOT / "docs" / "api"
_DIRECTIVE = re.compile(r"^::: *([\w.]+) *$", re.MULTILINE)
_GLOB = re.compile(r"^::: *([\w.]+)\.\* *\n((?:[ \t]+\S.*\n)*)", re.MULTILINE)


def _link(target: Path, link: Path) -> None:
    """Point ``link`` at ``target``, leaving a correct link alone (concurrent builds)."""
    if link.is_symlink() and Path(os.readlink(link)) == target:
        return
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target, target_is_directory=target.is_dir())


def lay_out_api_sources() -> Path:
    """Build ``build/api-src/hlodsl`` mirroring the installed package; returns its parent."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_dir = mapping["tool"]["setuptools"]["package-dir"]
    top = API_SRC / "hlodsl"
    top.mkdir(parents=True, exist_ok=True)
    wanted = {entry.name: entry for entry in (ROOT / package_dir["hlodsl"]).iterdir()
              if entry.name != "__pycache__"}
    for name, folder in package_dir.items():
        if name.startswith("hlodsl."):
            wanted[name.removeprefix("hlodsl.")] = ROOT / folder
    for stale in top.iterdir():
        if stale.name not in wanted:
            stale.unlink()
    for name, target in wanted.items():
        _link(target, top / name)
    return API_SRC


def _notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def _title(notebook: Path) -> str:
    """The notebook's first Markdown heading, else its file name."""
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].replace("`", "").strip()  # nav titles are plain text
    return notebook.stem


# Before mkdocstrings' own on_config, which may start its Python handler and fix
# its search paths to the folders that exist then.
@event_priority(100)
def on_config(config):
    lay_out_api_sources()
    section = [{_title(nb): f"notebooks/{nb.name}"} for nb in _notebooks()]
    if section:
        config.nav.append({"Notebooks": section})
    return config


def public_modules(package: str) -> list[str]:
    """The public modules and subpackages of ``package`` (dotted), from the laid-out sources.

    >>> "hlodsl.ops.dot" in public_modules("hlodsl.ops")
    True
    """
    folder = lay_out_api_sources().joinpath(*package.split("."))
    names = [entry.stem for entry in folder.iterdir()
             if not entry.name.startswith("_")
             and (entry.suffix == ".py" or (entry / "__init__.py").exists())]
    return [f"{package}.{name}" for name in sorted(names)]


def expand_module_globs(markdown: str, documented_elsewhere: set[str]) -> str:
    """Replace each ``::: package.*`` line (and its options) by one directive per module.

    >>> print(expand_module_globs("::: hlodsl.stdlib.nn.*\\n    options: {}\\n",
    ...                           {"hlodsl.stdlib.nn.init"}).splitlines()[:4])
    ['::: hlodsl.stdlib.nn.activations', '    options: {}', '', '::: hlodsl.stdlib.nn.attention']
    """
    def expand(match: re.Match) -> str:
        modules = [m for m in public_modules(match[1]) if m not in documented_elsewhere]
        return "\n".join(f"::: {module}\n{match[2]}" for module in modules)

    return _GLOB.sub(expand, markdown)


def on_page_markdown(markdown, page, config, files):
    if not page.file.src_uri.startswith("api/"):
        return markdown
    elsewhere = {name for other in API_PAGES.glob("*.md")
                 if other.name != Path(page.file.src_uri).name
                 for name in _DIRECTIVE.findall(other.read_text(encoding="utf-8"))}
    return expand_module_globs(markdown, elsewhere)


# Before mkdocs-jupyter's on_files, which turns the notebooks it finds into pages.
@event_priority(100)
def on_files(files, config):
    for notebook in _notebooks():
        files.append(File(f"notebooks/{notebook.name}", src_dir=str(ROOT),
                          dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
    return files


_DOCTEST_FLAGS = re.compile(r"\s*#\s*doctest:.+$")
# A few docstrings use Sphinx roles (:func:`hlodsl.arrays.array`): shown as code.
_SPHINX_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):`~?([^`]+)`")


def fence_doctests(text: str) -> str:
    """Put each run of doctest lines (``>>>`` to the next blank line) in a ```` ```pycon ```` fence.

    Sphinx roles (``:func:`name```) become plain code (```name```).

    >>> fence_doctests("Text.\\n\\n>>> 1 + 1  # doctest: +SKIP\\n2\\n\\nMore.").splitlines()
    ['Text.', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'More.']
    """
    out: list[str] = []
    fence = None  # the indentation of the open doctest block
    in_code = False  # inside a fence the docstring wrote itself
    for line in text.split("\n"):
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if fence is not None and not stripped:
            out.append(f"{fence}```")
            fence = None
        if fence is None and stripped.startswith("```"):
            in_code = not in_code
        elif fence is None and not in_code and stripped.startswith(">>>"):
            fence = indent
            out.append(f"{indent}```pycon")
        if fence is not None:
            line = _DOCTEST_FLAGS.sub("", line).replace("<BLANKLINE>", "")
        out.append(line)
    if fence is not None:
        out.append(f"{fence}```")
    return _SPHINX_ROLE.sub(r"`\1`", "\n".join(out))


class FenceDoctests(griffe.Extension):
    """Griffe extension: fence every docstring's doctest examples as it is loaded.

    It also drops the special members (``__doc__``, ``__slots__``, an attrs
    ``__init__``, ...) that inspecting a class finds: the ``public`` filter
    counts them as public, and a reader of the reference never needs them.
    """

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)

    def on_attribute_instance(self, *, node, attr: griffe.Attribute, **kwargs) -> None:
        # Inspected, ``opcode = "dot"`` gets str's docstring: the value's type's, not its own.
        value = getattr(node, "obj", None)
        if attr.docstring is not None and getattr(value, "__doc__", None) == getattr(
                type(value), "__doc__", None):
            attr.docstring = None

    def on_class_members(self, *, cls: griffe.Class, **kwargs) -> None:
        for name in [n for n in cls.members if n.startswith("__") and n.endswith("__")]:
            del cls.members[name]
