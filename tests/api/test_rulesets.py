"""GET /v1/rulesets and /v1/rulesets/{id}: the catalogue a client builds its forms from."""

from __future__ import annotations

import pytest

RULESETS = ["great-cosmos", "asgard", "rulebook-d100", "worlds-awakening"]


def test_the_four_rulesets_are_listed_without_a_token(client):
    r = client.get("/v1/rulesets")
    assert r.status_code == 200
    assert [item["id"] for item in r.json()["items"]] == RULESETS
    assert r.json()["next_cursor"] is None


@pytest.mark.parametrize("ruleset", RULESETS)
def test_each_ruleset_describes_stats_difficulties_options_and_sheet(client, ruleset):
    body = client.get(f"/v1/rulesets/{ruleset}").json()
    assert body["id"] == ruleset
    assert body["stats"], "a client needs the stat (or skill) names"
    assert isinstance(body["difficulties"], dict)
    assert body["options"]["defaults"]["players_may_enter_dice"] is False
    assert set(body["options"]["defaults"]) == set(body["options"]["schema"]["properties"])
    assert body["sheet_schema"]["type"] == "object" and body["sheet_schema"]["properties"]
    assert body["test_request_schema"]["additionalProperties"] is False


def test_catalogue_values_follow_the_rules_pages(client):
    gc = client.get("/v1/rulesets/great-cosmos").json()
    assert gc["stats"] == ["force", "esprit", "charisme", "agilite", "precision", "chance"]  # GC-S1
    asgard = client.get("/v1/rulesets/asgard").json()
    assert {k: v for k, v in asgard["difficulties"].items() if v is not None} == {
        "facile": 10,
        "moyen": 15,
        "difficile": 20,
        "heroique": 25,
    }  # AS-T2
    rb = client.get("/v1/rulesets/rulebook-d100").json()
    assert rb["difficulties"]["difficile"] == -30 and rb["difficulties"]["simplissime"] == 100  # RB-T2
    wa = client.get("/v1/rulesets/worlds-awakening").json()
    assert wa["stats"] == ["FOR", "DEX", "CON", "INT", "SAG", "CHA"]  # WA-S1


def test_campaign_options_defaults_are_the_catalogue_defaults(client, campaign_factory):
    for ruleset in RULESETS:
        c = campaign_factory(ruleset)
        assert c.body["options"] == client.get(f"/v1/rulesets/{ruleset}").json()["options"]["defaults"]


def test_unknown_ruleset_is_a_404_problem(client):
    r = client.get("/v1/rulesets/dnd5e")
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
