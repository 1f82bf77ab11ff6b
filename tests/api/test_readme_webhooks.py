"""The docs' webhook, export/import (docs/clients.md) and scaling (docs/operations.md) sections say
what the code does (issue 29 follow-ups, issue 28 item 4): the signature recipe verifies what the
delivery loop signs, and they name every setting of these features with its default."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from app.core.config import Settings
from app.services.webhook_delivery import signature
from app.services.webhooks import new_secret

DOCS = Path(__file__).resolve().parents[2] / "docs"
CLIENTS = (DOCS / "clients.md").read_text()
OPERATIONS = (DOCS / "operations.md").read_text()


def _section(title: str) -> str:
    """A section of docs/clients.md: from its heading to the next one, whatever their levels (## or
    ###; a `# ` line is a comment in a shell block)."""
    found = re.search(rf"^##+ {title}\n(.*?)(?=^##+ |\Z)", CLIENTS, re.MULTILINE | re.DOTALL)
    assert found, f"docs/clients.md has no section {title!r}"
    return found[1]


def _recipe():
    code = re.search(r"```python\n(.*?)```", _section("Webhooks"), re.DOTALL)
    assert code, "no Python recipe in docs/clients.md's Webhooks section"
    scope: dict = {}
    exec(compile(code[1], "docs/clients.md", "exec"), scope)  # noqa: S102  # the docs' own code, tested
    return scope["verify"]


def test_issue29_followup_the_readme_recipe_verifies_what_the_delivery_loop_signs():
    verify = _recipe()
    secret, body, now = new_secret(), b'{"id":"1","type":"player.created"}', int(time.time())
    headers = {
        "webhook-id": "msg_abc_1",
        "webhook-timestamp": str(now),
        "webhook-signature": signature(secret, "msg_abc_1", now, body),
    }
    assert verify(secret, headers, body)
    assert not verify(secret, headers, body + b" ")  # another body
    assert not verify(new_secret(), headers, body)  # another secret
    assert not verify(secret, {**headers, "webhook-timestamp": str(now - 3600)}, body)  # a replay
    two = {**headers, "webhook-signature": "v1,bm9wZQ== " + headers["webhook-signature"]}
    assert verify(secret, two, body)  # any of several signatures


@pytest.mark.parametrize(
    ("setting", "section", "shown"),
    [
        ("webhook_max_attempts", "Webhooks", "`WEBHOOK_MAX_ATTEMPTS` (8)"),
        ("webhook_timeout_seconds", "Webhooks", "(`WEBHOOK_TIMEOUT_SECONDS`, 5)"),
        ("webhook_backoff_seconds", "Webhooks", "(`WEBHOOK_BACKOFF_SECONDS`, 2,"),
        ("webhook_concurrency", "Webhooks", "`WEBHOOK_CONCURRENCY` (8 "),
        ("webhook_poll_seconds", "Webhooks", "`WEBHOOK_POLL_SECONDS` (1)"),
        ("webhook_delivery", "Webhooks", "`WEBHOOK_DELIVERY` (true"),
        ("webhook_disable_after_hours", "Webhooks", "`WEBHOOK_DISABLE_AFTER_HOURS` (72"),
        ("import_max_body_bytes", "Export and import", "`IMPORT_MAX_BODY_BYTES` (default 50 MB"),
    ],
)
def test_issue29_followup_the_readme_names_each_setting_with_its_default(setting, section, shown):
    assert shown in " ".join(_section(section).split())
    default = Settings.model_fields[setting].default
    if isinstance(default, bool):
        assert str(default).lower() in shown
    else:
        number = float(re.search(r"\(?(?:default )?([0-9.]+)", shown.split("`")[-1])[1])
        assert number * (1_000_000 if "MB" in shown else 1) == default


def test_issue28_item4_the_readme_scaling_paragraph_names_its_settings_and_defaults():
    text = " ".join(OPERATIONS.split())
    scaling = text[text.index("Scaling out on one PostgreSQL") :][:2000]
    assert (
        Settings.model_fields["db_max_connections"].default == 10
        and "`DB_MAX_CONNECTIONS` connections (default 10" in scaling
    )
    assert (
        Settings.model_fields["event_fallback_poll_seconds"].default == 5.0
        and "`EVENT_FALLBACK_POLL_SECONDS` (5)" in scaling
    )
    assert "`EVENT_NOTIFY=false`" in scaling and "LISTEN/NOTIFY" in scaling
