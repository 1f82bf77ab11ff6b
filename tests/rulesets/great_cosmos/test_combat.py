# ruff: noqa: F811  (the `table` fixture is imported from test_encounters)
"""Great Cosmos combat through HTTP, with table dice: attacks (GC-P1..P7), karma effects
(GC-K1), moves and dashes (GC-D1..D4), parallel slots (GC-O2), postures, the Final Skill,
who may act and react, revert; and one scripted fight whose final state is asserted whole."""

from __future__ import annotations

from typing import Any

from tests.api.encounter_support import Table, ids, step, table  # noqa: F401  (the fixture)
from tests.api.support import assert_problem, assert_validation, bearer
from tests.factories import gc_fighter

SWORD = {"name": "Sword", "kind": "weapon", "slots": 2, "damage": "1d8+2"}


def armed(agilite: int = 55, *items: dict, **extra: Any) -> dict[str, Any]:
    return gc_fighter(agilite, inventory={"items": list(items)}, **extra)


def fight(t: Table, *entries: tuple, options: dict | None = None, start_dice: list[int] | None = None):
    """Characters (name, sheet, kind, player, position, reaction) in one started encounter: (eid, names→ids)."""
    combatants = []
    for name, sheet, kind, player, position, reaction in entries:
        cid = t.character(name, sheet, kind=kind, player=player)
        combatants.append(
            {
                "character_id": cid,
                **({"position": position} if position else {}),
                **({"reaction": reaction} if reaction else {}),
            }
        )
    s = t.encounter(combatants, options)
    t.start(s["id"], start_dice or [])
    return s["id"], ids(s)


def duel(
    t: Table,
    a_sheet: dict | None = None,
    b_sheet: dict | None = None,
    *,
    b_reaction: str | None = None,
    b_player=None,
    a_pos=(0, 0),
    b_pos=(1, 0),
    options: dict | None = None,
):
    """Aiko (Alice's, agilite 60: acts first) against Brute (agilite 40), side by side."""
    return fight(
        t,
        ("Aiko", a_sheet or gc_fighter(60), "pc", t.alice, {"x": a_pos[0], "y": a_pos[1]}, None),
        (
            "Brute",
            b_sheet or gc_fighter(40),
            "pc" if b_player else "npc",
            b_player,
            {"x": b_pos[0], "y": b_pos[1]},
            b_reaction,
        ),
        options=options,
    )


def attack(
    t: Table, eid: str, actor: str, target: str, dice: list[int] | None, headers=None, status: int = 201, **body
) -> dict:
    payload = {
        "type": "attack",
        "actor_id": actor,
        "target_id": target,
        "damage": "1d6",
        **({"dice": dice} if dice is not None else {}),
        **body,
    }
    return t.act(eid, {k: v for k, v in payload.items() if v is not None}, headers=headers, status=status)


def rules(action: dict) -> list[tuple[str, str]]:
    return [(s["rule"], s["what"]) for s in action["steps"]]


def combatant(t: Table, eid: str, cid: str) -> dict:
    return next(c for c in t.state(eid)["combatants"] if c["id"] == cid)


def hp(t: Table, eid: str, cid: str) -> int:
    return combatant(t, eid, cid)["resources"]["hp"]["value"]


# --- GC-P1..P4: the exchange ------------------------------------------------------------------


def test_gc_p1_offensive_doubles_damage_and_its_bearer_neither_dodges_nor_parries(table):
    t = table("great-cosmos")
    eid, n = duel(t, gc_fighter(60, default_posture="offensive"))
    hit = attack(t, eid, n["Aiko"], n["Brute"], [30, 50, 4])
    assert [(r["die"], r["value"], r["purpose"], r["by"]) for r in hit["rolls"]] == [
        ("d100", 30, "attack", n["Aiko"]),
        ("d100", 50, "dodge", n["Brute"]),
        ("d6", 4, "damage", n["Aiko"]),
    ]
    assert rules(hit) == [("GC-P3", "attack test"), ("GC-P2", "dodge"), ("GC-P4", "damage")]
    assert {k: step(hit, "GC-P4")[k] for k in ("raw", "multiplier", "posture", "total", "before", "after")} == {
        "raw": 4,
        "multiplier": 2,
        "posture": "offensive",
        "total": 8,
        "before": 100,
        "after": 92,
    }
    assert hit["changes"][-1] | {"character_id": None} == {
        "combatant_id": n["Brute"],
        "character_id": None,
        "field": "hp",
        "before": 100,
        "after": 92,
        "max": 100,
        "resource": True,
    }
    t.next_turn(eid)
    # the GM naming a dodge for an offensive defender: refused, nothing rolled nor written
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={
            "type": "attack",
            "actor_id": n["Brute"],
            "target_id": n["Aiko"],
            "damage": "1d6",
            "reaction": "dodge",
            "dice": [20, 3],
        },
    )
    assert "(GC-P1)" in assert_problem(r, 422, "rule-violation")["detail"] and hp(t, eid, n["Aiko"]) == 100
    # Aiko is offensive: its standing dodge becomes none, and a step says why (no die for it)
    back = attack(t, eid, n["Brute"], n["Aiko"], [20, 3])
    assert step(back, "GC-P1")["what"] == "no dodge nor parry in offensive"
    assert [r["purpose"] for r in back["rolls"]] == ["attack", "damage"] and hp(t, eid, n["Aiko"]) == 97


def test_gc_p2_a_critical_parry_holds_and_earns_a_riposte_its_owner_strikes_outside_its_turn(table):
    t = table("great-cosmos", {"players_may_enter_dice": True})
    eid, n = duel(t, b_reaction="parry", b_player=t.bob)
    parried = attack(t, eid, n["Aiko"], n["Brute"], [40, 5])
    p2 = step(parried, "GC-P2")
    assert (p2["what"], p2["stat"], p2["score"], p2["outcome"], p2["holds"], p2["riposte_available"]) == (
        "parry",
        "force",
        5,
        "critical_success",
        True,
        True,
    )
    assert [r["purpose"] for r in parried["rolls"]] == ["attack", "parry"]  # no damage die
    brute = combatant(t, eid, n["Brute"])
    assert brute["counters"] == {"riposte": n["Aiko"]}
    assert t.sheet(brute["character_id"])["sheet"]["karma"] == -1
    # Bob's riposte, outside Brute's turn (it is Aiko's); Aiko's dodge die would not be Bob's but the
    # server's (issue 21 item 2): Alice sets Aiko's standing reaction to none, so Bob's dice are all there is
    r = t.client.patch(
        f"/v1/encounters/{eid}/combatants/{n['Aiko']}", headers=bearer(t.alice.token), json={"reaction": "none"}
    )
    assert r.status_code == 200, r.text
    riposte = attack(t, eid, n["Brute"], n["Aiko"], [20, 3], headers=bearer(t.bob.token))
    assert rules(riposte) == [("GC-P2", "riposte"), ("GC-P3", "attack test"), ("GC-P4", "damage")]
    assert hp(t, eid, n["Aiko"]) == 97 and combatant(t, eid, n["Brute"])["counters"] == {}
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=bearer(t.bob.token),
        json={"type": "attack", "actor_id": n["Brute"], "target_id": n["Aiko"], "damage": "1d6", "dice": [20, 90, 3]},
    )
    assert assert_problem(r, 409, "conflict")["detail"] == f"it is not combatant {n['Brute']}'s turn"
    # a dodge that succeeds but scores above the attack does not hold (GC-P2)
    t.next_turn(eid)
    t.next_turn(eid)
    missed = attack(t, eid, n["Aiko"], n["Brute"], [30, 35, 2], reaction="dodge")
    assert step(missed, "GC-P2")["holds"] is False and hp(t, eid, n["Brute"]) == 98


