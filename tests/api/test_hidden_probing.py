# ruff: noqa: F811  (the `table` fixture is imported from test_encounters)
"""Issue 21, "hidden things are unknown things" in encounters (API.md, Round 3 additions): a
player naming a hidden combatant (a target, its cell, a cursor built from its action) is answered
as for an unknown one; counters, steps and changes name only what it sees; `hp_visibility`
holds in the steps of every ruleset; a revert of what players never saw stays the GM's; a
`type` that is no string is a 422; another campaign's token gets 404 before any 403.
Table dice throughout."""

from __future__ import annotations

import base64
import json

import pytest

from tests.rulesets.asgard import test_combat as asgard
from tests.rulesets.rulebook_d100 import test_combat as rulebook
from tests.rulesets.worlds_awakening import test_combat as awakening
from tests.api.encounter_support import Table, ids, table  # noqa: F401  (the fixture)
from tests.api.support import assert_problem, assert_validation, bearer, read_events
from tests.factories import gc_fighter, wa_fighter

UNKNOWN = "f" * 32


def fight(t: Table, people: list[tuple], options: dict | None = None, start: list[int] | None = None):
    """An encounter of (name, sheet, owner or None, extra combatant fields), started with these
    dice: (its id, names → ids)."""
    combatants = [
        {"character_id": t.character(name, sheet, kind="pc" if owner else "npc", player=owner), **extra}
        for name, sheet, owner, extra in people
    ]
    s = t.encounter(combatants, options)
    if start is not None:
        t.start(s["id"], dice=start)
    return s["id"], ids(s)


def problem(r) -> dict:
    """The problem body but for its `request_id` (each request's own)."""
    return {k: v for k, v in r.json().items() if k != "request_id"}


def same_problem(hidden, unknown, hidden_id: str = UNKNOWN) -> None:
    """Both answers are the same problem (but for the id each named and the request's id)."""
    assert (hidden.status_code, hidden.headers["content-type"]) == (
        unknown.status_code,
        unknown.headers["content-type"],
    )
    assert json.loads(json.dumps(problem(hidden)).replace(hidden_id, UNKNOWN)) == problem(unknown)


def lurking(t: Table, lurker_at: dict, reaction: str = "dodge"):
    """Aiko (Alice's, agilite 60, acts first) at (0, 0) and a hidden Lurker that stays hidden."""
    return fight(
        t,
        [
            ("Aiko", gc_fighter(60), t.alice, {"position": {"x": 0, "y": 0}, "reaction": reaction}),
            ("Lurker", gc_fighter(40), None, {"position": lurker_at, "hidden": True}),
        ],
        options={"reveal_on_turn": False},
        start=[],
    )


# --- item 4: naming a hidden combatant -------------------------------------------------------------


def test_issue21_item4_a_players_attack_on_a_hidden_combatant_answers_as_on_an_unknown_id(table):
    t = table("great-cosmos", {"players_may_enter_dice": True})
    eid, n = lurking(t, {"x": 1, "y": 0})

    def attack(target: str):
        return t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=t.alice.headers,
            json={"type": "attack", "actor_id": n["Aiko"], "target_id": target, "damage": "1d6", "seed": 3},
        )

    hidden, unknown = attack(n["Lurker"]), attack(UNKNOWN)
    assert_validation(unknown, [["body", "target_id"]])
    same_problem(hidden, unknown, n["Lurker"])
    lurker = next(c for c in t.state(eid)["combatants"] if c["id"] == n["Lurker"])
    assert lurker["resources"]["hp"] == {"value": 100, "max": 100}  # nothing landed
    # nor may it act for it: as for an unknown actor
    acts = [
        t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=t.alice.headers,
            json={"type": "move", "actor_id": who, "to": {"x": 5, "y": 5}},
        )
        for who in (n["Lurker"], UNKNOWN)
    ]
    same_problem(*acts, n["Lurker"])


