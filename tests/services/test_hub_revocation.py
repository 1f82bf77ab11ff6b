"""Issue 21 item 1: a stream hears nothing committed with or after its credential's death.

The hub reads, in each tick, the new events and which of its streams' credentials still exist. A
player's removal commits its credential's deletion and `player.deleted` together: when that commit
lands between the two reads (PostgreSQL's READ COMMITTED gives each statement its own snapshot), the
credentials must be the later read, so the stream is ended before the event is dispatched (found by a
full run where a removed player's stream received `player.deleted` before its `token_revoked`); and a
stream opened while a tick reads joins at the next tick, whose read of the credentials includes its own."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import pytest

import app.api.event_hub as event_hub
from app.api.event_hub import EventHub, Subscription
from app.core.db import SessionOpener
from app.core.security import hash_token
from app.services import events
from app.services.records import Principal
from tests.conftest import settings_for


@dataclass
class Table:
    cid: str
    gm: Principal
    gm_headers: dict[str, str]
    player: Principal


@pytest.fixture
def table(client, monkeypatch) -> Table:
    monkeypatch.setattr(event_hub, "POLL_SECONDS", 60.0)
    r = client.post("/v1/campaigns", json={"name": "Révoqué", "ruleset": "great-cosmos"})
    assert r.status_code == 201, r.text
    cid, gm_token = r.json()["id"], r.json()["gm_token"]
    gm_headers = {"Authorization": f"Bearer {gm_token}"}
    r = client.post(f"/v1/campaigns/{cid}/players", json={"name": "Partant"}, headers=gm_headers)
    assert r.status_code == 201, r.text
    player = Principal(cid, "player", r.json()["id"], hash_token(r.json()["token"]))
    return Table(cid, Principal(cid, "gm", None, hash_token(gm_token)), gm_headers, player)


def _tick_with(monkeypatch, inside) -> None:
    """The hub's next read of events runs `inside()` first (in the tick's thread, its read under way)."""
    real_poll = events.poll
    done: list[bool] = []

    def poll(*args, **kwargs):
        if not done:
            done.append(True)
            inside()
        return real_poll(*args, **kwargs)

    monkeypatch.setattr(events, "poll", poll)


async def _roll(client, table: Table) -> None:
    """A roll of this process: its commit wakes the hub (the tick that reads it reads what `inside` did)."""
    r = await asyncio.to_thread(
        client.post, f"/v1/campaigns/{table.cid}/rolls", json={"expression": "1d6"}, headers=table.gm_headers
    )
    assert r.status_code == 201, r.text


async def _until_closed(sub: Subscription) -> list[tuple[int, bytes]]:
    got = []
    while (item := await asyncio.wait_for(sub.queue.get(), 10)) is not None:
        got.append(item)
    return got


def _remove(client, table: Table) -> None:
    r = client.delete(f"/v1/campaigns/{table.cid}/players/{table.player.player_id}", headers=table.gm_headers)
    assert r.status_code == 204, r.text


def _hub(database_url: str) -> EventHub:
    return EventHub(SessionOpener.of(settings_for(database_url)), per_token=5, per_process=10, notify=False)


def _opened_during_the_read_then_removed(monkeypatch, hub: EventHub, client, table: Table) -> list:
    """At the hub's next read: the player's stream opened (run on the hub's loop), then the player
    removed; returns a list that then holds the future of its subscription."""
    loop = asyncio.get_running_loop()
    opened = []

    def inside() -> None:
        opened.append(asyncio.run_coroutine_threadsafe(hub.subscribe(table.cid, table.player), loop))
        time.sleep(0.3)  # the loop has run the subscription meanwhile
        _remove(client, table)

    _tick_with(monkeypatch, inside)
    return opened


async def _ended(opened: list) -> tuple[list[tuple[int, bytes]], str | None]:
    """What the stream opened so heard before it ended, and why it ended."""
    late = await asyncio.wait_for(asyncio.wrap_future(opened[0]), 10)
    return await _until_closed(late), late.closed


def _ended_unheard(got: list[tuple[int, bytes]], closed: str | None) -> None:
    assert closed == "revoked"
    assert not any(b"player.deleted" in e for _, e in got), got


def test_a_removal_committed_during_a_tick_ends_the_stream_before_its_events(client, database_url, table, monkeypatch):
    async def main() -> tuple[list, list, str | None]:
        hub = _hub(database_url)
        leaving = await hub.subscribe(table.cid, table.player)
        watching = await hub.subscribe(table.cid, table.gm)
        await asyncio.sleep(0.2)  # the subscriptions' tick is done: the poller waits its 60 s
        _tick_with(monkeypatch, lambda: _remove(client, table))
        await _roll(client, table)
        heard = [await asyncio.wait_for(watching.queue.get(), 10) for _ in range(2)]
        got = await _until_closed(leaving)
        hub.unsubscribe(watching)
        return heard, got, leaving.closed

    heard, got, closed = asyncio.run(main())
    assert [b"log.created" in e for _, e in heard] == [True, False]
    assert b"player.deleted" in heard[1][1]  # read in the same tick as the removal
    # the removed player's stream ended before the event committed with its credential's deletion
    _ended_unheard(got, closed)


def test_a_stream_opened_while_a_tick_reads_is_checked_before_that_ticks_events(
    client, database_url, table, monkeypatch
):
    """The player's credential is alive when its stream opens, and dies (its removal, with
    `player.deleted`) while the tick that the stream would join reads."""

    async def main() -> tuple[list, str | None]:
        hub = _hub(database_url)
        watching = await hub.subscribe(table.cid, table.gm)  # the campaign is tracked
        await asyncio.sleep(0.2)
        opened = _opened_during_the_read_then_removed(monkeypatch, hub, client, table)
        await _roll(client, table)
        for _ in range(2):
            await asyncio.wait_for(watching.queue.get(), 10)
        ended = await _ended(opened)
        hub.unsubscribe(watching)
        return ended

    _ended_unheard(*asyncio.run(main()))


def test_a_stream_waiting_to_join_a_followed_campaign_costs_its_other_streams_no_event(
    client, database_url, table, monkeypatch
):
    """A stream opened while a tick reads waits for the next tick; an event committed before that
    next tick's read reaches the streams already there (the campaign's cursor, not where it stands
    when the newcomer joins, bounds what is read) and the newcomer alike."""

    async def main() -> tuple[list[bytes], list[bytes], list[int]]:
        loop = asyncio.get_running_loop()
        hub = _hub(database_url)
        there = await hub.subscribe(table.cid, table.gm)
        await asyncio.sleep(0.2)
        joining, rolled = [], []

        def open_during_the_read() -> None:
            joining.append(asyncio.run_coroutine_threadsafe(hub.subscribe(table.cid, table.gm), loop))
            time.sleep(0.3)  # the loop has run the subscription meanwhile: it waits for the next tick

        real_latest = events.latest_numbers

        def roll_first(session, campaign_ids):  # the next tick: an event committed before its reads
            if joining and not rolled:
                r = client.post(
                    f"/v1/campaigns/{table.cid}/rolls", json={"expression": "1d6"}, headers=table.gm_headers
                )
                rolled.append(r.status_code)
            return real_latest(session, campaign_ids)

        _tick_with(monkeypatch, open_during_the_read)
        monkeypatch.setattr(events, "latest_numbers", roll_first)
        await _roll(client, table)
        first = await asyncio.wait_for(there.queue.get(), 10)
        second = await asyncio.wait_for(there.queue.get(), 10)
        late = await asyncio.wait_for(asyncio.wrap_future(joining[0]), 10)
        newcomer = await asyncio.wait_for(late.queue.get(), 10)
        assert late.start == first[0]  # it joined after the first event, before the second
        hub.unsubscribe(there)
        hub.unsubscribe(late)
        return [first[1], second[1]], [newcomer[1]], rolled

    there, newcomer, rolled = asyncio.run(main())
    assert rolled == [201]
    assert all(b"log.created" in e for e in there)
    assert newcomer == there[1:]


def test_a_stream_opened_while_a_campaigns_first_tick_reads_is_checked_before_that_ticks_events(
    client, database_url, table, monkeypatch
):
    """As above, into a campaign the hub does not follow yet: the GM's stream waits for the tick that
    starts following it; the player's, opened during that tick's read (the player removed meanwhile),
    does not join with the GM's."""

    async def main() -> tuple[list, str | None]:
        hub = _hub(database_url)
        opened = _opened_during_the_read_then_removed(monkeypatch, hub, client, table)
        watching = await hub.subscribe(table.cid, table.gm)  # its tick reads what the removal committed
        ended = await _ended(opened)
        hub.unsubscribe(watching)
        return ended

    _ended_unheard(*asyncio.run(main()))
