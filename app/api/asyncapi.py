"""The AsyncAPI 3 document of the event stream, served at `/asyncapi.json`
beside `/openapi.json`: one channel, the campaign's stream (`GET /v1/campaigns/{id}/events`,
Server-Sent Events), and one message per event name, whose payload is the same schema as
openapi.json's `x-events` names (taken from the OpenAPI document itself, so the two never differ)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from app.api.openapi_doc import LICENSE, SERVERS, events_extension, message_name

ASYNCAPI_URL = "/asyncapi.json"
STREAM = "/v1/campaigns/{campaign_id}/events"
REF = "#/components/schemas/"


def _asyncapi_schema(node: Any) -> Any:
    """An OpenAPI schema as an AsyncAPI Schema Object: the same JSON Schema, but a discriminator is
    the property's name (OpenAPI's `{propertyName, mapping}`; the `oneOf` lists the variants)."""
    if isinstance(node, dict):
        out = {k: _asyncapi_schema(v) for k, v in node.items()}
        if isinstance(node.get("discriminator"), dict):
            out["discriminator"] = node["discriminator"]["propertyName"]
        return out
    if isinstance(node, list):
        return [_asyncapi_schema(v) for v in node]
    return node


def _referenced(schemas: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    """The schemas `roots` name and every schema they reference, transitively (as AsyncAPI schemas)."""
    found: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found[name] = schemas[name]
        stack: list[Any] = [schemas[name]]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                ref = node.get("$ref")
                if isinstance(ref, str) and ref.startswith(REF):
                    todo.append(ref[len(REF) :])
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    return {name: _asyncapi_schema(found[name]) for name in sorted(found)}


def build_asyncapi(openapi: dict[str, Any]) -> dict[str, Any]:
    events = events_extension()
    payloads = [e["data"]["$ref"][len(REF) :] for e in events]
    messages = {
        message_name(e["event"]): {
            "name": e["event"],
            "title": e["event"],
            "summary": e["description"].split("\n", 1)[0],
            "contentType": "application/json",
            "payload": {"$ref": REF + payload},
        }
        for e, payload in zip(events, payloads)
    }
    server = SERVERS[0]
    host = server["url"].split("://", 1)[1]
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": f"{openapi['info']['title']} events",
            "version": openapi["info"]["version"],
            "description": "The campaign's event stream, as Server-Sent Events: each message's `event:` line is "
            "the message name, `data:` its JSON payload, `id:` the event number to resume from "
            "(`Last-Event-ID`). Authenticate with the campaign's bearer token, or a one-use ticket from "
            "`POST /v1/campaigns/{campaign_id}/events/tickets` (see openapi.json).",
            "license": {"name": LICENSE["name"], "url": "https://opensource.org/license/mit"},
        },
        "defaultContentType": "application/json",
        "servers": {
            "local": {
                "host": host,
                "protocol": server["url"].split("://", 1)[0],
                "description": server["description"],
                "security": [{"$ref": "#/components/securitySchemes/bearer"}],
            }
        },
        "channels": {
            "campaignEvents": {
                "address": STREAM,
                "title": "A campaign's events",
                "description": "Each viewer receives the events as it may read them (API.md: per viewer).",
                "parameters": {"campaign_id": {"description": "The campaign's id."}},
                "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in messages},
            }
        },
        "operations": {
            "receiveCampaignEvents": {
                "action": "receive",
                "channel": {"$ref": "#/channels/campaignEvents"},
                "summary": "Follow a campaign's events (GET, text/event-stream).",
                "messages": [{"$ref": f"#/channels/campaignEvents/messages/{name}"} for name in messages],
            }
        },
        "components": {
            "messages": messages,
            "schemas": _referenced(openapi["components"]["schemas"], payloads),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "The gm_token or a player's token."}
            },
        },
    }


def install_asyncapi(app: FastAPI) -> None:
    document: dict[str, Any] = {}

    @app.get(ASYNCAPI_URL, include_in_schema=False)
    async def asyncapi() -> JSONResponse:
        if not document:
            document.update(build_asyncapi(app.openapi()))
        return JSONResponse(document)
