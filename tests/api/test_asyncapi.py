"""Issue 25 item 8: the event stream's AsyncAPI 3 document, served beside openapi.json: one
message per event, each payload the very schema openapi.json's `x-events` names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from app.api.asyncapi import _asyncapi_schema
from app.api.openapi_doc import CONTRACT_VERSION
from app.rulesets.events import EVENTS


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return ([node["$ref"]] if isinstance(node.get("$ref"), str) else []) + [
            r for v in node.values() for r in _refs(v)
        ]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _resolve(document: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = document
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def test_the_asyncapi_document_names_every_event_with_the_openapi_payload(client):
    r = client.get("/asyncapi.json")  # public, like openapi.json
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    doc = r.json()
    assert doc["asyncapi"] == "3.0.0" and doc["info"]["version"] == CONTRACT_VERSION
    openapi = client.get("/openapi.json").json()
    messages = doc["components"]["messages"]
    assert sorted(m["name"] for m in messages.values()) == sorted(EVENTS)
    x_events = next(op["x-events"] for ops in openapi["paths"].values() for op in ops.values() if "x-events" in op)
    named = {e["event"]: e["data"]["$ref"] for e in x_events}
    for message in messages.values():
        assert message["payload"]["$ref"] == named[message["name"]]
        name = message["payload"]["$ref"].rsplit("/", 1)[1]
        # the same schema (a discriminator, AsyncAPI's: its property's name; `CampaignUpdatedEvent` is a union by ruleset)
        assert doc["components"]["schemas"][name] == _asyncapi_schema(openapi["components"]["schemas"][name])
    channel = doc["channels"]["campaignEvents"]
    assert channel["address"] == "/v1/campaigns/{campaign_id}/events" and set(channel["parameters"]) == {"campaign_id"}
    operation = doc["operations"]["receiveCampaignEvents"]
    assert operation["action"] == "receive" and len(operation["messages"]) == len(EVENTS)


def test_every_reference_of_the_asyncapi_document_resolves_inside_it(client):
    doc = client.get("/asyncapi.json").json()
    refs = _refs(doc)
    assert len(refs) > 2 * len(EVENTS)
    for ref in refs:
        assert _resolve(doc, ref) is not None, ref


def test_the_asyncapi_document_is_valid_against_the_asyncapi_3_schema(client):
    schema = json.loads((Path(__file__).parent / "data" / "asyncapi-3.0.0.schema.json").read_text())
    errors = [
        f"{list(e.path)}: {e.message[:200]}"
        for e in jsonschema.Draft7Validator(schema).iter_errors(client.get("/asyncapi.json").json())
    ]
    assert errors == []
