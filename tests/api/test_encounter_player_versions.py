"""A player's `version` and ETag of an encounter count only the changes that player was told of
(API.md round 4, "Input and views"): a change it may not see — a sheet edit a `status` fight shows
as the same word, a hidden combatant's action — leaves its ETag (a 304), its list entry and its
stream as they were, so hidden changes cannot be counted; one it sees moves its version by one."""

from __future__ import annotations

from tests.api.encounter_support import Table, ids, table
from tests.api.support import read_events
from tests.factories import gc_fighter, wa_fighter

__all__ = ["table"]


def _get(t: Table, eid: str, headers: dict, tag: str | None = None):
    return t.client.get(f"/v1/encounters/{eid}", headers={**headers, **({"If-None-Match": tag} if tag else {})})


def _updates(t: Table, headers: dict) -> list[dict]:
    return [e["data"] for e in read_events(t.client, t.c.id, headers) if e["type"].startswith("encounter.")]


def _status_fight(t: Table) -> tuple[str, str, str]:
    """A `status` fight: Alice's hero and the GM's ogre (hp 12 of 12)."""
    hero = t.character("Aiko", wa_fighter(dex=3), kind="pc", player=t.alice)
    ogre = t.character("Ogre", wa_fighter())
    s = t.encounter(
        [{"character_id": hero, "side": "heroes"}, {"character_id": ogre, "side": "foes"}],
        {"hp_visibility": "status"},
    )
    return s["id"], hero, ogre


def _hp(t: Table, character_id: str, hp: int) -> None:
    r = t.client.patch(f"/v1/characters/{character_id}", json={"sheet": {"hp": hp}}, headers=t.gm)
    assert r.status_code == 200, r.text


def test_a_sheet_edit_a_status_fight_shows_the_same_leaves_the_players_etag(table):
    t = table("worlds-awakening")
    eid, _, ogre = _status_fight(t)
    _hp(t, ogre, 10)  # unhurt -> wounded: every player sees it
    bob = _get(t, eid, t.bob.headers)
    tag, version = bob.headers["ETag"], bob.json()["version"]
    told = _updates(t, t.bob.headers)
    gm_version = t.state(eid)["version"]

    _hp(t, ogre, 9)  # still "wounded": the GM's version moves, no player's
    assert t.state(eid)["version"] == gm_version + 1
    again = _get(t, eid, t.bob.headers, tag)
    assert again.status_code == 304, "a player counted a hidden hp edit"
    assert _get(t, eid, t.alice.headers).json()["version"] == version
    assert _updates(t, t.bob.headers) == told, "a player's stream told of a change it cannot see"
    listed = t.client.get(f"/v1/campaigns/{t.c.id}/encounters", headers=t.bob.headers).json()["items"]
    assert [e["version"] for e in listed] == [version]
    assert listed[0]["updated_at"] == listed[0]["created_at"]

    _hp(t, ogre, 5)  # wounded -> bloodied: told, one more
    moved = _get(t, eid, t.bob.headers, tag)
    assert moved.status_code == 200 and moved.json()["version"] == version + 1
    assert moved.json()["combatants"][1]["resources"]["hp"] == {"status": "bloodied"}
    assert _updates(t, t.bob.headers)[-1] == {"id": eid, "version": version + 1}
    assert t.state(eid)["version"] == gm_version + 2


def test_the_owner_is_told_of_its_own_pools_the_others_are_not(table):
    t = table("worlds-awakening")
    eid, hero, _ = _status_fight(t)
    _hp(t, hero, 11)  # unhurt -> wounded: told to every player
    alice, bob = _get(t, eid, t.alice.headers), _get(t, eid, t.bob.headers)
    _hp(t, hero, 10)  # still "wounded" to Bob; Alice reads her own hp exactly
    assert _get(t, eid, t.bob.headers, bob.headers["ETag"]).status_code == 304
    mine = _get(t, eid, t.alice.headers, alice.headers["ETag"])
    assert mine.status_code == 200 and mine.json()["version"] == alice.json()["version"] + 1
    assert mine.json()["combatants"][0]["resources"]["hp"] == {"value": 10, "max": 12}
    assert _updates(t, t.alice.headers)[-1] == {"id": eid, "version": alice.json()["version"] + 1}


