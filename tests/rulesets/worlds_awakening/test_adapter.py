"""HTTP tests of the worlds-awakening ruleset (worlds-awakening.md), driven by table dice."""

from __future__ import annotations

import pytest

from tests.factories import SHEETS, WA, sheet, stats


@pytest.fixture
def ruleset():
    return WA


def run(client, campaign, ch, body, status=201, headers=None):
    r = client.post(f"/v1/characters/{ch['id']}/tests", json=body, headers=headers or campaign.gm)
    assert r.status_code == status, r.text
    return r.json()


def act(client, campaign, ch, body, status=201, headers=None):
    r = client.post(f"/v1/characters/{ch['id']}/actions", json=body, headers=headers or campaign.gm)
    assert r.status_code == status, r.text
    return r.json()


def get(client, campaign, ch):
    r = client.get(f"/v1/characters/{ch['id']}", headers=campaign.gm)
    assert r.status_code == 200, r.text
    return r.json()


# --- sheet --------------------------------------------------------------------------------


# rule: WA-S4
def test_wa_s4_sheet_is_stored_with_pending_and_challenges(hero):
    assert hero["sheet"] == sheet(WA, down=False, pending={}, challenges={})


# rule: WA-S3
def test_wa_s3_derived_defenses_and_initiative(campaign, character_factory):
    ch = character_factory(campaign, sheet(WA, level=3, stats=stats(WA, CON=2, SAG=1, DEX=4)))
    d = ch["derived"]
    assert (d["physical_defense"], d["magical_defense"], d["initiative"]) == (15, 14, 14)
    assert d["critical_success"] == {"min_natural": 19} and d["critical_failure"] == {"max_natural": 1}


def test_wa_s1_missing_characteristics_default_to_0_and_unknown_ones_are_422(client, campaign, character_factory):
    ch = character_factory(campaign, {"stats": {"FOR": 3}})
    assert ch["sheet"]["stats"] == {"FOR": 3, "DEX": 0, "CON": 0, "INT": 0, "SAG": 0, "CHA": 0}
    r = client.post(
        f"/v1/campaigns/{campaign.id}/characters",
        headers=campaign.gm,
        json={"name": "X", "kind": "pc", "sheet": {"stats": {"LUCK": 1}}},
    )
    assert r.status_code == 422


# rule: WA-S2
def test_wa_s2_level_and_weapons_are_validated(client, campaign):
    for bad in (
        {"level": 9},
        {"level": 0},
        {"weapons": [{"name": "x", "stat": "LUCK", "damage": "1d4"}]},
        {"weapons": [{"name": "x", "stat": "DEX", "damage": "a lot"}]},
        {"hp": 5, "hp_max": 3},
    ):
        r = client.post(
            f"/v1/campaigns/{campaign.id}/characters",
            headers=campaign.gm,
            json={"name": "X", "kind": "pc", "sheet": bad},
        )
        assert r.status_code == 422, (bad, r.text)


def test_wa_t2_ruleset_catalogue(client):
    body = client.get(f"/v1/rulesets/{WA}").json()
    assert body["difficulties"]["moderee"] == {"min": 10, "max": 14, "default": 12}


# --- tests -----------------------------------------------------------------------------------


def test_wa_t1_d20_plus_characteristic_vs_threshold(client, campaign, hero):
    body = run(client, campaign, hero, {"stat": "DEX", "difficulty": "moderee", "dice": [11]})
    assert (body["natural"], body["score"], body["target"], body["outcome"]) == (11, 12, 12, "success")
    assert body["rolls"] == [{"die": "d20", "value": 11, "purpose": "test"}]
    body = run(client, campaign, hero, {"stat": "DEX", "difficulty": "moderee", "modifier": -1, "dice": [11]})
    assert (body["score"], body["outcome"]) == (11, "failure")


def test_wa_t2_threshold_and_band(client, campaign, hero):
    body = run(client, campaign, hero, {"stat": "FOR", "difficulty": "moderee", "target": 14, "dice": [12]})
    assert (body["target"], body["outcome"]) == (14, "success")
    body = run(client, campaign, hero, {"stat": "FOR", "target": 9, "dice": [6]})
    assert (body["target"], body["score"], body["outcome"]) == (9, 8, "failure")
    r = client.post(
        f"/v1/characters/{hero['id']}/tests",
        headers=campaign.gm,
        json={"stat": "FOR", "difficulty": "facile", "target": 12, "dice": [6]},
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "target"]
    r = client.post(f"/v1/characters/{hero['id']}/tests", headers=campaign.gm, json={"stat": "FOR", "dice": [6]})
    assert r.status_code == 422
    r = client.post(
        f"/v1/characters/{hero['id']}/tests",
        headers=campaign.gm,
        json={"stat": "FOR", "difficulty": "moderee", "skill": "x"},
    )
    assert r.status_code == 422


