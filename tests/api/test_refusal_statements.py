"""What a refused request costs the database: the statements its sessions send, as the database
receives them (SQLite's trace of each statement, libpq's trace of each message on PostgreSQL:
the hot path's statements skip SQLAlchemy's cursor, so `before_cursor_execute` sees only the
others), and how many of them read the caller's credential. A refusal reads the credential once,
whoever refuses it: the route's access check, the unit of work or its caller."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from psycopg import pq
from sqlalchemy import event

from app.core.db import database
from app.core.security import hash_token
from app.services.auth import checked, known_principal
from tests.api.support import assert_problem
from tests.factories import gc_fighter


@dataclass
class Sent:
    """The statements sent while it listened, each as one text (SQLite: with its values; PostgreSQL:
    a simple query's text, or a prepared statement's Bind message with its values)."""

    dialect: str
    texts: list[str] = field(default_factory=list)

    @property
    def statements(self) -> list[str]:
        """All but SQLite's `PRAGMA busy_timeout` (sent when the pool hands over a connection whose
        timeout the writer on the loop changed: which connection comes is the pool's choice)."""
        return [t for t in self.texts if not t.startswith("PRAGMA")]

    def reading(self, token: str) -> list[str]:
        """The statements that read the credential of `token` (those that bind its hash)."""
        token_hash = hash_token(token)
        return [t for t in self.texts if token_hash in t]

    @property
    def transactions(self) -> int:
        """SQLite's (its BEGINs; PostgreSQL's lane sends its BEGIN as a prepared statement)."""
        return sum(1 for t in self.texts if t.startswith("BEGIN"))


@pytest.fixture
def sent(app) -> Iterator[Sent]:
    db = database(*app.state.sessions.database())
    engines = [db.engine] + ([db.green] if db.green is not None else [])
    found = Sent(db.engine.dialect.name)
    traces: dict[int, Any] = {}

    def checkout(dbapi: Any, _record: Any, _proxy: Any) -> None:
        if found.dialect == "sqlite":
            dbapi.set_trace_callback(found.texts.append)
            return
        pgconn = getattr(dbapi, "driver_connection", dbapi).pgconn
        trace = tempfile.TemporaryFile("w+")
        traces[id(pgconn)] = trace
        pgconn.trace(os.dup(trace.fileno()))
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)

    def checkin(dbapi: Any, _record: Any) -> None:
        if dbapi is None:
            return
        if found.dialect == "sqlite":
            dbapi.set_trace_callback(None)
            return
        pgconn = getattr(dbapi, "driver_connection", dbapi).pgconn
        trace = traces.pop(id(pgconn), None)
        if trace is None:
            return
        pgconn.untrace()  # flushes libpq's stream
        trace.seek(0)
        for line in trace.read().splitlines():
            parts = line.split("\t")
            if len(parts) > 3 and parts[0] == "F" and parts[2] in ("Query", "Bind"):
                found.texts.append(parts[3].strip().strip('"') if parts[2] == "Query" else line)
        trace.close()

    for engine in engines:
        event.listen(engine, "checkout", checkout)
        event.listen(engine, "checkin", checkin)
    try:
        yield found
    finally:
        for engine in engines:
            event.remove(engine, "checkout", checkout)
            event.remove(engine, "checkin", checkin)


def test_a_refused_test_reads_the_credential_once(client, campaign, hero, sent):
    """The unit of work reads it with the character (its first statement) and refuses the body;
    the route's access check that follows (API.md's order) does not read it again."""
    path = f"/v1/characters/{hero['id']}/tests"
    assert client.post(path, json={"stat": "force"}, headers=campaign.gm).status_code == 201  # remembered now
    sent.texts.clear()
    assert_problem(client.post(path, json={"stat": "nope"}, headers=campaign.gm), 422, "validation-failed")
    assert len(sent.reading(campaign.gm_token)) == 1  # was 3: the unit, its caller's re-check, the access check
    # was 10 (BEGIN, ROLLBACK included); 7 with the dice epoch's claim, sent with the opening (the body
    # names no dice: the server's are claimed in that round trip, before the body is read)
    assert len(sent.statements) <= 7, sent.statements
    if sent.dialect == "sqlite":
        assert sent.transactions <= 2  # was 3


