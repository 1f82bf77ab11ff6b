"""Worlds Awakening attacks in an encounter through HTTP, table dice (WA-C1..C5): d20 + the
characteristic + level against the physical or magical defense, criticals (CHA-widened, WA-T4),
damage dice twice on a critical, 0 HP and down, and one scripted fight."""

from __future__ import annotations

from typing import Any

from tests.api import encounter_support
from tests.api.encounter_support import attack, ids, names_of, normalised, pools, setup, step
from tests.api.support import assert_problem, assert_validation

table = encounter_support.table  # the fixture

EPEE = {"name": "epee_longue", "stat": "FOR", "damage": "1d8"}
ARC = {"name": "arc_long", "stat": "DEX", "damage": "1d8"}
HACHE = {"name": "hache", "stat": "FOR", "damage": "1d6"}


def hero(**kw: Any) -> dict[str, Any]:
    """Physical defense 10 + 1 + 2 = 13, magical 10 + 0 + 2 = 12; critical success from 19 (CHA 2)."""
    return {
        "level": 2,
        "stats": {"FOR": 3, "DEX": 2, "CON": 1, "INT": 2, "SAG": 0, "CHA": 2},
        "hp": 15,
        "hp_max": 15,
        "weapons": [EPEE, ARC],
        **kw,
    }


def foe(**kw: Any) -> dict[str, Any]:
    """Physical defense 10 + 0 + 1 = 11, magical 10 − 1 + 1 = 10; critical failure up to 2 (CHA −2)."""
    return {
        "level": 1,
        "stats": {"FOR": 2, "DEX": 1, "CON": 0, "INT": 0, "SAG": -1, "CHA": -2},
        "hp": 10,
        "hp_max": 10,
        "weapons": [HACHE],
        **kw,
    }


def rounds(t, eid: str) -> None:
    """The Foe's turn, then round wrap: the Hero's turn again (the duels of this file)."""
    t.next_turn(eid)
    t.next_turn(eid)


def test_wa_c1_physical_and_magical_attacks_against_the_defense_values(table):
    t = table("worlds-awakening")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[])
    # 6 + FOR 3 + level 2 = 11 ≥ 10 + CON 0 + level 1: the epee's d8
    a = attack(t, eid, n["Hero"], n["Foe"], [6, 5])
    assert [(r["die"], r["value"], r["purpose"], r["by"]) for r in a["rolls"]] == [
        ("d20", 6, "attack", n["Hero"]),
        ("d8", 5, "damage", n["Hero"]),
    ]
    assert a["steps"] == [
        {
            "rule": "WA-C1",
            "key": "attack_test",
            "what": "attack test",
            "combatant_id": n["Hero"],
            "kind": "physical",
            "stat": "FOR",
            "stat_value": 3,
            "level": 2,
            "modifier": 0,
            "natural": 6,
            "total": 11,
            "defense": 11,
            "defense_of": n["Foe"],
            "critical": None,
            "hit": True,
        },
        {
            "rule": "WA-C1",
            "key": "damage",
            "what": "damage",
            "combatant_id": n["Hero"],
            "weapon": "epee_longue",
            "expression": "1d8",
            "dice": [5],
            "doubled_dice": False,
            "damage": 5,
        },
        {
            "rule": "WA-C5",
            "key": "hp",
            "what": "hp",
            "combatant_id": n["Foe"],
            "damage": 5,
            "resource": "hp",
            "before": 10,
            "after": 5,
        },
    ]
    assert [(c["field"], c["before"], c["after"]) for c in a["changes"]] == [("hp", 10, 5)]
    rounds(t, eid)  # one action per turn: each attack of the Hero in a turn of its own
    miss = attack(t, eid, n["Hero"], n["Foe"], [5])
    assert (len(miss["rolls"]), miss["steps"][0]["hit"], miss["changes"]) == (1, False, [])
    rounds(t, eid)
    # magical: INT 2 without a weapon, against 10 + SAG −1 + 1 = 10
    m = attack(t, eid, n["Hero"], n["Foe"], [6, 3], kind="magical", damage="1d6")
    assert (step(m, "WA-C1", "attack test")["stat"], step(m, "WA-C1", "attack test")["defense"]) == ("INT", 10)
    rounds(t, eid)
    # the arc uses DEX; a modifier adds; no reaction exists (WA-C1)
    b = attack(t, eid, n["Hero"], n["Foe"], [5, 1], weapon="arc_long", modifier=2)
    assert (step(b, "WA-C1", "attack test")["total"], step(b, "WA-C1", "attack test")["stat"]) == (11, "DEX")
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "attack", "actor_id": n["Foe"], "target_id": n["Hero"], "reaction": "dodge"},
    )
    assert_validation(r, [["body", "reaction"]])
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "attack", "actor_id": n["Foe"], "target_id": n["Hero"], "kind": "psychic"},
    )
    assert_validation(r, [["body", "kind"]])
    assert pools(t, eid, "hp") == {"Hero": 15, "Foe": 10 - 5 - 3 - 1}


