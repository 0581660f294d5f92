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
from pathlib import Path

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


def imports(module: str) -> list[tuple[str, int]]:
    """The hlodsl modules ``module`` imports anywhere in its source, with line numbers."""
    tree = ast.parse(MODULES[module].read_text())
    base = module if _is_package(module) else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
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
    graph = {m: {t for t, _ in imports(m)} for m in MODULES}
    # A cycle between layers would need an upward edge, which the test above
    # forbids; check it directly too, by the strongly connected components.
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            comps.append(comp)

    for v in graph:
        if v not in index:
            visit(v)
    mixed = [sorted(c) for c in comps if len({layer(m) for m in c}) > 1]
    assert not mixed, f"import cycles across layers: {mixed}"


def test_the_core_imports_jax_in_one_module_only():
    users = sorted({m for m in MODULES if layer(m) != "application"
                    for target in _external_imports(m) if target.split(".")[0] in ("jax", "jaxlib")})
    assert users == ["hlodsl.runtime"], users


def _external_imports(module: str) -> list[str]:
    tree = ast.parse(MODULES[module].read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.append(node.module)
    return out
