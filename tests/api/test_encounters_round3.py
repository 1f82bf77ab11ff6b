"""Issue 25's encounter leftovers through HTTP: `metadata` on encounters (item 9), NPC copies on
distinct free cells near the original and GC-D1's distance named in the encounter's description
(item 11), a character change that the encounter view shows moves the encounter's ETag, and
`CombatChange.before/after` typed in the spec (item 3)."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter

from app.models.results.combat import CombatChange
from app.openapi import render

from tests.api.encounter_support import Table, attack, ids, setup, table
from tests.api.support import assert_validation, read_events
from tests.factories import gc_fighter, wa_fighter
from tests.rulesets.asgard.test_combat import extra, foe as as_foe, hero

__all__ = ["table"]

VTT = {"foundry_combat": "Combat.a1b2", "discord_thread": "998877"}


def _encounter(t: Table, **extra) -> dict:
    hero = t.character("Aiko", wa_fighter(), kind="pc", player=t.alice)
    r = t.client.post(
        f"/v1/campaigns/{t.c.id}/encounters",
        json={"name": "Ambush", "combatants": [{"character_id": hero}], **extra},
        headers=t.gm,
    )
    assert r.status_code == 201, r.text
    return r.json()


# --- item 9: metadata on encounters ---------------------------------------------------------------


def test_issue25_item9_an_encounter_keeps_its_metadata_and_patches_it_by_merge(table):
    t = table("worlds-awakening")
    s = _encounter(t, metadata=VTT)
    assert s["metadata"] == VTT
    path = f"/v1/encounters/{s['id']}"
    assert t.state(s["id"])["metadata"] == VTT
    assert t.state(s["id"], headers=t.alice.headers)["metadata"] == VTT  # returned as stored, to every member
    r = t.client.patch(path, json={"metadata": {"discord_thread": None, "roll20": "t-9"}}, headers=t.gm)
    assert r.status_code == 200, r.text
    expected = {"foundry_combat": "Combat.a1b2", "roll20": "t-9"}
    assert r.json()["metadata"] == expected and r.json()["version"] == 2
    assert r.json()["name"] == "Ambush"  # the other fields untouched
    assert t.state(s["id"])["metadata"] == expected
    listed = t.client.get(f"/v1/campaigns/{t.c.id}/encounters", headers=t.gm).json()["items"]
    assert [e["metadata"] for e in listed] == [expected]


def test_issue25_item9_an_encounter_without_metadata_has_an_empty_map(table):
    t = table("worlds-awakening")
    s = _encounter(t)
    assert s["metadata"] == {} and t.state(s["id"])["metadata"] == {}


def test_issue25_item9_a_players_encounter_metadata_change_is_refused(table):
    t = table("worlds-awakening")
    s = _encounter(t, metadata=VTT)
    r = t.client.patch(f"/v1/encounters/{s['id']}", json={"metadata": {"a": "b"}}, headers=t.alice.headers)
    assert r.status_code == 403
    assert t.state(s["id"])["metadata"] == VTT


def test_issue25_item9_metadata_changes_on_an_ended_encounter_its_name_does_not(table):
    t = table("worlds-awakening")
    s = _encounter(t)
    t.start(s["id"], dice=[])
    assert t.client.post(f"/v1/encounters/{s['id']}/end", headers=t.gm).status_code == 200
    path = f"/v1/encounters/{s['id']}"
    r = t.client.patch(path, json={"metadata": {"archive": "2026-12"}}, headers=t.gm)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"] == {"archive": "2026-12"}
    assert t.client.patch(path, json={"name": "Later"}, headers=t.gm).status_code == 409
    assert t.client.patch(path, json={}, headers=t.gm).status_code == 409


@pytest.mark.parametrize(
    ("metadata", "loc"),
    [
        ({f"k{i}": "v" for i in range(51)}, ["body", "metadata"]),
        ({"k" * 41: "v"}, ["body", "metadata", "k" * 41, "[key]"]),
        ({"k": "v" * 501}, ["body", "metadata", "k"]),
        ({"k": 7}, ["body", "metadata", "k"]),
    ],
)
def test_issue25_item9_encounter_metadata_out_of_bounds_is_a_422_and_nothing_is_created(
    table, metadata, loc, count_rows
):
    t = table("worlds-awakening")
    hero = t.character("Aiko", wa_fighter())
    before = count_rows("encounter")
    body = {"name": "Ambush", "combatants": [{"character_id": hero}], "metadata": metadata}
    assert_validation(t.client.post(f"/v1/campaigns/{t.c.id}/encounters", json=body, headers=t.gm), [loc])
    assert count_rows("encounter") == before


def test_issue25_item9_an_encounter_patch_beyond_fifty_keys_is_a_422_and_changes_nothing(table):
    t = table("worlds-awakening")
    full = {f"k{i}": "v" for i in range(50)}
    s = _encounter(t, metadata=full)
    path = f"/v1/encounters/{s['id']}"
    r = t.client.patch(path, json={"metadata": {"one_more": "v"}}, headers=t.gm)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "metadata"]
    after = t.state(s["id"])
    assert after["metadata"] == full and after["version"] == 1
    r = t.client.patch(path, json={"metadata": {"k0": None, "one_more": "v"}}, headers=t.gm)
    assert r.status_code == 200 and len(r.json()["metadata"]) == 50 and "k0" not in r.json()["metadata"]


def test_issue25_item9_gc_encounter_metadata_survives_the_fight(table):
    t = table("great-cosmos")
    a, b = (t.character(n, gc_fighter(55)) for n in ("A", "B"))
    body = {"name": "Duel", "combatants": [{"character_id": a}, {"character_id": b}], "metadata": VTT}
    s = t.post(f"/v1/campaigns/{t.c.id}/encounters", body)
    t.start(s["id"], dice=[1, 2])
    t.next_turn(s["id"])
    assert t.state(s["id"])["metadata"] == VTT
    assert ids(s).keys() == {"A", "B"}


# --- item 11: NPC copies on distinct free cells; GC-D1's distance in the description ---------------


def _cells(state: dict) -> dict[str, tuple[int, int] | None]:
    return {c["name"]: (c["position"]["x"], c["position"]["y"]) if c["position"] else None for c in state["combatants"]}


def test_issue25_item11_gc_d1_npc_copies_take_the_nearest_free_cells_in_a_documented_order(table):
    t = table("great-cosmos")
    hero = t.character("Aiko", gc_fighter(55), kind="pc", player=t.alice)
    goblin = t.character("Goblin", gc_fighter(40))
    s = t.post(
        f"/v1/campaigns/{t.c.id}/encounters",
        {
            "name": "Ambush",
            "combatants": [
                {"character_id": hero, "position": {"x": 4, "y": 4}},
                {"character_id": goblin, "count": 4, "position": {"x": 3, "y": 4}},
            ],
        },
    )
    # distance 0: (3, 4); distance 1 (|dx| + |dy|, GC-D1), by y then x: (3, 3), (2, 4), [(4, 4) Aiko's], (3, 5)
    assert _cells(s) == {"Aiko": (4, 4), "Goblin 1": (3, 4), "Goblin 2": (3, 3), "Goblin 3": (2, 4), "Goblin 4": (3, 5)}
    # more copies later: the cells of every combatant already there are taken; distance 2 next, by y then x
    s = t.post(
        f"/v1/encounters/{s['id']}/combatants", {"character_id": goblin, "count": 3, "position": {"x": 3, "y": 4}}
    )
    assert {k: v for k, v in _cells(s).items() if k in ("Goblin 5", "Goblin 6", "Goblin 7")} == {
        "Goblin 5": (3, 2),
        "Goblin 6": (2, 3),
        "Goblin 7": (4, 3),
    }
    assert len(set(_cells(s).values())) == 8  # every combatant on its own cell


def test_issue25_item11_copies_without_a_position_stay_off_the_grid(table):
    t = table("worlds-awakening")
    goblin = t.character("Goblin", wa_fighter())
    s = t.post(
        f"/v1/campaigns/{t.c.id}/encounters", {"name": "A", "combatants": [{"character_id": goblin, "count": 2}]}
    )
    assert _cells(s) == {"Goblin 1": None, "Goblin 2": None}


def test_issue25_item11_copies_at_the_grids_edge_stay_on_it(table):
    t = table("worlds-awakening")
    goblin = t.character("Goblin", wa_fighter())
    edge = {"x": 100_000, "y": 100_000}
    s = t.post(
        f"/v1/campaigns/{t.c.id}/encounters",
        {"name": "A", "combatants": [{"character_id": goblin, "count": 3, "position": edge}]},
    )
    assert _cells(s) == {"Goblin 1": (100_000, 100_000), "Goblin 2": (100_000, 99_999), "Goblin 3": (99_999, 100_000)}


def test_issue25_item11_gc_d1_the_catalogue_says_how_distance_is_counted(client):
    grid = client.get("/v1/rulesets/great-cosmos").json()["combat"]["grid"]
    assert grid["metric"] == "manhattan" and grid["rule"] == "GC-D1"
    assert "|dx| + |dy|" in grid["description"] and "no diagonals" in grid["description"]
    other = client.get("/v1/rulesets/asgard").json()["combat"]["grid"]
    assert other["metric"] == "manhattan" and other["rule"] is None


# --- a character change the encounter view shows moves the encounter's ETag ---------------------


def _get(t: Table, eid: str, tag: str | None = None, headers=None):
    return t.client.get(
        f"/v1/encounters/{eid}", headers={**(headers or t.gm), **({"If-None-Match": tag} if tag else {})}
    )


def _fight(t: Table) -> tuple[dict, str, str]:
    hero = t.character("Aiko", wa_fighter(), kind="pc", player=t.alice)
    goblin = t.character("Goblin", wa_fighter())
    body = {"name": "Ambush", "combatants": [{"character_id": hero}, {"character_id": goblin, "hidden": True}]}
    return t.post(f"/v1/campaigns/{t.c.id}/encounters", body), hero, goblin


def test_issue25_a_gm_sheet_edit_of_a_combatant_moves_the_encounters_etag(table):
    t = table("worlds-awakening")
    s, hero, _ = _fight(t)
    eid = s["id"]
    tag = _get(t, eid).headers["ETag"]
    assert _get(t, eid, tag).status_code == 304
    r = t.client.patch(f"/v1/characters/{hero}", json={"sheet": {"hp": 3}}, headers=t.gm)
    assert r.status_code == 200, r.text
    r = _get(t, eid, tag)
    assert r.status_code == 200, "a stale 304: the view shows the new hp"
    assert r.headers["ETag"] == '"2"' and r.json()["version"] == 2
    assert next(c for c in r.json()["combatants"] if c["name"] == "Aiko")["resources"]["hp"]["value"] == 3
    assert _get(t, eid, r.headers["ETag"]).status_code == 304
    # the new version is the one If-Match names
    renamed = t.client.patch(f"/v1/encounters/{eid}", json={"name": "B"}, headers={**t.gm, "If-Match": '"2"'})
    assert renamed.status_code == 200, renamed.text
    updated = [e["data"] for e in read_events(t.client, t.c.id, t.gm) if e["type"] == "encounter.updated"]
    assert updated == [{"id": eid, "version": 2}, {"id": eid, "version": 3}]


def test_issue25_a_player_access_or_name_change_moves_it_a_metadata_change_does_not(table):
    t = table("worlds-awakening")
    s, hero, _ = _fight(t)
    eid = s["id"]
    path = f"/v1/characters/{hero}"
    assert t.client.patch(path, json={"metadata": {"vtt": "x"}}, headers=t.gm).status_code == 200
    assert t.state(eid)["version"] == 1  # not shown in the encounter: nothing moved
    assert t.client.patch(path, json={"player_access": "limited"}, headers=t.gm).status_code == 200
    assert t.state(eid)["version"] == 2
    assert t.client.patch(path, json={"name": "Aiko la brave"}, headers=t.alice.headers).status_code == 200
    moved = t.state(eid)
    assert moved["version"] == 3 and "Aiko la brave" in [c["name"] for c in moved["combatants"]]


def test_issue25_a_hidden_combatants_change_moves_the_etag_its_event_is_the_gms(table):
    t = table("worlds-awakening")
    s, _, goblin = _fight(t)
    eid = s["id"]
    assert t.client.patch(f"/v1/characters/{goblin}", json={"sheet": {"hp": 1}}, headers=t.gm).status_code == 200
    assert t.state(eid)["version"] == 2
    gm = [e["data"] for e in read_events(t.client, t.c.id, t.gm) if e["type"] == "encounter.updated"]
    players = [e["data"] for e in read_events(t.client, t.c.id, t.alice.headers) if e["type"] == "encounter.updated"]
    assert gm == [{"id": eid, "version": 2}] and players == []


def test_issue25_deleting_a_combatants_character_moves_the_etag(table):
    t = table("worlds-awakening")
    s, _, goblin = _fight(t)
    eid = s["id"]
    tag = _get(t, eid).headers["ETag"]
    assert t.client.delete(f"/v1/characters/{goblin}", headers=t.gm).status_code == 204
    r = _get(t, eid, tag)
    assert r.status_code == 200 and r.json()["version"] == 2
    assert [c["name"] for c in r.json()["combatants"]] == ["Aiko", None]


def test_issue25_a_rolling_operations_sheet_change_moves_the_encounters_etag(table):
    """A level-up, a test or a character action changes a sheet as an edit does: the fights showing
    that character move too (a conditional GET with the old ETag was a stale 304 after a level-up
    raised the hp the fight shows); one that changes no sheet moves nothing; a hidden GM roll's
    move is told to the GM and the character's owner alone (as its `character.updated` is)."""
    t = table("great-cosmos")
    hero = t.character("Aiko", gc_fighter(), kind="pc", player=t.alice)
    eid = t.post(f"/v1/campaigns/{t.c.id}/encounters", {"name": "Gué", "combatants": [{"character_id": hero}]})["id"]
    tag = _get(t, eid).headers["ETag"]
    plain = t.client.post(f"/v1/characters/{hero}/tests", json={"stat": "force", "dice": [50]}, headers=t.gm)
    assert plain.status_code == 201 and plain.json()["effects"]["karma"]["after"] == 0, plain.text
    assert _get(t, eid, tag).status_code == 304  # no sheet changed: nothing moved
    body = {"mode": "two_d10", "stats": ["force", "agilite"], "chance_bonus_pool": "hp", "seed": 7}
    assert t.client.post(f"/v1/characters/{hero}/level-ups", json=body, headers=t.gm).status_code == 201
    r = _get(t, eid, tag)
    assert r.status_code == 200, "a stale 304: the view shows the new hp"
    assert r.json()["version"] == 2 and r.json()["combatants"][0]["resources"]["hp"] == {"value": 105, "max": 105}
    hidden = t.client.post(
        f"/v1/characters/{hero}/tests", json={"stat": "force", "dice": [1], "hidden": True}, headers=t.gm
    )
    assert hidden.status_code == 201 and hidden.json()["effects"]["karma"]["after"] == -1, hidden.text
    assert t.state(eid)["version"] == 3
    gm = [e["data"] for e in read_events(t.client, t.c.id, t.gm) if e["type"] == "encounter.updated"]
    alice = [e["data"] for e in read_events(t.client, t.c.id, t.alice.headers) if e["type"] == "encounter.updated"]
    assert gm == [{"id": eid, "version": 2}, {"id": eid, "version": 3}]
    assert alice == [{"id": eid, "version": 2}, {"id": eid, "version": 3}]
    bob = [e["data"] for e in read_events(t.client, t.c.id, t.bob.headers) if e["type"] == "encounter.updated"]
    assert bob == [{"id": eid, "version": 2}]


