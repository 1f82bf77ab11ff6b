"""Combat encounters through HTTP (API.md, "Encounters (combat)"), table dice:
setup, initiative of the four rulesets (GC-O1..O3, AS-C13, RB-F4, WA-C4), turns,
conditions, visibility, GM heal/damage on sheets, revert, end, If-Match,
idempotency and permissions."""

from __future__ import annotations

import json

import pytest

from tests.api.support import assert_problem, assert_validation, bearer, read_events
from tests.factories import as_fighter, gc_fighter, rb_fighter, wa_fighter
from tests.fixtures import Table, ids, table  # noqa: F401  (the fight table, shared: tests/fixtures.py; other modules import it from here too)


def order(state: dict, names: dict[str, str]) -> list[tuple]:
    back = {v: k for k, v in names.items()}
    return [
        (e["slot"], back.get(e["combatant_id"], e["combatant_id"]), e["initiative"], e["extra_action"])
        for e in state["order"]
    ]


# --- setup -------------------------------------------------------------------------------------


def test_create_from_campaign_characters_and_numbered_npc_copies(table):
    t = table("great-cosmos")
    hero = t.character("Aiko", gc_fighter(), kind="pc", player=t.alice)
    goblin = t.character("Goblin", gc_fighter(40))
    r = t.client.post(
        f"/v1/campaigns/{t.c.id}/encounters",
        headers=t.gm,
        json={
            "name": "Ambush",
            "options": {"hp_visibility": "status"},
            "combatants": [
                {"character_id": hero, "position": {"x": 3, "y": 4}},
                {"character_id": goblin, "count": 3, "hidden": True, "reaction": "parry"},
            ],
        },
    )
    assert r.status_code == 201, r.text
    s = r.json()
    assert r.headers["ETag"] == '"1"'
    assert (s["status"], s["round"], s["version"], s["order"], s["current"]) == ("setup", 0, 1, [], None)
    assert s["options"] == {
        "hp_visibility": "status",
        "reveal_on_turn": True,
        "odds_for_players": "visible",
        "tie_method": "d20",
    }
    assert [(c["name"], c["kind"], c["side"], c["hidden"], c["position"], c["reaction"]) for c in s["combatants"]] == [
        ("Aiko", "pc", "heroes", False, {"x": 3, "y": 4}, "dodge"),
        ("Goblin 1", "npc", "foes", True, None, "parry"),
        ("Goblin 2", "npc", "foes", True, None, "parry"),
        ("Goblin 3", "npc", "foes", True, None, "parry"),
    ]
    assert s["combatants"][0]["resources"] == {"hp": {"value": 100, "max": 100}, "mp": {"value": 50, "max": 50}}
    copies = [c["character_id"] for c in s["combatants"][1:]]
    assert goblin not in copies and len(set(copies)) == 3
    for cid in copies:  # each its own sheet, a copy of the NPC's
        assert t.sheet(cid)["sheet"] == t.sheet(goblin)["sheet"] and t.sheet(cid)["kind"] == "npc"
    # more copies later go on numbering
    s = t.post(f"/v1/encounters/{s['id']}/combatants", {"character_id": goblin, "count": 2, "side": "wolves"})
    assert [c["name"] for c in s["combatants"]][-2:] == ["Goblin 4", "Goblin 5"]
    assert s["combatants"][-1]["side"] == "wolves" and s["version"] == 2


def test_bad_setup_input_is_a_clear_4xx(table, campaign_factory, character_factory):
    t = table("worlds-awakening")
    hero = t.character("Hero", wa_fighter(), kind="pc")
    elsewhere = character_factory(campaign_factory("worlds-awakening"), wa_fighter(), name="Stranger")
    url = f"/v1/campaigns/{t.c.id}/encounters"

    def create(combatants, **body):
        return t.client.post(url, json={"name": "x", "combatants": combatants, **body}, headers=t.gm)

    r = create([{"character_id": elsewhere["id"]}])  # a character of another campaign
    assert_validation(r, [["body", "combatants", "0", "character_id"]])
    assert_validation(
        create([{"character_id": hero}, {"character_id": hero}]), [["body", "combatants", "1", "character_id"]]
    )
    assert_validation(create([{"character_id": hero, "count": 2}]), [["body", "combatants", "0", "count"]])
    assert_validation(create([{"character_id": hero, "reaction": "dodge"}]), [["body", "combatants", "0", "reaction"]])
    assert_validation(create([{"character_id": hero, "actions": 2}]), [["body", "combatants", "0", "actions"]])
    npc = t.character("Goblin", wa_fighter())
    assert_validation(create([{"character_id": npc, "count": 50}] * 11), [["body", "combatants"]])
    assert_validation(create([], options={"tie_method": "d20"}), [["body", "options", "tie_method"]])
    assert_validation(create([], options={"hp_visibility": "blurry"}), [["body", "options", "hp_visibility"]])
    assert_validation(
        create([{"character_id": hero, "position": {"x": "1", "y": 2}}]), [["body", "combatants", 0, "position", "x"]]
    )
    s = t.encounter([])
    assert_problem(t.client.post(f"/v1/encounters/{s['id']}/start", json={}, headers=t.gm), 409, "conflict")
    r = t.client.patch(f"/v1/encounters/{s['id']}/combatants/{'0' * 32}", json={"side": "x"}, headers=t.gm)
    assert_problem(r, 404, "not-found")
    assert_problem(t.client.get(f"/v1/encounters/{'0' * 32}", headers=t.gm), 404, "not-found")


