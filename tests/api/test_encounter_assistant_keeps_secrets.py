# ruff: noqa: F811  (the `table` fixture is imported from test_encounters)
"""The combat assistant keeps secrets (API.md "Round 4 additions"): for a player, two fights that
differ only in figures that player may not read (an NPC's pool under `hp_visibility` `status` or
`hidden`, a `none`-access NPC's pool and stats) and that look the same in the player's view of the
encounter get identical `choices` and `plan` answers (JSON bodies compared, ids mapped to names,
request ids left out), in every ruleset.

Hypothesis draws the pairs (`derandomize`; profiles as in test_encounter_assistant_agrees.py: the
suite's draws a dozen pairs per ruleset, `JDR_HYPOTHESIS_PROFILE=nightly` 500, which finds AS-C5's
case by itself from 40; the suite pins it with an example of its own below)."""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.api.encounter_support import Table, names_of, normalised, table  # noqa: F401  (the fixture)
from tests.api.support import bearer
from tests.api.test_encounter_assistant_agrees import BASE, DAMAGE, SHEETS
from tests.factories import AS, GC, RB, RULESETS, WA, as_fighter

settings.register_profile("secrets-suite", max_examples=12, **BASE)
settings.register_profile("secrets-nightly", max_examples=500, **BASE)
PROFILE = settings.get_profile(f"secrets-{os.environ.get('JDR_HYPOTHESIS_PROFILE', 'suite')}")

POOL = {GC: "hp", AS: "vitality", RB: "hp", WA: "hp"}
# a stat a `none`-access NPC keeps to itself, and the values it takes: its defence where that is not
# what orders the turns (GC's agilite is both: such pairs are told apart by the turn order, and skipped)
STAT = {
    GC: (("stats", "agilite"), st.integers(20, 80)),
    AS: (("skills", "defense"), st.integers(1, 6)),
    RB: (("stats", "FOR"), st.integers(20, 80)),
    WA: (("stats", "FOR"), st.integers(0, 3)),
}


def secret_twin(data, ruleset: str, sheet: dict[str, Any], none_access: bool) -> dict[str, Any]:
    """The sheet with what the player may not read drawn again: its pool (1 up to its maximum),
    and, for a `none`-access NPC, one of its stats."""
    twin = copy.deepcopy(sheet)
    key = POOL[ruleset]
    most = sheet.get(f"{key}_max") or sheet.get(key) or 1
    twin[key] = data.draw(st.integers(1, max(1, int(most))), label="secret pool")
    if none_access:
        (part, name), values = STAT[ruleset]
        twin[part] = {**twin[part], name: data.draw(values, label="secret stat")}
    return twin


def build(t: Table, ruleset: str, people: list[tuple[str, dict, str | None, bool]], options, seed, turns) -> str:
    """The fight (name, sheet, owner, `none` access) started with `seed`, `turns` turns passed."""
    entries = []
    for i, (name, sheet, owner, none_access) in enumerate(people):
        player = {"alice": t.alice, "bob": t.bob, None: None}[owner]
        character = t.character(name, sheet, kind="pc" if player else "npc", player=player)
        if none_access:
            r = t.client.patch(f"/v1/characters/{character}", json={"player_access": "none"}, headers=t.gm)
            assert r.status_code == 200, r.text
        entries.append({"character_id": character, "position": {"x": i, "y": 0}})
    eid = t.encounter(entries, options)["id"]
    t.start(eid, seed=seed)
    for _ in range(turns):
        t.next_turn(eid, seed=seed)
    return eid


def answers(t: Table, eid: str, actor_name: str) -> list[Any]:
    """What the player (Alice) is told: her view of the fight, `choices` for her combatant, and
    the plan of each choice's body on each other combatant she sees; ids mapped to names."""
    alice = bearer(t.alice.token)
    view = t.state(eid, alice)
    names = {**names_of(t, t.state(eid)), t.c.id: "<campaign>", t.bob.id: "<bob>"}
    actor = next(c["id"] for c in t.state(eid)["combatants"] if c["name"] == actor_name)
    said: list[Any] = [view]
    r = t.client.get(f"/v1/encounters/{eid}/choices", params={"combatant_id": actor}, headers=alice)
    said.append([r.status_code, r.json()])
    if r.status_code != 200:
        return named(said, names)
    others = [c["id"] for c in view["combatants"] if c["id"] != actor]
    for choice in r.json()["actions"]:
        body: dict[str, Any] = {"type": choice["type"], "actor_id": actor}
        if choice["type"] == "attack":
            body["damage"] = DAMAGE
        targets = others if choice["type"] in ("attack", "final_skill") else [None]
        for target in targets:
            planned = t.client.post(
                f"/v1/encounters/{eid}/actions/plan",
                json={**body, **({"target_id": target} if target else {})},
                headers=alice,
            )
            assert planned.status_code < 500, planned.text
            said.append([planned.status_code, {k: v for k, v in planned.json().items() if k != "request_id"}])
    return named(said, names)


