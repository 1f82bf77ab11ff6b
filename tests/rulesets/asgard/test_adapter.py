"""Asgard over HTTP: sheets, tests, odds, heroism, retries, rerolls, opposition, cooperation."""

from fractions import Fraction

import pytest

from tests.factories import AS, sheet as asgard_sheet

# three skills and no asset: what the tests below count on (other skills are 0, no heroic effect)
SHEET = asgard_sheet(AS, skills={"combat": 6, "defense": 4, "survie": 3}, assets=[])


@pytest.fixture
def ruleset():
    return AS


@pytest.fixture
def hero_sheet():
    return SHEET


def sheet(**changes):
    """This module's sheet, these fields changed."""
    return {**SHEET, **changes}


def post_test(client, campaign, ch, body, status=201):
    r = client.post(f"/v1/characters/{ch['id']}/tests", json=body, headers=campaign.gm)
    assert r.status_code == status, r.text
    return r.json()


def stored(client, campaign, ch):
    return client.get(f"/v1/characters/{ch['id']}", headers=campaign.gm).json()["sheet"]


# --- sheet -------------------------------------------------------------------


# rule: AS-S4
def test_as_s4_sheet_json_is_stored_with_defaults_and_derived(hero):
    assert {k: hero["sheet"][k] for k in SHEET} == SHEET
    assert hero["sheet"]["condition"] == {
        "dying": False,
        "dies_in_rounds": None,
        "unconscious_rounds": None,
        "dead": False,
    }
    assert hero["derived"]["mal_en_point"] is False
    assert hero["derived"]["skills"]["perception"] == 0
    assert hero["derived"]["weapons"] == [{"name": "epee", "damage": "2d6", "ranged": False}]


def test_as_s1_skill_names_are_normalized_and_values_bounded(client, campaign, character_factory):
    ch = character_factory(campaign, sheet(skills={"Défense": 4, "Volonté": 2}))
    assert ch["sheet"]["skills"] == {"defense": 4, "volonte": 2}
    r = client.post(
        f"/v1/campaigns/{campaign.id}/characters",
        json={"name": "X", "kind": "pc", "sheet": sheet(skills={"combat": 99})},
        headers=campaign.gm,
    )
    assert r.status_code == 422


# rule: AS-S2
def test_as_s2_vitality_defaults_to_max_and_never_above_it(client, campaign, character_factory):
    raw = {k: v for k, v in SHEET.items() if k != "vitality"}
    assert character_factory(campaign, raw)["sheet"]["vitality"] == 20
    r = client.post(
        f"/v1/campaigns/{campaign.id}/characters",
        json={"name": "X", "kind": "pc", "sheet": sheet(vitality=21)},
        headers=campaign.gm,
    )
    assert r.status_code == 422
    r = client.post(
        f"/v1/campaigns/{campaign.id}/characters",
        json={"name": "X", "kind": "pc", "sheet": sheet(weapons=[{"name": "hache", "damage_dice": 4}])},
        headers=campaign.gm,
    )
    assert r.status_code == 422


# rule: AS-S3
def test_as_s3_tier_only_for_npcs(client, campaign, character_factory):
    npc = character_factory(campaign, sheet(tier="second_couteau"), kind="npc")
    assert npc["sheet"]["tier"] == "second_couteau"
    r = client.post(
        f"/v1/campaigns/{campaign.id}/characters",
        json={"name": "X", "kind": "pc", "sheet": sheet(tier="boss")},
        headers=campaign.gm,
    )
    assert r.status_code == 422


def test_as_t2_ruleset_description(client):
    body = client.get("/v1/rulesets/asgard").json()
    assert body["difficulties"] == {"facile": 10, "moyen": 15, "difficile": 20, "heroique": 25, "automatique": None}
    assert "survie" in body["skills"]
    assert body["heroism_spends"]["cancel_damage"]["cost"] == 2


# --- tests ---------------------------------------------------------------------


