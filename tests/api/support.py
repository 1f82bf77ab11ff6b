"""Shared assertions and readers of the HTTP tests (their data: tests/factories.py)."""

from __future__ import annotations

import json

PROBLEM = "application/problem+json"
TYPE = "https://jdr-rules-api.dev/problems/"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_problem(r, status: int, slug: str) -> dict:
    """An RFC 9457 problem with this status and type; returns its body."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == PROBLEM
    body = r.json()
    assert body["type"] == TYPE + slug
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