def test_wa_c2_a_critical_rolls_the_damage_dice_twice_wa_c5_zero_hp_down(table):
    t = table("worlds-awakening")
    eid, n = setup(
        t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), ("Tank", foe(level=8, stats={"CON": 6}), "npc"), start=[]
    )
    # CHA 2 widens the critical success to 19 (WA-T4): 19 + 5 ≥ 11; 1d8+2: 4 + 6, + 2 once
    a = attack(t, eid, n["Hero"], n["Foe"], [19, 4, 6], damage="1d8+2")
    assert [(r["purpose"], r["value"]) for r in a["rolls"]] == [("attack", 19), ("damage", 4), ("bonus damage", 6)]
    assert step(a, "WA-C2", "critical success: damage dice rolled twice")["range"] == 19
    assert step(a, "WA-C2", "damage")["damage"] == 12
    assert [(s["rule"], s["what"]) for s in a["steps"]][-3:] == [
        ("WA-C5", "hp"),
        ("WA-C5", "down: 0 HP"),
        ("turn", "down"),
    ]
    assert [(c["field"], c["before"], c["after"]) for c in a["changes"]] == [("hp", 10, 0), ("down", False, True)]
    assert t.state(eid)["combatants"][1]["down"] is True
    # a critical below the defense still hits, for normal damage: the Foe's natural 20 + 3 < 10 + 6 + 8
    heal = t.act(eid, {"type": "heal", "target_id": n["Foe"], "amount": 10})
    b = attack(t, eid, n["Foe"], n["Tank"], [20, 2])
    assert step(b, "WA-C2", "critical success below the defense: normal damage")["bonus_damage"] is False
    assert (step(b, "WA-C1", "damage")["damage"], pools(t, eid, "hp")["Tank"]) == (2, 8)
    # reverted, the blow gives back the HP and the `down` flag of the sheet
    t.post(f"/v1/encounters/{eid}/actions/{b['id']}/revert", {})
    t.post(f"/v1/encounters/{eid}/actions/{heal['id']}/revert", {})
    t.post(f"/v1/encounters/{eid}/actions/{a['id']}/revert", {})
    foe_sheet = t.sheet(t.state(eid)["combatants"][1]["character_id"])["sheet"]
    assert (foe_sheet["hp"], foe_sheet["down"]) == (10, False)


def test_wa_c3_a_critical_failure_always_misses(table):
    t = table("worlds-awakening")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[])
    # CHA −2 widens the critical failure to 2 (WA-T4): 2 + 2 + 1 + 20 ≥ 13, still a miss
    a = attack(t, eid, n["Foe"], n["Hero"], [2], modifier=20)
    assert step(a, "WA-C3", "critical failure: a miss") == {
        "rule": "WA-C3",
        "key": "critical_failure_a_miss",
        "what": "critical failure: a miss",
        "combatant_id": n["Foe"],
        "natural": 2,
        "range": 2,
    }
    assert (a["steps"][0]["total"], a["steps"][0]["hit"], a["changes"]) == (25, False, [])


