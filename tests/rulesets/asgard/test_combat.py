"""Asgard attacks in an encounter through HTTP, table dice (AS-C1..C5, AS-C11, AS-C13, AS-H1):
the attack test, the defense test(s), damage read from the attack dice, protection, AS-C4's
primes and penalties, "mal en point", groups of extras, and one scripted fight."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api import encounter_support
from tests.api.encounter_support import attack, ids, names_of, new_round, normalised, pools, setup, step
from tests.api.support import assert_problem, assert_validation

table = encounter_support.table  # the fixture

EPEE = {"name": "epee", "damage_dice": 2, "ranged": False}
DAGUE = {"name": "dague", "damage_dice": 1, "ranged": False}
HACHE = {"name": "hache", "damage_dice": 3, "ranged": False}
GOURDIN = {"name": "gourdin", "damage_dice": 1, "ranged": False}


def hero(**kw: Any) -> dict[str, Any]:
    return {
        "skills": {"combat": 6, "defense": 4, "perception": 5, "resistance": 2, "volonte": 1},
        "vitality": 20,
        "vitality_max": 20,
        "heroism": 2,
        "protection": 2,
        "weapons": [EPEE, DAGUE],
        **kw,
    }


def foe(**kw: Any) -> dict[str, Any]:
    return {
        "skills": {"combat": 5, "defense": 3, "perception": 2, "resistance": 1, "volonte": 0},
        "vitality": 10,
        "vitality_max": 10,
        "heroism": 1,
        "protection": 1,
        "weapons": [HACHE],
        **kw,
    }


def extra(**kw: Any) -> dict[str, Any]:
    return {
        "skills": {"combat": 2, "defense": 2, "perception": 0},
        "vitality": 5,
        "vitality_max": 5,
        "protection": 0,
        "tier": "figurant",
        "weapons": [GOURDIN],
        **kw,
    }


def test_as_c1_c2_c3_attack_against_defense_damage_read_from_the_attack_dice(table):
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[4, 4, 4, 3, 3, 3])
    # AS-C1: combat 5+2+4 + 6 = 17 against defense 3+3+3 + 3 = 12; AS-C2: epee 2d6 reads the
    # two other dice, 2 + 4; AS-C3: − protection 1
    a = attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 3], weapon="epee")
    assert [(r["die"], r["value"], r["purpose"], r["by"]) for r in a["rolls"]] == (
        [("d6", v, "attack", n["Hero"]) for v in (5, 2, 4)] + [("d6", 3, "defense", n["Foe"])] * 3
    )
    assert [(s["rule"], s["what"]) for s in a["steps"]] == [
        ("AS-C1", "attack test"),
        ("AS-C1", "defense test"),
        ("AS-T9", "opposition"),
        ("AS-C2", "damage"),
        ("AS-C3", "protection"),
        ("AS-C3", "vitality"),
    ]
    assert (step(a, "AS-C1", "attack test")["score"], step(a, "AS-C1", "defense test")["score"]) == (17, 12)
    assert step(a, "AS-C2", "damage")["read_dice"] == [2, 4]
    assert step(a, "AS-C3", "protection") == {
        "rule": "AS-C3",
        "key": "protection",
        "what": "protection",
        "combatant_id": n["Foe"],
        "damage": 6,
        "protection": 1,
        "heroism_die": None,
        "taken": 5,
    }
    assert [(c["combatant_id"], c["field"], c["before"], c["after"]) for c in a["changes"]] == [
        (n["Foe"], "vitality", 10, 5)
    ]
    # AS-T9 in AS-C1: 2+3+3 + 5 = 13 against 4+3+2 + 4 = 13: the higher skill (5 > 4) wins;
    # hache 3d6 reads all three dice: 8 − 2
    b = attack(t, eid, n["Foe"], n["Hero"], [2, 3, 3, 4, 3, 2])
    assert (step(b, "AS-T9", "opposition")["decided_by"], step(b, "AS-C2", "damage")["read_dice"]) == (
        "skill",
        [2, 3, 3],
    )
    new_round(t, eid)  # one action per turn
    # dague 1d6 reads the distinguished first die; 1+3+4 + 6 = 14 against 5+5+1 + 3: the higher skill
    c = attack(t, eid, n["Hero"], n["Foe"], [1, 3, 4, 5, 5, 1], weapon="dague")
    assert step(c, "AS-T9", "opposition")["winner"] == "attacker"
    assert step(c, "AS-C2", "damage")["read_dice"] == [1]
    assert pools(t, eid, "vitality") == {"Hero": 14, "Foe": 5}


def test_actions_per_turn_as_one_action_a_turn_for_the_player_as_for_the_gm(table):
    """One action per turn (README "Actions per turn"): a second attack in the Hero's turn is a 409,
    from its player as from the GM, nothing rolled."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[4, 4, 4, 3, 3, 3])
    attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 3])  # 17 against 12: 6 − 1
    body = {"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"]}
    for headers, dice in ((t.alice.headers, {}), (t.gm, {"dice": [5, 2, 4, 3, 3, 3]})):
        r = t.client.post(f"/v1/encounters/{eid}/actions", json={**body, **dice}, headers=headers)
        assert assert_problem(r, 409, "conflict")["rule"] == "actions_per_turn"
    assert pools(t, eid, "vitality") == {"Hero": 20, "Foe": 5}


def test_as_c1_unperceived_attack_only_needs_the_gm_difficulty(table):
    t = table("asgard", {"gm_difficulty": 12})
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[4, 4, 4, 3, 3, 3])
    # no defense test: 3+2+1 + 6 = 12 ≥ the campaign's 12; dague reads 3, − 1
    a = attack(t, eid, n["Hero"], n["Foe"], [3, 2, 1], weapon="dague", unperceived=True)
    assert [r["purpose"] for r in a["rolls"]] == ["attack"] * 3
    assert step(a, "AS-C1", "unperceived attack: no defense") == {
        "rule": "AS-C1",
        "key": "unperceived_attack_no_defense",
        "what": "unperceived attack: no defense",
        "combatant_id": n["Foe"],
        "difficulty": 12,
        "score": 12,
        "automatic": None,
        "hit": True,
    }
    new_round(t, eid)  # one action per turn
    miss = attack(t, eid, n["Hero"], n["Foe"], [3, 2, 1], unperceived=True, difficulty=13)
    assert step(miss, "AS-C1", "unperceived attack: no defense")["hit"] is False and miss["changes"] == []
    # the standing reaction `none` (set by the GM) is the same; all 1s fail whatever the difficulty (AS-T3)
    r = t.client.patch(f"/v1/encounters/{eid}/combatants/{n['Foe']}", json={"reaction": "none"}, headers=t.gm)
    assert r.status_code == 200, r.text
    new_round(t, eid)
    fumble = attack(t, eid, n["Hero"], n["Foe"], [1, 1, 1], difficulty=0)
    assert step(fumble, "AS-C1", "unperceived attack: no defense")["automatic"] == "failure"
    assert pools(t, eid, "vitality") == {"Hero": 20, "Foe": 8}


