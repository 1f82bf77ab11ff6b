# ruff: noqa: F811  (the `table` fixture is imported from test_encounters)
"""`POST /v1/encounters/{eid}/actions/plan` (issue 26 item 2, API.md "Combat: choices, dice plan,
exact odds"): every die the action will consume, in order, whose it is and who enters it —
the action route itself run without writing, so the plan is the dice the real action then takes."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from tests.api.encounter_support import Table, ids, table  # noqa: F401  (the fixture)
from tests.api.support import assert_problem, bearer, read_events
from tests.factories import as_fighter, gc_fighter, rb_fighter, wa_fighter


def duel(t: Table, a: dict, b: dict, b_player=None) -> tuple[str, dict[str, str]]:
    s = t.encounter(
        [
            {"character_id": t.character("Aiko", a, kind="pc", player=t.alice), "position": {"x": 0, "y": 0}},
            {
                "character_id": t.character("Brute", b, kind="pc" if b_player else "npc", player=b_player),
                "position": {"x": 1, "y": 0},
            },
        ]
    )
    t.start(s["id"], seed=3)  # initiative: the seed's, whoever acts first (the GM acts for both)
    return s["id"], ids(s)


def plan(t: Table, eid: str, body: dict[str, Any], headers=None, status: int = 200) -> dict[str, Any]:
    r = t.client.post(f"/v1/encounters/{eid}/actions/plan", json=body, headers=headers or t.gm)
    assert r.status_code == status, r.text
    return r.json()


def state_of(t: Table, eid: str) -> tuple[dict, list, list, list]:
    """The encounter, its history, the roll log and the campaign's events (all the GM's)."""
    actions = t.client.get(f"/v1/encounters/{eid}/actions", headers=t.gm).json()["items"]
    log = t.client.get(f"/v1/campaigns/{t.c.id}/rolls", headers=t.gm).json()["items"]
    return t.state(eid), actions, log, read_events(t.client, t.c.id, t.gm)


def planned(p: dict) -> list[tuple]:
    return [(d["die"], d["purpose"], d["by"]) for d in p["dice"]]


def consumed(action: dict) -> list[tuple]:
    return [(r["die"], r["purpose"], r["by"]) for r in action["rolls"]]


FIGHTERS = {
    "great-cosmos": (gc_fighter(60), gc_fighter(40), {"damage": "1d6"}),
    "asgard": (as_fighter(3), as_fighter(2), {"damage": "1d6"}),
    "rulebook-d100": (rb_fighter(60), rb_fighter(40), {"damage": "1d6"}),
    "worlds-awakening": (wa_fighter(2), wa_fighter(1), {"damage": "1d6"}),
}


def faces(die: str) -> int:
    return int(die.lstrip("d"))


def real_attack(t: Table, eid: str, body: dict, actor: str, actor_high: bool) -> dict:
    """The real action, its table dice entered one by one as the route asks for them (`dice_needed`):
    the actor's all high (or low), the others' the opposite."""
    dice: list[int] = []
    while True:
        r = t.client.post(f"/v1/encounters/{eid}/actions", json={**body, "dice": dice}, headers=t.gm)
        if r.status_code == 201:
            return r.json()
        needed = assert_problem(r, 422, "dice-needed")["needed"]
        dice.append(faces(needed["die"]) if (needed["by"] in (actor, None)) == actor_high else 1)


def subsequence(short: list, long: list) -> bool:
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


@pytest.mark.parametrize("ruleset", sorted(FIGHTERS))
def test_issue26_item2_the_plan_is_the_dice_the_attack_then_consumes_and_changes_nothing(table, ruleset):
    t = table(ruleset)
    a, b, extra = FIGHTERS[ruleset]
    eid, n = duel(t, a, b)
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], **extra}
    before = state_of(t, eid)
    p = plan(t, eid, body)
    assert state_of(t, eid) == before  # nothing written: no version, no action, no log entry
    assert p["dice"] and all(d["entered_by"] == "caller" for d in p["dice"])  # the GM enters every die
    assert {d["by"] for d in p["dice"]} <= {n["Aiko"], n["Brute"]}
    unconditional = [(d["die"], d["purpose"], d["by"]) for d in p["dice"] if "condition" not in d]
    every = []
    for actor_high in (True, False):
        action = real_attack(t, eid, body, n["Aiko"], actor_high)
        real = consumed(action)
        assert subsequence(real, planned(p)) and subsequence(unconditional, real), (real, p)
        every.append(real)
        revert = t.client.post(f"/v1/encounters/{eid}/actions/{action['id']}/revert", json={}, headers=t.gm)
        assert revert.status_code == 201, revert.text
        assert plan(t, eid, body) == p  # the fight as it was: the same plan
    assert planned(p) in every, "one of the two resolutions takes every planned die, in the plan's order"


@pytest.mark.parametrize("players_enter", [False, True])
def test_issue26_item2_a_players_plan_says_who_enters_each_die_and_refuses_as_the_action_does(table, players_enter):
    t = table("great-cosmos", {"players_may_enter_dice": players_enter})
    eid, n = duel(t, gc_fighter(60), gc_fighter(40))
    alice, bob = bearer(t.alice.token), bearer(t.bob.token)
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6"}
    assert t.state(eid)["current"]["combatant_ids"] == [n["Aiko"]]  # agilite 60 first (GC-O1)
    t.next_turn(eid)  # Brute's turn: the action's own refusal, same status and code
    refused = assert_problem(
        t.client.post(f"/v1/encounters/{eid}/actions/plan", json=body, headers=alice), 409, "conflict"
    )
    assert refused["code"] == "not_your_turn"
    t.next_turn(eid)
    assert t.state(eid)["current"]["combatant_ids"] == [n["Aiko"]]
    before = state_of(t, eid)
    p = plan(t, eid, body, headers=alice)
    assert state_of(t, eid) == before
    assert [(d["by"], d["entered_by"]) for d in p["dice"]] == [
        (d["by"], "caller" if players_enter and d["by"] == n["Aiko"] else "server") for d in p["dice"]
    ]
    assert {d["by"] for d in p["dice"]} == {n["Aiko"], n["Brute"]}  # Brute's dodge: the server's
    assert planned(p) == planned(plan(t, eid, body))  # the same dice as the GM's plan
    # who may not send the action may not plan it: another player (403); the body's dice are the action's,
    # refused to a player as the action refuses them (403 unless players_may_enter_dice)
    r = t.client.post(f"/v1/encounters/{eid}/actions/plan", json=body, headers=bob)
    assert r.status_code == 403 and r.json()["code"] == "owner_or_gm_only"
    r = t.client.post(f"/v1/encounters/{eid}/actions/plan", json={**body, "dice": [1]}, headers=alice)
    if players_enter:  # Aiko's attack die given (1: a success), the rest planned
        assert r.status_code == 200 and planned(r.json()) == planned(p), r.text
    else:
        action = t.client.post(f"/v1/encounters/{eid}/actions", json={**body, "dice": [1]}, headers=alice)
        assert (
            (r.status_code, r.json()["code"])
            == (action.status_code, action.json()["code"])
            == (403, "dice_not_allowed")
        )


def test_issue26_item2_exact_odds_of_a_worlds_awakening_attack_equal_every_die_combination_of_the_route(table):
    """WA-C1/WA-C2/WA-C5: a d20 attack, a d4 damage die on a hit (twice on a critical): the plan's
    `hit` and `down` are the exact share of the real action's resolutions, over every combination."""
    t = table("worlds-awakening")
    eid, n = duel(t, wa_fighter(2), wa_fighter(1, hp=3, hp_max=3))
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d4"}
    p = plan(t, eid, body)
    counted = {"hit": Fraction(0), "down": Fraction(0)}

    def resolve(dice: list[int], share: Fraction) -> None:
        r = t.client.post(f"/v1/encounters/{eid}/actions", json={**body, "dice": dice}, headers=t.gm)
        if r.status_code == 422 and r.json()["code"] == "dice_needed":
            faces = int(r.json()["needed"]["die"][1:])
            for value in range(1, faces + 1):
                resolve([*dice, value], share / faces)
            return
        assert r.status_code == 201, r.text
        action = r.json()
        hp = [c for c in action["changes"] if c["combatant_id"] == n["Brute"] and c["field"] == "hp"]
        if hp and hp[0]["after"] < hp[0]["before"]:
            counted["hit"] += share
        if any(s["rule"] == "turn" and s["what"] == "down" for s in action["steps"]):
            counted["down"] += share
        revert = t.client.post(f"/v1/encounters/{eid}/actions/{action['id']}/revert", json={}, headers=t.gm)
        assert revert.status_code == 201, revert.text

    resolve([], Fraction(1))
    assert 0 < counted["down"] < counted["hit"] < 1
    assert {k: p["odds"][k] for k in counted} == {
        name: {"probability": f"{f.numerator}/{f.denominator}", "p": float(f)} for name, f in counted.items()
    }
    assert sum(Fraction(o["probability"]) for o in p["odds"]["outcomes"].values()) == 1