def test_worlds_awakening_scripted_fight_wa_c1_c2_c3_c4_c5(table):
    t = table("worlds-awakening")
    mage = {
        "level": 1,
        "stats": {"FOR": 0, "DEX": 1, "CON": 0, "INT": 3, "SAG": 1, "CHA": 0},
        "hp": 8,
        "hp_max": 8,
        "mp": 6,
        "mp_max": 6,
        "weapons": [{"name": "eclair", "stat": "INT", "damage": "1d6"}],
    }
    s = t.encounter(
        [
            {"character_id": t.character("Hero", hero(), kind="pc", player=t.alice)},
            {"character_id": t.character("Foe", foe(), kind="npc")},
            {"character_id": t.character("Mage", mage, kind="npc")},
        ],
        options={"hp_visibility": "hidden"},
    )
    eid, n = s["id"], ids(s)
    # WA-C4: Hero 10 + 2; Foe and Mage 10 + 1: d20 roll-off, 8 and 15: the Mage first
    t.start(eid, dice=[8, 15])
    # round 1: the Hero's epee (6 + 5 = 11 ≥ 11: 5); the Mage's magical eclair (8 + 3 + 1 ≥ 12: 4);
    # the Foe's hache misses (9 + 3 < 13)
    attack(t, eid, n["Hero"], n["Foe"], [6, 5])
    t.next_turn(eid)
    attack(t, eid, n["Mage"], n["Hero"], [8, 4], kind="magical")
    t.next_turn(eid)
    attack(t, eid, n["Foe"], n["Hero"], [9])
    t.next_turn(eid)
    # round 2: the Hero's arc, a critical 19 (WA-C2): 3 + 5 ≥ 8 HP: the Mage is down (WA-C5)
    attack(t, eid, n["Hero"], n["Mage"], [19, 3, 5], weapon="arc_long")
    t.next_turn(eid)  # the Mage is skipped
    wrong = attack(t, eid, n["Foe"], n["Hero"], [15, 6])  # a blow entered wrong, reverted:
    t.post(f"/v1/encounters/{eid}/actions/{wrong['id']}/revert", {})
    attack(t, eid, n["Foe"], n["Hero"], [2])  # the turn's one action (the revert gave it back): WA-C3
    t.next_turn(eid)
    # round 3: a magical blow of the Hero (7 + 2 + 2 ≥ 10: 1d4 2)
    attack(t, eid, n["Hero"], n["Foe"], [7, 2], kind="magical", damage="1d4")
    t.post(f"/v1/encounters/{eid}/end", {}, status=200)
    final = t.state(eid)
    assert normalised(final, names_of(t, final)) == EXPECTED_WORLDS_AWAKENING


EXPECTED_WORLDS_AWAKENING: dict[str, Any] = {
    "id": "<encounter>",
    "campaign_id": "<campaign>",
    "name": "Ambush",
    "status": "ended",
    "round": 3,
    "version": 16,
    "options": {"hp_visibility": "hidden", "reveal_on_turn": True, "odds_for_players": "visible"},
    "combatants": [
        {
            "id": "Hero",
            "character_id": "Hero:character",
            "name": "Hero",
            "kind": "pc",
            "player_id": "<alice>",
            "side": "heroes",
            "hidden": False,
            "position": None,
            "initiative": 12,
            "actions": 1,
            "down": False,
            "reaction": "none",
            "resources": {"hp": {"value": 11, "max": 15}, "mp": {"value": 0, "max": 0}},
            "posture": None,
            "conditions": [],
            "counters": {},
            "initiative_override": None,
        },
        {
            "id": "Foe",
            "character_id": "Foe:character",
            "name": "Foe",
            "kind": "npc",
            "player_id": None,
            "side": "foes",
            "hidden": False,
            "position": None,
            "initiative": 11,
            "actions": 1,
            "down": False,
            "reaction": "none",
            "resources": {"hp": {"value": 3, "max": 10}, "mp": {"value": 0, "max": 0}},
            "posture": None,
            "conditions": [],
            "counters": {},
            "initiative_override": None,
        },
        {
            "id": "Mage",
            "character_id": "Mage:character",
            "name": "Mage",
            "kind": "npc",
            "player_id": None,
            "side": "foes",
            "hidden": False,
            "position": None,
            "initiative": 11,
            "actions": 1,
            "down": True,
            "reaction": "none",
            "resources": {"hp": {"value": 0, "max": 8}, "mp": {"value": 6, "max": 6}},
            "posture": None,
            "conditions": [],
            "counters": {},
            "initiative_override": None,
        },
    ],
    "order": [
        {
            "combatant_id": "Hero",
            "slot": 0,
            "initiative": 12,
            "extra_action": False,
            "tiebreak": None,
            "parallel_with": [],
        },
        {
            "combatant_id": "Mage",
            "slot": 1,
            "initiative": 11,
            "extra_action": False,
            "tiebreak": {"die": "d20", "value": 15, "rolls": [15]},
            "parallel_with": [],
        },
        {
            "combatant_id": "Foe",
            "slot": 2,
            "initiative": 11,
            "extra_action": False,
            "tiebreak": {"die": "d20", "value": 8, "rolls": [8]},
            "parallel_with": [],
        },
    ],
    "current": {"slot": 0, "combatant_id": "Hero", "combatant_ids": ["Hero"]},
    "metadata": {},  # issue 25 item 9: none given
    "created_at": "<ts>",
    "updated_at": "<ts>",
}


