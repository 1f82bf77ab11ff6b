"""Issue 28 item 4: PostgreSQL LISTEN/NOTIFY wakes the event hub (app.core.notify, migration
0011's triggers), and a worker's connections are bounded (DB_MAX_CONNECTIONS)."""

from __future__ import annotations

import asyncio

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.api.event_hub import POLL_SECONDS, EventHub
from app.core.db import Bounds, SessionOpener, _green_engine, engine_for
from app.core.notify import CREDENTIALS, EVENTS, WEBHOOKS, listener, wake_or_timeout
from app.core.security import hash_token
from app.main import create_app
from app.services.records import Principal
from tests.conftest import settings_for


@pytest.fixture
def pg(engine, database):
    if engine.dialect.name != "postgresql":
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    return engine


def _campaign(client) -> tuple[str, str]:
    r = client.post("/v1/campaigns", json={"name": "Heard", "ruleset": "great-cosmos"})
    assert r.status_code == 201, r.text
    return r.json()["id"], r.json()["gm_token"]


async def new_player_reaches(hub: EventHub, sub, client, cid: str, gm: dict[str, str]) -> float:
    """Seconds from a request adding a player to the campaign (served by `client`) to its event in
    `sub`'s queue (at most 10 s); the subscription ends."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    r = await asyncio.to_thread(client.post, f"/v1/campaigns/{cid}/players", json={"name": "P"}, headers=gm)
    assert r.status_code == 201, r.text
    _number, encoded = await asyncio.wait_for(sub.queue.get(), 10)
    assert b"player.created" in encoded
    hub.unsubscribe(sub)
    return loop.time() - started


async def _heard(found) -> None:
    for _ in range(200):
        if found.heard:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("LISTEN never took")


def test_issue28_item4_commits_notify_events_credentials_and_webhooks(pg, client, database_url):
    cid, token = _campaign(client)
    gm = {"Authorization": f"Bearer {token}"}
    heard: list[tuple[str, str | None]] = []

    async def main() -> None:
        found = listener(database_url, Bounds())
        assert found is not None

        def note(channel: str, payload: str | None) -> None:
            heard.append((channel, payload))

        found.add(note)
        await _heard(found)
        heard.clear()  # the wake-up of the connection made (payload None)

        def writes() -> None:
            assert client.post(f"/v1/campaigns/{cid}/players", json={"name": "P"}, headers=gm).status_code == 201
            with pg.begin() as conn:
                conn.execute(text("DELETE FROM credential WHERE token_hash = 'nothing'"))  # a statement: notifies
            r = client.post(f"/v1/campaigns/{cid}/webhooks", json={"url": "https://example.org/hook"}, headers=gm)
            assert r.status_code == 201, r.text

        await asyncio.to_thread(writes)
        for _ in range(100):
            if len(heard) >= 3:
                break
            await asyncio.sleep(0.05)
        found.remove(note)
        assert (EVENTS, cid) in heard
        assert (CREDENTIALS, "") in heard
        assert (WEBHOOKS, cid) in heard

    asyncio.run(main())


def test_issue28_item4_a_notification_wakes_the_hub_long_before_its_fallback_poll(pg, client, database_url):
    cid, token = _campaign(client)
    gm = {"Authorization": f"Bearer {token}"}
    viewer = Principal(cid, "gm", None, hash_token(token))
    sessions = SessionOpener.of(settings_for(database_url))

    async def main() -> float:
        hub = EventHub(sessions, per_token=5, per_process=10, fallback_seconds=60.0)
        assert hub.listener is not None
        sub = await hub.subscribe(cid, viewer)
        await _heard(hub.listener)
        await asyncio.sleep(0.2)  # the wake-up of the connection made: its tick is done
        assert hub.poll_seconds() == 60.0
        return await new_player_reaches(hub, sub, client, cid, gm)

    assert asyncio.run(main()) < 5.0  # not the 60 s fallback: the notification woke it


def test_issue28_item4_without_notifications_the_hub_polls_every_half_second(database_url):
    sessions = SessionOpener.of(settings_for(database_url))

    async def main() -> tuple[object, float]:
        hub = EventHub(sessions, per_token=5, per_process=10, notify=False, fallback_seconds=60.0)
        return hub.listener, hub.poll_seconds()

    assert asyncio.run(main()) == (None, POLL_SECONDS)


def test_issue28_item4_a_worker_opens_at_most_db_max_connections():
    assert Bounds(connections=10).pools() == (5, 0, 4)  # threads, their overflow, writers; +1 LISTEN
    assert Bounds(connections=3).pools() == (1, 0, 1)
    for n in (3, 4, 10, 25, 100):
        threads, overflow, writers = Bounds(connections=n).pools()
        assert threads + overflow + writers + 1 <= n and threads >= 1 and 1 <= writers <= 4


def test_issue28_item4_the_pools_are_sized_by_the_bound(database_url):
    url = database_url if database_url.startswith("postgres") else "postgresql://nobody@127.0.0.1:1/none"
    bounds = Bounds(3.0, 30.0, 7)
    threads = engine_for(url, False, bounds).pool
    green = _green_engine(url, False, bounds).pool
    assert (threads.size(), threads._max_overflow, green.size(), green._max_overflow) == (3, 0, 3, 0)  # type: ignore[attr-defined]
    sessions = SessionOpener(url, bounds=bounds)
    assert sessions.writers() == 3


def test_issue28_item4_a_process_hears_new_events_only_while_it_wants_them(pg, client, database_url):
    """No stream open and no webhook anywhere: a worker listens to `jdr_webhooks` alone, so the
    notification of every commit costs it nothing; `want` adds `jdr_events` at once."""
    cid, token = _campaign(client)
    gm = {"Authorization": f"Bearer {token}"}
    heard: list[tuple[str, str | None]] = []

    def note(channel: str, payload: str | None) -> None:
        heard.append((channel, payload))

    def player(name: str) -> None:
        assert client.post(f"/v1/campaigns/{cid}/players", json={"name": name}, headers=gm).status_code == 201

    async def main() -> None:
        found = listener(database_url, Bounds(connections=10))
        assert found is not None
        found.add(note, (WEBHOOKS,))
        await _heard(found)
        assert found.hears(WEBHOOKS) and not found.hears(EVENTS)
        await asyncio.to_thread(player, "Unheard")
        await asyncio.sleep(0.5)
        assert found.received == 0 and (EVENTS, cid) not in heard
        found.want(note, (WEBHOOKS, EVENTS))
        for _ in range(100):
            if found.hears(EVENTS):
                break
            await asyncio.sleep(0.05)
        assert (EVENTS, None) in heard  # told to look: what came before it listened
        await asyncio.to_thread(player, "Heard")
        for _ in range(100):
            if (EVENTS, cid) in heard:
                break
            await asyncio.sleep(0.05)
        assert (EVENTS, cid) in heard and found.received >= 1
        found.remove(note)

    asyncio.run(main())


def test_issue28_item4_event_notify_off_sends_no_notification_of_new_events(pg, client, database_url):
    """EVENT_NOTIFY=false: the process's connections carry `jdr.notify=off`, and migration 0011's
    trigger then sends nothing for the events they add (a polling deployment pays nothing)."""
    quiet = create_app(settings_for(database_url).model_copy(update={"event_notify": False}))
    heard: list[tuple[str, str | None]] = []

    def note(channel: str, payload: str | None) -> None:
        heard.append((channel, payload))

    async def main() -> None:
        found = listener(database_url, Bounds())
        assert found is not None
        found.add(note, (EVENTS,))
        await _heard(found)

        def writes() -> tuple[str, str]:
            with TestClient(quiet) as off:
                unheard, token = _campaign(off)
                r = off.post(f"/v1/campaigns/{unheard}/players", json={"name": "P"}, headers=bearer(token))
                assert r.status_code == 201
            loud, token = _campaign(client)
            r = client.post(f"/v1/campaigns/{loud}/players", json={"name": "P"}, headers=bearer(token))
            assert r.status_code == 201
            return unheard, loud

        unheard, loud = await asyncio.to_thread(writes)
        for _ in range(100):
            if (EVENTS, loud) in heard:
                break
            await asyncio.sleep(0.05)
        found.remove(note)
        assert (EVENTS, loud) in heard and (EVENTS, unheard) not in heard

    asyncio.run(main())


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_issue28_item4_a_wake_up_at_the_moment_of_cancellation_does_not_swallow_it():
    """The webhook loop and the hub wait for a wake-up or a timeout; cancelled just as they are
    woken (the app's shutdown while a notification arrives), they must stop: Python 3.11's
    `asyncio.wait_for` returned normally there, and the lifespan waited for the loop forever."""

    async def main() -> None:
        wake = asyncio.Event()

        async def loop_forever() -> None:
            while True:
                await wake_or_timeout(wake, 30)
                wake.clear()

        task = asyncio.create_task(loop_forever())
        await asyncio.sleep(0.01)
        wake.set()
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=2)
        assert task in done and task.cancelled()

    asyncio.run(main())
