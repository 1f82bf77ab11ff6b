"""Issue 12, the items the services decide, through HTTP with table dice: AS-T4 (a retry
rolls exactly when its exact chance of success beats the failed attempts'), AS-H2
(oppositions and cooperations are rerolled; only the character's latest entry; a 4d6
test again as 4d6, not paid twice), GC-P5 (the Illumination's advantage d6 stored with
the posture and applied by every test), and odds refusing the fields they do not use."""

from __future__ import annotations

from fractions import Fraction

import pytest
from pydantic import TypeAdapter

from app.rulesets.wire import (
    GroupResult,
    LevelUpResult,
    OddsResult,
    OpposedResult,
    RerollResult,
    TestResult,
)
from tests.api.support import assert_problem
from tests.factories import AS, GC, sheet

VITALITY = ("vitality", "vitality_max", "heroism")  # of the asgard sheet: no protection, weapon or asset
AS_SHEET = sheet(AS, keep=VITALITY, skills={"combat": 6, "defense": 4, "survie": 3, "perception": 3})
RIVAL_SHEET = sheet(AS, keep=VITALITY, skills={"combat": 5, "defense": 4}, heroism=2)
GC_SHEET = sheet(GC, light_points=2)


@pytest.fixture
def asgard(campaign_factory, character_factory):
    camp = campaign_factory("asgard")
    hero = character_factory(camp, AS_SHEET, name="Sigrid")
    rival = character_factory(camp, RIVAL_SHEET, name="Ulf")
    return camp, hero["id"], rival["id"]


def checked(r, model) -> None:
    """A 2xx body exactly as its route documents it (app.rulesets.wire, strict)."""
    if r.status_code < 300:
        TypeAdapter(model).validate_json(r.content, strict=True)


def post(client, camp, path: str, body: dict, status: int = 201, model=None) -> dict:
    r = client.post(path, json=body, headers=camp.gm)
    assert r.status_code == status, r.text
    checked(r, model)
    return r.json()


def roll(client, camp, cid: str, body: dict, status: int = 201) -> dict:
    return post(client, camp, f"/v1/characters/{cid}/tests", body, status, TestResult)


def odds(client, camp, cid: str, body: dict) -> dict:
    return post(client, camp, f"/v1/characters/{cid}/tests/odds", body, 200, OddsResult)


def reroll(client, camp, cid: str, entry_id: str, body: dict):
    r = client.post(f"/v1/characters/{cid}/tests/{entry_id}/reroll", json=body, headers=camp.gm)
    checked(r, RerollResult)
    return r


def sheet_of(client, camp, cid: str) -> dict:
    return client.get(f"/v1/characters/{cid}", headers=camp.gm).json()["sheet"]


def p(value: dict) -> Fraction:
    return Fraction(value["probability"])


def log_count(client, camp) -> int:
    return len(client.get(f"/v1/campaigns/{camp.id}/rolls", params={"limit": 500}, headers=camp.gm).json()["items"])


# --- AS-T4: a retry rolls exactly when its exact chance of success is higher -------------------

MOYEN_FAILED = {"skill": "survie", "difficulty": "moyen", "dice": [1, 2, 3]}  # 6 + 3 = 9 < 15
P_MOYEN = Fraction(81, 216)  # 3d6 >= 12 (the three 6s included)


def test_as_t4_a_retry_with_a_lower_target_rolls(client, asgard):
    camp, hero, _ = asgard
    failed = roll(client, camp, hero, MOYEN_FAILED)
    assert failed["outcome"] == "failure"
    retry = roll(
        client, camp, hero, {"skill": "survie", "difficulty": "facile", "retry_of": failed["id"], "dice": [2, 2, 3]}
    )
    assert (retry["natural"], retry["score"], retry["target"], retry["outcome"]) == (7, 10, 10, "success")
    assert (retry["automatic"], retry["retry_of"], retry["improved"]) == (None, failed["id"], True)
    # the figures AS-T4 compared: 3d6 >= 12 before, 3d6 >= 7 now
    assert (p(retry["retry_odds"]["failed"]), p(retry["retry_odds"]["retry"])) == (P_MOYEN, Fraction(196, 216))
    # an explicit lower target too, and the odds say the same as the test
    lower = odds(client, camp, hero, {"skill": "survie", "target": 14, "retry_of": failed["id"]})
    assert p(lower["success"]) == Fraction(108, 216)  # 3d6 >= 11
    facile = odds(client, camp, hero, {"skill": "survie", "difficulty": "facile", "retry_of": failed["id"]})
    assert p(facile["success"]) == Fraction(196, 216)


