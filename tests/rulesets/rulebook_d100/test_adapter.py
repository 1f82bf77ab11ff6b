"""HTTP tests of the rulebook-d100 ruleset (rulebook-d100.md), driven by table dice."""

from __future__ import annotations

import pytest

from tests.factories import RB, SHEETS


@pytest.fixture
def ruleset():
    return RB


def run(client, campaign, hero, body, status=201):
    r = client.post(f"/v1/characters/{hero['id']}/tests", json=body, headers=campaign.gm)
    assert r.status_code == status, r.text
    return r.json()


def odds(client, campaign, hero, body):
    r = client.post(f"/v1/characters/{hero['id']}/tests/odds", json=body, headers=campaign.gm)
    assert r.status_code == 200, r.text
    return r.json()


# --- sheet and catalogue ----------------------------------------------------------------


# rule: RB-S3
def test_rb_s3_sheet_is_stored_as_given_with_derived(client, campaign, hero):
    assert hero["sheet"] == {**SHEETS[RB], "weapons": []}
    assert hero["derived"]["critical_success"] == {"max_roll": 5}
    assert hero["derived"]["critical_failure"] == {"min_roll": 96}
    assert hero["derived"]["weakened_stats"] == {"FOR": 25, "HAB": 30}


# rule: RB-F1
def test_rb_f1_default_sheet_has_the_ten_stats_at_50(campaign, character_factory):
    ch = character_factory(campaign, {})
    assert ch["sheet"]["stats"] == {
        s: 50 for s in ("FOR", "CON", "HAB", "INT", "SAG", "VOL", "CHA", "DIS", "REL", "PER")
    }
    assert ch["sheet"]["crit_chance"] == 5


# rule: RB-S1
def test_rb_s1_invalid_sheet_is_a_422(client, campaign):
    for bad in ({"stats": {"FOR": "x"}}, {"crit_chance": 60}, {"stats": {}}, {"mana": 3}, {"hp": 20, "hp_max": 10}):
        r = client.post(
            f"/v1/campaigns/{campaign.id}/characters",
            json={"name": "X", "kind": "pc", "sheet": bad},
            headers=campaign.gm,
        )
        assert r.status_code == 422, (bad, r.text)


# rule: RB-S2
def test_rb_s2_weapon_damage_must_be_a_dice_expression(client, campaign):
    sheet = {**SHEETS[RB], "weapons": [{"name": "epee", "damage": "2d6+1", "kind": "melee"}]}
    r = client.post(
        f"/v1/campaigns/{campaign.id}/characters", json={"name": "X", "kind": "pc", "sheet": sheet}, headers=campaign.gm
    )
    assert r.status_code == 201, r.text
    sheet["weapons"][0]["damage"] = "2 swords"
    r = client.post(
        f"/v1/campaigns/{campaign.id}/characters", json={"name": "X", "kind": "pc", "sheet": sheet}, headers=campaign.gm
    )
    assert r.status_code == 422


def test_rb_t2_ruleset_catalogue(client):
    r = client.get(f"/v1/rulesets/{RB}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["difficulties"]["difficile"] == -30
    assert set(body["special_difficulties"]) == {"impossible", "quasi_impossible", "quasi_inratable", "inratable"}


# --- tests --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pct, die, level, outcome",
    [
        (40, 51, -1, "failure"),
        (80, 34, 5, "success"),
        (75, 74, 0, "success"),
        (75, 78, 0, "failure"),
        (120, 22, 10, "success"),
        (-25, 90, -11, "failure"),
    ],
)
def test_rb_t4_seed_table_through_http(client, campaign, character_factory, pct, die, level, outcome):
    ch = character_factory(campaign, {"stats": {"X": 50}, "crit_chance": 0})
    body = run(client, campaign, ch, {"stat": "X", "modifier": pct - 50, "dice": [die]})
    assert (body["target"], body["natural"], body["score"], body["success_level"], body["outcome"]) == (
        pct,
        die,
        die,
        level,
        outcome,
    )
    assert body["rolls"] == [{"die": "d100", "value": die, "purpose": "test"}]
    assert body["kind"] == "test" and body["ruleset"] == RB