def test_issue21_item4_gc_d1_d2_a_hidden_combatants_cell_is_an_empty_cell_to_a_player(table):
    """GC-D2 is judged first; a hidden occupant holds no cell against a player who cannot see it."""
    t = table("great-cosmos")
    eid, n = fight(
        t,
        [
            ("Aiko", gc_fighter(60), t.alice, {"position": {"x": 0, "y": 0}}),
            ("Lurker", gc_fighter(40), None, {"position": {"x": 2, "y": 0}, "hidden": True}),
            ("Shade", gc_fighter(30), None, {"position": {"x": 4, "y": 0}, "hidden": True}),
        ],
        options={"reveal_on_turn": False},
        start=[],
    )

    def move(x: int, y: int, headers):
        return t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=headers,
            json={"type": "move", "actor_id": n["Aiko"], "to": {"x": x, "y": y}},
        )

    beyond_hidden, beyond_empty = move(4, 0, t.alice.headers), move(0, 4, t.alice.headers)
    assert assert_problem(beyond_empty, 422, "rule-violation")["detail"] == "4 cells moved this turn; at most 3 (GC-D2)"
    same_problem(beyond_hidden, beyond_empty)
    assert_validation(move(2, 0, t.gm), [["body", "to"]])  # the GM sees the Lurker there
    moved = move(2, 0, t.alice.headers)
    assert moved.status_code == 201, moved.text
    assert [(s["rule"], s["what"], s.get("distance")) for s in moved.json()["steps"]] == [
        ("GC-D1", "move", 2),
        ("GC-D2", "max move", None),
    ]
    assert {c["name"]: c["position"] for c in t.state(eid)["combatants"]} == {
        "Aiko": {"x": 2, "y": 0},
        "Lurker": {"x": 2, "y": 0},
        "Shade": {"x": 4, "y": 0},
    }


def test_issue21_item4_gc_p2_a_riposte_on_a_hidden_attacker_is_not_in_a_players_counters(table):
    """GC-P2: Aiko's critical parry of the hidden Lurker's blow earns a riposte against it: the GM
    sees the counter, players do not, and naming the Lurker for it is naming an unknown id."""
    t = table("great-cosmos", {"players_may_enter_dice": True})
    eid, n = lurking(t, {"x": 1, "y": 0}, reaction="parry")
    parried = t.act(
        eid, {"type": "attack", "actor_id": n["Lurker"], "target_id": n["Aiko"], "damage": "1d6", "dice": [40, 5]}
    )
    assert next(s for s in parried["steps"] if s["rule"] == "GC-P2")["riposte_available"] is True
    by_gm = {c["name"]: c for c in t.state(eid)["combatants"]}
    assert by_gm["Aiko"]["counters"] == {"riposte": n["Lurker"]}
    for who in (t.alice.headers, t.bob.headers):
        assert [(c["name"], c["counters"]) for c in t.state(eid, who)["combatants"]] == [("Aiko", {})]
    riposte = [
        t.client.post(
            f"/v1/encounters/{eid}/actions",
            headers=t.alice.headers,
            json={"type": "attack", "actor_id": n["Aiko"], "target_id": target, "damage": "1d6", "dice": [20, 60, 3]},
        )
        for target in (n["Lurker"], UNKNOWN)
    ]
    same_problem(*riposte, n["Lurker"])
    read = [
        t.state(eid, t.alice.headers),
        t.client.get(f"/v1/encounters/{eid}/actions", headers=t.alice.headers).json(),
        t.client.get(f"/v1/campaigns/{t.c.id}/rolls", headers=t.alice.headers).json(),
        read_events(t.client, t.c.id, t.alice.headers),
    ]
    assert n["Lurker"] not in json.dumps(read)


# --- item 5: hp_visibility in the steps of every ruleset -----------------------------------------

ATTACKS = {  # ruleset: (module, start dice, attack dice, extras, the target's pool step: rule, what)
    "asgard": (asgard, [4, 4, 4, 3, 3, 3], [5, 2, 4, 3, 3, 3], {"weapon": "epee"}, ("AS-C3", "vitality")),
    "rulebook-d100": (rulebook, [25, 35], [23, 35, 4], {}, ("RB-F1", "hp")),
    "worlds-awakening": (awakening, [], [6, 5], {}, ("WA-C5", "hp")),
}


