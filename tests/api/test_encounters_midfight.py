"""Issue 27 item 5: a combatant added to a running fight (`POST …/combatants` while active) takes
its place in the turn order by its ruleset's initiative rule (GC-O1, RB-F4, WA-C4, AS-C13), rolled
with the request's table dice as at `start`; the current combatant stays current; it is an undoable
action (`join`) whose revert restores the fight exactly; a hidden one stays hidden from players;
an ended fight refuses it."""

from __future__ import annotations

import json

from tests.api.support import assert_problem, read_events
from tests.api.test_encounters import ids, order, table  # noqa: F401  (the fixture)
from tests.factories import as_fighter, gc_fighter, rb_fighter, wa_fighter


def _add(t, eid: str, body: dict, status: int = 201) -> dict:
    return t.post(f"/v1/encounters/{eid}/combatants", body, status=status)


def _revert(t, eid: str, action_id: str) -> dict:
    return t.post(f"/v1/encounters/{eid}/actions/{action_id}/revert", {})


def _comparable(state: dict) -> dict:
    return {k: v for k, v in state.items() if k not in ("version", "updated_at")}


def test_wa_c4_a_late_combatant_takes_its_place_by_ten_plus_dex_and_the_current_stays(table):
    t = table("worlds-awakening")
    s = t.encounter([{"character_id": t.character(n, wa_fighter(d))} for n, d in (("Quick", 5), ("Slow", 1))])
    eid = s["id"]
    t.start(eid, dice=[])
    t.next_turn(eid)  # Slow's turn now (slot 1)
    late = t.character("Late", wa_fighter(3))
    s = _add(t, eid, {"character_id": late, "dice": []})
    n = ids(s)
    assert order(s, n) == [(0, "Quick", 15, False), (1, "Late", 13, False), (2, "Slow", 11, False)]
    assert s["current"] == {"slot": 2, "combatant_id": n["Slow"], "combatant_ids": [n["Slow"]]}
    assert s["round"] == 1 and s["status"] == "active"
    action = s["action"]
    assert action["type"] == "join" and action["hidden"] is False
    wa = [st for st in action["steps"] if st["rule"] == "WA-C4"]
    assert [(st["combatant_id"], st["initiative"]) for st in wa] == [(n["Late"], 13)]
    assert next(c for c in s["combatants"] if c["name"] == "Late")["initiative"] == 13
    theirs = [e for e in read_events(t.client, t.c.id, t.alice.headers) if e["data"].get("action_id") == action["id"]]
    assert [e["type"] for e in theirs] == ["encounter.action"]  # API.md: an action, seen by the players
    # Late acts next round, after Quick
    t.next_turn(eid)
    assert t.state(eid)["current"]["combatant_id"] == n["Quick"]
    t.next_turn(eid)
    assert t.state(eid)["current"]["combatant_id"] == n["Late"]
    assert t.state(eid)["round"] == 2


def test_wa_c4_ties_roll_off_with_table_dice_and_the_newcomer_follows_its_equals(table):
    """WA-C4: two copies joining at once tie at 11: their d20 roll-off (table dice) orders them; a
    newcomer tied with one already there goes after it."""
    t = table("worlds-awakening")
    s = t.encounter([{"character_id": t.character("Hero", wa_fighter(1))}])
    eid = s["id"]
    t.start(eid, dice=[])
    orc = t.character("Orc", wa_fighter(1))
    r = t.client.post(
        f"/v1/encounters/{eid}/combatants", json={"character_id": orc, "count": 2, "dice": [3]}, headers=t.gm
    )
    assert assert_problem(r, 422, "dice-needed")["needed"]["die"] == "d20"
    s = _add(t, eid, {"character_id": orc, "count": 2, "dice": [3, 17]})
    n = ids(s)
    assert order(s, n) == [(0, "Hero", 11, False), (1, "Orc 2", 11, False), (2, "Orc 1", 11, False)]
    assert [(r["die"], r["value"], r["by"]) for r in s["action"]["rolls"]] == [
        ("d20", 3, n["Orc 1"]),
        ("d20", 17, n["Orc 2"]),
    ]
    assert s["current"]["combatant_id"] == n["Hero"] and s["current"]["slot"] == 0


