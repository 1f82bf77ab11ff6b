"""Issue 25 item 3 (the typed contract): a boolean of a JSON request body is a JSON boolean, as
openapi.json says (`"type": "boolean"`). `"yes"`, `"true"`, `1` and `0` are refused with the
validation problem (422, `validation_failed`, `errors` at the field) and nothing is written, for
every kind of body: campaign options of each ruleset, encounter options, combatants, tests, odds,
actions, reverts, characters (their own fields and their sheets), free rolls, imported bundles.
`true` and `false` still work. Query booleans are strings on the wire and stay lax (`?follow=false`,
`?dry_run=true`)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from pydantic import BaseModel

from tests.api.strict_support import lax_spots, put, request_models
from tests.api.support import assert_validation, read_events
from tests.factories import AS, GC, RB, SHEETS, TEST_BODIES, WA, gc_fighter, sheet

LOOSE = ["yes", "true", 1, 0]


def test_issue25_item3_every_boolean_of_a_request_body_is_strict():
    models = request_models()
    assert len(models) > 100  # the bodies of the four rulesets and the generic ones
    lax = [spot for m in models for spot in lax_spots(m.__pydantic_core_schema__, m.__qualname__, {"bool"})]
    assert lax == []


# --- campaign options ---------------------------------------------------------------------------

OPTIONS = [
    pytest.param(GC, "inventory_rules", id="gc_i1_inventory_rules"),
    pytest.param(GC, "extreme_scores", id="gc_t2_extreme_scores"),
    pytest.param(AS, "take_11_allowed", id="as_t8_take_11_allowed"),
    pytest.param(RB, "crit_success_rescues_negative", id="rb_t6_crit_success_rescues_negative"),
    pytest.param(WA, "players_may_enter_dice", id="issue25_item3_players_may_enter_dice"),
]


@pytest.mark.parametrize(("ruleset", "option"), OPTIONS)
def test_gc_i1_gc_t2_as_t8_rb_t6_campaign_options_are_json_booleans_on_create(client, written, ruleset, option):
    before = written()
    for loose in LOOSE:
        r = client.post("/v1/campaigns", json={"name": "x", "ruleset": ruleset, "options": {option: loose}})
        assert_validation(r, [["body", "options", option]])
    assert written() == before
    for value in (True, False):
        r = client.post("/v1/campaigns", json={"name": "x", "ruleset": ruleset, "options": {option: value}})
        assert r.status_code == 201, r.text
        assert r.json()["options"][option] is value


@pytest.mark.parametrize(("ruleset", "option"), OPTIONS)
def test_gc_i1_gc_t2_as_t8_rb_t6_campaign_options_are_json_booleans_on_patch(
    client, campaign_factory, written, ruleset, option
):
    c = campaign_factory(ruleset)
    url = f"/v1/campaigns/{c.id}"
    stored = client.get(url, headers=c.gm).json()
    before = written()
    for loose in LOOSE:
        assert_validation(
            client.patch(url, json={"options": {option: loose}}, headers=c.gm), [["body", "options", option]]
        )
    assert written() == before
    assert client.get(url, headers=c.gm).json() == stored
    for value in (not stored["options"][option], stored["options"][option]):
        r = client.patch(url, json={"options": {option: value}}, headers=c.gm)
        assert r.status_code == 200, r.text
        assert r.json()["options"][option] is value


# --- encounters: options, combatants, actions, reverts -------------------------------------------


def test_issue25_item3_encounter_options_and_combatants_take_json_booleans(table, written):
    t = table(GC)
    hero = t.character("Aiko", gc_fighter(), kind="pc", player=t.alice)
    url = f"/v1/campaigns/{t.c.id}/encounters"
    before = written()
    for loose in LOOSE:
        r = t.client.post(url, json={"name": "x", "options": {"reveal_on_turn": loose}}, headers=t.gm)
        assert_validation(r, [["body", "options", "reveal_on_turn"]])
        r = t.client.post(
            url, json={"name": "x", "combatants": [{"character_id": hero, "hidden": loose}]}, headers=t.gm
        )
        assert_validation(r, [["body", "combatants", 0, "hidden"]])
    assert written() == before
    s = t.encounter([{"character_id": hero, "hidden": True}], options={"reveal_on_turn": False})
    assert (s["options"]["reveal_on_turn"], s["combatants"][0]["hidden"]) == (False, True)
    eid, combatant = s["id"], s["combatants"][0]["id"]
    goblin = t.character("Goblin", gc_fighter(40))
    before = written()
    for loose in LOOSE:
        r = t.client.patch(f"/v1/encounters/{eid}", json={"options": {"reveal_on_turn": loose}}, headers=t.gm)
        assert_validation(r, [["body", "options", "reveal_on_turn"]])
        r = t.client.patch(f"/v1/encounters/{eid}/combatants/{combatant}", json={"hidden": loose}, headers=t.gm)
        assert_validation(r, [["body", "hidden"]])
        r = t.client.post(
            f"/v1/encounters/{eid}/combatants", json={"character_id": goblin, "hidden": loose}, headers=t.gm
        )
        assert_validation(r, [["body", "hidden"]])
    assert written() == before
    assert t.state(eid) == s
    r = t.client.patch(f"/v1/encounters/{eid}/combatants/{combatant}", json={"hidden": False}, headers=t.gm)
    assert r.status_code == 200, r.text
    assert r.json()["combatants"][0]["hidden"] is False


def test_gc_p5_action_and_revert_flags_are_json_booleans(table, written):
    """GC-P5's `unparryable` on an attack, an action's `hidden`, a revert's `force`."""
    t = table(GC)
    s = t.encounter(
        [
            {"character_id": t.character("Aiko", gc_fighter(70), kind="pc", player=t.alice)},
            {"character_id": t.character("Goblin", gc_fighter(40))},
        ]
    )
    t.start(s["id"], dice=[])
    names = {c["name"]: c["id"] for c in s["combatants"]}
    attack = {"type": "attack", "actor_id": names["Aiko"], "target_id": names["Goblin"], "damage": "1d6", "seed": 1}
    url = f"/v1/encounters/{s['id']}/actions"
    before, state = written(), t.state(s["id"])
    for loose in LOOSE:
        for flag in ("unparryable", "hidden"):
            assert_validation(t.client.post(url, json={**attack, flag: loose}, headers=t.gm), [["body", flag]])
    assert written() == before
    assert t.state(s["id"]) == state
    action = t.act(s["id"], {**attack, "unparryable": True, "hidden": False})
    assert action["hidden"] is False
    before, state = written(), t.state(s["id"])
    for loose in LOOSE:
        r = t.client.post(f"{url}/{action['id']}/revert", json={"force": loose}, headers=t.gm)
        assert_validation(r, [["body", "force"]])
    assert written() == before
    assert t.state(s["id"]) == state
    assert t.post(f"{url}/{action['id']}/revert", {"force": False})["type"] == "revert"


