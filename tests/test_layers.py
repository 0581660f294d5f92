"""The layers hold at run time: every import, function-level ones included, points down.

    stdlib       hlodsl.stdlib       generic library functions
    transforms   hlodsl.transforms   derivatives, control flow, conversion, batching
    ops          hlodsl.ops          one class per HLO op, with its rules
    core         hlodsl.*            arrays, HloOp, rule generics, staging, printing, runtime

``hlodsl/__init__.py`` (the public face, which gathers every layer) and
``hlodsl/demo.py`` (a program written as a user would) sit above them all. The
test reads the source (it runs nothing), so an import hidden inside a function
counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"hlodsl": ROOT / "hlodsl", "hlodsl.ops": ROOT / "ops",
            "hlodsl.transforms": ROOT / "transforms", "hlodsl.stdlib": ROOT / "stdlib"}
RANK = {"core": 0, "ops": 1, "transforms": 2, "stdlib": 3, "application": 4}
APPLICATION = {"hlodsl", "hlodsl.demo"}


def _modules() -> dict[str, Path]:
    """Every module of the installed packages, by its dotted name."""
    out = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def layer(module: str) -> str:
    if module in APPLICATION:
        return "application"
    for name in ("stdlib", "transforms", "ops"):
        if module == f"hlodsl.{name}" or module.startswith(f"hlodsl.{name}."):
            return name
    return "core"


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Ids of the nodes under ``if TYPE_CHECKING:``, which only a type checker runs."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def imports(module: str, run_time_only: bool = False) -> list[tuple[str, int]]:
    """The hlodsl modules ``module`` imports anywhere in its source, with line numbers
    (``run_time_only``: leaving out those under ``if TYPE_CHECKING:``, which name
    types for annotations and never run)."""
    tree = ast.parse(MODULES[module].read_text())
    base = module if _is_package(module) else module.rpartition(".")[0]
    skip = _type_checking_only(tree) if run_time_only else set()
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base.rsplit(".", node.level - 1)[0] if node.level > 1 else base
                target = f"{anchor}.{node.module}" if node.module else anchor
            else:
                target = node.module
            for a in node.names:
                sub = f"{target}.{a.name}"
                found.append((sub if sub in MODULES else target, node.lineno))
    return [(m, line) for m, line in found if m in MODULES or m == "hlodsl"]


def test_the_layer_map_knows_every_module():
    assert {layer(m) for m in MODULES} == set(RANK)
    for package in ("hlodsl.ops", "hlodsl.transforms", "hlodsl.stdlib"):
        assert importlib.util.find_spec(package) is not None


def test_every_import_points_down_or_sideways():
    upward = []
    for module in sorted(MODULES):
        for target, line in imports(module):
            if RANK[layer(target)] > RANK[layer(module)]:
                upward.append(f"{MODULES[module].relative_to(ROOT)}:{line} ({layer(module)}) "
                              f"imports {target} ({layer(target)})")
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def test_no_import_cycle_crosses_a_layer():
    # Edges to modules outside the graph (the bare package) cannot close a cycle.
    graph = {m: {t for t, _ in imports(m) if t in MODULES} for m in MODULES}
    # A cycle between layers would need an upward edge, which the test above
    # forbids; check it directly too, by the strongly connected components.
    mixed = [c for c in _cycles(graph) if len({layer(m) for m in c}) > 1]
    assert not mixed, f"import cycles across layers: {mixed}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: each strongly connected component of more than
    one module, and each module that imports itself, sorted (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, edges = work[-1]
            for w in edges:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1 or v in graph[v]:
                        found.append(sorted(comp))
    return sorted(found)


def _package_graph(package: str) -> dict[str, set[str]]:
    """Imports between the modules of ``package`` itself (its subpackages are other
    graphs), function-level ones included; a package's ``__init__`` is left out: it
    gathers its modules (``from .x import y`` names a module, not the package).
    Imports under ``if TYPE_CHECKING:`` only name types for annotations: not counted."""
    inside = {m for m in MODULES if m.rpartition(".")[0] == package and not _is_package(m)}
    return {m: {t for t, _ in imports(m, run_time_only=True) if t in inside} for m in inside}


@pytest.mark.parametrize("package", ["hlodsl", "hlodsl.ops"])
def test_no_import_cycle_inside_the_core_or_the_ops(package):
    """Floors that only point down (docs/index.md draws them): within the core and
    within ``ops/``, what a lower module needs from a higher one is handed down as a
    registered callback or looked up in a registry, never imported."""
    cycles = _cycles(_package_graph(package))
    shown = "\n".join(" <-> ".join(c) + "\n    " + "\n    ".join(
        sorted({f"{MODULES[m].relative_to(ROOT)}:{line} imports {t}"
                for m in c for t, line in imports(m, run_time_only=True) if t in c}))
        for c in cycles)
    assert not cycles, f"import cycles inside {package}:\n{shown}"


def _drawn_floors() -> list[list[str]]:
    """The core's floors as docs/index.md draws them, lowest first: each line of the
    drawing names its modules (``x.py``; the bottom line, bare names)."""
    page = (ROOT / "docs" / "index.md").read_text()
    drawing = page.split("### Floors inside the core", 1)[1].split("```")[1]
    floors = []
    for line in drawing.strip("\n").splitlines():
        names = re.findall(r"\b([a-z_]+)\.py\b", line) or re.findall(r"[a-z_]+", line)
        floors.append([f"hlodsl.{n}" for n in names])
    return floors[::-1]


def test_the_core_floors_drawn_in_the_docs_hold():
    floors = _drawn_floors()
    rank = {m: i for i, floor in enumerate(floors) for m in floor}
    assert len(floors) > 10 and not set(rank) - set(MODULES), set(rank) - set(MODULES)
    upward = [f"{MODULES[m].relative_to(ROOT)}:{line} (floor {rank[m]}) imports {t} "
              f"(floor {rank[t]})" for m in rank for t, line in imports(m, run_time_only=True)
              if t in rank and rank[t] > rank[m]]
    assert not upward, "imports up the floors docs/index.md draws:\n" + "\n".join(upward)


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}, "f": set()}
    assert _cycles(graph) == [["a", "b", "c"], ["d"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_core_imports_jax_in_the_runtime_and_its_compat_module_only():
    users = sorted({m for m in MODULES if layer(m) != "application"
                    for target in _external_imports(m) if target.split(".")[0] in ("jax", "jaxlib")})
    assert users == ["hlodsl.runtime.jaxlib_compat", "hlodsl.runtime"], users


# A private jax/jaxlib name: a dotted path from jax, jaxlib or a module alias of them
# (xc, lapack, ...) through a component with a leading underscore, or a private keyword
# argument of a jaxlib function.
_PRIVATE = re.compile(r"\b(?:jax|jaxlib|xc|xla_client|lapack|xla_bridge)(?:\.\w+)*\._(?!_)\w+"
                      r"|\b_skip_checks\b")


@pytest.mark.compat
def test_private_jax_names_are_reached_only_through_jaxlib_compat():
    """A private jax/jaxlib name can move in any release: each is listed, with its
    fallback, in hlodsl.runtime.jaxlib_compat.PRIVATE_NAMES and looked up there only."""
    from hlodsl.runtime import jaxlib_compat

    outside = {m: sorted(set(_PRIVATE.findall(_code(m)))) for m in MODULES
               if m != "hlodsl.runtime.jaxlib_compat"}
    outside = {m: names for m, names in outside.items() if names}
    assert not outside, f"private jax/jaxlib names outside hlodsl.jaxlib_compat: {outside}"
    looked_up = set(re.findall(r"""private\(['"]([^'"]+)['"]\)""", "".join(_code(m) for m in MODULES)))
    assert looked_up | {"jaxlib.xla_client.array_result_handler(_skip_checks=)"} \
        == set(jaxlib_compat.PRIVATE_NAMES)
    # The compat module's own code names no private attribute except through private(),
    # and the one keyword argument it probes.
    direct = set(_PRIVATE.findall(_code("hlodsl.runtime.jaxlib_compat", strings=False))) \
        - {"_skip_checks"}
    assert not direct, direct


@pytest.mark.compat
def test_every_private_jax_name_exists_in_the_installed_release():
    """Run on each stack of .ci/run's compatibility job: a release that dropped one of
    them shows here (the fallback keeps hlodsl working; the list must be updated)."""
    from hlodsl.runtime import jaxlib_compat

    missing = [n for n, ok in jaxlib_compat.available().items() if not ok and "(" not in n]
    assert not missing, missing


def _code(module: str, strings: bool = True) -> str:
    """A module's source without comments and docstrings (which may name anything),
    and without any string constant unless ``strings``."""
    tree = ast.parse(MODULES[module].read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body[0] = ast.Pass()
        if not strings and isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.unparse(tree)


def _external_imports(module: str) -> list[str]:
    tree = ast.parse(MODULES[module].read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.append(node.module)
    return out
