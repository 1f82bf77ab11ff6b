"""Issue 25 item 6: a response subject to a rate limit carries the IETF `RateLimit-Policy` and
`RateLimit` fields (draft-ietf-httpapi-ratelimit-headers, structured-field lists), counted by the
hit itself (no second store round trip), in memory and on Redis; declared in openapi.json and
exposed by CORS; the 429's problem says which policy (`code: rate_limited`, `policy`)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.api.ratelimit import Quota, RateLimiter, quota_fields, watch_quotas
from app.kit.errors import TooManyRequests
from app.main import create_app

SPEC = json.loads((Path(__file__).resolve().parents[2] / "openapi.json").read_text())
POLICY = re.compile(r'"per-token";q=(\d+);w=(\d+)')
STATE = re.compile(r'"per-token";r=(\d+);t=(\d+)')


def _redis_up() -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", 6379)) == 0


def _client(settings, **changes) -> TestClient:
    return TestClient(create_app(settings.model_copy(update=changes)))


def _walk(client: TestClient) -> list:
    campaign = client.post("/v1/campaigns", json={"name": "x", "ruleset": "asgard"}).json()
    headers = {"Authorization": f"Bearer {campaign['gm_token']}"}
    return [client.get(f"/v1/campaigns/{campaign['id']}", headers=headers) for _ in range(4)]


def _check(responses: list) -> None:
    assert [r.status_code for r in responses] == [200, 200, 200, 429]
    for r in responses:
        assert POLICY.fullmatch(r.headers["RateLimit-Policy"]).groups() == ("3", "60")
    left = [int(STATE.fullmatch(r.headers["RateLimit"])[1]) for r in responses]
    resets = [int(STATE.fullmatch(r.headers["RateLimit"])[2]) for r in responses]
    assert left == [2, 1, 0, 0]
    assert all(55 <= t <= 60 for t in resets), resets
    refused = responses[-1]
    body = refused.json()
    assert body["code"] == "rate_limited" and body["policy"] == "per-token"
    assert 1 <= int(refused.headers["Retry-After"]) <= 60


def test_issue25_item6_ratelimit_fields_count_down_in_memory(settings, db_session):
    with _client(settings, rate_limit_per_minute=3, redis_url=None) as client:
        _check(_walk(client))


@pytest.mark.skipif(not _redis_up(), reason="Redis on 127.0.0.1:6379 needed")
def test_issue25_item6_ratelimit_fields_count_down_on_redis_in_one_script(settings, db_session):
    prefix = f"jdr-test-{uuid.uuid4().hex}"
    with _client(
        settings, rate_limit_per_minute=3, redis_url="redis://127.0.0.1:6379/0", redis_key_prefix=prefix
    ) as client:
        responses = _walk(client)
        limiter: RateLimiter = client.app.state.rate_limiter
        assert limiter._counted is not None and not limiter._shared_down_until  # counted by the script, on Redis
    _check(responses)


def test_issue25_item6_no_fields_where_no_limit_applies(client, campaign):
    assert "RateLimit" not in client.get(f"/v1/campaigns/{campaign.id}", headers=campaign.gm).headers  # off: 0
    assert "RateLimit" not in client.get("/v1/rulesets").headers


def test_issue25_item6_the_fields_are_structured_field_lists():
    assert quota_fields([]) == []
    fields = dict(quota_fields([Quota("per-token", 120, 60, 57, 30), Quota("campaign-creation", 20, 3600, 19, 3599)]))
    assert fields[b"ratelimit-policy"] == b'"per-token";q=120;w=60, "campaign-creation";q=20;w=3600'
    assert fields[b"ratelimit"] == b'"per-token";r=57;t=30, "campaign-creation";r=19;t=3599'


def test_issue25_item6_a_refused_hit_reports_nothing_left(settings):
    limiter = RateLimiter(settings.model_copy(update={"rate_limit_per_minute": 1, "redis_url": None}))

    async def scenario() -> list[Quota]:
        quotas = watch_quotas()
        await limiter.hit_token("t")
        with pytest.raises(TooManyRequests) as refused:
            await limiter.hit_token("t")
        assert refused.value.code == "rate_limited" and refused.value.extra == {"policy": "per-token"}
        return quotas

    quotas = asyncio.run(scenario())
    assert [(q.policy, q.quota, q.remaining) for q in quotas] == [("per-token", 1, 0)]  # one entry a policy


def test_issue25_item6_declared_and_exposed(settings, db_session):
    headers = SPEC["components"]["headers"]
    assert {"RateLimit", "RateLimit-Policy"} <= set(headers)
    op = SPEC["paths"]["/v1/characters/{character_id}/tests"]["post"]
    for status in ("201", "429"):
        assert {"RateLimit", "RateLimit-Policy"} <= set(op["responses"][status]["headers"])
    assert "RateLimit" not in SPEC["paths"]["/v1/rulesets"]["get"]["responses"]["200"]["headers"]
    with _client(settings, cors_origins=["https://vtt.example"]) as client:
        r = client.get("/v1/rulesets", headers={"Origin": "https://vtt.example"})
        exposed = {h.strip().lower() for h in r.headers["access-control-expose-headers"].split(",")}
        assert {"ratelimit", "ratelimit-policy", "x-request-id"} <= exposed


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_issue25_item6_a_counted_hit_is_one_store_call(settings, monkeypatch, store):
    """The hot path: a hit that is let through costs no second call (no `get_window_stats`)."""
    if store == "redis" and not _redis_up():
        pytest.skip("Redis on 127.0.0.1:6379 needed")
    url = "redis://127.0.0.1:6379/0" if store == "redis" else None
    prefix = f"jdr-test-{uuid.uuid4().hex}"
    limiter = RateLimiter(
        settings.model_copy(update={"rate_limit_per_minute": 5, "redis_url": url, "redis_key_prefix": prefix})
    )
    calls: list[str] = []

    async def counted(method, item, *key):
        calls.append(method)
        raise AssertionError("no second store call on a counted hit")

    monkeypatch.setattr(limiter, "_call", counted)

    async def scenario() -> list[Quota]:
        quotas = watch_quotas()
        for _ in range(3):
            await limiter.hit_token("t")
        return quotas

    quotas = asyncio.run(scenario())
    assert calls == [] and [q.remaining for q in quotas] == [2]
    assert (limiter._counted is not None) == (store == "redis") and not limiter._shared_down_until
