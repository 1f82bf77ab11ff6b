"""Issue 25 items 1, 2 and 10 (API.md round 3, "Events: a complete mirror, per viewer"): every change
of a fight sends its events, each as that viewer reads the thing — `character.updated` for each
sheet it changed (as `GET /v1/characters/{id}` returns it to that viewer), `log.created` for its
roll-log entry (as `GET …/rolls/{id}` returns it), the encounter's event carrying the action (as
`GET /v1/encounters/{eid}/actions/{aid}` returns it) — and a hidden combatant's changes never reach
a player who may not see it. `start` sends `encounter.updated` (its initiative is its first action).

The viewers: the GM, Alice (Aiko's owner), Bob (another player) who has `observer` access to
Brute, `limited` to Orc, `none` to Ghost, and Shade is a hidden combatant. Every action is the GM's
heal / damage (no die), so nothing hangs on luck."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.support import read_events
from tests.api.test_encounters import Table, ids, table
from tests.factories import GC, gc_fighter

__all__ = ["table"]


def events_since(t: Table, headers: dict[str, str], after: int) -> list[dict[str, Any]]:
    return [e for e in read_events(t.client, t.c.id, headers) if e["id"] > after]


def last_id(t: Table) -> int:
    return read_events(t.client, t.c.id, t.gm)[-1]["id"]


def read(t: Table, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    r = t.client.get(path, headers=headers)
    return r.status_code, r.json()


class Fight:
    """Aiko (Alice's PC), Brute (observer), Orc (limited), Ghost (none), Shade (a hidden combatant)."""

    def __init__(self, t: Table, options: dict | None = None, aiko_hidden: bool = False):
        self.t = t
        self.chars = {
            # hidden, Aiko acts last (entering its turn would reveal it)
            "Aiko": t.character("Aiko", gc_fighter(20 if aiko_hidden else 70), kind="pc", player=t.alice),
            "Brute": t.character("Brute", gc_fighter(60)),
            "Orc": t.character("Orc", gc_fighter(50)),
            "Ghost": t.character("Ghost", gc_fighter(40)),
            "Shade": t.character("Shade", gc_fighter(30)),
        }
        for name, access in (("Brute", "observer"), ("Orc", "limited"), ("Ghost", "none")):
            r = t.client.patch(f"/v1/characters/{self.chars[name]}", json={"player_access": access}, headers=t.gm)
            assert r.status_code == 200, r.text
        hidden = {"Shade", *(["Aiko"] if aiko_hidden else [])}
        s = t.encounter(
            [{"character_id": cid, "hidden": name in hidden} for name, cid in self.chars.items()], options=options
        )
        self.eid, self.n = s["id"], ids(s)
        self.viewers = {"gm": t.gm, "alice": t.alice.headers, "bob": t.bob.headers}

    def mirrored(self, after: int) -> dict[str, list[dict[str, Any]]]:
        """Each viewer's events since `after`, each checked against that viewer's own reads (a
        character: its last event, the others: each)."""
        seen = {}
        for who, headers in self.viewers.items():
            events = events_since(self.t, headers, after)
            last = {e["data"]["id"]: e["id"] for e in events if e["type"] == "character.updated"}
            for e in events:
                if e["type"] == "character.updated" and last[e["data"]["id"]] == e["id"]:
                    assert read(self.t, f"/v1/characters/{e['data']['id']}", headers) == (200, e["data"]), who
                elif e["type"] == "log.created":
                    path = f"/v1/campaigns/{self.t.c.id}/rolls/{e['data']['entry']['id']}"
                    assert read(self.t, path, headers) == (200, e["data"]["entry"]), who
                elif e["data"].get("action") is not None:
                    path = f"/v1/encounters/{self.eid}/actions/{e['data']['action_id']}"
                    assert read(self.t, path, headers) == (200, e["data"]["action"]), who
            seen[who] = events
        return seen

    def gm_acts(self, type_: str, target: str, amount: int) -> dict[str, Any]:
        return self.t.act(self.eid, {"type": type_, "target_id": self.n[target], "amount": amount})


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_start_sends_encounter_updated_carrying_its_initiative_action(table):
    t = table(GC)
    f = Fight(t)
    before = last_id(t)
    started = t.start(f.eid, dice=[])
    seen = f.mirrored(before)
    assert types(seen["gm"]) == ["log.created", "encounter.updated"]
    for who in ("gm", "alice", "bob"):
        if who != "gm":  # Shade's initiative is in it: the players' roll log leaves the entry out
            assert types(seen[who]) == ["encounter.updated"], who
            entry = f"/v1/campaigns/{t.c.id}/rolls/{started['action']['id']}"
            assert t.client.get(entry, headers=f.viewers[who]).status_code == 404
        event = seen[who][-1]["data"]
        assert (event["id"], event["version"], event["action_id"]) == (f.eid, 2, started["action"]["id"])
        assert event["action"]["type"] == "start"
    assert seen["gm"][-1]["data"]["action"] == started["action"]
    bob_sees = {c["combatant_id"] for c in seen["bob"][-1]["data"]["action"]["changes"] if c["combatant_id"]}
    assert f.n["Shade"] not in bob_sees and f.n["Brute"] in bob_sees  # the hidden combatant's initiative is the GM's


def test_a_fights_sheet_change_sends_character_updated_and_log_created_per_viewer(table):
    t = table(GC)
    f = Fight(t)
    t.start(f.eid, dice=[])
    expected = {  # the damaged character -> (what Bob receives of it, whether Bob sees the action)
        "Aiko": ("observer", True),
        "Brute": ("observer", True),
        "Orc": ("limited", True),
        "Ghost": (None, True),  # no access to the sheet, but the fight shows it: its action is seen
        "Shade": (None, False),  # a hidden combatant: nothing at all
    }
    for name, (bob_reads, bob_sees_action) in expected.items():
        before = last_id(t)
        hit = f.gm_acts("damage", name, 10)
        seen = f.mirrored(before)
        assert types(seen["gm"]) == ["character.updated", "log.created", "encounter.action"], name
        assert seen["gm"][0]["data"]["sheet"]["hp"] == 90
        assert seen["gm"][-1]["data"] == {
            "id": f.eid,
            "version": hit["encounter_version"],
            "action_id": hit["id"],
            "action": hit,
        }
        assert seen["gm"][1]["data"]["entry"] == hit
        alice = types(seen["alice"])
        if name == "Aiko":
            assert alice == types(seen["gm"]) and seen["alice"][0]["data"]["sheet"]["hp"] == 90
        bob = seen["bob"]
        updated = [e["data"] for e in bob if e["type"] == "character.updated"]
        if bob_reads is None:
            assert updated == [], name
            assert t.client.get(f"/v1/characters/{f.chars[name]}", headers=t.bob.headers).status_code == 404
        elif bob_reads == "limited":
            assert updated[0]["player_access"] == "limited" and "sheet" not in updated[0], name
            assert updated[0]["pools"]["hp"] == {"status": "wounded"}
        else:
            assert updated[0]["sheet"]["hp"] == 90, name
        assert ("encounter.action" in types(bob)) == bob_sees_action, name
        if not bob_sees_action:
            assert types(bob) == [] and types(seen["alice"]) == []
            path = f"/v1/encounters/{f.eid}/actions/{hit['id']}"
            assert t.client.get(path, headers=t.bob.headers).status_code == 404
        logged = [e["data"] for e in bob if e["type"] == "log.created"]
        if bob_sees_action:
            refs = [r["id"] for r in logged[0]["characters_changed"]]
            assert refs == ([] if bob_reads is None else [f.chars[name]]), name


def test_revert_and_heal_mirror_the_sheet_they_restore(table):
    t = table(GC)
    f = Fight(t)
    t.start(f.eid, dice=[])
    hit = f.gm_acts("damage", "Aiko", 30)
    before = last_id(t)
    undo = t.post(f"/v1/encounters/{f.eid}/actions/{hit['id']}/revert")
    seen = f.mirrored(before)
    for who in ("gm", "alice", "bob"):
        assert types(seen[who]) == ["character.updated", "log.created", "encounter.reverted"], who
        assert seen[who][0]["data"]["sheet"]["hp"] == 100
        assert seen[who][-1]["data"]["reverted"] == hit["id"] and seen[who][-1]["data"]["action_id"] == undo["id"]
    before = last_id(t)
    f.gm_acts("damage", "Shade", 30)
    f.gm_acts("heal", "Shade", 5)
    seen = f.mirrored(before)
    assert types(seen["gm"]) == ["character.updated", "log.created", "encounter.action"] * 2
    assert [e["data"]["sheet"]["hp"] for e in seen["gm"] if e["type"] == "character.updated"] == [70, 75]
    assert seen["alice"] == [] and seen["bob"] == []


def test_an_owner_reads_its_own_exact_pools_where_the_others_read_a_status(table):
    """`hp_visibility: status`: the owner's event carries its own combatant's exact numbers (and its
    sheet), the other players' the status words, each as `GET …/actions/{aid}` shows it to them."""
    t = table(GC)
    f = Fight(t, options={"hp_visibility": "status"})
    t.start(f.eid, dice=[])
    before = last_id(t)
    f.gm_acts("damage", "Aiko", 60)
    seen = f.mirrored(before)
    alice_action = seen["alice"][-1]["data"]["action"]
    bob_action = seen["bob"][-1]["data"]["action"]
    assert [(c["before"], c["after"]) for c in alice_action["changes"]] == [(100, 40)]
    assert [(c["before"], c["after"]) for c in bob_action["changes"]] == [
        ({"status": "unhurt"}, {"status": "bloodied"})
    ]
    assert types(seen["bob"]) == ["character.updated", "encounter.action"]  # the entry is not the players' log's
    assert "sheet" not in seen["bob"][0]["data"] and seen["alice"][0]["data"]["sheet"]["hp"] == 40


def test_an_owners_hidden_combatant_reaches_its_owner_alone(table):
    t = table(GC)
    f = Fight(t, aiko_hidden=True)
    t.start(f.eid, dice=[])
    before = last_id(t)
    hit = f.gm_acts("damage", "Aiko", 10)
    seen = f.mirrored(before)
    assert types(seen["alice"]) == ["character.updated", "encounter.action"]
    assert seen["alice"][-1]["data"]["action"]["id"] == hit["id"]
    assert seen["bob"] == []


def test_a_gm_sheet_edit_in_an_open_fight_reaches_each_tracker_as_it_may_read_it(table):
    """The encounter's state shows the sheet's pools: a GM `PATCH` sends `character.updated` (a
    tracker updates the combatant whose `character_id` it names) and moves the encounter's version,
    with its `encounter.updated` (its ETag moves: no stale 304), never to a player for a hidden
    combatant."""
    t = table(GC)
    f = Fight(t)
    t.start(f.eid, dice=[])
    before = last_id(t)
    for name in ("Aiko", "Shade"):
        r = t.client.patch(f"/v1/characters/{f.chars[name]}", json={"sheet": {"hp": 55}}, headers=t.gm)
        assert r.status_code == 200, r.text
    seen = f.mirrored(before)
    assert types(seen["gm"]) == ["encounter.updated", "log.created", "character.updated"] * 2
    for who in ("alice", "bob"):
        assert types(seen[who]) == ["encounter.updated", "log.created", "character.updated"], who
        assert seen[who][-1]["data"]["id"] == f.chars["Aiko"] and seen[who][-1]["data"]["sheet"]["hp"] == 55
    state = t.state(f.eid, headers=t.bob.headers)
    aiko = next(c for c in state["combatants"] if c["character_id"] == f.chars["Aiko"])
    assert aiko["resources"]["hp"]["value"] == 55


@pytest.mark.parametrize("who", ["gm", "alice", "bob"])
def test_get_one_action_answers_it_as_the_caller_reads_it_and_404_for_a_hidden_one(table, who):
    t = table(GC)
    f = Fight(t)
    t.start(f.eid, dice=[])
    seen_hit = f.gm_acts("damage", "Brute", 10)
    hidden_hit = f.gm_acts("damage", "Shade", 10)
    headers = f.viewers[who]
    path = f"/v1/encounters/{f.eid}/actions"
    page = t.client.get(path, headers=headers).json()["items"]
    assert read(t, f"{path}/{seen_hit['id']}", headers) == (200, next(a for a in page if a["id"] == seen_hit["id"]))
    status, body = read(t, f"{path}/{hidden_hit['id']}", headers)
    unknown_status, unknown = read(t, f"{path}/nothing", headers)
    assert unknown_status == 404
    if who == "gm":
        assert (status, body) == (200, hidden_hit)
    else:
        assert (status, body["detail"]) == (404, unknown["detail"])


def test_gc_p6_the_end_of_the_fight_mirrors_the_sheets_it_changes(table):
    """GC-P6: the end of the fight ends a special posture, on the sheet: `end` sends that sheet's
    `character.updated` (to each viewer as it reads it) before its `encounter.updated`."""
    t = table(GC)
    f = Fight(t)
    t.start(f.eid, dice=[])
    t.act(f.eid, {"type": "posture", "actor_id": f.n["Aiko"], "posture": "sepulcrale"})
    assert t.sheet(f.chars["Aiko"])["sheet"]["posture"] == "sepulcrale"
    before = last_id(t)
    r = t.client.post(f"/v1/encounters/{f.eid}/end", headers=t.gm)
    assert r.status_code == 200, r.text
    seen = f.mirrored(before)
    for who in ("gm", "alice", "bob"):
        assert types(seen[who]) == ["character.updated", "encounter.updated"], who
        assert seen[who][0]["data"]["id"] == f.chars["Aiko"] and seen[who][0]["data"]["sheet"]["posture"] == "defensive"
        assert seen[who][-1]["data"] == {"id": f.eid, "version": r.json()["version"]}


def test_a_hidden_actions_sheet_change_is_the_gms_and_the_owners_alone(table):
    """A GM's hidden heal: never what or who (API.md round 3): no player but the sheet's owner
    receives its `character.updated`, though the sheet is one they may read."""
    t = table(GC)
    f = Fight(t)
    t.start(f.eid, dice=[])
    before = last_id(t)
    for name in ("Brute", "Aiko"):
        t.act(f.eid, {"type": "damage", "target_id": f.n[name], "amount": 10, "hidden": True})
    seen = f.mirrored(before)
    assert types(seen["gm"]) == ["character.updated", "log.created", "encounter.action"] * 2
    assert types(seen["alice"]) == ["character.updated"] and seen["alice"][0]["data"]["id"] == f.chars["Aiko"]
    assert seen["bob"] == []
