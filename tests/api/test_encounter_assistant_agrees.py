# ruff: noqa: F811  (the `table` fixture is imported from test_encounters)
"""The combat assistant tells the truth (API.md "Round 4 additions"): on random fights of every
ruleset (random sheets, weapons or none, positions, postures and reactions, turns passed, hidden
combatants, the GM or a player asking), `choices`, `plan` and the action route are driven
together and must agree:

- every allowed choice, its `needs` filled, is accepted by the action route (posted for real, then
  reverted), on each of its `targets`; a target it leaves out is refused;
- every refused type is refused by the route, whatever body the test builds for it (its needs
  filled or not), with the choice's `code` on the first one (the first target the caller sees, the
  first cell, the first posture);
- the plan takes the action's body and refuses as the action does; its `dice` are exactly, in
  order, the dice the action consumes when given them (the GM's table dice, one at a time, each for
  the next die the plan lists), and a die the plan without dice lists with no `condition` is taken.

Hypothesis draws the fights (`derandomize`: the same fights each run). The suite's profile is
bounded (a few fights per ruleset); `JDR_HYPOTHESIS_PROFILE=nightly` runs many more:
`JDR_HYPOTHESIS_PROFILE=nightly .venv/bin/python -m pytest -p no:xdist tests/api/test_encounter_assistant_agrees.py`."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.api.encounter_support import Table, ids, table  # noqa: F401  (the fixture)
from tests.api.support import bearer
from tests.factories import AS, GC, RB, RULESETS, WA, as_fighter, gc_fighter, rb_fighter, wa_fighter

# no shrinking: a fight replayed finds other server dice and other ids (and each costs HTTP calls)
BASE = {
    "phases": [Phase.explicit, Phase.generate],
    "report_multiple_bugs": False,
    "derandomize": True,
    "deadline": None,
    "database": None,
    "suppress_health_check": list(HealthCheck),
}
settings.register_profile("assistant-suite", max_examples=15, **BASE)
settings.register_profile("assistant-nightly", max_examples=1000, **BASE)
PROFILE = settings.get_profile(f"assistant-{os.environ.get('JDR_HYPOTHESIS_PROFILE', 'suite')}")

DAMAGE = "1d6"  # a damage expression every ruleset reads (Asgard's in d6, AS-C2)
POSTURES = ("offensive", "defensive", "illumination", "sepulcrale")  # GC-P1, GC-P5..P6
REACTIONS = {
    GC: ("dodge", "parry", "none"),
    AS: ("defense", "defense_heroism", "none"),
    RB: ("dodge", "absorb", "none"),
}
STEPS = ((1, 0), (0, 1), (-1, 0), (0, -1))  # the cells next to the actor, in the order `choices` tries them


# --- random sheets -------------------------------------------------------------------------------


@st.composite
def gc_sheet(draw) -> dict[str, Any]:
    sheet = gc_fighter(
        draw(st.integers(20, 80)),
        hp_max=40,
        hp=draw(st.sampled_from([0, 3, 40, 40])),
        light_points=draw(st.integers(0, 1)),
        dark_points=draw(st.integers(0, 1)),
        default_posture=draw(st.sampled_from(["offensive", "defensive"])),
    )
    if draw(st.booleans()):
        sheet["inventory"] = {"items": [{"name": "Sword", "kind": "weapon", "slots": 2, "damage": "1d8+2"}]}
    if draw(st.booleans()):
        sheet["level"] = 5
        sheet["final_skill"] = {"name": "Nova", "punchline": "Shine!", "cost_kind": "light", "cost_points": 1}
    return sheet


@st.composite
def as_sheet(draw) -> dict[str, Any]:
    sheet = as_fighter(
        draw(st.integers(1, 5)), vitality=draw(st.sampled_from([0, 2, 20, 20])), heroism=draw(st.integers(0, 2))
    )
    if not draw(st.booleans()):
        sheet["weapons"] = []
    return sheet


@st.composite
def rb_sheet(draw) -> dict[str, Any]:
    weapons = [{"name": "Dague", "damage": "1d4", "kind": "melee"}] if draw(st.booleans()) else []
    return rb_fighter(draw(st.integers(20, 80)), hp=draw(st.sampled_from([0, 2, 14, 14])), weapons=weapons)


@st.composite
def wa_sheet(draw) -> dict[str, Any]:
    sheet = wa_fighter(draw(st.integers(0, 3)), hp=draw(st.sampled_from([0, 2, 12, 12])))
    if draw(st.booleans()):
        sheet["weapons"] = [{"name": "epee_longue", "stat": "FOR", "damage": "1d8"}]
    return sheet


SHEETS = {GC: gc_sheet(), AS: as_sheet(), RB: rb_sheet(), WA: wa_sheet()}


# --- the route, choices and plan ---------------------------------------------------------------------


def post(t: Table, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    r = t.client.post(path, json=body, headers=headers)
    assert r.status_code < 500, r.text
    return r.status_code, r.json()


def act(t: Table, eid: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    return post(t, f"/v1/encounters/{eid}/actions", body, headers)


def plan(t: Table, eid: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    return post(t, f"/v1/encounters/{eid}/actions/plan", body, headers)


def problem(answer: tuple[int, dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """A refusal without its request id (each answer has its own)."""
    return answer[0], {k: v for k, v in answer[1].items() if k != "request_id"}


def revert(t: Table, eid: str, action: dict[str, Any]) -> None:
    status, body = post(t, f"/v1/encounters/{eid}/actions/{action['id']}/revert", {}, t.gm)
    assert status == 201, body


def latest_action(t: Table, eid: str) -> str | None:
    """The fight's latest action not reverted (what AS-H2's reroll names)."""
    items = t.client.get(f"/v1/encounters/{eid}/actions", headers=t.gm).json()["items"]
    live = [a for a in items if a["type"] != "revert" and not a.get("reverted_by")]
    return live[0]["id"] if live else None


def bodies(
    t: Table, eid: str, choice: dict[str, Any], actor: dict[str, Any], others: list[str], *, filled: bool
) -> list[dict[str, Any]]:
    """The bodies the test builds for a choice, in the order `choices` tries them: each target (its
    `targets` when allowed, else every combatant the caller sees), each cell next to the actor, each
    posture; what it `needs` filled (`filled`: the damage given even when not needed)."""
    type_, needs = choice["type"], set(choice.get("needs", []))
    base: dict[str, Any] = {"type": type_, "actor_id": actor["id"]}
    if "damage" in needs or (filled and type_ == "attack"):
        base["damage"] = DAMAGE
    if type_ == "heroism_reroll":
        base["action_id"] = latest_action(t, eid) or "none"
    if type_ == "move":
        at = actor.get("position") or {"x": 0, "y": 0}
        return [{**base, "to": {"x": at["x"] + dx, "y": at["y"] + dy}} for dx, dy in STEPS]
    if type_ == "posture":
        return [{**base, "posture": p} for p in POSTURES]
    if type_ == "attack":
        return [{**base, "target_id": c} for c in (choice["targets"] if choice["allowed"] else others)]
    if type_ == "final_skill":
        return [base] + [{**base, "target_id": c} for c in others]
    return [base]


def check_plan_dice(data, t: Table, eid: str, body: dict[str, Any], planned: dict[str, Any]) -> dict[str, Any]:
    """The GM's plan given table dice one at a time (random values), each for the next die it
    lists, until it lists no die beyond those given: the action given those dice then consumes
    exactly the plan's dice, in order, and every die the plan without dice said sure (no
    `condition`). Returns the action (not reverted)."""
    values: list[int] = []
    given = planned
    while len(given["dice"]) > len(values):
        die = given["dice"][len(values)]["die"]
        values.append(data.draw(st.integers(1, int(die.lstrip("d"))), label="die"))
        status, given = plan(t, eid, {**body, "dice": values}, t.gm)
        assert status == 200, (body, values, given)
    assert not any("condition" in d for d in given["dice"]), given  # every die given: nothing conditional
    status, out = act(t, eid, {**body, "dice": values}, t.gm)
    assert status == 201, ("the action refused the plan's dice", body, values, given, out)
    consumed = [(r["die"], r["purpose"], r["by"]) for r in out["rolls"]]
    assert [(d["die"], d["purpose"], d["by"]) for d in given["dice"]] == consumed, (body, values, given, out)
    assert_sure_taken(planned, out)
    return out


def assert_sure_taken(planned: dict[str, Any], action: dict[str, Any]) -> None:
    """Every die the plan lists with no `condition` is one the action took, in the plan's order."""
    sure = [(d["die"], d["purpose"], d["by"]) for d in planned["dice"] if "condition" not in d]
    taken = iter((r["die"], r["purpose"], r["by"]) for r in action["rolls"])
    assert all(any(c == d for c in taken) for d in sure), ("a die the plan said sure was not taken", planned, action)


