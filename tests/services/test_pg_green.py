"""PostgreSQL's writes on the event loop (`app.core.db.SessionOpener.on_loop`, run by
`app.api.deps.in_thread` in SQLAlchemy's greenlet): a rolling operation commits everything
as in a thread, and while it waits for a row lock the loop goes on serving others."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from sqlmodel import Session

from app.api.deps import in_thread
from app.core.db import OnLoop, normalize_database_url
from app.services.records import Principal
from app.services.operations import RollingWork


@pytest.fixture
def green_engine(engine, database_url):
    if engine.dialect.name != "postgresql":
        pytest.skip("the writes on the loop are PostgreSQL's")
    green = create_async_engine(
        normalize_database_url(database_url), poolclass=NullPool, connect_args={"prepare_threshold": None}
    )
    yield green.sync_engine
    asyncio.run(green.dispose())


class GreenSessions:
    """A session factory as `app.core.db.open_session` is on PostgreSQL, on a test engine."""

    def __init__(self, green_engine):
        self.engine = green_engine

    def __call__(self, read_only: bool = False):
        raise AssertionError("a write on PostgreSQL runs on the loop, not in a thread")

    def on_loop(self) -> OnLoop:
        return OnLoop(Session(self.engine, expire_on_commit=False), green=True)

    @staticmethod
    def writers() -> int:
        return 4


def _test(cid: str, hero: str, dice: list[int]):
    """What `app.services.play.run_test` does, with table dice."""
    gm = Principal(cid, "gm", None, "t" * 64)

    def work(session: Session) -> dict:
        with RollingWork(session, gm, cid, None, lock=hero) as uow:
            [ch] = uow.lock([hero])
            req = uow.adapter.TestRequest(stat="force", dice=dice)
            return uow.commit_outcome(uow.adapter.test(ch, req, uow.context(req)))

    return work


def test_a_write_on_the_loop_waits_for_a_row_lock_while_the_loop_serves_others(engine, green_engine, committed):
    cid, character = committed
    holder = engine.connect()
    holder.execute(text("SELECT id FROM character WHERE id = :i FOR UPDATE"), {"i": character})
    released = threading.Event()

    def release() -> None:  # from another thread: a parked loop could not release it
        holder.rollback()
        released.set()

    async def scenario():
        write = asyncio.ensure_future(
            in_thread(GreenSessions(green_engine), _test(cid, character, [5]))
        )  # karma changes
        for _ in range(20):  # the loop goes on while the write waits for the lock
            await asyncio.sleep(0.01)
        locked = (
            not released.is_set()
        )  # the ticks ran before anyone let the lock go (a parked loop waits for the safety)
        waited = not write.done()
        threading.Thread(target=release).start()
        return locked, waited, await asyncio.wait_for(write, 30)

    safety = threading.Timer(10, release)  # a parked loop would never let the lock go: fail, do not hang
    safety.start()
    try:
        locked, waited, body = asyncio.run(scenario())
    finally:
        safety.cancel()
        released.wait(10)
        holder.close()
    assert locked and waited  # the 20 ticks ran while the row was locked and the write still waiting
    assert body["kind"] == "test"
    with engine.connect() as conn:
        version, karma = conn.execute(
            text("SELECT version, sheet->>'karma' FROM character WHERE id = :i"), {"i": character}
        ).one()
        logged = conn.execute(text("SELECT count(*) FROM roll_log WHERE campaign_id = :c"), {"c": cid}).scalar_one()
        events = conn.execute(text("SELECT count(*) FROM event WHERE campaign_id = :c"), {"c": cid}).scalar_one()
    # one entry; two events: the sheet's karma changed (character.updated, issue 25), then log.created
    assert (version, logged, events) == (2, 1, 2) and int(karma) != 0


def test_writes_on_the_loop_at_once_on_one_character_are_all_logged_and_numbered(engine, green_engine, committed):
    cid, character = committed

    async def scenario():
        return await asyncio.gather(
            *(in_thread(GreenSessions(green_engine), _test(cid, character, [50])) for _ in range(8))
        )

    bodies = asyncio.run(scenario())
    assert len({b["id"] for b in bodies}) == 8
    with engine.connect() as conn:
        version = conn.execute(text("SELECT version FROM character WHERE id = :i"), {"i": character}).scalar_one()
        logged = conn.execute(text("SELECT count(*) FROM roll_log WHERE campaign_id = :c"), {"c": cid}).scalar_one()
        numbers = (
            conn.execute(text("SELECT number FROM event WHERE campaign_id = :c ORDER BY number"), {"c": cid})
            .scalars()
            .all()
        )
    assert (version, logged, numbers) == (1, 8, list(range(1, 9)))  # no sheet change: logged, numbered in order
