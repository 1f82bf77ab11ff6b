"""PostgreSQL LISTEN/NOTIFY: what wakes the event streams and the webhook loop of every worker
and instance.

The database sends the notifications itself (triggers of migration 0011): `jdr_events` with the
campaign's id after each commit that adds events to it, `jdr_credentials` after a commit that
updates or deletes credentials (a rotated token, a removed player, a deleted campaign),
`jdr_webhooks` with the campaign's id after a webhook is made. A commit that adds a thousand
events of one campaign sends one notification (PostgreSQL folds equal ones of one transaction);
a connection with `jdr.notify=off` (EVENT_NOTIFY=false) sends no `jdr_events`.

The outbox (the `event` table) stays the truth: a notification only says "look now". Whoever
listens still polls, more slowly, while its channels are heard (`hears`), and at its normal pace
while they are not (the connection is down, or being made): a notification lost with a dropped
connection delays a delivery by at most the slow poll, and whoever wants a channel is woken when
its LISTEN takes (`payload` None: anything may have happened meanwhile).

One `Listener` per database and event loop, on one connection of its own (counted in
`DB_MAX_CONNECTIONS`, app.core.db.Bounds); it runs while someone listens and closes with the last."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from sqlalchemy.engine import make_url

from app.core import committed
from app.core.committed import EVENTS, database_of
from app.core.db import Bounds, engine_for, normalize_database_url, opened_by

log = logging.getLogger("app.notify")

# EVENTS (app.core.committed, which tells this process's own commits on the same channel): payload the campaign's id
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
    """LISTEN on the channels someone wants now (`add`/`want`/`remove`): a process with no open
    stream and no webhook anywhere listens to `jdr_webhooks` alone, so the notifications of every
    commit cost it nothing. Notifications are read straight from libpq (`pgconn.consume_input`,
    `pgconn.notifies`, psycopg's public libpq layer) when the socket is readable: ~10 µs each,
    where psycopg's `notifies()` generator took ~85-140 µs of CPU for each one arriving alone."""

    def __init__(self, url: str, bounds: Bounds):
        self.url, self.bounds = url, bounds
        self.loop = asyncio.get_running_loop()
        self._wants: dict[Callback, frozenset[str]] = {}
        self._listening: frozenset[str] = frozenset()  # LISTEN in force on a live connection
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.connections = 0  # connections made so far (tests, benches)
        self.received = 0  # notifications read (tests, benches)

    def hears(self, channel: str) -> bool:
        """Whether a notification on `channel` would reach this process now."""
        return channel in self._listening

    @property
    def heard(self) -> bool:
        return bool(self._listening)

    def add(self, callback: Callback, channels: Iterable[str] = CHANNELS) -> None:
        self.want(callback, channels)
        if self._task is None or self._task.done():
            self._task = self.loop.create_task(self._run(), name="pg-listener")

    def want(self, callback: Callback, channels: Iterable[str]) -> None:
        """The channels `callback` wants from now on (LISTEN/UNLISTEN follow at once)."""
        wanted = frozenset(channels)
        if self._wants.get(callback) != wanted:
            self._wants[callback] = wanted
            self._changed.set()

    def remove(self, callback: Callback) -> None:
        self._wants.pop(callback, None)
        self._changed.set()
        if not self._wants and self._task is not None:
            self._task.cancel()
            self._task = None
            self._listening = frozenset()

    def _wanted(self) -> frozenset[str]:
        return frozenset().union(*self._wants.values()) if self._wants else frozenset()

    def _tell(self, channel: str, payload: str | None) -> None:
        for callback, channels in list(self._wants.items()):
            if payload is not None and channel not in channels:
                continue
            try:
                callback(channel, payload)
            except Exception:  # one listener's bug is not another's
                log.exception("notification callback failed")

    async def _run(self) -> None:
        failures = 0
        while self._wants:
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
                    await self._serve(conn)
            except (psycopg.Error, OSError) as exc:
                self._listening = frozenset()
                await self._pause(failures, f"connection lost: {exc}")
                failures += 1
            else:
                failures = 0
            finally:
                self._listening = frozenset()

    async def _serve(self, conn: psycopg.AsyncConnection[Any]) -> None:
        pgconn = conn.pgconn
        fd = pgconn.socket
        lost: list[BaseException] = []

        def during_commands(note: psycopg.Notify) -> None:  # what psycopg read while it ran LISTEN
            self.received += 1
            self._tell(note.channel, note.payload)

        def readable() -> None:
            try:
                pgconn.consume_input()
            except psycopg.Error as exc:
                lost.append(exc)
                self._changed.set()
                return
            while (note := pgconn.notifies()) is not None:
                self.received += 1
                self._tell(note.relname.decode(), note.extra.decode())

        conn.add_notify_handler(during_commands)
        while self._wants:
            wanted = self._wanted()
            if wanted != self._listening:
                new = wanted - self._listening
                for channel in sorted(new):
                    await conn.execute(f"LISTEN {channel}")
                for channel in sorted(self._listening - wanted):
                    await conn.execute(f"UNLISTEN {channel}")
                self._listening = wanted
                readable()  # anything that came meanwhile
                for channel in sorted(new):  # what was missed before: look now
                    self._tell(channel, None)
            self._changed.clear()
            self.loop.add_reader(fd, readable)
            try:
                await self._changed.wait()  # the channels wanted changed, or the connection was lost
            finally:
                self.loop.remove_reader(fd)
            if lost:
                raise psycopg.OperationalError(f"LISTEN connection lost: {lost[0]}")

    async def _pause(self, failures: int, why: str) -> None:
        log.warning("LISTEN %s: %s (polling meanwhile)", ", ".join(sorted(self._wanted())), why)
        await asyncio.sleep(RECONNECT_SECONDS[min(failures, len(RECONNECT_SECONDS) - 1)])


async def wake_or_timeout(wake: asyncio.Event, seconds: float) -> None:
    """Until `wake` is set or `seconds` passed. Not `asyncio.wait_for`: on Python 3.11 it returns
    normally when it is cancelled just as the event is set (the cancellation is lost, and the
    app's shutdown then waits for this loop forever); `asyncio.timeout` keeps a cancellation."""
    with suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await wake.wait()


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
    """The listener on the database a session factory opens (`opened_by`), or None for a factory
    that does not say (a test's own)."""
    opened = opened_by(sessions)
    if opened is None:
        return None
    url, _echo, bounds = opened
    return listener(url, bounds)


def commits_of(sessions: object) -> str | None:
    """The database a session factory opens, as `app.core.committed` names it (to hear this
    process's own commits there), or None for a factory that does not say (a test's own)."""
    opened = opened_by(sessions)
    return None if opened is None else database_of(engine_for(*opened).url)


def hear_own_commits(sessions: object, callback: committed.Callback) -> Callable[[], None]:
    """`callback(EVENTS, campaign_id)` after each commit of this process that gave a campaign events, on
    the database `sessions` opens (`app.core.committed.listen`; SQLite's only wake-up, PostgreSQL's first);
    returns what stops it. Nothing to hear for a factory that does not say its database (a test's own)."""
    own = commits_of(sessions)
    if own is None:
        return lambda: None
    committed.listen(own, callback)
    return lambda: committed.unlisten(own, callback)
