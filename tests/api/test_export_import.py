"""Export and import (issue 29 item 2; API.md round 3 "Export and import"): the round trip is exact
(export ∘ import ∘ export = export but for ids, tokens and the export's time) on every ruleset with
a fight, a level-up and hidden entries; a bad bundle is a 422 naming its first bad place, nothing
written; `dry_run` writes nothing; one character alone too."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from tests.factories import RULESETS, SHEETS, TEST_BODIES

ID_FIELDS = ("id", "player_id", "character_id", "encounter_id", "rerolls", "reverts", "reverted_by")


def _level_up_body(ruleset: str) -> dict[str, Any]:
    module = importlib.import_module(f"app.rulesets.{ruleset.replace('-', '_')}.examples")
    body = dict(module.EXAMPLES["level_up"][0]) if module.EXAMPLES.get("level_up") else {}
    body.pop("dice", None)
    return {**body, "seed": 5}


def _ids(bundle: dict[str, Any]) -> list[str]:
    """Every id the bundle defines, in document order."""
    found = [bundle["campaign"]["id"]]
    found += [p["id"] for p in bundle["players"]] + [c["id"] for c in bundle["characters"]]
    for e in bundle["encounters"]:
        found += [e["id"], *(c["id"] for c in e["combatants"])]
    found += [a["id"] for a in bundle["actions"]] + [e["id"] for e in bundle["log"]]
    return list(dict.fromkeys(found))


def canonical(bundle: dict[str, Any]) -> Any:
    """The bundle with each of its ids replaced by its rank, at any depth, and its export time left out."""
    ranks = {old: f"#{i}" for i, old in enumerate(_ids(bundle))}

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return ranks.get(v, v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {ranks.get(k, k): walk(x) for k, x in v.items()}
        return v

    return walk({k: v for k, v in bundle.items() if k != "exported_at"})


def _world(client, ruleset: str) -> tuple[str, dict[str, str]]:
    def post(path: str, body: dict, headers: dict[str, str]) -> dict:
        r = client.post(path, json=body, headers=headers)
        assert r.status_code == 201, r.text
        return r.json()

    camp = post("/v1/campaigns", {"name": "Exported", "ruleset": ruleset}, {})
    gm = {"Authorization": f"Bearer {camp['gm_token']}"}
    owner = post(f"/v1/campaigns/{camp['id']}/players", {"name": "Owner"}, gm)
    hero = post(
        f"/v1/campaigns/{camp['id']}/characters",
        {"name": "Hero", "kind": "pc", "player_id": owner["id"], "sheet": SHEETS[ruleset], "metadata": {"vtt": "a1"}},
        gm,
    )
    foe = post(f"/v1/campaigns/{camp['id']}/characters", {"name": "Foe", "kind": "npc", "sheet": SHEETS[ruleset]}, gm)
    post(f"/v1/characters/{hero['id']}/tests", {**TEST_BODIES[ruleset], "seed": 3}, gm)
    post(f"/v1/characters/{hero['id']}/tests", {**TEST_BODIES[ruleset], "seed": 4, "hidden": True}, gm)
    post(f"/v1/campaigns/{camp['id']}/rolls", {"expression": "2d6", "hidden": True, "seed": 9}, gm)
    r = client.post(f"/v1/characters/{hero['id']}/level-ups", json=_level_up_body(ruleset), headers=gm)
    assert r.status_code in (201, 422), r.text  # a ruleset whose level-up needs more is still exported
    fight = post(
        f"/v1/campaigns/{camp['id']}/encounters",
        {"name": "Ambush", "combatants": [{"character_id": hero["id"]}, {"character_id": foe["id"], "hidden": True}]},
        gm,
    )
    post(f"/v1/encounters/{fight['id']}/start", {"seed": 2}, gm)
    target = fight["combatants"][1]["id"]
    post(f"/v1/encounters/{fight['id']}/actions", {"type": "damage", "target_id": target, "amount": 1}, gm)
    return camp["id"], gm


@pytest.mark.parametrize("ruleset", RULESETS)
def test_issue29_item2_round_trip_is_exact_on_every_ruleset(client, ruleset):
    cid, gm = _world(client, ruleset)
    r = client.get(f"/v1/campaigns/{cid}/export", headers=gm)
    assert r.status_code == 200, r.text
    first = r.json()
    assert first["format"] == "jdr-rules-api/campaign" and first["version"] == 1
    assert first["encounters"] and first["actions"] and any(e["hidden"] for e in first["log"])
    assert "token" not in str(first["players"])
    imported = client.post("/v1/campaigns/import", json=first)
    assert imported.status_code == 201, imported.text
    new = imported.json()
    assert new["id"] != cid and new["gm_token"] and len(new["players"]) == 1 and new["players"][0]["token"]
    new_gm = {"Authorization": f"Bearer {new['gm_token']}"}
    second = client.get(f"/v1/campaigns/{new['id']}/export", headers=new_gm).json()
    assert canonical(second) == canonical(first)
    assert set(_ids(first)).isdisjoint(_ids(second))  # every id is new
    player = {"Authorization": f"Bearer {new['players'][0]['token']}"}
    assert client.get("/v1/me", headers=player).json()["role"] == "player"
    log = client.get(f"/v1/campaigns/{new['id']}/rolls", headers=new_gm).json()["items"]
    assert [e["created_at"] for e in reversed(log)] == [e["body"]["created_at"] for e in first["log"]][-len(log) :]


def test_issue29_item2_dry_run_writes_nothing(client, count_rows):
    cid, gm = _world(client, "great-cosmos")
    bundle = client.get(f"/v1/campaigns/{cid}/export", headers=gm).json()
    before = count_rows("campaign"), count_rows("roll_log")
    r = client.post("/v1/campaigns/import", params={"dry_run": "true"}, json=bundle)
    assert r.status_code == 200, r.text
    assert r.json()["dry_run"] is True and r.json()["counts"]["log"] == len(bundle["log"])
    assert (count_rows("campaign"), count_rows("roll_log")) == before


@pytest.mark.parametrize(
    ("spoil", "loc"),
    [
        (lambda b: b.update(version=2), ["body", "version"]),
        (lambda b: b["characters"][1]["sheet"].update(stats="lots"), ["body", "characters", 1, "sheet"]),
        (lambda b: b["characters"][0].update(player_id="nobody"), ["body", "characters", "0", "player_id"]),
        (lambda b: b["log"][2].pop("body"), ["body", "log", 2, "body"]),
        (lambda b: b["campaign"].update(ruleset="chess"), ["body", "campaign", "ruleset"]),
    ],
)
def test_issue29_item2_a_bad_bundle_is_a_422_naming_its_first_bad_place_nothing_written(client, count_rows, spoil, loc):
    cid, gm = _world(client, "great-cosmos")
    bundle = client.get(f"/v1/campaigns/{cid}/export", headers=gm).json()
    spoil(bundle)
    before = count_rows("campaign"), count_rows("roll_log"), count_rows("credential")
    r = client.post("/v1/campaigns/import", json=bundle)
    assert r.status_code == 422, r.text
    assert [str(p) for p in r.json()["errors"][0]["loc"]] == [str(p) for p in loc]
    assert (count_rows("campaign"), count_rows("roll_log"), count_rows("credential")) == before


def test_issue29_item2_one_character_with_its_level_ups(client, campaign_factory):
    cid, gm = _world(client, "great-cosmos")
    hero = next(
        c for c in client.get(f"/v1/campaigns/{cid}/characters", headers=gm).json()["items"] if c["name"] == "Hero"
    )
    r = client.get(f"/v1/characters/{hero['id']}/export", headers=gm)
    assert r.status_code == 200, r.text
    bundle = r.json()
    assert bundle["format"] == "jdr-rules-api/character" and len(bundle["level_ups"]) == 1
    other = campaign_factory("great-cosmos")
    r = client.post(f"/v1/campaigns/{other.id}/characters/import", json=bundle, headers=other.gm)
    assert r.status_code == 201, r.text
    copy = r.json()
    assert copy["id"] != hero["id"] and copy["sheet"] == hero["sheet"] and copy["metadata"] == {"vtt": "a1"}
    again = client.get(f"/v1/characters/{copy['id']}/export", headers=other.gm).json()
    assert canonical_character(again) == canonical_character(bundle)
    wrong = campaign_factory("asgard")
    r = client.post(f"/v1/campaigns/{wrong.id}/characters/import", json=bundle, headers=wrong.gm)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "ruleset"]


def canonical_character(bundle: dict[str, Any]) -> Any:
    ids = [bundle["character"]["id"], *(e["id"] for e in bundle["level_ups"])]
    ranks = {old: f"#{i}" for i, old in enumerate(ids)}

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return ranks.get(v, v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    shown = {k: v for k, v in bundle.items() if k != "exported_at"}
    shown["character"] = {**shown["character"], "player_id": None}
    return walk(shown)