def test_as_t4_a_retry_with_the_heroism_die_rolls(client, asgard):
    camp, hero, _ = asgard
    failed = roll(client, camp, hero, MOYEN_FAILED)
    body = {"skill": "survie", "difficulty": "moyen", "heroism_4d6": True, "retry_of": failed["id"]}
    plain = odds(client, camp, hero, {k: v for k, v in body.items() if k != "retry_of"})
    assert p(odds(client, camp, hero, body)["success"]) == p(plain["success"]) > P_MOYEN
    retry = roll(client, camp, hero, {**body, "dice": [3, 3, 3, 3]})
    assert (retry["natural"], retry["score"], retry["outcome"], retry["automatic"]) == (12, 15, "success", None)
    assert retry["effects"]["heroism"] == {"before": 3, "after": 2}
    assert sheet_of(client, camp, hero)["heroism"] == 2


def test_as_t4_a_retry_with_the_proper_skill_after_a_close_skill_failure_rolls(client, asgard):
    camp, hero, _ = asgard
    close = roll(
        client, camp, hero, {"skill": "perception", "close_skill": True, "difficulty": "moyen", "dice": [4, 4, 4]}
    )
    assert (close["score"], close["target"], close["outcome"]) == (15, 20, "failure")
    body = {"skill": "survie", "difficulty": "moyen", "retry_of": close["id"]}
    assert p(odds(client, camp, hero, body)["success"]) == P_MOYEN  # 3d6 >= 12, against 3d6 >= 17 before
    retry = roll(client, camp, hero, {**body, "dice": [4, 4, 4]})
    assert (retry["score"], retry["target"], retry["outcome"], retry["automatic"]) == (15, 15, "success", None)
    # the same close skill again is no better: an automatic failure, no dice
    again = roll(
        client, camp, hero, {"skill": "perception", "close_skill": True, "difficulty": "moyen", "retry_of": close["id"]}
    )
    assert (again["automatic"], again["outcome"], again["rolls"]) == ("retry_without_improvement", "failure", [])
    # two proper skills are two tests, not a retry
    r = client.post(
        f"/v1/characters/{hero}/tests",
        headers=camp.gm,
        json={"skill": "combat", "difficulty": "moyen", "retry_of": retry["id"]},
    )
    assert r.status_code == 422 and "retry_of" in r.text


def test_as_t4_a_retry_no_better_than_the_failed_attempts_is_an_automatic_failure(client, asgard):
    camp, hero, _ = asgard
    failed = roll(client, camp, hero, MOYEN_FAILED)
    same = roll(client, camp, hero, {"skill": "survie", "difficulty": "moyen", "retry_of": failed["id"]})
    assert (same["automatic"], same["outcome"], same["rolls"], same["improved"]) == (
        "retry_without_improvement",
        "failure",
        [],
        False,
    )
    assert p(same["retry_odds"]["failed"]) == p(same["retry_odds"]["retry"]) == P_MOYEN
    worse = {"skill": "survie", "difficulty": "moyen", "modifier": -1, "retry_of": failed["id"]}
    assert p(odds(client, camp, hero, worse)["outcomes"]["failure"]) == 1
    assert roll(client, camp, hero, worse)["automatic"] == "retry_without_improvement"
    # a worse attempt does not lower the bar: retrying it as the first one is still no better
    harder = roll(client, camp, hero, {"skill": "survie", "difficulty": "difficile", "retry_of": failed["id"]})
    assert harder["automatic"] == "retry_without_improvement"
    chained = roll(client, camp, hero, {"skill": "survie", "difficulty": "moyen", "retry_of": harder["id"]})
    assert chained["automatic"] == "retry_without_improvement"
    assert p(chained["retry_odds"]["failed"]) == P_MOYEN
    # "improved" is no longer declared: the odds decide
    r = client.post(
        f"/v1/characters/{hero}/tests",
        headers=camp.gm,
        json={"skill": "survie", "difficulty": "moyen", "retry_of": failed["id"], "improved": True},
    )
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "improved"]]


# --- AS-H2: any test, the character's latest entry only, the same dice count ------------------


def opposition(client, camp, hero: str, rival: str) -> dict:
    """Sigrid's combat (6) against Ulf's defense (4): 6 + 6 = 12 against 12 + 4 = 16, Ulf wins."""
    return post(
        client,
        camp,
        f"/v1/campaigns/{camp.id}/tests/opposed",
        {
            "a": {"character_id": hero, "skill": "combat"},
            "b": {"character_id": rival, "skill": "defense"},
            "dice": [1, 2, 3, 4, 4, 4],
        },
        model=OpposedResult,
    )