def test_list_newest_first_with_cursor_and_status(table):
    t = table("rulebook-d100")
    a = t.character("A", rb_fighter(), kind="pc")
    made = [t.encounter([{"character_id": a}])["id"] for _ in range(3)]
    t.start(made[1], dice=[50])
    url = f"/v1/campaigns/{t.c.id}/encounters"
    first = t.client.get(url, params={"limit": 2}, headers=t.alice.headers).json()
    rest = t.client.get(url, params={"limit": 2, "cursor": first["next_cursor"]}, headers=t.alice.headers).json()
    assert [e["id"] for e in first["items"] + rest["items"]] == made[::-1] and rest["next_cursor"] is None
    active = t.client.get(url, params={"status": "active"}, headers=t.gm).json()["items"]
    assert [(e["id"], e["status"], e["round"]) for e in active] == [(made[1], "active", 1)]


# --- initiative ------------------------------------------------------------------------------


def test_gc_o1_o2_o3_p5_initiative_with_table_dice(table):
    """GC-O1 agilite order; GC-O3 an extra action at agilite − (4 + 1d6); GC-O2 ties roll d20,
    lowest first, tied again → one parallel slot; GC-P5 Illumination acts first."""
    t = table("great-cosmos")
    chars = {
        "Fast": gc_fighter(70),
        "Tie A": gc_fighter(55),
        "Tie B": gc_fighter(55),
        "Tie C": gc_fighter(55),
        "Saint": gc_fighter(30, posture="illumination"),
    }
    s = t.encounter(
        [{"character_id": t.character(n, sh), **({"actions": 2} if n == "Fast" else {})} for n, sh in chars.items()]
    )
    n = ids(s)
    url = f"/v1/encounters/{s['id']}/start"
    n = ids(s)
    r = t.client.post(url, json={"dice": [2, 9]}, headers=t.gm)  # too few: says which die comes next
    assert assert_problem(r, 422, "dice-needed")["needed"] == {
        "index": 2,
        "die": "d20",
        "purpose": "tiebreak",
        "by": n["Tie B"],
    }
    r = t.client.post(url, json={"dice": [2, 9, 4, 9, 1]}, headers=t.gm)  # one too many
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "dice"]
    # d6 of Fast (GC-O3), then the d20 of the three tied at 55 (in the order added)
    s = t.start(s["id"], dice=[2, 9, 4, 9])
    assert order(s, n) == [
        (0, "Saint", 30, False),
        (1, "Fast", 70, False),
        (2, "Fast", 64, True),
        (3, "Tie B", 55, False),
        (4, "Tie A", 55, False),
        (4, "Tie C", 55, False),
    ]
    parallel = {e["combatant_id"]: e["parallel_with"] for e in s["order"]}
    assert parallel[n["Tie A"]] == [n["Tie C"]] and parallel[n["Tie C"]] == [n["Tie A"]]
    assert [e["tiebreak"] for e in s["order"]][3:] == [{"die": "d20", "value": v} for v in (4, 9, 9)]
    action = s["action"]
    assert [(r["die"], r["value"], r["purpose"], r["by"]) for r in action["rolls"]] == [
        ("d6", 2, "extra_actions", n["Fast"]),
        ("d20", 9, "tiebreak", n["Tie A"]),
        ("d20", 4, "tiebreak", n["Tie B"]),
        ("d20", 9, "tiebreak", n["Tie C"]),
    ]
    assert {st["rule"] for st in action["steps"]} >= {"GC-O1", "GC-O2", "GC-O3", "GC-P5"}
    assert (s["status"], s["round"], s["current"]) == (
        "active",
        1,
        {"slot": 0, "combatant_id": n["Saint"], "combatant_ids": [n["Saint"]]},
    )
    assert [c["initiative"] for c in s["combatants"]] == [70, 55, 55, 55, 30]
    # the parallel slot: both act in it, and next-turn passes it as one
    for _ in range(4):
        t.next_turn(s["id"])
    assert t.state(s["id"])["current"] == {
        "slot": 4,
        "combatant_id": n["Tie A"],
        "combatant_ids": [n["Tie A"], n["Tie C"]],
    }


def test_gc_o2_parallel_tie_method_and_gc_o1_recomputed_each_round(table):
    t = table("great-cosmos")
    a, b = t.character("A", gc_fighter(55)), t.character("B", gc_fighter(55))
    s = t.encounter([{"character_id": a}, {"character_id": b}], options={"tie_method": "parallel"})
    n = ids(s)
    s = t.start(s["id"], dice=[])  # no die: tied entities act in parallel at once
    assert order(s, n) == [(0, "A", 55, False), (0, "B", 55, False)] and s["action"]["rolls"] == []
    # GC-O1: a new round recomputes the order (the GM raised B's agilite meanwhile)
    r = t.client.patch(f"/v1/characters/{b}", json={"sheet": {"stats": {"agilite": 60}}}, headers=t.gm)
    assert r.status_code == 200, r.text
    step = t.next_turn(s["id"], dice=[])
    assert step["round"] == 2
    s = t.state(s["id"])
    assert order(s, n) == [(0, "B", 60, False), (1, "A", 55, False)] and s["current"]["combatant_id"] == n["B"]
    order_change = next(c for c in step["changes"] if c["field"] == "order")
    assert [e["combatant_id"] for e in order_change["after"]] == [n["B"], n["A"]]
    # with d20 ties, each new round rolls them again (table dice of next-turn)
    r = t.client.patch(f"/v1/encounters/{s['id']}", json={"options": {"tie_method": "d20"}}, headers=t.gm)
    assert r.status_code == 200, r.text
    t.client.patch(f"/v1/characters/{b}", json={"sheet": {"stats": {"agilite": 55}}}, headers=t.gm)
    t.next_turn(s["id"])
    r = t.client.post(f"/v1/encounters/{s['id']}/next-turn", json={"dice": [3]}, headers=t.gm)
    assert assert_problem(r, 422, "dice-needed")["needed"]["by"] == n["B"]  # the second tie die is missing
    step = t.next_turn(s["id"], dice=[7, 3])
    assert [(r["value"], r["by"]) for r in step["rolls"]] == [(7, n["A"]), (3, n["B"])]
    assert order(t.state(s["id"]), n) == [(0, "B", 55, False), (1, "A", 55, False)]


