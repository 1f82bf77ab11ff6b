"""SQLite's WAL checkpoints in a thread, not in the commit that crosses the threshold.

In WAL mode SQLite copies the log back into the database file (a checkpoint) when a commit leaves
more than `wal_autocheckpoint` pages in it, inside that commit: with ~13 pages a test, every ~80th
test's commit copied some 4 MB and waited for two fsyncs. The app's writes run on the event loop
(app.core.db, `SessionOpener.on_loop`), so that wait stopped every request of the process: measured
in-process, a commit took 45 µs more wall time than CPU on average, none with checkpoints elsewhere.

Here each process that serves requests checkpoints its SQLite database itself, every
`SQLITE_CHECKPOINT_SECONDS`, in a worker thread (SQLite releases the GIL while it copies and
syncs): a PASSIVE checkpoint, which waits for no one and lets the writer go on appending to the
log meanwhile. A commit checkpoints by itself only past `SAFETY_PAGES` (set on every connection,
`app.core.db`), when no checkpointer runs (a script on the engine) or when it lags far behind.
With `SQLITE_CHECKPOINT_SECONDS=0` the connections keep SQLite's default (1,000 pages) and no
thread runs. PostgreSQL has no such step."""

from __future__ import annotations

import asyncio
import logging
from typing import NamedTuple

import anyio
from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

DEFAULT_PAGES = 1000  # SQLite's own `wal_autocheckpoint`
SAFETY_PAGES = 10_000  # ~40 MB of log: a commit checkpoints only if the thread did not


class Checkpoint(NamedTuple):
    """`PRAGMA wal_checkpoint`'s answer: whether it was blocked, the log's pages, those copied back."""

    busy: int
    log_pages: int
    copied: int


def autocheckpoint_pages(every_seconds: float) -> int:
    """The `wal_autocheckpoint` of the app's connections: the safety net when a thread checkpoints."""
    return SAFETY_PAGES if every_seconds > 0 else DEFAULT_PAGES


def checkpoint(engine: Engine) -> Checkpoint:
    """One PASSIVE checkpoint on a pooled connection, outside any transaction (the driver's own
    connection: SQLAlchemy's would begin one first)."""
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        try:
            cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
            busy, log_pages, copied = cursor.fetchone() or (0, -1, -1)
            return Checkpoint(busy, log_pages, copied)
        finally:
            cursor.close()
    finally:
        raw.close()


async def run_checkpoints(engine: Engine, every_seconds: float) -> None:
    """Checkpoint `engine`'s SQLite database every `every_seconds` in a worker thread, on a limiter
    of its own (it takes none of the requests' thread tokens), until cancelled; a failure is
    logged and tried again at the next tick."""
    limiter = anyio.CapacityLimiter(1)
    while True:
        await asyncio.sleep(every_seconds)
        try:
            await anyio.to_thread.run_sync(checkpoint, engine, limiter=limiter)
        except Exception:
            log.exception("SQLite checkpoint failed")
