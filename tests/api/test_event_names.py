"""The event names are declared once (`app.rulesets.events.EventName`): the payload models, the
services that record events, the webhooks' subscriptions and the dashboard's listeners are all
checked against that one list."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from app.rulesets.events import EVENT_NAMES, EVENTS
from app.services.webhooks import EVENT_TYPES

APP = Path(__file__).resolve().parents[2] / "app"
# the page's listeners: `const NAMES = ["campaign.updated", …];`
PAGE_NAMES = re.compile(r"const NAMES = (\[[^\]]*\])", re.S)
# a string in the services shaped like an event name (`character.updated`)
LOOKS_LIKE_AN_EVENT = re.compile(r"(campaign|player|character|log|encounter|webhook)\.[a-z_]+")


def page_names(source: str) -> list[str]:
    found = PAGE_NAMES.search(source)
    assert found is not None, "app/web/js/events.js declares no `const NAMES = [...]`"
    return json.loads(re.sub(r"//[^\n]*", "", found.group(1)))


def test_the_dashboard_listens_for_every_declared_event_and_no_other():
    names = page_names((APP / "web" / "js" / "events.js").read_text(encoding="utf-8"))
    assert len(names) == len(set(names))
    assert sorted(set(EVENT_NAMES) - set(names)) == []  # declared, never listened for: missed ids
    assert sorted(set(names) - set(EVENT_NAMES)) == []  # listened for, never sent


def test_the_page_names_are_read_from_its_array():
    """The reader of the page's array sees each name, so the test above can fail."""
    source = 'const NAMES = ["a.b", // why\n  "c.d"];  // the end\n'
    assert page_names(source) == ["a.b", "c.d"]


def test_each_declared_event_has_its_payload_model_and_may_be_subscribed_to():
    assert set(EVENTS) == {*EVENT_NAMES, "error"}  # `error` ends a stream: no change of a campaign
    assert EVENT_TYPES == sorted(EVENT_NAMES)


def test_the_services_name_only_declared_events():
    """A bare event name in the services (`uow.record("character.updated", …)`) is a declared one:
    mypy checks those passed where `EventName` is typed, this every other string."""
    undeclared = [
        f"{path.relative_to(APP)}:{node.lineno}: {node.value}"
        for path in sorted((APP / "services").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and LOOKS_LIKE_AN_EVENT.fullmatch(node.value)
        and node.value not in EVENT_NAMES
    ]
    assert undeclared == []
