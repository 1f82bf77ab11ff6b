"""Issue 25 item 6: every 201 names what it created (`Location`, which a GET then reads), the
headers the service sends are declared in openapi.json (ETag, Location, Retry-After,
X-Request-Id; If-None-Match and its 304), and CORS exposes X-Request-Id."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from app.api.openapi_doc import ETAGGED, UNLOCATED
from app.main import create_app
from tests.api.test_encounters import ids, table
from tests.factories import GC, gc_fighter, sheet

__all__ = ["table"]

SPEC = json.loads((Path(__file__).resolve().parents[2] / "openapi.json").read_text())
OPERATIONS = {op["operationId"]: (m, p, op) for p, ops in SPEC["paths"].items() for m, op in ops.items()}


def test_every_response_declares_x_request_id_and_every_201_its_location():
    for name, (_, _, op) in OPERATIONS.items():
        for status, response in op["responses"].items():
            assert "X-Request-Id" in response["headers"], (name, status)
        if "201" in op["responses"]:
            assert ("Location" in op["responses"]["201"]["headers"]) == (name not in UNLOCATED), name


def test_etags_and_if_none_match_are_declared_where_they_are_sent():
    assert ETAGGED <= set(OPERATIONS)
    for name in ETAGGED:
        method, _, op = OPERATIONS[name]
        ok = next(s for s in op["responses"] if s.startswith("2"))
        assert "ETag" in op["responses"][ok]["headers"], name
        if method == "get":
            assert "If-None-Match" in [p["name"] for p in op["parameters"]] and "304" in op["responses"], name
    assert "ETag" not in OPERATIONS["list_characters"][2]["responses"]["200"]["headers"]
    for status in ("409", "429", "503"):  # issue 25 item 2: statuses, not ranges
        assert "Retry-After" in OPERATIONS["run_test"][2]["responses"][status]["headers"], status


def test_each_location_is_read_back_by_a_get(client, campaign):
    gm = campaign.gm
    r = client.post("/v1/campaigns", json={"name": "Autre", "ruleset": GC})
    assert r.headers["Location"] == f"/v1/campaigns/{r.json()['id']}"
    other = {"Authorization": f"Bearer {r.json()['gm_token']}"}
    assert client.get(r.headers["Location"], headers=other).json()["id"] == r.json()["id"]

    r = client.post(f"/v1/campaigns/{campaign.id}/characters", json={"name": "Aiko", "sheet": sheet(GC)}, headers=gm)
    character = r.json()
    assert r.headers["Location"] == f"/v1/characters/{character['id']}"
    assert client.get(r.headers["Location"], headers=gm).json() == character

    r = client.post(f"/v1/characters/{character['id']}/tests", json={"stat": "force", "dice": [12]}, headers=gm)
    assert r.status_code == 201 and r.headers["Location"] == f"/v1/campaigns/{campaign.id}/rolls/{r.json()['id']}"
    assert client.get(r.headers["Location"], headers=gm).json() == r.json()

    r = client.post(f"/v1/campaigns/{campaign.id}/rolls", json={"expression": "2d6", "dice": [3, 4]}, headers=gm)
    assert r.status_code == 201 and client.get(r.headers["Location"], headers=gm).json()["id"] == r.json()["id"]

    r = client.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Carol"}, headers=gm)
    assert r.headers["Location"] == f"/v1/campaigns/{campaign.id}/players/{r.json()['id']}"
    assert client.delete(r.headers["Location"], headers=gm).status_code == 204  # the player's own URI

    body = {"name": "Fight", "combatants": [{"character_id": character["id"]}]}
    r = client.post(f"/v1/campaigns/{campaign.id}/encounters", json=body, headers=gm)
    assert r.status_code == 201, r.text
    assert r.headers["Location"] == f"/v1/encounters/{r.json()['id']}"
    assert client.get(r.headers["Location"], headers=gm).json()["id"] == r.json()["id"]


def test_a_get_with_a_current_etag_is_a_304(client, campaign, hero):
    path = f"/v1/characters/{hero['id']}"
    tag = client.get(path, headers=campaign.gm).headers["ETag"]
    r = client.get(path, headers={**campaign.gm, "If-None-Match": tag})
    assert r.status_code == 304 and r.headers["ETag"] == tag and r.content == b""


def test_cors_exposes_the_request_id(settings, db_session):
    app = create_app(settings.model_copy(update={"cors_origins": ["https://vtt.example"]}))
    with TestClient(app) as client:
        r = client.get("/healthz", headers={"Origin": "https://vtt.example"})
    exposed = {h.strip().lower() for h in r.headers["access-control-expose-headers"].split(",")}
    assert {"x-request-id", "etag", "location", "retry-after"} <= exposed


def test_issue25_item10_each_action_201_locates_the_action_a_get_reads_back(table):
    """next-turn, actions and revert answer 201 with `Location: /v1/encounters/{eid}/actions/{aid}`,
    which `GET` reads back; `end` creates nothing: 200, no `Location` (its description says why)."""
    t = table(GC)
    aiko = t.character("Aiko", gc_fighter(70), kind="pc", player=t.alice)
    brute = t.character("Brute", gc_fighter(40))
    s = t.encounter([{"character_id": aiko}, {"character_id": brute}])
    eid, n = s["id"], ids(s)
    t.start(eid, dice=[])
    answers = [
        t.client.post(
            f"/v1/encounters/{eid}/actions", json={"type": "damage", "target_id": n["Brute"], "amount": 5}, headers=t.gm
        ),
        t.client.post(f"/v1/encounters/{eid}/next-turn", json={}, headers=t.gm),
    ]
    answers.append(
        t.client.post(f"/v1/encounters/{eid}/actions/{answers[1].json()['id']}/revert", json={}, headers=t.gm)
    )
    for r in answers:
        assert r.status_code == 201, r.text
        assert r.headers["Location"] == f"/v1/encounters/{eid}/actions/{r.json()['id']}"
        back = t.client.get(r.headers["Location"], headers=t.gm)
        assert back.status_code == 200 and back.json()["id"] == r.json()["id"]
    r = t.client.post(f"/v1/encounters/{eid}/end", headers=t.gm)
    assert r.status_code == 200 and "Location" not in r.headers
    _, _, end = OPERATIONS["end_encounter"]
    assert set(end["responses"]) & {"200", "201"} == {"200"} and "creates nothing" in end["description"]
    assert "Location" in OPERATIONS["act_in_encounter"][2]["responses"]["201"]["headers"]
    assert OPERATIONS["read_encounter_action"][0] == "get"