def test_issue25_an_action_changing_a_character_moves_the_other_fights_showing_it(table):
    """A character in two fights at once: an attack in one that changes its sheet moves the other (its
    view shows the new vitality: a conditional GET with its old ETag was a stale 304), told to the GM
    alone where the character is hidden; so does the attack's revert; an action that changes no sheet
    moves no other fight."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", as_foe(), "npc"), start=[4, 4, 4, 3, 3, 3])
    foe = next(c["character_id"] for c in t.state(eid)["combatants"] if c["name"] == "Foe")
    shown = t.encounter([{"character_id": foe}])["id"]
    secret = t.encounter([{"character_id": foe, "hidden": True}])["id"]
    tags = {other: _get(t, other).headers["ETag"] for other in (shown, secret)}
    before = {e["id"] for e in read_events(t.client, t.c.id, t.gm)}
    hit = attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 3], weapon="epee")  # AS-C1..C3: 2 + 4 − 1 = 5
    for other in (shown, secret):
        r = _get(t, other, tags[other])
        assert r.status_code == 200, "a stale 304: the view shows the new vitality"
        assert r.json()["version"] == 2 and r.json()["combatants"][0]["resources"]["vitality"]["value"] == 5
    events = [e for e in read_events(t.client, t.c.id, t.gm) if e["id"] not in before]
    assert [e["type"] for e in events][-2:] == ["encounter.updated", "encounter.updated"]
    assert sorted((e["data"]["id"], e["data"]["version"]) for e in events[-2:]) == sorted([(shown, 2), (secret, 2)])
    alice = [e["data"] for e in read_events(t.client, t.c.id, t.alice.headers) if e["type"] == "encounter.updated"]
    assert [d for d in alice if d["id"] != eid] == [{"id": shown, "version": 2}]  # `secret`'s: the GM's alone
    # a revert names no combatant: the fights showing what it restores are read when it saves
    t.post(f"/v1/encounters/{eid}/actions/{hit['id']}/revert", {})
    for other in (shown, secret):
        view = t.state(other)
        assert view["version"] == 3 and view["combatants"][0]["resources"]["vitality"]["value"] == 10
    t.next_turn(eid)  # changes no sheet
    assert [t.state(other)["version"] for other in (shown, secret)] == [3, 3]


def test_issue25_a_character_in_no_fight_moves_nothing(table):
    t = table("worlds-awakening")
    s, _, _ = _fight(t)
    loner = t.character("Loner", wa_fighter())
    assert t.client.patch(f"/v1/characters/{loner}", json={"sheet": {"hp": 2}}, headers=t.gm).status_code == 200
    assert t.state(s["id"])["version"] == 1


# --- item 3: CombatChange.before/after typed in the spec --------------------------------------------

SPEC = json.loads(render())
MEMBERS = {ref["$ref"].rsplit("/", 1)[1] for ref in SPEC["components"]["schemas"]["CombatChange"]["anyOf"]}


def _fits(change: dict) -> list[str]:
    """The members of the served spec's CombatChange this change is valid against."""
    out = []
    for name in sorted(MEMBERS):
        root = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": SPEC["components"],
            "$ref": f"#/components/schemas/{name}",
        }
        if Draft202012Validator(root).is_valid(change):
            out.append(name)
    return out