def test_a_refused_encounter_action_reads_the_credential_once(table, sent):
    t = table("great-cosmos")
    a, b = t.character("A", gc_fighter()), t.character("B", gc_fighter())
    s = t.encounter([{"character_id": a}, {"character_id": b}])
    t.start(s["id"], dice=[5, 6])
    sent.texts.clear()
    r = t.client.post(f"/v1/encounters/{s['id']}/actions", json={"type": "attack"}, headers=t.gm)
    assert_problem(r, 422, "validation-failed")
    assert len(sent.reading(t.c.gm_token)) == 1  # was 3
    assert len(sent.statements) <= 7, sent.statements  # was 11
    if sent.dialect == "sqlite":
        assert sent.transactions <= 2  # was 3


def test_an_action_on_another_campaigns_encounter_reads_the_credential_once(table, sent):
    """404: the unit of work reads the credential with the encounter, then finds it another campaign's."""
    t, other = table("great-cosmos"), table("great-cosmos")
    s = t.encounter([{"character_id": t.character("A", gc_fighter())}])
    assert other.client.get(f"/v1/campaigns/{other.c.id}", headers=other.gm).status_code == 200  # remembered
    sent.texts.clear()
    r = other.client.post(f"/v1/encounters/{s['id']}/actions", json={"type": "attack"}, headers=other.gm)
    assert_problem(r, 404, "not-found")
    assert len(sent.reading(other.c.gm_token)) == 1


def test_a_request_refused_before_its_unit_of_work_reads_the_credential_once(client, campaign, hero, sent):
    """FastAPI refuses the body before the endpoint runs (a media type it cannot read): the access
    check reads the credential, once."""
    path = f"/v1/characters/{hero['id']}/tests"
    assert client.post(path, json={"stat": "force"}, headers=campaign.gm).status_code == 201  # remembered now
    sent.texts.clear()
    r = client.post(path, content=b"stat=force", headers={**campaign.gm, "Content-Type": "text/plain"})
    assert r.status_code == 415, r.text
    assert len(sent.reading(campaign.gm_token)) == 1


def test_each_request_reads_a_remembered_credential_again(client, campaign):
    """The read serves one request: the next one's principal, from the same memory, is due again
    (a token deleted meanwhile is refused at once)."""
    assert client.get(f"/v1/campaigns/{campaign.id}", headers=campaign.gm).status_code == 200  # remembered now
    first, second = known_principal(hash_token(campaign.gm_token)), known_principal(hash_token(campaign.gm_token))
    assert first is not None and second is not None and first.remembered and second.remembered
    copy = replace(first, access="gm")
    checked(copy)
    assert (first.remembered, copy.remembered, second.remembered) == (False, False, True)


def test_reading_the_current_dice_epoch_takes_no_write_lock(client, campaign, sent):
    """A GET of the current epoch is a read: on SQLite a deferred transaction, never the database's
    write lock (`BEGIN IMMEDIATE`), and nothing written."""
    path = f"/v1/campaigns/{campaign.id}/dice-epochs/current"
    first = client.get(path, headers=campaign.gm)
    assert first.status_code == 200, first.text
    sent.texts.clear()
    again = client.get(path, headers=campaign.gm)
    assert again.status_code == 200 and again.json() == first.json()
    writes = [t for t in sent.statements if t.split()[0].upper() in ("INSERT", "UPDATE", "DELETE", "COMMIT")]
    assert writes == [], writes
    if sent.dialect == "sqlite":
        assert not [t for t in sent.texts if t.upper().startswith("BEGIN IMMEDIATE")], sent.texts
