"""The import graph of src/biasbound has no circles.

Every module under src/biasbound is parsed (ast); every ``import`` and ``from ... import`` it holds
counts, at module level and inside functions alike (a function-level import is still a dependency,
only a late one). A package's ``__init__`` is the package. ``from pkg import name`` is an edge to
``pkg.name`` when that is a module of the package, else to ``pkg``. Importing a module is not counted
as importing its parent packages (Python runs their ``__init__`` first, but that is how packages work,
not a design choice). The test fails on any cycle and prints it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import graphlib

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "biasbound"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest module of the package that ``name`` names (``a.b.c`` → ``a.b`` if c is an attribute)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, module, is_package)
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                if not target.startswith(PACKAGE):
                    continue
                resolved = _resolve(target, modules)
                if resolved is not None and resolved != module:
                    graph[module].add(resolved)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected group of more than one module (scipy), shown as a path."""
    names = sorted(graph)
    index = {n: i for i, n in enumerate(names)}
    rows = [index[a] for a in names for b in graph[a]]
    cols = [index[b] for a in names for b in graph[a]]
    matrix = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    found = []
    for label in sorted(set(labels)):
        group = {names[i] for i in np.flatnonzero(labels == label)}
        if len(group) < 2:
            continue
        sub = {a: graph[a] & group for a in group}
        try:
            graphlib.TopologicalSorter(sub).prepare()
        except graphlib.CycleError as exc:
            found.append([*exc.args[1], f"(all {len(group)} modules of the circle: {', '.join(sorted(group))})"])
    return found


def test_the_graph_sees_the_package():
    graph = import_graph()
    # a package is its __init__, a module-level edge, a function-level edge (certificate loads the calibrator
    # inside a function), and the walk covers the package
    assert "biasbound.bounds" in graph and "biasbound.bounds.__init__" not in graph and len(graph) > 50
    assert "biasbound.bounds._knowledge" in graph["biasbound.bounds.moments"]
    assert "biasbound.calibration" in graph["biasbound.certificate"]


def test_a_planted_circle_is_found():
    graph = import_graph()
    graph["biasbound._exceptions"] = graph["biasbound._exceptions"] | {"biasbound.bounds.moments"}
    assert circles(graph), "the circle finder must see a planted circle"


def test_no_import_circles_in_src():
    # abb <-> calibration <-> bounds and cli <-> commands.run were the circles before the calibration route moved
    found = circles(import_graph())
    if found:
        shown = "\n".join(" -> ".join(c) for c in found)
        pytest.fail(f"{len(found)} import circles in src/biasbound:\n{shown}")