def test_gc_o1_agilite_places_a_reinforcement_and_the_revert_restores_the_fight(table):
    t = table("great-cosmos")
    s = t.encounter([{"character_id": t.character(n, gc_fighter(a))} for n, a in (("Fast", 70), ("Slow", 30))])
    eid = s["id"]
    t.start(eid, dice=[])
    before = t.state(eid)
    s = _add(t, eid, {"character_id": t.character("Mid", gc_fighter(50)), "dice": []})
    n = ids(s)
    assert order(s, n) == [(0, "Fast", 70, False), (1, "Mid", 50, False), (2, "Slow", 30, False)]
    assert s["current"]["combatant_id"] == n["Fast"] and s["current"]["slot"] == 0
    assert [st["agilite"] for st in s["action"]["steps"] if st["rule"] == "GC-O1"] == [50]
    reverted = _revert(t, eid, s["action"]["id"])
    assert reverted["type"] == "revert"
    after = t.state(eid)
    assert _comparable(after) == _comparable(before)
    assert after["version"] == before["version"] + 2
    # the fight goes on as before: Slow after Fast
    t.next_turn(eid)
    assert t.state(eid)["current"]["combatant_id"] == n["Slow"]


def test_gc_o1_the_gms_initiative_replaces_agilite_for_a_late_combatant(table):
    t = table("great-cosmos")
    s = t.encounter([{"character_id": t.character(n, gc_fighter(a))} for n, a in (("Fast", 70), ("Slow", 30))])
    eid = s["id"]
    t.start(eid, dice=[])
    s = _add(t, eid, {"character_id": t.character("Boss", gc_fighter(10)), "initiative": 90})
    n = ids(s)
    assert order(s, n) == [(0, "Boss", 90, False), (1, "Fast", 70, False), (2, "Slow", 30, False)]
    assert s["current"] == {"slot": 1, "combatant_id": n["Fast"], "combatant_ids": [n["Fast"]]}


def test_rb_f4_a_late_hab_test_no_extra_action_and_a_critical_failure_loses_its_first_round(table):
    t = table("rulebook-d100")
    s = t.encounter([{"character_id": t.character(n, rb_fighter(60))} for n in ("A", "B")])
    eid = s["id"]
    t.start(eid, dice=[50, 20])  # B (level 4) then A (level 1)
    s = _add(t, eid, {"character_id": t.character("Ace", rb_fighter(60)), "dice": [3]})  # critical success
    n = ids(s)
    assert order(s, n) == [(0, "Ace", 12, False), (1, "B", 4, False), (2, "A", 1, False)]
    assert s["current"]["combatant_id"] == n["B"] and s["current"]["slot"] == 1
    assert [st["outcome"] for st in s["action"]["steps"] if st["rule"] == "RB-F4" and "outcome" in st] == [
        "critical_success"
    ]
    s = _add(t, eid, {"character_id": t.character("Oops", rb_fighter(60)), "dice": [99]})  # critical failure
    n = ids(s)
    oops = next(e for e in s["order"] if e["combatant_id"] == n["Oops"])
    assert (oops["slot"], oops["from_round"]) == (3, 2)
    t.next_turn(eid)  # B → A
    step = t.next_turn(eid)  # A → Oops does not act in round 1 → round 2
    assert {
        "rule": "RB-F4",
        "key": "does_not_act_this_round",
        "what": "does not act this round",
        "combatant_id": n["Oops"],
    } in step["steps"]
    assert t.state(eid)["current"]["combatant_id"] == n["Ace"]


