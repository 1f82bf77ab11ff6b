"""Issue 29 item 3: every test result carries `p_success`, its exact probability of success as it
was rolled: the odds route's `success` for the same body (the character as it was before the test).
Several bodies per ruleset, each tested twice in a row: a test that changes the sheet (GC karma,
AS heroism, WA pending ±2) changes the next test's odds, and p_success follows."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import AS, GC, RB, WA, sheet

BODIES: dict[str, list[dict[str, Any]]] = {
    GC: [
        {"stat": "force"},
        {"stat": "force", "modifier": 15},
        {"stat": "agilite", "modifier": -30},
        {"stat": "intuition", "modifier": 1},
    ],
    AS: [
        {"skill": "survie", "difficulty": "moyen"},
        {"skill": "survie", "difficulty": "difficile", "modifier": 2},
        {"skill": "survie", "difficulty": "moyen", "heroism_4d6": True},
        {"skill": "survie"},
        {"skill": "survie", "difficulty": "automatique"},
    ],
    RB: [{"stat": "FOR"}, {"stat": "FOR", "modifier": -25}, {"stat": "FOR", "difficulty": "difficile"}],
    WA: [
        {"stat": "FOR", "target": 12},
        {"stat": "DEX", "target": 15, "modifier": 3},
        {"stat": "FOR", "difficulty": "moderee"},
    ],
}
SHEETS = {GC: sheet(GC, karma=4), AS: sheet(AS, heroism=5), RB: sheet(RB), WA: sheet(WA, pending={"FOR": 2})}


@pytest.mark.parametrize("ruleset", [GC, AS, RB, WA])
def test_issue29_item3_p_success_is_the_odds_routes_success(client, campaign_factory, character_factory, ruleset):
    camp = campaign_factory(ruleset)
    hero = character_factory(camp, SHEETS[ruleset])
    url = f"/v1/characters/{hero['id']}/tests"
    seen = set()
    for n, body in enumerate(BODIES[ruleset]):
        for attempt in range(2):  # the second sees the sheet the first changed (karma, heroism, pending)
            odds = client.post(f"{url}/odds", json=body, headers=camp.gm)
            assert odds.status_code == 200, odds.text
            r = client.post(url, json={**body, "seed": 10 * n + attempt}, headers=camp.gm)
            assert r.status_code == 201, r.text
            result = r.json()
            assert result["p_success"] == odds.json()["success"], (body, attempt)
            seen.add(result["p_success"]["probability"])
            keys = list(result)
            assert keys.index("p_success") == keys.index("rolls") - 1  # before the dice, after the test's fields
            [logged] = client.get(f"/v1/campaigns/{camp.id}/rolls?limit=1", headers=camp.gm).json()["items"]
            assert logged["p_success"] == result["p_success"]
    assert len(seen) >= 3  # the bodies give different odds: the figure is the body's, not a constant


def test_issue29_item3_gc_p_success_follows_the_karma(client, campaign_factory, character_factory):
    """GC-K2..K4: the karma the test runs with is in its odds: 0 karma then -10 karma differ."""
    camp = campaign_factory(GC)
    url = f"/v1/characters/{character_factory(camp, sheet(GC, karma=0))['id']}/tests"
    at_zero = client.post(url, json={"stat": "force", "dice": [50]}, headers=camp.gm).json()["p_success"]
    hero = character_factory(camp, sheet(GC, karma=-10), name="Other")
    odds = client.post(f"/v1/characters/{hero['id']}/tests/odds", json={"stat": "force"}, headers=camp.gm).json()
    at_minus_ten = client.post(
        f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "dice": [50, 5]}, headers=camp.gm
    ).json()["p_success"]
    assert at_minus_ten == odds["success"]
    assert at_zero != at_minus_ten


def test_issue29_item3_as_h2_a_reroll_records_p_success_and_counts_with_its_odds(
    client, campaign_factory, character_factory
):
    """AS-H2: a test rolled again records its p_success like every test, the odds route's `success`
    for the test as it is rolled again (a 3d6 reroll of a 3d6 test; AS-H1: `heroism_4d6` makes it a
    4d6 one; a 4d6 test stays 4d6), and the statistics count it with its odds, not as a test without."""
    camp = campaign_factory(AS)
    hero = character_factory(camp, sheet(AS, heroism=5))
    url = f"/v1/characters/{hero['id']}/tests"
    plain = {"skill": "survie", "difficulty": "difficile"}
    odds_3d6 = client.post(f"{url}/odds", json=plain, headers=camp.gm).json()["success"]
    odds_4d6 = client.post(f"{url}/odds", json={**plain, "heroism_4d6": True}, headers=camp.gm).json()["success"]
    assert odds_3d6 != odds_4d6
    expected = []
    for first_dice, reroll_body, odds in [
        ([1, 1, 2], {"dice": [6, 5, 6]}, odds_3d6),  # 3d6 rolled again as 3d6
        ([1, 2, 1], {"heroism_4d6": True, "dice": [6, 6, 5, 1]}, odds_4d6),  # AS-H1 on the reroll: 4d6
    ]:
        first = client.post(url, json={**plain, "dice": first_dice}, headers=camp.gm)
        assert first.status_code == 201, first.text
        expected.append(first.json()["p_success"])
        r = client.post(f"{url}/{first.json()['id']}/reroll", json=reroll_body, headers=camp.gm)
        assert r.status_code == 201, r.text
        rerolled = r.json()
        assert rerolled["rerolls"] == first.json()["id"] and len(rerolled["rolls"]) == len(reroll_body["dice"])
        assert rerolled["p_success"] == odds, reroll_body
        logged = client.get(f"/v1/campaigns/{camp.id}/rolls/{rerolled['id']}", headers=camp.gm).json()
        assert logged["p_success"] == odds
        expected.append(odds)
    four = client.post(url, json={**plain, "heroism_4d6": True, "dice": [1, 1, 1, 2]}, headers=camp.gm).json()
    r = client.post(f"{url}/{four['id']}/reroll", json={"dice": [6, 6, 6, 6]}, headers=camp.gm)
    assert r.status_code == 201, r.text
    assert r.json()["p_success"] == four["p_success"] == odds_4d6  # a 4d6 test stays 4d6
    expected += [odds_4d6, odds_4d6]
    whole = client.get(f"/v1/campaigns/{camp.id}/stats", headers=camp.gm).json()["campaign"]
    assert (whole["tests"], whole["tests_without_odds"]) == (6, 0)
    assert whole["successes"]["expected"] == pytest.approx(sum(p["p"] for p in expected), abs=1e-9)
    assert whole["successes"]["observed"] == 3  # the three rerolls succeed, the tests they cancel fail
