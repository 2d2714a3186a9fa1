"""The package's shape: no import circles, and the layer contracts of pyproject.toml hold.

Every import counts, including those inside functions and under TYPE_CHECKING: a circle of
type-only imports still ties the modules together for a reader and for the next refactor.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

_ROOT = Path(__file__).resolve().parents[1]


def import_circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """One circle per strongly connected group of modules, as a closed path a -> ... -> a."""
    modules = sorted(graph.modules)
    successors = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    groups = sorted(_strongly_connected(modules, successors))
    circles = []
    for group in groups:
        start = group[0]
        # the shortest way back to `start` through one of its successors in the group
        paths = [graph.find_shortest_chain(importer=nxt, imported=start)
                 for nxt in successors[start] if nxt in group]
        shortest = min((p for p in paths if p), key=len)
        circles.append([start, *shortest])
    return circles


def _strongly_connected(
    modules: list[str], successors: dict[str, list[str]]
) -> list[list[str]]:
    """Tarjan's groups of more than one module (or a module importing itself), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            nexts = successors.get(node, [])
            if child < len(nexts):
                work.append((node, child + 1))
                nxt = nexts[child]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in nexts:
                    groups.append(sorted(group))
    return groups


def test_import_circles_are_found_and_named() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d"),
                               ("p.d", "p.e"), ("p.e", "p.d"), ("p.f", "p.a")]:
        graph.add_import(importer=importer, imported=imported)
    assert import_circles(graph) == [["p.a", "p.b", "p.c", "p.a"], ["p.d", "p.e", "p.d"]]


def test_a_graph_without_circles_has_none() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.a", "p.c")]:
        graph.add_import(importer=importer, imported=imported)
    assert import_circles(graph) == []


def test_ragsift_has_no_import_circles() -> None:
    graph = grimp.build_graph("ragsift", cache_dir=None)
    circles = [" -> ".join(circle) for circle in import_circles(graph)]
    assert not circles, "import circles in src/ragsift:\n" + "\n".join(circles)


def test_layer_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    if not lint_imports.exists():
        pytest.fail("lint-imports is not installed (pip install -e '.[dev]')")
    done = subprocess.run(
        [str(lint_imports), "--config", str(_ROOT / "pyproject.toml"), "--no-cache"],
        cwd=_ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
