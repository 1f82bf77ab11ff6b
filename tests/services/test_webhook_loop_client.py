"""The webhook delivery loop makes its HTTP client at its first delivery, not as it starts (issue 22
item 1: its TLS context cost ~20 ms of CPU at each start of the app, and every in-process test starts
one); a delivery still gets one, closed when the loop stops."""

from __future__ import annotations

import time

import httpx
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.services import webhook_delivery


@pytest.fixture
def clients(monkeypatch) -> tuple[list[httpx.AsyncClient], list[int]]:
    """The loop's HTTP clients as they are made, and its ticks."""
    made: list[httpx.AsyncClient] = []
    ticks: list[int] = []

    class Counted(httpx.AsyncClient):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    tick = webhook_delivery.Dispatcher.tick

    async def counted_tick(self):
        ticks.append(1)
        await tick(self)

    monkeypatch.setattr(webhook_delivery.httpx, "AsyncClient", Counted)
    monkeypatch.setattr(webhook_delivery.Dispatcher, "tick", counted_tick)
    return made, ticks


def _until(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds  # a liveness bound: the loop's first tick is immediate
    while not condition():
        assert time.monotonic() < deadline, "the delivery loop never got there"
        time.sleep(0.01)


def test_an_app_with_no_webhook_to_deliver_makes_no_http_client(settings, database, clients):
    made, ticks = clients
    settings.webhook_delivery = True
    with TestClient(create_app(settings)) as client:
        assert client.get("/healthz").status_code == 200
        _until(lambda: ticks)
    assert ticks and made == []


def test_a_delivery_makes_the_client_and_the_loop_closes_it(settings, database, clients, monkeypatch):
    made, _ = clients
    posted: list[str] = []

    async def post(client, out, settings):
        posted.append(out.webhook_id)
        assert client is made[0]
        return await real_post(client, out, settings)

    real_post = webhook_delivery.post
    monkeypatch.setattr(webhook_delivery, "post", post)
    settings.webhook_delivery = True
    settings.webhook_allow_private = True
    with TestClient(create_app(settings)) as client:
        r = client.post("/v1/campaigns", json={"name": "Hooked", "ruleset": "great-cosmos"})
        assert r.status_code == 201, r.text
        gm = {"Authorization": f"Bearer {r.json()['gm_token']}"}
        url = "http://127.0.0.1:9/hook"  # nothing listens: the attempt fails, it was made
        cid = r.json()["id"]
        r = client.post(f"/v1/campaigns/{cid}/webhooks", json={"url": url}, headers=gm)
        assert r.status_code == 201, r.text
        r = client.post(f"/v1/campaigns/{cid}/players", json={"name": "Alice"}, headers=gm)  # an event to deliver
        assert r.status_code == 201, r.text
        _until(lambda: posted)
        assert len(made) == 1 and not made[0].is_closed
    assert made[0].is_closed
