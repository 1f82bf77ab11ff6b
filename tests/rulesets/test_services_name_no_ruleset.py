"""Issue 23: the use cases in `app/services/` know no ruleset. A service that needs something of a
ruleset asks its adapter or its `EncounterRules` (`if fight.ruleset != "asgard"` was the shape this
refuses). The check reads the code, not the prose: every string literal that is not a docstring and
every name, attribute and import, against each registered ruleset's id, package and title words."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app.rulesets.registry import RULESET_PACKAGES

SERVICES = Path(__file__).resolve().parents[2] / "app" / "services"


def _words() -> set[str]:
    words: set[str] = set()
    for ruleset, package in RULESET_PACKAGES.items():
        short = package.rsplit(".", 1)[1]
        words |= {ruleset, short, short.replace("_", ""), ruleset.replace("-", "")}
    return words


WORDS = _words()
SPLIT = re.compile(r"[^a-z0-9_-]+")


def _docstrings(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def naming(source: str) -> list[tuple[int, str]]:
    """(line, word) for each ruleset word the code (not its docstrings or comments) holds."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        texts: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            texts = [node.value]
        elif isinstance(node, ast.Name):
            texts = [node.id]
        elif isinstance(node, ast.Attribute):
            texts = [node.attr]
        elif isinstance(node, ast.alias):
            texts = [node.name, node.asname or ""]
        elif isinstance(node, ast.ImportFrom):
            texts = [node.module or ""]
        for text in texts:
            pieces = set(SPLIT.split(text.lower())) | set(text.lower().split("."))
            found += [(getattr(node, "lineno", 0), word) for word in sorted(pieces & WORDS)]
    return found


def test_the_check_sees_a_ruleset_named_in_code_not_in_prose():
    source = (
        '"""Great Cosmos and asgard in a docstring are prose."""\n'
        "# asgard in a comment is prose\n"
        "from app.rulesets.asgard import combat\n"
        'if fight.ruleset != "asgard":\n'
        "    great_cosmos = 1\n"
        'message = f"{x} is rulebook-d100 only"\n'
    )
    assert naming(source) == [(3, "asgard"), (4, "asgard"), (5, "great_cosmos"), (6, "rulebook-d100")]


def test_no_service_names_a_ruleset():
    files = sorted(SERVICES.rglob("*.py"))
    assert len(files) > 20, "app/services/ not found where this test looks"
    named = {
        f"{path.relative_to(SERVICES)}:{line}": word
        for path in files
        for line, word in naming(path.read_text(encoding="utf-8"))
    }
    assert named == {}