@pytest.mark.parametrize("visibility", ["status", "hidden"])
@pytest.mark.parametrize("ruleset", list(ATTACKS))
def test_issue21_item5_damage_steps_follow_hp_visibility_in_every_ruleset(table, ruleset, visibility):
    """AS-C3, RB-F1, WA-C5: a player reads no exact value of a pool it does not own in the steps."""
    module, start, dice, extras, (rule, what) = ATTACKS[ruleset]
    t = table(ruleset)
    eid, n = fight(
        t,
        [("Hero", module.hero(), t.alice, {}), ("Foe", module.foe(), None, {})],
        options={"hp_visibility": visibility},
        start=start,
    )
    hit = t.act(eid, {"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"], "dice": dice, **extras})
    exact = next(s for s in hit["steps"] if (s["rule"], s["what"]) == (rule, what))
    assert (exact["combatant_id"], exact["resource"]) == (n["Foe"], what)
    for who in (t.alice.headers, t.bob.headers):
        seen = next(
            a
            for a in t.client.get(f"/v1/encounters/{eid}/actions", headers=who).json()["items"]
            if a["id"] == hit["id"]
        )
        assert [s for s in seen["steps"] if (s["rule"], s["what"]) == (rule, what)] == [
            {k: v for k, v in exact.items() if k not in ("before", "after", "excess")}  # RB-F3 `excess` too
        ]
        assert all("before" not in s and "after" not in s for s in seen["steps"] if s["combatant_id"] == n["Foe"])


def test_issue21_item5_wa_c5_back_above_0_hp_tells_players_no_exact_hp(table):
    t = table("worlds-awakening")
    eid, n = fight(
        t,
        [("Hero", wa_fighter(1), t.alice, {}), ("Orc", wa_fighter(3), None, {})],
        options={"hp_visibility": "status"},
        start=[],
    )
    t.act(eid, {"type": "damage", "target_id": n["Orc"], "amount": 99})
    healed = t.act(eid, {"type": "heal", "target_id": n["Orc"], "amount": 3})
    assert healed["steps"][1] == {
        "rule": "WA-C5",
        "key": "above_0_hp_no_longer_down",
        "what": "above 0 HP: no longer down",
        "resource": "hp",
        "after": 3,
        "combatant_id": n["Orc"],
    }
    seen = next(
        a
        for a in t.client.get(f"/v1/encounters/{eid}/actions", headers=t.bob.headers).json()["items"]
        if a["id"] == healed["id"]
    )
    assert seen["steps"] == [
        {"rule": "GM", "key": "heal", "what": "heal", "combatant_id": n["Orc"], "resource": "hp"},
        {
            "rule": "WA-C5",
            "key": "above_0_hp_no_longer_down",
            "what": "above 0 HP: no longer down",
            "resource": "hp",
            "combatant_id": n["Orc"],
        },
        {"rule": "turn", "key": "back_in_the_fight", "what": "back in the fight", "combatant_id": n["Orc"]},
    ]


# --- item 7: cursors -------------------------------------------------------------------------------