def test_as_c4_primes_and_penalties_efficacite_prudence_danger_attaques_multiples(table):
    t = table("asgard")
    eid, n = setup(
        t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), ("Brute", foe(), "npc"), start=[4, 4, 4, 3, 3, 3, 2, 2, 2]
    )
    # efficacite +2 bought with blessure_legere: 19 against 12; 6 − 1 = 5, halved rounded up: 3
    a = attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 3], primes=["efficacite"], penalties=["blessure_legere"])
    assert step(a, "AS-C1", "attack test")["modifier"] == 2
    assert step(a, "AS-C4", "damage halved, rounded up") == {
        "rule": "AS-C4",
        "key": "damage_halved_rounded_up",
        "what": "damage halved, rounded up",
        "combatant_id": n["Foe"],
        "halvings": 1,
        "before": 5,
        "after": 3,
    }
    new_round(t, eid)  # one action per turn
    # prudence (+2 on the next defense test) bought with danger (−2 on it): both on the Hero's next defense
    t.act(
        eid,
        {
            "type": "attack",
            "actor_id": n["Hero"],
            "target_id": n["Foe"],
            "dice": [1, 1, 2, 3, 3, 3],
            "primes": ["prudence"],
            "penalties": ["danger"],
        },
    )
    b = attack(t, eid, n["Foe"], n["Hero"], [3, 3, 3, 3, 3, 3])
    assert step(b, "AS-C4", "prudence / danger on this defense test") == {
        "rule": "AS-C4",
        "key": "prudence_danger_on_this_defense_test",
        "what": "prudence / danger on this defense test",
        "combatant_id": n["Hero"],
        "modifier": 0,
        "prudence_left": 0,
        "danger_left": 0,
    }
    new_round(t, eid)
    # prudence alone (with blessure_legere): +2 on the next defense: 14 against 15, parried
    attack(t, eid, n["Hero"], n["Foe"], [1, 1, 2, 3, 3, 3], primes=["prudence"], penalties=["blessure_legere"])
    c = attack(t, eid, n["Foe"], n["Hero"], [3, 3, 3, 3, 3, 3])
    assert step(c, "AS-C1", "defense test")["score"] == 15 and step(c, "AS-T9", "opposition")["hit"] is False
    new_round(t, eid)
    # attaques_multiples: one attack test, each target defends, damage halved for both
    d = attack(
        t,
        eid,
        n["Hero"],
        n["Foe"],
        [5, 2, 4, 3, 3, 3, 2, 2, 2],
        primes=["attaques_multiples"],
        penalties=["danger"],
        also_target_id=n["Brute"],
    )
    assert [(r["purpose"], r["by"]) for r in d["rolls"]] == (
        [("attack", n["Hero"])] * 3 + [("defense", n["Foe"])] * 3 + [("defense", n["Brute"])] * 3
    )
    assert [
        (c["combatant_id"], c["field"], c["before"], c["after"]) for c in d["changes"] if c["field"] == "vitality"
    ] == [(n["Foe"], "vitality", 7, 4), (n["Brute"], "vitality", 10, 7)]
    new_round(t, eid)
    # a second target without the prime, the prime without one, two primes: 422
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"], "also_target_id": n["Brute"], "dice": []},
    )
    assert "AS-C4" in assert_problem(r, 422, "rule-violation")["detail"]
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={
            "type": "attack",
            "actor_id": n["Hero"],
            "target_id": n["Foe"],
            "primes": ["efficacite", "prudence"],
            "penalties": ["danger", "danger"],
            "dice": [],
        },
    )
    assert_validation(r, [["body", "primes"], ["body", "penalties"]])


def test_as_h1_as_c3_heroism_dice_add_to_damage_and_come_off_it(table):
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[4, 4, 4, 3, 3, 3])
    r = t.client.patch(
        f"/v1/encounters/{eid}/combatants/{n['Foe']}", json={"reaction": "defense_heroism"}, headers=t.gm
    )
    assert r.status_code == 200, r.text
    # 5+2+4+6 + 6 = 23 against 3+3+3+5 + 3 = 17; damage 2 + 4 + 6 (AS-C2), − 1 − 5 (AS-C3)
    a = attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 6, 3, 3, 3, 5], heroism_4d6=True)
    assert [r["purpose"] for r in a["rolls"]] == ["attack"] * 3 + ["heroism"] + ["defense"] * 3 + ["heroism"]
    assert step(a, "AS-C2", "damage")["damage"] == 12
    assert step(a, "AS-C3", "protection")["heroism_die"] == 5 and step(a, "AS-C3", "vitality")["after"] == 4
    assert sorted((c["field"], c["before"], c["after"]) for c in a["changes"]) == [
        ("heroism", 1, 0),
        ("heroism", 2, 1),
        ("vitality", 10, 4),
    ]
    new_round(t, eid)  # one action per turn
    # no heroism left for its standing heroic defense: 409, never a silent plain defense (AS-H6);
    # the attacker with none: 409, nothing rolled
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"], "dice": [1, 1, 2, 6, 6, 6]},
    )
    assert "AS-H6" in assert_problem(r, 409, "insufficient-resource")["detail"]
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "attack", "actor_id": n["Foe"], "target_id": n["Hero"], "heroism_4d6": True, "dice": []},
    )
    assert_problem(r, 409, "insufficient-resource")