def test_gc_p3_default_stats_by_kind_a_failed_attack_misses_and_missing_dice_name_the_next_one(table):
    t = table("great-cosmos")
    eid, n = duel(t, b_pos=(5, 5))
    for dice, needed in (
        ([], {"index": 0, "die": "d100", "purpose": "attack", "by": n["Aiko"]}),
        ([30], {"index": 1, "die": "d100", "purpose": "dodge", "by": n["Brute"]}),
        ([30, 90], {"index": 2, "die": "d6", "purpose": "damage", "by": n["Aiko"]}),
    ):
        r = t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=t.gm,
            json={
                "type": "attack",
                "actor_id": n["Aiko"],
                "target_id": n["Brute"],
                "kind": "ranged",
                "damage": "1d6",
                "dice": dice,
            },
        )
        assert assert_problem(r, 422, "dice-needed")["needed"] == needed
    missed = attack(t, eid, n["Aiko"], n["Brute"], [50], kind="ranged")  # precision 45
    assert (step(missed, "GC-P3")["stat"], step(missed, "GC-P3")["outcome"]) == ("precision", "failure")
    assert rules(missed) == [("GC-P3", "attack test")] and len(missed["rolls"]) == 1
    t.next_turn(eid)
    magic = attack(t, eid, n["Brute"], n["Aiko"], [50, 70, 1], kind="magic")  # esprit 50
    assert step(magic, "GC-P3")["stat"] == "esprit" and hp(t, eid, n["Aiko"]) == 99
    named = attack(t, eid, n["Brute"], n["Aiko"], [50, 70, 1], kind="magic", stat="chance", status=409)
    assert named["rule"] == "actions_per_turn" and "GC-O3" in named["detail"]  # one action per turn


def test_gc_p4_damage_from_the_named_weapon_the_first_one_or_an_expression(table):
    t = table("great-cosmos")
    eid, n = duel(t, armed(60, {"name": "Dagger", "kind": "item", "slots": 1}, SWORD))
    assert_validation(
        t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=t.gm,
            json={"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "weapon": "Axe"},
        ),
        [["body", "weapon"]],
    )
    hit = attack(t, eid, n["Aiko"], n["Brute"], [30, 90, 5], damage=None)
    assert {k: step(hit, "GC-P4")[k] for k in ("expression", "source", "raw", "total")} == {
        "expression": "1d8+2",
        "source": "weapon Sword",
        "raw": 7,
        "total": 7,
    }
    assert_validation(
        t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=t.gm,
            json={"type": "attack", "actor_id": n["Brute"], "target_id": n["Aiko"]},
        ),
        [["body", "damage"]],
    )
    assert_validation(
        t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=t.gm,
            json={"type": "attack", "actor_id": n["Brute"], "target_id": n["Aiko"], "damage": "1d6", "weapon": "Sword"},
        ),
        [["body"]],
    )
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "attack", "actor_id": n["Brute"], "target_id": n["Aiko"], "damage": "1d6", "heroism_4d6": True},
    )
    assert_validation(r, [["body", "heroism_4d6"]])  # another ruleset's field: refused


def test_gc_k1_karma_effects_of_both_tests_are_written_to_the_sheets(table):
    t = table("great-cosmos")
    eid, n = duel(t)
    hit = attack(t, eid, n["Aiko"], n["Brute"], [5, 95, 2])
    assert (step(hit, "GC-P3")["karma"], step(hit, "GC-P2")["karma"]) == (
        {"before": 0, "after": -1},
        {"before": 0, "after": 1},
    )
    state = t.state(eid)
    aiko, brute = (t.sheet(c["character_id"])["sheet"] for c in state["combatants"])
    assert (aiko["karma"], brute["karma"], brute["hp"]) == (-1, 1, 98)
    assert [(c["field"], c["before"], c["after"]) for c in hit["changes"] if c["field"] in ("karma", "hp")] == [
        ("karma", 0, -1),
        ("karma", 0, 1),
        ("hp", 100, 98),
    ]


# --- GC-P5..P7: the special postures -----------------------------------------------------------


def test_gc_p5_illumination_costs_a_light_point_rolls_its_advantage_and_defends_itself(table):
    t = table("great-cosmos")
    eid, n = duel(t)
    aiko = combatant(t, eid, n["Aiko"])["character_id"]
    entered = t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "illumination", "dice": [4]})
    assert step(entered, "GC-P5", "enters illumination") | {"combatant_id": None} == {
        "rule": "GC-P5",
        "key": "enters_special_posture",
        "what": "enters illumination",
        "combatant_id": None,
        "cost": {"light": 1},
        "karma_locked": 10,
        "advantage_die": 4,
        "advantage": "bonus_10",
    }
    assert entered["rolls"] == [{"die": "d6", "value": 4, "purpose": "advantage", "by": n["Aiko"]}]
    sheet = t.sheet(aiko)["sheet"]
    assert (sheet["posture"], sheet["posture_advantage"], sheet["light_points"], sheet["dark_points"]) == (
        "illumination",
        4,
        0,
        1,
    )
    assert combatant(t, eid, n["Aiko"])["counters"] == {
        "special": {"posture": "illumination", "since_round": 1, "turns": 1, "revive_used": False}
    }
    t.next_turn(eid)
    held = attack(t, eid, n["Brute"], n["Aiko"], [30, 7])
    assert step(held, "GC-P5") == {
        "rule": "GC-P5",
        "key": "automatic_defence_d10_7",
        "what": "automatic defence (d10 <= 7)",
        "combatant_id": n["Aiko"],
        "d10": 7,
        "holds": True,
    }
    assert held["rolls"][1] == {"die": "d10", "value": 7, "purpose": "auto defense", "by": n["Aiko"]}
    # an undodgeable attack: no automatic defence, and the standing dodge is not allowed either
    special = attack(t, eid, n["Brute"], n["Aiko"], [30, 3], undodgeable=True, status=409)
    assert special["rule"] == "actions_per_turn"  # Brute has acted in its turn: one action per turn
    t.next_turn(eid)
    t.next_turn(eid)  # round 2, Brute's turn again
    hit = attack(t, eid, n["Brute"], n["Aiko"], [30, 3], undodgeable=True)
    assert step(hit, "GC-P5")["what"] == "an undodgeable attack: no dodge" and hp(t, eid, n["Aiko"]) == 97
    t.next_turn(eid)
    # the auto defence fails (8), then a parry: force 68 + 10 (bonus_10), karma locked +10: 40 - 5 = 35 > 30
    parried = attack(t, eid, n["Brute"], n["Aiko"], [30, 8, 40, 5, 2], reaction="parry")
    assert (step(parried, "GC-P2")["target"], step(parried, "GC-P2")["score"], step(parried, "GC-P2")["karma"]) == (
        78,
        35,
        {"before": 0, "after": 0},
    )
    assert hp(t, eid, n["Aiko"]) == 95
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={
            "type": "attack",
            "actor_id": n["Brute"],
            "target_id": n["Aiko"],
            "damage": "1d6",
            "unparryable": True,
            "reaction": "parry",
            "dice": [30, 3],
        },
    )
    assert "GC-P5" in assert_problem(r, 422, "rule-violation")["detail"]
    # a super-critical attack: no automatic defence (GC-P5)
    crit = attack(t, eid, n["Brute"], n["Aiko"], [42, 30, 5, 1], reaction="dodge")
    assert "GC-P5" not in [s["rule"] for s in crit["steps"]] and step(crit, "GC-P2")["holds"] is False
    # out of light points: entering it again is refused (nothing spent); left at the start of its round-3
    # turn, the posture lasted 2 turns (rounds 1 and 2): no backlash (GC-P7)
    left = t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "defensive"})
    assert (step(left, "GC-P7")["turns_held"], step(left, "GC-P7")["backlash"]) == (2, False)
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "posture", "actor_id": n["Aiko"], "posture": "illumination", "dice": [4]},
    )
    assert "1 light point" in assert_problem(r, 409, "insufficient-resource")["detail"]