def test_as_t1_test_with_table_dice(client, campaign, hero):
    body = post_test(client, campaign, hero, {"skill": "survie", "difficulty": "moyen", "dice": [3, 4, 5]})
    assert (body["natural"], body["score"], body["target"], body["outcome"], body["success"]) == (
        12,
        15,
        15,
        "success",
        True,
    )
    assert body["rolls"] == [{"die": "d6", "value": v, "purpose": "test"} for v in (3, 4, 5)]
    assert (body["kind"], body["ruleset"], body["degree"]) == ("test", "asgard", None)
    body = post_test(client, campaign, hero, {"skill": "survie", "target": 17, "modifier": 1, "dice": [3, 4, 5]})
    assert (body["score"], body["target"], body["outcome"]) == (16, 17, "failure")


def test_as_t2_automatique_is_a_success_without_dice(client, campaign, hero):
    body = post_test(client, campaign, hero, {"skill": "survie", "difficulty": "automatique"})
    assert (body["outcome"], body["natural"], body["rolls"]) == ("success", None, [])


def test_as_t3_automatic_results_are_critical(client, campaign, hero):
    body = post_test(client, campaign, hero, {"skill": "combat", "difficulty": "facile", "dice": [1, 1, 1]})
    assert (body["score"], body["outcome"], body["success"]) == (9, "critical_failure", False)
    body = post_test(client, campaign, hero, {"skill": "survie", "target": 40, "dice": [6, 6, 6]})
    assert (body["score"], body["outcome"], body["success"]) == (21, "critical_success", True)


def test_as_t5_open_test_fills_the_degree(client, campaign, hero):
    body = post_test(client, campaign, hero, {"skill": "survie", "dice": [6, 5, 6]})
    assert (body["target"], body["score"], body["degree"], body["outcome"]) == (None, 20, "difficile", "success")


def test_as_t7_close_skill_raises_the_difficulty(client, campaign, hero):
    body = post_test(
        client, campaign, hero, {"skill": "survie", "difficulty": "moyen", "close_skill": True, "dice": [5, 5, 4]}
    )
    assert (body["score"], body["target"], body["outcome"]) == (17, 20, "failure")


# rule: AS-T8
def test_as_t8_take_11_only_for_npcs(client, campaign, hero, character_factory):
    npc = character_factory(campaign, sheet(tier="figurant"), kind="npc", name="Brigand")
    body = post_test(client, campaign, npc, {"skill": "combat", "difficulty": "moyen", "take_11": True})
    assert (body["natural"], body["score"], body["outcome"], body["rolls"]) == (11, 17, "success", [])
    post_test(client, campaign, hero, {"skill": "combat", "take_11": True}, status=422)
    post_test(client, campaign, npc, {"skill": "combat", "take_11": True, "heroism_4d6": True}, status=422)


def test_as_t1_bad_requests_are_422(client, campaign, hero):
    post_test(client, campaign, hero, {"skill": "forge", "dice": [1, 2, 3]}, status=422)
    post_test(client, campaign, hero, {"skill": "survie", "difficulty": "moyen", "target": 12}, status=422)
    post_test(client, campaign, hero, {"skill": "survie", "stat": "x"}, status=422)
    post_test(client, campaign, hero, {"skill": "survie", "dice": [1, 2]}, status=422)
    post_test(client, campaign, hero, {"skill": "survie", "dice": [1, 2, 3, 4]}, status=422)


# --- heroism -------------------------------------------------------------------


def test_as_h1_4d6_spends_one_heroism_in_the_same_transaction(client, campaign, hero):
    body = post_test(
        client,
        campaign,
        hero,
        {"skill": "survie", "difficulty": "difficile", "heroism_4d6": True, "dice": [5, 4, 3, 6]},
    )
    assert (body["natural"], body["score"], body["outcome"]) == (18, 21, "success")
    assert [r["purpose"] for r in body["rolls"]] == ["test", "test", "test", "heroism"]
    assert body["effects"] == {"heroism": {"before": 3, "after": 2}}
    assert stored(client, campaign, hero)["heroism"] == 2


# rule: AS-H6
def test_as_h6_unaffordable_4d6_is_409_nothing_rolled_nothing_spent(client, campaign, character_factory, count_rows):
    poor = character_factory(campaign, sheet(heroism=0))
    before = count_rows("roll_log", campaign_id=campaign.id)
    r = client.post(
        f"/v1/characters/{poor['id']}/tests",
        json={"skill": "survie", "heroism_4d6": True, "dice": [1, 2, 3, 4]},
        headers=campaign.gm,
    )
    assert r.status_code == 409
    assert count_rows("roll_log", campaign_id=campaign.id) == before
    assert stored(client, campaign, poor)["heroism"] == 0


