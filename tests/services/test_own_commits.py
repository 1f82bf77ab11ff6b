"""A commit of this process that adds events wakes its event hub and webhook loop at once
(app.core.committed): SQLite has no LISTEN/NOTIFY, and its streams used to wait for the 0.5 s poll."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.engine import make_url

import app.api.event_hub as event_hub
from app.api.event_hub import EventHub
from app.core import committed as own_commits
from app.core.db import SessionOpener
from app.core.notify import EVENTS, commits_of
from app.core.security import hash_token
from app.models.tables import utcnow
from app.services import events
from app.services.records import Principal
from tests.conftest import settings_for
from tests.services.test_notify import new_player_reaches


def _player_created(session, campaign_id: str) -> None:
    data = {"id": "p-1", "name": "Noted", "created_at": utcnow().isoformat()}
    events.record(session, campaign_id, "player.created", data)


async def _settled() -> None:
    """Long enough for a callback scheduled from another thread to have run on this loop."""
    for _ in range(5):
        await asyncio.sleep(0.01)


def test_a_commit_with_events_tells_this_process_once_and_a_rollback_tells_nothing(database_url, committed):
    campaign_id, _hero = committed
    sessions = SessionOpener.of(settings_for(database_url))
    heard: list[tuple[str, str | None]] = []

    def note(channel: str, payload: str | None) -> None:
        heard.append((channel, payload))

    def rolled_back() -> None:
        with sessions() as s:
            _player_created(s, campaign_id)
            s.rollback()

    def no_event() -> None:
        with sessions() as s:
            s.connection()
            s.commit()

    def written() -> None:
        with sessions() as s:
            _player_created(s, campaign_id)
            _player_created(s, campaign_id)
            s.commit()

    async def main() -> list[list[tuple[str, str | None]]]:
        database = commits_of(sessions)
        assert database is not None
        own_commits.listen(database, note)
        seen = []
        try:
            for write in (rolled_back, no_event, written):
                await asyncio.to_thread(write)
                await _settled()
                seen.append(list(heard))
            own_commits.unlisten(database, note)
            await asyncio.to_thread(written)
            await _settled()
            seen.append(list(heard))
        finally:
            own_commits.unlisten(database, note)
        return seen

    rolled, none, once, after_unlisten = asyncio.run(main())
    assert rolled == []
    assert none == []
    assert once == [(EVENTS, campaign_id)]  # two events of one campaign: one notice
    assert after_unlisten == once


def test_a_commit_on_the_listeners_own_loop_is_told_on_that_loop_without_a_cross_thread_wake_up(
    database_url, committed, monkeypatch
):
    """The writes on the event loop (its greenlet) commit on the listener's own thread: the notice is a
    plain `call_soon` there (no wake-up of the loop through its self-pipe), run once the commit returns."""
    campaign_id, _hero = committed
    sessions = SessionOpener.of(settings_for(database_url))
    heard: list[tuple[str, str | None]] = []

    async def main() -> tuple[list, list]:
        loop = asyncio.get_running_loop()
        woken: list[object] = []

        def threadsafe(*args):
            woken.append(args)
            return original(*args)

        original = loop.call_soon_threadsafe
        monkeypatch.setattr(loop, "call_soon_threadsafe", threadsafe)
        database = commits_of(sessions)
        assert database is not None

        def note(channel: str, payload: str | None) -> None:
            heard.append((channel, payload))

        own_commits.listen(database, note)
        try:
            with sessions() as s:  # on the loop's own thread, as the writers on the loop commit
                _player_created(s, campaign_id)
                s.commit()
            at_commit = list(heard)  # scheduled, not run inside the commit
            await _settled()
            return at_commit, woken
        finally:
            own_commits.unlisten(database, note)

    at_commit, woken = asyncio.run(main())
    assert at_commit == []
    assert heard == [(EVENTS, campaign_id)]
    assert woken == []


def test_another_database_is_not_told(database_url, committed):
    campaign_id, _hero = committed
    sessions = SessionOpener.of(settings_for(database_url))
    heard: list[str | None] = []

    def note(_channel: str, payload: str | None) -> None:
        heard.append(payload)

    async def main() -> None:
        own_commits.listen("sqlite:////elsewhere.db", note)
        try:

            def written() -> None:
                with sessions() as s:
                    _player_created(s, campaign_id)
                    s.commit()

            await asyncio.to_thread(written)
            await _settled()
        finally:
            own_commits.unlisten("sqlite:////elsewhere.db", note)

    asyncio.run(main())
    assert heard == []


def test_the_hub_is_woken_by_a_request_of_this_process_long_before_its_poll(client, database_url, monkeypatch):
    """Without notifications (SQLite, or EVENT_NOTIFY off) and with a poll of 60 s, the event of a
    request served in this process reaches a stream at once: only the commit's own notice can bring it."""
    monkeypatch.setattr(event_hub, "POLL_SECONDS", 60.0)
    r = client.post("/v1/campaigns", json={"name": "Woken", "ruleset": "great-cosmos"})
    assert r.status_code == 201, r.text
    cid, token = r.json()["id"], r.json()["gm_token"]
    gm = {"Authorization": f"Bearer {token}"}
    viewer = Principal(cid, "gm", None, hash_token(token))
    sessions = SessionOpener.of(settings_for(database_url))

    async def main() -> float:
        hub = EventHub(sessions, per_token=5, per_process=10, notify=False, fallback_seconds=60.0)
        assert hub.listener is None and hub.poll_seconds() == 60.0
        sub = await hub.subscribe(cid, viewer)
        await asyncio.sleep(0.2)  # the subscription's tick is done: the poller waits its 60 s
        return await new_player_reaches(hub, sub, client, cid, gm)

    assert asyncio.run(main()) < 5.0  # not the 60 s poll: the commit's notice woke it


@pytest.mark.parametrize("url", ["postgresql+psycopg://u@h:5432/db", "postgresql+psycopg_async://u@h:5432/db"])
def test_the_database_is_named_whatever_the_driver(url):
    assert own_commits.database_of(make_url(url)) == "postgresql://u@h:5432/db"
