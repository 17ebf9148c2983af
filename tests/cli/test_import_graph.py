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
import functools
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
    """module -> the package modules it imports (a fresh copy: tests plant edges in it)."""
    return {m: set(targets) for m, targets in _import_graph().items()}


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@functools.lru_cache(maxsize=1)
def _import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(_parsed(path)):
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


# ---------------------------------------------------------------------------------------------------------------------
# Layering: data flows one way (ARCHITECTURE.md: inputs -> judgments -> neighbours -> knowledge -> bound -> calibration
# -> certified scores -> audit -> reports; "the math never imports I/O, pandas or HTTP"). A module may import its own
# layer or a lower one, never a higher one. The lists of existing offenders below may only shrink.

#: layer of each top-level name under biasbound (anything not named here is the middle layer, 3)
LAYERS = {
    # 0 foundation: errors, validation, the parameter table, directed rounding, the version
    "_exceptions": 0, "_validation": 0, "parameters": 0, "_rounding": 0, "_version": 0,
    "_names": 0,  # the one escaping of printed names; the errors' sentences use it
    # 1 the math: numpy/scipy only
    "bounds": 1, "calibration": 1, "mechanism": 1, "sensitivity": 1, "audit": 1, "figures": 1,
    # 2 the certificate: the record, its schema, verify()
    "certificate": 2,
    # 3 (default) inputs, neighbours, judges, leaderboard, judge card, reports, testing tools
    # 4 orchestration: one certification along the data flow, the runner, its config, the planner
    "pipeline": 4, "runner": 4, "config": 4, "planning": 4,
    # 5 the front: commands, the CLI, the package root (it re-exports everything)
    "commands": 5, "cli": 5, "__main__": 5,
}
MIDDLE = 3
#: modules of a middle folder that are front ends like the CLI: the pytest plugin and the regression check drive
#: ``compare`` as a user's test suite does, and the testing package re-exports the regression check
FRONT_MODULES = {"biasbound.testing", "biasbound.testing.pytest_plugin", "biasbound.testing.regression"}
MATH = {name for name, layer in LAYERS.items() if layer == 1}
#: third-party packages the math may import (besides the standard library)
MATH_DEPENDENCIES = {"numpy", "scipy"}
#: readers and input helpers never import the analysis built on what they read (data/ is the one door for inputs;
#: integrations/ holds the inspect_ai scorer and style control, which read no analysis either)
READERS = {"data", "integrations"}
#: the one door for inputs (issue 25): format detection, the reading options and every reader are defined in data/
INPUT_DOOR = "data"
INPUT_ROUTES = {"detect_format", "load_inputs", "load", "load_table", "load_llmbar", "load_battles", "load_mt_bench",
                "load_alpaca_eval", "load_arena_hard", "load_inspect_log", "parse_columns", "parse_scale",
                "parse_score_map"}
ANALYSIS = {"leaderboard", "card", "planning", "report"}

#: upward edges that exist today (each a small move away; see docs/DESIGN.md "Gates and the documentation site")
UPWARD_OFFENDERS = {
    ("biasbound.card", "biasbound.pipeline._neighbors"),  # card's neighbour merge reuses the pipeline's neighbor_key_codes
}
READER_OFFENDERS = {
    ("biasbound.data.arena_hard", "biasbound.leaderboard"),  # the Arena-Hard reader computes arena_hard_score with it
}
#: private names (``_x``) imported from another folder of the package, as (importing module, source module, name):
#: none since the judgment-table engine's helpers got their public names (issue 25, item 1); keep it empty
PRIVATE_OFFENDERS: set[tuple[str, str, str]] = set()


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1 or module in FRONT_MODULES:
        return 5  # the package root, and the front ends outside commands/
    return LAYERS.get(parts[1], MIDDLE)


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward_edges(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a in graph for b in graph[a] if layer(b) > layer(a)}


def _imports(path: Path) -> list[ast.Import | ast.ImportFrom]:
    return [n for n in ast.walk(_parsed(path))
            if isinstance(n, (ast.Import, ast.ImportFrom))]


