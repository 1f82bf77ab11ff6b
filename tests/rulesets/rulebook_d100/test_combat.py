"""Rulebook D100 attacks in an encounter through HTTP, table dice (RB-F1..F4, RB-C4): the attack
test by kind, the dodge confrontation with its repeated-dodge penalty, absorb, criticals, damage
= level + weapon on hp or pe, and one scripted fight."""

from __future__ import annotations

from typing import Any

from tests.api import encounter_support
from tests.api.encounter_support import attack, ids, names_of, normalised, pools, setup, step
from tests.api.support import assert_problem, assert_validation

table = encounter_support.table  # the fixture

EPEE = {"name": "epee", "damage": "1d6", "kind": "melee"}
ARC = {"name": "arc", "damage": "1d8", "kind": "ranged"}
HACHE = {"name": "hache", "damage": "1d8", "kind": "melee"}


def hero(**kw: Any) -> dict[str, Any]:
    return {
        "stats": {"FOR": 50, "HAB": 60, "PER": 40, "CHA": 55, "DIS": 45},
        "crit_chance": 5,
        "hp": 14,
        "hp_max": 14,
        "pe": 14,
        "pe_max": 14,
        "armor": 2,
        "weapons": [EPEE, ARC],
        **kw,
    }


def foe(**kw: Any) -> dict[str, Any]:
    return {
        "stats": {"FOR": 60, "HAB": 40, "DIS": 30},
        "crit_chance": 5,
        "hp": 10,
        "hp_max": 10,
        "pe": 14,
        "pe_max": 14,
        "armor": 1,
        "weapons": [HACHE],
        **kw,
    }


def test_rb_f2_f3_rb_c4_attack_dodge_confrontation_then_level_plus_weapon(table):
    t = table("rulebook-d100")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[25, 35])
    # RB-F2 melee tests FOR 50: 23 → level 5 − 2 = 3; RB-F3 dodge HAB 40: 35 → level 1; RB-C4 the
    # attack wins; damage 3 + the epee's 4
    a = attack(t, eid, n["Hero"], n["Foe"], [23, 35, 4])
    assert [(r["die"], r["value"], r["purpose"], r["by"]) for r in a["rolls"]] == [
        ("d100", 23, "attack", n["Hero"]),
        ("d100", 35, "dodge", n["Foe"]),
        ("d6", 4, "damage", n["Hero"]),
    ]
    assert [(s["rule"], s["what"]) for s in a["steps"]] == [
        ("RB-F2", "attack test"),
        ("RB-F3", "dodge test"),
        ("RB-C4", "dodge: confrontation"),
        ("RB-F2", "damage"),
        ("RB-F1", "hp"),
    ]
    assert step(a, "RB-F2", "attack test") == {
        "rule": "RB-F2",
        "key": "attack_test",
        "what": "attack test",
        "combatant_id": n["Hero"],
        "kind": "melee",
        "stat": "FOR",
        "skill": None,
        "roll": 23,
        "percentage": 50,
        "level": 3,
        "outcome": "success",
    }
    assert step(a, "RB-F2", "damage") == {
        "rule": "RB-F2",
        "key": "damage",
        "what": "damage",
        "combatant_id": n["Hero"],
        "weapon": "epee",
        "expression": "1d6",
        "level": 3,
        "weapon_roll": 4,
        "damage": 7,
    }
    assert [(c["combatant_id"], c["field"], c["before"], c["after"]) for c in a["changes"]] == [
        (n["Foe"], "hp", 10, 3),
        (n["Foe"], "counters", {}, {"dodges": 1, "dodge_round": 1}),
    ]
    # the Foe (FOR 60: 52 → level 1) against the Hero's dodge (HAB 60: 18 → level 5): dodged
    b = attack(t, eid, n["Foe"], n["Hero"], [52, 18])
    assert step(b, "RB-C4", "dodge: confrontation")["winner"] == "defender" and len(b["steps"]) == 3
    assert pools(t, eid, "hp") == {"Hero": 14, "Foe": 3}


