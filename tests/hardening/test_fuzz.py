"""Schemathesis against the committed openapi.json, run in-process against the
ASGI app on the suite's per-test database (one rolled-back transaction per
ruleset's run).

Each ruleset gets its own copy of the document in which the ruleset-dependent
bodies (`anyOf` tagged `x-ruleset`) keep only that ruleset's schema, and runs
with the GM token of a seeded campaign of that ruleset: one character, one
player, one logged test. Path parameters hit the real ids three times in four,
so the generated bodies reach the rules, not only the 404s.

Checks on every response: no 5xx, the body conforms to the documented schema,
and every 4xx/5xx is application/problem+json with type/title/status/detail."""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.hardening.conftest import ROOT, RULESETS, SHEETS, TEST_BODIES

MAX_EXAMPLES = 25
RAW = json.loads((ROOT / "openapi.json").read_text())
# "ruleset METHOD path" -> {status: requests}; printed at the end of the run (see conftest.py)
CALLS: dict[str, dict[int, int]] = {}


def for_ruleset(raw: dict[str, Any], ruleset: str) -> dict[str, Any]:
    """The document with each ruleset-dependent body narrowed to `ruleset`'s schema
    (an operation the ruleset lacks keeps every schema: it must answer 422)."""
    spec = copy.deepcopy(raw)
    spec["info"]["x-fuzz-ruleset"] = ruleset
    for operations in spec["paths"].values():
        for operation in operations.values():
            content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            choices = content.get("schema", {}).get("anyOf", [])
            if choices and all("x-ruleset" in c for c in choices):
                mine = [c for c in choices if c["x-ruleset"] == ruleset]
                if mine:
                    content["schema"]["anyOf"] = mine
    return spec


# generated cases only: the schema's own examples cannot be combined with `given(data=...)`
CONFIG = {"phases": {"examples": {"enabled": False}, "coverage": {"enabled": False}},
          "generation": {"mode": "all"}}
# great-cosmos runs every operation; the other rulesets the ones whose body or
# behaviour depends on the ruleset (sheets, tests, odds, rerolls, actions, level-ups, group tests)
RULESET_DEPENDENT = [
    "POST /v1/campaigns/{campaign_id}/characters", "PATCH /v1/characters/{character_id}",
    "POST /v1/characters/{character_id}/tests", "POST /v1/characters/{character_id}/tests/odds",
    "POST /v1/characters/{character_id}/tests/{test_id}/reroll", "POST /v1/characters/{character_id}/actions",
    "POST /v1/characters/{character_id}/level-ups", "POST /v1/campaigns/{campaign_id}/tests/opposed",
    "POST /v1/campaigns/{campaign_id}/tests/group",
]


def load(ruleset: str):
    schema = schemathesis.openapi.from_dict(for_ruleset(RAW, ruleset), config=SchemathesisConfig.from_dict(CONFIG))
    return schema if ruleset == "great-cosmos" else schema.include(name=RULESET_DEPENDENT)


SCHEMAS = {r.replace("-", "_"): load(r) for r in RULESETS}
PROBLEM_FIELDS = {"type": str, "title": str, "status": int, "detail": str}


def problem_json(ctx, response, case) -> None:
    """Every error is RFC 9457 problem+json with type, title, status and detail."""
    if response.status_code < 400:
        return
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.startswith("application/problem+json"), (
        f"{response.status_code} with Content-Type {content_type!r}: {response.text[:300]}")
    body = response.json()
    for name, kind in PROBLEM_FIELDS.items():
        assert isinstance(body.get(name), kind), f"problem body lacks {name}: {body}"
    assert body["status"] == response.status_code, body


@pytest.fixture
def world(client, campaign_factory, player_factory, character_factory):
    """Per ruleset (built on first use, in this test's transaction): a campaign,
    a player, a character and one logged test; the ids the fuzzer may aim at."""
    built: dict[str, dict[str, Any]] = {}

    def get(ruleset: str) -> dict[str, Any]:
        if ruleset not in built:
            camp = campaign_factory(ruleset)
            player = player_factory(camp)
            hero = character_factory(camp, SHEETS[ruleset])
            r = client.post(f"/v1/characters/{hero['id']}/tests", json=TEST_BODIES[ruleset], headers=camp.gm)
            assert r.status_code == 201, r.text
            built[ruleset] = {
                "headers": camp.gm, "client": client, "campaign": camp, "player_id": player.id,
                "ids": {"campaign_id": camp.id, "character_id": hero["id"], "test_id": r.json()["id"],
                        "entry_id": r.json()["id"], "ruleset": ruleset},
            }
        return built[ruleset]

    return get


REAL = st.integers(0, 3).map(bool)  # three times in four


def aim_at_real_ids(case, world: dict[str, Any], data) -> None:
    """Three times in four each path parameter (and each `character_id` of the body) is a real id."""
    ids = world["ids"]
    for name in list(case.path_parameters or {}):
        if name in ids and data.draw(REAL, label=f"real {name}"):
            case.path_parameters[name] = ids[name]
    if case.operation.method.upper() == "DELETE" and case.path_parameters.get("character_id") == ids["character_id"]:
        # deleting the seeded character would leave the later examples nothing to aim at: delete a fresh one
        camp = world["campaign"]
        r = world["client"].post(f"/v1/campaigns/{camp.id}/characters", headers=camp.gm,
                                 json={"name": "Doomed", "kind": "npc", "sheet": SHEETS[camp.ruleset]})
        assert r.status_code == 201, r.text
        case.path_parameters["character_id"] = r.json()["id"]

    def swap(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "character_id" and isinstance(value, str) and data.draw(REAL, label="real body id"):
                    node[key] = ids["character_id"]
                else:
                    swap(value)
        elif isinstance(node, list):
            for item in node:
                swap(item)

    if isinstance(case.body, (dict, list)):
        swap(case.body)


@schemathesis.pytest.parametrize(**SCHEMAS)
@SCHEMAS["great_cosmos"].given(data=st.data())
@settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
def test_fuzz(case, data, app, world):
    ruleset = case.operation.schema.raw_schema["info"]["x-fuzz-ruleset"]
    seeded = world(ruleset)
    aim_at_real_ids(case, seeded, data)
    if case.operation.path.endswith("/events"):
        case.query = {**(case.query or {}), "follow": "false"}  # the live tail never ends on its own
    headers = {**(case.headers or {}), **seeded["headers"]}
    checks = [not_a_server_error, problem_json]
    if not case.operation.path.endswith("/events"):
        # the stream is documented as {"type": "string"}, which Schemathesis 4 applies to each parsed event
        checks.append(response_schema_conformance)
    response = case.call(app=app, headers=headers)
    counts = CALLS.setdefault(f"{ruleset} {case.operation.method.upper()} {case.operation.path}", {})
    counts[response.status_code] = counts.get(response.status_code, 0) + 1
    case.validate_response(response, checks=checks, headers=headers, transport_kwargs={"app": app, "headers": headers})


def test_openapi_documents_errors_as_problem_json():
    wrong = []
    for path, operations in RAW["paths"].items():
        for method, operation in operations.items():
            for status, response in operation.get("responses", {}).items():
                if status.isdigit() and int(status) >= 400 and "application/problem+json" not in response.get("content", {}):
                    wrong.append(f"{method.upper()} {path} {status}: {sorted(response.get('content', {}))}")
    assert not wrong, "\n".join(wrong)