def test_as_c5_mal_en_point_dying_and_unconscious_then_down_skipped_and_reverted(table):
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(vitality=3), "npc"), start=[4, 4, 4, 3, 3, 3])
    # hit for 6 − 1 = 5 ≥ 3: vitality 0; AS-C5 against 5 + 5: resistance 1+2+3 + 1 = 7 failed →
    # dying, the d6 says 4 rounds; volonte 2+2+2 + 0 = 6 failed → unconscious 6 + 5 rounds
    a = attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 3, 1, 2, 3, 4, 2, 2, 2, 6, 5])
    assert [r["purpose"] for r in a["rolls"]][6:] == (
        ["resistance"] * 3 + ["dying_rounds"] + ["volonte"] * 3 + ["unconscious_rounds"] * 2
    )
    assert all(r["by"] == n["Foe"] for r in a["rolls"][3:])
    mal = step(a, "AS-C5", "mal en point")
    assert (
        mal["difficulty"],
        mal["resistance"]["score"],
        mal["dying"],
        mal["dies_in_rounds"],
        mal["volonte"]["score"],
        mal["unconscious_rounds"],
    ) == (10, 7, True, 4, 6, 11)
    assert a["steps"][-1] == {"rule": "turn", "key": "down", "what": "down", "combatant_id": n["Foe"]}
    s = t.state(eid)
    assert s["combatants"][1]["down"] is True
    assert s["combatants"][1]["conditions"] == [
        {"name": "dying", "rounds_left": 4, "ends": "end_of_round", "since_round": 1},
        {"name": "unconscious", "rounds_left": 11, "ends": "end_of_round", "since_round": 1},
    ]
    assert t.sheet(s["combatants"][1]["character_id"])["sheet"]["condition"] == {
        "dying": True,
        "dies_in_rounds": 4,
        "unconscious_rounds": 11,
        "dead": False,
    }
    # a down combatant is skipped, and does not act
    turn = t.next_turn(eid)
    assert ("down: skipped", n["Foe"]) in [(st["what"], st.get("combatant_id")) for st in turn["steps"]]
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "attack", "actor_id": n["Foe"], "target_id": n["Hero"], "dice": []},
    )
    assert_problem(r, 409, "conflict")
    # a blow on a combatant already at 0 rolls no new AS-C5 tests (only the blow that brought it there);
    # unconscious and dying, it does not perceive the blow: no defense (AS-C1)
    again = attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4])
    assert not [st for st in again["steps"] if st["rule"] == "AS-C5"]
    # revert walks it all back: the sheet's vitality and condition, the combatant's conditions
    for action in (again, turn, a):
        t.post(f"/v1/encounters/{eid}/actions/{action['id']}/revert", {})
    s = t.state(eid)
    assert (s["combatants"][1]["down"], s["combatants"][1]["conditions"]) == (False, [])
    sheet = t.sheet(s["combatants"][1]["character_id"])["sheet"]
    assert (sheet["vitality"], sheet["condition"]["dying"], sheet["condition"]["unconscious_rounds"]) == (
        3,
        False,
        None,
    )


def test_as_c11_extras_attack_as_a_group_one_test_plus_one_per_member(table):
    t = table("asgard")
    eid, n = setup(
        t,
        ("Hero", hero(), "pc"),
        ("E1", extra(), "npc"),
        ("E2", extra(), "npc"),
        ("E3", extra(), "npc"),
        ("Foe", foe(), "npc"),
        start=[4, 4, 4, 3, 3, 3, 2, 2, 2, 1, 1, 2, 3, 3, 3],
    )
    # one test for three extras: 4+3+3 + 2 + 2 = 14 against 3+3+3 + 4 = 13; gourdin reads 4, + 2
    a = attack(t, eid, n["E1"], n["Hero"], [4, 3, 3, 3, 3, 3], group=[n["E2"], n["E3"]])
    assert step(a, "AS-C11", "group of extras: one test") == {
        "rule": "AS-C11",
        "key": "group_of_extras_one_test",
        "what": "group of extras: one test",
        "combatant_id": n["E1"],
        "members": [n["E1"], n["E2"], n["E3"]],
        "bonus": 2,
    }
    assert step(a, "AS-C1", "attack test")["score"] == 14
    assert (step(a, "AS-C2", "damage")["damage"], step(a, "AS-C3", "vitality")["after"]) == (6, 16)
    for group, status, slug in (
        ([n["Foe"]], 422, "rule-violation"),
        ([n["E2"], n["E2"]], 422, "validation-error"),
        ([n["Hero"]], 422, "validation-error"),
    ):
        r = t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=t.gm,
            json={"type": "attack", "actor_id": n["E1"], "target_id": n["Hero"], "group": group, "dice": []},
        )
        assert_problem(r, status, slug)
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "attack", "actor_id": n["E1"], "target_id": n["Hero"], "group": [n["E2"]] * 5, "dice": []},
    )
    assert_validation(r, [["body", "group"]])


def test_asgard_attack_bad_input_is_a_clear_4xx(table):
    t = table("asgard")
    eid, n = setup(
        t, ("Hero", hero(), "pc"), ("Foe", foe(vitality=30, vitality_max=30), "npc"), start=[4, 4, 4, 3, 3, 3]
    )
    url = f"/v1/encounters/{eid}/actions"
    base = {"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"]}
    assert (
        "lance"
        in assert_problem(
            t.client.post(url, json={**base, "weapon": "lance", "dice": []}, headers=t.gm), 422, "rule-violation"
        )["detail"]
    )
    assert_problem(t.client.post(url, json={**base, "damage": "1d8", "dice": []}, headers=t.gm), 422, "rule-violation")
    assert_validation(t.client.post(url, json={**base, "kind": "melee"}, headers=t.gm), [["body", "kind"]])
    assert_validation(t.client.post(url, json={**base, "reaction": "parry"}, headers=t.gm), [["body", "reaction"]])
    missing = assert_problem(t.client.post(url, json={**base, "dice": [5, 2, 4]}, headers=t.gm), 422, "dice-needed")
    assert (missing["needed"]["purpose"], missing["needed"]["by"]) == ("defense", n["Foe"])
    # a damage expression: its d6 read from the attack (three) and rolled beyond, its constant added
    a = attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 3, 6], damage="4d6+1")
    assert (step(a, "AS-C2", "damage")["extra_dice"], step(a, "AS-C2", "damage")["damage"]) == ([6], 18)


# --- one scripted fight -------------------------------------------------------------------------