def test_as_c13_a_late_perception_test_with_table_dice(table):
    t = table("asgard")
    s = t.encounter([{"character_id": t.character(n, as_fighter(p), kind="pc")} for n, p in (("High", 5), ("Low", 0))])
    eid = s["id"]
    t.start(eid, dice=[4, 4, 4, 1, 1, 1])  # High 17, Low 3
    s = _add(t, eid, {"character_id": t.character("Scout", as_fighter(2)), "dice": [3, 3, 3]})  # 11
    n = ids(s)
    assert order(s, n) == [(0, "High", 17, False), (1, "Scout", 11, False), (2, "Low", 3, False)]
    step = next(st for st in s["action"]["steps"] if st["rule"] == "AS-C13")
    assert (step["combatant_id"], step["dice"], step["result"]) == (n["Scout"], [3, 3, 3], 11)
    assert [(r["die"], r["purpose"], r["by"]) for r in s["action"]["rolls"]] == [("d6", "initiative", n["Scout"])] * 3


def test_a_hidden_late_combatant_and_its_joining_stay_the_gms(table):
    t = table("worlds-awakening")
    hero = t.character("Hero", wa_fighter(1), kind="pc", player=t.alice)
    s = t.encounter([{"character_id": hero}])
    eid = s["id"]
    t.start(eid, dice=[])
    s = _add(t, eid, {"character_id": t.character("Assassin", wa_fighter(5)), "hidden": True, "dice": []})
    n = ids(s)
    assert s["action"]["hidden"] is True and [e["combatant_id"] for e in s["order"]] == [n["Assassin"], n["Hero"]]
    mine = t.state(eid, headers=t.alice.headers)
    assert [c["name"] for c in mine["combatants"]] == ["Hero"]
    assert [e["combatant_id"] for e in mine["order"]] == [n["Hero"]]
    assert mine["current"]["combatant_id"] == n["Hero"]
    history = t.client.get(f"/v1/encounters/{eid}/actions", headers=t.alice.headers).json()["items"]
    assert "join" not in [a["type"] for a in history]
    theirs = read_events(t.client, t.c.id, t.alice.headers)
    assert n["Assassin"] not in json.dumps(theirs)
    assert s["action"]["id"] not in json.dumps(theirs)
    gms = [e for e in read_events(t.client, t.c.id, t.gm) if e["data"].get("action_id") == s["action"]["id"]]
    assert [e["type"] for e in gms] == ["encounter.action"]
    # reverted: gone for the GM too
    _revert(t, eid, s["action"]["id"])
    assert [c["name"] for c in t.state(eid)["combatants"]] == ["Hero"]


def test_an_ended_fight_refuses_a_late_combatant(table):
    t = table("worlds-awakening")
    s = t.encounter([{"character_id": t.character("Hero", wa_fighter(1))}])
    eid = s["id"]
    t.start(eid, dice=[])
    r = t.client.post(f"/v1/encounters/{eid}/end", headers=t.gm)
    assert r.status_code == 200, r.text
    r = t.client.post(
        f"/v1/encounters/{eid}/combatants", json={"character_id": t.character("Late", wa_fighter(1))}, headers=t.gm
    )
    assert assert_problem(r, 409, "conflict")["code"] == "encounter_ended"


def test_dice_before_start_are_refused(table):
    t = table("worlds-awakening")
    s = t.encounter([{"character_id": t.character("Hero", wa_fighter(1))}])
    r = t.client.post(
        f"/v1/encounters/{s['id']}/combatants",
        json={"character_id": t.character("Late", wa_fighter(1)), "dice": [3]},
        headers=t.gm,
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "dice"]


# --- issue 27: the revert of a join made with `count` deletes the NPC copies it made ---------------


def _orcs_join(t, *, access: str = "observer") -> tuple[str, dict, dict[str, str], dict[str, str]]:
    """Hero (Alice's) fighting; an Orc NPC (`access` for the players) joins as 2 copies: (the fight's
    id, the join's answer, combatant names -> ids, copy names -> character ids)."""
    hero = t.character("Hero", wa_fighter(1), kind="pc", player=t.alice)
    s = t.encounter([{"character_id": hero}])
    eid = s["id"]
    t.start(eid, dice=[])
    r = t.client.post(
        f"/v1/campaigns/{t.c.id}/characters",
        json={"name": "Orc", "kind": "npc", "sheet": wa_fighter(1), "player_access": access},
        headers=t.gm,
    )
    assert r.status_code == 201, r.text
    joined = _add(t, eid, {"character_id": r.json()["id"], "count": 2, "dice": [3, 17]})
    copies = {c["name"]: c["character_id"] for c in joined["combatants"] if c["name"].startswith("Orc ")}
    assert sorted(copies) == ["Orc 1", "Orc 2"]
    return eid, joined, ids(joined), copies