def test_rb_t1_skill_and_difficulty(client, campaign, hero):
    body = run(client, campaign, hero, {"stat": "FOR", "skill": "escrime", "difficulty": "difficile", "dice": [40]})
    assert (body["target"], body["outcome"], body["success_level"]) == (50 + 20 - 30, "success", 0)


def test_rb_t1_weakened_roll_and_missing_skill_is_weakened(client, campaign, hero):
    body = run(client, campaign, hero, {"stat": "HAB", "weakened": True, "dice": [31]})
    assert (body["target"], body["outcome"]) == (30, "failure")
    body = run(client, campaign, hero, {"stat": "HAB", "skill": "crochetage", "dice": [31]})
    assert (body["target"], body["weakened"], body["skill_missing"], body["outcome"]) == (30, True, True, "failure")


def test_rb_t1_unknown_stat_and_unused_fields_are_422(client, campaign, hero):
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "MAGIE", "dice": [3]}, headers=campaign.gm)
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == ["body", "stat"]
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "FOR", "target": 40}, headers=campaign.gm)
    assert r.status_code == 422
    r = client.post(
        f"/v1/characters/{hero['id']}/tests", json={"stat": "FOR", "difficulty": "moyenne"}, headers=campaign.gm
    )
    assert r.status_code == 422


def test_rb_t5_critical_failure_doubles_negative(client, campaign, hero):
    body = run(client, campaign, hero, {"stat": "FOR", "difficulty": "simplissime", "modifier": -30, "dice": [98]})
    assert (body["target"], body["outcome"], body["success_level"], body["success"]) == (
        120,
        "critical_failure",
        -6,
        False,
    )


def test_rb_t5_critical_success_doubles_positive(client, campaign, hero):
    body = run(client, campaign, hero, {"stat": "HAB", "dice": [4]})
    assert (body["outcome"], body["success_level"]) == ("critical_success", 12)


def test_rb_t6_campaign_options_validated_and_applied(client, campaign_factory, character_factory):
    r = client.post(
        "/v1/campaigns", json={"name": "x", "ruleset": RB, "options": {"crit_success_rescues_negative": "maybe"}}
    )
    assert r.status_code == 422
    r = client.post("/v1/campaigns", json={"name": "x", "ruleset": RB, "options": {"rescue": True}})
    assert r.status_code == 422
    strict = campaign_factory(RB, {"crit_success_rescues_negative": False, "crit_failure_ruins_over_100": False})
    ch = character_factory(strict, SHEETS[RB])
    body = run(client, strict, ch, {"stat": "FOR", "difficulty": "hardcore", "dice": [3]})
    assert (body["target"], body["outcome"]) == (-50, "failure")
    body = run(client, strict, ch, {"stat": "FOR", "difficulty": "simplissime", "dice": [99]})
    assert (body["target"], body["outcome"], body["success_level"]) == (150, "success", 6)
    o = odds(client, strict, ch, {"stat": "FOR", "difficulty": "simplissime"})
    assert o["outcomes"]["critical_failure"]["probability"] == "0/1"


def test_rb_t6_defaults_allow_rescue_and_ruin(client, campaign, hero):
    body = run(client, campaign, hero, {"stat": "FOR", "difficulty": "hardcore", "dice": [3]})
    assert (body["outcome"], body["success_level"]) == ("critical_success", 10)
    r = client.get(f"/v1/campaigns/{campaign.id}", headers=campaign.gm)
    assert r.json()["options"]["crit_success_rescues_negative"] is True


