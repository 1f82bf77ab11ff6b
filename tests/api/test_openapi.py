"""openapi.json is generated from the app and committed: it must never be stale."""
from __future__ import annotations

import json
from pathlib import Path

from app.openapi import render

ROOT = Path(__file__).resolve().parents[2]


def test_committed_openapi_json_matches_the_app():
    committed = json.loads((ROOT / "openapi.json").read_text())
    assert committed == json.loads(render()), "openapi.json is stale: run `make openapi`"


def test_ruleset_dependent_bodies_list_every_ruleset():
    spec = json.loads(render())
    body = spec["paths"]["/v1/characters/{character_id}/tests"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert sorted(c["x-ruleset"] for c in body["anyOf"]) == ["asgard", "great-cosmos", "rulebook-d100", "worlds-awakening"]
    for choice in body["anyOf"]:
        assert choice["$ref"].split("/")[-1] in spec["components"]["schemas"]


def test_served_openapi_is_the_committed_one(client):
    assert client.get("/openapi.json").json() == json.loads((ROOT / "openapi.json").read_text())
