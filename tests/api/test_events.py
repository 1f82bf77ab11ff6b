"""GET /v1/campaigns/{cid}/events: every change, as Server-Sent Events; hidden rolls only for the GM."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from app.api.ratelimit import RateLimiter
from tests.api.support import read_events
from tests.factories import GC_MINIMAL


def test_every_change_is_an_event_in_order(client, campaign_factory, character_factory, player_factory):
    c = campaign_factory("great-cosmos")
    player = player_factory(c)
    ch = character_factory(c, GC_MINIMAL, player=player)
    client.patch(f"/v1/characters/{ch['id']}", json={"name": "Aiko"}, headers=c.gm)
    test = client.post(f"/v1/characters/{ch['id']}/tests", json={"stat": "force", "dice": [42]}, headers=c.gm).json()
    client.delete(f"/v1/characters/{ch['id']}", headers=c.gm)

    events = read_events(client, c.id, c.gm)
    assert [e["type"] for e in events] == [
        "player.created",
        "character.created",
        "character.updated",
        "character.updated",  # the test's karma (issue 25: every sheet change, before its log entry)
        "log.created",
        "character.deleted",
    ]
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    assert (
        events[3]["data"]["version"] == 3 and events[3]["data"]["sheet"]["karma"] == test["effects"]["karma"]["after"]
    )
    assert events[4]["data"] == {"entry": test, "characters_changed": [{"id": ch["id"], "version": 3}]}


def test_resume_after_last_event_id(client, campaign_factory, player_factory):
    c = campaign_factory("great-cosmos")
    player_factory(c, "A")
    first = read_events(client, c.id, c.gm)
    player_factory(c, "B")
    r = client.get(
        f"/v1/campaigns/{c.id}/events",
        params={"follow": "false"},
        headers={**c.gm, "Last-Event-ID": str(first[-1]["id"])},
    )
    assert "event: player.created" in r.text and '"name":"B"' in r.text and '"name":"A"' not in r.text


def test_hidden_rolls_never_reach_players_through_events(client, campaign_factory, player_factory):
    c = campaign_factory("great-cosmos")
    player = player_factory(c)
    r = client.post(
        f"/v1/campaigns/{c.id}/rolls", json={"expression": "1d6", "dice": [4], "hidden": True}, headers=c.gm
    )
    assert r.status_code == 201
    client.post(f"/v1/campaigns/{c.id}/rolls", json={"expression": "1d6", "dice": [2]}, headers=c.gm)
    gm_view = [e for e in read_events(client, c.id, c.gm) if e["type"] == "log.created"]
    player_view = [e for e in read_events(client, c.id, player.headers) if e["type"] == "log.created"]
    assert [e["data"]["entry"]["total"] for e in gm_view] == [4, 2]
    assert [e["data"]["entry"]["total"] for e in player_view] == [2]


def test_events_need_membership(client, campaign_factory):
    a, b = campaign_factory("great-cosmos"), campaign_factory("asgard")
    assert client.get(f"/v1/campaigns/{a.id}/events", headers=b.gm).status_code == 404
    assert client.get(f"/v1/campaigns/{a.id}/events").status_code == 401


def test_a_connect_without_cursor_starts_at_the_present(client, campaign_factory, player_factory):
    c = campaign_factory("great-cosmos")
    player_factory(c, "A")
    last = read_events(client, c.id, c.gm)[-1]["id"]
    r = client.get(f"/v1/campaigns/{c.id}/events", params={"follow": "false"}, headers=c.gm)
    assert r.status_code == 200
    assert "event:" not in r.text and f"id: {last}\n" in r.text  # no history; the position, to resume from


def test_last_event_id_wins_over_after(client, campaign_factory, player_factory):
    """A browser reconnects to the same URL (its ?after=) with the Last-Event-ID it reached."""
    c = campaign_factory("great-cosmos")
    player_factory(c, "A")
    first = read_events(client, c.id, c.gm)[-1]["id"]
    player_factory(c, "B")
    r = client.get(
        f"/v1/campaigns/{c.id}/events",
        params={"follow": "false", "after": "0"},
        headers={**c.gm, "Last-Event-ID": str(first)},
    )
    assert '"name":"B"' in r.text and '"name":"A"' not in r.text


def test_a_log_event_stores_a_reference_and_streams_the_body(client, campaign_factory, db_session):
    from sqlmodel import select

    from app.models.tables import Event

    c = campaign_factory("great-cosmos")
    roll = client.post(
        f"/v1/campaigns/{c.id}/rolls", json={"expression": "3d6", "dice": [1, 2, 3]}, headers=c.gm
    ).json()
    stored = db_session.exec(select(Event.data).where(Event.campaign_id == c.id, Event.type == "log.created")).one()
    assert stored == {"entry_id": roll["id"], "characters_changed": []}
    [event] = [e for e in read_events(client, c.id, c.gm) if e["type"] == "log.created"]
    assert event["data"] == {"entry": roll, "characters_changed": []}


# --- event ids count per campaign (issue 14, item 5) ---------------------------------------


def test_event_ids_count_per_campaign_and_resume_by_them(client, campaign_factory, player_factory):
    """Two campaigns written in turn: each one's ids are 1, 2, 3… (no gap showing the other's
    activity); Last-Event-ID, ?after= and the connect-time id all speak that count."""
    a, b = campaign_factory("great-cosmos"), campaign_factory("asgard")
    for n in range(3):
        player_factory(a, f"A{n}")
        player_factory(b, f"B{n}")
    assert [e["id"] for e in read_events(client, a.id, a.gm)] == [1, 2, 3]
    assert [e["id"] for e in read_events(client, b.id, b.gm)] == [1, 2, 3]
    r = client.get(f"/v1/campaigns/{a.id}/events", params={"follow": "false"}, headers={**a.gm, "Last-Event-ID": "1"})
    assert [e["data"]["name"] for e in _frames(r.text)] == ["A1", "A2"]
    assert [e["id"] for e in read_events(client, b.id, b.gm, after="2")] == [3]
    r = client.get(f"/v1/campaigns/{b.id}/events", params={"follow": "false"}, headers=b.gm)
    assert "id: 3\n" in r.text and "event:" not in r.text  # the present, in the campaign's count


def _frames(text: str) -> list[dict]:
    out = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields:
            out.append({"id": int(fields["id"]), "type": fields["event"], "data": json.loads(fields["data"])})
    return out


def test_the_migration_numbers_existing_events_per_campaign(database_url, engine, tmp_path):
    """Events written before the per-campaign count are numbered in their order, per campaign."""
    from sqlalchemy import create_engine, text

    from app.core.migrations import alembic_config
    from alembic import command

    with _scratch_database(database_url, engine, tmp_path) as url:
        command.upgrade(alembic_config(url), "0005")
        scratch = create_engine(url)
        try:
            with scratch.begin() as conn:
                for cid in ("ca", "cb"):
                    conn.execute(
                        text(
                            "INSERT INTO campaign (id, name, ruleset, options, version, created_at, updated_at)"
                            " VALUES (:id, 'c', 'asgard', '{}', 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                        ),
                        {"id": cid},
                    )
                for cid in ("ca", "cb", "ca", "ca", "cb"):
                    conn.execute(
                        text(
                            "INSERT INTO event (campaign_id, type, hidden, created_at, data)"
                            " VALUES (:cid, 'player.created', false, CURRENT_TIMESTAMP, '{}')"
                        ),
                        {"cid": cid},
                    )
            command.upgrade(alembic_config(url), "head")
            with scratch.connect() as conn:
                rows = conn.execute(text("SELECT campaign_id, number FROM event ORDER BY seq")).all()
        finally:
            scratch.dispose()
    assert [tuple(r) for r in rows] == [("ca", 1), ("cb", 1), ("ca", 2), ("ca", 3), ("cb", 2)]


class _scratch_database:
    """An empty database of the suite's kind: a SQLite file, or a PostgreSQL database made and dropped here."""

    def __init__(self, database_url, engine, tmp_path):
        self.url, self.engine, self.tmp = database_url, engine, tmp_path
        self.name = None

    def __enter__(self) -> str:
        from uuid import uuid4

        from sqlalchemy.engine import make_url

        if not self.url.startswith("postgres"):
            return f"sqlite:///{self.tmp / 'scratch.db'}"
        self.name = f"jdr_scratch_{uuid4().hex[:12]}"
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {self.name}")
        return make_url(self.engine.url).set(database=self.name).render_as_string(hide_password=False)

    def __exit__(self, *exc) -> None:
        if self.name:
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


