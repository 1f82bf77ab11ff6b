"""Ordering concurrent requests on PostgreSQL's locks, for the race tests: a transaction holding a
campaign's event counter stops every writer of that campaign at its event (its other writes made,
their locks held), `lock_waits` waits until so many requests wait on a lock, and `released` lets the
two go in their order."""

from __future__ import annotations

import time

from sqlalchemy import text


def lock_waits(engine, count: int, timeout: float = 20.0) -> None:
    """Until `count` backends of this database wait on a lock."""
    deadline = time.monotonic() + timeout
    with engine.connect() as conn:
        while time.monotonic() < deadline:
            waiting = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
            ).scalar_one()
            if waiting >= count:
                return
            conn.rollback()
            time.sleep(0.02)
    raise AssertionError(f"{count} requests never waited on a lock")


def holding_the_event_counter(engine, campaign_id: str):
    """A transaction holding the campaign's event counter's row: every writer of the campaign stops
    at its event (the last thing it writes), its other writes made and their locks held."""
    conn = engine.connect()
    conn.execute(text("SELECT 1 FROM event_counter WHERE campaign_id = :c FOR UPDATE"), {"c": campaign_id})
    return conn


def released(engine, holder, first, second, first_status: int):
    """Once both requests (futures) wait on a lock, the holder commits: the first is answered
    `first_status`; the second's answer is returned."""
    lock_waits(engine, 2)
    holder.commit()
    answer = first.result(timeout=30)
    assert answer.status_code == first_status, answer.text
    return second.result(timeout=30)