def test_gc_o1_off_the_gms_order_without_dice(table):
    """Campaign option turn_order_rules off (GC-O1..O3 not applied): the GM's initiatives, then the order added."""
    t = table("great-cosmos", {"turn_order_rules": False})
    s = t.encounter(
        [
            {"character_id": t.character("A", gc_fighter(90))},
            {"character_id": t.character("B", gc_fighter(10))},
            {"character_id": t.character("C", gc_fighter(50)), "initiative": 5},
        ]
    )
    n = ids(s)
    s = t.start(s["id"], dice=[])
    assert order(s, n) == [(0, "C", 5, False), (1, "A", None, False), (2, "B", None, False)]
    assert s["action"]["rolls"] == []


def test_rb_f4_initiative_criticals_extra_action_and_late_start(table):
    """RB-F4: a HAB ranking; a critical success acts once more before round 1, a critical
    failure only from round 2."""
    t = table("rulebook-d100")
    s = t.encounter([{"character_id": t.character(n, rb_fighter(60))} for n in ("Ace", "Mid", "Oops")])
    n = ids(s)
    s = t.start(s["id"], dice=[3, 50, 99])
    assert order(s, n) == [(0, "Ace", 12, True), (1, "Ace", 12, False), (2, "Mid", 1, False), (3, "Oops", -6, False)]
    assert [(r["die"], r["value"], r["purpose"], r["by"]) for r in s["action"]["rolls"]] == [
        ("d100", 3, "initiative", n["Ace"]),
        ("d100", 50, "initiative", n["Mid"]),
        ("d100", 99, "initiative", n["Oops"]),
    ]
    assert [st["outcome"] for st in s["action"]["steps"] if st.get("what") == "HAB test"] == [
        "critical_success",
        "success",
        "critical_failure",
    ]
    assert s["current"]["combatant_id"] == n["Ace"] and s["order"][3]["from_round"] == 2
    t.next_turn(s["id"])
    t.next_turn(s["id"])
    step = t.next_turn(s["id"])  # Mid ends: Oops does not act in round 1 → round 2
    assert {
        "rule": "RB-F4",
        "key": "does_not_act_this_round",
        "what": "does not act this round",
        "combatant_id": n["Oops"],
    } in step["steps"]
    s = t.state(s["id"])
    assert s["round"] == 2 and s["current"]["combatant_id"] == n["Ace"]
    assert order(s, n) == [(0, "Ace", 12, False), (1, "Mid", 1, False), (2, "Oops", -6, False)]
    t.next_turn(s["id"])
    t.next_turn(s["id"])
    assert t.state(s["id"])["current"]["combatant_id"] == n["Oops"]


def test_rb_f4_ties_by_units_then_d100_rerolls(table):
    t = table("rulebook-d100")
    s = t.encounter([{"character_id": t.character(n, rb_fighter(60))} for n in ("A", "B", "C")])
    n = ids(s)
    # levels: 41 → 2, 42 → 2, 31 → 3; A and B tie on the level, A's units digit wins
    s2 = t.start(s["id"], dice=[42, 41, 31])
    assert order(s2, n) == [(0, "C", 3, False), (1, "B", 2, False), (2, "A", 2, False)]
    assert s2["order"][1]["tiebreak"] == {"die": "d100", "value": 41, "units": 1}
    t.post(f"/v1/encounters/{s['id']}/actions/{s2['action']['id']}/revert", {})
    # equal levels and units: d100 rerolls, lowest first
    s3 = t.start(s["id"], dice=[41, 41, 31, 70, 20])
    assert order(s3, n) == [(0, "C", 3, False), (1, "B", 2, False), (2, "A", 2, False)]
    assert s3["order"][1]["tiebreak"] == {"die": "d100", "value": 20, "rolls": [20]}
    assert [(r["value"], r["purpose"], r["by"]) for r in s3["action"]["rolls"]][3:] == [
        (70, "tiebreak", n["A"]),
        (20, "tiebreak", n["B"]),
    ]


def test_wa_c4_initiative_ten_plus_dex_and_d20_roll_offs(table):
    t = table("worlds-awakening")
    s = t.encounter(
        [
            {"character_id": t.character(name, wa_fighter(dex))}
            for name, dex in (("Slow", 1), ("Quick", 3), ("Also slow", 1), ("Third slow", 1))
        ]
    )
    n = ids(s)
    # three tied at 11: d20 each (7, 15, 7), highest first; 7 and 7 tie again (2, 18)
    s = t.start(s["id"], dice=[7, 15, 7, 2, 18])
    assert order(s, n) == [
        (0, "Quick", 13, False),
        (1, "Also slow", 11, False),
        (2, "Third slow", 11, False),
        (3, "Slow", 11, False),
    ]
    assert [(r["value"], r["by"]) for r in s["action"]["rolls"]] == [
        (7, n["Slow"]),
        (15, n["Also slow"]),
        (7, n["Third slow"]),
        (2, n["Slow"]),
        (18, n["Third slow"]),
    ]
    assert s["order"][3]["tiebreak"] == {"die": "d20", "value": 2, "rolls": [7, 2]}


def test_wa_c4_roll_off_owners_when_a_lower_tie_group_rolls_later(table):
    t = table("worlds-awakening")
    s = t.encounter(
        [{"character_id": t.character(name, wa_fighter(dex))} for name, dex in (("A", 1), ("B", 1), ("C", 1), ("D", 1))]
    )
    n = ids(s)
    # A=3 B=3 C=6 D=6: C and D (higher) roll again first (2, 4), then A and B (4, 2)
    s = t.start(s["id"], dice=[3, 3, 6, 6, 2, 4, 4, 2])
    assert [(r["value"], r["by"]) for r in s["action"]["rolls"]][4:] == [
        (2, n["C"]),
        (4, n["D"]),
        (4, n["A"]),
        (2, n["B"]),
    ]
    assert [e["combatant_id"] for e in s["order"]] == [n["D"], n["C"], n["A"], n["B"]]