def test_issue26_item2_a_great_cosmos_plan_has_exact_odds_and_names_the_dice_a_conditional_one_depends_on(table):
    """GC-P2/GC-P4: a d100 against a d100 (too many combinations to count one by one) gets the
    ruleset's exact odds; the damage die is needed only when the attack hits and the dodge fails."""
    t = table("great-cosmos")
    eid, n = duel(t, gc_fighter(60), gc_fighter(40))
    p = plan(t, eid, {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6"})
    odds = {k: Fraction(v["probability"]) for k, v in p["odds"]["outcomes"].items()}
    assert set(odds) == {"missed", "auto_defended", "defended", "damage"} and sum(odds.values()) == 1
    assert odds["auto_defended"] == 0 and 0 < odds["missed"] < 1  # GC-P5 only in Illumination
    assert Fraction(p["odds"]["hit"]["probability"]) == odds["damage"]  # every 1d6 lowers hp
    assert p["odds"]["down"] == {"probability": "0/1", "p": 0.0}  # hp beyond 6
    assert [(d["die"], d["purpose"]) for d in p["dice"]][0] == ("d100", "attack")
    damage = next(d for d in p["dice"] if d["purpose"] == "damage")
    assert 1 in damage["depends_on"] and "die 1 (d100 attack)" in damage["condition"]
    assert "condition" not in p["dice"][0]
    dodge = next(d for d in p["dice"] if d["purpose"] == "dodge")
    assert dodge["depends_on"] == [1]  # a dodge only against a hit


def test_issue26_item1_choices_list_the_costs_that_apply(table):
    """GC-P5/P6: entering Illumination costs 1 light point, Sépulcrale 1 dark point; AS-H1 the
    attack's 4th die 1 heroism; each with what the sheet holds."""
    t = table("great-cosmos")
    eid, n = duel(t, gc_fighter(60, light_points=2, dark_points=0), gc_fighter(40))
    got = t.client.get(f"/v1/encounters/{eid}/choices", params={"combatant_id": n["Aiko"]}, headers=t.gm).json()
    posture = next(a for a in got["actions"] if a["type"] == "posture")
    assert posture["costs"] == {
        "illumination": {"light_points": 1},
        "sepulcrale": {"dark_points": 1},
        "available": {"light_points": 2, "dark_points": 0},
    }
    assert "costs" not in next(a for a in got["actions"] if a["type"] == "attack")
    t = table("asgard")
    eid, n = duel(t, as_fighter(3, heroism=2), as_fighter(2))
    got = t.client.get(f"/v1/encounters/{eid}/choices", params={"combatant_id": n["Aiko"]}, headers=t.gm).json()
    attack = next(a for a in got["actions"] if a["type"] == "attack")
    assert attack["costs"] == {"heroism_4d6": {"heroism": 1}, "available": {"heroism": 2}}


def test_issue26_item2_damage_too_large_to_count_exactly_leaves_the_odds_out(table):
    """GC-P4: `100d1000` is not convolved (app.rules.distribution's budget): the plan lists its dice
    and answers no odds rather than spending seconds; a kept term (`4d6kh3`) is counted exactly."""
    t = table("great-cosmos")
    eid, n = duel(t, gc_fighter(60), gc_fighter(40, hp=10, hp_max=10))
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"]}
    big = plan(t, eid, {**body, "damage": "100d1000"})
    assert sum(1 for d in big["dice"] if d["purpose"] == "damage") == 100 and "odds" not in big
    kept = plan(t, eid, {**body, "damage": "4d6kh3"})
    odds = kept["odds"]
    assert 0 < Fraction(odds["down"]["probability"]) < Fraction(odds["hit"]["probability"])


def test_rb_c2_a_plan_whose_chosen_dice_tie_forever_still_plans_the_attack(table):
    """RB-F3/RB-C2: the plan resolves the attack on chosen values (every die a 1, every die a 100…);
    an attack d100 and a dodge d100 equal on every reroll never break their tie. Those values are no
    table's: the plan is made of the other resolutions, as the action (accepted) then takes them."""
    t = table("rulebook-d100")
    eid, n = duel(t, rb_fighter(50, stats={"FOR": 50, "HAB": 50}), rb_fighter(50, stats={"FOR": 50, "HAB": 50}))
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6"}
    p = plan(t, eid, body)
    assert [(d["die"], d["purpose"]) for d in p["dice"]][:2] == [("d100", "attack"), ("d100", "dodge")], p
    action = t.act(eid, {**body, "seed": 1})
    assert subsequence(consumed(action), planned(p))


@pytest.mark.parametrize("ruleset", sorted(FIGHTERS))
def test_the_plan_takes_the_actions_body_and_its_dice_are_exactly_those_the_action_consumes(table, ruleset):
    """API.md "Round 4 additions": the plan's body is the action's, `dice` and `seed` included. Given
    table dice one at a time (each for the next die the plan lists), the plan lists exactly, in order,
    the dice the action then consumes given them, nothing conditional; one die too many is the
    action's own `dice_left_over`; a seed's plan is the seeded action's dice."""
    t = table(ruleset)
    a, b, extra = FIGHTERS[ruleset]
    eid, n = duel(t, a, b)
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], **extra}
    values: list[int] = []
    given = plan(t, eid, body)
    while len(given["dice"]) > len(values):
        die = given["dice"][len(values)]
        values.append(faces(die["die"]) if die["by"] == n["Aiko"] else 1)  # the attack's best, the defence's worst
        given = plan(t, eid, {**body, "dice": values})
    assert not any("condition" in d for d in given["dice"])
    # a die too many: the plan refuses it as the action does
    too_many = {**body, "dice": [*values, 1]}
    left = assert_problem(
        t.client.post(f"/v1/encounters/{eid}/actions/plan", json=too_many, headers=t.gm), 422, "dice-left-over"
    )
    refused = assert_problem(
        t.client.post(f"/v1/encounters/{eid}/actions", json=too_many, headers=t.gm), 422, "dice-left-over"
    )
    assert left | {"request_id": None} == refused | {"request_id": None}
    action = t.act(eid, {**body, "dice": values})
    assert planned(given) == consumed(action)
    t.post(f"/v1/encounters/{eid}/actions/{action['id']}/revert", {})
    seeded = plan(t, eid, {**body, "seed": 7})
    assert not any("condition" in d for d in seeded["dice"])
    assert planned(seeded) == consumed(t.act(eid, {**body, "seed": 7}))