def test_as_t4_retry_without_improvement_fails_automatically_without_dice(client, campaign, hero):
    failed = post_test(client, campaign, hero, {"skill": "survie", "difficulty": "moyen", "dice": [1, 2, 3]})
    retry = post_test(client, campaign, hero, {"skill": "survie", "difficulty": "moyen", "retry_of": failed["id"]})
    assert (retry["outcome"], retry["success"], retry["natural"], retry["rolls"]) == ("failure", False, None, [])
    assert (retry["automatic"], retry["retry_of"]) == ("retry_without_improvement", failed["id"])
    # dice sent for a retry that rolls nothing are left over
    post_test(
        client,
        campaign,
        hero,
        {"skill": "survie", "difficulty": "moyen", "retry_of": failed["id"], "dice": [6, 6, 6]},
        status=422,
    )


def test_as_t4_retry_with_improvement_rolls_normally(client, campaign, hero):
    failed = post_test(client, campaign, hero, {"skill": "survie", "difficulty": "moyen", "dice": [1, 2, 3]})
    better = post_test(
        client,
        campaign,
        hero,
        {"skill": "survie", "difficulty": "moyen", "modifier": 2, "retry_of": failed["id"], "dice": [4, 4, 2]},
    )
    assert (better["score"], better["outcome"]) == (15, "success")
    # AS-T4 (Decision): the exact odds decide; a declared `improved` is no field of the request
    post_test(
        client,
        campaign,
        hero,
        {"skill": "survie", "difficulty": "moyen", "improved": True, "retry_of": failed["id"], "dice": [4, 4, 2]},
        status=422,
    )


def test_as_t4_retry_of_must_name_a_failed_test_of_this_character(client, campaign, hero, character_factory):
    success = post_test(client, campaign, hero, {"skill": "survie", "difficulty": "facile", "dice": [6, 5, 4]})
    post_test(client, campaign, hero, {"skill": "survie", "retry_of": success["id"], "modifier": 5}, status=422)
    post_test(client, campaign, hero, {"skill": "survie", "retry_of": "nope"}, status=422)
    other = character_factory(campaign, SHEET, name="Other")
    failed = post_test(client, campaign, other, {"skill": "survie", "difficulty": "moyen", "dice": [1, 2, 3]})
    r = client.post(
        f"/v1/characters/{hero['id']}/tests", json={"skill": "survie", "retry_of": failed["id"]}, headers=campaign.gm
    )
    assert r.status_code == 422 and "retry_of" in r.text


def test_as_h2_reroll_spends_one_heroism_and_links_the_cancelled_test(client, campaign, hero):
    first = post_test(client, campaign, hero, {"skill": "survie", "difficulty": "moyen", "dice": [1, 2, 3]})
    r = client.post(
        f"/v1/characters/{hero['id']}/tests/{first['id']}/reroll", json={"dice": [5, 5, 4]}, headers=campaign.gm
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["kind"], body["rerolls"], body["score"], body["target"], body["outcome"]) == (
        "test",
        first["id"],
        17,
        15,
        "success",
    )
    assert body["effects"] == {"heroism": {"before": 3, "after": 2}}
    assert stored(client, campaign, hero)["heroism"] == 2


# rule: AS-H6
def test_as_h2_as_h6_reroll_without_heroism_is_409(client, campaign, character_factory):
    poor = character_factory(campaign, sheet(heroism=0))
    first = post_test(client, campaign, poor, {"skill": "survie", "difficulty": "moyen", "dice": [1, 2, 3]})
    r = client.post(
        f"/v1/characters/{poor['id']}/tests/{first['id']}/reroll", json={"dice": [5, 5, 4]}, headers=campaign.gm
    )
    assert r.status_code == 409


# --- odds ----------------------------------------------------------------------


def test_as_t1_t3_odds_exact(client, campaign, hero):
    r = client.post(
        f"/v1/characters/{hero['id']}/tests/odds", json={"skill": "survie", "difficulty": "moyen"}, headers=campaign.gm
    )
    assert r.status_code == 200, r.text
    out = r.json()["outcomes"]
    # 3d6 >= 12 without the automatic 6-6-6: 81/216 - 1/216
    assert out["success"]["probability"] == str(Fraction(80, 216))
    assert out["critical_success"]["probability"] == "1/216"
    assert out["critical_failure"]["probability"] == "1/216"
    assert out["super_critical_success"]["p"] == 0 and out["super_critical_failure"]["p"] == 0


