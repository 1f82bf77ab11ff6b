"""The odds route's documented body is what it accepts: each ruleset's test request
without `seed`, `dice` and `hidden` (nothing is rolled nor logged: the route refuses
them with 422), as `<Ruleset>OddsRequest`."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from app.openapi import render
from app.rulesets.registry import get_adapter

SPEC = json.loads(render())
ODDS = "/v1/characters/{character_id}/tests/odds"
TESTS = "/v1/characters/{character_id}/tests"
ROLLING = {"seed", "dice", "hidden"}
PREFIX = {
    "great-cosmos": "GreatCosmos",
    "asgard": "Asgard",
    "rulebook-d100": "RulebookD100",
    "worlds-awakening": "WorldsAwakening",
}


def documented(path: str, ruleset: str) -> dict:
    body = SPEC["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    ref = next(c["$ref"] for c in body.get("oneOf", body.get("anyOf", [])) if c["x-ruleset"] == ruleset)
    return SPEC["components"]["schemas"][ref.rsplit("/", 1)[1]]


@pytest.mark.parametrize("ruleset", PREFIX)
def test_the_odds_body_is_the_test_body_without_the_fields_of_rolling(ruleset):
    odds, test = documented(ODDS, ruleset), documented(TESTS, ruleset)
    assert odds["title"] == f"{PREFIX[ruleset]}OddsRequest"
    assert ROLLING <= set(test["properties"])
    assert set(odds["properties"]) == set(test["properties"]) - ROLLING
    assert {k: v for k, v in test["properties"].items() if k not in ROLLING} == odds["properties"]
    assert odds["additionalProperties"] is False and odds.get("required", []) == test.get("required", [])


@pytest.mark.parametrize("ruleset", PREFIX)
@pytest.mark.parametrize(
    "unused",
    [{"dice": [4]}, {"seed": 7}, {"hidden": True}, {"hidden": False}, {"seed": None}],
    ids=["dice", "seed", "hidden", "hidden-false", "seed-null"],
)
def test_the_odds_model_refuses_what_the_route_refuses(ruleset, unused):
    model = get_adapter(ruleset).OddsRequest
    body = SPEC["paths"][ODDS]["post"]["requestBody"]["content"]["application/json"]["examples"]
    example = next(e["value"] for name, e in body.items() if name.startswith(ruleset))
    model.model_validate(example)
    with pytest.raises(ValidationError) as refused:
        model.model_validate({**example, **unused})
    assert [e["loc"] for e in refused.value.errors()] == [tuple(unused)]