def test_gc_p5_the_advantage_is_the_sheets_one_source_for_the_fight_and_for_tests(table):
    """GC-P5: entering Illumination writes the sheet's posture and posture_advantage in the action's
    transaction; `POST …/tests` during the fight applies it (+20 on 5); the encounter reads it from
    the sheet (a GM's fix of the die counts at once); a revert and leaving the posture clear it."""
    t = table("great-cosmos")
    eid, n = duel(t)
    aiko = combatant(t, eid, n["Aiko"])["character_id"]
    entered = t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "illumination", "dice": [5]})
    assert [
        (c["field"], c["before"], c["after"])
        for c in entered["changes"]
        if c["field"] in ("posture", "posture_advantage")
    ] == [("posture", None, "illumination"), ("posture_advantage", None, 5)]
    sheet = t.sheet(aiko)["sheet"]
    assert (sheet["posture"], sheet["posture_advantage"]) == ("illumination", 5)
    test = t.post(f"/v1/characters/{aiko}/tests", {"stat": "force", "dice": [80, 1]})  # karma locked +10: a d10
    assert (test["target"], test["advantage"], test["outcome"]) == (
        88,
        {"die": 5, "effect": "bonus_20", "bonus": 20},
        "success",
    )
    # the GM corrects the die on the sheet: the next attack test reads +10, not +20
    r = t.client.patch(f"/v1/characters/{aiko}", json={"sheet": {"posture_advantage": 4}}, headers=t.gm)
    assert r.status_code == 200, r.text
    hit = attack(t, eid, n["Aiko"], n["Brute"], [70, 1, 80, 3], reaction="dodge")
    assert (step(hit, "GC-P3")["target"], step(hit, "GC-P3")["posture_modifier"]) == (78, 10)
    # leaving the posture clears it (a revert would put it back)
    t.next_turn(eid)
    t.next_turn(eid)
    left = t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "defensive"})
    assert [(c["field"], c["before"], c["after"]) for c in left["changes"] if c["field"] == "posture_advantage"] == [
        ("posture_advantage", 4, None)
    ]
    assert t.sheet(aiko)["sheet"].get("posture_advantage") is None
    t.post(f"/v1/encounters/{eid}/actions/{left['id']}/revert", {})
    sheet = t.sheet(aiko)["sheet"]
    assert (sheet["posture"], sheet["posture_advantage"]) == ("illumination", 4)
    back = t.post(f"/v1/characters/{aiko}/tests", {"stat": "force", "dice": [70, 1]})
    assert back["target"] == 78
    # reverting the entry restores the sheet before it: no posture, no advantage
    for action in t.client.get(f"/v1/encounters/{eid}/actions", params={"limit": 100}, headers=t.gm).json()["items"]:
        if action["type"] != "revert" and not action["reverted_by"] and action["type"] != "start":
            t.post(f"/v1/encounters/{eid}/actions/{action['id']}/revert", {"force": True})
    sheet = t.sheet(aiko)["sheet"]
    assert (sheet.get("posture"), sheet.get("posture_advantage")) == (None, None)


def test_gc_p5_extra_action_advantage_adds_an_action_while_the_posture_lasts(table):
    t = table("great-cosmos")
    eid, n = duel(t)
    entered = t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "illumination", "dice": [6]})
    assert step(entered, "GC-P5", "advantage: an extra action each round while the posture lasts")["actions"] == 2
    assert combatant(t, eid, n["Aiko"])["actions"] == 2
    t.next_turn(eid)
    turn = t.next_turn(eid, dice=[3])  # round 2: GC-O3 d6 of Aiko's second action: 60 - (4 + 3) = 53
    assert [(e["combatant_id"], e["initiative"], e["extra_action"]) for e in t.state(eid)["order"]] == [
        (n["Aiko"], 60, False),
        (n["Aiko"], 53, True),
        (n["Brute"], 40, False),
    ]
    assert turn["rolls"] == [{"die": "d6", "value": 3, "purpose": "extra_actions", "by": n["Aiko"]}]
    left = t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "defensive"})
    assert step(left, "GC-P7")["backlash"] is False and combatant(t, eid, n["Aiko"])["actions"] == 1


def test_gc_p6_sepulcrale_triples_damage_provokes_counter_attacks_and_revives_once(table):
    t = table("great-cosmos", {"players_may_enter_dice": True})
    eid, n = fight(
        t,
        ("Aiko", gc_fighter(60), "pc", t.alice, {"x": 0, "y": 0}, None),
        ("Brute", gc_fighter(40), "pc", t.bob, {"x": 1, "y": 0}, None),
        ("Cleo", gc_fighter(30), "npc", None, {"x": 1, "y": 1}, None),
    )
    entered = t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "sepulcrale"})
    assert entered["rolls"] == [] and step(entered, "GC-P6")["cost"] == {"dark": 1}
    hit = attack(t, eid, n["Aiko"], n["Brute"], [30, 5, 50, 2])  # karma locked at -10: + the d10
    assert (step(hit, "GC-P3")["score"], step(hit, "GC-P4")["multiplier"], step(hit, "GC-P4")["total"]) == (35, 3, 6)
    assert step(hit, "GC-P6")["what"] == "provocation: its next offensive action aims at the Sépulcrale"
    assert combatant(t, eid, n["Brute"])["counters"] == {"provoked_by": n["Aiko"], "provocation_pending": True}
    t.next_turn(eid)
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=bearer(t.bob.token),
        json={"type": "attack", "actor_id": n["Brute"], "target_id": n["Cleo"], "damage": "1d6", "dice": [30, 50, 2]},
    )
    assert "GC-P6" in assert_problem(r, 422, "rule-violation")["detail"]
    t.act(eid, {"type": "damage", "target_id": n["Aiko"], "amount": 95})
    # Brute strikes its provoker: a Sépulcrale neither dodges nor parries; the fatal 6 revives it at 50
    blow = attack(t, eid, n["Brute"], n["Aiko"], [30, 6], headers=bearer(t.bob.token))
    assert [w for r, w in rules(blow) if r == "GC-P6"] == [
        "provoked: attacks its provoker",
        "no dodge nor parry in sepulcrale",
        "Revive: a fatal blow leaves 50% of hp_max instead (once)",
        "counter-attack available",
    ]
    assert hp(t, eid, n["Aiko"]) == 50  # the provocation binds Brute's whole turn
    assert combatant(t, eid, n["Brute"])["counters"] == {"provoked_by": n["Aiko"]}
    assert combatant(t, eid, n["Aiko"])["counters"]["counter_attack"] == n["Brute"]
    assert combatant(t, eid, n["Aiko"])["counters"]["special"]["revive_used"] is True
    # Alice counter-attacks during Brute's turn (GC-P6); Brute's dodge die would be the server's, not
    # Alice's (issue 21 item 2): Bob sets Brute's standing reaction to none
    r = t.client.patch(
        f"/v1/encounters/{eid}/combatants/{n['Brute']}", headers=bearer(t.bob.token), json={"reaction": "none"}
    )
    assert r.status_code == 200, r.text
    counter = attack(t, eid, n["Aiko"], n["Brute"], [30, 5, 1], headers=bearer(t.alice.token))
    assert rules(counter)[0] == ("GC-P6", "counter-attack") and hp(t, eid, n["Brute"]) == 91
    # a second fatal blow: no second Revive
    t.act(eid, {"type": "damage", "target_id": n["Aiko"], "amount": 45})
    t.next_turn(eid)
    down = attack(t, eid, n["Cleo"], n["Aiko"], [20, 6], kind="ranged")
    assert ("turn", "down") in rules(down) and combatant(t, eid, n["Aiko"])["down"] is True
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "attack", "actor_id": n["Brute"], "target_id": n["Aiko"], "damage": "1d6", "dice": [20, 6]},
    )
    assert_validation(r, [["body", "target_id"]])  # down already


def test_gc_p6_apocalypse_when_the_sepulcrale_ends_without_revive(table):
    t = table("great-cosmos")
    eid, n = duel(t)
    t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "sepulcrale"})
    t.act(eid, {"type": "damage", "target_id": n["Aiko"], "amount": 10})
    left = t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "offensive"})
    assert step(left, "GC-P6") | {"combatant_id": None} == {
        "rule": "GC-P6",
        "key": "apocalypse_revive_never_fired_dies_and_comes_back_at_50_hp_max",
        "what": "Apocalypse: Revive never fired: dies and comes back at 50% hp_max",
        "combatant_id": None,
        "resource": "hp",
        "before": 90,
        "after": 50,
    }
    assert step(left, "GC-P7")["backlash"] is False and hp(t, eid, n["Aiko"]) == 50
    assert combatant(t, eid, n["Aiko"])["posture"] == "offensive"
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "posture", "actor_id": n["Aiko"], "posture": "sepulcrale"},
    )
    assert "1 dark point" in assert_problem(r, 409, "insufficient-resource")["detail"]  # nothing spent