def test_issue25_item3_every_change_of_a_fight_fits_exactly_one_typed_change(table):
    t = table("great-cosmos", {"players_may_enter_dice": True})
    aiko = t.character("Aiko", gc_fighter(60), kind="pc", player=t.alice)
    brute = t.character("Brute", gc_fighter(40))
    shade = t.character("Shade", gc_fighter(20))
    s = t.post(
        f"/v1/campaigns/{t.c.id}/encounters",
        {
            "name": "Typed",
            "options": {"hp_visibility": "status"},
            "combatants": [
                {"character_id": aiko, "position": {"x": 0, "y": 0}},
                {"character_id": brute, "position": {"x": 1, "y": 0}},
                {"character_id": shade, "position": {"x": 5, "y": 5}, "hidden": True},
            ],
        },
    )
    eid, n = s["id"], ids(s)
    t.start(eid, dice=[])
    t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "illumination", "dice": [4]})
    t.act(eid, {"type": "damage", "target_id": n["Brute"], "amount": 5})
    t.act(eid, {"type": "condition", "target_id": n["Brute"], "add": {"name": "stunned", "rounds": 1}})
    for _ in range(3):
        t.next_turn(eid)  # Brute's turn, then Shade's (revealed on its turn), then a new round
    t.act(eid, {"type": "move", "actor_id": n["Aiko"], "to": {"x": 0, "y": 1}})
    reverted = t.act(eid, {"type": "heal", "target_id": n["Brute"], "amount": 1})
    t.post(f"/v1/encounters/{eid}/actions/{reverted['id']}/revert", {})
    kinds: set[str] = set()
    for headers in (t.gm, t.alice.headers):
        for action in t.client.get(f"/v1/encounters/{eid}/actions", headers=headers).json()["items"]:
            for change in action["changes"]:
                fits = _fits(change)
                assert len(fits) == 1, (change, fits)
                kinds.update(fits)
                assert type(TypeAdapter(CombatChange).validate_python(change)).__name__ == fits[0]
    assert {
        "ResourceChange",
        "SheetChange",
        "StatusChange",
        "RoundChange",
        "OrderChange",
        "CurrentChange",
        "PositionChange",
        "ConditionsChange",
        "CountersChange",
        "HiddenChange",
    } <= kinds, kinds


