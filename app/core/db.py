"""The database engine: URL normalisation, SQLite pragmas, sessions."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, create_engine

from app.core.config import Settings, get_settings


def normalize_database_url(url: str) -> str:
    """Map the plain forms users paste to the driver the app uses.

    `postgres://` and `postgresql://` (and `postgresql+psycopg2://`) → psycopg 3;
    `sqlite:///path.db` stays as it is (pysqlite).
    """
    url = url.strip()
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"DATABASE_URL {url!r} is not a URL (expected sqlite:///path.db or postgresql://…)")
    base = scheme.split("+", 1)[0].lower()
    if base in ("postgres", "postgresql"):
        return f"postgresql+psycopg://{rest}"
    if base == "sqlite":
        return f"sqlite://{rest}"
    raise ValueError(f"DATABASE_URL scheme {scheme!r} is not supported: use sqlite or postgresql")


# Database work runs in the threadpool, one hop per request (app.api.deps.in_thread).
# On SQLite the pool has a connection for every thread, so a thread never waits for another
# one to give a connection back; on PostgreSQL the connections are bounded
# (`Bounds.pools()`, DB_MAX_CONNECTIONS), and a thread may wait for one. A pool wait that
# times out is a 503.
THREADS = 32
PG_POOL = 8  # the threads' pool on PostgreSQL without a bound (`Bounds.connections` 0)
LISTENERS = 1  # the LISTEN connection of a process (app.core.notify)
POOL_TIMEOUT_SECONDS = 5
READ_ONLY = "jdr_read_only"  # execution option: a transaction that never writes
ANSWER_WITHIN = "jdr_answer_within"  # execution option: seconds the lane waits for the server (app.services.prepared)
ANSWER_MARGIN_SECONDS = 2.0


@dataclass(frozen=True)
class Bounds:
    """How long PostgreSQL work may wait (issue 21 item 6), so one stuck lock or a silent
    server cannot hold the write slots: a statement waits at most `lock_seconds` for a lock
    (`lock_timeout`) and runs at most `statement_seconds` (`statement_timeout`), both set on
    each connection at its start; the lane waits at most `answer_seconds` for
    the server's answer; TCP keepalives find a dead peer of any other statement. A request that
    hits one of them is a 503 with Retry-After (app.api.problems). A bound of 0 sets nothing."""

    lock_seconds: float = 0
    statement_seconds: float = 0
    # PostgreSQL connections this process opens at most (issue 28 item 4): `pools()`; 0 = the
    # sizes of before (a pool per thread: the tests' own engine, migrations)
    connections: int = 0
    notify: bool = True  # False: this process's commits send no `jdr_events` (migration 0011's trigger)

    @classmethod
    def of(cls, settings: Settings) -> Bounds:
        return cls(
            settings.db_lock_timeout_seconds,
            settings.db_statement_timeout_seconds,
            settings.db_max_connections,
            settings.event_notify,
        )

    def pools(self) -> tuple[int, int, int]:
        """PostgreSQL: (the threads' pool, its overflow, the writers on the loop), within
        `connections` less one for the LISTEN connection (app.core.notify).

        The writers on the loop (`WRITERS`, at most 4) get half of what is left, the threads (reads,
        the event hub, the webhook loop) the rest: 10 → 4 writers, 5 for the threads, 1 to listen.
        A thread finding no free connection waits for one (`POOL_TIMEOUT_SECONDS`, then a 503);
        a write waits its turn before it takes one (app.api.deps), so its pool has no overflow."""
        if not self.connections:
            return PG_POOL, THREADS - PG_POOL + 4, WRITERS["postgresql"]
        usable = self.connections - LISTENERS
        writers = max(1, min(WRITERS["postgresql"], usable // 2))
        return usable - writers, 0, writers

    @property
    def answer_seconds(self) -> float | None:
        """The server answers a pipeline within its statements' bound (a statement beyond it is
        cancelled, and the error is an answer); silent for longer, it is taken for dead."""
        return self.statement_seconds + ANSWER_MARGIN_SECONDS if self.statement_seconds else None

    def connect_args(self) -> dict[str, str | int]:
        """libpq's: the two timeouts set (a bound of 0 leaves the server's own setting), keepalives,
        and the process in `application_name` (`jdr-rules-api/<pid>`: pg_stat_activity shows
        whose connections are whose)."""
        settings = {"lock_timeout": self.lock_seconds, "statement_timeout": self.statement_seconds}
        options = " ".join(f"-c {name}={round(seconds * 1000)}" for name, seconds in settings.items() if seconds)
        if not self.notify:
            options = f"{options} -c jdr.notify=off".strip()
        return {**({"options": options} if options else {}), **KEEPALIVES, "application_name": application_name()}


def application_name() -> str:
    return f"{APPLICATION}/{os.getpid()}"


APPLICATION = "jdr-rules-api"
# a peer that stopped answering is found within about 25 s, whatever the statement
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}


UNBOUNDED = Bounds()  # migrations, and the tests' own engine


def build_engine(url: str, *, echo: bool = False, bounds: Bounds = UNBOUNDED) -> Engine:
    url = normalize_database_url(url)
    if make_url(url).get_backend_name() == "sqlite":
        engine = create_engine(
            url,
            echo=echo,
            connect_args={"check_same_thread": False, "timeout": 30},
            pool_size=THREADS,
            max_overflow=4,
            pool_timeout=POOL_TIMEOUT_SECONDS,
        )
        _sqlite_transactions(engine)
        return engine
    # No pre-ping (a round trip per request): a connection found dead is retried by
    # the write path and answered 503 elsewhere; connections are recycled hourly.
    # psycopg prepares no statement itself (`prepare_threshold`): the hot path's statements
    # are prepared by app.services.prepared, and psycopg, once it has prepared some, sends
    # DEALLOCATE ALL after any ROLLBACK, which would drop those too.
    pool_size, overflow, _writers = bounds.pools()
    return create_engine(
        url,
        echo=echo,
        pool_size=pool_size,
        max_overflow=overflow,
        pool_timeout=POOL_TIMEOUT_SECONDS,
        pool_recycle=3600,
        connect_args={"prepare_threshold": None, **bounds.connect_args()},
        execution_options={ANSWER_WITHIN: bounds.answer_seconds},
    )


def _sqlite_transactions(engine: Engine, busy_timeout_ms: int = 30000) -> None:
    """WAL, foreign keys, and transactions SQLAlchemy controls (pysqlite's own
    handling breaks SAVEPOINT). `BEGIN IMMEDIATE` takes the write lock at the
    start, so concurrent writers queue on the busy timeout instead of failing
    when a read snapshot goes stale; a read-only transaction (sessions from
    `read_engine`) is a plain deferred `BEGIN` and never takes the write lock."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get(READ_ONLY) else "BEGIN IMMEDIATE")