def test_gc_p7_an_illumination_held_3_turns_backlashes_no_action_no_reaction_for_its_next_2_turns(table):
    """GC-P7 (Decision): entered in round 1 and left at the start of its round-4 turn (before acting), it
    lasted 3 turns (rounds 1..3); the backlash is its holder's next two turns (rounds 5 and 6): the rest
    of round 4 it acts, then no action, move, dodge nor parry until round 7."""
    t = table("great-cosmos")
    eid, n = duel(t)
    t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "illumination", "dice": [1]})
    for _ in range(6):
        t.next_turn(eid)
    assert t.state(eid)["round"] == 4
    left = t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "defensive"})
    assert {k: step(left, "GC-P7")[k] for k in ("turns_held", "backlash", "backlash_turns", "cannot_act")} == {
        "turns_held": 3,
        "backlash": True,
        "backlash_turns": 2,
        "cannot_act": True,
    }
    assert combatant(t, eid, n["Aiko"])["counters"] == {
        "backlash": {
            "posture": "illumination",
            "turns_left": 2,
            "running": False,
            "disadvantage_die": None,
            "disadvantage": None,
        }
    }
    attack(t, eid, n["Aiko"], n["Brute"], [30, 90, 1])  # the rest of its turn: it still acts
    ended = t.next_turn(eid)
    assert ("GC-P7", "backlash: its next 2 turns") in rules(ended)
    aiko = combatant(t, eid, n["Aiko"])["character_id"]
    assert t.sheet(aiko)["sheet"]["backlash"] == {"posture": "illumination", "disadvantage_die": None}
    hit = attack(t, eid, n["Brute"], n["Aiko"], [30, 2])
    assert step(hit, "GC-P7")["what"] == "no dodge nor parry in illumination backlash"
    skipped = t.next_turn(eid)  # round 5: Aiko cannot act, Brute's turn
    assert {
        "rule": "GC-P7",
        "key": "illumination_backlash_cannot_act",
        "what": "Illumination backlash: cannot act",
        "turns_left": 2,
        "combatant_id": n["Aiko"],
    } in skipped["steps"]
    assert t.state(eid)["current"]["combatant_id"] == n["Brute"]
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "move", "actor_id": n["Aiko"], "to": {"x": 0, "y": 1}},
    )
    assert assert_problem(r, 409, "conflict")["rule"] == "GC-P7"
    over = t.next_turn(eid)  # round 6: still skipped, its second backlash turn ends
    assert ("GC-P7", "backlash ends") in rules(over)
    assert t.state(eid)["round"] == 6 and t.state(eid)["current"]["combatant_id"] == n["Brute"]
    assert combatant(t, eid, n["Aiko"])["counters"] == {} and t.sheet(aiko)["sheet"]["backlash"] is None
    t.next_turn(eid)
    assert (t.state(eid)["round"], t.state(eid)["current"]["combatant_id"]) == (7, n["Aiko"])


def test_gc_p7_a_posture_left_at_the_start_of_a_turn_does_not_count_that_turn(table):
    """GC-P7 (Decision): entered in round 1 and left at the start of the holder's round-3 turn (a move
    before it is fine): 2 turns, no backlash, no die (it cost 3 turns and a backlash before)."""
    t = table("great-cosmos")
    eid, n = duel(t, b_pos=(5, 5))
    t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "sepulcrale"})
    for _ in range(4):
        t.next_turn(eid)
    t.act(eid, {"type": "move", "actor_id": n["Aiko"], "to": {"x": 0, "y": 1}})
    left = t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "defensive"})
    assert (step(left, "GC-P7")["turns_held"], step(left, "GC-P7")["backlash"], left["rolls"]) == (2, False, [])
    assert "backlash" not in combatant(t, eid, n["Aiko"])["counters"]


def test_gc_p7_a_sepulcrale_backlash_rolls_its_disadvantage_halves_damage_and_acts_last(table):
    """Left at the start of its round-4 turn (3 turns held): the disadvantage d6 (4: -10), Apocalypse; the
    rest of that turn is no backlash turn; in its next turns it acts last, at -10, damage x0.5."""
    t = table("great-cosmos")
    eid, n = duel(t)
    t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "sepulcrale"})
    for _ in range(6):
        t.next_turn(eid)
    left = t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "defensive", "dice": [4]})
    assert left["rolls"] == [{"die": "d6", "value": 4, "purpose": "disadvantage", "by": n["Aiko"]}]
    assert {k: step(left, "GC-P7")[k] for k in ("backlash", "acts_last", "damage_multiplier", "disadvantage")} == {
        "backlash": True,
        "acts_last": True,
        "damage_multiplier": 0.5,
        "disadvantage": "malus_10",
    }
    assert hp(t, eid, n["Aiko"]) == 50  # GC-P6 Apocalypse too: Revive never fired
    same_turn = attack(t, eid, n["Aiko"], n["Brute"], [30, 50, 5])
    assert (step(same_turn, "GC-P3")["target"], step(same_turn, "GC-P4")["total"]) == (68, 5)
    t.next_turn(eid)
    new_round = t.next_turn(eid)
    assert {
        "rule": "GC-P7",
        "key": "sepulcrale_backlash_acts_last",
        "what": "Sépulcrale backlash: acts last",
        "combatant_id": n["Aiko"],
    } in new_round["steps"]
    assert [e["combatant_id"] for e in t.state(eid)["order"]] == [n["Brute"], n["Aiko"]]
    t.next_turn(eid)  # Brute's turn ends: Aiko's
    hit = attack(t, eid, n["Aiko"], n["Brute"], [30, 50, 5])  # force 68 - 10, damage 5 x 0.5
    assert (step(hit, "GC-P3")["target"], step(hit, "GC-P4")["multiplier"], step(hit, "GC-P4")["total"]) == (58, 0.5, 2)


def test_gc_p7_action_annulee_cancels_every_action_of_the_backlash_moves_stay_allowed(table):
    """GC-P7 (Decision): the disadvantage 6 lasts the whole backlash: every action of its two turns is
    refused (409), moves stay allowed; the rest of the turn the posture was left in is no backlash turn."""
    t = table("great-cosmos")
    eid, n = duel(t)
    a, b = n["Aiko"], n["Brute"]
    t.act(eid, {"type": "posture", "actor_id": a, "posture": "sepulcrale"})
    for _ in range(6):
        t.next_turn(eid)
    left = t.act(eid, {"type": "posture", "actor_id": a, "posture": "defensive", "dice": [6]})
    assert step(left, "GC-P7")["disadvantage"] == "action_cancelled"
    attack(t, eid, a, b, [30, 90, 1], kind="ranged")  # round 4, the turn it left the posture in: it acts
    t.next_turn(eid)
    t.next_turn(eid)  # round 5: Brute first, Aiko last (GC-P7)
    t.next_turn(eid)
    for round_ in (5, 6):
        assert t.state(eid)["current"]["combatant_id"] == a and t.state(eid)["round"] == round_
        for body in (
            {"type": "attack", "actor_id": a, "target_id": b, "damage": "1d6", "kind": "ranged", "dice": [30, 90, 1]},
            {"type": "dash", "actor_id": a, "dice": [30]},
        ):
            r = t.client.post(f"/v1/encounters/{eid}/actions", headers=t.gm, json=body)
            assert assert_problem(r, 409, "conflict")["rule"] == "GC-P7"
        t.act(eid, {"type": "move", "actor_id": a, "to": {"x": 0, "y": round_ - 4}})
        t.next_turn(eid)
        t.next_turn(eid)
    # round 7: the backlash is over (Aiko first again, its turn passed)
    assert t.state(eid)["round"] == 7 and "backlash" not in combatant(t, eid, a)["counters"]
    assert [e["combatant_id"] for e in t.state(eid)["order"]] == [a, b]
    t.next_turn(eid)
    attack(t, eid, a, b, [30, 90, 1], kind="ranged")


