# ruff: noqa: F811  (the `table` fixture is imported from test_encounters)
"""Issue 21 item 2 (API.md "Provenance and who may enter which die"): a player's `seed` is
refused like its table `dice` unless the campaign's `players_may_enter_dice`; when players
may enter dice, a player enters only the dice of what it controls (the other dice of the
action are the server's); every log entry records its `provenance`, and the seed's value
is the GM's (absent from a player's log reads)."""

from __future__ import annotations

import random

import pytest

from tests.api.encounter_support import Table, ids, table  # noqa: F401  (the fixture)
from tests.api.support import assert_problem, bearer, read_events
from tests.factories import AS, GC, GC_MINIMAL, RB, SHEETS, as_fighter, gc_fighter, sheet

ASGARD_SHEET = sheet(AS, skills={"combat": 6, "defense": 4, "survie": 3}, weapons=[], assets=[])


def oracle(seed: int, *faces: int) -> list[int]:
    """The dice a seed gives, drawn by Python's own `random.Random(seed)` (an independent oracle)."""
    rng = random.Random(seed)
    return [rng.randint(1, f) for f in faces]


def rolled(client, campaign, headers, **body):
    return client.post(f"/v1/campaigns/{campaign.id}/rolls", json=body, headers=headers)


def log_page(client, campaign, headers) -> list[dict]:
    r = client.get(f"/v1/campaigns/{campaign.id}/rolls", headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["items"]


def log_entry(client, campaign, headers, entry_id: str) -> dict:
    r = client.get(f"/v1/campaigns/{campaign.id}/rolls/{entry_id}", headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture
def gc_table(campaign_factory, player_factory, character_factory):
    def make(options: dict | None = None):
        c = campaign_factory(GC, options)
        alice = player_factory(c, "Alice")
        return c, alice, character_factory(c, GC_MINIMAL, player=alice, name="Aria")

    return make


# --- a player's seed is refused like its dice -------------------------------------------------


def test_issue21_item2_a_players_seed_on_a_test_is_a_403_the_gms_gives_the_seeds_dice(client, gc_table, count_rows):
    c, alice, hero = gc_table()
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "seed": 7}, headers=alice.headers)
    body = assert_problem(r, 403, "forbidden")
    assert body["detail"] == (
        "players may not choose their dice (`dice` or `seed`) in this campaign: the server "
        "rolls them (option players_may_enter_dice)"
    )
    assert count_rows("roll_log", campaign_id=c.id) == 0
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "seed": 7}, headers=c.gm)
    assert r.status_code == 201, r.text
    assert (
        (r.json()["natural"], r.json()["provenance"], r.json()["seed"])
        == (*oracle(7, 100), "seed", 7)
        == (42, "seed", 7)
    )


def test_issue21_item2_a_players_seed_on_a_free_roll_is_a_403(client, gc_table, count_rows):
    c, alice, _ = gc_table()
    assert_problem(rolled(client, c, alice.headers, expression="d100", seed=7), 403, "forbidden")
    assert count_rows("roll_log", campaign_id=c.id) == 0
    r = rolled(client, c, c.gm, expression="3d6", seed=7)
    assert (r.status_code, r.json()["total"], r.json()["provenance"]) == (201, sum(oracle(7, 6, 6, 6)), "seed")


def test_issue21_item2_a_players_seed_on_an_asgard_action_and_reroll_is_a_403(
    client, campaign_factory, player_factory, character_factory, count_rows
):
    c = campaign_factory("asgard")
    alice = player_factory(c, "Alice")
    hero = character_factory(c, ASGARD_SHEET, player=alice)
    r = client.post(
        f"/v1/characters/{hero['id']}/actions", json={"type": "fall", "metres": 3, "seed": 1}, headers=alice.headers
    )
    assert_problem(r, 403, "forbidden")
    first = client.post(
        f"/v1/characters/{hero['id']}/tests", json={"skill": "survie", "difficulty": "moyen"}, headers=alice.headers
    )
    assert (first.status_code, first.json()["provenance"]) == (201, "server")
    r = client.post(
        f"/v1/characters/{hero['id']}/tests/{first.json()['id']}/reroll", json={"seed": 1}, headers=alice.headers
    )
    assert_problem(r, 403, "forbidden")
    assert count_rows("roll_log", campaign_id=c.id) == 1