def test_a_hidden_combatants_action_moves_no_players_version_and_leaves_no_gap(table):
    t = table("worlds-awakening")
    hero = t.character("Aiko", wa_fighter(dex=3), kind="pc", player=t.alice)
    spy = t.character("Spy", wa_fighter())
    s = t.encounter([{"character_id": hero, "side": "heroes"}, {"character_id": spy, "side": "foes", "hidden": True}])
    eid = s["id"]
    spy_id = next(c["id"] for c in s["combatants"] if c["character_id"] == spy)
    t.start(eid, seed=3)
    bob = _get(t, eid, t.bob.headers)
    tag, version = bob.headers["ETag"], bob.json()["version"]
    gm_version = t.state(eid)["version"]
    t.act(eid, {"type": "damage", "target_id": spy_id, "amount": 1})  # the GM hurts its hidden spy
    t.act(eid, {"type": "heal", "target_id": spy_id, "amount": 1})
    assert t.state(eid)["version"] == gm_version + 2
    assert _get(t, eid, t.bob.headers, tag).status_code == 304
    hero_id = ids(t.state(eid))["Aiko"]
    seen = t.act(eid, {"type": "damage", "target_id": hero_id, "amount": 1})
    assert seen["encounter_version"] == gm_version + 3  # the GM's count
    after = _get(t, eid, t.bob.headers)
    assert after.json()["version"] == version + 1, "a player's version counts only what it was told"
    history = t.client.get(f"/v1/encounters/{eid}/actions", headers=t.bob.headers).json()["items"]
    assert [(a["type"], a["encounter_version"]) for a in history] == [("damage", version + 1), ("start", version)]
    one = t.client.get(f"/v1/encounters/{eid}/actions/{seen['id']}", headers=t.bob.headers).json()
    assert one["encounter_version"] == version + 1
    told = [e for e in read_events(t.client, t.c.id, t.bob.headers) if e["type"] == "encounter.action"]
    assert [(e["data"]["version"], e["data"]["action"]["encounter_version"]) for e in told] == [
        (version + 1, version + 1)
    ]


def test_a_players_if_match_is_its_own_version(table):
    t = table("great-cosmos")
    hero = t.character("Aiko", gc_fighter(), kind="pc", player=t.alice)
    ogre = t.character("Ogre", gc_fighter())
    eid = t.encounter(
        [{"character_id": hero, "side": "heroes"}, {"character_id": ogre, "side": "foes"}],
        {"hp_visibility": "status"},
    )["id"]
    _hp(t, ogre, 90)
    _hp(t, ogre, 89)  # still "wounded" to Alice: the GM's version is 3, hers 2
    alice = _get(t, eid, t.alice.headers)
    assert t.state(eid)["version"] != alice.json()["version"]
    combatant = ids(alice.json())["Aiko"]
    path = f"/v1/encounters/{eid}/combatants/{combatant}"
    stale = t.client.patch(path, json={"reaction": "parry"}, headers={**t.alice.headers, "If-Match": '"1"'})
    assert stale.status_code == 412, stale.text
    assert stale.json()["current_version"] == alice.json()["version"]
    ok = t.client.patch(
        path, json={"reaction": "parry"}, headers={**t.alice.headers, "If-Match": alice.headers["ETag"]}
    )
    assert ok.status_code == 200, ok.text
    assert ok.json()["version"] == alice.json()["version"] + 1 and ok.headers["ETag"] == f'"{ok.json()["version"]}"'