@lru_cache
def engine_for(url: str, echo: bool = False, bounds: Bounds = UNBOUNDED) -> Engine:
    """One engine (and pool) per database URL (and bounds) in this process."""
    return build_engine(url, echo=echo, bounds=bounds)


def get_engine() -> Engine:
    settings = get_settings()
    return engine_for(settings.database_url, settings.sql_echo, Bounds.of(settings))


@lru_cache
def _read_engine(url: str, echo: bool = False, bounds: Bounds = UNBOUNDED) -> Engine:
    """The same pool, for transactions that only read (no write lock on SQLite)."""
    return engine_for(url, echo, bounds).execution_options(**{READ_ONLY: True})


# SQLite has one writer at a time: this process's writers queue here (woken at
# once) rather than in SQLite's busy handler (which sleeps up to 100 ms a try).
# Locks are always taken in one order: this lock first, then the database's
# (BEGIN IMMEDIATE), so a writer never holds the database lock while it waits
# for this one.
SQLITE_WRITER = threading.Lock()

# How many write transactions of this process run at once, beyond which the
# others wait their turn as coroutines (app.api.deps.in_thread), not as threads
# each holding a pooled connection: on PostgreSQL, writers that would only queue
# on each other's row locks and on the GIL cost CPU (thread switches) and gain
# nothing (issue 16: 32 writer threads spent ~30% more CPU a request than 2-4);
# on SQLite there is one writer anyway, and it runs on the event loop itself
# (`open_loop_write_session`).
WRITERS = {"sqlite": 1, "postgresql": 4}


@contextmanager
def _write_session(engine: Engine) -> Iterator[Session]:
    with (
        SQLITE_WRITER if engine.dialect.name == "sqlite" else nullcontext(),
        Session(engine, expire_on_commit=False) as session,
    ):
        yield session


def _is_locked(error: OperationalError) -> bool:
    return "locked" in str(error.orig).lower() or "busy" in str(error.orig).lower()


@lru_cache
def _loop_engine(url: str, echo: bool = False) -> Engine:
    """SQLite's writer on the event loop: its own small pool (writers there take turns,
    so it never waits for a connection), and no busy wait: a database locked by
    another process is answered at once, and that write goes to a thread instead."""
    engine = create_engine(
        normalize_database_url(url),
        echo=echo,
        pool_size=1,
        max_overflow=2,
        pool_timeout=POOL_TIMEOUT_SECONDS,
        connect_args={"check_same_thread": False, "timeout": 0},
    )
    _sqlite_transactions(engine, busy_timeout_ms=0)
    return engine


@contextmanager
def _loop_write_session(session: Session) -> Iterator[Session]:
    try:
        with session:
            yield session
    finally:
        SQLITE_WRITER.release()