# --- events carry the new state (issue 14, item 6) -------------------------------------------


def test_events_carry_the_resource_as_a_member_reads_it(client, campaign_factory, player_factory, character_factory):
    c = campaign_factory("great-cosmos")
    player = player_factory(c, "Alice")
    created = character_factory(c, GC_MINIMAL, player=player, name="Aiko")
    r = client.patch(f"/v1/characters/{created['id']}", json={"name": "Aiko II", "sheet": {"hp": 90}}, headers=c.gm)
    assert r.status_code == 200, r.text
    updated = r.json()
    r = client.patch(f"/v1/campaigns/{c.id}", json={"name": "Renamed"}, headers=c.gm)
    assert r.status_code == 200, r.text
    campaign = {k: v for k, v in r.json().items() if k != "role"}
    players = client.get(f"/v1/campaigns/{c.id}/players", headers=c.gm)
    listed = players.json()["items"][0] if players.status_code == 200 else None

    for headers in (c.gm, player.headers):
        seen = {e["type"]: e["data"] for e in read_events(client, c.id, headers)}
        assert seen["character.created"] == created
        assert seen["character.updated"] == updated
        assert seen["character.updated"]["sheet"]["hp"] == 90 and seen["character.updated"]["version"] == 2
        assert seen["campaign.updated"] == campaign
        assert set(seen["player.created"]) == {"id", "campaign_id", "name", "created_at"}  # never its token
        assert seen["player.created"]["id"] == player.id and seen["player.created"]["campaign_id"] == c.id
        if listed is not None:
            assert seen["player.created"] == listed


