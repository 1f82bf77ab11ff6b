"""Issue 12, rules fidelity through HTTP, with table dice: the items a client sees
(GC-I4, GC-T2, GC-S6, GC-S9, RB-C2, RB-T6, AS-C5 with the AS-C9/AS-C10 actions)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from tests.factories import AS, GC, RB, SHEETS, sheet

GC_SHEET, RB_SHEET = SHEETS[GC], SHEETS[RB]
AS_SHEET = sheet(AS, skills={"combat": 6, "defense": 4, "resistance": 3, "volonte": 1}, weapons=[], assets=[])


def error_locs(r):
    return [e["loc"] for e in r.json().get("errors", [])]


def new_character(client, camp, sheet, name="Hero"):
    return client.post(
        f"/v1/campaigns/{camp.id}/characters", headers=camp.gm, json={"name": name, "kind": "pc", "sheet": sheet}
    )


# --- Great Cosmos ---------------------------------------------------------------------------------


def test_gc_i4_an_entry_of_two_two_handed_weapons_is_refused(client, campaign_factory):
    camp = campaign_factory("great-cosmos")
    axes = {"items": [{"name": "Haches", "kind": "two_handed_weapon", "slots": 4, "quantity": 2}]}
    r = new_character(client, camp, {**GC_SHEET, "inventory": axes})
    assert r.status_code == 422, r.text
    assert ["body", "sheet", "inventory", "items"] in error_locs(r)
    one = {
        "items": [
            {"name": "Hache", "kind": "two_handed_weapon", "slots": 4, "quantity": 1},
            {"name": "Potion", "slots": 1, "quantity": 3},
        ]
    }
    r = new_character(client, camp, {**GC_SHEET, "inventory": one})
    assert r.status_code == 201, r.text
    assert r.json()["derived"]["inventory"]["used"] == 7  # 4 + 3 x 1


def test_gc_t2_extreme_scores_conversion_is_off_by_default(client, campaign_factory, character_factory):
    camp = campaign_factory("great-cosmos")
    assert camp.body["options"]["extreme_scores"] is False
    c = character_factory(camp, {**GC_SHEET, "karma": -6})
    r = client.post(f"/v1/characters/{c['id']}/tests", headers=camp.gm, json={"stat": "force", "dice": [95, 6]})
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["score"], body["outcome"], body["effects"]["karma"]["after"]) == (101, "critical_failure", -5)
    odds = client.post(f"/v1/characters/{c['id']}/tests/odds", headers=camp.gm, json={"stat": "force"}).json()
    assert Fraction(odds["outcomes"]["super_critical_failure"]["probability"]) == Fraction(20, 1000)
    # the GM may opt in
    camp_on = campaign_factory("great-cosmos", {"extreme_scores": True})
    c = character_factory(camp_on, {**GC_SHEET, "karma": -6})
    r = client.post(f"/v1/characters/{c['id']}/tests", headers=camp_on.gm, json={"stat": "force", "dice": [95, 6]})
    assert r.json()["outcome"] == "super_critical_failure"


def test_gc_s6_the_gm_grants_light_and_dark_points_at_level_2(client, campaign_factory, character_factory):
    camp = campaign_factory("great-cosmos")
    c = character_factory(camp, GC_SHEET)
    r = client.post(
        f"/v1/characters/{c['id']}/level-ups",
        headers=camp.gm,
        json={"mode": "one_d20", "stats": ["force"], "light": 2, "dark": 0, "chance_bonus_pool": "hp", "dice": [5, 70]},
    )
    assert r.status_code == 201, r.text
    assert {"field": "light_points", "before": 1, "after": 3, "dice": []} in r.json()["changes"]
    sheet = client.get(f"/v1/characters/{c['id']}", headers=camp.gm).json()["sheet"]
    assert (sheet["level"], sheet["light_points"], sheet["dark_points"]) == (2, 3, 1)


@pytest.mark.parametrize(
    "final_skill,loc",
    [
        ({"name": "Aube", "punchline": "Que la lumière soit !", "cost_kind": "light", "cost_points": 0}, "cost_points"),
        ({"name": "Aube", "cost_kind": "light", "cost_points": 2}, "punchline"),
        ({"name": "Aube", "punchline": "  ", "cost_kind": "light", "cost_points": 2}, "punchline"),
    ],
)
def test_gc_s9_a_final_skill_costs_at_least_1_point_and_needs_its_punchline(client, campaign_factory, final_skill, loc):
    camp = campaign_factory("great-cosmos")
    r = new_character(client, camp, {**GC_SHEET, "level": 5, "final_skill": final_skill})
    assert r.status_code == 422, r.text
    assert ["body", "sheet", "final_skill", loc] in error_locs(r)
    ok = {"name": "Aube", "punchline": "Que la lumière soit !", "cost_kind": "light", "cost_points": 1}
    assert new_character(client, camp, {**GC_SHEET, "level": 5, "final_skill": ok}).status_code == 201


# --- Rulebook D100 ----------------------------------------------------------------------------------


@pytest.fixture
def rb_camp(campaign_factory):
    return campaign_factory("rulebook-d100")


def opposed(client, camp, body):
    r = client.post(f"/v1/campaigns/{camp.id}/tests/opposed", json=body, headers=camp.gm)
    assert r.status_code == 201, r.text
    return r.json()


def test_rb_c2_a_success_beats_a_failure_at_equal_level(client, rb_camp, character_factory):
    a = character_factory(rb_camp, RB_SHEET, name="A")
    b = character_factory(rb_camp, RB_SHEET, name="B")
    # a: 50 - 5 = 45, rolls 45: success, level 0, units 5; b: 50 - 8 = 42, rolls 43: failure, level 0, units 3
    body = opposed(
        client,
        rb_camp,
        {
            "a": {"character_id": a["id"], "stat": "FOR", "modifier": -5},
            "b": {"character_id": b["id"], "stat": "FOR", "modifier": -8},
            "dice": [45, 43],
        },
    )
    assert (body["a"]["success_level"], body["b"]["success_level"]) == (0, 0)
    assert (body["winner"], body["winner_id"], body["tiebreak"]) == ("a", a["id"], "success")


def test_rb_c2_a_100_never_wins_on_its_units_digit(client, rb_camp, character_factory):
    sheet = {**RB_SHEET, "crit_chance": 0}
    a = character_factory(rb_camp, sheet, name="A")
    b = character_factory(rb_camp, sheet, name="B")
    # a: 50 + 55 = 105, rolls 100: success, level 0, units 0; b: 45, rolls 41: success, level 0, units 1
    body = opposed(
        client,
        rb_camp,
        {
            "a": {"character_id": a["id"], "stat": "FOR", "modifier": 55},
            "b": {"character_id": b["id"], "stat": "FOR", "modifier": -5},
            "dice": [100, 41],
        },
    )
    assert (body["a"]["outcome"], body["a"]["success_level"], body["b"]["success_level"]) == ("success", 0, 0)
    assert (body["winner"], body["tiebreak"]) == ("b", "units")


def test_rb_c2_tiebreak_false_gives_a_draw(client, rb_camp, character_factory):
    a = character_factory(rb_camp, RB_SHEET, name="A")
    b = character_factory(rb_camp, RB_SHEET, name="B")
    body = opposed(
        client,
        rb_camp,
        {
            "a": {"character_id": a["id"], "stat": "FOR"},
            "b": {"character_id": b["id"], "stat": "FOR"},
            "tiebreak": False,
            "dice": [33, 38],
        },
    )
    assert (body["winner"], body["winner_id"], body["tiebreak"]) == (None, None, "draw")
    assert [r["purpose"] for r in body["rolls"]] == ["a: test", "b: test"]


def test_rb_t6_a_negative_stat_keeps_its_critical_success_with_the_option_off(
    client, campaign_factory, character_factory
):
    camp = campaign_factory("rulebook-d100", {"crit_success_rescues_negative": False})
    c = character_factory(camp, {**RB_SHEET, "stats": {"FOR": -10, "HAB": 20}})
    r = client.post(f"/v1/characters/{c['id']}/tests", headers=camp.gm, json={"stat": "FOR", "dice": [3]})
    assert r.status_code == 201, r.text
    assert (r.json()["target"], r.json()["outcome"]) == (-10, "critical_success")
    # made negative by the difficulty (20 - 30 = -10): the option refuses the rescue
    r = client.post(
        f"/v1/characters/{c['id']}/tests", headers=camp.gm, json={"stat": "HAB", "difficulty": "difficile", "dice": [3]}
    )
    assert (r.json()["target"], r.json()["outcome"]) == (-10, "failure")


# --- Asgard ------------------------------------------------------------------------------------------------


def act(client, camp, ch, body):
    r = client.post(f"/v1/characters/{ch['id']}/actions", json=body, headers=camp.gm)
    assert r.status_code == 201, r.text
    return r.json()


def test_as_c9_fire_mal_en_point_difficulty_is_5_plus_the_round_that_brought_vitality_to_0(
    client, campaign_factory, character_factory
):
    camp = campaign_factory("asgard")
    c = character_factory(camp, {**AS_SHEET, "vitality": 8})
    # torch, 3 rounds: 3, 4, 2 → 8 → 5 → 1 → 0: the third round (2) did it → checks vs 5 + 2 = 7
    # resistance 3 + 2+2+2 = 9 holds; volonte 1 + 1+2+2 = 6 fails → unconscious 3 + 4 rounds
    out = act(
        client, camp, c, {"type": "fire", "size": "torch", "rounds": 3, "dice": [3, 4, 2, 2, 2, 2, 1, 2, 2, 3, 4]}
    )
    checks = out["effects"]["mal_en_point"]
    assert out["damage"] == 9
    assert (checks["damage"], checks["resistance"]["target"], checks["dying"]) == (2, 7, False)
    assert (checks["volonte"]["target"], checks["unconscious_rounds"]) == (7, 7)


def test_as_c10_asphyxia_mal_en_point_difficulty_is_5_plus_the_round_that_brought_vitality_to_0(
    client, campaign_factory, character_factory
):
    camp = campaign_factory("asgard")
    c = character_factory(camp, {**AS_SHEET, "vitality": 6})
    # out of breath: 2, 5, 4 → 6 → 4 → 0 in the second round (5) → checks vs 10
    # resistance 3 + 3+3+3 = 12 and volonte 1 + 3+3+3 = 10 both hold
    out = act(
        client,
        camp,
        c,
        {"type": "asphyxia", "rounds": 3, "from_round": 20, "out_of_breath": True, "dice": [2, 5, 4, 3, 3, 3, 3, 3, 3]},
    )
    checks = out["effects"]["mal_en_point"]
    assert out["damage"] == 11
    assert (checks["damage"], checks["resistance"]["target"], checks["dying"]) == (5, 10, False)
    assert (checks["volonte"]["success"], checks["unconscious_rounds"]) == (True, None)