def test_gc_p7_the_backlash_malus_applies_to_tests_outside_the_encounter(table):
    """GC-P7 (Decision): while the backlash runs the sheet carries it (`backlash`), so `POST …/tests` applies
    its -20 (disadvantage 5); the end of the fight clears it."""
    t = table("great-cosmos")
    eid, n = duel(t)
    aiko = combatant(t, eid, n["Aiko"])["character_id"]
    t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "sepulcrale"})
    for _ in range(6):
        t.next_turn(eid)
    t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "defensive", "dice": [5]})
    assert t.post(f"/v1/characters/{aiko}/tests", {"stat": "force", "dice": [50]})["target"] == 68  # not yet
    t.next_turn(eid)
    assert t.sheet(aiko)["sheet"]["backlash"] == {"posture": "sepulcrale", "disadvantage_die": 5}
    test = t.post(f"/v1/characters/{aiko}/tests", {"stat": "force", "dice": [50]})
    assert (test["target"], test["outcome"], test["disadvantage"]) == (
        48,
        "failure",
        {"die": 5, "effect": "malus_20", "malus": -20},
    )
    r = t.client.post(f"/v1/encounters/{eid}/end", headers=t.gm)
    assert r.status_code == 200, r.text
    assert t.sheet(aiko)["sheet"]["backlash"] is None
    after = t.post(f"/v1/characters/{aiko}/tests", {"stat": "force", "dice": [50]})
    assert (after["target"], after["disadvantage"]) == (68, None)


def test_gc_p6_provocation_binds_the_next_turn_only_and_lapses_when_the_provoker_is_down(table):
    t = table("great-cosmos")
    eid, n = fight(
        t,
        ("Aiko", gc_fighter(60), "pc", t.alice, {"x": 0, "y": 0}, None),
        ("Brute", gc_fighter(40), "npc", None, {"x": 1, "y": 0}, None),
        ("Cleo", gc_fighter(30), "npc", None, {"x": 1, "y": 1}, None),
    )
    a, b, c = n["Aiko"], n["Brute"], n["Cleo"]
    t.act(eid, {"type": "posture", "actor_id": a, "posture": "sepulcrale"})
    attack(t, eid, a, b, [30, 5, 50, 2])  # 6 damage: Brute is provoked, from its next turn
    started = t.next_turn(eid)
    assert ("GC-P6", "provoked: this turn's attacks aim at its provoker") in rules(started)
    r = attack(t, eid, b, c, [30, 90, 1], status=422)
    assert r["rule"] == "GC-P6" and r["errors"][0]["loc"] == ["body", "target_id"]
    ended = t.next_turn(eid)  # Brute's turn ends: the provocation lapses
    assert ("GC-P6", "provocation lapses: its turn ended") in rules(ended)
    assert combatant(t, eid, b)["counters"] == {}
    t.next_turn(eid)  # round 2: Aiko does nothing
    t.next_turn(eid)
    assert t.state(eid)["current"]["combatant_id"] == b
    attack(t, eid, b, c, [30, 90, 1])  # round 2: Brute is free again
    t.next_turn(eid)
    t.next_turn(eid)  # round 3: Aiko provokes Brute again, then goes down
    attack(t, eid, a, b, [30, 5, 50, 2])
    t.act(eid, {"type": "damage", "target_id": a, "amount": 100})  # GC-P6 Revive: 50
    t.act(eid, {"type": "damage", "target_id": a, "amount": 50})
    assert combatant(t, eid, a)["down"] is True
    t.next_turn(eid)
    free = attack(t, eid, b, c, [30, 90, 1])
    assert rules(free)[0] == ("GC-P6", "provocation lapses: the provoker is down or out of the fight")
    assert "provoked_by" not in combatant(t, eid, b)["counters"]


def test_gc_p6_revive_fires_against_the_gms_damage_rounded_up(table):
    t = table("great-cosmos")
    eid, n = duel(t, gc_fighter(60, hp=10, hp_max=39))
    t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "sepulcrale"})
    hit = t.act(eid, {"type": "damage", "target_id": n["Aiko"], "amount": 15})
    assert rules(hit) == [("GM", "damage"), ("GC-P6", "Revive: a fatal blow leaves 50% of hp_max instead (once)")]
    assert (step(hit, "GM")["after"], step(hit, "GC-P6")["after"], hp(t, eid, n["Aiko"])) == (20, 20, 20)
    assert combatant(t, eid, n["Aiko"])["counters"]["special"]["revive_used"] is True
    again = t.act(eid, {"type": "damage", "target_id": n["Aiko"], "amount": 25})  # once only
    assert ("turn", "down") in rules(again) and hp(t, eid, n["Aiko"]) == 0
    undo = t.post(f"/v1/encounters/{eid}/actions/{again['id']}/revert", {})
    assert undo["type"] == "revert" and hp(t, eid, n["Aiko"]) == 20


def test_gc_p1_a_posture_changes_only_in_its_holders_turn_before_it_acts(table):
    t = table("great-cosmos")
    eid, n = duel(t, gc_fighter(60, default_posture="offensive"))
    attack(t, eid, n["Aiko"], n["Brute"], [30, 50, 4])  # x2
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "posture", "actor_id": n["Aiko"], "posture": "defensive"},
    )
    assert assert_problem(r, 409, "conflict")["rule"] == "GC-P1"
    t.next_turn(eid)
    t.act(eid, {"type": "move", "actor_id": n["Brute"], "to": {"x": 1, "y": 1}})  # a move before it is fine
    changed = t.act(eid, {"type": "posture", "actor_id": n["Brute"], "posture": "offensive"})
    assert rules(changed) == [("GC-P1", "offensive posture")]
    assert combatant(t, eid, n["Aiko"])["posture"] == "offensive"


def test_gc_p2_p6_a_riposte_or_counter_attack_is_taken_before_the_turn_changes(table):
    t = table("great-cosmos", {"players_may_enter_dice": True})
    eid, n = fight(
        t,
        ("Aiko", gc_fighter(60), "pc", t.alice, {"x": 0, "y": 0}, None),
        ("Cleo", gc_fighter(50), "npc", None, {"x": 5, "y": 5}, None),
        ("Brute", gc_fighter(40), "pc", t.bob, {"x": 1, "y": 0}, "parry"),
    )
    a, b, c = n["Aiko"], n["Brute"], n["Cleo"]
    t.act(eid, {"type": "posture", "actor_id": a, "posture": "sepulcrale"})
    parried = attack(t, eid, a, b, [40, 3, 5])  # 43 hits; a critical parry holds: Brute's riposte
    assert step(parried, "GC-P2")["riposte_available"] is True
    t.next_turn(eid)  # Cleo's turn: the riposte is gone
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=bearer(t.bob.token),
        json={"type": "attack", "actor_id": b, "target_id": a, "damage": "1d6", "dice": [20, 3]},
    )
    assert assert_problem(r, 409, "conflict")["detail"] == f"it is not combatant {b}'s turn"
    hurt = attack(t, eid, c, a, [30, 2], kind="ranged")  # Aiko may counter-attack Cleo in this turn
    assert ("GC-P6", "counter-attack available") in rules(hurt)
    t.next_turn(eid)  # Brute's turn: the counter-attack is gone
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=bearer(t.alice.token),
        json={"type": "attack", "actor_id": a, "target_id": c, "kind": "ranged", "damage": "1d6", "dice": [30, 5]},
    )
    assert assert_problem(r, 409, "conflict")["detail"] == f"it is not combatant {a}'s turn"


def test_gc_o2_players_choose_the_order_of_a_one_sided_tie_on_start_and_next_turn(table):
    t = table("great-cosmos")
    people = [("Aiko", 50, t.alice), ("Bea", 50, t.bob), ("Brute", 40, None)]
    s = t.encounter(
        [
            {"character_id": t.character(name, gc_fighter(agi), kind="pc" if who else "npc", player=who)}
            for name, agi, who in people
        ]
    )
    eid, n = s["id"], ids(s)
    r = t.client.post(f"/v1/encounters/{eid}/start", headers=t.gm, json={"chosen_orders": [[n["Brute"], n["Aiko"]]]})
    problem = assert_problem(r, 422, "rule-violation")  # Brute is in no tie with Aiko
    assert problem["errors"][0]["loc"] == ["body", "chosen_orders", "0"] and "GC-O2" in problem["detail"]
    started = t.start(eid, [], chosen_orders=[[n["Bea"], n["Aiko"]]])
    assert [e["combatant_id"] for e in started["order"]] == [n["Bea"], n["Aiko"], n["Brute"]]
    assert started["action"]["rolls"] == []  # no d20 for a chosen order
    r = t.client.post(f"/v1/encounters/{eid}/next-turn", headers=t.gm, json={"chosen_orders": [[n["Aiko"], n["Bea"]]]})
    assert_validation(r, [["body", "chosen_orders"]])  # no new round here
    r = t.client.post(
        f"/v1/encounters/{eid}/next-turn",
        headers=bearer(t.bob.token),
        json={"chosen_orders": [[n["Aiko"], n["Bea"]]]},
    )
    assert r.status_code == 403
    t.next_turn(eid)
    t.next_turn(eid)
    t.next_turn(eid, chosen_orders=[[n["Aiko"], n["Bea"]]])  # round 2
    assert [e["combatant_id"] for e in t.state(eid)["order"]] == [n["Aiko"], n["Bea"], n["Brute"]]


