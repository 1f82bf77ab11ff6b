# ruff: noqa: F811  (the `table` fixture is imported from encounter_support)
"""`POST …/actions/plan` odds never depend on what the caller may not read (API.md round 4, "The
combat assistant tells the truth…"): a player gets `outcomes`, `hit`, `down` (and Asgard's `out`)
only when it reads every figure they are computed from (each party's whole sheet, the target's
pools); otherwise they are null and named in `withheld`. The GM always gets them; the encounter's
`odds_for_players` shares them all (`all`) or none (`none`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.encounter_support import Table, ids, table  # noqa: F401  (the fixture)
from tests.api.support import bearer
from tests.factories import as_fighter, gc_fighter

GC_WITHHELD = {"outcomes": None, "hit": None, "down": None, "withheld": ["outcomes", "hit", "down"]}


def gc_fight(t: Table, brute: dict, options: dict | None = None, brute_owner=None) -> tuple[str, dict[str, str]]:
    """Alice's Aiko (agilite 90: it acts first, GC-O1) beside a Brute (an NPC, `player_access`
    `none` by default; or Bob's PC, `observer`)."""
    kind = "pc" if brute_owner is not None else "npc"
    s = t.encounter(
        [
            {
                "character_id": t.character("Aiko", gc_fighter(90), kind="pc", player=t.alice),
                "position": {"x": 0, "y": 0},
            },
            {"character_id": t.character("Brute", brute, kind=kind, player=brute_owner), "position": {"x": 1, "y": 0}},
        ],
        options,
    )
    t.start(s["id"], seed=3)
    n = ids(s)
    assert t.state(s["id"])["current"]["combatant_ids"] == [n["Aiko"]]
    return s["id"], n