def test_a_replayed_event_is_the_state_of_its_time(client, campaign_factory, character_factory):
    """Each character.updated carries the version it made, not today's."""
    c = campaign_factory("great-cosmos")
    ch = character_factory(c, GC_MINIMAL)
    for name in ("B", "C"):
        assert client.patch(f"/v1/characters/{ch['id']}", json={"name": name}, headers=c.gm).status_code == 200
    updates = [e["data"] for e in read_events(client, c.id, c.gm) if e["type"] == "character.updated"]
    assert [(u["name"], u["version"]) for u in updates] == [("B", 2), ("C", 3)]


# --- stream tickets (issue 14, item 1) -------------------------------------------------------


def _ticket(client, campaign, headers) -> dict:
    r = client.post(f"/v1/campaigns/{campaign.id}/events/tickets", headers=headers)
    assert r.status_code == 201, r.text
    return r.json()


def test_a_ticket_opens_one_stream_as_its_caller_without_a_header(client, campaign_factory, player_factory):
    from datetime import datetime, timedelta, timezone

    c = campaign_factory("great-cosmos")
    player = player_factory(c)
    client.post(f"/v1/campaigns/{c.id}/rolls", json={"expression": "1d6", "dice": [4], "hidden": True}, headers=c.gm)
    client.post(f"/v1/campaigns/{c.id}/rolls", json={"expression": "1d6", "dice": [2]}, headers=c.gm)
    issued = _ticket(client, c, player.headers)
    assert set(issued) == {"ticket", "expires_at"} and player.token not in issued["ticket"]
    expires = datetime.fromisoformat(issued["expires_at"].replace("Z", "+00:00"))
    assert timedelta(seconds=30) < expires - datetime.now(timezone.utc) <= timedelta(seconds=61)
    url = f"/v1/campaigns/{c.id}/events"
    r = client.get(url, params={"ticket": issued["ticket"], "follow": "false", "after": "0"})
    assert r.status_code == 200, r.text
    totals = [e["data"]["entry"]["total"] for e in _frames(r.text) if e["type"] == "log.created"]
    assert totals == [2]  # the player's view: the GM's hidden roll is not there
    r = client.get(url, params={"ticket": issued["ticket"], "follow": "false"})  # one use
    assert r.status_code == 401 and r.headers["content-type"] == "application/problem+json", r.text
    gm_ticket = _ticket(client, c, c.gm)["ticket"]
    r = client.get(url, params={"ticket": gm_ticket, "follow": "false", "after": "0"})
    assert [e["data"]["entry"]["total"] for e in _frames(r.text) if e["type"] == "log.created"] == [4, 2]