def test_gc_p6_ending_the_fight_ends_special_postures(table):
    """GC-P6 (Decision): `end` ends every special posture: the default posture again, Apocalypse where
    Revive never fired (no Sépulcrale karma -10 in later tests), the Illumination's advantage cleared."""
    t = table("great-cosmos")
    eid, n = duel(t)
    aiko, brute = (combatant(t, eid, n[k])["character_id"] for k in ("Aiko", "Brute"))
    t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "sepulcrale"})
    t.next_turn(eid)
    t.act(eid, {"type": "posture", "actor_id": n["Brute"], "posture": "illumination", "dice": [4]})
    t.act(eid, {"type": "damage", "target_id": n["Aiko"], "amount": 10})
    r = t.client.post(f"/v1/encounters/{eid}/end", headers=t.gm)
    assert r.status_code == 200, r.text
    a, b = t.sheet(aiko)["sheet"], t.sheet(brute)["sheet"]
    assert (a["posture"], a["hp"], b["posture"], b["posture_advantage"]) == ("defensive", 50, "defensive", None)
    assert [c["counters"] for c in r.json()["combatants"]] == [{}, {}]
    test = t.post(f"/v1/characters/{aiko}/tests", {"stat": "force", "dice": [50]})  # no karma d10 any more
    assert (test["target"], test["karma_die"], test["outcome"]) == (68, None, "success")


# --- GC-D1..D4: the grid -------------------------------------------------------------------------


def test_gc_d1_d2_d3_melee_reach_max_move_and_never_move_act_move(table):
    t = table("great-cosmos")
    eid, n = duel(t, b_pos=(2, 0), options=None)
    far = attack(t, eid, n["Aiko"], n["Brute"], [30, 50, 1], status=422)
    assert far["rule"] == "GC-D1" and far["distance"] == 2 and far["errors"][0]["loc"] == ["body", "target_id"]
    taken = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "move", "actor_id": n["Aiko"], "to": {"x": 2, "y": 0}},
    )
    assert_validation(taken, [["body", "to"]])
    moved = t.act(eid, {"type": "move", "actor_id": n["Aiko"], "to": {"x": 1, "y": 0}})
    assert rules(moved) == [("GC-D1", "move"), ("GC-D2", "max move")]
    assert (step(moved, "GC-D1")["distance"], step(moved, "GC-D2")["max_move"]) == (1, 3)  # ceil(60 / 20)
    attack(t, eid, n["Aiko"], n["Brute"], [30, 50, 1])
    again = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "move", "actor_id": n["Aiko"], "to": {"x": 1, "y": 1}},
    )
    problem = assert_problem(again, 422, "rule-violation")
    assert problem["detail"] == "a turn is move then act or act then move, never move then act then move (GC-D3)"
    t.next_turn(eid)
    t.act(eid, {"type": "move", "actor_id": n["Brute"], "to": {"x": 2, "y": 1}})
    beyond = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "move", "actor_id": n["Brute"], "to": {"x": 4, "y": 1}},
    )
    assert assert_problem(beyond, 422, "rule-violation")["detail"] == "3 cells moved this turn; at most 2 (GC-D2)"
    off = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "move", "actor_id": n["Brute"], "to": {"x": 2, "y": 2}, "speed": 3},
    )
    assert_validation(off, [["body", "speed"]])


def test_gc_d4_a_dash_multiplies_the_max_move_and_gives_up_the_action(table):
    t = table("great-cosmos")
    eid, n = duel(t, b_pos=(9, 9))
    dashed = t.act(eid, {"type": "dash", "actor_id": n["Aiko"], "dice": [5]})
    d4 = step(dashed, "GC-D4")
    assert (d4["outcome"], d4["base_move"], d4["multiplier"], d4["max_move"]) == ("critical_success", 3, 2.5, 8)
    assert dashed["rolls"] == [{"die": "d100", "value": 5, "purpose": "dash", "by": n["Aiko"]}]
    t.act(eid, {"type": "move", "actor_id": n["Aiko"], "to": {"x": 4, "y": 4}})
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "move", "actor_id": n["Aiko"], "to": {"x": 5, "y": 0}},
    )
    assert "(GC-D2)" in assert_problem(r, 422, "rule-violation")["detail"]
    r = attack(t, eid, n["Aiko"], n["Brute"], [30, 50, 1], kind="ranged", status=409)
    assert (r["rule"], r["actions_taken"]) == ("actions_per_turn", ["dash"])  # the dash gave the action up
    assert t.sheet(combatant(t, eid, n["Aiko"])["character_id"])["sheet"]["karma"] == -1  # GC-K1 on the dash


def test_actions_per_turn_gc_o3_an_extra_action_is_a_turn_of_its_own(table):
    """One action per turn (README "Actions per turn"), for the GM as for the player: GC-O3's extra
    action is its own slot of the order, where one more action is taken; a third is a 409."""
    t = table("great-cosmos")
    aiko = t.character("Aiko", gc_fighter(60), kind="pc", player=t.alice)
    s = t.encounter([{"character_id": aiko, "actions": 2}, {"character_id": t.character("Brute", gc_fighter(40))}])
    eid, n = s["id"], ids(s)
    t.start(eid, dice=[2])  # GC-O3: the extra action at 60 − (4 + 2)
    assert [(e["combatant_id"], e["initiative"]) for e in t.state(eid)["order"]] == [
        (n["Aiko"], 60),
        (n["Aiko"], 54),
        (n["Brute"], 40),
    ]
    attack(t, eid, n["Aiko"], n["Brute"], [30, 4], reaction="none")
    for headers in (bearer(t.alice.token), t.gm):
        r = attack(t, eid, n["Aiko"], n["Brute"], None, headers=headers, status=409)
        assert r["rule"] == "actions_per_turn" and "GC-O3 extra actions" in r["detail"]
    t.next_turn(eid)  # the extra action's slot
    attack(t, eid, n["Aiko"], n["Brute"], [30, 4], reaction="none")
    assert attack(t, eid, n["Aiko"], n["Brute"], None, status=409)["rule"] == "actions_per_turn"
    assert hp(t, eid, n["Brute"]) == 100 - 4 - 4


def test_gc_o2_same_parallel_slot_no_reaction_and_a_target_gone_out_of_reach_is_missed(table):
    t = table("great-cosmos")
    eid, n = duel(t, gc_fighter(50), gc_fighter(50), options={"tie_method": "parallel"})
    assert t.state(eid)["current"]["combatant_ids"] == [n["Aiko"], n["Brute"]]
    hit = attack(t, eid, n["Aiko"], n["Brute"], [30, 2])
    assert step(hit, "GC-O2")["what"] == "no dodge nor parry against an attack from the same parallel slot"
    t.act(eid, {"type": "move", "actor_id": n["Brute"], "to": {"x": 3, "y": 0}})
    gone = attack(t, eid, n["Brute"], n["Aiko"], [30], status=422)  # Brute moved: it is out of reach (GC-D1)
    assert gone["rule"] == "GC-D1"
    t.next_turn(eid)
    # the next round, Brute moves away first; Aiko's melee attack, in the same slot, fails (GC-O2)
    t.act(eid, {"type": "move", "actor_id": n["Brute"], "to": {"x": 3, "y": 1}})
    missed = attack(t, eid, n["Aiko"], n["Brute"], [30])
    assert rules(missed) == [
        ("GC-O2", "no dodge nor parry against an attack from the same parallel slot"),
        ("GC-P3", "attack test"),
        ("GC-O2", "the target moved out of reach in this same slot: the attack fails"),
    ]