def test_as_h2_an_opposition_is_rerolled_by_the_side_that_spends(client, asgard):
    camp, hero, rival = asgard
    opposed = opposition(client, camp, hero, rival)
    assert (opposed["winner"], opposed["a"]["score"], opposed["b"]["score"]) == ("b", 12, 16)
    r = reroll(client, camp, hero, opposed["id"], {"dice": [6, 5, 5]})
    assert r.status_code == 201, r.text
    again = r.json()
    assert (again["kind"], again["rerolls"], again["rerolled_for"]) == ("opposed", opposed["id"], hero)
    # Sigrid's test is rolled again; Ulf's stands as it was rolled
    assert (again["a"]["dice"], again["a"]["score"], again["b"]["dice"], again["b"]["score"]) == (
        [6, 5, 5],
        22,
        [4, 4, 4],
        16,
    )
    assert (again["winner"], again["winner_character_id"], again["margin"]) == ("a", hero, 6)
    assert [(d["value"], d["side"]) for d in again["rolls"]] == [(6, "a"), (5, "a"), (5, "a")]
    assert again["a"]["effects"] == {"heroism": {"before": 3, "after": 2}} and again["b"]["effects"] == {}
    assert (sheet_of(client, camp, hero)["heroism"], sheet_of(client, camp, rival)["heroism"]) == (2, 2)
    # the entry concerns both characters, and the opposition is rerolled once
    for cid in (hero, rival):
        items = client.get(f"/v1/campaigns/{camp.id}/rolls", params={"character_id": cid}, headers=camp.gm).json()
        assert again["id"] in [e["id"] for e in items["items"]]
    twice = reroll(client, camp, rival, opposed["id"], {"dice": [6, 6, 5]})
    assert assert_problem(twice, 409, "conflict")["rerolled_by"] == again["id"]


def test_as_h2_a_cooperation_is_rolled_again_whole_and_a_4d6_stays_4d6_unpaid(client, asgard):
    camp, hero, rival = asgard
    group = post(
        client,
        camp,
        f"/v1/campaigns/{camp.id}/tests/group",
        {
            "skill": "survie",
            "difficulty": "moyen",
            "dice": [1, 2, 3, 1, 2, 2, 3],
            "participants": [{"character_id": hero, "heroism_4d6": True}, {"character_id": rival}],
        },
        model=GroupResult,
    )
    assert (group["score"], group["outcome"], group["leader_character_id"]) == (9, "failure", hero)
    assert sheet_of(client, camp, hero)["heroism"] == 2
    # Ulf spends 1 to roll the whole group test again; Sigrid's 4d6 is rolled as 4d6, not paid again
    r = reroll(client, camp, rival, group["id"], {"dice": [5, 5, 4, 2, 6, 5, 4]})
    assert r.status_code == 201, r.text
    again = r.json()
    assert (again["kind"], again["rerolls"], again["rerolled_for"]) == ("group", group["id"], rival)
    first, second = again["participants"]
    assert (first["heroism_4d6"], first["dice"], first["score"], first["effects"]) == (True, [5, 5, 4, 2], 19, {})
    assert (second["dice"], second["score"], second["effects"]) == (
        [6, 5, 4],
        15,
        {"heroism": {"before": 2, "after": 1}},
    )
    assert (again["leader_character_id"], again["adjustment"], again["score"], again["outcome"]) == (
        hero,
        1,
        20,
        "success",
    )
    assert [d["participant"] for d in again["rolls"]] == [0, 0, 0, 0, 1, 1, 1]
    assert (sheet_of(client, camp, hero)["heroism"], sheet_of(client, camp, rival)["heroism"]) == (2, 1)


def test_as_h2_a_4d6_test_is_rerolled_as_4d6_without_paying_the_die_again(client, asgard):
    camp, hero, _ = asgard
    first = roll(
        client, camp, hero, {"skill": "survie", "difficulty": "moyen", "heroism_4d6": True, "dice": [1, 1, 2, 3]}
    )
    assert (first["score"], first["effects"]["heroism"]) == (10, {"before": 3, "after": 2})
    r = reroll(client, camp, hero, first["id"], {"dice": [5, 5, 4, 1]})
    assert r.status_code == 201, r.text
    again = r.json()
    assert (again["heroism_4d6"], again["dice"], again["score"], again["outcome"]) == (
        True,
        [5, 5, 4, 1],
        18,
        "success",
    )
    assert again["effects"] == {"heroism": {"before": 2, "after": 1}}
    assert sheet_of(client, camp, hero)["heroism"] == 1