# --- hidden things are unknown things: step fields naming combatants (issue 21 item 4) -------------


def test_as_c11_a_hidden_group_members_id_never_reaches_a_player(table):
    """AS-C11: the group's steps list its members; a player reads only the members it sees (the
    hidden extra's id is left out), the GM every one; its log entry is then the GM's."""
    t = table("asgard")
    s = t.encounter(
        [
            {"character_id": t.character("Hero", hero(), kind="pc", player=t.alice)},
            {"character_id": t.character("E1", extra())},
            {"character_id": t.character("E2", extra()), "hidden": True},
        ]
    )
    eid, n = s["id"], ids(s)
    t.start(eid, dice=[1, 1, 2, 4, 4, 4, 3, 3, 3])  # E1 12, E2 9, Hero 9: E1 first
    a = t.act(
        eid,
        {
            "type": "attack",
            "actor_id": n["E1"],
            "target_id": n["Hero"],
            "dice": [4, 3, 3, 3, 3, 3],
            "group": [n["E2"]],
        },
    )
    gm_members = [s["members"] for s in a["steps"] if "members" in s]
    assert gm_members and all(n["E2"] in m for m in gm_members)
    mine = t.client.get(f"/v1/encounters/{eid}/actions/{a['id']}", headers=t.alice.headers).json()
    members = [s["members"] for s in mine["steps"] if "members" in s]
    assert members and all(n["E2"] not in m for m in members), members
    assert n["E2"] not in str(mine)
    log = t.client.get(f"/v1/campaigns/{t.c.id}/rolls", headers=t.alice.headers).json()["items"]
    assert a["id"] not in [e["id"] for e in log]


def test_issue25_item9_an_encounters_metadata_is_exported_and_imported(table):
    t = table("worlds-awakening")
    s = _encounter(t, metadata=VTT)
    bundle = t.client.get(f"/v1/campaigns/{t.c.id}/export", headers=t.gm).json()
    assert [e["metadata"] for e in bundle["encounters"]] == [VTT]
    imported = t.client.post("/v1/campaigns/import", json=bundle)
    assert imported.status_code == 201, imported.text
    gm = {"Authorization": f"Bearer {imported.json()['gm_token']}"}
    (copy,) = t.client.get(f"/v1/campaigns/{imported.json()['id']}/encounters", headers=gm).json()["items"]
    assert copy["id"] != s["id"] and copy["metadata"] == VTT