def test_rb_f3_each_further_dodge_in_a_round_is_ten_less_and_ties_by_rb_c2(table):
    t = table("rulebook-d100")
    # three attackers, one attack each in its own turn (one action per turn): HAB 60, 25 26 27 are
    # level 4 each, ordered by the units digit (RB-C2); the Foe's 35 (level 1) last
    eid, n = setup(
        t,
        ("Hero", hero(), "pc"),
        ("Ally", hero(), "pc"),
        ("Scout", hero(), "pc"),
        ("Foe", foe(hp=40, hp_max=40), "npc"),
        start=[25, 26, 27, 35],
    )
    first = attack(t, eid, n["Hero"], n["Foe"], [23, 35, 1])
    t.next_turn(eid)
    second = attack(t, eid, n["Ally"], n["Foe"], [23, 35, 1])
    t.next_turn(eid)
    # the second dodge at 40 − 10 = 30% (35 fails), a third at 40 − 20 = 20%: 13 → level 1 < 2
    third = attack(t, eid, n["Scout"], n["Foe"], [33, 13, 1])
    assert [step(a, "RB-F3", "dodge test")["penalty"] for a in (first, second, third)] == [0, -10, -20]
    assert [step(a, "RB-F3", "dodge test")["previous_dodges"] for a in (first, second, third)] == [0, 1, 2]
    assert step(third, "RB-F3", "dodge test")["percentage"] == 20
    t.next_turn(eid)
    t.next_turn(eid)  # round 2, the Hero's turn: the count starts again
    # round 2, the count starts again; 33 (level 2) against 23 at 40% (level 2): equal, same units:
    # d100 rerolls, the lower wins (RB-C2)
    tie = attack(t, eid, n["Hero"], n["Foe"], [33, 23, 40, 20])
    assert step(tie, "RB-F3", "dodge test")["penalty"] == 0
    assert [(r["purpose"], r["by"]) for r in tie["rolls"]][2:] == [("tiebreak", n["Hero"]), ("tiebreak", n["Foe"])]
    assert step(tie, "RB-C4", "dodge: confrontation") == {
        "rule": "RB-C4",
        "key": "dodge_confrontation",
        "what": "dodge: confrontation",
        "combatant_id": n["Foe"],
        "attack_level": 2,
        "dodge_level": 2,
        "winner": "defender",
        "tiebreak": "reroll",
    }


def test_rb_f3_critical_dodge_free_attack_and_a_fumbled_dodge_doubles_the_damage(table):
    t = table("rulebook-d100")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[25, 35])
    crit = attack(t, eid, n["Hero"], n["Foe"], [30, 3])
    assert crit["steps"][-1] == {
        "rule": "RB-F3",
        "key": "critical_dodge_a_free_attack",
        "what": "critical dodge: a free attack",
        "combatant_id": n["Foe"],
    }
    t.next_turn(eid)
    t.next_turn(eid)  # one action per turn: the Hero's next attack is in round 2 (the free attack lapsed)
    # the dodge fumbles (99 > 100 − 5): level 2 + 2, doubled
    fumble = attack(t, eid, n["Hero"], n["Foe"], [30, 99, 2])
    assert step(fumble, "RB-F3", "critical failure of the dodge: damage doubled")["taken"] == 8
    t.next_turn(eid)
    t.next_turn(eid)  # round 3
    # a critical attack (4 ≤ 5): its level doubled already (RB-T5): 2 × 5 + 1
    critical = attack(t, eid, n["Hero"], n["Foe"], [4, 50, 1])
    assert (step(critical, "RB-F2", "attack test")["outcome"], step(critical, "RB-F2", "damage")["damage"]) == (
        "critical_success",
        11,
    )
    assert pools(t, eid, "hp")["Foe"] == 0  # RB-F3 Decision: hp stops at 0, 9 beyond it
    assert step(critical, "RB-F1", "hp")["excess"] == 8 + 11 - 10


