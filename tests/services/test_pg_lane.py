"""PostgreSQL's lane (app.core.prepared): the hot path's statements sent with libpq's
pipeline API on psycopg's connection, prepared once per connection. It must write and read
exactly what Core does, survive what psycopg and a pooler do to prepared statements, refuse
a statement that would jump its batch's queue, and give back a usable (or no) connection
after any failure — on psycopg's connection in a thread, and on its async connection from
SQLAlchemy's greenlet on the event loop (`SessionOpener.on_loop`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest
from sqlalchemy import bindparam, insert, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, ProgrammingError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.util import greenlet_spawn
from sqlmodel import Session

from app.core.db import normalize_database_url
from app.models.tables import Campaign, new_id, utcnow
from app.core.prepared import Prepared, batch, fetch_together

pytestmark = pytest.mark.usefixtures("postgres_only")

_campaign = Campaign.__table__
INSERT = Prepared(insert(_campaign))
READ = Prepared(
    select(_campaign.c.id, _campaign.c.name, _campaign.c.options, _campaign.c.version, _campaign.c.created_at).where(
        _campaign.c.id == bindparam("id")
    )
)


@pytest.fixture
def postgres_only(engine):
    if engine.dialect.name != "postgresql":
        pytest.skip("the lane is PostgreSQL's")


class Lane:
    """Where a test's database work runs: `run(work)` with `engine` (a thread's, or the loop's)."""

    def __init__(self, engine: Engine, run: Callable[[Callable[[], Any]], Any]):
        self.engine, self.run = engine, run


@pytest.fixture(params=["thread", "loop"])
def lane(request, engine, database_url):
    if engine.dialect.name != "postgresql":
        pytest.skip("the lane is PostgreSQL's")
    if request.param == "thread":
        yield Lane(engine, lambda work: work())
        return
    green = create_async_engine(
        normalize_database_url(database_url), poolclass=NullPool, connect_args={"prepare_threshold": None}
    )  # as app.core.db's, one loop per run
    yield Lane(green.sync_engine, lambda work: asyncio.run(greenlet_spawn(work)))
    asyncio.run(green.dispose())


@pytest.fixture
def campaigns(engine):
    made: list[str] = []
    yield made
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM dice_epoch WHERE campaign_id = ANY(:ids)"), {"ids": made})
        conn.execute(text("DELETE FROM campaign WHERE id = ANY(:ids)"), {"ids": made})


@pytest.fixture
def cid(campaigns) -> str:
    """The id of a campaign the test makes (removed afterwards)."""
    campaigns.append(new_id())
    return campaigns[-1]


def _row(cid: str, name: str = "Brume", options: dict | None = None) -> dict:
    now = utcnow()
    return {
        "id": cid,
        "name": name,
        "ruleset": "great-cosmos",
        "options": options or {},
        "version": 1,
        "created_at": now,
        "updated_at": now,
        "client_metadata": {"vtt": "Ys"},  # a JSON column the lane writes like options
    }


def test_the_lane_writes_and_reads_what_core_writes_and_reads(lane, cid):
    options = {"note": "Éowyn — « quête » 🐉", "nested": {"n": 3, "none": None, "list": [True, 1.5]}}
    row = {**_row(cid, "Hérisson d'Ys", options), "created_at": datetime(2026, 1, 2, 3, 4, 5, 678901, timezone.utc)}

    def work():
        with Session(lane.engine) as session:
            INSERT.run(session.connection(), row)
            session.commit()
        with lane.engine.connect() as conn:
            core = conn.execute(
                select(
                    _campaign.c.id, _campaign.c.name, _campaign.c.options, _campaign.c.version, _campaign.c.created_at
                ).where(_campaign.c.id == cid)
            ).one()
            return tuple(core), READ.first(conn, {"id": cid})

    core, read = lane.run(work)
    assert core == read == (cid, "Hérisson d'Ys", options, 1, row["created_at"])


