"""The layers hold at run time: every import, function-level ones included, points down.

    stdlib       hlodsl.stdlib       generic library functions
    transforms   hlodsl.transforms   derivatives, control flow, conversion, batching
    ops          hlodsl.ops          one class per HLO op, with its rules
    core         hlodsl.*            in rooms: runtime, arrays, ir, compilation, parallel,
                                     interchange, introspect

``hlodsl/__init__.py`` (the public face, which gathers every layer) and
``hlodsl/demo.py`` (a program written as a user would) sit above them all.
Inside the core, each room (a subpackage of ``hlodsl/``) imports only the rooms
its docstring's "May import:" line names, and the rooms stand on the floors
docs/index.md draws. The test reads the source (it runs nothing), so an import
hidden inside a function counts as much as one at the top of a module.
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


LAYER_PACKAGES = {"core": "hlodsl", "ops": "hlodsl.ops", "transforms": "hlodsl.transforms",
                  "stdlib": "hlodsl.stdlib"}


def _layer_graph(name: str) -> dict[str, set[str]]:
    """Imports between the modules of one layer, function-level ones included; the
    packages' ``__init__`` modules are left out: they gather their modules (``from .x
    import y`` names a module, not the package). Imports under ``if TYPE_CHECKING:``
    only name types for annotations: not counted."""
    inside = {m for m in MODULES if layer(m) == name and not _is_package(m)}
    return {m: {t for t, _ in imports(m, run_time_only=True) if t in inside} for m in inside}


@pytest.mark.parametrize("name", list(LAYER_PACKAGES))
def test_no_import_cycle_inside_any_layer(name):
    """Floors that only point down (docs/index.md draws the core's): within a layer,
    what a lower module needs from a higher one is handed down as a registered
    callback or looked up in a registry, never imported."""
    cycles = _cycles(_layer_graph(name))
    shown = "\n".join(" <-> ".join(c) + "\n    " + "\n    ".join(
        sorted({f"{MODULES[m].relative_to(ROOT)}:{line} imports {t}"
                for m in c for t, line in imports(m, run_time_only=True) if t in c}))
        for c in cycles)
    assert not cycles, f"import cycles inside {LAYER_PACKAGES[name]}:\n{shown}"


# -- the core's rooms ----------------------------------------------------------------------

#: The top of hlodsl/ that everything stands on (it imports no room).
BOTTOM = {"hlodsl.errors", "hlodsl.settings", "hlodsl.cache", "hlodsl.context"}
ROOMS = sorted(m for m in MODULES if m.count(".") == 1 and _is_package(m) and layer(m) == "core")


def room(module: str) -> str | None:
    """The room (``hlodsl.ir``, ...) a core module is in; None at the top of hlodsl/."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or module in ROOMS else None


def _allowed(room_name: str) -> set[str]:
    """The rooms a room's docstring allows it to import (its "May import:" sentence)."""
    doc = ast.get_docstring(ast.parse(MODULES[room_name].read_text())) or ""
    sentence = doc.split("May import:", 1)[1].split(".\n", 1)[0] if "May import:" in doc else ""
    return set(re.findall(r"\bhlodsl\.[a-z_]+", sentence)) & set(ROOMS)


def test_every_room_says_what_it_holds_and_what_it_may_import():
    assert ROOMS == ["hlodsl.arrays", "hlodsl.compilation", "hlodsl.interchange",
                     "hlodsl.introspect", "hlodsl.ir", "hlodsl.parallel", "hlodsl.runtime"]
    for r in ROOMS:
        doc = ast.get_docstring(ast.parse(MODULES[r].read_text())) or ""
        assert "May import:" in doc, f"{r}'s docstring does not say what it may import"
        held = {m.rpartition(".")[2] for m in MODULES if room(m) == r and m != r}
        missing = sorted(m for m in held if f"``{m}``" not in doc)
        assert not missing, f"{r}'s docstring does not say what {missing} hold"


def test_each_room_imports_only_what_its_docstring_allows():
    wrong = []
    for m in sorted(MODULES):
        if layer(m) != "core":
            continue
        r = room(m)
        if r is None and m not in BOTTOM:
            continue  # the face of the top (aliases, demo, launch) may import any room
        allowed = BOTTOM | ({t for t in MODULES if room(t) in _allowed(r) | {r}} if r else set())
        for t, line in imports(m, run_time_only=True):
            if layer(t) == "core" and t != "hlodsl" and t not in allowed:
                wrong.append(f"{MODULES[m].relative_to(ROOT)}:{line} ({r or 'top'}) imports {t}")
    assert not wrong, "imports a room's docstring does not allow:\n" + "\n".join(wrong)


def test_the_top_of_the_core_is_its_public_face_and_what_all_of_it_stands_on():
    top = sorted(p.stem for p in (ROOT / "hlodsl").glob("*.py"))
    assert len(top) <= 20, top
    aliases = [n for n in top if "sys.modules[__name__]" in (ROOT / "hlodsl" / f"{n}.py").read_text()]
    assert set(top) == {"__init__", "demo", "launch"} | {b.split(".")[1] for b in BOTTOM} \
        | set(aliases), top
    # An alias is the moved module itself under the path the docs name, nothing more.
    for n in aliases:
        text = (ROOT / "hlodsl" / f"{n}.py").read_text()
        assert len(text.splitlines()) <= 6, n
        import importlib
        assert importlib.import_module(f"hlodsl.{n}").__name__ != f"hlodsl.{n}", n


def test_no_module_is_over_600_lines():
    long = {str(p.relative_to(ROOT)): n for p in MODULES.values()
            if (n := len(p.read_text().splitlines())) > 600}
    assert not long, long


def _drawn_floors() -> list[set[str]]:
    """The core's floors as docs/index.md draws them, lowest first: each floor holds
    rooms (``ir/``) and top modules of hlodsl/ (``errors.py``)."""
    page = (ROOT / "docs" / "index.md").read_text()
    drawing = page.split("### The core in rooms", 1)[1].split("```")[1]
    floors = []
    for line in drawing.strip("\n").splitlines():
        body = line.split(":", 1)[-1] if "top:" in line else line
        names = {f"hlodsl.{n}" for n in re.findall(r"\b([a-z_]+)/(?!\w)", body) if n != "hlodsl"}
        names |= {f"hlodsl.{n}" for n in re.findall(r"\b([a-z_]+)\.py\b", body)}
        floors.append({"hlodsl" if n == "hlodsl.__init__" else n for n in names})
    return floors[::-1]


def test_the_core_floors_drawn_in_the_docs_hold():
    floors = _drawn_floors()
    rank = {m: i for i, floor in enumerate(floors) for m in floor}
    assert len(floors) == 7 and not set(rank) - set(MODULES), set(rank) - set(MODULES)
    core = [m for m in MODULES if layer(m) == "core" or m in APPLICATION]
    place = {m: room(m) or m for m in core}
    undrawn = sorted(m for m in core if place[m] not in rank)
    assert not undrawn, f"modules docs/index.md does not draw: {undrawn}"
    # A room imports only floors below it (not a room beside it); the top's own modules
    # import floors below theirs, and each other (no cycle: the test above).
    def wrong(m: str, t: str) -> bool:
        if t not in place or place[t] == place[m]:
            return False
        beside = rank[place[t]] == rank[place[m]] and (room(m) or room(t))
        return rank[place[t]] > rank[place[m]] or bool(beside)

    upward = [f"{MODULES[m].relative_to(ROOT)}:{line} (floor {rank[place[m]]}) imports {t} "
              f"(floor {rank[place[t]]})"
              for m in core for t, line in imports(m, run_time_only=True) if wrong(m, t)]
    assert not upward, "imports up or across the floors docs/index.md draws:\n" + "\n".join(upward)


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}, "f": set()}
    assert _cycles(graph) == [["a", "b", "c"], ["d"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_core_imports_jax_in_the_runtime_room_only():
    """The jax boundary: hlodsl/runtime/ is the one room whose modules import jax/jaxlib."""
    users = sorted({m for m in MODULES if layer(m) != "application"
                    for target in _external_imports(m) if target.split(".")[0] in ("jax", "jaxlib")})
    assert users and all(room(m) == "hlodsl.runtime" for m in users), users


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
    assert not outside, f"private jax/jaxlib names outside hlodsl.runtime.jaxlib_compat: {outside}"
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