def test_rb_f3_a_doubled_blow_stops_hp_at_0_and_records_the_excess_shown_with_exact_hp_only(table):
    """RB-F3 Decision (turn 4): a fumbled dodge doubles 4 into 8 on 5 hp: hp stops at 0 (it went
    to −3, a fight to −23), the RB-F1 step records the 3 beyond as `excess`. A player reading the
    Foe's hp as a status (`hp_visibility: status`) gets neither `before`/`after` nor `excess` (with
    the damage, either would give the hp away)."""
    t = table("rulebook-d100")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(hp=5), "npc"), start=[25, 35])
    t.next_turn(eid)
    t.next_turn(eid)  # round 2: no critical dodge from round 1 in the way
    fumble = attack(t, eid, n["Hero"], n["Foe"], [30, 99, 2])
    assert step(fumble, "RB-F3", "critical failure of the dodge: damage doubled")["taken"] == 8
    hp = step(fumble, "RB-F1", "hp")
    assert (hp["damage"], hp["before"], hp["after"], hp["excess"]) == (8, 5, 0, 3)
    assert pools(t, eid, "hp")["Foe"] == 0 and t.state(eid)["combatants"][1]["down"] is True
    r = t.client.patch(f"/v1/encounters/{eid}", json={"options": {"hp_visibility": "status"}}, headers=t.gm)
    assert r.status_code == 200, r.text
    alice = {"Authorization": f"Bearer {t.alice.token}"}
    seen = t.client.get(f"/v1/encounters/{eid}/actions", headers=alice).json()["items"]
    shown = next(s for a in seen if a["id"] == fumble["id"] for s in a["steps"] if s["key"] == "damage")
    assert not {"before", "after", "excess"} & set(shown)


def test_rb_f3_absorb_rb_f2_ranged_and_morale_rb_f1_pe_and_default_stats(table):
    t = table("rulebook-d100")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[25, 35])
    r = t.client.patch(f"/v1/encounters/{eid}/combatants/{n['Foe']}", json={"reaction": "absorb"}, headers=t.gm)
    assert r.status_code == 200, r.text
    # the arc is a ranged weapon: PER 40, 12 → level 3; + 5, − armour 1; no defense die
    a = attack(t, eid, n["Hero"], n["Foe"], [12, 5], weapon="arc")
    assert (step(a, "RB-F2", "attack test")["stat"], step(a, "RB-F3", "absorb: armour")["taken"]) == ("PER", 7)
    t.next_turn(eid)
    t.next_turn(eid)  # one action per turn: round 2, the Hero's turn
    # morale: CHA 55 by default, 25 → level 3, + 1d4 3 off pe; the GM overrides the reaction (none)
    m = attack(t, eid, n["Hero"], n["Foe"], [25, 3], kind="morale", damage="1d4", reaction="none")
    assert step(m, "RB-F1", "pe") == {
        "rule": "RB-F1",
        "key": "damage",
        "what": "pe",
        "combatant_id": n["Foe"],
        "damage": 6,
        "resource": "pe",
        "before": 14,
        "after": 8,
        "excess": 0,
    }
    t.next_turn(eid)  # the Foe's turn
    # the Foe's sheet has no PER: an average person's 50 (RB-F1): 45 → level 1, + 2, the Hero's dodge
    # fails (70); a ranged attack with DIS: 422
    b = attack(t, eid, n["Foe"], n["Hero"], [45, 70, 2], kind="ranged", damage="1d6")
    assert step(b, "RB-F2", "attack test")["percentage"] == 50
    t.next_turn(eid)
    t.next_turn(eid)  # round 3, the Foe's turn again: its action is still to take
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={
            "type": "attack",
            "actor_id": n["Foe"],
            "target_id": n["Hero"],
            "kind": "ranged",
            "stat": "DIS",
            "dice": [],
        },
    )
    assert "PER" in assert_problem(r, 422, "rule-violation")["detail"]
    assert (pools(t, eid, "hp"), pools(t, eid, "pe")) == ({"Hero": 14 - (1 + 2), "Foe": 3}, {"Hero": 14, "Foe": 8})


def test_rb_f2_a_failed_attack_misses_and_hp_at_zero_is_down(table):
    t = table("rulebook-d100")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(hp=3), "npc"), start=[25, 35])
    url = f"/v1/encounters/{eid}/actions"
    base = {"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"]}
    assert_problem(
        t.client.post(url, json={**base, "weapon": "lance", "dice": []}, headers=t.gm), 422, "rule-violation"
    )
    miss = attack(t, eid, n["Hero"], n["Foe"], [80])
    assert [(s["rule"], s["what"]) for s in miss["steps"]] == [("RB-F2", "attack test"), ("RB-F2", "the attack misses")]
    assert miss["changes"] == []  # the turn's count is the flow's bookkeeping, out of the changes shown
    t.next_turn(eid)
    t.next_turn(eid)  # one action per turn: the Hero's next attack is in round 2
    down = attack(t, eid, n["Hero"], n["Foe"], [23, 90, 6])
    hp = step(down, "RB-F1", "hp")
    assert (hp["after"], hp["excess"]) == (0, 6) and down["steps"][-1]["what"] == "down"
    assert t.state(eid)["combatants"][1]["down"] is True
    assert_validation(t.client.post(url, json={**base, "reaction": "parry"}, headers=t.gm), [["body", "reaction"]])
    assert_validation(t.client.post(url, json={**base, "primes": []}, headers=t.gm), [["body", "primes"]])