def test_rb_t7_overflow_crit_per_test(client, campaign, hero):
    body = run(
        client, campaign, hero, {"stat": "HAB", "difficulty": "simplissime", "overflow_crit": True, "dice": [17]}
    )
    # 160%: +12 crit chance → 17 is critical
    assert (body["outcome"], body["crit_chance"]) == ("critical_success", {"success": 17, "failure": 5})
    body = run(client, campaign, hero, {"stat": "HAB", "difficulty": "simplissime", "dice": [17]})
    assert body["outcome"] == "success"


@pytest.mark.parametrize(
    "difficulty, die, outcome",
    [
        ("impossible", 2, "failure"),
        ("impossible", 97, "critical_failure"),
        ("quasi_impossible", 2, "critical_success"),
        ("quasi_inratable", 94, "success"),
        ("inratable", 99, "success"),
    ],
)
def test_rb_t8_special_difficulties_through_http(client, campaign, hero, difficulty, die, outcome):
    assert run(client, campaign, hero, {"stat": "FOR", "difficulty": difficulty, "dice": [die]})["outcome"] == outcome


def test_rb_t3_odds_are_exact_fractions(client, campaign, hero):
    o = odds(client, campaign, hero, {"stat": "FOR", "skill": "escrime"})
    assert o["outcomes"]["critical_success"]["probability"] == "1/20"
    assert o["outcomes"]["success"]["probability"] == "13/20"  # 6..70
    assert o["outcomes"]["failure"]["probability"] == "1/4"  # 71..95
    assert o["outcomes"]["critical_failure"]["probability"] == "1/20"
    assert o["success"]["probability"] == "7/10"
    assert o["success_level"]["7"]["probability"] == "1/25"  # rolls 6..9
    assert o["success_level"]["14"]["probability"] == "1/20"  # rolls 1..5: critical, 2 × 7


def test_rb_t3_players_need_the_option_to_enter_dice(client, campaign, player_factory, character_factory):
    alice = player_factory(campaign)
    ch = character_factory(campaign, SHEETS[RB], player=alice)
    r = client.post(f"/v1/characters/{ch['id']}/tests", json={"stat": "FOR", "dice": [10]}, headers=alice.headers)
    assert r.status_code == 403
    r = client.post(f"/v1/characters/{ch['id']}/tests", json={"stat": "FOR", "seed": 7}, headers=alice.headers)
    assert r.status_code == 403  # a seed chooses the dice as surely (issue 21 item 2)
    r = client.post(f"/v1/characters/{ch['id']}/tests", json={"stat": "FOR"}, headers=alice.headers)
    assert (r.status_code, r.json()["provenance"]) == (201, "server")


# --- confrontation and ranking -------------------------------------------------------


@pytest.fixture
def rival(campaign, character_factory):
    return character_factory(campaign, {"stats": {"FOR": 70, "HAB": 40}}, name="Rival")


def opposed(client, campaign, body, status=201):
    r = client.post(f"/v1/campaigns/{campaign.id}/tests/opposed", json=body, headers=campaign.gm)
    assert r.status_code == status, r.text
    return r.json()


def test_rb_c1_opposed_higher_level_wins(client, campaign, hero, rival):
    body = opposed(
        client,
        campaign,
        {
            "a": {"character_id": hero["id"], "stat": "FOR", "skill": "escrime"},
            "b": {"character_id": rival["id"], "stat": "FOR"},
            "dice": [31, 55],
        },
    )
    assert (body["kind"], body["ruleset"], body["winner"], body["tiebreak"]) == ("opposed", RB, "a", "level")
    assert (body["a"]["success_level"], body["b"]["success_level"]) == (4, 2)
    assert body["a"]["character_id"] == hero["id"] and body["winner_id"] == hero["id"]
    assert [r["purpose"] for r in body["rolls"]] == ["a: test", "b: test"]