# --- the Final Skill ------------------------------------------------------------------------------

FINAL = {"name": "Nova", "punchline": "Que la lumière soit !", "cost_kind": "light", "cost_points": 1}


def test_gc_p5_final_skill_needs_level_5_costs_its_points_ignores_critical_failures_and_ends_the_posture(table):
    t = table("great-cosmos")
    eid, n = duel(
        t, gc_fighter(60, level=5, light_points=2, final_skill=FINAL), gc_fighter(40, level=4, final_skill=FINAL)
    )
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=t.gm,
        json={"type": "final_skill", "actor_id": n["Aiko"], "target_id": n["Brute"]},
    )
    assert "Illumination or Sépulcrale" in assert_problem(r, 422, "rule-violation")["detail"]
    t.act(eid, {"type": "posture", "actor_id": n["Aiko"], "posture": "illumination", "dice": [1]})
    used = t.act(
        eid, {"type": "final_skill", "actor_id": n["Aiko"], "target_id": n["Brute"], "stat": "force", "dice": [66]}
    )
    assert [w for _, w in rules(used)] == [
        "Final Skill",
        "Final Skill test (critical failures count as failures)",
        "leaves illumination",
    ]
    test = step(used, "GC-P5", "Final Skill test (critical failures count as failures)")
    assert (test["score"], test["outcome"], test["counted_as"], test["karma"]) == (  # GC-K4 at a locked +10
        66,
        "critical_failure",
        "failure",
        {"before": 0, "after": 0},
    )
    sheet = t.sheet(combatant(t, eid, n["Aiko"])["character_id"])["sheet"]
    assert (sheet["light_points"], sheet["posture"]) == (0, "defensive")
    t.next_turn(eid)
    r = t.client.post(
        f"/v1/encounters/{eid}/actions", headers=t.gm, json={"type": "final_skill", "actor_id": n["Brute"]}
    )
    assert "level 5" in assert_problem(r, 422, "rule-violation")["detail"]


# --- who acts, who reacts; revert --------------------------------------------------------------


def test_a_player_acts_for_its_own_combatant_on_its_turn_and_chooses_only_its_own_reactions(table):
    t = table("great-cosmos")
    eid, n = duel(t, b_player=t.bob)
    alice, bob = bearer(t.alice.token), bearer(t.bob.token)
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=bob,
        json={"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6"},
    )
    assert assert_problem(r, 403, "forbidden")["detail"] == "only the GM or the combatant's owner may act for it"
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=bob,
        json={"type": "move", "actor_id": n["Brute"], "to": {"x": 1, "y": 1}},
    )
    assert r.status_code == 409 and "not combatant" in r.json()["detail"]
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=alice,
        json={"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6", "reaction": "none"},
    )
    assert "target's owner" in assert_problem(r, 403, "forbidden")["detail"]
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=alice,
        json={"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6", "dice": [30, 50, 1]},
    )
    assert "may not choose their dice" in assert_problem(r, 403, "forbidden")["detail"]
    hit = t.act(eid, {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6"}, headers=alice)
    assert (hit["rolls"][0]["by"], hit["provenance"]) == (n["Aiko"], "server")
    t.next_turn(eid, headers=alice)
    # Bob sets Brute's standing reaction to parry; Alice may not override it, Bob may choose for his own
    r = t.client.patch(f"/v1/encounters/{eid}/combatants/{n['Brute']}", headers=bob, json={"reaction": "parry"})
    assert r.status_code == 200, r.text
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=bob,
        json={"type": "attack", "actor_id": n["Brute"], "target_id": n["Aiko"], "damage": "1d6", "reaction": "parry"},
    )
    assert r.status_code == 403
    assert_validation(
        t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=t.gm,
            json={"type": "attack", "actor_id": n["Brute"], "target_id": n["Aiko"], "reaction": "block"},
        ),
        [["body", "reaction"]],
    )
    assert_validation(
        t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=t.gm,
            json={"type": "attack", "actor_id": n["Brute"], "target_id": n["Brute"], "damage": "1d6"},
        ),
        [["body", "target_id"]],
    )


def test_revert_of_an_attack_restores_hp_karma_and_counters(table):
    t = table("great-cosmos")
    eid, n = duel(t, b_reaction="parry")
    before = t.state(eid)
    hit = attack(t, eid, n["Aiko"], n["Brute"], [5, 95, 6])
    brute = t.sheet(combatant(t, eid, n["Brute"])["character_id"])
    assert (brute["sheet"]["hp"], brute["sheet"]["karma"]) == (94, 1)
    undo = t.post(f"/v1/encounters/{eid}/actions/{hit['id']}/revert", {})
    assert sorted((c["field"], c["before"], c["after"]) for c in undo["changes"] if c["field"] != "counters") == [
        ("hp", 94, 100),
        ("karma", -1, 0),
        ("karma", 1, 0),
    ]
    after = t.state(eid)

    def strip(s: dict) -> dict:
        return {**s, "version": None, "updated_at": None}

    assert strip(after) == strip(before)
    # the turn's action is free again: Aiko attacks anew; then the GM heals Brute behind the attack's back
    again = attack(t, eid, n["Aiko"], n["Brute"], [30, 90, 1])
    t.act(eid, {"type": "heal", "target_id": n["Brute"], "amount": 1})
    latest = t.client.get(f"/v1/encounters/{eid}/actions", headers=t.gm).json()["items"][0]
    t.post(f"/v1/encounters/{eid}/actions/{latest['id']}/revert", {})
    t.act(eid, {"type": "damage", "target_id": n["Brute"], "amount": 3})  # Brute's hp: 99 then, 96 now
    r = t.client.post(f"/v1/encounters/{eid}/actions/{again['id']}/revert", json={}, headers=t.gm)
    assert assert_problem(r, 409, "conflict")["detail"].startswith("only the latest action")
    damage = t.client.get(f"/v1/encounters/{eid}/actions", headers=t.gm).json()["items"][0]
    t.post(f"/v1/encounters/{eid}/actions/{damage['id']}/revert", {})
    t.client.patch(
        f"/v1/characters/{combatant(t, eid, n['Brute'])['character_id']}", headers=t.gm, json={"sheet": {"hp": 90}}
    )
    r = t.client.post(f"/v1/encounters/{eid}/actions/{again['id']}/revert", json={}, headers=t.gm)
    assert assert_problem(r, 409, "conflict")["field"] == "hp"
    forced = t.post(f"/v1/encounters/{eid}/actions/{again['id']}/revert", {"force": True})
    assert [(c["field"], c["before"], c["after"]) for c in forced["changes"] if c["field"] == "hp"] == [("hp", 90, 100)]


# --- one scripted fight ------------------------------------------------------------------------


def _normalised_state(t: Table, eid: str, names: dict[str, str]) -> Any:
    """GET /v1/encounters/{eid} with every id replaced by a name and the timestamps dropped."""
    state = t.state(eid)
    chars = {c["character_id"]: f"<{c['name']} character>" for c in state["combatants"]}
    back = {
        **{v: f"<{k}>" for k, v in names.items()},
        **chars,
        eid: "<encounter>",
        t.c.id: "<campaign>",
        t.alice.id: "<alice>",
    }

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items() if k not in ("created_at", "updated_at")}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return back.get(node, node) if isinstance(node, str) else node

    return walk(state)


