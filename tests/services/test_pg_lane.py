"""PostgreSQL's lane (app.services.prepared): the hot path's statements sent with libpq's
pipeline API on psycopg's connection, prepared once per connection. It must write and read
exactly what Core does, survive what psycopg and a pooler do to prepared statements, refuse
a statement that would jump its batch's queue, and give back a usable (or no) connection
after any failure."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from sqlalchemy import bindparam, insert, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError, ProgrammingError
from sqlmodel import Session

from app.models.tables import Campaign, new_id, utcnow
from app.services.prepared import Prepared, batch, fetch_together

pytestmark = pytest.mark.usefixtures("postgres_only")

_campaign = Campaign.__table__
INSERT = Prepared(insert(_campaign))
READ = Prepared(select(_campaign.c.id, _campaign.c.name, _campaign.c.options, _campaign.c.version,
                       _campaign.c.created_at).where(_campaign.c.id == bindparam("id")))


@pytest.fixture
def postgres_only(engine):
    if engine.dialect.name != "postgresql":
        pytest.skip("the lane is PostgreSQL's")


@pytest.fixture
def campaigns(engine):
    made: list[str] = []
    yield made
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM campaign WHERE id = ANY(:ids)"), {"ids": made})


def _row(cid: str, name: str = "Brume", options: dict | None = None) -> dict:
    now = utcnow()
    return {"id": cid, "name": name, "ruleset": "great-cosmos", "options": options or {}, "version": 1,
            "created_at": now, "updated_at": now}


def test_the_lane_writes_and_reads_what_core_writes_and_reads(engine, campaigns):
    cid = new_id()
    campaigns.append(cid)
    options = {"note": "Éowyn — « quête » 🐉", "nested": {"n": 3, "none": None, "list": [True, 1.5]}}
    row = {**_row(cid, "Hérisson d'Ys", options), "created_at": datetime(2026, 1, 2, 3, 4, 5, 678901, timezone.utc)}
    with Session(engine) as session:
        INSERT.run(session.connection(), row)
        session.commit()
    with engine.connect() as conn:
        core = conn.execute(select(_campaign.c.id, _campaign.c.name, _campaign.c.options, _campaign.c.version,
                                   _campaign.c.created_at).where(_campaign.c.id == cid)).one()
        lane = READ.first(conn, {"id": cid})
        conn.rollback()
    assert tuple(core) == lane == (cid, "Hérisson d'Ys", options, 1, row["created_at"])


def test_statements_are_prepared_once_per_connection_and_survive_a_rollback(engine, campaigns):
    """psycopg prepares nothing itself: it would send DEALLOCATE ALL after a ROLLBACK."""
    cid = new_id()
    campaigns.append(cid)
    with engine.connect() as conn:
        with conn.begin():
            INSERT.run(conn, _row(cid))
        for _ in range(6):  # what psycopg's threshold (5) would have prepared
            conn.execute(text("SELECT 1 FROM campaign WHERE id = :i"), {"i": cid}).all()
        conn.rollback()
        with conn.begin():
            assert READ.first(conn, {"id": cid})[0] == cid
            assert READ.first(conn, {"id": cid})[0] == cid
            prepared = conn.execute(text("SELECT name, statement FROM pg_prepared_statements")).all()
    assert prepared and all(name.startswith("jdr_") for name, _ in prepared)
    texts = [statement for _, statement in prepared]
    for ours in (INSERT, READ):
        assert texts.count(ours._plan(engine.dialect).sql) == 1


def test_statements_deallocated_behind_its_back_are_prepared_again_in_a_new_transaction(engine, campaigns):
    cid = new_id()
    campaigns.append(cid)
    with engine.connect() as conn:
        with conn.begin():
            INSERT.run(conn, _row(cid))
        with conn.begin():
            conn.exec_driver_sql("DEALLOCATE ALL")  # a pooler's DISCARD ALL does as much
        with conn.begin():
            [rows] = fetch_together(conn, [(READ, {"id": cid})])  # BEGIN in the same round trip: sent again
        assert rows[0][0] == cid


def test_statements_deallocated_inside_an_open_transaction_fail_that_one_then_work(engine, campaigns):
    cid = new_id()
    campaigns.append(cid)
    with engine.connect() as conn:
        with conn.begin():
            INSERT.run(conn, _row(cid))
        with conn.begin():
            conn.exec_driver_sql("DEALLOCATE ALL")  # the transaction is open: what it did cannot be replayed
            with pytest.raises(ProgrammingError, match="does not exist"):
                READ.first(conn, {"id": cid})
        with conn.begin():
            assert READ.first(conn, {"id": cid})[0] == cid


def test_a_statement_that_is_not_prepared_may_not_jump_the_batch_queue(engine, campaigns):
    cid = new_id()
    campaigns.append(cid)
    with Session(engine) as session:
        conn = session.connection()
        with pytest.raises(RuntimeError, match="only Prepared statements"), batch(conn, commit=True):
            INSERT.run(conn, _row(cid))
            conn.execute(text("SELECT 1"))
        session.rollback()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM campaign WHERE id = :i"), {"i": cid}).scalar_one() == 0


def test_a_failing_statement_aborts_the_batch_and_leaves_the_connection_usable(engine, campaigns):
    cid, other = new_id(), new_id()
    campaigns += [cid, other]
    with Session(engine) as session:
        INSERT.run(session.connection(), _row(cid))
        session.commit()
    with Session(engine) as session:
        conn = session.connection()
        with pytest.raises(IntegrityError), batch(conn, commit=True):
            INSERT.run(conn, _row(other))
            INSERT.run(conn, _row(cid))  # the same id: the batch and its COMMIT are aborted
        session.rollback()
        conn = session.connection()
        assert conn.execute(text("SELECT count(*) FROM campaign WHERE id = :i"), {"i": other}).scalar_one() == 0
        assert READ.first(conn, {"id": cid})[0] == cid
        session.rollback()


def test_a_connection_killed_under_the_lane_is_not_given_back_to_the_pool(engine, campaigns):
    cid = new_id()
    campaigns.append(cid)
    with Session(engine) as session:
        INSERT.run(session.connection(), _row(cid))
        session.commit()
        conn = session.connection()
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        with engine.connect() as killer:
            killer.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
        with pytest.raises(DBAPIError) as raised:
            READ.first(conn, {"id": cid})
        assert raised.value.connection_invalidated
    for _ in range(3):  # every pooled connection answers
        with engine.connect() as conn:
            assert READ.first(conn, {"id": cid})[0] == cid
            conn.rollback()
