"""CORS for browser frontends served from another origin (CORS_ORIGINS): the
preflight of every route answers, and the headers a client needs are readable
from JavaScript (issue 14, item 3)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.main import create_app

ORIGIN = "https://vtt.example"
HEADERS = "authorization, content-type, if-match, idempotency-key, last-event-id"


@pytest.fixture
def cors_app(database_url, db_session):
    app = create_app(
        Settings(database_url=database_url, admin_token=None, rate_limit_per_minute=0, cors_origins=[ORIGIN])
    )
    return app


def test_the_preflight_of_every_route_allows_the_origin(cors_app):
    routes = [
        (m.upper(), path)
        for path, item in cors_app.openapi()["paths"].items()
        for m in item
        if m in ("get", "put", "post", "patch", "delete")
    ] + [("GET", "/docs"), ("GET", "/redoc")]
    assert len(routes) > 30
    with TestClient(cors_app) as http:
        for method, path in routes:
            url = re.sub(r"\{[^}]+\}", "x", path)
            r = http.options(
                url,
                headers={
                    "Origin": ORIGIN,
                    "Access-Control-Request-Method": method,
                    "Access-Control-Request-Headers": HEADERS,
                },
            )
            assert r.status_code == 200, (method, path, r.status_code, r.text)
            assert r.headers["access-control-allow-origin"] == ORIGIN, (method, path)
            assert method in r.headers["access-control-allow-methods"], (method, path)
            assert r.headers["access-control-allow-headers"].lower() == HEADERS, (method, path)
        r = http.options(
            "/v1/rulesets", headers={"Origin": "https://elsewhere.example", "Access-Control-Request-Method": "GET"}
        )
        assert "access-control-allow-origin" not in r.headers  # another origin is not allowed


def test_etag_location_and_retry_after_are_exposed(cors_app):
    with TestClient(cors_app) as http:
        created = http.post("/v1/campaigns", json={"name": "C", "ruleset": "asgard"}, headers={"Origin": ORIGIN})
        assert created.status_code == 201, created.text
        r = http.get(
            f"/v1/campaigns/{created.json()['id']}",
            headers={"Origin": ORIGIN, "Authorization": f"Bearer {created.json()['gm_token']}"},
        )
        assert r.status_code == 200 and r.headers["etag"]
        assert r.headers["access-control-allow-origin"] == ORIGIN
        exposed = {h.strip().lower() for h in r.headers["access-control-expose-headers"].split(",")}
        assert {"etag", "location", "retry-after"} <= exposed, exposed
        assert {h.strip().lower() for h in created.headers["access-control-expose-headers"].split(",")} >= {"location"}
