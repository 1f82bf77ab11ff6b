"""The import routes read their bodies themselves, off the event loop (app/api/bundles.py): a body
is refused exactly as FastAPI refuses the bodies it parses on the other routes (415, 400, 422 with
the same problem), and a long bundle, validated a batch of entries at a time, names its bad places
as a whole validation does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.test_export_import import _world

ROUTES = ["/v1/campaigns/import", "/v1/campaigns/import?dry_run=true"]


def _problem(r) -> dict[str, Any]:
    body = r.json()
    return {k: body.get(k) for k in ("status", "code", "line", "column", "errors")}


@pytest.mark.parametrize(
    ("content", "headers"),
    [
        (b'{"format": "jdr-rules-api/campaign",}', {"Content-Type": "application/json"}),  # malformed: 400
        (b"not json", {}),  # no Content-Type, not JSON: 415
        (b"<bundle/>", {"Content-Type": "application/xml"}),  # 415
        (b"[" * 40 + b"]" * 40, {"Content-Type": "application/json"}),  # too deep: 422
        (b"", {"Content-Type": "application/json"}),  # none: 422
        (b'"a bundle"', {"Content-Type": "application/json"}),  # not an object: 422
        (b'{"x": "\xff"}', {"Content-Type": "application/json"}),  # not UTF-8: 400
        (b'{"version": NaN}', {"Content-Type": "application/json"}),  # read as FastAPI reads it: 422
    ],
)
@pytest.mark.parametrize("route", ROUTES)
def test_a_body_is_refused_as_on_every_route_that_fastapi_parses(client, content, headers, route):
    r = client.post(route, content=content, headers=headers)
    other = client.post("/v1/campaigns", content=content, headers=headers)  # FastAPI parses this one
    assert r.status_code == other.status_code and r.status_code in (400, 415, 422), r.text
    mine, theirs = _problem(r), _problem(other)
    assert mine["code"] == theirs["code"] and mine["line"] == theirs["line"] and mine["column"] == theirs["column"]
    if r.json()["code"] in ("validation_failed", "body_too_deep") and r.json().get("errors"):
        assert r.json()["errors"][0]["loc"][0] == "body"


def test_a_long_log_validated_by_batches_names_its_bad_places_in_the_bundles_order(client):
    """An entry past the first batches is named by its own index; a bad campaign field comes
    first, as a validation of the whole bundle lists it; nothing is written."""
    cid, gm = _world(client, "great-cosmos")
    bundle = client.get(f"/v1/campaigns/{cid}/export", headers=gm).json()
    entry = bundle["log"][0]
    bundle["log"] = [{**entry, "id": f"e{i}", "body": {**entry["body"], "id": f"e{i}"}} for i in range(650)]
    bundle["level_ups"] = []
    r = client.post("/v1/campaigns/import", params={"dry_run": "true"}, json=bundle)
    assert r.status_code == 200 and r.json()["counts"]["log"] == 650, r.text
    bundle["log"][611]["hidden"] = "no"
    bundle["log"][3]["kind"] = 7
    r = client.post("/v1/campaigns/import", json=bundle)
    assert r.status_code == 422, r.text
    assert [e["loc"][:4] for e in r.json()["errors"]] == [["body", "log", 3, "kind"], ["body", "log", 611, "hidden"]]
    bundle["campaign"]["version"] = 0
    bundle["level_ups"] = "none"
    r = client.post("/v1/campaigns/import", content=json.dumps(bundle), headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    locs = [e["loc"][:4] for e in r.json()["errors"]]
    assert locs == [
        ["body", "campaign", "version"],
        ["body", "log", 3, "kind"],
        ["body", "log", 611, "hidden"],
        ["body", "level_ups"],
    ], locs
    assert r.json()["detail"].startswith("body.campaign.version: ")
