# ruff: noqa: F811  (the `table` fixture is imported from test_encounters)
"""`GET /v1/encounters/{eid}/choices` (issue 26 item 1, API.md "Combat: choices, dice plan, exact
odds"): what a combatant may do now. Whatever `choices` allows the action route accepts, and what it
refuses the route refuses with exactly its `code`: checked at every step of each ruleset's scripted
fight (`walked`: before each of the fight's actions, every choice is tried on the real route, the
accepted ones reverted), and hidden combatants never are a player's targets."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.encounter_support import Table, ids, table  # noqa: F401  (the fixture)
from tests.api.support import assert_problem, bearer
from tests.factories import as_fighter, gc_fighter, rb_fighter, wa_fighter
from tests.fixtures import Table as FightTable
from tests.rulesets.asgard import test_combat as asgard_fights
from tests.rulesets.great_cosmos import test_combat as gc_fights
from tests.rulesets.rulebook_d100 import test_combat as rb_fights
from tests.rulesets.worlds_awakening import test_combat as wa_fights

TRIED = ("attack", "dash", "final_skill")  # the types whose body is the actor and its target alone


def choices(t: Table, eid: str, combatant_id: str, headers=None, status: int = 200) -> dict[str, Any]:
    r = t.client.get(f"/v1/encounters/{eid}/choices", params={"combatant_id": combatant_id}, headers=headers or t.gm)
    assert r.status_code == status, r.text
    return r.json()


def check_choices(t: Table, eid: str, actor: str, headers=None) -> tuple[int, int]:
    """Every choice of `actor` tried on the real action route (the GM's seed): an allowed one is
    accepted on each of its targets (then reverted), refused on every other one the caller sees; a
    refused one answers exactly its code on the first combatant it names. Returns how many actions
    the route accepted and refused."""
    ch = choices(t, eid, actor, headers)
    state = t.state(eid, headers)
    others = [c["id"] for c in state["combatants"] if c["id"] != actor]
    tried = [0, 0]
    for choice in ch["actions"]:
        if choice["type"] not in TRIED:
            continue
        assert set(choice["targets"]) <= set(others)
        for place, target in enumerate(others if choice["type"] == "attack" else [None]):
            body = {"type": choice["type"], "actor_id": actor, "seed": 11}
            if "damage" in choice["needs"]:  # no weapon on the sheet: the body says it
                body["damage"] = "1d6"
            if target is not None:
                body["target_id"] = target
            r = t.client.post(f"/v1/encounters/{eid}/actions", json=body, headers=headers or t.gm)
            accepted = choice["allowed"] and (target is None or target in choice["targets"])
            if accepted:
                assert r.status_code == 201, (choice, r.text)
                tried[0] += 1
                revert = t.client.post(f"/v1/encounters/{eid}/actions/{r.json()['id']}/revert", json={}, headers=t.gm)
                assert revert.status_code == 201, revert.text
            else:
                assert r.status_code >= 400, (choice, target, r.text)
                tried[1] += 1
                if not choice["allowed"] and place == 0:  # the action's code: its first target's refusal
                    assert r.json()["code"] == choice["code"], (choice, target, r.text)
    return tried[0], tried[1]


@pytest.fixture
def walked(monkeypatch):
    """Each action of a scripted fight (`Table.act`) preceded by `check_choices` for its actor."""
    counts: list[tuple[int, int]] = []
    act = FightTable.act

    def checked(self, eid: str, body: dict, headers=None, status: int = 201) -> dict:
        actor = body.get("actor_id") if isinstance(body, dict) else None
        if headers is None and isinstance(actor, str) and body.get("type") in TRIED:
            live = self.client.get(f"/v1/encounters/{eid}", headers=self.gm).json()
            if live.get("status") == "active" and any(c["id"] == actor for c in live["combatants"]):
                counts.append(check_choices(self, eid, actor))
        return act(self, eid, body, headers=headers, status=status)

    monkeypatch.setattr(FightTable, "act", checked)
    # each choice accepted then reverted adds 2 to the encounter's version: the fights' final states
    # are compared with the version they expect, everything else exactly
    for module, name, expected in (
        (asgard_fights, "normalised", asgard_fights.EXPECTED_ASGARD),
        (rb_fights, "normalised", rb_fights.EXPECTED_RULEBOOK),
        (wa_fights, "normalised", wa_fights.EXPECTED_WORLDS_AWAKENING),
    ):
        monkeypatch.setattr(module, name, _versionless(getattr(module, name), expected["version"]))
    return counts


def _versionless(normalise, version: int):
    def wrapped(*args: Any) -> Any:
        out = normalise(*args)
        return {**out, "version": version} if isinstance(out, dict) and "version" in out else out

    return wrapped


@pytest.mark.parametrize(
    "scripted",
    [
        lambda table: gc_fights.scripted_fight(table("great-cosmos")),  # (its test reads the history too)
        asgard_fights.test_asgard_scripted_fight_as_c1_c2_c3_c4_c5_c11_c13,
        rb_fights.test_rulebook_scripted_fight_rb_f1_f2_f3_f4,
        wa_fights.test_worlds_awakening_scripted_fight_wa_c1_c2_c3_c4_c5,
    ],
    ids=["great-cosmos", "asgard", "rulebook-d100", "worlds-awakening"],
)
def test_issue26_item1_choices_agree_with_the_action_route_at_every_step_of_the_scripted_fights(
    table, walked, scripted
):
    scripted(table)
    accepted, _ = (sum(counts) for counts in zip(*walked, strict=True))
    assert accepted > 0, walked  # the fight was walked: its choices asked and tried at its steps


def test_issue26_item1_a_players_choices_refuse_as_the_route_does_and_never_name_a_hidden_combatant(table):
    t = table("great-cosmos", {"players_may_enter_dice": True})  # the walk's seed, Alice's too
    sword = {"name": "Sword", "kind": "weapon", "slots": 2, "damage": "1d8+2"}
    sheet = gc_fighter(60, inventory={"items": [sword]})
    s = t.encounter(
        [
            {"character_id": t.character("Aiko", sheet, kind="pc", player=t.alice), "position": {"x": 0, "y": 0}},
            {"character_id": t.character("Brute", gc_fighter(40)), "position": {"x": 1, "y": 0}},
            {"character_id": t.character("Lurker", gc_fighter(30)), "position": {"x": 0, "y": 1}, "hidden": True},
            {"character_id": t.character("Bo", gc_fighter(20), kind="pc", player=t.bob), "position": {"x": 5, "y": 5}},
        ],
        {"reveal_on_turn": False},
    )
    eid, n = s["id"], ids(s)
    t.start(eid, seed=5)
    alice, bob = bearer(t.alice.token), bearer(t.bob.token)
    current = t.state(eid)["current"]["combatant_ids"]
    mine = choices(t, eid, n["Aiko"], alice)
    assert mine["combatant_id"] == n["Aiko"] and mine["turn"] == (n["Aiko"] in current)
    attack = next(a for a in mine["actions"] if a["type"] == "attack")
    assert n["Lurker"] not in attack["targets"]  # hidden: never a player's target
    as_gm = next(a for a in choices(t, eid, n["Aiko"])["actions"] if a["type"] == "attack")
    _, refused = check_choices(t, eid, n["Aiko"], alice)  # as Alice: the route agrees on each
    assert refused >= 1  # Bo, out of reach (or not Aiko's turn)
    if n["Aiko"] in current:
        assert attack["allowed"] and attack["targets"] == [n["Brute"]]  # in reach (GC-D1), seen
        assert n["Lurker"] in as_gm["targets"]  # the GM sees it, next to Aiko
    else:
        assert attack == {**attack, "allowed": False, "code": "not_your_turn"}
    # others: another player's combatant is a 403, a hidden one an unknown id, as the action route answers
    assert_problem(
        t.client.get(f"/v1/encounters/{eid}/choices", params={"combatant_id": n["Aiko"]}, headers=bob), 403, "forbidden"
    )
    r = t.client.get(f"/v1/encounters/{eid}/choices", params={"combatant_id": n["Lurker"]}, headers=alice)
    assert r.status_code == 422 and r.json()["code"] == "unknown_id"
    r = t.client.get(f"/v1/encounters/{eid}/choices", params={"combatant_id": "nope"}, headers=alice)
    assert r.status_code == 422 and r.json()["code"] == "unknown_id"


def test_issue26_item1_turn_acted_and_moved_follow_the_turn_gc_d1_d3(table):
    t = table("great-cosmos")
    sword = {"name": "Sword", "kind": "weapon", "slots": 2, "damage": "1d8+2"}
    s = t.encounter(
        [
            {
                "character_id": t.character("Aiko", gc_fighter(60, inventory={"items": [sword]}), kind="pc"),
                "position": {"x": 0, "y": 0},
            },
            {"character_id": t.character("Brute", gc_fighter(40)), "position": {"x": 2, "y": 0}},
        ]
    )
    eid, n = s["id"], ids(s)
    t.start(eid, seed=3)
    first = choices(t, eid, n["Aiko"])
    assert (first["turn"], first["acted"], first["moved"]) == (True, False, 0)
    by_type = {a["type"]: a for a in first["actions"]}
    assert by_type["attack"] == {**by_type["attack"], "allowed": False, "code": "out_of_reach"}  # 2 cells: GC-D1
    assert by_type["move"]["allowed"] and by_type["dash"]["allowed"]
    assert check_choices(t, eid, n["Aiko"])[1] >= 1
    t.act(eid, {"type": "move", "actor_id": n["Aiko"], "to": {"x": 1, "y": 0}})
    moved = choices(t, eid, n["Aiko"])
    assert (moved["turn"], moved["acted"], moved["moved"]) == (True, False, 1)
    attack = next(a for a in moved["actions"] if a["type"] == "attack")
    assert attack["allowed"] and attack["targets"] == [n["Brute"]]  # now in reach
    check_choices(t, eid, n["Aiko"])
    t.act(eid, {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "dice": [30, 50, 1]})
    acted = choices(t, eid, n["Aiko"])
    assert (acted["turn"], acted["acted"], acted["moved"]) == (True, True, 1)
    by_type = {a["type"]: a for a in acted["actions"]}
    assert (by_type["attack"]["allowed"], by_type["attack"]["code"]) == (False, "actions_per_turn")
    assert not by_type["move"]["allowed"]  # move, act, move: never (GC-D3)
    check_choices(t, eid, n["Aiko"])
    t.next_turn(eid)
    theirs = choices(t, eid, n["Aiko"])
    assert (theirs["turn"], theirs["acted"], theirs["moved"]) == (False, False, 0)


WEAPONLESS = {  # (a sheet with no weapon, the same with one)
    "great-cosmos": (
        gc_fighter(60),
        gc_fighter(60, inventory={"items": [{"name": "Sword", "kind": "weapon", "slots": 2, "damage": "1d8+2"}]}),
    ),
    "asgard": (as_fighter(3), as_fighter(3, weapons=[{"name": "epee", "damage_dice": 2, "ranged": False}])),
    "rulebook-d100": (rb_fighter(60), rb_fighter(60, weapons=[{"name": "Dague", "damage": "1d4"}])),
    "worlds-awakening": (wa_fighter(2), wa_fighter(2, weapons=[{"name": "epee", "stat": "FOR", "damage": "1d8"}])),
}


@pytest.mark.parametrize("ruleset", sorted(WEAPONLESS))
def test_gc_p4_as_c2_rb_f2_wa_c1_a_weaponless_attack_is_allowed_and_needs_a_damage_expression(table, ruleset):
    """An NPC with no weapon on its sheet (the common case) attacks with a `damage` expression: its
    attack is allowed, on its target in reach, and `needs` the damage (never a reason to refuse);
    filled, the route accepts it. A sheet with a weapon needs nothing."""
    t = table(ruleset)
    bare, armed = WEAPONLESS[ruleset]
    s = t.encounter(
        [
            {"character_id": t.character("Bare", bare), "position": {"x": 0, "y": 0}},
            {"character_id": t.character("Armed", armed), "position": {"x": 1, "y": 0}},
        ]
    )
    eid, n = s["id"], ids(s)
    t.start(eid, seed=3)
    for actor, target, needs in (("Bare", "Armed", ["damage"]), ("Armed", "Bare", [])):
        attack = next(a for a in choices(t, eid, n[actor])["actions"] if a["type"] == "attack")
        assert attack == {**attack, "allowed": True, "targets": [n[target]], "needs": needs}, attack
        body = {"type": "attack", "actor_id": n[actor], "target_id": n[target], "seed": 1}
        action = t.act(eid, {**body, "damage": "1d6"} if needs else body)
        t.post(f"/v1/encounters/{eid}/actions/{action['id']}/revert", {})
    if ruleset == "great-cosmos":  # what every body of a type must say: `to`, a posture
        by_type = {a["type"]: a for a in choices(t, eid, n["Bare"])["actions"]}
        assert [by_type[k]["needs"] for k in ("move", "posture", "dash")] == [["to"], ["posture"], []]