def test_rulebook_scripted_fight_rb_f1_f2_f3_f4(table):
    t = table("rulebook-d100")
    s = t.encounter(
        [
            {"character_id": t.character("Hero", hero(), kind="pc", player=t.alice)},
            {"character_id": t.character("Foe", foe(), kind="npc")},
            {"character_id": t.character("Thug", foe(hp=6, hp_max=6), kind="npc")},
        ]
    )
    eid, n = s["id"], ids(s)
    # RB-F4: the Hero's HAB test is a critical success (3: an extra action before round 1), the
    # Foe's 35 (level 1), the Thug's 98 a critical failure (acts from round 2)
    t.start(eid, dice=[3, 35, 98])
    # the extra action: a ranged shot (PER 40, 12: level 3; the Foe's dodge 70 fails; + 5)
    attack(t, eid, n["Hero"], n["Foe"], [12, 70, 5], weapon="arc")
    t.next_turn(eid)
    # the Hero's turn: melee (23: level 3) against the Thug's absorb (armour 1): 3 + 2 − 1
    r = t.client.patch(f"/v1/encounters/{eid}/combatants/{n['Thug']}", json={"reaction": "absorb"}, headers=t.gm)
    assert r.status_code == 200, r.text
    attack(t, eid, n["Hero"], n["Thug"], [23, 2])
    t.next_turn(eid)
    # the Foe's turn: a morale attack (DIS 30, 11: level 2; the Hero's dodge with DIS 45: 60 fails;
    # 2 + 1d4 2 off pe)
    attack(t, eid, n["Foe"], n["Hero"], [11, 60, 2], kind="morale", stat="DIS", damage="1d4")
    t.next_turn(eid)  # the Thug does not act in round 1 (RB-F4); round 2, without the extra action
    # round 2: the Hero hits the Foe again (23: level 3 against a dodge 35: level 1; + 6): 2 − 9, down
    attack(t, eid, n["Hero"], n["Foe"], [23, 35, 6])
    t.next_turn(eid)  # the Foe is down: skipped; the Thug's turn, a blow entered wrong, reverted
    wrong = attack(t, eid, n["Thug"], n["Hero"], [41, 90, 8])
    t.post(f"/v1/encounters/{eid}/actions/{wrong['id']}/revert", {})
    attack(t, eid, n["Thug"], n["Hero"], [41, 59, 8])  # FOR 60: level 2; dodge 60: 59, level 1; 2 + 8
    t.next_turn(eid)
    # round 3: the Thug absorbs the Hero's 23 (level 3) + 3 − armour 1: 2 − 5, down
    attack(t, eid, n["Hero"], n["Thug"], [23, 3])
    t.post(f"/v1/encounters/{eid}/end", {}, status=200)
    final = t.state(eid)
    assert normalised(final, names_of(t, final)) == EXPECTED_RULEBOOK


