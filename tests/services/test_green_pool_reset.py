"""The writers' pool on PostgreSQL (`app.core.db._green_engine`) rolls back a connection given back
only when psycopg says a transaction is open on it: a committed one goes back as it is (no hop
through the event loop for nothing), one left in a transaction is rolled back before anyone
else takes it."""

from __future__ import annotations

import asyncio

import pytest
from psycopg.pq import TransactionStatus
from sqlalchemy import text
from sqlalchemy.connectors.asyncio import AsyncAdapt_dbapi_connection
from sqlalchemy.util import greenlet_spawn

from app.core.db import Bounds, _green_engine


@pytest.fixture
def writers(engine, database_url):
    if engine.dialect.name != "postgresql":
        pytest.skip("the writers' pool on the loop is PostgreSQL's")
    green = _green_engine(database_url, False, Bounds(connections=3))  # one writer's connection
    yield green
    asyncio.run(greenlet_spawn(green.dispose))


def _status(green) -> TransactionStatus:
    raw = green.raw_connection()
    try:
        return raw.driver_connection.info.transaction_status
    finally:
        raw.close()


def test_a_connection_given_back_in_a_transaction_is_rolled_back_a_committed_one_is_not(writers, monkeypatch):
    rollbacks = []
    real = AsyncAdapt_dbapi_connection.rollback
    monkeypatch.setattr(AsyncAdapt_dbapi_connection, "rollback", lambda self: rollbacks.append(1) or real(self))

    def committed() -> None:
        with writers.connect() as conn:
            assert conn.execute(text("SELECT 1")).scalar() == 1
            conn.commit()

    def left_open() -> TransactionStatus:
        raw = writers.raw_connection()  # no SQLAlchemy Connection to roll it back: the pool's reset must
        cursor = raw.cursor()
        cursor.execute("SELECT 1")
        cursor.close()
        status = raw.driver_connection.info.transaction_status
        raw.close()
        return status

    async def scenario() -> tuple[int, TransactionStatus, int, TransactionStatus]:
        await greenlet_spawn(committed)  # the first connection (SQLAlchemy's first-connect queries roll back)
        rollbacks.clear()
        await greenlet_spawn(committed)
        after_commit = len(rollbacks)
        given_back = await greenlet_spawn(left_open)
        return after_commit, given_back, len(rollbacks), await greenlet_spawn(_status, writers)

    after_commit, given_back, after_open, status = asyncio.run(scenario())
    assert writers.pool.size() == 1 and writers.pool.checkedout() == 0
    assert after_commit == 0  # a committed connection: nothing to roll back, nothing sent
    assert given_back == TransactionStatus.INTRANS
    assert after_open == 1 and status == TransactionStatus.IDLE  # rolled back before it was taken again
