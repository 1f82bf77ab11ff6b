"""Issue 21 item 1: a stream hears nothing committed with or after its credential's death.

The hub reads, in each tick, the new events and which of its streams' credentials still exist. A
player's removal commits its credential's deletion and `player.deleted` together: when that commit
lands between the two reads (PostgreSQL's READ COMMITTED gives each statement its own snapshot), the
credentials must be the later read, so the stream is ended before the event is dispatched. Found by a
full run where a removed player's stream received `player.deleted` before its `token_revoked`."""

from __future__ import annotations

import asyncio

import app.api.event_hub as event_hub
from app.api.event_hub import EventHub
from app.core.db import SessionOpener
from app.core.security import hash_token
from app.services import events
from app.services.auth import Principal
from tests.conftest import settings_for


def test_a_removal_committed_during_a_tick_ends_the_stream_before_its_events(client, database_url, monkeypatch):
    monkeypatch.setattr(event_hub, "POLL_SECONDS", 60.0)
    r = client.post("/v1/campaigns", json={"name": "Révoqué", "ruleset": "great-cosmos"})
    assert r.status_code == 201, r.text
    cid, gm_token = r.json()["id"], r.json()["gm_token"]
    gm = {"Authorization": f"Bearer {gm_token}"}
    r = client.post(f"/v1/campaigns/{cid}/players", json={"name": "Partant"}, headers=gm)
    assert r.status_code == 201, r.text
    player_id, player_token = r.json()["id"], r.json()["token"]
    sessions = SessionOpener.of(settings_for(database_url))

    real_poll = events.poll
    removal: list[int] = []  # the removal's status, once made inside a tick's reads

    def poll_after_a_removal(*args, **kwargs):
        if not removal:  # the removal commits while the tick is reading
            removal.append(client.delete(f"/v1/campaigns/{cid}/players/{player_id}", headers=gm).status_code)
        return real_poll(*args, **kwargs)

    async def main() -> tuple[list, list]:
        hub = EventHub(sessions, per_token=5, per_process=10, notify=False, fallback_seconds=60.0)
        leaving = await hub.subscribe(cid, Principal(cid, "player", player_id, hash_token(player_token)))
        watching = await hub.subscribe(cid, Principal(cid, "gm", None, hash_token(gm_token)))
        await asyncio.sleep(0.2)  # the subscriptions' tick is done: the poller waits its 60 s
        monkeypatch.setattr(events, "poll", poll_after_a_removal)
        # a roll of this process wakes the hub: its tick's poll sees the roll, the removal and player.deleted
        r = await asyncio.to_thread(client.post, f"/v1/campaigns/{cid}/rolls", json={"expression": "1d6"}, headers=gm)
        assert r.status_code == 201, r.text
        heard = []
        while len(heard) < 2:
            heard.append(await asyncio.wait_for(watching.queue.get(), 10))
        got = []
        while (item := await asyncio.wait_for(leaving.queue.get(), 10)) is not None:
            got.append(item)
        assert leaving.closed == "revoked"
        hub.unsubscribe(watching)
        return heard, got

    heard, got = asyncio.run(main())
    assert removal == [204]
    assert [b"log.created" in e and b"player.deleted" not in e for _, e in heard] == [True, False]
    assert b"player.deleted" in heard[1][1]  # read in the same tick as the removal
    # the removed player's stream ended before the event committed with its credential's deletion
    assert not any(b"player.deleted" in e for _, e in got), got