def test_as_h2_only_the_characters_latest_entry_is_rerolled_and_once(client, asgard):
    camp, hero, rival = asgard
    older = roll(client, camp, hero, {"skill": "survie", "difficulty": "moyen", "dice": [1, 2, 3]})
    newer = roll(client, camp, hero, {"skill": "survie", "difficulty": "moyen", "dice": [1, 2, 4]})
    rows = log_count(client, camp)
    r = reroll(client, camp, hero, older["id"], {"dice": [6, 6, 5]})
    body = assert_problem(r, 409, "conflict")
    assert body["newer_entry"] == newer["id"] and newer["id"] in body["detail"]
    assert (log_count(client, camp), sheet_of(client, camp, hero)["heroism"]) == (rows, 3)
    r = reroll(client, camp, hero, newer["id"], {"dice": [6, 6, 5]})
    assert r.status_code == 201, r.text
    # the reroll is the same test: rolling it again would be a second reroll
    r = reroll(client, camp, hero, r.json()["id"], {"dice": [6, 6, 6]})
    assert assert_problem(r, 409, "conflict")["detail"]
    assert sheet_of(client, camp, hero)["heroism"] == 2
    # an opposition is the latest entry of both sides until one of them acts again
    opposed = opposition(client, camp, hero, rival)
    after = roll(client, camp, rival, {"skill": "defense", "dice": [3, 3, 3]})
    r = reroll(client, camp, rival, opposed["id"], {"dice": [6, 6, 5]})
    assert assert_problem(r, 409, "conflict")["newer_entry"] == after["id"]
    assert reroll(client, camp, hero, opposed["id"], {"dice": [6, 6, 5]}).status_code == 201


# --- odds roll nothing: the fields of rolling are refused --------------------------------------

ODDS_BODIES = {
    "great-cosmos": (GC_SHEET, {"stat": "force"}),
    "asgard": (AS_SHEET, {"skill": "survie", "difficulty": "moyen"}),
    "rulebook-d100": (
        {
            "stats": {"FOR": 50, "HAB": 60},
            "skills": {"escrime": 20},
            "crit_chance": 5,
            "hp": 14,
            "hp_max": 14,
            "pe": 14,
            "pe_max": 14,
            "armor": 0,
        },
        {"stat": "FOR"},
    ),
    "worlds-awakening": (
        {
            "level": 1,
            "stats": {"FOR": 2, "DEX": 1, "CON": 0, "INT": 0, "SAG": -1, "CHA": 3},
            "hp": 12,
            "hp_max": 12,
            "mp": 0,
            "mp_max": 0,
        },
        {"stat": "FOR", "target": 12},
    ),
}


@pytest.mark.parametrize("ruleset", ODDS_BODIES)
@pytest.mark.parametrize(
    "unused",
    [{"dice": [4]}, {"seed": 7}, {"hidden": True}, {"hidden": False}],
    ids=["dice", "seed", "hidden", "hidden-false"],
)
def test_odds_refuse_dice_seed_and_hidden(client, campaign_factory, character_factory, ruleset, unused):
    camp = campaign_factory(ruleset)
    sheet, body = ODDS_BODIES[ruleset]
    cid = character_factory(camp, sheet)["id"]
    assert odds(client, camp, cid, body)["outcomes"]
    r = client.post(f"/v1/characters/{cid}/tests/odds", json={**body, **unused}, headers=camp.gm)
    problem = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in problem["errors"]] == [["body", *unused]]


# --- GC-P5: the Illumination's advantage d6, stored with the posture, applied by every test -----


def illuminate(client, camp, cid: str, advantage: int | None):
    return client.patch(
        f"/v1/characters/{cid}",
        headers=camp.gm,
        json={"sheet": {"posture": "illumination", "posture_advantage": advantage}},
    )