def plan(t: Table, eid: str, body: dict[str, Any], headers) -> dict[str, Any]:
    r = t.client.post(f"/v1/encounters/{eid}/actions/plan", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def attack(n: dict[str, str], damage: str) -> dict[str, Any]:
    return {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": damage}


def named(answer: dict[str, Any], n: dict[str, str]) -> str:
    """The answer with the fight's combatant ids replaced by their names (two fights compared)."""
    text = json.dumps(answer, sort_keys=True)
    for name, cid in n.items():
        text = text.replace(cid, name)
    return text


def test_a_players_plan_no_longer_reveals_a_hidden_npcs_hit_points_by_binary_search(table):
    """GC-P4: with `hp_visibility: hidden`, damage `1d1+K` made `down` 0 exactly when the NPC had
    more than K+1 hp (a binary search found 37 in 11 calls). Two fights differing only in the
    NPC's hp now give the player byte-identical plans, whatever K; the GM's still differ."""
    t = table("great-cosmos")
    alice = bearer(t.alice.token)
    hidden = {"hp_visibility": "hidden"}
    fights = [gc_fight(t, gc_fighter(40, hp=hp, hp_max=40), hidden) for hp in (37, 12)]
    for k in (0, 11, 20, 35, 36, 60):
        player = [named(plan(t, eid, attack(n, f"1d1+{k}"), alice), n) for eid, n in fights]
        assert player[0] == player[1]
        assert json.loads(player[0])["odds"] == GC_WITHHELD
    gm = [plan(t, eid, attack(n, "1d1+20"), t.gm)["odds"] for eid, n in fights]
    assert gm[0]["down"]["p"] == 0 < gm[1]["down"]["p"] and gm[0]["withheld"] == gm[1]["withheld"] == []


def test_a_players_plan_does_not_read_a_none_access_npcs_defence_off_hit(table):
    """GC-P2: `hit` moved with the NPC's agilite (its dodge); an NPC the player may not read
    (`player_access: none`, pools shown exactly) gives the same plan at agilite 30 and 80."""
    t = table("great-cosmos")
    alice = bearer(t.alice.token)
    fights = [gc_fight(t, gc_fighter(agilite, hp=30, hp_max=30)) for agilite in (30, 80)]
    player = [named(plan(t, eid, attack(n, "1d6"), alice), n) for eid, n in fights]
    assert player[0] == player[1] and json.loads(player[0])["odds"] == GC_WITHHELD
    gm = [plan(t, eid, attack(n, "1d6"), t.gm)["odds"] for eid, n in fights]
    assert gm[0]["hit"] != gm[1]["hit"]


@pytest.mark.parametrize(
    ("options", "given"),
    [
        ({}, True),  # `visible` (default): Bob's PC is read whole (observer, pools exact)
        ({"hp_visibility": "status"}, False),  # its pools a status word: its sheet is read `limited`
        ({"odds_for_players": "none"}, False),
        ({"odds_for_players": "all", "hp_visibility": "hidden"}, True),
    ],
    ids=["visible_observer", "visible_status", "none", "all_hidden_hp"],
)
def test_odds_for_players_visible_all_none_against_another_players_pc(table, options, given):
    t = table("great-cosmos")
    eid, n = gc_fight(t, gc_fighter(40, hp=5, hp_max=30), options, brute_owner=t.bob)
    body = attack(n, "1d6")
    gm = plan(t, eid, body, t.gm)
    player = plan(t, eid, body, bearer(t.alice.token))
    assert gm["odds"]["withheld"] == [] and 0 < gm["odds"]["down"]["p"] < gm["odds"]["hit"]["p"]
    assert player["odds"] == (gm["odds"] if given else GC_WITHHELD)


def test_a_non_none_access_npc_read_whole_gives_its_odds_and_the_owner_of_the_target_too(table):
    """An NPC the GM made `observer` is read whole in an `exact` fight: its odds are given."""
    t = table("great-cosmos")
    eid, n = gc_fight(t, gc_fighter(40, hp=5, hp_max=30))
    brute = t.state(eid)["combatants"][1]["character_id"]
    assert (
        t.client.patch(f"/v1/characters/{brute}", json={"player_access": "observer"}, headers=t.gm).status_code == 200
    )
    assert plan(t, eid, attack(n, "1d6"), bearer(t.alice.token))["odds"] == plan(t, eid, attack(n, "1d6"), t.gm)["odds"]


def test_as_c5_out_is_withheld_with_down_in_asgard(table):
    """AS-C5: Asgard's `out` (unconscious) is computed from the same figures as `down`: withheld
    with it; the GM gets both."""
    t = table("asgard")
    s = t.encounter(
        [
            {
                "character_id": t.character("Aiko", as_fighter(9), kind="pc", player=t.alice),
                "position": {"x": 0, "y": 0},
            },
            {
                "character_id": t.character("Brute", as_fighter(1, vitality=3, vitality_max=12)),
                "position": {"x": 1, "y": 0},
            },
        ]
    )
    t.start(s["id"], seed=3)
    n = ids(s)
    assert t.state(s["id"])["current"]["combatant_ids"] == [n["Aiko"]]
    body = attack(n, "2d6")
    gm = plan(t, s["id"], body, t.gm)["odds"]
    assert set(gm) == {"outcomes", "hit", "down", "out", "withheld"} and 0 < gm["out"]["p"] < gm["down"]["p"]
    player = plan(t, s["id"], body, bearer(t.alice.token))["odds"]
    assert player == {
        "outcomes": None,
        "hit": None,
        "down": None,
        "out": None,
        "withheld": ["outcomes", "hit", "down", "out"],
    }


def test_odds_for_players_is_an_encounter_option_refusing_other_values(table):
    t = table("great-cosmos")
    eid, _ = gc_fight(t, gc_fighter(40))
    assert t.state(eid)["options"].get("odds_for_players", "visible") == "visible"
    r = t.client.patch(f"/v1/encounters/{eid}", json={"options": {"odds_for_players": "some"}}, headers=t.gm)
    assert r.status_code == 422 and r.json()["code"] == "validation_failed"
    r = t.client.patch(f"/v1/encounters/{eid}", json={"options": {"odds_for_players": "all"}}, headers=t.gm)
    assert r.status_code == 200 and r.json()["options"]["odds_for_players"] == "all"
