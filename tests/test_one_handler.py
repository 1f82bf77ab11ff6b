"""One owner for "a character changed": a use case says what it changed (`uow.changed(…)`), and the
unit of work's one handler (`app.services.handlers`) tells each viewer and moves the fights showing
that character. No other module of `app` moves a fight for a character, records a character's
`character.updated` / `character.deleted`, or works out who hears of it: a writer that did would
again be one of many places to keep in step (and in the lock order)."""

from __future__ import annotations

import ast
from pathlib import Path

import app

APP = Path(app.__file__).parent
HANDLER = APP / "services" / "handlers.py"
FIGHT_MOVING = "app.services.encounters.shown"  # `move`: a fight's version, ETag and `encounter.updated`
# who hears of a change of a character, and what: the handler's to ask
TELLING_HELPERS = {"updated_events", "audience", "lost_sight"}
TOLD_ONLY_BY_THE_HANDLER = {"character.updated", "character.deleted"}
# a bundle's import writes characters without a unit of work, each told as created (nothing to move)
CREATIONS = {APP / "services" / "bundles.py": {"audience"}}


def _modules() -> list[Path]:
    return sorted(p for p in APP.rglob("*.py") if p != HANDLER)


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def _called(node: ast.Call) -> str | None:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def offences(path: Path, source: str) -> list[str]:
    tree = ast.parse(source)
    out = []
    if FIGHT_MOVING in _imported(tree) and path.name != "shown.py":
        out.append(f"{path.relative_to(APP.parent)} imports {FIGHT_MOVING}")
    allowed = CREATIONS.get(path, set())
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _called(node)
        if name in TELLING_HELPERS - allowed:
            out.append(f"{path.relative_to(APP.parent)}:{node.lineno} calls {name}")
        told = {a.value for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Constant)}
        if told & TOLD_ONLY_BY_THE_HANDLER:
            out.append(f"{path.relative_to(APP.parent)}:{node.lineno} records {sorted(told)[0]}")
    return out


def test_only_the_units_handler_tells_a_character_change_and_moves_its_fights():
    found = [o for path in _modules() for o in offences(path, path.read_text())]
    assert found == []


def test_the_check_finds_a_use_case_that_tells_a_change_itself():
    """The test above can fail: each way a use case used to do the handler's work is found."""
    use_case = APP / "services" / "characters.py"
    source = """
from app.services.encounters import shown
def edit(uow, fights, after):
    shown.move(uow, fights)
    uow.record("character.updated", {"id": after.id})
    made = updated_events(uow.conn, [after], "asgard")
"""
    assert len(offences(use_case, source)) == 3
    assert offences(APP / "services" / "operations.py", "who = audience(conn, c, 'asgard')") != []
    assert offences(use_case, "lost_sight(conn, a, b)") != []