@pytest.mark.parametrize("die, effect, bonus", [(4, "bonus_10", 10), (5, "bonus_20", 20), (6, "extra_action", 0)])
def test_gc_p5_the_illumination_advantage_applies_to_every_test(
    client, campaign_factory, character_factory, die, effect, bonus
):
    camp = campaign_factory("great-cosmos")
    cid = character_factory(camp, GC_SHEET)["id"]
    r = illuminate(client, camp, cid, die)
    assert r.status_code == 200, r.text
    assert (r.json()["sheet"]["posture"], r.json()["sheet"]["posture_advantage"]) == ("illumination", die)
    advantage = {"die": die, "effect": effect, "bonus": bonus}
    # karma locked at +10 (GC-K5): the d10 is subtracted; 85 - 2 = 83 against force 68 (+ the bonus)
    result = roll(client, camp, cid, {"stat": "force", "dice": [85, 2]})
    assert (result["score"], result["target"], result["advantage"]) == (83, 68 + bonus, advantage)
    assert result["outcome"] == ("success" if 83 <= 68 + bonus else "failure")
    # the level-up's chance test is a test during the posture too (GC-L6): 65 - 1 = 64 against 60 (+ the bonus)
    up = post(
        client,
        camp,
        f"/v1/characters/{cid}/level-ups",
        {
            "mode": "one_d20",
            "stats": ["force"],
            "chance_bonus_pool": "hp",
            "dice": [5, 65, 1] + ([3, 4] if 64 <= 60 + bonus else []),
        },
        model=LevelUpResult,
    )
    chance = up["chance_test"]
    assert (chance["score"], chance["target"], chance["advantage"]) == (64, 60 + bonus, advantage)
    # intuition (a d6 against 1..6) takes no +10/+20
    intuition = roll(client, camp, cid, {"stat": "intuition", "dice": [4]})
    assert (intuition["target"], intuition["outcome"], intuition["advantage"]) == (3, "failure", None)


def test_gc_p5_the_advantage_odds_match_the_target(client, campaign_factory, character_factory):
    camp = campaign_factory("great-cosmos")
    lit = character_factory(camp, GC_SHEET, name="Lit")["id"]
    assert illuminate(client, camp, lit, 5).status_code == 200
    # the same character without the advantage, karma locked by the same posture: +20 on the target
    plain = character_factory(camp, GC_SHEET, name="Plain")["id"]
    assert illuminate(client, camp, plain, 1).status_code == 200
    assert odds(client, camp, lit, {"stat": "force"}) == {
        **odds(client, camp, plain, {"stat": "force", "modifier": 20}),
        "character_id": lit,
    }


def test_gc_p5_the_advantage_belongs_to_an_illumination(client, campaign_factory, character_factory, player_factory):
    camp = campaign_factory("great-cosmos")
    owner = player_factory(camp)
    cid = character_factory(camp, GC_SHEET, player=owner)["id"]
    # an advantage without the Illumination is refused
    r = client.patch(f"/v1/characters/{cid}", headers=camp.gm, json={"sheet": {"posture_advantage": 4}})
    assert ["body", "sheet", "posture_advantage"] in [
        e["loc"] for e in assert_problem(r, 422, "rule-violation")["errors"]
    ]
    r = client.patch(
        f"/v1/characters/{cid}", headers=camp.gm, json={"sheet": {"posture": "sepulcrale", "posture_advantage": 4}}
    )
    assert r.status_code == 422, r.text
    # an Illumination the GM set without its die: the tests say what is missing
    r = illuminate(client, camp, cid, None)
    assert r.status_code == 200 and r.json()["sheet"]["posture_advantage"] is None
    for path in ("tests", "tests/odds"):
        r = client.post(
            f"/v1/characters/{cid}/{path}",
            headers=camp.gm,
            json={"stat": "force", "dice": [50, 3]} if path == "tests" else {"stat": "force"},
        )
        body = assert_problem(r, 422, "rule-violation")
        assert "posture_advantage" in body["detail"] and "GC-P5" in body["detail"]
    # the die is a rule-governed field: the player may not set it
    r = client.patch(f"/v1/characters/{cid}", headers=owner.headers, json={"sheet": {"posture_advantage": 5}})
    assert assert_problem(r, 403, "forbidden")["fields"] == ["posture_advantage"]
    # the GM sets it; ending the posture ends its advantage
    r = client.patch(f"/v1/characters/{cid}", headers=camp.gm, json={"sheet": {"posture_advantage": 5}})
    assert r.status_code == 200, r.text
    r = client.patch(f"/v1/characters/{cid}", headers=camp.gm, json={"sheet": {"posture": None}})
    assert r.status_code == 200, r.text
    assert (r.json()["sheet"]["posture"], r.json()["sheet"]["posture_advantage"]) == (None, None)
    result = roll(client, camp, cid, {"stat": "force", "dice": [75]})
    assert (result["target"], result["advantage"], result["outcome"]) == (68, None, "failure")