def test_issue21_item7_a_players_history_page_and_cursor_never_name_a_hidden_action(table):
    t = table("worlds-awakening")
    eid, n = fight(t, [("Hero", wa_fighter(1), t.alice, {}), ("Orc", wa_fighter(3), None, {})])
    started = t.start(eid, dice=[])["action"]
    secrets = [
        t.act(eid, {"type": "condition", "target_id": n["Orc"], "add": {"name": f"cursed {k}"}, "hidden": True})
        for k in (1, 2)
    ]
    url = f"/v1/encounters/{eid}/actions"
    page = t.client.get(url, params={"limit": 1}, headers=t.alice.headers).json()
    assert ([a["id"] for a in page["items"]], page["next_cursor"]) == ([started["id"]], None)
    gm = t.client.get(url, params={"limit": 1}, headers=t.gm).json()
    assert [a["id"] for a in gm["items"]] == [secrets[1]["id"]] and gm["next_cursor"] is not None
    built = base64.urlsafe_b64encode(f"a{secrets[1]['id']}".encode()).decode().rstrip("=")
    unknown = base64.urlsafe_b64encode(f"a{UNKNOWN}".encode()).decode().rstrip("=")
    answers = [
        t.client.get(url, params={"cursor": c}, headers=t.alice.headers) for c in (gm["next_cursor"], built, unknown)
    ]
    assert_validation(answers[2], [["query", "cursor"]])
    same_problem(answers[0], answers[2])
    same_problem(answers[1], answers[2])
    rest = t.client.get(url, params={"cursor": gm["next_cursor"]}, headers=t.gm).json()
    assert [a["id"] for a in rest["items"]] == [secrets[0]["id"], started["id"]]


def test_issue21_item7_a_roll_log_cursor_built_from_a_hidden_entry_is_an_unknown_cursor(table):
    t = table("worlds-awakening")
    eid, n = fight(t, [("Hero", wa_fighter(1), t.alice, {}), ("Orc", wa_fighter(3), None, {})], start=[])
    secret = t.act(eid, {"type": "condition", "target_id": n["Orc"], "add": {"name": "cursed"}, "hidden": True})
    url = f"/v1/campaigns/{t.c.id}/rolls"

    def cursor(entry_id: str) -> str:
        return base64.urlsafe_b64encode(f"e{entry_id}".encode()).decode().rstrip("=")

    hidden, unknown = (
        t.client.get(url, params={"cursor": cursor(i)}, headers=t.alice.headers) for i in (secret["id"], UNKNOWN)
    )
    assert_validation(unknown, [["query", "cursor"]])
    same_problem(hidden, unknown)
    mine = t.client.get(url, params={"cursor": cursor(secret["id"])}, headers=t.gm)
    assert mine.status_code == 200 and len(mine.json()["items"]) == 1  # the start, below it


# --- item 8: a revert of what players never saw -----------------------------------------------------


def test_issue21_item8_reverting_a_hidden_combatants_action_stays_the_gms(table):
    t = table("worlds-awakening")
    eid, n = fight(
        t,
        [("Hero", wa_fighter(1), t.alice, {}), ("Lurker", wa_fighter(3), None, {"hidden": True})],
        options={"reveal_on_turn": False},
        start=[],
    )
    hurt = t.act(eid, {"type": "damage", "target_id": n["Lurker"], "amount": 2})
    undo = t.post(f"/v1/encounters/{eid}/actions/{hurt['id']}/revert", {})
    gm = [
        (e["type"], e["data"].get("reverted"))
        for e in read_events(t.client, t.c.id, t.gm)
        if e["type"].startswith("encounter.")
    ]
    assert gm[-1] == ("encounter.reverted", hurt["id"])
    for who in (t.alice.headers, t.bob.headers):
        theirs = [e["type"] for e in read_events(t.client, t.c.id, who) if e["type"].startswith("encounter.")]
        assert theirs == ["encounter.created", "encounter.updated"]  # the start (issue 25 item 1)
        history = t.client.get(f"/v1/encounters/{eid}/actions", headers=who).json()["items"]
        assert [a["type"] for a in history] == ["start"]
        log = t.client.get(f"/v1/campaigns/{t.c.id}/rolls", headers=who).json()["items"]
        assert undo["id"] not in {e["id"] for e in log}


# --- item 9: a `type` that is no string ---------------------------------------------------------------


@pytest.mark.parametrize("type_", [{}, [], [1]])
def test_issue21_item9_an_action_type_that_is_no_string_is_a_422_naming_it(table, type_):
    t = table("worlds-awakening")
    eid, n = fight(t, [("Hero", wa_fighter(1), t.alice, {})], start=[])
    for who in (t.gm, t.alice.headers):
        r = t.client.post(f"/v1/encounters/{eid}/actions", json={"type": type_, "target_id": n["Hero"]}, headers=who)
        assert_validation(r, [["body", "type"]])