def test_the_plan_declares_exactly_the_action_routes_body(client):
    doc = client.get("/openapi.json").json()["paths"]
    action = doc["/v1/encounters/{encounter_id}/actions"]["post"]["requestBody"]
    assert doc["/v1/encounters/{encounter_id}/actions/plan"]["post"]["requestBody"] == action
    assert "x-ruleset" in action["content"]["application/json"]["schema"]["anyOf"][0]


def test_as_c5_a_gm_damages_plan_takes_its_table_dice_first_then_plans_the_rest(table):
    """AS-C5: the GM's damage bringing vitality to 0 rolls the mal en point tests (the GM's action
    rolls them itself). Its plan given the first dice plans the rest; given every die, it is exactly
    the dice the action consumes."""
    t = table("asgard")
    eid, n = duel(t, as_fighter(3), as_fighter(2, vitality=2))
    body = {"type": "damage", "target_id": n["Brute"], "amount": 5}
    whole = plan(t, eid, body)
    assert len(whole["dice"]) >= 3, whole
    values = [6, 6, 6]
    given = plan(t, eid, {**body, "dice": values})
    assert planned(given)[:3] == planned(whole)[:3]
    while len(given["dice"]) > len(values):
        values.append(6)
        given = plan(t, eid, {**body, "dice": values})
    assert planned(given) == consumed(t.act(eid, {**body, "dice": values}))
