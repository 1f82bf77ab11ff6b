"""NUL is refused in every stored text: a body string (a value or a key, however deep) holding U+0000 is a
422 `validation_failed` naming its place, before anything is written, on both databases — one rule at the
boundary (app/api/limits.py), after the caller's 401 and 403. The text `\\u0000` (a backslash, then u0000)
is no NUL and is kept."""

from __future__ import annotations

import json

import pytest

from tests.factories import GC, sheet


def _post(client, path: str, body: dict, headers) -> object:
    return client.post(path, content=json.dumps(body), headers={**headers, "content-type": "application/json"})


@pytest.mark.parametrize(
    ("where", "loc"),
    [
        ({"notes": "a\x00b"}, ["body", "sheet", "notes"]),
        ({"inventory": ["épée", "ar\x00c"]}, ["body", "sheet", "inventory", 1]),
        ({"weapons": [{"name": "hache\x00"}]}, ["body", "sheet", "weapons", 0, "name"]),
        ({"bag\x00": "x"}, ["body", "sheet", "bag\x00", "[key]"]),
    ],
)
def test_nul_anywhere_in_a_sheet_is_a_422_naming_it(client, campaign_factory, count_rows, where, loc):
    camp = campaign_factory(GC)
    body = {"name": "Aiko", "kind": "pc", "sheet": {**sheet(GC), **where}}
    r = _post(client, f"/v1/campaigns/{camp.id}/characters", body, camp.gm)
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["code"] == "validation_failed"
    assert [e["loc"] for e in problem["errors"]] == [loc]
    assert count_rows("character", campaign_id=camp.id) == 0


def test_nul_in_an_edit_writes_nothing_and_the_refusal_comes_after_authentication(
    client, campaign_factory, character_factory, player_factory
):
    camp = campaign_factory(GC)
    hero = character_factory(camp, sheet(GC), name="Aiko")
    path = f"/v1/characters/{hero['id']}"
    r = client.patch(path, content=json.dumps({"name": "A\x00"}), headers={"content-type": "application/json"})
    assert r.status_code == 401  # who asks comes first
    alice = player_factory(camp)
    r = client.post(
        f"/v1/campaigns/{camp.id}/players",
        content=json.dumps({"name": "M\x00"}),
        headers={**alice.headers, "content-type": "application/json"},
    )
    assert r.status_code == 403  # then what it may do
    r = client.patch(
        path,
        content=json.dumps({"notes": "x", "name": "A\x00"}),
        headers={**camp.gm, "content-type": "application/json"},
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "name"]
    assert client.get(path, headers=camp.gm).json()["name"] == "Aiko"


def test_the_text_backslash_u0000_is_no_nul(client, campaign_factory):
    camp = campaign_factory(GC)
    body = {"name": "Aiko", "kind": "pc", "sheet": {**sheet(GC), "notes": "C:\\u0000 \\\\u0000"}}
    raw = json.dumps(body)
    assert "\\\\u0000" in raw  # an escaped backslash before u0000: text, not NUL
    r = client.post(
        f"/v1/campaigns/{camp.id}/characters", content=raw, headers={**camp.gm, "content-type": "application/json"}
    )
    assert r.status_code == 201, r.text
    assert r.json()["sheet"]["notes"] == "C:\\u0000 \\\\u0000"


def test_nul_in_an_import_is_refused(client, campaign_factory, character_factory):
    camp = campaign_factory(GC)
    character_factory(camp, sheet(GC), name="Aiko")
    bundle = client.get(f"/v1/campaigns/{camp.id}/export", headers=camp.gm).json()
    bundle["characters"][0]["name"] = "Ai\x00ko"
    r = client.post("/v1/campaigns/import", content=json.dumps(bundle), headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "validation_failed" and r.json()["errors"][0]["loc"] == ["body"]
