"""Rate limit (429 + Retry-After), CORS for browser frontends."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from types import SimpleNamespace

from fastapi.testclient import TestClient

from app.api.ratelimit import RateLimiter
from app.kit.errors import TooManyRequests
from app.main import create_app

import pytest


def app_with(settings, db_session, **changes):
    application = create_app(settings.model_copy(update=changes))
    return application


def test_rate_limit_answers_429_with_retry_after(settings, db_session):
    with TestClient(app_with(settings, db_session, rate_limit_per_minute=3)) as client:
        campaign = client.post("/v1/campaigns", json={"name": "x", "ruleset": "asgard"}).json()
        headers = {"Authorization": f"Bearer {campaign['gm_token']}"}
        statuses = [client.get(f"/v1/campaigns/{campaign['id']}", headers=headers).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        r = client.get(f"/v1/campaigns/{campaign['id']}", headers=headers)
        assert r.status_code == 429 and r.headers["content-type"] == "application/problem+json"
        assert 1 <= int(r.headers["Retry-After"]) <= 60


def test_rate_limiter_window_slides(settings, monkeypatch):
    now = [1000.0]
    clock = SimpleNamespace(time=lambda: now[0], monotonic=time.monotonic)
    monkeypatch.setattr("limits.aio.storage.memory.time", clock)  # the store's clock (limits' in-memory storage)
    monkeypatch.setattr("app.api.ratelimit.time", clock)
    limiter = RateLimiter(settings.model_copy(update={"rate_limit_per_minute": 2, "redis_url": None}))

    async def scenario() -> None:
        await limiter.hit_token("t")
        now[0] += 30
        await limiter.hit_token("t")
        with pytest.raises(TooManyRequests) as err:
            await limiter.hit_token("t")
        assert err.value.retry_after == 30
        await limiter.hit_token("other")  # per token
        now[0] += 30.01
        await limiter.hit_token("t")  # the first hit left the window

    asyncio.run(scenario())


def test_an_unreachable_redis_falls_back_to_memory(settings, db_session, caplog):
    """REDIS_URL set but nothing listening: no 500, the limit still holds (per process), a log line says so."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with caplog.at_level(logging.WARNING, logger="app.ratelimit"):
        with TestClient(
            app_with(settings, db_session, rate_limit_per_minute=3, redis_url=f"redis://127.0.0.1:{port}/0"),
            raise_server_exceptions=False,
        ) as client:
            campaign = client.post("/v1/campaigns", json={"name": "x", "ruleset": "asgard"}).json()
            headers = {"Authorization": f"Bearer {campaign['gm_token']}"}
            statuses = [client.get(f"/v1/campaigns/{campaign['id']}", headers=headers).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    assert [r.message for r in caplog.records if "Redis unavailable" in r.message], caplog.text


def test_rate_limit_is_off_by_default(client, campaign_factory):
    c = campaign_factory("asgard")
    assert {client.get(f"/v1/campaigns/{c.id}", headers=c.gm).status_code for _ in range(50)} == {200}


def test_cors_allows_configured_origins_only(settings, db_session):
    with TestClient(app_with(settings, db_session, cors_origins=["https://vtt.example"])) as client:
        ok = client.options(
            "/v1/rulesets", headers={"Origin": "https://vtt.example", "Access-Control-Request-Method": "POST"}
        )
        assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "https://vtt.example"
        other = client.get("/v1/rulesets", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