def test_as_c13_initiative_perception_tests_take_11_and_roll_offs(table):
    """AS-C13: open perception tests (NPCs may take 11, AS-T8), highest first; ties by the
    higher perception value, then 1d6 roll-offs."""
    t = table("asgard")
    s = t.encounter(
        [
            {"character_id": t.character("Low", as_fighter(2), kind="pc")},
            {"character_id": t.character("High", as_fighter(5), kind="pc")},
            {"character_id": t.character("Extra", as_fighter(0))},
            {"character_id": t.character("Twin", as_fighter(0))},
        ]
    )
    n = ids(s)
    url = f"/v1/encounters/{s['id']}/start"
    r = t.client.post(url, json={"take_11": [n["Low"]], "seed": 1}, headers=t.gm)
    assert "AS-T8" in assert_problem(r, 422, "rule-violation")["detail"]
    # Low 4+4+4+2 = 14, High 3+3+3+5 = 14 (higher perception first), Extra takes 11,
    # Twin 5+5+1+0 = 11 (same perception 0 as Extra: 1d6 roll-off, Extra 2, Twin 6)
    s = t.start(s["id"], dice=[4, 4, 4, 3, 3, 3, 5, 5, 1, 2, 6], take_11=[n["Extra"]])
    assert order(s, n) == [
        (0, "High", 14, False),
        (1, "Low", 14, False),
        (2, "Twin", 11, False),
        (3, "Extra", 11, False),
    ]
    assert [(r["die"], r["purpose"], r["by"]) for r in s["action"]["rolls"]] == (
        [("d6", "initiative", n["Low"])] * 3
        + [("d6", "initiative", n["High"])] * 3
        + [("d6", "initiative", n["Twin"])] * 3
        + [("d6", "tiebreak", n["Extra"]), ("d6", "tiebreak", n["Twin"])]
    )
    extra = next(st for st in s["action"]["steps"] if st.get("combatant_id") == n["Extra"])
    assert (extra["rule"], extra["take_11"], extra["result"], extra["dice"]) == ("AS-C13", True, 11, [])


def test_gm_initiative_override_before_start_only(table):
    t = table("worlds-awakening")
    s = t.encounter(
        [{"character_id": t.character("A", wa_fighter(3))}, {"character_id": t.character("B", wa_fighter(1))}]
    )
    n = ids(s)
    r = t.client.patch(f"/v1/encounters/{s['id']}/combatants/{n['B']}", json={"initiative": 20}, headers=t.gm)
    assert r.status_code == 200 and r.json()["combatants"][1]["initiative_override"] == 20, r.text
    s = t.start(s["id"], dice=[])
    assert order(s, n) == [(0, "B", 20, False), (1, "A", 13, False)]
    r = t.client.patch(f"/v1/encounters/{s['id']}/combatants/{n['B']}", json={"initiative": 1}, headers=t.gm)
    assert assert_problem(r, 409, "conflict")["status"] == 409


# --- turns ----------------------------------------------------------------------------------


def test_next_turn_skips_down_ticks_conditions_and_wraps(table):
    t = table("worlds-awakening")
    s = t.encounter(
        [{"character_id": t.character(name, wa_fighter(dex))} for name, dex in (("A", 3), ("B", 2), ("C", 1))]
    )
    n, eid = ids(s), s["id"]
    t.start(eid, dice=[])
    t.act(eid, {"type": "damage", "target_id": n["B"], "amount": 50})
    t.act(eid, {"type": "condition", "target_id": n["A"], "add": {"name": "stunned", "rounds": 1}})
    t.act(
        eid,
        {"type": "condition", "target_id": n["C"], "add": {"name": "blessed", "rounds": 2, "ends": "start_of_turn"}},
    )
    t.act(eid, {"type": "condition", "target_id": n["C"], "add": {"name": "marked"}})
    step = t.next_turn(eid)
    assert [(st["what"], st.get("combatant_id")) for st in step["steps"]] == [
        ("condition ends", n["A"]),
        ("turn ends", n["A"]),
        ("down: skipped", n["B"]),
        ("turn starts", n["C"]),
        ("condition ticks", n["C"]),
    ]
    s = t.state(eid)
    by = {c["name"]: c for c in s["combatants"]}
    assert by["A"]["conditions"] == [] and by["B"]["down"] is True
    assert by["C"]["conditions"] == [
        {"name": "blessed", "rounds_left": 1, "ends": "start_of_turn"},
        {"name": "marked", "rounds_left": None, "ends": "end_of_turn"},
    ]
    step = t.next_turn(eid)
    assert step["round"] == 2 and t.state(eid)["current"]["combatant_id"] == n["A"]
    t.next_turn(eid)
    assert [c["name"] for c in t.state(eid)["combatants"][2]["conditions"]] == ["marked"]
    t.act(eid, {"type": "condition", "target_id": n["C"], "remove": "marked"})
    r = t.client.post(
        f"/v1/encounters/{eid}/actions", json={"type": "condition", "target_id": n["C"], "remove": "x"}, headers=t.gm
    )
    assert_validation(r, [["body", "remove"]])


def test_wa_c5_a_down_combatants_conditions_still_count_on_its_skipped_turns(table):
    """A condition lasts rounds of the fight: a down combatant (WA-C5, 0 HP) has no turn to act in,
    but its turn still passes, so its conditions count at its start and its end."""
    t = table("worlds-awakening")
    s = t.encounter([{"character_id": t.character(name, wa_fighter(dex))} for name, dex in (("A", 3), ("B", 2))])
    n, eid = ids(s), s["id"]
    t.start(eid, dice=[])
    t.act(eid, {"type": "damage", "target_id": n["B"], "amount": 50})
    t.act(eid, {"type": "condition", "target_id": n["B"], "add": {"name": "burning", "rounds": 2}})
    t.act(
        eid,
        {"type": "condition", "target_id": n["B"], "add": {"name": "blessed", "rounds": 1, "ends": "start_of_turn"}},
    )
    first = t.next_turn(eid)
    assert [
        (st["what"], st.get("name"), st.get("rounds_left")) for st in first["steps"] if st.get("combatant_id") == n["B"]
    ] == [("down: skipped", None, None), ("condition ends", "blessed", 0), ("condition ticks", "burning", 1)]
    t.next_turn(eid)  # round 2: A's turn ends, B's is skipped again: burning ends
    assert [c["conditions"] for c in t.state(eid)["combatants"]] == [[], []]


