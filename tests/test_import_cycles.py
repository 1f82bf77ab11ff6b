"""No module of `app` imports itself back, however far round: a circle is what forces a deferred
import or a record kept in the wrong module, and it breaks the day someone moves an import.

An edge is an import as Python runs it: the module named, and each package it lies in that the
importer is not inside already (`from app.services.encounters import shown` runs
`app/services/encounters/__init__.py` first, so whatever that imports is on the way too). Imports
inside functions and under `if TYPE_CHECKING:` count: hiding an import does not remove the circle.
The layers contract (.importlinter) keeps layers apart; this keeps each layer's modules acyclic."""

from __future__ import annotations

from collections import deque
from itertools import pairwise
from collections.abc import Iterable

import grimp


def _packages_run(importer: str, imported: str, modules: set[str]) -> set[str]:
    """The packages whose `__init__` importing `imported` runs, less those the importer is inside."""
    parts = imported.split(".")
    ancestors = {".".join(parts[:n]) for n in range(1, len(parts))}
    inside = {importer} | {".".join(importer.split(".")[:n]) for n in range(1, importer.count(".") + 1)}
    return (ancestors - inside) & modules


def import_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    modules = set(graph.modules)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for importer in modules:
        for imported in graph.find_modules_directly_imported_by(importer) & modules:
            edges[importer] |= {imported} | _packages_run(importer, imported, modules)
    return edges


def tangles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The groups of modules each of which imports every other, however far round (Tarjan's
    strongly connected components of more than one module, or of one importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1 or v in edges[v]:
                groups.append(group)

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(groups, key=min)


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One shortest circle per tangle, from its first module in sorted order back to it."""
    return [_shortest_circle(edges, min(group), group) for group in tangles(edges)]


def _shortest_circle(edges: dict[str, set[str]], start: str, within: set[str]) -> list[str]:
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(edges[v] & within):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if w not in came_from:
                came_from[w] = v
                queue.append(w)
    raise AssertionError(f"{start} is on no circle")  # a strongly connected group always has one


def described(graph: grimp.ImportGraph, circle: Iterable[str]) -> str:
    """`a -> b (a.py:12) -> a (b.py:3, inside a function)`: each step with the line that makes it."""
    steps = list(circle)
    text = steps[0]
    for importer, imported in pairwise(steps):
        details = graph.get_import_details(importer=importer, imported=imported)
        if details:
            where = ", ".join(f"line {d['line_number']}: {d['line_contents'].strip()}" for d in details)
        else:
            where = "its package's __init__ runs first"
        text += f"\n  -> {imported}   [{importer}: {where}]"
    return text


def test_circles_are_found_through_deferred_imports_and_package_inits():
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.sub", "pkg.sub.c", "pkg.sub.d"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.b", line_number=1, line_contents="from pkg import b")
    graph.add_import(importer="pkg.b", imported="pkg.a", line_number=9, line_contents="from pkg import a")
    assert circles(import_edges(graph)) == [["pkg.a", "pkg.b", "pkg.a"]]
    assert "pkg.b: line 9: from pkg import a" in described(graph, ["pkg.a", "pkg.b", "pkg.a"])

    graph.remove_import(importer="pkg.b", imported="pkg.a")
    # pkg.sub.c imports pkg.a, which imports only pkg.sub.d: its package's __init__ runs first
    graph.add_import(importer="pkg.sub", imported="pkg.sub.c", line_number=1, line_contents="from .c import x")
    graph.add_import(importer="pkg.sub.c", imported="pkg.a", line_number=2, line_contents="from pkg.a import y")
    graph.add_import(importer="pkg.a", imported="pkg.sub.d", line_number=3, line_contents="from pkg.sub.d import z")
    assert circles(import_edges(graph)) == [["pkg.a", "pkg.sub", "pkg.sub.c", "pkg.a"]]
    # a module importing its own package's sibling does not run that package again
    graph.remove_import(importer="pkg.sub.c", imported="pkg.a")
    graph.add_import(importer="pkg.sub.c", imported="pkg.sub.d", line_number=2, line_contents="from . import d")
    assert circles(import_edges(graph)) == []


def test_app_has_no_import_circle():
    graph = grimp.build_graph("app", cache_dir=None)
    edges = import_edges(graph)
    found = [
        f"{len(group)} modules: {', '.join(sorted(group))}; one circle:\n{described(graph, circle)}"
        for group, circle in zip(tangles(edges), circles(edges), strict=True)
    ]
    assert not found, "import circles in app (move what both sides need to a module below them):\n" + "\n".join(found)