# rule: RB-C2
def test_rb_c2_opposed_equal_levels_lower_units_wins(client, campaign, hero, rival):
    body = opposed(
        client,
        campaign,
        {
            "a": {"character_id": hero["id"], "stat": "HAB"},
            "b": {"character_id": rival["id"], "stat": "FOR"},
            "dice": [39, 32],
        },
    )
    assert (body["a"]["success_level"], body["b"]["success_level"]) == (3, 4)
    body = opposed(
        client,
        campaign,
        {
            "a": {"character_id": hero["id"], "stat": "HAB", "modifier": 10},
            "b": {"character_id": rival["id"], "stat": "FOR"},
            "dice": [39, 32],
        },
    )
    assert (body["winner"], body["tiebreak"]) == ("b", "units")


# rule: RB-C2
def test_rb_c2_opposed_reroll_consumes_a_then_b_until_different(client, campaign, hero, rival):
    body = opposed(
        client,
        campaign,
        {
            "a": {"character_id": hero["id"], "stat": "HAB", "modifier": 10},
            "b": {"character_id": rival["id"], "stat": "FOR"},
            "dice": [33, 33, 50, 50, 12, 71],
        },
    )
    assert (body["winner"], body["tiebreak"], body["rerolls"]) == ("a", "reroll", {"a": [50, 12], "b": [50, 71]})
    assert [r["purpose"] for r in body["rolls"]] == [
        "a: test",
        "b: test",
        "a: tiebreak",
        "b: tiebreak",
        "a: tiebreak",
        "b: tiebreak",
    ]
    r = client.post(
        f"/v1/campaigns/{campaign.id}/tests/opposed",
        headers=campaign.gm,
        json={
            "a": {"character_id": hero["id"], "stat": "HAB", "modifier": 10},
            "b": {"character_id": rival["id"], "stat": "FOR"},
            "dice": [33, 33, 50, 50],
        },
    )
    assert r.status_code == 422
    assert r.json()["needed"]["purpose"] == "a: tiebreak"


def test_rb_c1_opposed_is_gm_only_and_logged(client, campaign, hero, rival, player_factory):
    alice = player_factory(campaign)
    body = {"a": {"character_id": hero["id"], "stat": "FOR"}, "b": {"character_id": rival["id"], "stat": "FOR"}}
    r = client.post(f"/v1/campaigns/{campaign.id}/tests/opposed", json=body, headers=alice.headers)
    assert r.status_code == 403
    made = opposed(client, campaign, {**body, "seed": 3})
    log = client.get(f"/v1/campaigns/{campaign.id}/rolls", headers=campaign.gm).json()["items"]
    assert log[0]["id"] == made["id"] and log[0]["kind"] == "opposed"
    bad = {"a": {"character_id": hero["id"], "stat": "MAGIE"}, "b": body["b"]}
    r = client.post(f"/v1/campaigns/{campaign.id}/tests/opposed", json=bad, headers=campaign.gm)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "a", "stat"]


def group(client, campaign, body, status=201):
    r = client.post(f"/v1/campaigns/{campaign.id}/tests/group", json=body, headers=campaign.gm)
    assert r.status_code == status, r.text
    return r.json()


# rule: RB-C3
def test_rb_c3_ranking_with_per_participant_dice_and_tiebreaks(client, campaign, hero, rival, character_factory):
    third = character_factory(campaign, {"stats": {"FOR": 50}}, name="Third")
    body = group(
        client,
        campaign,
        {
            "mode": "ranking",
            "stat": "FOR",
            "participants": [
                {"character_id": hero["id"], "dice": [21, 40]},
                {"character_id": rival["id"], "dice": [55]},
                {"character_id": third["id"], "dice": [21, 10]},
            ],
        },
    )
    assert (body["kind"], body["mode"], body["ruleset"]) == ("group", "ranking", RB)
    assert [(e["place"], e["character_id"], e["tiebreak"], e["rerolls"]) for e in body["ranking"]] == [
        (1, third["id"], "reroll", [10]),
        (2, hero["id"], "reroll", [40]),
        (3, rival["id"], "level", []),
    ]
    assert body["ranking"][0]["result"]["success_level"] == 3
    assert [r["value"] for r in body["rolls"]] == [21, 55, 21, 40, 10]
    assert body["rolls"][3]["purpose"].startswith("participant 1 (")
    assert body["rolls"][3]["purpose"].endswith("tiebreak")


