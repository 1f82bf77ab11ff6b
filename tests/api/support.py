"""Shared assertions and readers of the HTTP tests (their data: tests/factories.py)."""

from __future__ import annotations

import json

PROBLEM = "application/problem+json"
TYPE = "https://jdr-rules-api.dev/problems/"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _family(slug: str) -> type:
    """The error class a test's older, family-wide slug named (`conflict`, `validation-error`…)."""
    from app.api import problems
    from app.kit import errors
    from app.rules import errors as dice

    families = {
        "validation-error": errors.RuleError,
        "rule-violation": errors.RuleError,
        "insufficient-resource": dice.InsufficientResource,
        "invalid-dice": dice.DiceError,
        "invalid-dice-expression": dice.ExpressionError,
        "malformed-json": problems.MalformedJson,
        "unsupported-media-type": problems.UnsupportedMediaType,
    }
    if slug in families:
        return families[slug]
    return getattr(errors, "".join(w.capitalize() for w in slug.split("-")))


def assert_problem(r, status: int, slug: str) -> dict:
    """An RFC 9457 problem with this status and code (issue 25 item 5), `type` built from its code;
    `slug` is the code in kebab case, or the family an older test named (`conflict`: any 409 code
    whose class is a Conflict). Returns its body."""
    from app.kit.errors import CODES

    assert r.status_code == status, r.text
    assert r.headers["content-type"] == PROBLEM
    body = r.json()
    code = body["code"]
    assert code in CODES and body["type"] == TYPE + code.replace("_", "-"), body
    assert slug == code.replace("_", "-") or issubclass(CODES[code].family, _family(slug)), (slug, body)
    assert body["status"] == status
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def assert_validation(r, locs: list[list]) -> dict:
    """A 422 validation problem whose `errors` are located exactly at `locs`."""
    body = assert_problem(r, 422, "validation-error")
    assert body["title"] == "Validation error"
    assert [e["loc"] for e in body["errors"]] == locs
    assert all(isinstance(e["msg"], str) and e["msg"] for e in body["errors"])
    return body


def read_events(client, campaign_id, headers, **params):
    """The campaign's events from the start (after=0), without following."""
    r = client.get(
        f"/v1/campaigns/{campaign_id}/events", params={"follow": "false", "after": "0", **params}, headers=headers
    )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    events = []
    for block in r.text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields:
            events.append({"id": int(fields["id"]), "type": fields["event"], "data": json.loads(fields["data"])})
    return events