def test_asgard_scripted_fight_as_c1_c2_c3_c4_c5_c11_c13(table):
    t = table("asgard")
    s = t.encounter(
        [
            {"character_id": t.character("Hero", hero(), kind="pc", player=t.alice), "position": {"x": 0, "y": 0}},
            {"character_id": t.character("Foe", foe(), kind="npc"), "position": {"x": 1, "y": 0}},
            {"character_id": t.character("E1", extra(), kind="npc")},
            {"character_id": t.character("E2", extra(), kind="npc")},
        ],
        options={"hp_visibility": "status"},
    )
    eid, n = s["id"], ids(s)
    # AS-C13: Hero 4+4+4 + 5 = 17, Foe 3+3+3 + 2 = 11, E1 takes 11 (AS-T8), E2 3+3+5 + 0 = 11:
    # Foe first on perception 2; E1 and E2 roll off 1d6: 2, 5
    t.start(eid, dice=[4, 4, 4, 3, 3, 3, 3, 3, 5, 2, 5], take_11=[n["E1"]])
    assert [e["combatant_id"] for e in t.state(eid)["order"]] == [n["Hero"], n["Foe"], n["E2"], n["E1"]]
    # round 1: the Hero hits the Foe (17 vs 12, 6 − 1); the Foe attacks with efficacite and danger
    # (2+3+3 + 5 + 2 = 15 vs 4+3+2 + 4 = 13, hache 8 − 2); the extras attack together
    # (5+3+3 + 2 + 1 = 14 vs 13; 1d6 reads 5, + 1, − 2)
    attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 3])
    t.next_turn(eid)
    attack(t, eid, n["Foe"], n["Hero"], [2, 3, 3, 4, 3, 2], primes=["efficacite"], penalties=["danger"])
    t.next_turn(eid)
    attack(t, eid, n["E2"], n["Hero"], [5, 3, 3, 3, 3, 3], group=[n["E1"]])
    # E1 attacked with E2's group: its own turn of the round passes (AS-C11), round 2 begins
    passed = t.next_turn(eid)
    assert ("AS-C11", n["E1"]) in [(st["rule"], st.get("combatant_id")) for st in passed["steps"]]
    # round 2: the Hero strikes both extras (attaques_multiples, danger): 17 vs 9 and 8; 6 halved: 3 each
    attack(
        t,
        eid,
        n["Hero"],
        n["E1"],
        [5, 2, 4, 3, 3, 1, 2, 2, 2],
        primes=["attaques_multiples"],
        penalties=["danger"],
        also_target_id=n["E2"],
    )
    t.next_turn(eid)
    # its owner sets the Hero's standing reaction: a heroic defense (AS-H1), 5+5+5+6 + 4 − 2 (danger,
    # AS-C4) = 23 against 1+2+2 + 5 = 10: parried
    r = t.client.patch(
        f"/v1/encounters/{eid}/combatants/{n['Hero']}", json={"reaction": "defense_heroism"}, headers=t.alice.headers
    )
    assert r.status_code == 200, r.text
    attack(t, eid, n["Foe"], n["Hero"], [1, 2, 2, 5, 5, 5, 6])
    t.next_turn(eid)
    t.next_turn(eid)
    t.next_turn(eid)
    # round 3: an unperceived blow (6+2+3 + 6 ≥ 10; dague reads 6, − 1 = 5: vitality 0) fells the Foe:
    # AS-C5, resistance 4+4+4 + 1 = 13 ≥ 5 + 5, volonte 1+1+2 + 0 = 4 failed: unconscious 2 + 3 rounds;
    # first a blow on E1 entered by mistake (all 6s against all 1s, and its AS-C5 dice) is reverted,
    # which gives the Hero's turn its one action back
    mistake = attack(t, eid, n["Hero"], n["E1"], [6, 6, 6, 1, 1, 1, 1, 1, 1, 3, 1, 1, 1, 1, 1])
    assert step(mistake, "AS-C5", "mal en point")["dying"] is True
    t.post(f"/v1/encounters/{eid}/actions/{mistake['id']}/revert", {})
    attack(t, eid, n["Hero"], n["Foe"], [6, 2, 3, 4, 4, 4, 1, 1, 2, 2, 3], weapon="dague", unperceived=True)
    t.next_turn(eid)
    t.post(f"/v1/encounters/{eid}/end", {}, status=200)
    final = t.state(eid)
    assert normalised(final, names_of(t, final)) == EXPECTED_ASGARD


EXPECTED_ASGARD: dict[str, Any] = {
    "id": "<encounter>",
    "campaign_id": "<campaign>",
    "name": "Ambush",
    "status": "ended",
    "round": 3,
    "version": 20,
    "options": {"hp_visibility": "status", "reveal_on_turn": True, "odds_for_players": "visible"},
    "combatants": [
        {
            "id": "Hero",
            "character_id": "Hero:character",
            "name": "Hero",
            "kind": "pc",
            "player_id": "<alice>",
            "side": "heroes",
            "hidden": False,
            "position": {"x": 0, "y": 0},
            "initiative": 17,
            "actions": 1,
            "down": False,
            "reaction": "defense_heroism",
            "resources": {"vitality": {"value": 10, "max": 20}, "heroism": {"value": 1}},
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
            "position": {"x": 1, "y": 0},
            "initiative": 11,
            "actions": 1,
            "down": True,
            "reaction": "defense",
            "resources": {"vitality": {"value": 0, "max": 10}, "heroism": {"value": 1}},
            "posture": None,
            "conditions": [{"name": "unconscious", "rounds_left": 5, "ends": "end_of_round", "since_round": 3}],
            "counters": {"danger": 1},
            "initiative_override": None,
        },
        {
            "id": "E1",
            "character_id": "E1:character",
            "name": "E1",
            "kind": "npc",
            "player_id": None,
            "side": "foes",
            "hidden": False,
            "position": None,
            "initiative": 11,
            "actions": 1,
            "down": False,
            "reaction": "defense",
            "resources": {"vitality": {"value": 2, "max": 5}, "heroism": {"value": 0}},
            "posture": None,
            "conditions": [],
            "counters": {"turn_spent": {"round": 1, "rule": "AS-C11"}},
            "initiative_override": None,
        },
        {
            "id": "E2",
            "character_id": "E2:character",
            "name": "E2",
            "kind": "npc",
            "player_id": None,
            "side": "foes",
            "hidden": False,
            "position": None,
            "initiative": 11,
            "actions": 1,
            "down": False,
            "reaction": "defense",
            "resources": {"vitality": {"value": 2, "max": 5}, "heroism": {"value": 0}},
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
            "initiative": 17,
            "extra_action": False,
            "tiebreak": None,
            "parallel_with": [],
        },
        {
            "combatant_id": "Foe",
            "slot": 1,
            "initiative": 11,
            "extra_action": False,
            "tiebreak": None,
            "parallel_with": [],
        },
        {
            "combatant_id": "E2",
            "slot": 2,
            "initiative": 11,
            "extra_action": False,
            "tiebreak": {"die": "d6", "value": 5, "rolls": [5]},
            "parallel_with": [],
        },
        {
            "combatant_id": "E1",
            "slot": 3,
            "initiative": 11,
            "extra_action": False,
            "tiebreak": {"die": "d6", "value": 2, "rolls": [2]},
            "parallel_with": [],
        },
    ],
    "current": {"slot": 2, "combatant_id": "E2", "combatant_ids": ["E2"]},
    "metadata": {},  # issue 25 item 9: none given
    "created_at": "<ts>",
    "updated_at": "<ts>",
}