def private_imports_across_folders() -> set[tuple[str, str, str]]:
    """(module, source module, name) for every ``from biasbound.x import _name`` whose source is in another folder."""
    modules = _modules()
    found = set()
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        folder = module if is_package else module.rpartition(".")[0]
        for node in _imports(path):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _absolute(node, module, is_package)
            if not base.startswith(PACKAGE):
                continue
            src_folder = base if base in modules and modules[base].name == "__init__.py" else base.rpartition(".")[0]
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") and src_folder != folder:
                    found.add((module, base, alias.name))
    return found


def test_layers_point_one_way():
    edges = upward_edges(import_graph())
    new = sorted(edges - UPWARD_OFFENDERS)
    assert not new, "imports against the data flow (a module imports a higher layer):\n" + "\n".join(
        f"{a} (layer {layer(a)}) -> {b} (layer {layer(b)})" for a, b in new)
    gone = sorted(UPWARD_OFFENDERS - edges)
    assert not gone, f"fixed, so take them off UPWARD_OFFENDERS: {gone}"


def test_a_planted_upward_import_is_found():
    graph = import_graph()
    graph["biasbound.calibration"] = graph["biasbound.calibration"] | {"biasbound.pipeline._certify"}
    graph["biasbound.certificate"] = graph["biasbound.certificate"] | {"biasbound"}
    assert {("biasbound.calibration", "biasbound.pipeline._certify"), ("biasbound.certificate", "biasbound")} <= \
        upward_edges(graph)


def test_the_math_imports_numpy_and_scipy_only():
    import sys

    bad = []
    for module, path in _modules().items():
        if _top(module) not in MATH:
            continue
        for node in _imports(path):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if node.level == 0 else []
            for name in names:
                root = name.split(".")[0]
                if root == PACKAGE:
                    target = _resolve(name, _modules())
                    if target is not None and layer(target) > 1:
                        bad.append(f"{module} imports {target}")
                elif root not in MATH_DEPENDENCIES and root not in sys.stdlib_module_names:
                    bad.append(f"{module} imports {name}")
    assert not bad, "the math imports numpy/scipy and the foundation only:\n" + "\n".join(bad)


def test_readers_never_import_the_analysis():
    graph = import_graph()
    edges = {(a, b) for a in graph for b in graph[a] if _top(a) in READERS and _top(b) in ANALYSIS}
    assert edges <= READER_OFFENDERS, f"readers importing the analysis: {sorted(edges - READER_OFFENDERS)}"
    assert READER_OFFENDERS <= edges, f"fixed, so take them off READER_OFFENDERS: {sorted(READER_OFFENDERS - edges)}"


def test_no_new_private_name_crosses_a_folder():
    found = private_imports_across_folders()
    new = sorted(found - PRIVATE_OFFENDERS)
    assert not new, "private names imported from another folder (give them a public name):\n" + "\n".join(map(str, new))
    gone = sorted(PRIVATE_OFFENDERS - found)
    assert not gone, f"no longer imported, so take them off PRIVATE_OFFENDERS: {gone}"


def input_routes_outside_the_door() -> list[str]:
    """``module.function`` for every input route (detection, reading options, a format reader) defined outside data/."""
    found = []
    for module, path in _modules().items():
        if _top(module) == INPUT_DOOR:
            continue
        for node in _parsed(path).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in INPUT_ROUTES:
                found.append(f"{module}.{node.name}")
    return found


def test_inputs_have_one_door():
    found = input_routes_outside_the_door()
    assert not found, "input detection, reading options and readers live in biasbound.data only:\n" + "\n".join(found)
    inside = {node.name for module, path in _modules().items() if _top(module) == INPUT_DOOR
              for node in _parsed(path).body if isinstance(node, ast.FunctionDef)}
    assert INPUT_ROUTES <= inside, f"routes the door lacks (renamed? update INPUT_ROUTES): {sorted(INPUT_ROUTES - inside)}"