def check_choice(data, t: Table, eid: str, choice: dict[str, Any], actor: dict, others: list[str], headers) -> int:
    """One choice against the route (and the plan): returns how many actions were accepted."""
    accepted = 0
    gm = headers == t.gm
    if choice["allowed"]:
        if choice["type"] == "attack":
            assert choice["targets"], choice  # allowed: some target in reach
            assert set(choice["targets"]) <= set(others), (choice, others)
            for outside in [c for c in others if c not in choice["targets"]]:
                body = {"type": "attack", "actor_id": actor["id"], "target_id": outside, "damage": DAMAGE}
                status, out = act(t, eid, body, headers)
                assert status >= 400, ("a target `choices` left out was accepted", choice, body, out)
        tried = bodies(t, eid, choice, actor, others, filled=False)
        every = choice["type"] == "attack"  # each target must be accepted; a cell, a posture: some
        for body in tried:
            status, planned = plan(t, eid, body, headers)
            if status != 200:  # a cell taken, a posture not affordable: the route refuses it the same way
                assert not every, ("an allowed target's plan was refused", choice, body, planned)
                refused = act(t, eid, body, headers)
                assert problem(refused) == problem((status, planned)), ("refused otherwise", body, planned, refused)
                continue
            if gm:
                action = check_plan_dice(data, t, eid, body, planned)
            else:
                status, action = act(t, eid, body, headers)  # the server's dice (a player's)
                assert status == 201, ("the plan accepted a body the route refused", choice, body, action)
                assert_sure_taken(planned, action)
            accepted += 1
            revert(t, eid, action)
            if not every:
                break
        assert accepted, ("an allowed choice's bodies were all refused", choice, tried)
        return accepted
    assert "code" in choice and not choice["targets"], choice
    for filled in (False, True):
        for place, body in enumerate(bodies(t, eid, choice, actor, others, filled=filled)):
            status, out = act(t, eid, body, headers)
            if status == 201:
                revert(t, eid, out)
            assert status >= 400, ("a refused choice's body was accepted", choice, body, out)
            if place == 0 and not filled:
                assert out["code"] == choice["code"], ("refused with another code", choice, body, out)
                planned = plan(t, eid, body, headers)
                assert problem(planned) == problem((status, out)), ("the plan refused otherwise", body, planned, out)
    return accepted