def test_everyone_down_leaves_no_current_turn(table):
    t = table("worlds-awakening")
    s = t.encounter([{"character_id": t.character("A", wa_fighter(3))}])
    t.start(s["id"], dice=[])
    t.act(s["id"], {"type": "damage", "target_id": s["combatants"][0]["id"], "amount": 99})
    step = t.next_turn(s["id"])
    assert t.state(s["id"])["current"] is None and step["steps"][-1] == {
        "rule": "turn",
        "key": "nobody_can_act",
        "what": "nobody can act",
    }


def test_reveal_on_turn_and_hidden_combatants_never_reach_players(table):
    t = table("worlds-awakening")
    hero = t.character("Hero", wa_fighter(1), kind="pc", player=t.alice)
    lurker = t.character("Lurker", wa_fighter(3))
    s = t.encounter([{"character_id": hero}, {"character_id": lurker, "hidden": True}])
    n, eid = ids(s), s["id"]
    for who in (t.alice.headers, t.bob.headers):
        assert [c["name"] for c in t.state(eid, who)["combatants"]] == ["Hero"]
    t.start(eid, dice=[])  # the lurker acts first: revealed at once
    assert [c["name"] for c in t.state(eid, t.alice.headers)["combatants"]] == ["Hero", "Lurker"]

    s = t.encounter(
        [{"character_id": hero}, {"character_id": lurker, "hidden": True}], options={"reveal_on_turn": False}
    )
    n, eid = ids(s), s["id"]
    started = t.start(eid, dice=[])
    mine = t.state(eid, t.alice.headers)
    assert [c["name"] for c in mine["combatants"]] == ["Hero"]
    assert [e["combatant_id"] for e in mine["order"]] == [n["Hero"]]
    assert mine["current"] == {"slot": 0, "combatant_id": None, "combatant_ids": []}
    assert started["current"]["combatant_id"] == n["Lurker"]  # the GM sees it
    hurt = t.act(eid, {"type": "damage", "target_id": n["Lurker"], "amount": 1})
    history = t.client.get(f"/v1/encounters/{eid}/actions", headers=t.alice.headers).json()["items"]
    assert hurt["id"] not in {a["id"] for a in history}
    start_seen = next(a for a in history if a["type"] == "start")
    assert n["Lurker"] not in json.dumps(start_seen)
    log = t.client.get(f"/v1/campaigns/{t.c.id}/rolls", params={"kind": "combat"}, headers=t.alice.headers).json()
    assert n["Lurker"] not in json.dumps(log)
    assert n["Lurker"] not in json.dumps(read_events(t.client, t.c.id, t.alice.headers))
    r = t.client.patch(
        f"/v1/encounters/{eid}/combatants/{n['Lurker']}", json={"reaction": "none"}, headers=t.alice.headers
    )
    assert_problem(r, 404, "not-found")
    # the GM reveals it: now players see it, and its past actions
    r = t.client.patch(f"/v1/encounters/{eid}/combatants/{n['Lurker']}", json={"hidden": False}, headers=t.gm)
    assert r.status_code == 200, r.text
    history = t.client.get(f"/v1/encounters/{eid}/actions", headers=t.alice.headers).json()["items"]
    assert hurt["id"] in {a["id"] for a in history}


@pytest.mark.parametrize(
    "visibility, expected",
    [
        ("exact", {"hp": {"value": 7, "max": 12}, "mp": {"value": 4, "max": 4}}),
        ("status", {"hp": {"status": "wounded"}, "mp": {"status": "unhurt"}}),
        ("hidden", {}),
    ],
)
def test_hp_visibility_exact_status_hidden(table, visibility, expected):
    t = table("worlds-awakening")
    hero = t.character("Hero", wa_fighter(1), kind="pc", player=t.alice)
    orc = t.character("Orc", wa_fighter(3))
    s = t.encounter([{"character_id": hero}, {"character_id": orc}], options={"hp_visibility": visibility})
    n, eid = ids(s), s["id"]
    t.start(eid, dice=[])
    hit = t.act(eid, {"type": "damage", "target_id": n["Orc"], "amount": 5})
    t.act(eid, {"type": "damage", "target_id": n["Hero"], "amount": 3})
    for who in (t.alice.headers, t.bob.headers):
        by = {c["name"]: c for c in t.state(eid, who)["combatants"]}
        assert by["Orc"]["resources"] == expected
    by = {c["name"]: c for c in t.state(eid, t.alice.headers)["combatants"]}
    assert by["Hero"]["resources"]["hp"] == {"value": 9, "max": 12}  # its own: exact
    assert {c["name"]: c for c in t.state(eid)["combatants"]}["Orc"]["resources"]["hp"] == {"value": 7, "max": 12}
    seen = next(
        a
        for a in t.client.get(f"/v1/encounters/{eid}/actions", headers=t.bob.headers).json()["items"]
        if a["id"] == hit["id"]
    )
    step = next(st for st in seen["steps"] if st["what"] == "damage")
    if visibility == "exact":
        assert seen == hit
    elif visibility == "status":
        assert seen["changes"] == [
            {
                "combatant_id": n["Orc"],
                "character_id": orc,
                "field": "hp",
                "resource": True,
                "before": {"status": "unhurt"},
                "after": {"status": "wounded"},
                "max": None,
            }
        ]
        assert "amount" not in step and "after" not in step
    else:
        assert seen["changes"] == [] and "amount" not in step
    log = {e["id"] for e in t.client.get(f"/v1/campaigns/{t.c.id}/rolls", headers=t.bob.headers).json()["items"]}
    assert (hit["id"] in log) is (visibility == "exact")
    assert '"value": 7' not in json.dumps(read_events(t.client, t.c.id, t.bob.headers)) or visibility == "exact"