def test_wa_t3_natural_20_and_1(client, campaign, hero):
    body = run(client, campaign, hero, {"stat": "INT", "difficulty": "tres_difficile", "target": 30, "dice": [20]})
    assert (body["outcome"], body["success"]) == ("critical_success", True)
    body = run(client, campaign, hero, {"stat": "FOR", "difficulty": "tres_facile", "dice": [1]})
    assert (body["score"], body["outcome"], body["success"]) == (3, "critical_failure", False)


def test_wa_t4_cha_3_criticals_from_19(client, campaign, hero):
    body = run(client, campaign, hero, {"stat": "INT", "target": 30, "dice": [19]})
    assert body["outcome"] == "critical_success"
    assert body["critical_range"] == {"success_min": 19, "failure_max": 1}


def test_wa_t4_odds_exact(client, campaign, hero):
    r = client.post(
        f"/v1/characters/{hero['id']}/tests/odds", headers=campaign.gm, json={"stat": "DEX", "difficulty": "moderee"}
    )
    assert r.status_code == 200, r.text
    o = r.json()
    # CHA 3: criticals 19-20; natural 1 fails; 11..18 succeed (8)
    assert o["outcomes"]["critical_success"]["probability"] == "1/10"
    assert o["outcomes"]["success"]["probability"] == "2/5"
    assert o["outcomes"]["failure"]["probability"] == "9/20"
    assert o["outcomes"]["critical_failure"]["probability"] == "1/20"
    assert o["success"]["probability"] == "1/2"
    assert o["score"]["12"]["probability"] == "1/20"


# --- WA-T5 pending ±2 ----------------------------------------------------------------------


def test_wa_t5_pending_modifier_is_gm_only_consumed_by_next_test_of_that_stat(
    client, campaign_factory, player_factory, character_factory
):
    campaign = campaign_factory(WA, {"players_may_enter_dice": True})
    alice = player_factory(campaign)
    mine = character_factory(campaign, SHEETS[WA], player=alice, name="Alice's")
    act(
        client,
        campaign,
        mine,
        {"type": "pending_modifier", "stat": "DEX", "value": 2},
        status=403,
        headers=alice.headers,
    )
    made = act(client, campaign, mine, {"type": "pending_modifier", "stat": "DEX", "value": 2})
    assert (made["kind"], made["stat"], made["after"]) == ("action", "DEX", 2)
    assert get(client, campaign, mine)["sheet"]["pending"] == {"DEX": 2}
    # another characteristic does not consume it
    body = run(client, campaign, mine, {"stat": "FOR", "difficulty": "moderee", "dice": [10]}, headers=alice.headers)
    assert (body["pending_modifier"], body["effects"]) == (0, {})
    assert get(client, campaign, mine)["sheet"]["pending"] == {"DEX": 2}
    body = run(client, campaign, mine, {"stat": "DEX", "difficulty": "moderee", "dice": [9]}, headers=alice.headers)
    assert (body["score"], body["outcome"], body["pending_modifier"]) == (12, "success", 2)
    assert body["effects"]["pending_modifier"] == {"stat": "DEX", "value": 2, "consumed": True}
    assert get(client, campaign, mine)["sheet"]["pending"] == {}
    body = run(client, campaign, mine, {"stat": "DEX", "difficulty": "moderee", "dice": [9]})
    assert (body["score"], body["outcome"]) == (10, "failure")


def test_wa_t5_negative_pending_and_clearing(client, campaign, hero):
    act(client, campaign, hero, {"type": "pending_modifier", "stat": "FOR", "value": -2})
    r = client.post(
        f"/v1/characters/{hero['id']}/tests/odds", headers=campaign.gm, json={"stat": "FOR", "difficulty": "moderee"}
    )
    assert r.json()["score"]["1"]["probability"] == "1/20"  # 1 + 2 − 2
    assert get(client, campaign, hero)["derived"]["pending"] == {"FOR": -2}
    act(client, campaign, hero, {"type": "pending_modifier", "stat": "FOR", "value": 0})
    assert get(client, campaign, hero)["sheet"]["pending"] == {}
    act(client, campaign, hero, {"type": "pending_modifier", "stat": "FOR", "value": 3}, status=422)


# --- WA-T6 challenges --------------------------------------------------------------------------


