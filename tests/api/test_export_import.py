"""Export and import (issue 29 item 2; API.md round 3 "Export and import"): the round trip is exact
(export ∘ import ∘ export = export but for ids, tokens and the export's time) on every ruleset with
a fight, a level-up and hidden entries; a bad bundle is a 422 naming its first bad place, nothing
written; `dry_run` writes nothing; one character alone too."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app

from tests.api.support import assert_problem, bearer, read_events
from tests.conftest import settings_for
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
    found += [*bundle.get("deleted_characters", []), *bundle.get("removed_combatants", [])]
    return list(dict.fromkeys(found))


def as_imported(bundle: dict[str, Any]) -> dict[str, Any]:
    """The bundle as its import stores it: each entry's dice kept, its provenance `imported`, and
    the provenance it claimed in `imported_provenance`."""

    def entry(e: dict[str, Any]) -> dict[str, Any]:
        body = {**e["body"], "provenance": "imported", "imported_provenance": e["body"]["provenance"]}
        return {**e, "body": body}

    return {**bundle, "log": [entry(e) for e in bundle["log"]]}


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
    if _level_up_body(ruleset).keys() - {"seed"}:  # a ruleset with a level-up rule shows one in its examples
        assert r.status_code == 201, r.text
    else:  # the others refuse it, and their campaign is still exported whole
        assert_problem(r, 422, "unsupported-operation")
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
    assert canonical(second) == canonical(as_imported(first))  # the dice it did not roll say so
    assert set(_ids(first)).isdisjoint(_ids(second))  # every id is new
    again = client.post("/v1/campaigns/import", json=second).json()  # and it stays so, with the first claim
    third = client.get(f"/v1/campaigns/{again['id']}/export", headers=bearer(again["gm_token"])).json()
    assert canonical(third) == canonical(second)
    player = {"Authorization": f"Bearer {new['players'][0]['token']}"}
    assert client.get("/v1/me", headers=player).json()["role"] == "player"
    log = client.get(f"/v1/campaigns/{new['id']}/rolls", headers=new_gm).json()["items"]
    assert [e["created_at"] for e in reversed(log)] == [e["body"]["created_at"] for e in first["log"]][-len(log) :]


@pytest.mark.parametrize("ruleset", ["great-cosmos", "asgard"])
def test_issue29_item2_the_luck_statistics_survive_the_round_trip(client, ruleset):
    """Each test's figures (its outcome, the exact odds it was rolled with, its dice) go with it: the
    imported campaign's statistics are the exported one's. Before, they were left behind and every
    imported test counted among `tests_without_odds`."""
    cid, gm = _world(client, ruleset)
    bundle = client.get(f"/v1/campaigns/{cid}/export", headers=gm).json()
    tests = [e for e in bundle["log"] if e["kind"] == "test"]
    assert tests and all(e["figures"]["outcome"] == e["body"]["outcome"] for e in tests)
    assert all(e["figures"] is None for e in bundle["log"] if e["kind"] != "test")
    new = client.post("/v1/campaigns/import", json=bundle).json()

    def stats(campaign_id: str, headers: dict[str, str]) -> dict:
        r = client.get(f"/v1/campaigns/{campaign_id}/stats", headers=headers)
        assert r.status_code == 200, r.text
        body = r.json()
        per = [{k: v for k, v in c.items() if k != "character_id"} for c in body["characters"]]
        return {"campaign": body["campaign"], "characters": sorted(per, key=lambda c: json.dumps(c, sort_keys=True))}

    before = stats(cid, gm)
    assert before["campaign"]["tests"] == len(tests) and before["campaign"]["tests_without_odds"] == 0
    assert stats(new["id"], {"Authorization": f"Bearer {new['gm_token']}"}) == before
    bundle["log"][[e["kind"] for e in bundle["log"]].index("test")]["figures"]["outcome"] = "nothing"
    r = client.post("/v1/campaigns/import", json=bundle)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][-2:] == ["figures", "outcome"], r.text


def _stored_while_lax(client, campaign_factory, db_session) -> tuple[Any, dict[str, Any], str]:
    """A Worlds Awakening campaign whose character's sheet and campaign's options hold a boolean as it
    was stored while booleans were lax (`"false"`, `"yes"`): (the campaign, the character, the option)."""
    from sqlalchemy import update

    from app.models.tables import Campaign, Character

    c = campaign_factory("worlds-awakening")
    hero = client.post(
        f"/v1/campaigns/{c.id}/characters",
        json={"name": "Old", "kind": "pc", "sheet": SHEETS["worlds-awakening"]},
        headers=c.gm,
    ).json()
    options = client.get(f"/v1/campaigns/{c.id}", headers=c.gm).json()["options"]
    flag = next(k for k, v in options.items() if isinstance(v, bool))
    conn = db_session.connection()
    conn.execute(update(Character).where(Character.id == hero["id"]).values(sheet={**hero["sheet"], "down": "false"}))
    conn.execute(update(Campaign).where(Campaign.id == c.id).values(options={**options, flag: "yes"}))
    db_session.commit()
    return c, hero, flag


def test_issue29_item2_values_stored_while_lax_are_exported_as_read_and_import(client, campaign_factory, db_session):
    """A sheet or campaign option stored while booleans were lax (`"false"`, `"yes"`) is read in lax
    mode; the export carries it as it is read (`false`, `true`), so its own import takes it. Before,
    the export carried the stored text and the import refused it (422)."""
    c, hero, flag = _stored_while_lax(client, campaign_factory, db_session)
    bundle = client.get(f"/v1/campaigns/{c.id}/export", headers=c.gm).json()
    assert bundle["campaign"]["options"][flag] is True
    assert bundle["characters"][0]["sheet"]["down"] is False
    imported = client.post("/v1/campaigns/import", json=bundle)
    assert imported.status_code == 201, imported.text
    one = client.get(f"/v1/characters/{hero['id']}/export", headers=c.gm).json()
    assert one["character"]["sheet"]["down"] is False


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
        (lambda b: b["characters"][1]["sheet"].update(stats="lots"), ["body", "characters", 1, "sheet", "stats"]),
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
    imported = as_imported({"log": bundle["level_ups"]})["log"]  # its dice kept, vouched for by no one
    assert [e["body"]["provenance"] for e in again["level_ups"]] == ["imported"]
    assert canonical_character(again) == canonical_character({**bundle, "level_ups": imported})
    wrong = campaign_factory("asgard")
    r = client.post(f"/v1/campaigns/{wrong.id}/characters/import", json=bundle, headers=wrong.gm)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "ruleset"]
    # a level-up's body is read as the log serves it: one that is no level-up is refused, nothing written
    bundle["level_ups"][0]["body"]["kind"] = "test"
    r = client.post(f"/v1/campaigns/{other.id}/characters/import", json=bundle, headers=other.gm)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][:4] == ["body", "level_ups", 0, "body"], r.text
    assert len(client.get(f"/v1/campaigns/{other.id}/characters", headers=other.gm).json()["items"]) == 1


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


def test_issue29_followup_a_campaign_import_sends_its_events_as_each_viewer_reads_them(client):
    """API.md round 3: "an import" is a change the event mirror tells: the players, the characters
    (the GM and the owner the whole of each, the other players what `player_access` grants) and
    the encounters of the new campaign; a dry run sends nothing."""
    cid, gm = _world(client, "great-cosmos")
    bundle = client.get(f"/v1/campaigns/{cid}/export", headers=gm).json()
    assert client.post("/v1/campaigns/import", params={"dry_run": "true"}, json=bundle).status_code == 200
    new = client.post("/v1/campaigns/import", json=bundle).json()
    new_gm = {"Authorization": f"Bearer {new['gm_token']}"}
    owner = {"Authorization": f"Bearer {new['players'][0]['token']}"}
    seen = read_events(client, new["id"], new_gm)
    assert [e["type"] for e in seen] == [
        "player.created",
        "character.created",
        "character.created",
        "encounter.created",
    ]
    assert [e["id"] for e in seen] == [1, 2, 3, 4]
    characters = {
        c["name"]: c for c in client.get(f"/v1/campaigns/{new['id']}/characters", headers=new_gm).json()["items"]
    }
    assert seen[0]["data"]["id"] == new["players"][0]["id"] and seen[0]["data"]["name"] == "Owner"
    assert [e["data"]["id"] for e in seen[1:3]] == [characters["Hero"]["id"], characters["Foe"]["id"]]
    assert seen[1]["data"]["sheet"] == characters["Hero"]["sheet"]
    # the owner sees its hero; the foe is an NPC (`none` to the other players): not told of it
    theirs = read_events(client, new["id"], owner)
    assert [e["type"] for e in theirs] == ["player.created", "character.created", "encounter.created"]
    assert theirs[1]["data"]["id"] == characters["Hero"]["id"]


def test_issue29_followup_imports_take_bundles_over_max_body_bytes_up_to_their_own_limit(client, database_url):
    """A bundle may exceed MAX_BODY_BYTES (a 10,000-entry campaign is ~5 MB): the import routes
    have IMPORT_MAX_BODY_BYTES; every other route keeps MAX_BODY_BYTES."""
    cid, gm = _world(client, "great-cosmos")
    bundle = client.get(f"/v1/campaigns/{cid}/export", headers=gm).json()
    body = json.dumps(bundle).encode()  # sent as these bytes
    size = len(body)
    as_json = {"Content-Type": "application/json"}
    small = 2048
    assert size > 2 * small
    roomy = create_app(settings_for(database_url).model_copy(update={"max_body_bytes": small}))
    tight = create_app(
        settings_for(database_url).model_copy(update={"max_body_bytes": small, "import_max_body_bytes": size - 1})
    )
    with TestClient(roomy) as big, TestClient(tight) as strict:
        r = big.post("/v1/campaigns/import", content=body, headers=as_json)
        assert r.status_code == 201, r.text
        new_gm = {"Authorization": f"Bearer {r.json()['gm_token']}"}
        one = big.get(f"/v1/characters/{bundle['characters'][0]['id']}/export", headers=gm).json()
        one["character"]["metadata"] = {f"k{i}": "v" * 400 for i in range(8)}  # over 2 KB, a valid character
        r = big.post(f"/v1/campaigns/{r.json()['id']}/characters/import", json=one, headers=new_gm)
        assert r.status_code == 201, r.text
        long_name = {"name": "x" * small, "ruleset": "great-cosmos"}
        assert big.post("/v1/campaigns", json=long_name).status_code == 413  # elsewhere, the usual limit
        r = strict.post("/v1/campaigns/import", content=body, headers=as_json)
        assert r.status_code == 413 and f"{size - 1} bytes" in r.json()["detail"]


def test_issue25_item3_values_stored_while_lax_are_read_as_todays_types_everywhere(
    client, campaign_factory, db_session
):
    """What the export sends (above) the reads send too: GET of the character, its list, GET of the
    campaign. A typed client (openapi.json says boolean) never receives the text stored before the
    field became strict; the stored row is left as it was."""
    from sqlalchemy import select

    from app.models.tables import Character

    c, hero, flag = _stored_while_lax(client, campaign_factory, db_session)
    assert client.get(f"/v1/characters/{hero['id']}", headers=c.gm).json()["sheet"]["down"] is False
    listed = client.get(f"/v1/campaigns/{c.id}/characters", headers=c.gm).json()["items"]
    assert [h["sheet"]["down"] for h in listed] == [False]
    assert client.get(f"/v1/campaigns/{c.id}", headers=c.gm).json()["options"][flag] is True
    db_session.expire_all()
    stored = db_session.execute(select(Character.sheet).where(Character.id == hero["id"])).scalar_one()
    assert stored["down"] == "false"  # read as today's type, not rewritten by a read
