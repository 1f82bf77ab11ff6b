"""Issue 25 item 3 (the typed contract), numbers: a number of a JSON request body is a JSON number,
as openapi.json says. An integer field takes a JSON integer (`"2"`, `true` and `2.5` are refused), a
number field any JSON number, integers included (`"2"` and `true` are refused): a boolean is never a
number. Refused with the validation problem (422, `validation_failed`, `errors` at the field) and
nothing written, for every kind of body: campaign options, tests, odds, oppositions, groups,
character actions, sheets, level-ups, imported bundles. Query integers are strings on the wire and
stay lax (`?limit=10`); what was stored before is still read."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from app.models.bundles import CampaignBundle
from tests.api.support import assert_validation
from tests.api.strict_support import lax_spots, put, request_models
from tests.factories import AS, GC, RB, SHEETS, TEST_BODIES, WA, sheet

NOT_INTEGERS = ["2", True, 2.5]
NOT_NUMBERS = ["2", True]


# --- every number of every request body ------------------------------------------------------------


def test_issue25_item3_every_number_of_a_request_body_is_strict():
    models = request_models()
    assert len(models) > 100 and CampaignBundle in models  # the rulesets' bodies, the generic ones, bundles
    lax = [spot for m in models for spot in lax_spots(m.__pydantic_core_schema__, m.__qualname__, {"int", "float"})]
    assert lax == []


# --- campaign options ---------------------------------------------------------------------------

OPTIONS = [  # (ruleset, option, what it refuses, what it takes)
    pytest.param(AS, "gm_difficulty", NOT_INTEGERS, [2, 3], id="as_c6_gm_difficulty"),
    pytest.param(GC, "backlash_after_turns", NOT_INTEGERS, [2, 3], id="gc_p7_backlash_after_turns"),
    pytest.param(GC, "sepulchral_damage_multiplier", NOT_NUMBERS, [2, 2.5], id="gc_p6_sepulchral_damage_multiplier"),
    pytest.param(GC, "backlash_damage_multiplier", NOT_NUMBERS, [2, 2.5], id="gc_p7_backlash_damage_multiplier"),
]


@pytest.mark.parametrize(("ruleset", "option", "loose", "good"), OPTIONS)
def test_as_c6_gc_p6_gc_p7_campaign_options_are_json_numbers_on_create(client, written, ruleset, option, loose, good):
    before = written()
    for value in loose:
        r = client.post("/v1/campaigns", json={"name": "x", "ruleset": ruleset, "options": {option: value}})
        assert_validation(r, [["body", "options", option]])
    assert written() == before
    for value in good:
        r = client.post("/v1/campaigns", json={"name": "x", "ruleset": ruleset, "options": {option: value}})
        assert r.status_code == 201, r.text
        assert r.json()["options"][option] == value


@pytest.mark.parametrize(("ruleset", "option", "loose", "good"), OPTIONS)
def test_as_c6_gc_p6_gc_p7_campaign_options_are_json_numbers_on_patch(
    client, campaign_factory, written, ruleset, option, loose, good
):
    c = campaign_factory(ruleset)
    url = f"/v1/campaigns/{c.id}"
    stored = client.get(url, headers=c.gm).json()
    before = written()
    for value in loose:
        assert_validation(
            client.patch(url, json={"options": {option: value}}, headers=c.gm), [["body", "options", option]]
        )
    assert written() == before
    assert client.get(url, headers=c.gm).json() == stored
    for value in good:
        r = client.patch(url, json={"options": {option: value}}, headers=c.gm)
        assert r.status_code == 200, r.text
        assert r.json()["options"][option] == value


# --- tests, odds, oppositions, groups -----------------------------------------------------------

TEST_NUMBERS = [
    pytest.param(GC, "modifier", id="gc_t1_modifier"),
    pytest.param(AS, "modifier", id="as_t1_modifier"),
    pytest.param(AS, "target", id="as_t2_target"),
    pytest.param(RB, "modifier", id="rb_t1_modifier"),
    pytest.param(WA, "modifier", id="wa_t1_modifier"),
    pytest.param(WA, "target", id="wa_t2_target"),
]


@pytest.mark.parametrize(("ruleset", "field"), TEST_NUMBERS)
def test_gc_t1_as_t1_as_t2_rb_t1_wa_t1_wa_t2_test_and_odds_numbers_are_json_integers(
    client, campaign_factory, character_factory, written, ruleset, field
):
    c = campaign_factory(ruleset)
    hero = character_factory(c, SHEETS[ruleset])
    base = {k: v for k, v in TEST_BODIES[ruleset].items() if k != "difficulty" or field != "target"}
    before = written()
    for loose in NOT_INTEGERS:
        body = {**base, field: loose}
        r = client.post(f"/v1/characters/{hero['id']}/tests", json=body, headers=c.gm)
        assert_validation(r, [["body", field]])
        odds = {k: v for k, v in body.items() if k != "seed"}  # odds roll nothing: no seed
        r = client.post(f"/v1/characters/{hero['id']}/tests/odds", json=odds, headers=c.gm)
        assert_validation(r, [["body", field]])
    assert written() == before
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={**base, field: 12}, headers=c.gm)
    assert r.status_code == 201, r.text


def test_as_t9_an_opposition_modifier_is_a_json_integer(client, campaign_factory, character_factory, written):
    c = campaign_factory(AS)
    a, b = (character_factory(c, SHEETS[AS], name=name)["id"] for name in ("A", "B"))
    url = f"/v1/campaigns/{c.id}/tests/opposed"
    before = written()
    for loose in NOT_INTEGERS:
        body = {
            "a": {"character_id": a, "skill": "combat", "modifier": loose},
            "b": {"character_id": b, "skill": "defense"},
        }
        assert_validation(client.post(url, json={**body, "seed": 1}, headers=c.gm), [["body", "a", "modifier"]])
    assert written() == before
    body = {"a": {"character_id": a, "skill": "combat", "modifier": 2}, "b": {"character_id": b, "skill": "defense"}}
    r = client.post(url, json={**body, "seed": 1}, headers=c.gm)
    assert r.status_code == 201, r.text


def test_rb_c3_a_ranking_participant_modifier_is_a_json_integer(client, campaign_factory, character_factory, written):
    c = campaign_factory(RB)
    a, b = (character_factory(c, SHEETS[RB], name=name)["id"] for name in ("A", "B"))
    url = f"/v1/campaigns/{c.id}/tests/group"
    before = written()
    for loose in NOT_INTEGERS:
        body = {"stat": "FOR", "participants": [{"character_id": a, "modifier": loose}, {"character_id": b}]}
        r = client.post(url, json={**body, "seed": 1}, headers=c.gm)
        assert_validation(r, [["body", "participants", 0, "modifier"]])
    assert written() == before
    body = {"stat": "FOR", "participants": [{"character_id": a, "modifier": 5}, {"character_id": b}]}
    r = client.post(url, json={**body, "seed": 1}, headers=c.gm)
    assert r.status_code == 201, r.text


# --- character actions (asgard) -------------------------------------------------------------------

ACTIONS = [
    pytest.param({"type": "fall", "metres": "?"}, "metres", NOT_NUMBERS, [4, 4.5], id="as_c8_metres"),
    pytest.param({"type": "damage", "amount": "?"}, "amount", NOT_INTEGERS, [3], id="as_c3_amount"),
    pytest.param({"type": "asphyxia", "rounds": "?"}, "rounds", NOT_INTEGERS, [2], id="as_c10_rounds"),
]


@pytest.mark.parametrize(("action", "field", "loose", "good"), ACTIONS)
def test_as_c3_as_c8_as_c10_character_action_numbers_are_json_numbers(
    client, campaign_factory, character_factory, written, action, field, loose, good
):
    c = campaign_factory(AS)
    hero = character_factory(c, SHEETS[AS])
    url = f"/v1/characters/{hero['id']}/actions"
    before = written()
    for value in loose:
        assert_validation(client.post(url, json={**put(action, value), "seed": 1}, headers=c.gm), [["body", field]])
    assert written() == before
    for value in good:
        r = client.post(url, json={**put(action, value), "seed": 1}, headers=c.gm)
        assert r.status_code == 201, r.text


# --- sheets ----------------------------------------------------------------------------------------

SHEET_NUMBERS = [
    pytest.param(GC, {"stats": {**SHEETS[GC]["stats"], "force": "?"}}, ["stats", "force"], id="gc_s1_force"),
    pytest.param(GC, {"hp": "?"}, ["hp"], id="gc_s5_hp"),
    pytest.param(AS, {"skills": {**SHEETS[AS]["skills"], "survie": "?"}}, ["skills", "survie"], id="as_s1_skill"),
    pytest.param(
        AS,
        {"weapons": [{"name": "arc", "damage_dice": "?", "ranged": True}]},
        ["weapons", 0, "damage_dice"],
        id="as_c2_damage_dice",
    ),
    pytest.param(RB, {"stats": {"FOR": "?", "HAB": 60}}, ["stats", "FOR"], id="rb_s1_stat"),
    pytest.param(RB, {"armor": "?"}, ["armor"], id="rb_f3_armor"),
    pytest.param(WA, {"stats": {**SHEETS[WA]["stats"], "FOR": "?"}}, ["stats", "FOR"], id="wa_s1_stat"),
    pytest.param(WA, {"level": "?"}, ["level"], id="wa_s2_level"),
]


@pytest.mark.parametrize(("ruleset", "part", "loc"), SHEET_NUMBERS)
def test_gc_s1_gc_s5_as_s1_as_c2_rb_s1_rb_f3_wa_s1_wa_s2_sheet_numbers_are_json_integers(
    client, campaign_factory, character_factory, written, ruleset, part, loc
):
    c = campaign_factory(ruleset)
    hero = character_factory(c, SHEETS[ruleset])
    url = f"/v1/campaigns/{c.id}/characters"
    before = written()
    for loose in NOT_INTEGERS:
        r = client.post(url, json={"name": "x", "sheet": {**SHEETS[ruleset], **put(part, loose)}}, headers=c.gm)
        assert_validation(r, [["body", "sheet", *loc]])
        r = client.patch(f"/v1/characters/{hero['id']}", json={"sheet": put(part, loose)}, headers=c.gm)
        assert_validation(r, [["body", "sheet", *loc]])
    assert written() == before
    assert client.get(f"/v1/characters/{hero['id']}", headers=c.gm).json() == hero
    r = client.post(url, json={"name": "x", "sheet": {**SHEETS[ruleset], **put(part, 1)}}, headers=c.gm)
    assert r.status_code == 201, r.text
    r = client.patch(f"/v1/characters/{hero['id']}", json={"sheet": put(part, 2)}, headers=c.gm)
    assert r.status_code == 200, r.text


# --- level-ups (great-cosmos) ----------------------------------------------------------------------

LEVEL_UPS = [
    pytest.param(5, {"changes": {"esprit": "?"}}, ["changes", "esprit"], id="gc_l5_changes"),
    pytest.param(
        4,
        {"transfers": [{"from": "charisme", "to": "force", "points": "?"}], "light": 1, "dark": 2},
        ["transfers", 0, "points"],
        id="gc_l4_transfer_points",
    ),
    pytest.param(4, {"light": "?", "dark": 2}, ["light"], id="gc_l4_light"),
]


@pytest.mark.parametrize(("level", "body", "loc"), LEVEL_UPS)
def test_gc_l4_gc_l5_level_up_numbers_are_json_integers(
    client, campaign_factory, character_factory, written, level, body, loc
):
    c = campaign_factory(GC)
    hero = character_factory(c, sheet(GC, level=level))
    url = f"/v1/characters/{hero['id']}/level-ups"
    before = written()
    for loose in NOT_INTEGERS:
        r = client.post(url, json={**put(body, loose), "chance_bonus_pool": "hp", "dice": [70]}, headers=c.gm)
        assert_validation(r, [["body", *loc]])
    assert written() == before
    good = put(body, 1 if loc == ["light"] else 5)
    r = client.post(url, json={**good, "chance_bonus_pool": "hp", "dice": [70]}, headers=c.gm)
    assert r.status_code == 201, r.text


# --- bundles ----------------------------------------------------------------------------------------


@pytest.fixture
def bundle(client, campaign_factory, character_factory) -> dict[str, Any]:
    """A real export: a character, a started encounter (its initiative: the first action)."""
    c = campaign_factory(GC)
    hero = character_factory(c, SHEETS[GC])
    fight = {"name": "x", "combatants": [{"character_id": hero["id"]}]}
    r = client.post(f"/v1/campaigns/{c.id}/encounters", json=fight, headers=c.gm)
    assert r.status_code == 201, r.text
    r = client.post(f"/v1/encounters/{r.json()['id']}/start", json={"seed": 1}, headers=c.gm)
    assert r.status_code == 201, r.text
    exported = client.get(f"/v1/campaigns/{c.id}/export", headers=c.gm).json()
    [encounter] = exported["encounters"]
    numbers = (encounter["round"], encounter["combatants"][0]["ordinal"], encounter["combatants"][0]["initiative"])
    assert all(type(n) is int for n in (*numbers, exported["actions"][0]["seq"])), exported
    return exported


def _spoil(b: dict, loc: list[Any], value: Any) -> dict:
    """The bundle with the number at `loc` replaced by `value` (a copy)."""
    if not loc:
        return value
    head, *rest = loc
    if isinstance(b, list):
        return [_spoil(v, rest, value) if i == head else v for i, v in enumerate(b)]
    return {**b, head: _spoil(b[head], rest, value)}


@pytest.mark.parametrize(
    "loc",
    [
        pytest.param(["campaign", "version"], id="issue25_item3_campaign_version"),
        pytest.param(["characters", 0, "version"], id="issue25_item3_character_version"),
        pytest.param(["encounters", 0, "round"], id="issue25_item3_encounter_round"),
        pytest.param(["encounters", 0, "combatants", 0, "ordinal"], id="issue25_item3_combatant_ordinal"),
        pytest.param(["encounters", 0, "combatants", 0, "initiative"], id="issue25_item3_combatant_initiative"),
        pytest.param(["actions", 0, "seq"], id="issue25_item3_action_seq"),
        pytest.param(["characters", 0, "sheet", "hp"], id="gc_s5_character_sheet_hp"),
    ],
)
def test_issue25_item3_an_imported_bundle_holds_json_integers(client, bundle, written, loc):
    before = written()
    for loose in NOT_INTEGERS:
        assert_validation(client.post("/v1/campaigns/import", json=_spoil(bundle, loc, loose)), [["body", *loc]])
    assert written() == before
    r = client.post("/v1/campaigns/import", params={"dry_run": "true"}, json=bundle)  # its own integers
    assert r.status_code == 200 and r.json()["valid"] is True, r.text
    r = client.post("/v1/campaigns/import", params={"dry_run": "true"}, json=_spoil(bundle, loc, 7))
    assert r.status_code == 200 and r.json()["valid"] is True, r.text


def test_issue25_item3_a_character_bundle_version_is_a_json_integer(
    client, campaign_factory, character_factory, written
):
    c = campaign_factory(GC)
    hero = character_factory(c, SHEETS[GC])
    exported = client.get(f"/v1/characters/{hero['id']}/export", headers=c.gm).json()
    url = f"/v1/campaigns/{c.id}/characters/import"
    before = written()
    for loose in NOT_INTEGERS:
        r = client.post(url, json=_spoil(exported, ["character", "version"], loose), headers=c.gm)
        assert_validation(r, [["body", "character", "version"]])
    assert written() == before
    r = client.post(url, json=exported, headers=c.gm)
    assert r.status_code == 201, r.text


# --- query integers, stored rows --------------------------------------------------------------------


def test_issue25_item3_limit_stays_a_query_string(client, campaign_factory):
    c = campaign_factory(GC)
    for _ in range(3):
        r = client.post(f"/v1/campaigns/{c.id}/rolls", json={"expression": "1d6"}, headers=c.gm)
        assert r.status_code == 201, r.text
    r = client.get(f"/v1/campaigns/{c.id}/rolls", params={"limit": "2"}, headers=c.gm)
    assert r.status_code == 200, r.text
    assert len(r.json()["items"]) == 2 and r.json()["next_cursor"] is not None
    r = client.get(f"/v1/campaigns/{c.id}/encounters", params={"limit": "10"}, headers=c.gm)
    assert r.status_code == 200 and r.json()["items"] == [], r.text


def test_issue25_item3_gc_p7_rows_stored_before_strict_numbers_are_still_read(
    client, campaign_factory, character_factory, db_session
):
    """What was stored while numbers were lax (a bundle imported as it was given, say) is still read:
    stored sheets and options are read in lax mode, only request bodies are strict."""
    from sqlalchemy import update

    from app.models.tables import Campaign, Character

    c = campaign_factory(GC)
    hero = character_factory(c, SHEETS[GC])
    options = client.get(f"/v1/campaigns/{c.id}", headers=c.gm).json()["options"]
    conn = db_session.connection()
    spoiled_sheet = {**SHEETS[GC], "hp": "90", "stats": {**SHEETS[GC]["stats"], "force": 68.0}}
    conn.execute(update(Character).where(Character.id == hero["id"]).values(sheet=spoiled_sheet))
    spoiled = {**options, "backlash_after_turns": "3", "sepulchral_damage_multiplier": "2.5"}
    conn.execute(update(Campaign).where(Campaign.id == c.id).values(options=spoiled))
    db_session.commit()
    r = client.post(f"/v1/characters/{hero['id']}/tests", json=TEST_BODIES[GC], headers=c.gm)
    assert r.status_code == 201, r.text
    assert (r.json()["kind"], r.json()["target"]) == ("test", 68), r.text
    # edits that never name those values are not refused for them (the stored form is read, then patched)
    r = client.patch(f"/v1/campaigns/{c.id}", json={"options": {"inventory_rules": False}}, headers=c.gm)
    assert r.status_code == 200, r.text
    assert (r.json()["options"]["backlash_after_turns"], r.json()["options"]["inventory_rules"]) == (3, False)
    r = client.patch(f"/v1/characters/{hero['id']}", json={"sheet": {"mp": 10}}, headers=c.gm)
    assert r.status_code == 200, r.text
    assert (r.json()["sheet"]["mp"], r.json()["sheet"]["hp"], r.json()["sheet"]["stats"]["force"]) == (10, 90, 68)