def test_wa_c5_the_gms_heal_above_0_hp_clears_down_and_damage_to_0_sets_it(table):
    """WA-C5: `down` is the sheet's, at 0 HP: the GM's heal above 0 clears it (the combatant acts
    again), the GM's damage to 0 sets it; a revert restores both."""
    t = table("worlds-awakening")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[])
    attack(t, eid, n["Hero"], n["Foe"], [19, 4, 6], damage="1d8+2")  # 12 ≥ 10: down
    foe_char = t.state(eid)["combatants"][1]["character_id"]
    heal = t.act(eid, {"type": "heal", "target_id": n["Foe"], "amount": 3})
    assert [(s["rule"], s["what"]) for s in heal["steps"]][1:] == [
        ("WA-C5", "above 0 HP: no longer down"),
        ("turn", "back in the fight"),
    ]
    assert [(c["field"], c["before"], c["after"]) for c in heal["changes"]] == [("hp", 0, 3), ("down", True, False)]
    assert t.sheet(foe_char)["sheet"]["down"] is False and t.state(eid)["combatants"][1]["down"] is False
    hurt = t.act(eid, {"type": "damage", "target_id": n["Foe"], "amount": 5})
    assert [(c["field"], c["before"], c["after"]) for c in hurt["changes"]] == [("hp", 3, 0), ("down", False, True)]
    t.post(f"/v1/encounters/{eid}/actions/{hurt['id']}/revert", {})
    t.post(f"/v1/encounters/{eid}/actions/{heal['id']}/revert", {})
    sheet = t.sheet(foe_char)["sheet"]
    assert (sheet["hp"], sheet["down"]) == (0, True)


def test_wa_t5_an_attack_uses_up_a_pending_modifier_of_its_characteristic_like_a_test(table):
    """WA-T5: the GM's pending ±2 on a characteristic is consumed by the next test of it, an attack
    test included (FOR for the epee); another characteristic's stays."""
    t = table("worlds-awakening")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[])
    hero_char = t.state(eid)["combatants"][0]["character_id"]
    for stat, value in (("FOR", 2), ("DEX", -2)):
        t.post(f"/v1/characters/{hero_char}/actions", {"type": "pending_modifier", "stat": stat, "value": value})
    # 4 + FOR 3 + level 2 + 2 = 11 ≥ 11: a hit only thanks to the +2
    a = attack(t, eid, n["Hero"], n["Foe"], [4, 5])
    assert step(a, "WA-T5", "pending modifier consumed") == {
        "rule": "WA-T5",
        "key": "pending_modifier_consumed",
        "what": "pending modifier consumed",
        "combatant_id": n["Hero"],
        "stat": "FOR",
        "value": 2,
    }
    assert (step(a, "WA-C1", "attack test")["total"], step(a, "WA-C1", "attack test")["hit"]) == (11, True)
    assert t.sheet(hero_char)["sheet"]["pending"] == {"DEX": -2}
    assert [(c["field"], c["before"], c["after"]) for c in a["changes"] if c["field"] == "pending"] == [
        ("pending", {"FOR": 2, "DEX": -2}, {"DEX": -2})
    ]
    turn = t.next_turn(eid)  # the Foe's turn: the GM attacks for the Hero outside its turn
    again = attack(t, eid, n["Hero"], n["Foe"], [4])  # no pending any more: 9 < 11
    assert step(again, "WA-C1", "attack test")["hit"] is False
    for action in (again, turn, a):
        t.post(f"/v1/encounters/{eid}/actions/{action['id']}/revert", {})
    assert t.sheet(hero_char)["sheet"]["pending"] == {"FOR": 2, "DEX": -2}


def test_actions_per_turn_wa_one_action_a_turn_for_the_player_as_for_the_gm(table):
    """One action per turn (README "Actions per turn"): no Worlds Awakening rule grants a second one;
    a second attack in the Hero's turn is a 409, from its player as from the GM; the next turn
    starts the count afresh."""
    t = table("worlds-awakening", {"players_may_enter_dice": True})
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[])
    body = {"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"], "dice": [6, 5]}
    t.act(eid, body, headers=t.alice.headers)
    for headers in (t.alice.headers, t.gm):
        r = t.client.post(f"/v1/encounters/{eid}/actions", json=body, headers=headers)
        problem = assert_problem(r, 409, "conflict")
        assert problem["detail"] == (
            f"combatant {n['Hero']} has taken its action this turn (attack): one action per turn unless a rule "
            "grants more (no rule of worlds-awakening grants one)"
        )
        assert (problem["rule"], problem["granted_by"]) == ("actions_per_turn", [])
    t.next_turn(eid)
    attack(t, eid, n["Foe"], n["Hero"], [9])  # the GM, for the Foe in its turn: once
    assert attack(t, eid, n["Foe"], n["Hero"], [9], status=409)["rule"] == "actions_per_turn"
    t.next_turn(eid)  # round 2: the Hero's turn again
    t.act(eid, {**body, "dice": [6, 2]}, headers=t.alice.headers)
    assert pools(t, eid, "hp") == {"Hero": 15, "Foe": 10 - 5 - 2}