def test_statements_are_prepared_once_per_connection_and_survive_a_rollback(lane, cid):
    """psycopg prepares nothing itself: it would send DEALLOCATE ALL after a ROLLBACK."""

    def work():
        with lane.engine.connect() as conn:
            with conn.begin():
                INSERT.run(conn, _row(cid))
            for _ in range(6):  # what psycopg's threshold (5) would have prepared
                conn.execute(text("SELECT 1 FROM campaign WHERE id = :i"), {"i": cid}).all()
            conn.rollback()
            with conn.begin():
                assert READ.first(conn, {"id": cid})[0] == cid
                assert READ.first(conn, {"id": cid})[0] == cid
                return conn.execute(text("SELECT name, statement FROM pg_prepared_statements")).all()

    prepared = lane.run(work)
    assert prepared and all(name.startswith("jdr_") for name, _ in prepared)
    texts = [statement for _, statement in prepared]
    for ours in (INSERT, READ):
        assert texts.count(ours._plan(lane.engine.dialect).sql) == 1
    # the lane's BEGIN too: parsed once, not at every transaction. The shared engine's pooled connection
    # may have begun before with another isolation level (SQLAlchemy then names READ COMMITTED in the
    # BEGIN): each text at most once
    begins = [statement for statement in texts if statement.startswith("BEGIN")]
    assert begins and len(begins) == len(set(begins)), begins


def test_statements_deallocated_behind_its_back_are_prepared_again(lane, cid):
    """At once when the round trip begins the transaction (nothing else is lost with it); inside
    an open transaction, what it did cannot be replayed: that statement fails, the next transaction works."""

    def work():
        with lane.engine.connect() as conn:
            with conn.begin():
                INSERT.run(conn, _row(cid))
                READ.first(conn, {"id": cid})  # prepared on this connection
            with conn.begin():
                conn.exec_driver_sql("DEALLOCATE ALL")  # a pooler's DISCARD ALL does as much
            with conn.begin():
                [rows] = fetch_together(conn, [(READ, {"id": cid})])  # BEGIN in the same round trip: sent again
            with conn.begin():
                conn.exec_driver_sql("DEALLOCATE ALL")  # now inside the transaction
                with pytest.raises(ProgrammingError, match="does not exist"):
                    READ.first(conn, {"id": cid})
            with conn.begin():
                return rows, READ.first(conn, {"id": cid})

    rows, again = lane.run(work)
    assert rows[0][0] == again[0] == cid


def test_a_statement_that_is_not_prepared_may_not_jump_the_batch_queue(lane, engine, cid):

    def work():
        with Session(lane.engine) as session:
            conn = session.connection()
            with pytest.raises(RuntimeError, match="only Prepared statements"), batch(conn, commit=True):
                INSERT.run(conn, _row(cid))
                conn.execute(text("SELECT 1"))
            session.rollback()

    lane.run(work)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM campaign WHERE id = :i"), {"i": cid}).scalar_one() == 0


def test_a_failing_statement_aborts_the_batch_and_leaves_the_connection_usable(lane, engine, campaigns):
    cid, other = new_id(), new_id()
    campaigns += [cid, other]

    def work():
        with Session(lane.engine) as session:
            INSERT.run(session.connection(), _row(cid))
            session.commit()
            conn = session.connection()
            with pytest.raises(IntegrityError), batch(conn, commit=True):
                INSERT.run(conn, _row(other))
                INSERT.run(conn, _row(cid))  # the same id: the batch and its COMMIT are aborted
            session.rollback()
            conn = session.connection()
            return READ.first(conn, {"id": cid}), READ.first(conn, {"id": other})

    assert lane.run(work) == (READ.first(engine.connect(), {"id": cid}), None)


def test_a_connection_killed_under_the_lane_is_not_given_back_to_the_pool(lane, engine, cid):
    with Session(engine) as session:
        INSERT.run(session.connection(), _row(cid))
        session.commit()

    def work():
        with Session(lane.engine) as session:
            conn = session.connection()
            pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
            with engine.connect() as killer:
                killer.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
            with pytest.raises(DBAPIError) as raised:
                READ.first(conn, {"id": cid})
            assert raised.value.connection_invalidated
        found = []
        for _ in range(3):  # every pooled connection answers
            with lane.engine.connect() as conn:
                found.append(READ.first(conn, {"id": cid})[0])
        return found

    assert lane.run(work) == [cid] * 3
