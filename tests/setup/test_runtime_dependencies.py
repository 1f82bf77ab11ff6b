"""Everything `app` imports at run time comes with `pip install .` (no extras): each third-party module
imported by a module under app/ (outside `if TYPE_CHECKING:`) is provided by a distribution in the
closure of pyproject's runtime dependencies. A dev-only package imported by the app (httpx once was:
`make run` died on a fresh machine while the suite, installed with the dev extras, stayed green) fails here,
named with the module that imports it. .ci/run also imports every module in a runtime-only venv
(tests/import_all.py)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(source: str) -> set[str]:
    """The top-level names of the modules a source imports at run time (relative imports are the app's own)."""
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _type_checking_only(node):
                visit(node.orelse)
                continue
            for child in ast.walk(node) if not isinstance(node, ast.If) else [node]:
                if isinstance(child, ast.Import):
                    found.update(alias.name.split(".")[0] for alias in child.names)
                elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                    found.add(child.module.split(".")[0])
            if isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)

    visit(ast.parse(source).body)
    return found


def runtime_closure() -> set[str]:
    """The distributions `pip install .` brings: pyproject's dependencies (with their extras), transitively."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [(Requirement(spec), set(Requirement(spec).extras)) for spec in project["dependencies"]]
    seen: dict[str, set[str]] = {}
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen and extras <= seen[name]:
            continue
        seen.setdefault(name, set()).update(extras)
        for spec in metadata.requires(req.name) or []:
            child = Requirement(spec)
            if child.marker is not None and not any(
                child.marker.evaluate({"extra": extra}) for extra in (seen[name] or {""})
            ):
                continue
            todo.append((child, set(child.extras)))
    return set(seen)


def offenders(modules_by_file: dict[str, set[str]], closure: set[str]) -> list[str]:
    providers = metadata.packages_distributions()
    out = []
    for where, modules in sorted(modules_by_file.items()):
        for module in sorted(modules - set(sys.stdlib_module_names) - {"app", "__future__"}):
            dists = {canonicalize_name(d) for d in providers.get(module, [])}
            if not dists & closure:
                out.append(f"{where} imports {module} ({', '.join(sorted(dists)) or 'not installed'})")
    return out


def test_every_module_the_app_imports_is_a_runtime_dependency():
    modules = {str(p.relative_to(ROOT)): imported_modules(p.read_text()) for p in APP.rglob("*.py")}
    assert sum(len(m) for m in modules.values()) > 100  # the walk found the app's imports
    assert offenders(modules, runtime_closure()) == []


def test_a_dev_only_import_is_named():
    """The check itself: httpx and pytest outside the closure are named with their importer; a stdlib
    module, a runtime one and an import under TYPE_CHECKING are not."""
    source = (
        "import json\nimport pytest\nfrom fastapi import FastAPI\n"
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import hypothesis\n"
        "def f():\n    import httpx\n"
    )
    closure = runtime_closure() - {"httpx"}
    assert offenders({"app/x.py": imported_modules(source)}, closure) == [
        "app/x.py imports httpx (httpx)",
        "app/x.py imports pytest (pytest)",
    ]
    assert not re.search("hypothesis", " ".join(imported_modules(source)))


def test_the_closure_follows_extras_and_markers():
    closure = runtime_closure()
    # uvicorn[standard] brings uvloop and httptools (the production stack); fastapi brings starlette
    assert {"fastapi", "starlette", "uvicorn", "uvloop", "httptools", "httpx"} <= closure
    assert not {"pytest", "hypothesis", "icepool", "mypy"} & closure
    assert Marker('extra == "dev"').evaluate({"extra": "dev"})