def test_wa_t6_challenge_advances_with_each_test_and_is_readable(client, campaign, hero):
    made = act(
        client, campaign, hero, {"type": "challenge", "name": "bombe", "successes_needed": 2, "failures_allowed": 1}
    )
    assert made["challenge"]["status"] == "in_progress"
    body = run(client, campaign, hero, {"stat": "INT", "difficulty": "moderee", "for_challenge": "bombe", "dice": [15]})
    assert body["challenge"] == {
        "name": "bombe",
        "successes_needed": 2,
        "failures_allowed": 1,
        "successes": 1,
        "failures": 0,
        "turns": 1,
        "status": "in_progress",
    }
    assert body["effects"]["challenge"]["before"]["successes"] == 0
    ch = get(client, campaign, hero)
    assert ch["sheet"]["challenges"]["bombe"]["successes"] == 1
    assert ch["derived"]["challenges"]["bombe"]["remaining_successes"] == 1
    assert ch["derived"]["challenges"]["bombe"]["remaining_failures"] == 1
    body = run(client, campaign, hero, {"stat": "INT", "difficulty": "moderee", "for_challenge": "bombe", "dice": [16]})
    assert (body["challenge"]["status"], body["challenge"]["turns"]) == ("succeeded", 2)
    r = client.post(
        f"/v1/characters/{hero['id']}/tests",
        headers=campaign.gm,
        json={"stat": "INT", "difficulty": "moderee", "for_challenge": "bombe", "dice": [16]},
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "for_challenge"]
    log = client.get(f"/v1/campaigns/{campaign.id}/rolls", headers=campaign.gm).json()["items"]
    assert [e["kind"] for e in log[:3]] == ["test", "test", "action"]
    assert log[0]["challenge"]["status"] == "succeeded"


def test_wa_t6_challenge_fails_past_failures_allowed(client, campaign, hero):
    act(client, campaign, hero, {"type": "challenge", "name": "rituel", "successes_needed": 3, "failures_allowed": 0})
    body = run(
        client, campaign, hero, {"stat": "SAG", "difficulty": "difficile", "for_challenge": "rituel", "dice": [5]}
    )
    assert (body["outcome"], body["challenge"]["status"]) == ("failure", "failed")
    assert get(client, campaign, hero)["sheet"]["challenges"]["rituel"]["status"] == "failed"


def test_wa_t6_challenge_errors_and_removal(client, campaign, hero, player_factory):
    r = client.post(
        f"/v1/characters/{hero['id']}/tests",
        headers=campaign.gm,
        json={"stat": "INT", "difficulty": "moderee", "for_challenge": "nope", "dice": [15]},
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "for_challenge"]
    act(client, campaign, hero, {"type": "challenge", "name": "porte", "successes_needed": 0}, status=422)
    act(client, campaign, hero, {"type": "challenge", "name": "porte", "successes_needed": 2})
    act(client, campaign, hero, {"type": "challenge", "name": "porte", "successes_needed": 2}, status=422)
    alice = player_factory(campaign)
    act(client, campaign, hero, {"type": "challenge_remove", "name": "porte"}, status=403, headers=alice.headers)
    act(client, campaign, hero, {"type": "challenge_remove", "name": "porte"})
    assert get(client, campaign, hero)["sheet"]["challenges"] == {}
    act(client, campaign, hero, {"type": "challenge_remove", "name": "porte"}, status=422)


def test_wa_t6_failed_challenge_test_leaves_sheet_unchanged(client, campaign, hero):
    act(client, campaign, hero, {"type": "pending_modifier", "stat": "INT", "value": 2})
    r = client.post(
        f"/v1/characters/{hero['id']}/tests",
        headers=campaign.gm,
        json={"stat": "INT", "difficulty": "moderee", "for_challenge": "nope", "dice": [15]},
    )
    assert r.status_code == 422
    assert get(client, campaign, hero)["sheet"]["pending"] == {"INT": 2}


# --- unsupported operations ------------------------------------------------------------------


def test_wa_t1_no_confrontation_nor_group_rule_is_a_clear_422(client, campaign, hero, character_factory):
    other = character_factory(campaign, SHEETS[WA], name="Other")
    r = client.post(
        f"/v1/campaigns/{campaign.id}/tests/opposed",
        headers=campaign.gm,
        json={"a": {"character_id": hero["id"], "stat": "FOR"}, "b": {"character_id": other["id"], "stat": "FOR"}},
    )
    assert r.status_code == 422
    assert "confrontation" in r.json()["detail"]
    r = client.post(
        f"/v1/campaigns/{campaign.id}/tests/group",
        headers=campaign.gm,
        json={"mode": "ranking", "stat": "FOR", "participants": [{"character_id": hero["id"]}]},
    )
    assert r.status_code == 422
    r = client.post(f"/v1/characters/{hero['id']}/level-ups", headers=campaign.gm, json={})
    assert r.status_code == 422