def named(said: list[Any], names: dict[str, str]) -> list[Any]:
    """Ids replaced by names wherever they are, inside texts too (a problem's `detail`), and
    timestamps blanked."""
    text = json.dumps(normalised(said, names))
    for id_, name in names.items():
        text = text.replace(id_, name)
    return json.loads(text)


@pytest.mark.parametrize("ruleset", RULESETS)
def test_a_player_learns_nothing_of_what_they_may_not_read(table, ruleset):
    compared = {"pairs": 0, "drawn": 0}
    tables: dict[tuple[bool, int], Table] = {}  # campaigns are few (their creation is throttled)

    @given(data=st.data())
    @PROFILE
    def check(data) -> None:
        mine = data.draw(SHEETS[ruleset], label="her sheet")
        theirs = data.draw(SHEETS[ruleset], label="the NPC's sheet")
        none_access = data.draw(st.booleans(), label="none access")
        shown = "exact" if none_access else "hidden"
        options = {
            "hp_visibility": data.draw(st.sampled_from(["status", "hidden", shown]), label="hp_visibility"),
            "odds_for_players": data.draw(st.sampled_from(["visible", "none"]), label="odds_for_players"),
        }
        theirs = secret_twin(data, ruleset, theirs, False)  # up (`down` is shown): its pool at 1 or more
        twin = secret_twin(data, ruleset, theirs, none_access)
        bob = data.draw(st.booleans(), label="Bob fights too")
        seed = data.draw(st.integers(0, 1000), label="seed")
        turns = data.draw(st.integers(0, 2), label="turns passed")
        enter = data.draw(st.booleans(), label="players_may_enter_dice")
        said = []
        compared["drawn"] += 1
        n = compared["drawn"]  # the same names in both fights, new ones in each pair
        for side, npc in enumerate((theirs, twin)):
            if (enter, side) not in tables:
                tables[enter, side] = table(ruleset, {"players_may_enter_dice": enter})
            t = tables[enter, side]
            people = [(f"Her{n}", mine, "alice", False), (f"Foe{n}", npc, None, none_access)]
            if bob:
                people.append((f"His{n}", mine, "bob", False))
            said.append(answers(t, build(t, ruleset, people, options, seed, turns), f"Her{n}"))
        if said[0][0] != said[1][0]:
            return  # the player's view tells the fights apart (a status word, the turn order)
        compared["pairs"] += 1
        differ = next((i for i, (a, b) in enumerate(zip(*said)) if a != b), None)
        assert differ is None, json.dumps(["told apart", said[0][differ], said[1][differ], theirs, twin, options])

    check()
    assert compared["pairs"], compared  # some pairs looked the same to the player


def test_AS_C5_a_players_plan_lists_the_same_dice_whatever_the_hidden_vitality(table):
    """AS-C5's resistance and volonte tests follow a blow taking vitality to 0: a player's plan lists
    them (with their `condition`) for an NPC at 2 hidden vitality as for one at 20, since it may
    not read which."""
    said = []
    for vitality in (2, 20):
        t = table(AS)
        people = [
            ("Her", as_fighter(5, vitality=20), "alice", False),
            ("Foe", as_fighter(1, vitality=vitality), None, False),
        ]
        eid = build(t, AS, people, {"hp_visibility": "hidden"}, seed=1, turns=0)
        said.append(answers(t, eid, "Her"))
    assert said[0][1][1]["turn"], said[0][1]  # her turn: the attack is planned
    planned = said[0][2][1]
    assert [d["purpose"] for d in planned["dice"]].count("volonte") == 3, planned
    assert all("condition" in d for d in planned["dice"] if d["purpose"] in ("resistance", "volonte")), planned
    assert said[0] == said[1]