def test_issue21_item2_as_h2_a_players_seed_on_an_unknown_test_is_a_404_first(
    client, campaign_factory, player_factory, character_factory
):
    """Refusal order 401 → 404 → 403: an unknown test is unknown before the seed is refused."""
    c = campaign_factory("asgard")
    alice = player_factory(c, "Alice")
    hero = character_factory(c, ASGARD_SHEET, player=alice)
    r = client.post(f"/v1/characters/{hero['id']}/tests/{'0' * 32}/reroll", json={"seed": 1}, headers=alice.headers)
    assert assert_problem(r, 404, "not-found")["detail"] == "no test with this id for this character"


def test_issue21_item2_a_players_seed_on_an_encounter_attack_and_next_turn_is_a_403(table, count_rows):
    t = table("great-cosmos")
    s = t.encounter(
        [
            {
                "character_id": t.character("Aiko", gc_fighter(60), kind="pc", player=t.alice),
                "position": {"x": 0, "y": 0},
            },
            {"character_id": t.character("Brute", gc_fighter(40)), "position": {"x": 1, "y": 0}},
        ]
    )
    eid, n = s["id"], ids(s)
    t.start(eid, dice=[])
    alice = bearer(t.alice.token)
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        headers=alice,
        json={"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6", "seed": 7},
    )
    assert assert_problem(r, 403, "forbidden")["detail"].startswith("players may not choose their dice")
    r = t.client.post(f"/v1/encounters/{eid}/next-turn", headers=alice, json={"seed": 7})
    assert_problem(r, 403, "forbidden")
    assert t.state(eid)["version"] == s["version"] + 1  # the start only
    assert count_rows("roll_log", campaign_id=t.c.id) == 1
    # the GM's seed gives every die of the action
    hit = t.act(eid, {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6", "seed": 7})
    assert (hit["provenance"], hit["seed"], hit["rolls"][0]["value"]) == ("seed", 7, 42)


# --- when players may enter dice: only those of what they control --------------------------------


def npc_duel(t: Table) -> tuple[str, dict[str, str]]:
    """Alice's Aiko (agilite 60, karma 0) next to the GM's Brute, whose karma is -10: its dodge
    is never super-critical (GC-K4), so against Aiko's super-critical 42 it never holds (GC-P2)
    and the damage die is always rolled: how many dice Aiko's attack needs does not depend on
    the server's dice."""
    brute = t.character("Brute", gc_fighter(40))
    r = t.client.patch(f"/v1/characters/{brute}", headers=t.gm, json={"sheet": {"karma": -10}, "gm_override": True})
    assert r.status_code == 200, r.text
    s = t.encounter(
        [
            {
                "character_id": t.character("Aiko", gc_fighter(60), kind="pc", player=t.alice),
                "position": {"x": 0, "y": 0},
            },
            {"character_id": brute, "position": {"x": 1, "y": 0}, "reaction": "dodge"},
        ]
    )
    t.start(s["id"], dice=[])
    return s["id"], ids(s)


def test_issue21_item2_gc_p2_a_players_attack_on_a_gm_npc_takes_only_the_players_dice(table):
    t = table("great-cosmos", {"players_may_enter_dice": True})
    eid, n = npc_duel(t)
    alice = bearer(t.alice.token)
    attack = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6"}
    # the next die Alice must enter is Aiko's damage: Brute's dodge is not hers
    r = t.client.post(f"/v1/encounters/{eid}/actions", headers=alice, json={**attack, "dice": [42]})
    assert assert_problem(r, 422, "dice-needed")["needed"] == {
        "index": 1,
        "die": "d6",
        "purpose": "damage",
        "by": n["Aiko"],
    }
    # a third die (as if for Brute's dodge) is one too many
    r = t.client.post(f"/v1/encounters/{eid}/actions", headers=alice, json={**attack, "dice": [42, 4, 3]})
    left = assert_problem(r, 422, "invalid-dice")
    assert (left["detail"], left["used"], left["given"]) == ("1 table dice left over: the operation used 2 of 3", 2, 3)
    hit = t.act(eid, {**attack, "dice": [42, 4]}, headers=alice)
    mine = [(d["die"], d["value"], d["purpose"]) for d in hit["rolls"] if d["by"] == n["Aiko"]]
    assert mine == [("d100", 42, "attack"), ("d6", 4, "damage")]
    brutes = [d for d in hit["rolls"] if d["by"] == n["Brute"]]  # the server's: d100, then karma d10 but on 42/66
    assert [d["purpose"] for d in brutes] == ["dodge"] + (["dodge karma"] if brutes[0]["value"] not in (42, 66) else [])
    assert all(1 <= d["value"] <= int(d["die"][1:]) for d in brutes)
    assert [d["by"] for d in hit["rolls"]] == [n["Aiko"]] + [n["Brute"]] * len(brutes) + [n["Aiko"]]
    assert hit["provenance"] == "table" and "seed" not in hit


def test_issue21_item2_gc_p2_a_players_seed_gives_only_its_own_combatants_dice(table):
    t = table("great-cosmos", {"players_may_enter_dice": True})
    eid, n = npc_duel(t)
    hit = t.act(
        eid,
        {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6", "seed": 7},
        headers=bearer(t.alice.token),
    )
    # seed 7 draws 42 then a d6 for Aiko: the attack test and the damage; Brute's dodge is not drawn from it
    assert [(d["value"], d["purpose"]) for d in hit["rolls"] if d["by"] == n["Aiko"]] == list(
        zip(oracle(7, 100, 6), ["attack", "damage"])
    )
    assert [d["purpose"] for d in hit["rolls"] if d["by"] == n["Brute"]][0] == "dodge"
    assert (hit["provenance"], hit["seed"]) == ("seed", 7)  # the caller's own response shows its seed


# --- every entry records its provenance ----------------------------------------------------------


def test_issue21_item2_tests_rolls_and_level_ups_record_their_provenance(client, gc_table):
    c, _, hero = gc_table()
    post = lambda path, body: client.post(path, json=body, headers=c.gm)  # noqa: E731
    made = {
        "test table": post(f"/v1/characters/{hero['id']}/tests", {"stat": "force", "dice": [50]}),
        "test server": post(f"/v1/characters/{hero['id']}/tests", {"stat": "force"}),
        "roll seed": post(f"/v1/campaigns/{c.id}/rolls", {"expression": "d6", "seed": 5}),
        "level_up seed": post(
            f"/v1/characters/{hero['id']}/level-ups",
            {"mode": "one_d20", "stats": ["force"], "chance_bonus_pool": "hp", "seed": 1},
        ),
    }
    assert {name: (r.status_code, r.json()["provenance"], r.json().get("seed")) for name, r in made.items()} == {
        "test table": (201, "table", None),
        "test server": (201, "server", None),
        "roll seed": (201, "seed", 5),
        "level_up seed": (201, "seed", 1),
    }
    assert [(e["kind"], e["provenance"], e.get("seed")) for e in log_page(client, c, c.gm)] == [
        ("level_up", "seed", 1),
        ("roll", "seed", 5),
        ("test", "server", None),
        ("test", "table", None),
    ]


def test_issue21_item2_rb_c1_rb_c3_opposed_and_group_tests_record_their_provenance(
    client, campaign_factory, character_factory
):
    c = campaign_factory("rulebook-d100")
    a, b = (character_factory(c, SHEETS[RB], name=name) for name in ("A", "B"))
    opposed = client.post(
        f"/v1/campaigns/{c.id}/tests/opposed",
        headers=c.gm,
        json={"a": {"character_id": a["id"], "stat": "FOR"}, "b": {"character_id": b["id"], "stat": "FOR"}, "seed": 11},
    )
    group = client.post(
        f"/v1/campaigns/{c.id}/tests/group",
        headers=c.gm,
        json={
            "stat": "FOR",
            "participants": [{"character_id": a["id"], "dice": [30]}, {"character_id": b["id"], "dice": [40]}],
        },
    )
    assert (opposed.status_code, opposed.json()["provenance"], opposed.json()["seed"]) == (201, "seed", 11)
    assert (group.status_code, group.json()["provenance"], "seed" in group.json()) == (201, "table", False)


def test_issue21_item2_initiative_turns_and_combat_actions_record_their_provenance(table):
    t = table("asgard")
    s = t.encounter(
        [
            {"character_id": t.character("Ulf", as_fighter(perception=3), kind="pc", player=t.alice)},
            {"character_id": t.character("Orm", as_fighter(perception=1))},
        ]
    )
    eid, n = s["id"], ids(s)
    started = t.start(eid, seed=3)["action"]  # AS-C1: the initiative tests
    turn = t.next_turn(eid)
    healed = t.act(eid, {"type": "heal", "target_id": n["Orm"], "amount": 1})
    assert [(a["type"], a["provenance"], a.get("seed")) for a in (started, turn, healed)] == [
        ("start", "seed", 3),
        ("next_turn", "server", None),
        ("heal", "server", None),
    ]
    r = t.client.get(f"/v1/campaigns/{t.c.id}/rolls", headers=t.gm)
    assert [(e["type"], e["provenance"], e.get("seed")) for e in r.json()["items"]] == [
        ("heal", "server", None),
        ("next_turn", "server", None),
        ("start", "seed", 3),
    ]
    r = t.client.get(f"/v1/campaigns/{t.c.id}/rolls", headers=bearer(t.alice.token))  # the seed is the GM's
    assert [(e["type"], e["provenance"], "seed" in e) for e in r.json()["items"]] == [
        ("heal", "server", False),
        ("next_turn", "server", False),
        ("start", "seed", False),
    ]


# --- the seed's value is the GM's ------------------------------------------------------------------


def test_issue21_item2_a_seed_is_shown_to_the_gm_and_the_caller_not_in_a_players_log_reads(client, gc_table):
    c, alice, hero = gc_table({"players_may_enter_dice": True})
    mine = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "seed": 7}, headers=alice.headers)
    assert (mine.status_code, mine.json()["natural"], mine.json()["seed"]) == (201, 42, 7)  # the caller's own
    gms = rolled(client, c, c.gm, expression="d20", seed=9).json()
    plain = rolled(client, c, c.gm, expression="d20").json()
    assert [(e["id"], e.get("seed")) for e in log_page(client, c, c.gm)] == [
        (plain["id"], None),
        (gms["id"], 9),
        (mine.json()["id"], 7),
    ]
    assert log_entry(client, c, c.gm, gms["id"]) == gms
    seen = log_page(client, c, alice.headers)
    assert seen == [
        plain,
        {k: v for k, v in gms.items() if k != "seed"},
        {k: v for k, v in mine.json().items() if k != "seed"},
    ]
    assert [(e["provenance"], "seed" in e) for e in seen] == [("server", False), ("seed", False), ("seed", False)]
    assert log_entry(client, c, alice.headers, gms["id"]) == {k: v for k, v in gms.items() if k != "seed"}
    assert log_entry(client, c, alice.headers, plain["id"]) == plain


def test_issue21_item2_gc_o1_gc_o3_a_players_new_round_dice_are_only_its_combatants(table):
    """GC-O1/GC-O3: ending the round's last turn re-rolls each multi-action combatant's d6; the
    player who ends it enters its own combatant's d6 only, the GM's NPC's is the server's."""
    t = table("great-cosmos", {"players_may_enter_dice": True})
    s = t.encounter(
        [
            {"character_id": t.character("Aiko", gc_fighter(60), kind="pc", player=t.alice), "actions": 2},
            {"character_id": t.character("Brute", gc_fighter(80)), "actions": 2},
        ]
    )
    eid, n = s["id"], ids(s)
    t.start(eid, dice=[3, 3])  # Brute 80 and 73, Aiko 60 and 53: Aiko's extra action ends the round
    for _ in range(3):
        t.next_turn(eid)
    alice = bearer(t.alice.token)
    r = t.client.post(f"/v1/encounters/{eid}/next-turn", headers=alice, json={"dice": []})
    assert assert_problem(r, 422, "dice-needed")["needed"] == {
        "index": 0,
        "die": "d6",
        "purpose": "extra_actions",
        "by": n["Aiko"],
    }
    r = t.client.post(f"/v1/encounters/{eid}/next-turn", headers=alice, json={"dice": [5, 1]})
    assert assert_problem(r, 422, "invalid-dice")["detail"] == "1 table dice left over: the operation used 1 of 2"
    turn = t.next_turn(eid, headers=alice, dice=[5])
    assert [(d["die"], d["purpose"], d["by"]) for d in turn["rolls"]] == [
        ("d6", "extra_actions", n["Aiko"]),
        ("d6", "extra_actions", n["Brute"]),
    ]
    assert turn["rolls"][0]["value"] == 5 and 1 <= turn["rolls"][1]["value"] <= 6
    extra = {e["combatant_id"]: e["initiative"] for e in t.state(eid)["order"] if e["extra_action"]}
    assert extra == {n["Brute"]: 80 - 4 - turn["rolls"][1]["value"], n["Aiko"]: 60 - 4 - 5}


def test_issue21_item2_a_gms_seed_is_not_in_what_players_read_of_the_fight_nor_their_stream(table):
    """The GM's seeded attack: players read it in the fight's history and the roll log (it holds
    nothing else they may not see) without its seed, and the stream's `log.created` of a
    seeded test neither; the GM reads both with it."""
    t = table("great-cosmos")
    eid, n = npc_duel(t)
    hit = t.act(eid, {"type": "attack", "actor_id": n["Brute"], "target_id": n["Aiko"], "damage": "1d6", "seed": 5})
    assert hit["seed"] == 5
    history = {
        a["id"]: a for a in t.client.get(f"/v1/encounters/{eid}/actions", headers=t.alice.headers).json()["items"]
    }
    assert history[hit["id"]] == {k: v for k, v in hit.items() if k != "seed"}
    log = {e["id"]: e for e in t.client.get(f"/v1/campaigns/{t.c.id}/rolls", headers=t.alice.headers).json()["items"]}
    assert log[hit["id"]] == history[hit["id"]]
    gm_history = t.client.get(f"/v1/encounters/{eid}/actions", headers=t.c.gm).json()["items"]
    assert next(a for a in gm_history if a["id"] == hit["id"])["seed"] == 5
    aiko = next(c["character_id"] for c in t.state(eid)["combatants"] if c["id"] == n["Aiko"])
    test = t.client.post(f"/v1/characters/{aiko}/tests", json={"stat": "force", "seed": 3}, headers=t.c.gm).json()
    entries = {
        who: [
            e["data"]["entry"]
            for e in read_events(t.client, t.c.id, headers)
            if e["type"] == "log.created" and e["data"]["entry"]["id"] == test["id"]
        ]
        for who, headers in (("gm", t.c.gm), ("alice", t.alice.headers))
    }
    assert entries["gm"] == [test] and entries["alice"] == [{k: v for k, v in test.items() if k != "seed"}]