# rule: RB-C3
def test_rb_c3_ranking_table_dice_errors_name_the_participant(client, campaign, hero, rival):
    r = client.post(
        f"/v1/campaigns/{campaign.id}/tests/group",
        headers=campaign.gm,
        json={
            "mode": "ranking",
            "stat": "FOR",
            "participants": [
                {"character_id": hero["id"], "dice": [21, 40]},
                {"character_id": rival["id"], "dice": [55]},
            ],
        },
    )
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == ["body", "participants", "0", "dice"]
    r = client.post(
        f"/v1/campaigns/{campaign.id}/tests/group",
        headers=campaign.gm,
        json={
            "mode": "ranking",
            "stat": "FOR",
            "dice": [33],
            "participants": [{"character_id": hero["id"]}, {"character_id": rival["id"], "dice": []}],
        },
    )
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == ["body", "participants", "1", "dice"]


# rule: RB-C3
def test_rb_c3_ranking_mixes_shared_and_own_dice(client, campaign, hero, rival):
    body = group(
        client,
        campaign,
        {
            "mode": "ranking",
            "stat": "FOR",
            "dice": [70],
            "participants": [{"character_id": hero["id"]}, {"character_id": rival["id"], "dice": [20]}],
        },
    )
    assert [e["character_id"] for e in body["ranking"]] == [rival["id"], hero["id"]]
    r = client.post(
        f"/v1/campaigns/{campaign.id}/tests/group",
        headers=campaign.gm,
        json={
            "mode": "cooperation",
            "stat": "FOR",
            "participants": [{"character_id": hero["id"]}, {"character_id": rival["id"]}],
        },
    )
    assert r.status_code == 422


def test_rb_t6_options_patch_is_validated(client, campaign, hero):
    r = client.patch(
        f"/v1/campaigns/{campaign.id}",
        headers=campaign.gm,
        json={"options": {"crit_failure_ruins_over_100": "sometimes"}},
    )
    assert r.status_code == 422, r.text
    r = client.patch(
        f"/v1/campaigns/{campaign.id}", headers=campaign.gm, json={"options": {"crit_failure_ruins_over_100": False}}
    )
    assert r.status_code == 200, r.text
    assert r.json()["options"]["crit_failure_ruins_over_100"] is False
    body = run(client, campaign, hero, {"stat": "HAB", "difficulty": "simplissime", "dice": [100]})
    assert (body["target"], body["outcome"], body["success_level"]) == (160, "success", 6)
    described = client.get(f"/v1/rulesets/{RB}").json()
    assert "crit_success_rescues_negative" in str(described)


# rule: RB-C1
def test_rb_c1_a_confrontation_is_in_the_log_of_both_characters(client, campaign, character_factory):
    """RB-C1: filtering the roll log by either side finds the confrontation (and only it once)."""
    a = character_factory(campaign, SHEETS[RB], name="A")
    b = character_factory(campaign, SHEETS[RB], name="B")
    body = {
        "a": {"character_id": a["id"], "stat": "FOR"},
        "b": {"character_id": b["id"], "stat": "FOR"},
        "dice": [10, 90],
    }
    r = client.post(f"/v1/campaigns/{campaign.id}/tests/opposed", json=body, headers=campaign.gm)
    assert r.status_code == 201, r.text
    for ch in (a, b):
        log = client.get(
            f"/v1/campaigns/{campaign.id}/rolls", params={"character_id": ch["id"]}, headers=campaign.gm
        ).json()
        assert [e["id"] for e in log["items"]] == [r.json()["id"]]
    other = character_factory(campaign, SHEETS[RB], name="C")
    log = client.get(
        f"/v1/campaigns/{campaign.id}/rolls", params={"character_id": other["id"]}, headers=campaign.gm
    ).json()
    assert log["items"] == []