# --- the fights --------------------------------------------------------------------------------------


def fight(data, t: Table, ruleset: str) -> tuple[str, list[dict[str, Any]]]:
    """A random fight, started, a few turns passed: (its id, its combatants as the GM reads them)."""
    count = data.draw(st.integers(2, 4), label="combatants")
    cells = data.draw(
        st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=count, max_size=count, unique=True),
        label="cells",
    )
    people = []
    for i, (x, y) in enumerate(cells):
        owner = data.draw(st.sampled_from(["alice", "bob", None]), label="owner")
        player = {"alice": t.alice, "bob": t.bob, None: None}[owner]
        sheet = data.draw(SHEETS[ruleset], label="sheet")
        character = t.character(f"C{i}", sheet, kind="pc" if player else "npc", player=player)
        entry: dict[str, Any] = {"character_id": character}
        if data.draw(st.integers(0, 4), label="off the grid") > 0:
            entry["position"] = {"x": x, "y": y}
        if player is None and data.draw(st.booleans(), label="hidden"):
            entry["hidden"] = True
        if ruleset in REACTIONS and data.draw(st.booleans(), label="reaction set"):
            entry["reaction"] = data.draw(st.sampled_from(REACTIONS[ruleset]), label="reaction")
        people.append(entry)
    options = {
        "hp_visibility": data.draw(st.sampled_from(["exact", "status", "hidden"]), label="hp_visibility"),
        "reveal_on_turn": data.draw(st.booleans(), label="reveal_on_turn"),
    }
    eid = t.encounter(people, options)["id"]
    t.start(eid, seed=data.draw(st.integers(0, 1000), label="initiative seed"))
    for _ in range(data.draw(st.integers(0, 3), label="turns passed")):
        t.next_turn(eid, seed=data.draw(st.integers(0, 1000), label="turn seed"))
    current = (t.state(eid)["current"] or {}).get("combatant_ids") or []  # none: everyone down
    if ruleset == GC and current and data.draw(st.booleans(), label="a posture taken"):  # GC-P1: a posture held
        body = {"type": "posture", "actor_id": current[0], "posture": data.draw(st.sampled_from(POSTURES))}
        t.client.post(f"/v1/encounters/{eid}/actions", json=body, headers=t.gm)  # refused or not: either fight
    return eid, t.state(eid)["combatants"]