def test_as_c5_the_dying_countdown_ends_in_death_and_the_unconscious_wake_up_down_or_not(table):
    """AS-C5: dying → dies at the end of the (1d6)-th next round; unconscious for 2d6 rounds, then
    awake (Decision: whole rounds after the blow's, as the dying ones). Both count at the end of
    each round whether or not their bearer acts; a down combatant's other conditions count too."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(vitality=3), "npc"), start=[4, 4, 4, 3, 3, 3])
    # round 1: 17 vs 12, 6 − 1 ≥ 3: vitality 0; resistance 1+2+3 + 1 = 7 < 10: dying, d6 3 rounds;
    # volonte 2+2+2 + 0 = 6 < 10: unconscious 1 + 1 = 2 rounds
    attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 3, 1, 2, 3, 3, 2, 2, 2, 1, 1])
    t.act(eid, {"type": "condition", "target_id": n["Foe"], "add": {"name": "stunned", "rounds": 2}})
    foe_sheet = lambda: t.sheet(combatant_of(t, eid, n["Foe"])["character_id"])["sheet"]["condition"]

    def counted(turn: dict) -> list[tuple]:
        return [
            (s["rule"], s["what"], s.get("rounds_left"))
            for s in turn["steps"]
            if s.get("combatant_id") == n["Foe"] and s["rule"] in ("AS-C5", "conditions")
        ]

    # end of round 1 (the blow's): the skipped turn counts `stunned`, AS-C5 does not count yet
    r1 = t.next_turn(eid)
    assert counted(r1) == [("conditions", "condition ticks", 1)]
    r2a = t.next_turn(eid)  # round 2: the Hero's turn ends; the Foe's is skipped; the round ends
    assert counted(r2a) == [
        ("conditions", "condition ends", 0),
        ("AS-C5", "dying: a round less", 2),
        ("AS-C5", "unconscious: a round less", 1),
    ]
    r3 = t.next_turn(eid)  # end of round 3: awake (acts in round 4), one more round to live
    assert counted(r3) == [("AS-C5", "dying: a round less", 1), ("AS-C5", "wakes up", None)]
    assert foe_sheet() == {"dying": True, "dies_in_rounds": 1, "unconscious_rounds": None, "dead": False}
    assert combatant_of(t, eid, n["Foe"])["down"] is False
    t.next_turn(eid)  # round 4: the Foe's turn
    assert t.state(eid)["current"]["combatant_id"] == n["Foe"]
    death = t.next_turn(eid)  # end of round 4: dies
    assert counted(death) == [("AS-C5", "dies at the end of the round", None)]
    assert foe_sheet() == {"dying": False, "dies_in_rounds": 0, "unconscious_rounds": None, "dead": True}
    dead = combatant_of(t, eid, n["Foe"])
    assert (dead["down"], dead["conditions"]) == (True, [])
    # a revert brings it back to its last round
    t.post(f"/v1/encounters/{eid}/actions/{death['id']}/revert", {})
    assert foe_sheet() == {"dying": True, "dies_in_rounds": 1, "unconscious_rounds": None, "dead": False}
    assert combatant_of(t, eid, n["Foe"])["conditions"] == [
        {"name": "dying", "rounds_left": 1, "ends": "end_of_round", "since_round": 1}
    ]


def test_as_c6_first_aid_on_the_sheet_stops_the_encounters_dying_countdown(table):
    """AS-C5/AS-C6: the sheet is the source of truth: a character no longer dying (first aid, a
    character action outside the encounter) loses the combatant's countdown at the round's end."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(vitality=3), "npc"), start=[4, 4, 4, 3, 3, 3])
    attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 3, 1, 2, 3, 3, 6, 6, 6])  # dying only
    foe_char = combatant_of(t, eid, n["Foe"])["character_id"]
    aid = t.post(f"/v1/characters/{foe_char}/actions", {"type": "first_aid", "healer_soins": 6, "dice": [5, 5, 5]})
    assert aid["effects"]["vitality"] == {"before": 0, "after": 1}
    t.next_turn(eid)
    turn = t.next_turn(eid)
    assert [(s["rule"], s["what"]) for s in turn["steps"] if s["rule"] in ("AS-C5", "AS-C6")] == [
        ("AS-C6", "no longer dying")
    ]
    assert combatant_of(t, eid, n["Foe"])["conditions"] == []


def test_as_t8_the_gm_has_an_npc_take_11_on_its_attack(table):
    """AS-T8: only the GM, only for an NPC: the attack test rolls no dice (11 + skill); the weapon's
    dice are then rolled (Decision, AS-C2 reads no attack dice)."""
    t = table("asgard")
    s = t.encounter(
        [
            {"character_id": t.character("Hero", hero(), kind="pc", player=t.alice)},
            {"character_id": t.character("Foe", foe(), kind="npc")},
            {"character_id": t.character("Pet", foe(), kind="npc", player=t.alice)},
        ]
    )
    eid, n = s["id"], ids(s)
    t.start(eid, dice=[1, 1, 1, 4, 4, 4, 2, 2, 2])  # Foe 14, Hero 8, Pet 11
    # Foe: 11 + combat 5 = 16 against 3+3+3 + 4 = 13; hache 3d6 rolled: 2+2+2, − protection 2
    a = attack(t, eid, n["Foe"], n["Hero"], [3, 3, 3, 2, 2, 2], take_11=True)
    assert [r["purpose"] for r in a["rolls"]] == ["defense"] * 3 + ["damage"] * 3
    assert (step(a, "AS-C1", "attack test")["take_11"], step(a, "AS-C1", "attack test")["score"]) == (True, 16)
    assert pools(t, eid, "vitality")["Hero"] == 16
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"], "take_11": True, "dice": [3, 3, 3]},
    )
    assert "AS-T8" in assert_problem(r, 422, "rule-violation")["detail"]
    t.next_turn(eid)
    t.next_turn(eid)  # the Pet's turn: its owner may act for it, not take 11
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.alice.headers,
        json={"type": "attack", "actor_id": n["Pet"], "target_id": n["Foe"], "take_11": True},
    )
    assert "AS-T8" in assert_problem(r, 403, "forbidden")["detail"]


def combatant_of(t, eid: str, cid: str) -> dict:
    return next(c for c in t.state(eid)["combatants"] if c["id"] == cid)


# --- issue 24: combat fidelity (items 10-16) -----------------------------------------------------


