"""PostgreSQL LISTEN/NOTIFY: what wakes the event streams and the webhook loop of every worker
and instance (issue 28 item 4).

The database sends the notifications itself (triggers of migration 0011): `jdr_events` with the
campaign's id after each commit that adds events to it, `jdr_credentials` after a commit that
updates or deletes credentials (a rotated token, a removed player, a deleted campaign),
`jdr_webhooks` with the campaign's id after a webhook is made. A commit
that adds a thousand events of one campaign sends one notification (PostgreSQL folds equal ones
of one transaction).

The outbox (the `event` table) stays the truth: a notification only says "look now". Whoever
listens still polls, more slowly, while notifications are heard (`heard`), and at its normal pace
while they are not (the connection is down, or being made): a notification lost with a dropped
connection delays a delivery by at most the slow poll, and every listener is woken when the
connection comes back (`payload` None: anything may have happened meanwhile).

One `Listener` per database and event loop, on one connection of its own (counted in
`DB_MAX_CONNECTIONS`, app.core.db.Bounds); it runs while someone listens and closes with the last."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from contextlib import suppress

import psycopg
from psycopg.conninfo import make_conninfo
from sqlalchemy.engine import make_url

from app.core.db import Bounds, normalize_database_url

log = logging.getLogger("app.notify")

EVENTS = "jdr_events"  # payload: the campaign's id
CREDENTIALS = "jdr_credentials"  # payload: empty
WEBHOOKS = "jdr_webhooks"  # payload: the campaign's id of a new webhook
CHANNELS = (EVENTS, CREDENTIALS, WEBHOOKS)
RECONNECT_SECONDS = (0.5, 1.0, 2.0, 5.0)  # waits between attempts at the connection, then the last again

# `callback(channel, payload)`; payload None: the connection was (re)made, anything may have happened
Callback = Callable[[str, str | None], None]


def conninfo(url: str) -> str:
    """libpq's connection string of a PostgreSQL DATABASE_URL (any of the forms the app takes)."""
    return make_url(normalize_database_url(url)).set(drivername="postgresql").render_as_string(hide_password=False)


class Listener:
    def __init__(self, url: str, bounds: Bounds):
        self.url, self.bounds = url, bounds
        self.loop = asyncio.get_running_loop()
        self.heard = False  # LISTEN in force on a live connection
        self._callbacks: list[Callback] = []
        self._task: asyncio.Task[None] | None = None
        self.connections = 0  # connections made so far (tests, benches)

    def add(self, callback: Callback) -> None:
        self._callbacks.append(callback)
        if self._task is None or self._task.done():
            self._task = self.loop.create_task(self._run(), name="pg-listener")

    def remove(self, callback: Callback) -> None:
        with suppress(ValueError):
            self._callbacks.remove(callback)
        if not self._callbacks and self._task is not None:
            self._task.cancel()
            self._task = None
            self.heard = False

    def _tell(self, channel: str, payload: str | None) -> None:
        for callback in list(self._callbacks):
            try:
                callback(channel, payload)
            except Exception:  # one listener's bug is not another's
                log.exception("notification callback failed")

    async def _run(self) -> None:
        failures = 0
        while self._callbacks:
            try:
                dsn = make_conninfo(conninfo(self.url), **self.bounds.connect_args())
                conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
            except (psycopg.Error, OSError) as exc:
                await self._pause(failures, f"cannot connect: {exc}")
                failures += 1
                continue
            self.connections += 1
            try:
                async with conn:
                    for channel in CHANNELS:
                        await conn.execute(f"LISTEN {channel}")
                    self.heard, failures = True, 0
                    self._tell(EVENTS, None)  # what was missed while not listening: look now
                    async for note in conn.notifies():
                        self._tell(note.channel, note.payload)
            except (psycopg.Error, OSError) as exc:
                self.heard = False
                await self._pause(failures, f"connection lost: {exc}")
                failures += 1
            finally:
                self.heard = False

    async def _pause(self, failures: int, why: str) -> None:
        log.warning("LISTEN %s: %s (polling meanwhile)", ", ".join(CHANNELS), why)
        await asyncio.sleep(RECONNECT_SECONDS[min(failures, len(RECONNECT_SECONDS) - 1)])


_LISTENERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, Bounds], Listener]] = (
    weakref.WeakKeyDictionary()
)


def listener(url: str, bounds: Bounds) -> Listener | None:
    """This loop's listener on the database of `url` (None on SQLite: one process writes, and
    polling a local file costs no round trip)."""
    if make_url(normalize_database_url(url)).get_backend_name() != "postgresql":
        return None
    loop = asyncio.get_running_loop()
    mine = _LISTENERS.setdefault(loop, {})
    found = mine.get((url, bounds))
    if found is None:
        found = mine[(url, bounds)] = Listener(url, bounds)
    return found


def listener_of(sessions: object) -> Listener | None:
    """The listener on the database a session factory opens (`SessionOpener.database()`), or None
    for a factory that does not say (a test's own)."""
    database = getattr(sessions, "database", None)
    if database is None:
        return None
    url, _echo, bounds = database()
    return listener(url, bounds)