# --- heal, damage, conditions on sheets ------------------------------------------------------


def test_heal_and_damage_write_the_sheet_versioned(table):
    t = table("great-cosmos")
    aiko = t.character("Aiko", gc_fighter(55), kind="pc", player=t.alice)
    s = t.encounter([{"character_id": aiko}])
    n, eid = ids(s), s["id"]
    t.start(eid, dice=[])
    v0 = t.sheet(aiko)["version"]
    hit = t.act(eid, {"type": "damage", "target_id": n["Aiko"], "amount": 30})
    assert hit["changes"] == [
        {
            "combatant_id": n["Aiko"],
            "character_id": aiko,
            "field": "hp",
            "before": 100,
            "after": 70,
            "max": 100,
            "resource": True,
        }
    ]
    assert (hit["kind"], hit["type"], hit["target_id"], hit["encounter_version"]) == ("combat", "damage", n["Aiko"], 3)
    ch = t.sheet(aiko)
    assert (ch["sheet"]["hp"], ch["version"]) == (70, v0 + 1)
    t.act(eid, {"type": "heal", "target_id": n["Aiko"], "amount": 500})
    t.act(eid, {"type": "damage", "target_id": n["Aiko"], "amount": 20, "resource": "mp"})
    ch = t.sheet(aiko)
    assert (ch["sheet"]["hp"], ch["sheet"]["mp"], ch["version"]) == (100, 30, v0 + 3)
    t.act(eid, {"type": "damage", "target_id": n["Aiko"], "amount": 999})
    assert t.sheet(aiko)["sheet"]["hp"] == 0 and t.state(eid)["combatants"][0]["down"] is True
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        json={"type": "heal", "target_id": n["Aiko"], "amount": 1, "resource": "vitality"},
        headers=t.gm,
    )
    assert_validation(r, [["body", "resource"]])
    r = t.client.post(f"/v1/encounters/{eid}/actions", json={"type": "attack", "target_id": n["Aiko"]}, headers=t.gm)
    assert r.status_code == 422
    r = t.client.post(
        f"/v1/encounters/{eid}/actions", json={"type": "heal", "target_id": "nobody", "amount": 1}, headers=t.gm
    )
    assert_validation(r, [["body", "target_id"]])
    # the roll log has each action, kind combat
    log = t.client.get(
        f"/v1/campaigns/{t.c.id}/rolls", params={"kind": "combat", "character_id": aiko}, headers=t.gm
    ).json()["items"]
    assert [e["type"] for e in log] == ["damage", "damage", "heal", "damage"] and log[-1] == hit


def test_rb_f3_hp_stops_at_zero_and_asgard_heroism_has_no_max(table):
    t = table("rulebook-d100")
    a = t.character("A", rb_fighter(), kind="pc")
    s = t.encounter([{"character_id": a}])
    t.start(s["id"], dice=[50])
    t.act(s["id"], {"type": "damage", "target_id": s["combatants"][0]["id"], "amount": 20})
    assert t.sheet(a)["sheet"]["hp"] == 0 and t.state(s["id"])["combatants"][0]["down"] is True  # 14 - 20: 0
    t = table("asgard")
    a = t.character("A", as_fighter(), kind="pc")
    s = t.encounter([{"character_id": a}])
    t.start(s["id"], dice=[1, 2, 3])
    t.act(s["id"], {"type": "heal", "target_id": s["combatants"][0]["id"], "amount": 2, "resource": "heroism"})
    assert t.state(s["id"])["combatants"][0]["resources"] == {
        "vitality": {"value": 20, "max": 20},
        "heroism": {"value": 5},
    }


# --- revert ---------------------------------------------------------------------------------


def test_revert_walks_back_the_stack_and_names_conflicts(table):
    t = table("worlds-awakening")
    hero = t.character("Hero", wa_fighter(3), kind="pc")
    s = t.encounter([{"character_id": hero}, {"character_id": t.character("Orc", wa_fighter(1))}])
    n, eid = ids(s), s["id"]
    start = t.start(eid, dice=[])["action"]
    hit = t.act(eid, {"type": "damage", "target_id": n["Hero"], "amount": 5})
    cond = t.act(eid, {"type": "condition", "target_id": n["Orc"], "add": {"name": "prone"}})
    turn = t.next_turn(eid)
    revert = f"/v1/encounters/{eid}/actions/{{}}/revert"
    r = t.client.post(revert.format(hit["id"]), json={}, headers=t.gm)
    assert assert_problem(r, 409, "conflict")["latest"] == turn["id"]
    undo = t.post(revert.format(turn["id"]), {})
    assert (undo["type"], undo["reverts"]) == ("revert", turn["id"])
    assert t.state(eid)["current"]["combatant_id"] == n["Hero"]
    assert (
        assert_problem(t.client.post(revert.format(turn["id"]), headers=t.gm), 409, "conflict")["reverted_by"]
        == undo["id"]
    )
    assert_problem(t.client.post(revert.format(undo["id"]), headers=t.gm), 409, "conflict")
    t.post(revert.format(cond["id"]))
    assert t.state(eid)["combatants"][1]["conditions"] == []
    # the sheet changed since by something else: 409 naming the field, unless force
    t.client.patch(f"/v1/characters/{hero}", json={"sheet": {"hp": 4}}, headers=t.gm)
    body = assert_problem(t.client.post(revert.format(hit["id"]), json={}, headers=t.gm), 409, "conflict")
    assert (body["field"], body["combatant_id"], body["expected"], body["current"]) == ("hp", n["Hero"], 7, 4)
    forced = t.post(revert.format(hit["id"]), {"force": True})
    assert forced["changes"] == [
        {
            "combatant_id": n["Hero"],
            "character_id": hero,
            "field": "hp",
            "before": 4,
            "after": 12,
            "max": 12,
            "resource": True,
        }
    ]
    assert t.sheet(hero)["sheet"]["hp"] == 12
    # back to setup by reverting the start, then start again
    t.post(revert.format(start["id"]))
    s = t.state(eid)
    assert (s["status"], s["round"], s["order"], s["current"]) == ("setup", 0, [], None)
    assert [c["initiative"] for c in s["combatants"]] == [None, None]
    assert t.start(eid, dice=[])["status"] == "active"
    history = t.client.get(f"/v1/encounters/{eid}/actions", params={"limit": 3}, headers=t.gm).json()
    older = t.client.get(
        f"/v1/encounters/{eid}/actions", params={"cursor": history["next_cursor"]}, headers=t.gm
    ).json()
    stack = history["items"] + older["items"]
    assert [a["type"] for a in stack] == [
        "start",
        "revert",
        "revert",
        "revert",
        "revert",
        "next_turn",
        "condition",
        "damage",
        "start",
    ]
    assert {a["id"]: a["reverted_by"] for a in stack}[hit["id"]] == forced["id"]
    assert_problem(t.client.post(revert.format("0" * 32), headers=t.gm), 404, "not-found")