def test_as_c11_extras_who_attacked_as_a_group_have_no_turn_of_their_own_left(table):
    """AS-C11: extras act « de concert … au cours d'un unique tour de jeu »: E2, who attacked with
    E1's group, has no turn of its own left in that round (its slot passes; acting is a 409)."""
    t = table("asgard")
    eid, n = setup(
        t,
        ("Hero", hero(), "pc"),
        ("E1", extra(), "npc"),
        ("E2", extra(), "npc"),
        start=[1, 1, 2, 4, 4, 4, 3, 3, 3],  # E1 12, E2 9, Hero 9 (perception 5 > 0)
    )
    assert [e["combatant_id"] for e in t.state(eid)["order"]] == [n["E1"], n["Hero"], n["E2"]]
    a = attack(t, eid, n["E1"], n["Hero"], [4, 3, 3, 3, 3, 3], group=[n["E2"]])
    assert step(a, "AS-C11", "one shared turn: the others' own turns of this round pass")["members"] == [n["E2"]]
    t.next_turn(eid)  # the Hero's turn
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "attack", "actor_id": n["E2"], "target_id": n["Hero"], "dice": [4, 3, 3, 3, 3, 3]},
    )
    assert "AS-C11" in assert_problem(r, 409, "conflict")["detail"]
    turn = t.next_turn(eid)  # E2's slot passes: round 2, E1 first
    assert {
        "rule": "AS-C11",
        "key": "acted_with_others_this_round_no_turn_of_its_own_left",
        "what": "acted with others this round: no turn of its own left",
        "combatant_id": n["E2"],
    } in turn["steps"]
    s = t.state(eid)
    assert (s["round"], s["current"]["combatant_id"]) == (2, n["E1"])
    t.next_turn(eid)
    t.next_turn(eid)  # round 2: E2's own turn is back
    assert t.state(eid)["current"]["combatant_id"] == n["E2"]


def test_as_t6_cooperating_characters_attack_in_one_shared_slot(table):
    """AS-T6: cooperating characters test together, the best result leads (+1 per other result
    ≥ 15, −1 below 10), « au cours d'un unique tour de jeu »: one shared slot, the actor's."""
    t = table("asgard")
    eid, n = setup(
        t,
        ("Hero", hero(), "pc"),
        ("Ally", hero(skills={"combat": 4, "defense": 3, "perception": 1}), "pc"),
        ("Foe", foe(vitality=30, vitality_max=30), "npc"),
        start=[4, 4, 4, 3, 3, 3, 2, 2, 2],  # Hero 17, Ally 10, Foe 8
    )
    # Hero 1+1+2 + 6 = 10, Ally 5+5+4 + 4 = 18 leads; Hero's 10 is neither ≥ 15 nor < 10: 18 against
    # 3+3+3 + 3 = 12; the Ally's epee reads its two other dice 5 + 4, − 1
    a = attack(t, eid, n["Hero"], n["Foe"], [1, 1, 2, 5, 5, 4, 3, 3, 3], cooperating=[n["Ally"]])
    assert [(r["purpose"], r["by"]) for r in a["rolls"]] == (
        [("attack", n["Hero"])] * 3 + [("attack", n["Ally"])] * 3 + [("defense", n["Foe"])] * 3
    )
    coop = step(a, "AS-T6", "cooperation: the best result leads")
    assert (coop["leader"], coop["adjustments"], coop["score"]) == (n["Ally"], [0, 0], 18)
    assert (step(a, "AS-C2", "damage")["read_dice"], step(a, "AS-C3", "vitality")["after"]) == ([5, 4], 22)
    turn = t.next_turn(eid)  # the Ally's own slot passes: the Foe's turn
    assert ("AS-T6", n["Ally"]) in [(st["rule"], st.get("combatant_id")) for st in turn["steps"]]
    assert t.state(eid)["current"]["combatant_id"] == n["Foe"]


def test_as_c1_an_unconscious_target_does_not_defend(table):
    """AS-C1: a target that cannot perceive (unconscious, AS-C5) does not defend: no defense die is
    asked for (three 6s would have won)."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(vitality=3), "npc"), start=[4, 4, 4, 3, 3, 3])
    # 17 vs 12, 6 − 1 ≥ 3: vitality 0; resistance 4+4+4 + 1 = 13 ≥ 10; volonte 1+1+2 = 4: unconscious 2 + 3
    attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 3, 4, 4, 4, 1, 1, 2, 2, 3])
    new_round(t, eid)  # one action per turn; the Foe, unconscious 5 rounds, is still out
    b = attack(t, eid, n["Hero"], n["Foe"], [3, 2, 1])  # 6 + 6 = 12 ≥ 10, no defense die
    assert [r["purpose"] for r in b["rolls"]] == ["attack"] * 3
    assert step(b, "AS-C1", "unconscious: it does not perceive")["combatant_id"] == n["Foe"]
    assert step(b, "AS-C1", "unperceived attack: no defense")["hit"] is True


def test_as_c5_fire_during_a_fight_counts_the_dying_rounds_and_the_dying_one_dies(table):
    """AS-C5 (Decision): the states count whatever brought vitality to 0: a fire (AS-C9) on the
    character during round 1 makes it dying (the d6: 1 round): it dies at the end of round 2."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(vitality=3), "npc"), start=[4, 4, 4, 3, 3, 3])
    foe_char = combatant_of(t, eid, n["Foe"])["character_id"]
    # torch 4 ≥ 3: vitality 0; resistance 1+1+2 + 1 = 5 < 5 + 4: dying, d6 1; volonte 4+4+4 ≥ 9
    burnt = t.post(
        f"/v1/characters/{foe_char}/actions", {"type": "fire", "size": "torch", "dice": [4, 1, 1, 2, 1, 4, 4, 4]}
    )
    assert burnt["effects"]["mal_en_point"]["dies_in_rounds"] == 1
    t.next_turn(eid)  # the Foe (dying, conscious) still acts
    r1 = t.next_turn(eid)  # end of round 1: the fire's round does not count
    assert ("AS-C5", "dying: counted in the fight") in [(s["rule"], s["what"]) for s in r1["steps"]]
    t.next_turn(eid)
    death = t.next_turn(eid)  # end of round 2: dies
    assert ("AS-C5", "dies at the end of the round", n["Foe"]) in [
        (s["rule"], s["what"], s.get("combatant_id")) for s in death["steps"]
    ]
    assert t.sheet(foe_char)["sheet"]["condition"]["dead"] is True
    assert combatant_of(t, eid, n["Foe"])["down"] is True