def test_a_ticket_is_refused_elsewhere_expired_or_as_a_token(client, campaign_factory, db_session):
    from datetime import datetime, timezone

    from sqlalchemy import text

    a, b = campaign_factory("great-cosmos"), campaign_factory("asgard")
    r = client.get(
        f"/v1/campaigns/{b.id}/events", params={"ticket": _ticket(client, a, a.gm)["ticket"], "follow": "false"}
    )
    assert r.status_code == 404, r.text  # a ticket of another campaign: existence never leaks
    r = client.get(f"/v1/campaigns/{a.id}/events", params={"ticket": a.gm_token, "follow": "false"})
    assert r.status_code == 401, r.text  # the bearer token is never accepted in a URL
    for name in ("access_token", "token"):
        r = client.get(f"/v1/campaigns/{a.id}/events", params={name: a.gm_token, "follow": "false"})
        assert r.status_code == 401, r.text
    old = _ticket(client, a, a.gm)["ticket"]
    db_session.connection().execute(
        text("UPDATE stream_ticket SET expires_at = :past"), {"past": datetime(2020, 1, 1, tzinfo=timezone.utc)}
    )
    db_session.commit()
    r = client.get(f"/v1/campaigns/{a.id}/events", params={"ticket": old, "follow": "false"})
    assert r.status_code == 401, r.text
    assert client.post(f"/v1/campaigns/{a.id}/events/tickets").status_code == 401
    assert client.post(f"/v1/campaigns/{b.id}/events/tickets", headers=a.gm).status_code == 404


def test_tickets_are_stored_hashed(client, campaign_factory, db_session):
    from sqlalchemy import text

    c = campaign_factory("great-cosmos")
    ticket = _ticket(client, c, c.gm)["ticket"]
    stored = db_session.connection().execute(text("SELECT ticket_hash, token_hash FROM stream_ticket")).all()
    assert stored and all(ticket not in row.ticket_hash for row in stored)


def test_issue21_item12_a_ticket_refused_with_429_is_spent(app, client, settings, campaign_factory):
    """An address over its failed-authentication limit gets 429 for a ticket too, and the ticket is
    used up by that refusal: from another address it no longer opens anything (401)."""
    app.state.rate_limiter = RateLimiter(settings.model_copy(update={"auth_failures_per_minute": 2}))
    campaign = campaign_factory("great-cosmos")
    ticket = client.post(f"/v1/campaigns/{campaign.id}/events/tickets", headers=campaign.gm).json()["ticket"]
    with TestClient(app, raise_server_exceptions=False, client=("203.0.113.7", 4000)) as flooder:
        for _ in range(2):
            assert flooder.get("/v1/me", headers={"Authorization": "Bearer nope"}).status_code == 401
        r = flooder.get(f"/v1/campaigns/{campaign.id}/events", params={"ticket": ticket, "follow": "false"})
        assert r.status_code == 429, r.text
    r = client.get(f"/v1/campaigns/{campaign.id}/events", params={"ticket": ticket, "follow": "false"})
    assert r.status_code == 401, r.text