def test_end_then_every_action_is_a_409(table):
    t = table("rulebook-d100")
    a = t.character("A", rb_fighter(), kind="pc")
    s = t.encounter([{"character_id": a}])
    n, eid = ids(s), s["id"]
    started = t.start(eid, dice=[50])
    r = t.client.post(f"/v1/encounters/{eid}/end", headers=t.gm)
    assert r.status_code == 200 and r.json()["status"] == "ended", r.text
    for method, path, body in [
        ("POST", f"/v1/encounters/{eid}/actions", {"type": "heal", "target_id": n["A"], "amount": 1}),
        ("POST", f"/v1/encounters/{eid}/next-turn", {}),
        ("POST", f"/v1/encounters/{eid}/start", {}),
        ("POST", f"/v1/encounters/{eid}/actions/{started['action']['id']}/revert", {}),
        ("POST", f"/v1/encounters/{eid}/end", None),
        ("POST", f"/v1/encounters/{eid}/combatants", {"character_id": a}),
        ("PATCH", f"/v1/encounters/{eid}", {"name": "x"}),
        ("PATCH", f"/v1/encounters/{eid}/combatants/{n['A']}", {"side": "x"}),
    ]:
        assert_problem(t.client.request(method, path, json=body, headers=t.gm), 409, "conflict")


def test_if_match_on_the_encounter(table):
    t = table("worlds-awakening")
    s = t.encounter([{"character_id": t.character("A", wa_fighter())}])
    eid = s["id"]
    r = t.client.patch(f"/v1/encounters/{eid}", json={"name": "Renamed"}, headers={**t.gm, "If-Match": '"1"'})
    assert r.status_code == 200 and r.headers["ETag"] == '"2"', r.text
    r = t.client.patch(f"/v1/encounters/{eid}", json={"name": "Again"}, headers={**t.gm, "If-Match": '"1"'})
    assert assert_problem(r, 412, "precondition-failed")["current_version"] == 2
    r = t.client.post(f"/v1/encounters/{eid}/start", json={}, headers={**t.gm, "If-Match": '"1"'})
    assert_problem(r, 412, "precondition-failed")
    r = t.client.post(f"/v1/encounters/{eid}/start", json={}, headers={**t.gm, "If-Match": '"2"'})
    assert r.status_code == 201 and r.headers["ETag"] == '"3"'
    assert t.state(eid)["name"] == "Renamed"


FIGHTERS = {"great-cosmos": gc_fighter, "asgard": as_fighter, "rulebook-d100": rb_fighter}


@pytest.mark.parametrize("ruleset", sorted(FIGHTERS))
def test_a_player_sets_only_its_own_combatants_standing_reaction(table, ruleset):
    """The owner's `PATCH …/combatants/{id}` `{reaction}`: each of the ruleset's reactions for its own
    combatant; another player's combatant (or the GM's) refused 403 `owner_or_gm_only`, nothing changed."""
    t = table(ruleset)
    fighter = FIGHTERS[ruleset]
    s = t.encounter(
        [
            {"character_id": t.character("Hero", fighter(3), kind="pc", player=t.alice)},
            {"character_id": t.character("Rival", fighter(2), kind="pc", player=t.bob)},
            {"character_id": t.character("Orc", fighter(1))},
        ]
    )
    n, eid = ids(s), s["id"]
    reactions = t.client.get(f"/v1/rulesets/{ruleset}").json()["combat"]["reactions"]
    assert len(reactions) >= 2
    path = f"/v1/encounters/{eid}/combatants/{{}}"
    for reaction in reactions:
        r = t.client.patch(path.format(n["Rival"]), json={"reaction": reaction}, headers=t.bob.headers)
        assert r.status_code == 200 and ids_reaction(r.json(), n["Rival"]) == reaction, r.text
    before = t.state(eid)
    for target in ("Rival", "Orc"):
        r = t.client.patch(path.format(n[target]), json={"reaction": reactions[0]}, headers=t.alice.headers)
        assert assert_problem(r, 403, "forbidden")["code"] == "owner_or_gm_only"
    assert t.state(eid) == before  # not even the version moved


def ids_reaction(state: dict, combatant_id: str) -> str:
    return next(c["reaction"] for c in state["combatants"] if c["id"] == combatant_id)