def test_rb_f3_free_attack_is_a_json_boolean(table, written):
    t = table(RB)
    s = t.encounter(
        [
            {"character_id": t.character("A", sheet(RB), kind="pc", player=t.alice)},
            {"character_id": t.character("B", sheet(RB))},
        ]
    )
    t.start(s["id"], dice=[50, 40])
    names = {c["name"]: c["id"] for c in s["combatants"]}
    attack = {"type": "attack", "actor_id": names["A"], "target_id": names["B"], "seed": 1}
    before = written()
    for loose in LOOSE:
        r = t.client.post(f"/v1/encounters/{s['id']}/actions", json={**attack, "free_attack": loose}, headers=t.gm)
        assert_validation(r, [["body", "free_attack"]])
    assert written() == before


# --- tests and odds -----------------------------------------------------------------------------

TEST_FLAGS = [
    pytest.param(GC, "hidden", id="issue25_item3_gc_hidden"),
    pytest.param(AS, "heroism_4d6", id="as_h1_heroism_4d6"),
    pytest.param(AS, "close_skill", id="as_t7_close_skill"),
    pytest.param(RB, "weakened", id="rb_t1_weakened"),
    pytest.param(RB, "overflow_crit", id="rb_t7_overflow_crit"),
    pytest.param(WA, "hidden", id="issue25_item3_wa_hidden"),
]


@pytest.mark.parametrize(("ruleset", "flag"), TEST_FLAGS)
def test_as_h1_as_t7_rb_t1_rb_t7_test_and_odds_flags_are_json_booleans(
    client, campaign_factory, character_factory, written, ruleset, flag
):
    c = campaign_factory(ruleset)
    hero = character_factory(c, SHEETS[ruleset])
    before = written()
    for loose in LOOSE:
        body = {**TEST_BODIES[ruleset], flag: loose}
        r = client.post(f"/v1/characters/{hero['id']}/tests", json=body, headers=c.gm)
        assert_validation(r, [["body", flag]])
        if flag != "hidden":  # odds roll nothing: no `hidden`, no seed
            odds = {k: v for k, v in body.items() if k != "seed"}
            assert_validation(
                client.post(f"/v1/characters/{hero['id']}/tests/odds", json=odds, headers=c.gm), [["body", flag]]
            )
    assert written() == before
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={**TEST_BODIES[ruleset], flag: False}, headers=c.gm)
    assert r.status_code == 201, r.text