# --- item 10: another campaign's token: 404 before 403 ----------------------------------------------


def test_issue21_item10_gm_only_encounter_routes_answer_another_campaigns_token_404(
    table, campaign_factory, player_factory
):
    t = table("worlds-awakening")
    hero = t.character("Hero", wa_fighter(1), kind="pc", player=t.alice)
    eid, n = fight(t, [("Orc", wa_fighter(3), None, {})])
    started = t.start(eid, dice=[])["action"]
    other = campaign_factory("worlds-awakening")
    strangers = {"player": player_factory(other, "Eve").headers, "gm": other.gm}

    def routes(encounter: str) -> list[tuple[str, str, dict | None]]:
        e = f"/v1/encounters/{encounter}"
        return [
            ("PATCH", e, {"name": "x"}),
            ("POST", f"{e}/combatants", {"character_id": hero}),
            ("DELETE", f"{e}/combatants/{n['Orc']}", None),
            ("POST", f"{e}/start", {}),
            ("POST", f"{e}/actions/{started['id']}/revert", {}),
            ("POST", f"{e}/end", None),
            ("POST", f"{e}/actions", {"type": "heal", "target_id": n["Orc"], "amount": 1}),
        ]

    for (method, path, body), (_, unknown_path, _) in zip(routes(eid), routes(UNKNOWN)):
        for who, headers in strangers.items():
            r = t.client.request(method, path, json=body, headers=headers)
            unknown = t.client.request(method, unknown_path, json=body, headers=headers)
            assert (who, method, path, r.status_code) == (who, method, path, 404), r.text
            assert_problem(unknown, 404, "not-found")
            same_problem(r, unknown)
        assert_problem(t.client.request(method, path, json=body, headers=t.alice.headers), 403, "forbidden")
    assert t.state(eid)["version"] == 2  # nothing changed
    revoked = bearer("jdr_" + "x" * 43)
    for method, path, body in routes(eid):
        assert_problem(t.client.request(method, path, json=body, headers=revoked), 401, "unauthorized")


def test_issue21_item4_gc_p6_a_provocation_by_a_hidden_sepulcrale_does_not_name_it_to_a_player(table):
    """GC-P6: Aiko, struck by the hidden Lurker in Sépulcrale, must aim at it: a player is told so
    without its id (the GM is told which)."""
    t = table("great-cosmos", {"players_may_enter_dice": True})
    eid, n = fight(
        t,
        [
            ("Aiko", gc_fighter(60), t.alice, {"position": {"x": 0, "y": 0}}),
            ("Lurker", gc_fighter(50), None, {"position": {"x": 1, "y": 0}, "hidden": True}),
            ("Cleo", gc_fighter(30), None, {"position": {"x": 0, "y": 1}}),
        ],
        options={"reveal_on_turn": False},
        start=[],
    )
    t.act(eid, {"type": "posture", "actor_id": n["Lurker"], "posture": "sepulcrale"})
    hit = t.act(
        eid,
        {"type": "attack", "actor_id": n["Lurker"], "target_id": n["Aiko"], "damage": "1d6", "dice": [30, 5, 50, 2]},
    )
    assert next(c for c in t.state(eid)["combatants"] if c["id"] == n["Aiko"])["counters"] == {
        "provoked_by": n["Lurker"]
    }, hit["steps"]
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Cleo"], "damage": "1d6", "dice": [30, 50, 2]}
    refused = assert_problem(
        t.client.post(f"/v1/encounters/{eid}/actions", json=body, headers=t.alice.headers), 422, "rule-violation"
    )
    assert (refused["detail"], refused["provoked_by"]) == (
        f"combatant {n['Aiko']} is provoked: its next attack aims at its provoker (GC-P6)",
        None,
    )
    by_gm = assert_problem(
        t.client.post(f"/v1/encounters/{eid}/actions", json=body, headers=t.gm), 422, "rule-violation"
    )
    assert by_gm["provoked_by"] == n["Lurker"]