def test_idempotency_key_replays_rolling_posts(table, count_rows):
    t = table("great-cosmos")
    s = t.encounter([{"character_id": t.character(n, gc_fighter(55))} for n in ("A", "B")])
    n, eid = ids(s), s["id"]
    key = {**t.gm, "Idempotency-Key": "start-1"}
    first = t.client.post(f"/v1/encounters/{eid}/start", json={"seed": 3}, headers=key)
    again = t.client.post(f"/v1/encounters/{eid}/start", json={"seed": 3}, headers=key)
    assert first.status_code == again.status_code == 201 and first.json() == again.json()
    r = t.client.post(f"/v1/encounters/{eid}/start", json={"seed": 4}, headers=key)
    assert_validation(r, [["header", "Idempotency-Key"]])
    key = {**t.gm, "Idempotency-Key": "hit-1"}
    body = {"type": "damage", "target_id": n["A"], "amount": 3}
    first = t.client.post(f"/v1/encounters/{eid}/actions", json=body, headers=key)
    again = t.client.post(f"/v1/encounters/{eid}/actions", json=body, headers=key)
    assert first.json() == again.json() and count_rows("encounter_action", encounter_id=eid) == 2
    assert t.state(eid)["combatants"][0]["resources"]["hp"]["value"] == 97


def test_permissions_of_players(table):
    t = table("worlds-awakening", {"players_may_enter_dice": False})
    hero = t.character("Hero", wa_fighter(3), kind="pc", player=t.alice)
    s = t.encounter([{"character_id": hero}, {"character_id": t.character("Orc", wa_fighter(1))}])
    n, eid = ids(s), s["id"]
    alice, bob = t.alice.headers, t.bob.headers
    combatant = f"/v1/encounters/{eid}/combatants/{{}}"
    r = t.client.patch(combatant.format(n["Hero"]), json={"reaction": "none"}, headers=alice)
    assert r.status_code == 200, r.text
    assert_problem(t.client.patch(combatant.format(n["Hero"]), json={"side": "x"}, headers=alice), 403, "forbidden")
    assert_problem(
        t.client.patch(combatant.format(n["Orc"]), json={"reaction": "none"}, headers=alice), 403, "forbidden"
    )
    assert_problem(
        t.client.patch(combatant.format(n["Hero"]), json={"reaction": "none"}, headers=bob), 403, "forbidden"
    )
    for path, body in [
        (f"/v1/encounters/{eid}/start", {}),
        (f"/v1/encounters/{eid}/end", None),
        (f"/v1/encounters/{eid}/combatants", {"character_id": hero}),
        (f"/v1/campaigns/{t.c.id}/encounters", {"name": "x"}),
    ]:
        assert_problem(t.client.post(path, json=body, headers=alice), 403, "forbidden")
    t.start(eid, dice=[])  # Hero (13) first
    assert_problem(
        t.client.post(f"/v1/encounters/{eid}/next-turn", json={"dice": [1]}, headers=alice), 403, "forbidden"
    )
    assert_problem(
        t.client.post(f"/v1/encounters/{eid}/next-turn", json={"hidden": True}, headers=alice), 403, "forbidden"
    )
    assert_problem(t.client.post(f"/v1/encounters/{eid}/next-turn", json={}, headers=bob), 403, "forbidden")
    assert_problem(
        t.client.post(
            f"/v1/encounters/{eid}/actions", headers=alice, json={"type": "heal", "target_id": n["Hero"], "amount": 1}
        ),
        403,
        "forbidden",
    )
    ended = t.next_turn(eid, headers=alice)  # its own turn
    assert ended["type"] == "next_turn"
    r = t.client.post(f"/v1/encounters/{eid}/next-turn", json={}, headers=alice)
    assert assert_problem(r, 409, "conflict")["current"]["combatant_id"] == n["Orc"]
    other_gm = t.client.post("/v1/campaigns", json={"name": "Other", "ruleset": "worlds-awakening"}).json()["gm_token"]
    assert_problem(t.client.get(f"/v1/encounters/{eid}", headers=bearer(other_gm)), 404, "not-found")
    assert_problem(
        t.client.post(f"/v1/encounters/{eid}/next-turn", json={}, headers=bearer(other_gm)), 404, "not-found"
    )


def test_events_carry_id_and_version_and_hidden_actions_stay_the_gms(table):
    t = table("worlds-awakening")
    s = t.encounter(
        [{"character_id": t.character("A", wa_fighter(3))}, {"character_id": t.character("B", wa_fighter(1))}]
    )
    n, eid = ids(s), s["id"]
    started = t.start(eid, dice=[])
    secret = t.act(eid, {"type": "condition", "target_id": n["B"], "add": {"name": "cursed"}, "hidden": True})
    undo = t.post(f"/v1/encounters/{eid}/actions/{secret['id']}/revert", {})
    t.client.post(f"/v1/encounters/{eid}/end", headers=t.gm)
    mine = [e for e in read_events(t.client, t.c.id, t.gm) if e["type"].startswith("encounter.")]
    assert [(e["type"], e["data"]["version"]) for e in mine] == [
        ("encounter.created", 1),
        ("encounter.updated", 2),  # start (issue 25 item 1), carrying its action
        ("encounter.action", 3),
        ("encounter.reverted", 4),
        ("encounter.updated", 5),
    ]
    action = started["action"]
    assert mine[1]["data"] == {"id": eid, "version": 2, "action_id": action["id"], "action": action}
    assert mine[3]["data"] == {
        "id": eid,
        "version": 4,
        "action_id": undo["id"],
        "reverted": secret["id"],
        "action": undo,
    }
    theirs = [e["type"] for e in read_events(t.client, t.c.id, t.alice.headers) if e["type"].startswith("encounter.")]
    assert theirs == ["encounter.created", "encounter.updated", "encounter.updated"]
    history = t.client.get(f"/v1/encounters/{eid}/actions", headers=t.alice.headers).json()["items"]
    assert [a["type"] for a in history] == ["start"]
