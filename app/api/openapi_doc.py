"""The OpenAPI document, with the ruleset-dependent request bodies spelled out:
an endpoint whose body depends on the campaign's ruleset lists each ruleset's
schema under `anyOf` (tagged with `x-ruleset`)."""
from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema

from app.services.rulesets import all_adapters
from app.services.rulesets.base import Capability

REF = "#/components/schemas/{model}"

# (method, path) -> which models of each adapter its body may be
BODIES: dict[tuple[str, str], Capability] = {
    ("post", "/v1/characters/{character_id}/tests"): Capability.TEST,
    ("post", "/v1/characters/{character_id}/tests/odds"): Capability.ODDS,
    ("post", "/v1/characters/{character_id}/tests/{test_id}/reroll"): Capability.REROLL,
    ("post", "/v1/characters/{character_id}/level-ups"): Capability.LEVEL_UP,
    ("post", "/v1/campaigns/{campaign_id}/tests/opposed"): Capability.OPPOSED,
    ("post", "/v1/campaigns/{campaign_id}/tests/group"): Capability.GROUP,
    ("post", "/v1/characters/{character_id}/actions"): Capability.ACTION,
}


PROBLEM_SCHEMA = {
    "title": "Problem",
    "description": "RFC 9457 problem details; `errors` lists each invalid field of a 422.",
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "errors": {"type": "array", "items": {
            "type": "object", "required": ["loc", "msg"],
            "properties": {"loc": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                           "msg": {"type": "string"}}}},
    },
    "additionalProperties": True,
}
ERRORS = {
    "4XX": "The request was refused: 401 no or bad token, 403 not allowed, 404 unknown (or another "
           "campaign's), 409 conflict, 412 stale If-Match, 413 too large, 422 invalid, 429 rate limited.",
    "5XX": "The service could not answer (503: the database is unavailable; retry).",
}


def _problem_responses(schema: dict[str, Any]) -> None:
    """Every error is application/problem+json (API.md), 422 included: say so for every operation."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["Problem"] = PROBLEM_SCHEMA
    content = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for path in schema["paths"].values():
        for operation in path.values():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for code, description in ERRORS.items():
                responses[code] = {"description": description, "content": content}
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)


def build_openapi(app: FastAPI) -> dict[str, Any]:
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    _problem_responses(schema)
    adapters = all_adapters()
    models = sorted({m for a in adapters for cap in BODIES.values() for m in a.request_models(cap)}, key=lambda m: (m.__module__, m.__qualname__))
    refs, defs = models_json_schema([(m, "validation") for m in models], ref_template=REF)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.update(defs.get("$defs", {}))
    for (method, path), capability in BODIES.items():
        operation = schema["paths"].get(path, {}).get(method)
        if operation is None:
            continue
        choices = [{**refs[(m, "validation")], "x-ruleset": a.id} for a in adapters for m in a.request_models(capability)]
        body = operation.setdefault("requestBody", {"required": True, "content": {"application/json": {}}})
        body["content"]["application/json"]["schema"] = {"anyOf": choices} if choices else {"type": "object"}
    return schema


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