def test_the_owner_of_a_hidden_combatant_is_told_of_its_changes_alone(table):
    t = table("worlds-awakening")
    scout = t.character("Scout", wa_fighter(), kind="pc", player=t.alice)
    s = t.encounter([{"character_id": scout, "side": "heroes", "hidden": True}])
    eid, cid = s["id"], s["combatants"][0]["id"]
    alice, bob = _get(t, eid, t.alice.headers), _get(t, eid, t.bob.headers)
    r = t.client.patch(f"/v1/encounters/{eid}/combatants/{cid}", json={"position": {"x": 4, "y": 2}}, headers=t.gm)
    assert r.status_code == 200, r.text
    assert _get(t, eid, t.bob.headers, bob.headers["ETag"]).status_code == 304
    mine = _get(t, eid, t.alice.headers, alice.headers["ETag"])
    assert mine.status_code == 200 and mine.json()["combatants"][0]["position"] == {"x": 4, "y": 2}
    assert mine.json()["version"] == alice.json()["version"] + 1
    assert _updates(t, t.alice.headers)[-1] == {"id": eid, "version": alice.json()["version"] + 1}
    assert all(e["version"] == bob.json()["version"] for e in _updates(t, t.bob.headers))


def test_an_action_elsewhere_a_status_fight_shows_the_same_leaves_the_players_etag(table):
    """The ogre is in a `status` fight and in an `exact` one: a blow in the exact fight that leaves it
    "wounded" moves the status fight for the GM alone (its view there reads the same words to Bob), as a
    sheet edit does."""
    t = table("worlds-awakening")
    watched, hero, ogre = _status_fight(t)
    _hp(t, ogre, 10)  # unhurt -> wounded: every player sees it
    brawl = t.encounter([{"character_id": hero, "side": "heroes"}, {"character_id": ogre, "side": "foes"}])["id"]
    t.start(brawl, seed=3)
    bob = _get(t, watched, t.bob.headers)
    gm_version = t.state(watched)["version"]
    t.act(brawl, {"type": "damage", "target_id": ids(t.state(brawl))["Ogre"], "amount": 1})  # 9: still wounded
    assert t.state(watched)["version"] == gm_version + 1  # the GM's view shows hp 9
    assert _get(t, watched, t.bob.headers, bob.headers["ETag"]).status_code == 304, "Bob counted a hidden blow"
    assert all(e["version"] <= bob.json()["version"] for e in _updates(t, t.bob.headers) if e["id"] == watched)


def test_a_combat_entry_of_the_roll_log_says_the_players_own_version(table):
    """The roll log (`GET …/rolls`, `…/rolls/{id}`) gives a player a combat entry's `encounter_version`
    as the fight's own routes do: the player's number, not the GM's (which counts the hidden edits)."""
    t = table("worlds-awakening")
    eid, hero, ogre = _status_fight(t)
    t.start(eid)
    _hp(t, ogre, 11)  # unhurt -> wounded: told
    _hp(t, ogre, 10)  # still wounded: the GM's version moves, no player's
    state = t.state(eid)
    c = ids(state)
    action = t.act(eid, {"type": "condition", "target_id": c["Aiko"], "add": {"name": "cursed"}})
    mine = t.client.get(f"/v1/encounters/{eid}/actions/{action['id']}", headers=t.bob.headers).json()
    assert mine["encounter_version"] < action["encounter_version"]  # the hidden edit: the GM's count only
    page = t.client.get(f"/v1/campaigns/{t.c.id}/rolls", params={"kind": "combat"}, headers=t.bob.headers).json()
    logged = next(e for e in page["items"] if e["id"] == action["id"])
    assert logged["encounter_version"] == mine["encounter_version"]
    one = t.client.get(f"/v1/campaigns/{t.c.id}/rolls/{action['id']}", headers=t.bob.headers).json()
    assert one["encounter_version"] == mine["encounter_version"]
    gm = t.client.get(f"/v1/campaigns/{t.c.id}/rolls/{action['id']}", headers=t.gm).json()
    assert gm["encounter_version"] == action["encounter_version"]
