"""Shared constants and assertions of the HTTP tests."""
from __future__ import annotations

import json

RULESET = "great-cosmos"
SHEET = {"race": "humain", "hp_max": 100, "mp_max": 50,
         "stats": {"force": 68, "esprit": 50, "charisme": 40, "agilite": 55, "precision": 45, "chance": 60}}
RB_SHEET = {"stats": {"FOR": 50, "HAB": 60}, "skills": {"escrime": 20}, "crit_chance": 5,
            "hp": 14, "hp_max": 14, "pe": 14, "pe_max": 14, "armor": 0}
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
    r = client.get(f"/v1/campaigns/{campaign_id}/events", params={"follow": "false", "after": "0", **params},
                   headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    events = []
    for block in r.text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields:
            events.append({"id": int(fields["id"]), "type": fields["event"], "data": json.loads(fields["data"])})
    return events