def test_as_c5_an_unconscious_state_from_asphyxia_wakes_up_in_the_fight(table):
    """AS-C5: unconscious from asphyxia (AS-C10) during a fight: the 2d6 rounds count, it wakes up."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(vitality=3), "npc"), start=[4, 4, 4, 3, 3, 3])
    foe_char = combatant_of(t, eid, n["Foe"])["character_id"]
    # out of breath: 1d6 3 ≥ 3; resistance 4+4+4 + 1 ≥ 8; volonte 1+1+2 < 8: unconscious 1 + 1 rounds
    body = {"type": "asphyxia", "rounds": 1, "out_of_breath": True, "dice": [3, 4, 4, 4, 1, 1, 2, 1, 1]}
    assert t.post(f"/v1/characters/{foe_char}/actions", body)["effects"]["mal_en_point"]["unconscious_rounds"] == 2
    assert combatant_of(t, eid, n["Foe"])["down"] is True
    for _ in range(3):  # rounds 1 (not counted), 2 and 3 end
        t.next_turn(eid)
    assert t.sheet(foe_char)["sheet"]["condition"]["unconscious_rounds"] is None
    assert combatant_of(t, eid, n["Foe"])["down"] is False
    t.next_turn(eid)
    assert t.state(eid)["current"]["combatant_id"] == n["Foe"]


def test_as_c5_the_gms_damage_action_applies_the_mal_en_point_tests_with_table_dice(table):
    """AS-C5 (Decision): the GM's `damage` bringing vitality to 0 rolls the tests vs 5 + damage."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(vitality=3), "npc"), start=[4, 4, 4, 3, 3, 3])
    # 7 on 3 vitality: 0; resistance 1+2+3 + 1 = 7 < 12: dying, d6 4; volonte 6+6+6: automatic success
    a = t.act(eid, {"type": "damage", "target_id": n["Foe"], "amount": 7, "dice": [1, 2, 3, 4, 6, 6, 6]})
    assert [r["purpose"] for r in a["rolls"]] == ["resistance"] * 3 + ["dying_rounds"] + ["volonte"] * 3
    mal = step(a, "AS-C5", "mal en point")
    assert (mal["difficulty"], mal["dying"], mal["dies_in_rounds"], mal["unconscious_rounds"]) == (12, True, 4, None)
    assert combatant_of(t, eid, n["Foe"])["conditions"] == [
        {"name": "dying", "rounds_left": 4, "ends": "end_of_round", "since_round": 1}
    ]
    # a second blow on a character at 0 tests no more; without dice, the server rolls
    again = t.act(eid, {"type": "damage", "target_id": n["Foe"], "amount": 2})
    assert not [s for s in again["steps"] if s["rule"] == "AS-C5"]


@pytest.mark.parametrize("named", [True, False], ids=["damage_id", "the_blow_just_taken"])
def test_as_h4_cancelling_a_7_damage_blow_on_5_vitality_gives_back_5(table, named):
    """AS-H4: the character gets back exactly what that damage took (its vitality before the blow,
    never more) and the mal en point state the blow caused is undone: the blow named by its log
    entry, or the fight's action that just took the vitality."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(vitality=5, heroism=2), "npc"), start=[4, 4, 4, 3, 3, 3])
    # 5+4+4 + 6 = 19 vs 12; epee reads 4 + 4 = 8, − 1 = 7 on 5 vitality; AS-C5 vs 12: dying (d6 2),
    # unconscious (2d6 3 + 3)
    a = attack(t, eid, n["Hero"], n["Foe"], [5, 4, 4, 3, 3, 3, 1, 2, 3, 2, 1, 2, 3, 3, 3])
    assert step(a, "AS-C3", "vitality")["damage"] == 7
    foe_char = combatant_of(t, eid, n["Foe"])["character_id"]
    blow = {"damage_id": a["id"]} if named else {"already_applied": True}
    out = t.post(f"/v1/characters/{foe_char}/actions", {"type": "cancel_damage", "damage": 7, **blow})
    assert (out["lost"], out["effects"]["vitality"]) == (5, {"before": 0, "after": 5})
    sheet = t.sheet(foe_char)["sheet"]
    assert (
        sheet["vitality"],
        sheet["heroism"],
        sheet["condition"]["dying"],
        sheet["condition"]["unconscious_rounds"],
    ) == (
        5,
        0,
        False,
        None,
    )
    assert combatant_of(t, eid, n["Foe"])["down"] is False


def test_as_h6_a_heroic_defence_chosen_without_heroism_is_a_409(table):
    """AS-H6: an unaffordable spend is refused (409), nothing rolled, whichever side chose it — a
    heroic defence named in an attack's request too — never silently a plain defence."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(heroism=0), "npc"), start=[4, 4, 4, 3, 3, 3])
    version = t.state(eid)["version"]
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={
            "type": "attack",
            "actor_id": n["Hero"],
            "target_id": n["Foe"],
            "reaction": "defense_heroism",
            "dice": [5, 2, 4, 3, 3, 3, 3],
        },
    )
    assert assert_problem(r, 409, "insufficient-resource")["available"] == 0
    assert t.state(eid)["version"] == version