def _names(t, headers=None) -> list[str]:
    r = t.client.get(f"/v1/campaigns/{t.c.id}/characters", headers=headers or t.gm, params={"limit": 50})
    assert r.status_code == 200, r.text
    return sorted(c["name"] for c in r.json()["items"])


def test_issue27_reverting_a_join_with_count_deletes_its_npc_copies_with_their_events(table):
    t = table("worlds-awakening")
    eid, joined, n, copies = _orcs_join(t)
    before = {who: read_events(t.client, t.c.id, h)[-1]["id"] for who, h in (("gm", t.gm), ("alice", t.alice.headers))}
    reverted = _revert(t, eid, joined["action"]["id"])
    deleted = [s for s in reverted["steps"] if s["key"] == "npc_copy_deleted"]
    assert [(s["rule"], s["combatant_id"], s["character_id"]) for s in deleted] == [
        ("revert", n["Orc 1"], copies["Orc 1"]),
        ("revert", n["Orc 2"], copies["Orc 2"]),
    ]
    assert [c["name"] for c in t.state(eid)["combatants"]] == ["Hero"]
    for character_id in copies.values():
        assert t.client.get(f"/v1/characters/{character_id}", headers=t.gm).status_code == 404
    assert _names(t) == ["Hero", "Orc"]
    # what a client needs to drop them (as a deletion sends), then the fight's revert; a player who
    # saw the copies (the NPC is `observer`) is told too
    for who, headers in (("gm", t.gm), ("alice", t.alice.headers)):
        after = [e for e in read_events(t.client, t.c.id, headers) if e["id"] > before[who]]
        assert [e["type"] for e in after if e["type"] != "log.created"] == [
            "character.deleted",
            "character.deleted",
            "encounter.reverted",  # a player who saw the join is told of its revert (it was not before)
        ], who
        assert [e["data"] for e in after[:2]] == [{"id": copies["Orc 1"]}, {"id": copies["Orc 2"]}]
        assert after[-1]["data"]["id"] == eid
    # the log keeps the join and its revert (append-only); export and import still agree
    log = t.client.get(f"/v1/campaigns/{t.c.id}/rolls", headers=t.gm).json()["items"]
    assert [e["type"] for e in log if e["kind"] == "combat"][:2] == ["revert", "join"]
    bundle = t.client.get(f"/v1/campaigns/{t.c.id}/export", headers=t.gm)
    assert bundle.status_code == 200, bundle.text
    assert sorted(c["name"] for c in bundle.json()["characters"]) == ["Hero", "Orc"]
    imported = t.client.post("/v1/campaigns/import", json=bundle.json())
    assert imported.status_code == 201, imported.text
    gm = {"Authorization": f"Bearer {imported.json()['gm_token']}"}
    (fight,) = t.client.get(f"/v1/campaigns/{imported.json()['id']}/encounters", headers=gm).json()["items"]
    assert [c["name"] for c in t.client.get(f"/v1/encounters/{fight['id']}", headers=gm).json()["combatants"]] == [
        "Hero"
    ]


def test_issue27_a_hidden_joins_copies_are_deleted_in_the_gms_stream_only(table):
    t = table("worlds-awakening")
    hero = t.character("Hero", wa_fighter(1), kind="pc", player=t.alice)
    s = t.encounter([{"character_id": hero}])
    t.start(s["id"], dice=[])
    orc = t.character("Orc", wa_fighter(1))
    joined = _add(t, s["id"], {"character_id": orc, "count": 2, "hidden": True, "dice": [3, 17]})
    copies = [c["character_id"] for c in joined["combatants"] if c["name"].startswith("Orc ")]
    _revert(t, s["id"], joined["action"]["id"])
    gms = [e["data"]["id"] for e in read_events(t.client, t.c.id, t.gm) if e["type"] == "character.deleted"]
    assert gms == copies
    theirs = json.dumps(read_events(t.client, t.c.id, t.alice.headers))
    assert all(c not in theirs for c in copies)