def test_issue25_item3_a_free_roll_hidden_is_a_json_boolean(client, campaign_factory, written):
    c = campaign_factory(GC)
    before = written()
    for loose in LOOSE:
        r = client.post(f"/v1/campaigns/{c.id}/rolls", json={"expression": "1d6", "hidden": loose}, headers=c.gm)
        assert_validation(r, [["body", "hidden"]])
    assert written() == before
    r = client.post(f"/v1/campaigns/{c.id}/rolls", json={"expression": "1d6", "hidden": True}, headers=c.gm)
    assert r.status_code == 201 and r.json()["hidden"] is True, r.text


# --- characters -----------------------------------------------------------------------------------

SHEET_FLAGS = [
    pytest.param(WA, {"down": "?"}, ["down"], id="wa_c5_down"),
    pytest.param(AS, {"condition": {"dying": "?"}}, ["condition", "dying"], id="as_c5_dying"),
    pytest.param(
        AS,
        {"weapons": [{"name": "arc", "damage_dice": 1, "ranged": "?"}]},
        ["weapons", 0, "ranged"],
        id="as_weapon_ranged",
    ),
]


@pytest.mark.parametrize(("ruleset", "part", "loc"), SHEET_FLAGS)
def test_wa_c5_as_c5_sheet_booleans_are_json_booleans(
    client, campaign_factory, character_factory, written, ruleset, part, loc
):
    c = campaign_factory(ruleset)
    hero = character_factory(c, SHEETS[ruleset])
    url = f"/v1/campaigns/{c.id}/characters"
    before = written()
    for loose in LOOSE:
        r = client.post(url, json={"name": "x", "sheet": {**SHEETS[ruleset], **put(part, loose)}}, headers=c.gm)
        assert_validation(r, [["body", "sheet", *loc]])
        r = client.patch(f"/v1/characters/{hero['id']}", json={"sheet": put(part, loose)}, headers=c.gm)
        assert_validation(r, [["body", "sheet", *loc]])
    assert written() == before
    assert client.get(f"/v1/characters/{hero['id']}", headers=c.gm).json() == hero
    r = client.post(url, json={"name": "x", "sheet": {**SHEETS[ruleset], **put(part, False)}}, headers=c.gm)
    assert r.status_code == 201, r.text


def test_issue25_item3_gm_override_is_a_json_boolean(client, campaign_factory, character_factory, written):
    c = campaign_factory(GC)
    hero = character_factory(c, SHEETS[GC])
    before = written()
    for loose in LOOSE:
        r = client.post(
            f"/v1/campaigns/{c.id}/characters",
            json={"name": "x", "sheet": SHEETS[GC], "gm_override": loose},
            headers=c.gm,
        )
        assert_validation(r, [["body", "gm_override"]])
        r = client.patch(f"/v1/characters/{hero['id']}", json={"name": "y", "gm_override": loose}, headers=c.gm)
        assert_validation(r, [["body", "gm_override"]])
    assert written() == before
    assert client.get(f"/v1/characters/{hero['id']}", headers=c.gm).json() == hero
    r = client.patch(f"/v1/characters/{hero['id']}", json={"name": "y", "gm_override": True}, headers=c.gm)
    assert r.status_code == 200 and r.json()["name"] == "y", r.text


# --- bundles, and query booleans ------------------------------------------------------------------


@pytest.fixture
def bundle(client, campaign_factory, character_factory) -> dict[str, Any]:
    """A real export: options, a hidden log entry, an encounter with a hidden combatant."""
    c = campaign_factory(GC, {"inventory_rules": False})
    hero = character_factory(c, SHEETS[GC])
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={**TEST_BODIES[GC], "hidden": True}, headers=c.gm)
    assert r.status_code == 201, r.text
    fight = {"name": "x", "combatants": [{"character_id": hero["id"], "hidden": True}]}
    assert client.post(f"/v1/campaigns/{c.id}/encounters", json=fight, headers=c.gm).status_code == 201
    exported = client.get(f"/v1/campaigns/{c.id}/export", headers=c.gm).json()
    assert exported["log"][0]["hidden"] is True and exported["campaign"]["options"]["inventory_rules"] is False
    [encounter] = exported["encounters"]
    assert encounter["options"]["reveal_on_turn"] is True and encounter["combatants"][0]["hidden"] is True
    return exported


