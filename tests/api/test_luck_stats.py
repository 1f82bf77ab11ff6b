"""Issue 29 item 3: `GET /v1/campaigns/{cid}/stats`: the campaign's tests against their exact odds,
with fixed dice so every figure is checked exactly (the expected counts are the odds route's)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from tests.factories import AS, GC, RB, WA, sheet

OUTCOMES = (
    "super_critical_success",
    "critical_success",
    "success",
    "failure",
    "critical_failure",
    "super_critical_failure",
)
SUCCESSES = OUTCOMES[:3]


def frac(odds: dict[str, Any], name: str) -> Fraction:
    return Fraction(odds["outcomes"][name]["probability"])


def test_issue29_item3_stats_every_figure_of_a_great_cosmos_campaign(client, campaign_factory, character_factory):
    """GC: two characters, karma changing between tests: each figure is the sum of the odds each
    test was rolled with (read from the odds route just before), the luck score from their variance."""
    camp = campaign_factory(GC)
    aiko = character_factory(camp, sheet(GC, karma=0), name="Aiko")
    bob = character_factory(camp, sheet(GC, karma=7), name="Bob")  # GC-K2: a karma d10
    plays = [  # (character, body, seed): the dice are read from each answer
        (aiko, {"stat": "force"}, 1),
        (aiko, {"stat": "force", "modifier": -20}, 2),
        (aiko, {"stat": "agilite"}, 3),
        (bob, {"stat": "force"}, 4),
        (bob, {"stat": "intuition"}, 5),
    ]
    want: dict[str, dict[str, Any]] = {}
    for hero, body, seed in plays:
        url = f"/v1/characters/{hero['id']}/tests"
        odds = client.post(f"{url}/odds", json=body, headers=camp.gm).json()
        r = client.post(url, json={**body, "seed": seed}, headers=camp.gm)
        assert r.status_code == 201, r.text
        w = want.setdefault(hero["id"], {"exp": dict.fromkeys(OUTCOMES, Fraction(0)), "obs": [], "ps": [], "dice": {}})
        for name in OUTCOMES:
            w["exp"][name] += frac(odds, name)
        w["obs"].append(r.json()["outcome"])
        w["ps"].append(Fraction(odds["success"]["probability"]))
        for die in r.json()["rolls"]:
            w["dice"].setdefault(die["die"], []).append(die["value"])
    got = client.get(f"/v1/campaigns/{camp.id}/stats", headers=camp.gm)
    assert got.status_code == 200, got.text
    stats = got.json()
    by_id = {c["character_id"]: c for c in stats["characters"]}
    assert set(by_id) == {aiko["id"], bob["id"]}
    for cid, w in want.items():
        c = by_id[cid]
        assert c["tests"] == len(w["obs"]) and c["tests_without_odds"] == 0
        for name in OUTCOMES:
            assert c["outcomes"][name]["observed"] == w["obs"].count(name)
            assert c["outcomes"][name]["expected"] == pytest.approx(float(w["exp"][name]), abs=1e-12)
        observed = sum(o in SUCCESSES for o in w["obs"])
        expected, variance = sum(w["ps"]), sum(p * (1 - p) for p in w["ps"])
        assert c["successes"]["observed"] == observed
        assert c["successes"]["expected"] == pytest.approx(float(expected), abs=1e-12)
        assert c["successes"]["sd"] == pytest.approx(math.sqrt(variance), abs=1e-12)
        assert c["successes"]["luck"] == pytest.approx((observed - float(expected)) / math.sqrt(variance), abs=1e-9)
        for die, values in w["dice"].items():
            n = int(die[1:])
            assert c["dice"][die] == {
                "count": len(values),
                "mean": sum(values) / len(values),
                "expected_mean": (n + 1) / 2,
            }
        assert set(c["dice"]) == set(w["dice"])
    whole = stats["campaign"]
    assert whole["tests"] == 5
    assert whole["successes"]["observed"] == sum(c["successes"]["observed"] for c in by_id.values())
    every: dict[str, list[int]] = {}
    for w in want.values():
        for die, values in w["dice"].items():
            every.setdefault(die, []).extend(values)
    assert whole["dice"] == {
        die: {"count": len(v), "mean": sum(v) / len(v), "expected_mean": (int(die[1:]) + 1) / 2}
        for die, v in every.items()
    }
    assert "d10" in whole["dice"] and "d6" in whole["dice"]  # karma and intuition dice counted
    # one character, and since a time after everything: nothing
    one = client.get(f"/v1/campaigns/{camp.id}/stats", params={"character_id": bob["id"]}, headers=camp.gm).json()
    assert [c["character_id"] for c in one["characters"]] == [bob["id"]] and one["campaign"]["tests"] == 2
    later = client.get(f"/v1/campaigns/{camp.id}/stats", params={"since": "2999-01-01T00:00:00Z"}, headers=camp.gm)
    assert later.json()["campaign"]["tests"] == 0 and later.json()["characters"] == []
    assert later.json()["campaign"]["successes"]["luck"] is None


def test_issue29_item3_stats_exact_on_a_d20_ruleset(client, campaign_factory, character_factory):
    """WA-T1: d20 + FOR against 12, naturals 20 (critical), 1 (critical failure), 10: each p exact."""
    camp = campaign_factory(WA)
    hero = character_factory(camp, sheet(WA))
    body = {"stat": "FOR", "target": 12}
    odds = client.post(f"/v1/characters/{hero['id']}/tests/odds", json=body, headers=camp.gm).json()
    outcomes = []
    for d in (20, 1, 10):
        r = client.post(f"/v1/characters/{hero['id']}/tests", json={**body, "dice": [d]}, headers=camp.gm)
        outcomes.append(r.json()["outcome"])
    [c] = client.get(f"/v1/campaigns/{camp.id}/stats", headers=camp.gm).json()["characters"]
    p = Fraction(odds["success"]["probability"])
    for name in OUTCOMES:
        assert c["outcomes"][name] == {
            "observed": outcomes.count(name),
            "expected": pytest.approx(3 * float(frac(odds, name))),
        }
    assert c["successes"]["expected"] == pytest.approx(3 * float(p))
    assert c["successes"]["sd"] == pytest.approx(math.sqrt(3 * p * (1 - p)))
    assert c["dice"] == {"d20": {"count": 3, "mean": 31 / 3, "expected_mean": 10.5}}


@pytest.mark.parametrize("ruleset, body", [(AS, {"skill": "survie", "difficulty": "moyen"}), (RB, {"stat": "FOR"})])
def test_issue29_item3_stats_count_every_ruleset(client, campaign_factory, character_factory, ruleset, body):
    camp = campaign_factory(ruleset)
    hero = character_factory(camp, sheet(ruleset))
    odds = client.post(f"/v1/characters/{hero['id']}/tests/odds", json=body, headers=camp.gm).json()
    for seed in range(4):
        assert (
            client.post(f"/v1/characters/{hero['id']}/tests", json={**body, "seed": seed}, headers=camp.gm).status_code
            == 201
        )
    whole = client.get(f"/v1/campaigns/{camp.id}/stats", headers=camp.gm).json()["campaign"]
    assert whole["tests"] == 4
    assert whole["successes"]["expected"] == pytest.approx(4 * odds["success"]["p"])


def test_issue29_item3_hidden_tests_count_for_the_gm_only(client, campaign_factory, character_factory, player_factory):
    camp = campaign_factory(GC)
    alice = player_factory(camp)
    hero = character_factory(camp, sheet(GC), player=alice)
    url = f"/v1/characters/{hero['id']}/tests"
    assert client.post(url, json={"stat": "force", "dice": [10]}, headers=camp.gm).status_code == 201
    assert client.post(url, json={"stat": "force", "seed": 7, "hidden": True}, headers=camp.gm).status_code == 201
    gm = client.get(f"/v1/campaigns/{camp.id}/stats", headers=camp.gm).json()["campaign"]
    player = client.get(f"/v1/campaigns/{camp.id}/stats", headers=alice.headers).json()["campaign"]
    assert gm["tests"] == 2 and player["tests"] == 1
    assert player["dice"] == {"d100": {"count": 1, "mean": 10.0, "expected_mean": 50.5}}
    other = campaign_factory(GC)
    assert client.get(f"/v1/campaigns/{camp.id}/stats", headers=other.gm).status_code == 404


def test_issue29_item3_tests_logged_without_figures_count_as_tests_without_odds(
    client, campaign_factory, character_factory, database
):
    """A test logged before migration 0012 has no figures: counted in `tests` only."""
    from sqlalchemy import text

    camp = campaign_factory(GC)
    hero = character_factory(camp, sheet(GC))
    url = f"/v1/characters/{hero['id']}/tests"
    for dice in ([10], [20]):
        client.post(url, json={"stat": "force", "dice": dice}, headers=camp.gm)
    with database.begin() as conn:  # the first as an older entry: its figures null
        first = conn.execute(text("SELECT min(seq) FROM roll_log WHERE campaign_id = :c"), {"c": camp.id}).scalar()
        conn.execute(
            text(
                "UPDATE roll_log SET outcome = NULL, p_any_success = NULL, p_success = NULL, p_failure = NULL, "
                "p_critical_success = NULL, p_super_critical_success = NULL, p_critical_failure = NULL, "
                "p_super_critical_failure = NULL, die_a = NULL, die_b = NULL WHERE seq = :s"
            ),
            {"s": first},
        )
    whole = client.get(f"/v1/campaigns/{camp.id}/stats", headers=camp.gm).json()["campaign"]
    assert whole["tests"] == 2 and whole["tests_without_odds"] == 1
    assert sum(o["observed"] for o in whole["outcomes"].values()) == 1
    assert whole["dice"]["d100"] == {"count": 1, "mean": 20.0, "expected_mean": 50.5}


def test_stats_of_an_unknown_or_secret_character_is_the_usual_404(
    client, campaign_factory, character_factory, player_factory
):
    """`character_id` names a character as every other route does: one that does not exist, one of another
    campaign, or (for a player) an NPC it may not know of is the same 404 as GET /v1/characters/{id}."""
    camp, other = campaign_factory(GC), campaign_factory(GC)
    alice = player_factory(camp)
    secret = client.post(
        f"/v1/campaigns/{camp.id}/characters",
        json={"name": "Ombre", "kind": "npc", "sheet": sheet(GC), "player_access": "none"},
        headers=camp.gm,
    ).json()
    foreign = character_factory(other, sheet(GC))

    def problem(character_id: str, headers) -> tuple[int, str, str]:
        r = client.get(f"/v1/campaigns/{camp.id}/stats", params={"character_id": character_id}, headers=headers)
        body = r.json()
        return r.status_code, body.get("code"), body.get("detail")

    unknown = client.get("/v1/characters/nosuchcharacter", headers=camp.gm).json()
    usual = (404, unknown["code"], unknown["detail"])
    assert problem("nosuchcharacter", camp.gm) == usual
    assert problem(foreign["id"], camp.gm) == usual
    assert problem(secret["id"], alice.headers) == problem("nosuchcharacter", alice.headers) == usual
    assert problem(secret["id"], camp.gm)[0] == 200  # the GM knows it