def test_issue27_a_copy_changed_since_the_join_stops_its_revert_whole_unless_forced(table):
    """Orc 2 edited since the join: the revert (which would delete Orc 1 first) is a 409
    `changed_since` and nothing of it is applied (Orc 1, the combatants, the fight's version, no
    event); `force` deletes both."""
    t = table("worlds-awakening")
    eid, joined, n, copies = _orcs_join(t)
    edited = t.client.patch(f"/v1/characters/{copies['Orc 2']}", json={"sheet": {"hp": 3}}, headers=t.gm)
    assert edited.status_code == 200, edited.text
    state, events = t.state(eid), read_events(t.client, t.c.id, t.gm)
    r = t.client.post(f"/v1/encounters/{eid}/actions/{joined['action']['id']}/revert", json={}, headers=t.gm)
    problem = assert_problem(r, 409, "conflict")
    assert (problem["code"], problem["combatant_id"], problem["field"], problem["expected"], problem["current"]) == (
        "changed_since",
        n["Orc 2"],
        "version",
        1,
        2,
    )
    assert t.client.get(f"/v1/characters/{copies['Orc 1']}", headers=t.gm).status_code == 200
    assert t.state(eid) == state and read_events(t.client, t.c.id, t.gm) == events
    assert _names(t) == ["Hero", "Orc", "Orc 1", "Orc 2"]
    forced = t.post(f"/v1/encounters/{eid}/actions/{joined['action']['id']}/revert", {"force": True})
    assert [s["character_id"] for s in forced["steps"] if s["key"] == "npc_copy_deleted"] == [
        copies["Orc 1"],
        copies["Orc 2"],
    ]
    assert _names(t) == ["Hero", "Orc"]


def test_issue27_a_copy_put_in_another_fight_since_is_deleted_only_when_forced(table):
    t = table("worlds-awakening")
    eid, joined, n, copies = _orcs_join(t)
    other = t.encounter([{"character_id": copies["Orc 1"]}])
    r = t.client.post(f"/v1/encounters/{eid}/actions/{joined['action']['id']}/revert", json={}, headers=t.gm)
    problem = assert_problem(r, 409, "conflict")
    assert (problem["code"], problem["field"], problem["current"]) == ("changed_since", "encounters", [other["id"]])
    version = t.state(other["id"])["version"]
    t.post(f"/v1/encounters/{eid}/actions/{joined['action']['id']}/revert", {"force": True})
    assert _names(t) == ["Hero", "Orc"]
    assert t.state(other["id"])["version"] == version + 1  # what it shows changed (as a deletion moves it)
    updated = [e for e in read_events(t.client, t.c.id, t.gm) if e["type"] == "encounter.updated"]
    assert updated[-1]["data"] == {"id": other["id"], "version": version + 1}


def test_both_copies_put_in_another_fight_move_it_once_each(table):
    """The revert deletes two copies another fight shows: that fight moves twice, each move its own
    version (its second move read the version the first wrote: before, it reused the first's read, wrote
    nothing and sent the same version twice)."""
    t = table("worlds-awakening")
    eid, joined, n, copies = _orcs_join(t)
    other = t.encounter([{"character_id": copies["Orc 1"]}, {"character_id": copies["Orc 2"]}])["id"]
    version = t.state(other)["version"]
    t.post(f"/v1/encounters/{eid}/actions/{joined['action']['id']}/revert", {"force": True})
    assert t.state(other)["version"] == version + 2
    updated = [e["data"] for e in read_events(t.client, t.c.id, t.gm) if e["type"] == "encounter.updated"]
    assert updated[-2:] == [{"id": other, "version": version + 1}, {"id": other, "version": version + 2}]