def _spoil_entry(b: dict, loose: Any) -> dict:
    return {**b, "log": [{**b["log"][0], "hidden": loose}]}


def _spoil_options(b: dict, loose: Any) -> dict:
    return {**b, "campaign": {**b["campaign"], "options": {**b["campaign"]["options"], "inventory_rules": loose}}}


def _spoil_encounter_options(b: dict, loose: Any) -> dict:
    """An encounter's options, stored as the bundle gives them: read by its ruleset before anything is written."""
    [e] = b["encounters"]
    return {**b, "encounters": [{**e, "options": {**e["options"], "reveal_on_turn": loose}}]}


def _spoil_combatant(b: dict, loose: Any) -> dict:
    [e] = b["encounters"]
    return {**b, "encounters": [{**e, "combatants": [{**e["combatants"][0], "hidden": loose}]}]}


@pytest.mark.parametrize(
    ("spoil", "loc"),
    [
        pytest.param(_spoil_entry, ["log", 0, "hidden"], id="issue25_item3_log_hidden"),
        pytest.param(_spoil_options, ["campaign", "options", "inventory_rules"], id="gc_i1_inventory_rules"),
        pytest.param(
            _spoil_encounter_options, ["encounters", 0, "options", "reveal_on_turn"], id="issue25_item3_reveal_on_turn"
        ),
        pytest.param(_spoil_combatant, ["encounters", 0, "combatants", 0, "hidden"], id="issue25_item3_hidden"),
    ],
)
def test_issue25_item3_gc_i1_an_imported_bundle_holds_json_booleans(client, bundle, written, spoil, loc):
    before = written()
    for loose in LOOSE:
        assert_validation(client.post("/v1/campaigns/import", json=spoil(bundle, loose)), [["body", *loc]])
    assert written() == before
    for value in (True, False):
        r = client.post("/v1/campaigns/import", params={"dry_run": "true"}, json=spoil(bundle, value))
        assert r.status_code == 200 and r.json()["valid"] is True, r.text


def test_issue25_item3_dry_run_stays_a_query_string(client, bundle, written):
    before = written()
    for dry_run in ("true", "1", "yes"):  # a query string: lax, as before
        r = client.post("/v1/campaigns/import", params={"dry_run": dry_run}, json=bundle)
        assert r.status_code == 200 and r.json()["dry_run"] is True, r.text
    assert written() == before
    r = client.post("/v1/campaigns/import", params={"dry_run": "false"}, json=bundle)
    assert r.status_code == 201, r.text
    assert written()["campaign"] == before["campaign"] + 1


def test_issue25_item3_follow_false_stays_a_query_string(client, campaign_factory):
    c = campaign_factory(GC)
    r = client.post(f"/v1/campaigns/{c.id}/rolls", json={"expression": "1d6", "hidden": False}, headers=c.gm)
    assert r.status_code == 201, r.text
    assert [e["type"] for e in read_events(client, c.id, c.gm)] == ["log.created"]  # ?follow=false: it closes


def test_issue25_item3_wa_c5_rows_stored_before_strict_booleans_are_still_read(
    client, campaign_factory, character_factory, db_session
):
    """What was stored while booleans were lax (a bundle imported as it was given, say) is still read:
    stored sheets and options are read in lax mode, only request bodies are strict."""
    from sqlalchemy import update

    from app.models.tables import Campaign, Character

    c = campaign_factory(WA)
    hero = character_factory(c, SHEETS[WA])
    options = client.get(f"/v1/campaigns/{c.id}", headers=c.gm).json()["options"]
    flag = next(k for k, v in options.items() if isinstance(v, bool))
    conn = db_session.connection()
    conn.execute(update(Character).where(Character.id == hero["id"]).values(sheet={**SHEETS[WA], "down": "false"}))
    spoiled = {**options, flag: "yes" if options[flag] else "no"}
    conn.execute(update(Campaign).where(Campaign.id == c.id).values(options=spoiled))
    db_session.commit()
    r = client.post(f"/v1/characters/{hero['id']}/tests", json=TEST_BODIES[WA], headers=c.gm)
    assert r.status_code == 201, r.text
    assert r.json()["kind"] == "test", r.text