@pytest.mark.parametrize("ruleset", RULESETS)
def test_choices_plan_and_the_action_route_agree_on_random_fights(table, ruleset):
    tables: dict[bool, Table] = {}
    checked = {"accepted": 0, "refused": 0}

    @given(data=st.data())
    @PROFILE
    def check(data) -> None:
        enter = data.draw(st.booleans(), label="players_may_enter_dice")
        if enter not in tables:
            tables[enter] = table(ruleset, {"players_may_enter_dice": enter})
        t = tables[enter]
        eid, combatants = fight(data, t, ruleset)
        alice = bearer(t.alice.token)
        hers = [c for c in t.state(eid, alice)["combatants"] if c["character_id"] in _alices(t)]
        as_player = bool(hers) and data.draw(st.booleans(), label="a player asks")
        headers = alice if as_player else t.gm
        current = set((t.state(eid)["current"] or {}).get("combatant_ids", []))
        pool = hers if as_player else combatants
        if any(c["id"] in current for c in pool) and data.draw(st.integers(0, 3), label="whose turn") > 0:
            pool = [c for c in pool if c["id"] in current]  # most often the one whose turn it is
        actor = data.draw(st.sampled_from(pool), label="actor")
        seen = t.state(eid, headers)["combatants"]
        others = [c["id"] for c in seen if c["id"] != actor["id"]]
        r = t.client.get(f"/v1/encounters/{eid}/choices", params={"combatant_id": actor["id"]}, headers=headers)
        assert r.status_code == 200, r.text
        for choice in r.json()["actions"]:
            assert isinstance(choice.get("needs"), list), choice
            checked["accepted" if choice["allowed"] else "refused"] += 1
            check_choice(data, t, eid, choice, actor, others, headers)

    check()
    assert checked["accepted"] and checked["refused"], checked  # both sides were exercised


def _alices(t: Table) -> set[str]:
    items = t.client.get(f"/v1/campaigns/{t.c.id}/characters", headers=t.gm).json()["items"]
    return {c["id"] for c in items if c.get("player_id") == t.alice.id}