def test_as_t7_a_close_skill_in_combat_takes_5_off_the_attack_and_the_defence(table):
    """AS-T7: « Combat (épée) … avec une hache, mais le résultat est diminué de 5 »."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[4, 4, 4, 3, 3, 3])
    # 5+2+4 + 6 − 5 = 12 against 3+3+4 + 3 = 13: parried (17 would have hit)
    a = attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 4], close_skill=True)
    test = step(a, "AS-C1", "attack test")
    assert (test["close_skill"], test["score"], step(a, "AS-T9", "opposition")["hit"]) == (True, 12, False)
    # the defence with a close skill: 3+3+4 + 3 − 5 = 8 against 17
    new_round(t, eid)  # one action per turn
    b = attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 4], defense_close_skill=True)
    assert (step(b, "AS-C1", "defense test")["score"], step(b, "AS-T9", "opposition")["hit"]) == (8, True)
    # a player may not choose it for a target it does not control (on the Hero's next turn)
    new_round(t, eid)
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.alice.headers,
        json={"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"], "defense_close_skill": True},
    )
    assert "AS-T7" in assert_problem(r, 403, "forbidden")["detail"]


def test_as_c2_asset_dice_add_to_the_damage(table):
    """AS-C2: dice from an asset the GM allows (`asset_dice`) add to the damage when the attack hits."""
    t = table("asgard")
    eid, n = setup(
        t, ("Hero", hero(), "pc"), ("Foe", foe(vitality=30, vitality_max=30), "npc"), start=[4, 4, 4, 3, 3, 3]
    )
    # 17 vs 12; epee 2 + 4, the asset's 1d6 5: 11 − 1
    a = attack(t, eid, n["Hero"], n["Foe"], [5, 2, 4, 3, 3, 3, 5], asset_dice=1)
    assert [r["purpose"] for r in a["rolls"]][-1] == "damage"
    dmg = step(a, "AS-C2", "damage")
    assert (dmg["extra_dice"], dmg["asset_dice"], dmg["damage"]) == ([5], 1, 11)
    assert step(a, "AS-C3", "vitality")["after"] == 20


def test_as_h2_a_heroism_reroll_resolves_the_latest_action_again_with_new_dice(table):
    """AS-H2 (Decision) in an encounter: the spender rerolls its own test of the fight's latest
    action (its attack, or its defence): that action is undone and resolved again with the same
    choices and new dice, as one `heroism_reroll` action (1 heroism; once per action; only the
    latest action, else 409 naming it)."""
    t = table("asgard")
    eid, n = setup(t, ("Hero", hero(), "pc"), ("Foe", foe(), "npc"), start=[4, 4, 4, 3, 3, 3])
    # the dague: 1+1+2 + 6 = 10 against 12, parried; rolled again: 5+2+4 + 6 = 17 against 12, 5 − 1 = 4
    a = attack(
        t, eid, n["Hero"], n["Foe"], [1, 1, 2, 3, 3, 3], weapon="dague", primes=["prudence"], penalties=["danger"]
    )
    assert step(a, "AS-T9", "opposition")["hit"] is False
    reroll = {"type": "heroism_reroll", "actor_id": n["Hero"], "action_id": a["id"]}
    r = t.act(eid, {**reroll, "dice": [5, 2, 4, 3, 3, 3]})
    assert r["type"] == "heroism_reroll" and r["steps"][0] == {
        "rule": "AS-H2",
        "key": "heroism_spent_the_action_resolved_again_with_new_dice",
        "what": "heroism spent: the action resolved again with new dice",
        "combatant_id": n["Hero"],
        "rerolls": a["id"],
        "resource": "heroism",
        "before": 2,
        "after": 1,
    }
    assert (step(r, "AS-C2", "damage")["read_dice"], step(r, "AS-C3", "vitality")["after"]) == ([5], 6)
    s = t.state(eid)
    hero_now = next(c for c in s["combatants"] if c["id"] == n["Hero"])
    assert (hero_now["resources"]["heroism"]["value"], hero_now["counters"]) == (1, {"prudence": 1, "danger": 1})
    # once per action: the reroll is not rolled again, by either side
    for who in (n["Hero"], n["Foe"]):
        again = t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=t.gm,
            json={"type": "heroism_reroll", "actor_id": who, "action_id": r["id"], "dice": [6, 6, 6]},
        )
        assert "AS-H2" in assert_problem(again, 409, "conflict")["detail"]
    # only the GM or the spender's owner spends for it
    bob = t.client.post(f"/v1/encounters/{eid}/actions", headers=t.bob.headers, json={**reroll, "action_id": r["id"]})
    assert_problem(bob, 403, "forbidden")
    # only the latest action: the older one is a 409 naming the latest
    old = t.client.post(f"/v1/encounters/{eid}/actions", headers=t.gm, json={**reroll, "dice": [6, 6, 6]})
    assert assert_problem(old, 409, "conflict")["latest"] == r["id"]
    # the defender rerolls its defence of a hit: 2+3+3 + 5 = 13 against 3+3+3 + 4 − 2 + 2 = 13 (higher
    # skill, prudence and danger cancel out); again: 5+5+5 + 4 = 19, parried: the Hero keeps its 20
    # vitality, its heroism paid
    t.next_turn(eid)
    b = attack(t, eid, n["Foe"], n["Hero"], [2, 3, 3, 3, 3, 3])
    assert step(b, "AS-T9", "opposition")["hit"] is True
    d = t.act(eid, {"type": "heroism_reroll", "actor_id": n["Hero"], "action_id": b["id"], "dice": [2, 3, 3, 5, 5, 5]})
    assert step(d, "AS-T9", "opposition")["hit"] is False
    assert pools(t, eid, "vitality") == {"Hero": 20, "Foe": 6}
    assert pools(t, eid, "heroism") == {"Hero": 0, "Foe": 1}
    # no heroism left: 409 (AS-H6); a reverted reroll gives back the action it replaced
    t.post(f"/v1/encounters/{eid}/actions/{d['id']}/revert", {})
    assert (pools(t, eid, "vitality"), pools(t, eid, "heroism")) == ({"Hero": 14, "Foe": 6}, {"Hero": 1, "Foe": 1})


def test_as_h2_a_heroism_reroll_of_a_group_attack_on_two_targets_keeps_its_choices(table):
    """AS-H2: the action resolved again keeps every choice: AS-C4's second target, AS-C11's group."""
    t = table("asgard")
    eid, n = setup(
        t,
        ("E1", extra(heroism=1), "npc"),
        ("E2", extra(), "npc"),
        ("Hero", hero(), "pc"),
        ("Ally", hero(), "pc"),
        start=[6, 5, 5, 4, 4, 4, 1, 1, 1, 1, 1, 2],
    )
    body = {"group": [n["E2"]], "primes": ["attaques_multiples"], "penalties": ["danger"], "also_target_id": n["Ally"]}
    # 1+1+2 + 2 + 1 = 7 against two defences: both parried
    a = attack(t, eid, n["E1"], n["Hero"], [1, 1, 2, 3, 3, 3, 3, 3, 3], **body)
    # again: 6+5+4 + 3 = 18 against 3+3+3 + 4 = 13 and 2+2+2 + 4 = 10; gourdin 6 + 1 − 2, halved: 3 each
    r = t.act(
        eid, {"type": "heroism_reroll", "actor_id": n["E1"], "action_id": a["id"], "dice": [6, 5, 4, 3, 3, 3, 2, 2, 2]}
    )
    assert [
        (s["combatant_id"], s["after"]) for s in r["steps"] if s["rule"] == "AS-C3" and s["what"] == "vitality"
    ] == [
        (n["Hero"], 17),
        (n["Ally"], 17),
    ]
    assert step(r, "AS-C11", "group of extras: one test")["members"] == [n["E1"], n["E2"]]
    assert combatant_of(t, eid, n["E2"])["counters"] == {"turn_spent": {"round": 1, "rule": "AS-C11"}}