def test_as_h1_t5_odds_with_4d6_and_open_degree(client, campaign, hero):
    r = client.post(
        f"/v1/characters/{hero['id']}/tests/odds", json={"skill": "survie", "heroism_4d6": True}, headers=campaign.gm
    )
    body = r.json()
    assert body["outcomes"]["critical_success"]["probability"] == "7/432"
    assert sum(Fraction(v["probability"]) for v in body["degree"].values()) == 1


# rule: AS-T8
def test_as_t8_take_11_is_gm_only_and_cannot_be_rerolled(client, campaign, character_factory, player_factory):
    player = player_factory(campaign)
    npc = character_factory(campaign, sheet(tier="figurant"), kind="npc", name="Brigand", player=player)
    r = client.post(
        f"/v1/characters/{npc['id']}/tests", json={"skill": "combat", "take_11": True}, headers=player.headers
    )
    assert r.status_code == 403
    took = post_test(client, campaign, npc, {"skill": "combat", "difficulty": "difficile", "take_11": True})
    r = client.post(f"/v1/characters/{npc['id']}/tests/{took['id']}/reroll", json={}, headers=campaign.gm)
    assert r.status_code == 422


# rule: AS-T8
def test_as_t8_odds_of_take_11_are_certain(client, campaign, character_factory):
    npc = character_factory(campaign, sheet(tier="boss"), kind="npc", name="Jarl")
    r = client.post(
        f"/v1/characters/{npc['id']}/tests/odds",
        json={"skill": "combat", "target": 17, "take_11": True},
        headers=campaign.gm,
    )
    assert r.json()["outcomes"]["success"]["p"] == 1.0


def test_as_t4_odds_of_a_retry_without_improvement_are_a_certain_failure(client, campaign, hero):
    failed = post_test(client, campaign, hero, {"skill": "survie", "difficulty": "moyen", "dice": [1, 2, 3]})
    r = client.post(
        f"/v1/characters/{hero['id']}/tests/odds",
        json={"skill": "survie", "difficulty": "moyen", "retry_of": failed["id"]},
        headers=campaign.gm,
    )
    assert r.json()["outcomes"]["failure"]["p"] == 1.0


def test_as_t1_seeded_test_is_reproducible(client, campaign, hero):
    a = post_test(client, campaign, hero, {"skill": "survie", "seed": 42})
    b = post_test(client, campaign, hero, {"skill": "survie", "seed": 42})
    assert [r["value"] for r in a["rolls"]] == [r["value"] for r in b["rolls"]]
    assert a["score"] == b["score"] and a["degree"] == b["degree"]


# rule: AS-H2
def test_as_h2_a_test_is_cancelled_and_rolled_again_once_only(client, campaign, character_factory, count_rows):
    """AS-H2 cancels the test just made: a second reroll of the same test is a 409, nothing spent or logged."""
    ch = character_factory(campaign, {"skills": {"survie": 3}, "vitality": 20, "vitality_max": 20, "heroism": 3})
    first = client.post(
        f"/v1/characters/{ch['id']}/tests",
        json={"skill": "survie", "difficulty": "moyen", "dice": [2, 3, 4]},
        headers=campaign.gm,
    ).json()
    again = client.post(
        f"/v1/characters/{ch['id']}/tests/{first['id']}/reroll", json={"dice": [5, 5, 5]}, headers=campaign.gm
    )
    assert again.status_code == 201, again.text
    assert again.json()["rerolls"] == first["id"]
    rows = count_rows("roll_log")
    twice = client.post(
        f"/v1/characters/{ch['id']}/tests/{first['id']}/reroll", json={"dice": [6, 6, 6]}, headers=campaign.gm
    )
    assert twice.status_code == 409 and twice.json()["rerolled_by"] == again.json()["id"]
    assert count_rows("roll_log") == rows
    assert client.get(f"/v1/characters/{ch['id']}", headers=campaign.gm).json()["sheet"]["heroism"] == 2