EXPECTED_RULEBOOK: dict[str, Any] = {
    "id": "<encounter>",
    "campaign_id": "<campaign>",
    "name": "Ambush",
    "status": "ended",
    "round": 3,
    "version": 17,
    "options": {"hp_visibility": "exact", "reveal_on_turn": True, "odds_for_players": "visible"},
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
            "reaction": "dodge",
            "resources": {"hp": {"value": 4, "max": 14}, "pe": {"value": 10, "max": 14}},
            "posture": None,
            "conditions": [],
            "counters": {"dodges": 1, "dodge_round": 2},
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
            "initiative": 1,
            "actions": 1,
            "down": True,
            "reaction": "dodge",
            "resources": {"hp": {"value": 0, "max": 10}, "pe": {"value": 14, "max": 14}},
            "posture": None,
            "conditions": [],
            "counters": {"dodges": 1, "dodge_round": 2},
            "initiative_override": None,
        },
        {
            "id": "Thug",
            "character_id": "Thug:character",
            "name": "Thug",
            "kind": "npc",
            "player_id": None,
            "side": "foes",
            "hidden": False,
            "position": None,
            "initiative": -10,
            "actions": 1,
            "down": True,
            "reaction": "absorb",
            "resources": {"hp": {"value": 0, "max": 6}, "pe": {"value": 14, "max": 14}},
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
            "from_round": 1,
        },
        {
            "combatant_id": "Foe",
            "slot": 1,
            "initiative": 1,
            "extra_action": False,
            "tiebreak": None,
            "parallel_with": [],
            "from_round": 1,
        },
        {
            "combatant_id": "Thug",
            "slot": 2,
            "initiative": -10,
            "extra_action": False,
            "tiebreak": None,
            "parallel_with": [],
            "from_round": 2,
        },
    ],
    "current": {"slot": 0, "combatant_id": "Hero", "combatant_ids": ["Hero"]},
    "metadata": {},  # issue 25 item 9: none given
    "created_at": "<ts>",
    "updated_at": "<ts>",
}


# --- actions per turn (README "Actions per turn"), RB-F4's extra action, RB-F3's free attack --------


def still(t, eid: str, cid: str) -> None:
    r = t.client.patch(f"/v1/encounters/{eid}/combatants/{cid}", json={"reaction": "none"}, headers=t.gm)
    assert r.status_code == 200, r.text


def test_actions_per_turn_rb_one_action_a_turn_for_the_player_as_for_the_gm(table):
    """One action per turn: a second attack in the Hero's turn is a 409 naming the rules that would
    allow one (RB-F4, RB-F3), sent by its player or by the GM; a revert gives the action back; the
    next turn starts the count afresh; the GM acting outside a turn is its own call."""
    t = table("rulebook-d100", {"players_may_enter_dice": True})
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(hp=40, hp_max=40), "npc"), start=[25, 35])
    still(t, eid, n["Foe"])  # the Foe does not dodge: a player enters no die of the Foe's
    body = {"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"]}
    first = t.act(eid, {**body, "dice": [23, 1]}, headers=t.alice.headers)  # 3 + 1
    for headers in (t.alice.headers, t.gm):
        r = t.client.post(f"/v1/encounters/{eid}/actions", json={**body, "dice": [23, 1]}, headers=headers)
        problem = assert_problem(r, 409, "conflict")
        assert problem["detail"] == (
            f"combatant {n['Hero']} has taken its action this turn (attack): one action per turn unless a rule "
            "grants more (RB-F4 a critical initiative's extra action before round 1, RB-F3 a critical dodge's "
            "free attack (`free_attack: true`))"
        )
        assert (problem["rule"], problem["actions_taken"], problem["granted_by"]) == (
            "actions_per_turn",
            ["attack"],
            ["RB-F4", "RB-F3"],
        )
    assert pools(t, eid, "hp")["Foe"] == 36  # nothing of the refused attacks applied
    t.post(f"/v1/encounters/{eid}/actions/{first['id']}/revert", {})
    attack(t, eid, n["Hero"], n["Foe"], [23, 2])  # the revert gave the turn's action back: 3 + 2
    t.next_turn(eid)  # the Foe's turn: the GM acts for it, once
    attack(t, eid, n["Foe"], n["Hero"], [80])
    assert attack(t, eid, n["Foe"], n["Hero"], [80], status=409)["rule"] == "actions_per_turn"
    attack(t, eid, n["Hero"], n["Foe"], [23, 3])  # the GM, for the Hero outside its turn: 3 + 3
    t.next_turn(eid)  # round 2: the Hero's count starts again
    t.act(eid, {**body, "dice": [80]}, headers=t.alice.headers)
    assert pools(t, eid, "hp") == {"Hero": 14, "Foe": 40 - 5 - 6}