def scripted_fight(t: Table) -> tuple[str, dict[str, str]]:
    """Aiko (Alice's, sword) against Shade (magic) and Brute (parries), four rounds and a bit."""
    eid, n = fight(
        t,
        ("Aiko", armed(60, SWORD), "pc", t.alice, {"x": 0, "y": 0}, None),
        ("Brute", gc_fighter(40, hp_max=30), "npc", None, {"x": 1, "y": 0}, "parry"),
        ("Shade", gc_fighter(50), "npc", None, {"x": 5, "y": 5}, None),
        options={"hp_visibility": "status"},
    )
    a, b, s = n["Aiko"], n["Brute"], n["Shade"]
    # round 1: Aiko, Shade, Brute
    attack(t, eid, a, b, [30, 50, 6], damage=None)  # sword 1d8+2: Brute 30 -> 22
    t.next_turn(eid)
    attack(t, eid, s, a, [40, 45, 3], kind="magic")  # dodge 45 > 40: Aiko 100 -> 97
    t.next_turn(eid)
    attack(t, eid, b, a, [70])  # force 68: missed
    t.next_turn(eid)
    # round 2: Aiko in Illumination (+20), a ranged shot; Shade dashes and runs; Brute's hit reverted
    t.act(eid, {"type": "posture", "actor_id": a, "posture": "illumination", "dice": [5]})
    attack(t, eid, a, b, [30, 4, 60, 5], kind="ranged")  # 30 - 4 <= 65; parry 60 > 26: 22 -> 17
    t.next_turn(eid)
    t.act(eid, {"type": "dash", "actor_id": s, "dice": [20]})  # max move 3 -> 6
    t.act(eid, {"type": "move", "actor_id": s, "to": {"x": 2, "y": 3}})
    t.next_turn(eid)
    blow = attack(t, eid, b, a, [10, 9, 50, 2, 4])  # a critical hit: Aiko 97 -> 93, karma -1
    t.post(f"/v1/encounters/{eid}/actions/{blow['id']}/revert", {})  # the GM takes it back
    attack(t, eid, b, a, [80])  # missed
    t.next_turn(eid)
    # round 3
    attack(t, eid, a, b, [20, 4, 95, 8], damage=None)  # parry fumbled (karma +1): 17 -> 7
    t.next_turn(eid)
    attack(t, eid, s, a, [30, 3], kind="magic")  # Illumination's automatic defence
    t.next_turn(eid)
    t.next_turn(eid)
    # round 4: Brute goes down
    attack(t, eid, a, b, [25, 4, 70, 8], damage=None)  # parry 70 > 68: 7 -> 0
    t.next_turn(eid)
    attack(t, eid, s, a, [60], kind="magic")  # esprit 50: missed
    t.next_turn(eid)  # Brute is down: skipped; round 5
    # round 5: Aiko leaves Illumination at the start of its turn: 3 turns held (rounds 2..4), a GC-P7
    # backlash owed for its next two turns; the end of the fight clears it
    left = t.act(eid, {"type": "posture", "actor_id": a, "posture": "defensive"})
    assert (step(left, "GC-P7")["turns_held"], step(left, "GC-P7")["backlash"]) == (3, True)
    r = t.client.post(f"/v1/encounters/{eid}/end", headers=t.gm)
    assert r.status_code == 200, r.text
    return eid, n


FINAL_STATE = {
    "id": "<encounter>",
    "campaign_id": "<campaign>",
    "name": "Ambush",
    "status": "ended",
    "round": 5,
    "version": 29,
    "options": {"hp_visibility": "status", "reveal_on_turn": True, "odds_for_players": "visible", "tie_method": "d20"},
    "combatants": [
        {
            "id": "<Aiko>",
            "character_id": "<Aiko character>",
            "name": "Aiko",
            "kind": "pc",
            "player_id": "<alice>",
            "side": "heroes",
            "hidden": False,
            "position": {"x": 0, "y": 0},
            "initiative": 60,
            "actions": 1,
            "down": False,
            "reaction": "dodge",
            "resources": {"hp": {"value": 97, "max": 100}, "mp": {"value": 50, "max": 50}},
            "posture": "defensive",
            "conditions": [],
            "counters": {},  # GC-P7 (Decision): the backlash owed from round 5 does not outlive the fight
            "initiative_override": None,
        },
        {
            "id": "<Brute>",
            "character_id": "<Brute character>",
            "name": "Brute",
            "kind": "npc",
            "player_id": None,
            "side": "foes",
            "hidden": False,
            "position": {"x": 1, "y": 0},
            "initiative": 40,
            "actions": 1,
            "down": True,
            "reaction": "parry",
            "resources": {"hp": {"value": 0, "max": 30}, "mp": {"value": 50, "max": 50}},
            "posture": "defensive",
            "conditions": [],
            "counters": {},
            "initiative_override": None,
        },
        {
            "id": "<Shade>",
            "character_id": "<Shade character>",
            "name": "Shade",
            "kind": "npc",
            "player_id": None,
            "side": "foes",
            "hidden": False,
            "position": {"x": 2, "y": 3},
            "initiative": 50,
            "actions": 1,
            "down": False,
            "reaction": "dodge",
            "resources": {"hp": {"value": 100, "max": 100}, "mp": {"value": 50, "max": 50}},
            "posture": "defensive",
            "conditions": [],
            "counters": {},
            "initiative_override": None,
        },
    ],
    "order": [
        {
            "combatant_id": "<Aiko>",
            "slot": 0,
            "initiative": 60,
            "extra_action": False,
            "tiebreak": None,
            "parallel_with": [],
            "action": 1,
        },
        {
            "combatant_id": "<Shade>",
            "slot": 1,
            "initiative": 50,
            "extra_action": False,
            "tiebreak": None,
            "parallel_with": [],
            "action": 1,
        },
        {
            "combatant_id": "<Brute>",
            "slot": 2,
            "initiative": 40,
            "extra_action": False,
            "tiebreak": None,
            "parallel_with": [],
            "action": 1,
        },
    ],
    "current": {"slot": 0, "combatant_id": "<Aiko>", "combatant_ids": ["<Aiko>"]},
    "metadata": {},  # issue 25 item 9: none given
}


def test_a_scripted_great_cosmos_fight_ends_in_exactly_this_state(table):
    """Setup, start, five rounds, an attack of each kind (melee, ranged, magic), a dash and a move,
    a special posture entered and left (GC-P7 backlash), a revert, a combatant down, the end."""
    t = table("great-cosmos")
    eid, n = scripted_fight(t)
    assert _normalised_state(t, eid, n) == FINAL_STATE
    sheets = {c["name"]: t.sheet(c["character_id"])["sheet"] for c in t.state(eid)["combatants"]}
    assert {
        name: (s["hp"], s["karma"], s["light_points"], s["dark_points"], s.get("posture")) for name, s in sheets.items()
    } == {"Aiko": (97, 0, 0, 1, "defensive"), "Brute": (0, 1, 1, 1, None), "Shade": (100, 0, 1, 1, None)}
    history = t.client.get(f"/v1/encounters/{eid}/actions", params={"limit": 100}, headers=t.gm).json()["items"]
    assert [a["type"] for a in reversed(history)] == [
        "start",
        "attack",
        "next_turn",
        "attack",
        "next_turn",
        "attack",
        "next_turn",
        "posture",
        "attack",
        "next_turn",
        "dash",
        "move",
        "next_turn",
        "attack",
        "revert",
        "attack",
        "next_turn",
        "attack",
        "next_turn",
        "attack",
        "next_turn",
        "next_turn",
        "attack",
        "next_turn",
        "attack",
        "next_turn",
        "posture",
    ]
    assert [a["type"] for a in history if a["reverted_by"]] == ["attack"]
    # a player sees Brute's and Shade's hp as a status only, in the state and in the actions
    seen = t.client.get(f"/v1/encounters/{eid}/actions", params={"limit": 100}, headers=bearer(t.alice.token)).json()[
        "items"
    ]
    damage = [s for a in seen for s in a["steps"] if s["rule"] == "GC-P4"]
    assert [(s["combatant_id"], "before" in s, s["total"]) for s in damage] == [
        (n["Brute"], False, 10),
        (n["Brute"], False, 10),
        (n["Aiko"], True, 4),
        (n["Brute"], False, 5),
        (n["Aiko"], True, 3),
        (n["Brute"], False, 8),
    ]
    assert [
        c["after"] for a in seen for c in a["changes"] if c["field"] == "hp" and c["combatant_id"] == n["Brute"]
    ] == [{"status": "down"}, {"status": "bloodied"}, {"status": "wounded"}, {"status": "wounded"}]
    mine = t.state(eid, headers=bearer(t.alice.token))
    assert [c["resources"] for c in mine["combatants"]] == [
        {"hp": {"value": 97, "max": 100}, "mp": {"value": 50, "max": 50}},
        {"hp": {"status": "down"}, "mp": {"status": "unhurt"}},
        {"hp": {"status": "unhurt"}, "mp": {"status": "unhurt"}},
    ]