def open_loop_write_session(
    url: str, echo: bool = False, bounds: Bounds = UNBOUNDED
) -> AbstractContextManager[Session] | None:
    """A write session, its transaction begun (BEGIN IMMEDIATE), to use on the event loop
    without waiting: only on SQLite, and only when neither a writer of this process nor
    another process holds the database; else None (write in a thread: `open_session`).

    SQLite's work for a request is CPU-bound and short (no network, one writer at a
    time): done on the loop it costs no thread hand-off and no GIL contention (issue
    16: ~45% more writes a second than in a worker thread), and it never waits on a
    lock there, so the loop is never parked."""
    if engine_for(url, echo, bounds).dialect.name != "sqlite" or not SQLITE_WRITER.acquire(blocking=False):
        return None
    try:
        session = Session(_loop_engine(url, echo), expire_on_commit=False)
        try:
            session.connection()  # BEGIN IMMEDIATE: the database's write lock, or "locked" at once
        except BaseException:
            session.close()
            raise
    except BaseException as e:
        SQLITE_WRITER.release()
        if isinstance(e, OperationalError) and _is_locked(e):
            return None
        raise
    return _loop_write_session(session)


@lru_cache
def _green_engine(url: str, echo: bool = False, bounds: Bounds = UNBOUNDED) -> Engine:
    """PostgreSQL's writers on the event loop: psycopg's async connections under SQLAlchemy's
    sync API (`AsyncEngine.sync_engine`), used from a greenlet (`green`)."""
    from sqlalchemy.ext.asyncio import create_async_engine

    _pool, _overflow, writers = bounds.pools()
    return create_async_engine(
        normalize_database_url(url),
        echo=echo,
        pool_size=writers,
        max_overflow=4 if not bounds.connections else 0,
        pool_timeout=POOL_TIMEOUT_SECONDS,
        pool_recycle=3600,
        connect_args={"prepare_threshold": None, **bounds.connect_args()},
        execution_options={ANSWER_WITHIN: bounds.answer_seconds},
    ).sync_engine


def open_green_write_session(url: str, echo: bool = False, bounds: Bounds = UNBOUNDED) -> Session | None:
    """On PostgreSQL, a write session to use from SQLAlchemy's greenlet on the event loop
    (`sqlalchemy.util.greenlet_spawn`): its statements wait for the server as coroutines,
    so the loop goes on meanwhile; None on SQLite.

    A write's database work is a few short round trips (app.services.prepared sends the hot
    path's statements in one or two): run on the loop, it costs no thread hand-off (about
    130 µs of CPU each way here) and no GIL contention with a worker thread."""
    if engine_for(url, echo, bounds).dialect.name != "postgresql":
        return None
    return Session(_green_engine(url, echo, bounds), expire_on_commit=False)


class SessionOpener:
    """Opens sessions for one request's work: `sessions()` to write, `sessions(read_only=True)`
    to only read (never a write lock on SQLite; on SQLite, writing ones hold this process's
    writer lock for their lifetime); `on_loop()`: a write session for the event loop, or None
    (see `open_loop_write_session`); `green()`: PostgreSQL's write session for a greenlet on
    the loop, or None (see `open_green_write_session`); `writers()`: how many write
    transactions at once.

    On the database of `url` (with `echo`, within `bounds`), or, without one, of the settings
    read from the environment when a session is opened (`get_settings`)."""

    def __init__(self, url: str | None = None, echo: bool = False, bounds: Bounds = UNBOUNDED):
        self.url, self.echo, self.bounds = url, echo, bounds

    @classmethod
    def of(cls, settings: Settings) -> SessionOpener:
        return cls(settings.database_url, settings.sql_echo, Bounds.of(settings))

    def database(self) -> tuple[str, bool, Bounds]:
        """The database these sessions open: its URL, echo, and bounds."""
        if self.url is not None:
            return self.url, self.echo, self.bounds
        settings = get_settings()
        return settings.database_url, settings.sql_echo, Bounds.of(settings)

    def __call__(self, read_only: bool = False) -> AbstractContextManager[Session]:
        url, echo, bounds = self.database()
        if read_only:
            return Session(_read_engine(url, echo, bounds), expire_on_commit=False)
        return _write_session(engine_for(url, echo, bounds))

    def on_loop(self) -> AbstractContextManager[Session] | None:
        return open_loop_write_session(*self.database())

    def green(self) -> Session | None:
        return open_green_write_session(*self.database())

    def writers(self) -> int:
        url, echo, bounds = self.database()
        name = engine_for(url, echo, bounds).dialect.name
        return bounds.pools()[2] if name == "postgresql" else WRITERS.get(name, THREADS)


open_session = SessionOpener()
# What opens a request's sessions: `open_session` or an app's own (`sessions(read_only=True)` only reads).
Sessions = Callable[..., AbstractContextManager[Session]]