def test_rb_f4_a_critical_initiative_grants_its_extra_action_then_the_turns_own(table):
    """RB-F4: the critical success's extra action before round 1 is a turn of its own: one action
    there, one in its own turn, a third refused."""
    t = table("rulebook-d100", {"players_may_enter_dice": True})
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(hp=40, hp_max=40), "npc"), start=[3, 35])
    still(t, eid, n["Foe"])
    assert [(e["combatant_id"], e["extra_action"]) for e in t.state(eid)["order"]] == [
        (n["Hero"], True),
        (n["Hero"], False),
        (n["Foe"], False),
    ]
    body = {"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"], "dice": [23, 1]}
    t.act(eid, body, headers=t.alice.headers)  # the extra action
    assert_problem(t.client.post(f"/v1/encounters/{eid}/actions", json=body, headers=t.alice.headers), 409, "conflict")
    t.next_turn(eid, headers=t.alice.headers)  # the Hero's own turn
    t.act(eid, body, headers=t.alice.headers)
    r = t.client.post(f"/v1/encounters/{eid}/actions", json=body, headers=t.gm)
    assert "RB-F4" in assert_problem(r, 409, "conflict")["detail"]
    assert pools(t, eid, "hp")["Foe"] == 40 - 4 - 4


def test_rb_f3_a_critical_dodges_free_attack_is_the_dodgers_to_take_at_once(table):
    """RB-F3 (Decision): the Hero's critical dodge in the Foe's turn grants it a free attack its
    player takes at once (`free_attack: true`), not a 409 "not its turn"; once; it is no action of
    the turn (the dodger's own turn keeps its action); it lapses when the turn changes."""
    t = table("rulebook-d100", {"players_may_enter_dice": True})
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(hp=40, hp_max=40), "npc"), start=[25, 35])
    still(t, eid, n["Foe"])  # the Foe does not dodge: a player enters no die of the Foe's
    url = f"/v1/encounters/{eid}/actions"
    free = {"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"], "free_attack": True}
    t.next_turn(eid)  # the Foe's turn
    # the Foe's 30 (FOR 60: level 3) against the Hero's dodge 3 (HAB 60, critical: level 12)
    dodged = attack(t, eid, n["Foe"], n["Hero"], [30, 3])
    assert dodged["steps"][-1] == {
        "rule": "RB-F3",
        "key": "critical_dodge_a_free_attack",
        "what": "critical dodge: a free attack",
        "combatant_id": n["Hero"],
    }
    # an attack without `free_attack` is still not the Hero's to make in the Foe's turn
    r = t.client.post(url, json={**free, "free_attack": False, "dice": [23, 1]}, headers=t.alice.headers)
    assert assert_problem(r, 409, "conflict")["detail"] == f"it is not combatant {n['Hero']}'s turn"
    taken = t.act(eid, {**free, "dice": [23, 4]}, headers=t.alice.headers)  # 3 + 4
    assert taken["steps"][0] == {
        "rule": "RB-F3",
        "key": "free_attack",
        "what": "free attack",
        "combatant_id": n["Hero"],
        "dodged": n["Foe"],
    }
    assert step(taken, "RB-F1", "hp")["after"] == 33
    r = t.client.post(url, json={**free, "dice": [23, 4]}, headers=t.alice.headers)  # once
    assert_problem(r, 409, "conflict")
    # in the Hero's own turn: the GM's attack for the Foe outside its turn, dodged critically; the
    # free attack and the Hero's action both taken, a third refused
    t.next_turn(eid)  # round 2, the Hero's turn
    attack(t, eid, n["Foe"], n["Hero"], [30, 3])
    t.act(eid, {**free, "dice": [23, 1]}, headers=t.alice.headers)
    t.act(eid, {**free, "free_attack": False, "dice": [23, 1]}, headers=t.alice.headers)
    r = t.client.post(url, json={**free, "free_attack": False, "dice": [23, 1]}, headers=t.alice.headers)
    assert assert_problem(r, 409, "conflict")["rule"] == "actions_per_turn"
    # a free attack not taken before the turn changes lapses
    t.next_turn(eid)  # the Foe's turn
    attack(t, eid, n["Foe"], n["Hero"], [30, 3])
    t.next_turn(eid)  # round 3, the Hero's turn
    r = t.client.post(url, json={**free, "dice": [23, 1]}, headers=t.alice.headers)
    problem = assert_problem(r, 409, "conflict")
    assert (problem["rule"], problem["detail"]) == (
        "RB-F3",
        f"combatant {n['Hero']} has no free attack now: only a critical dodge grants one, taken at once, "
        "before the turn changes (RB-F3)",
    )
    assert pools(t, eid, "hp") == {"Hero": 14, "Foe": 40 - 7 - 4 - 4}
