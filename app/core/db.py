"""The database: one engine per URL (`database`), URL normalisation, SQLite pragmas, and the one
session factory (`SessionOpener`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple, NoReturn, Protocol

import psycopg
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.pool import PoolResetState
from sqlmodel import Session, create_engine

from app.core import json_codec
from app.core.committed import AppSession
from app.core.config import Settings, get_settings
from app.core.wal import DEFAULT_PAGES, autocheckpoint_pages


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
        path, _, query = rest.partition("?")
        if path in ("", "/", "/:memory:") or "mode=memory" in query:
            raise ValueError(
                f"DATABASE_URL {url!r} is an in-memory SQLite database: every connection would get its own "
                "empty one, and the service uses several; give a file instead (sqlite:///jdr.db)"
            )
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
NO_WAIT = "jdr_no_wait"  # execution option (SQLite): BEGIN IMMEDIATE answers "locked" at once instead of waiting
ANSWER_WITHIN = "jdr_answer_within"  # execution option: seconds the lane waits for the server (app.core.prepared)
ANSWER_MARGIN_SECONDS = 2.0


@dataclass(frozen=True)
class Bounds:
    """How long PostgreSQL work may wait, so one stuck lock or a silent
    server cannot hold the write slots: a statement waits at most `lock_seconds` for a lock
    (`lock_timeout`) and runs at most `statement_seconds` (`statement_timeout`), both set on
    each connection at its start; the lane waits at most `answer_seconds` for
    the server's answer; TCP keepalives find a dead peer of any other statement. A request that
    hits one of them is a 503 with Retry-After (app.api.problems). A bound of 0 sets nothing."""

    lock_seconds: float = 0
    statement_seconds: float = 0
    # PostgreSQL connections this process opens at most: `pools()`; 0 = the
    # sizes of before (a pool per thread: the tests' own engine, migrations)
    connections: int = 0
    notify: bool = True  # False: this process's commits send no `jdr_events` (migration 0011's trigger)
    # SQLite: seconds between this process's checkpoints in a thread (app.core.wal); 0 = none, the
    # connections keep SQLite's own autocheckpoint
    checkpoint_seconds: float = 0
    # False: `synchronous_commit=off` on each connection (Settings.db_synchronous_commit)
    synchronous_commit: bool = True

    @classmethod
    def of(cls, settings: Settings) -> Bounds:
        return cls(
            settings.db_lock_timeout_seconds,
            settings.db_statement_timeout_seconds,
            settings.db_max_connections,
            settings.event_notify,
            settings.sqlite_checkpoint_seconds,
            settings.db_synchronous_commit,
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
        if not self.synchronous_commit:
            options = f"{options} -c synchronous_commit=off".strip()
        return {**({"options": options} if options else {}), **KEEPALIVES, "application_name": application_name()}


def application_name() -> str:
    return f"{APPLICATION}/{os.getpid()}"


APPLICATION = "jdr-rules-api"
# a peer that stopped answering is found within about 25 s, whatever the statement
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}


UNBOUNDED = Bounds()  # migrations, and the tests' own engine
# the JSON columns' text, written and read by orjson (app.core.json_codec): SQLAlchemy hands these to
# psycopg's adapters of the engine's connections, and uses them itself on SQLite
# (psycopg takes the bytes as they are; SQLite stores text)
_JSON: dict[str, Any] = {"json_serializer": json_codec.dumps_text, "json_deserializer": json_codec.loads}
_PG_JSON: dict[str, Any] = {"json_serializer": json_codec.dumps, "json_deserializer": json_codec.loads}


def build_engine(url: str, *, echo: bool = False, bounds: Bounds = UNBOUNDED) -> Engine:
    url = normalize_database_url(url)
    if make_url(url).get_backend_name() == "sqlite":
        engine = create_engine(
            url,
            echo=echo,
            connect_args={"check_same_thread": False, "timeout": 30},
            **_JSON,
            pool_size=THREADS,
            max_overflow=4,
            pool_timeout=POOL_TIMEOUT_SECONDS,
            # the connection given back last is taken first: the writer on the loop keeps one
            # connection, whose page cache no other connection's write made stale
            pool_use_lifo=True,
        )
        _sqlite_transactions(engine, autocheckpoint=autocheckpoint_pages(bounds.checkpoint_seconds))
        return engine
    # No pre-ping (a round trip per request): a connection found dead is retried by
    # the write path and answered 503 elsewhere; connections are recycled hourly.
    # psycopg prepares no statement itself (`prepare_threshold`): the hot path's statements
    # are prepared by app.core.prepared, and psycopg, once it has prepared some, sends
    # DEALLOCATE ALL after any ROLLBACK, which would drop those too.
    pool_size, overflow, _writers = bounds.pools()
    return create_engine(
        url,
        echo=echo,
        **_PG_JSON,
        pool_size=pool_size,
        max_overflow=overflow,
        pool_timeout=POOL_TIMEOUT_SECONDS,
        pool_recycle=3600,
        connect_args={"prepare_threshold": None, **bounds.connect_args()},
        execution_options={ANSWER_WITHIN: bounds.answer_seconds},
    )


def _sqlite_transactions(engine: Engine, busy_timeout_ms: int = 30000, autocheckpoint: int = DEFAULT_PAGES) -> None:
    """WAL, foreign keys, and transactions SQLAlchemy controls (pysqlite's own
    handling breaks SAVEPOINT). `BEGIN IMMEDIATE` takes the write lock at the
    start, so concurrent writers queue on the busy timeout instead of failing
    when a read snapshot goes stale; a read-only transaction (sessions from
    the `reader` view) is a plain deferred `BEGIN` and never takes the write lock; the
    writer on the event loop's (the `no_wait` view) waits for no lock: its connection's
    busy timeout is 0 while it begins (set only when it changes: `_busy`)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute(f"PRAGMA wal_autocheckpoint={int(autocheckpoint)}")  # app.core.wal
        cur.close()
        record.info[_BUSY] = int(busy_timeout_ms)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        no_wait = options.get(NO_WAIT, False)
        _busy(conn, 0 if no_wait else int(busy_timeout_ms))
        _begin(conn, "BEGIN" if options.get(READ_ONLY) else "BEGIN IMMEDIATE")


def _begin(conn: Connection, sql: str) -> None:
    """`sql` (a BEGIN) sent on the DBAPI connection itself: SQLAlchemy's `exec_driver_sql` would
    wrap it in an execution context and its events, which cost more than SQLite's BEGIN itself on
    every write (~25% of a unit of work's own cost). Its errors are raised as
    `exec_driver_sql` raises them (`raise_dbapi_error`)."""
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None  # a connection beginning holds its DBAPI connection
    try:
        dbapi.execute(sql)
    except conn.dialect.loaded_dbapi.Error as e:
        raise_dbapi_error(conn, e, sql, None)


def raise_dbapi_error(conn: Connection, error: Any, sql: str | None, args: Any, cursor: Any = None) -> NoReturn:
    """A DBAPI error of a statement sent on `conn`'s DBAPI connection, raised as SQLAlchemy raises
    it (OperationalError, IntegrityError…, public `DBAPIError.instance`); a connection it found dead
    is invalidated (not given back to the pool as it is)."""
    dbapi = conn.connection.dbapi_connection
    dead = conn.dialect.is_disconnect(error, dbapi, cursor)
    if dead:
        conn.invalidate(error)
    wrapped = DBAPIError.instance(
        sql, args, error, conn.dialect.loaded_dbapi.Error, connection_invalidated=dead, dialect=conn.dialect
    )
    raise wrapped from error


_BUSY = "jdr_busy_timeout_ms"  # a SQLite connection's `info`: the busy timeout it has now


def _busy(conn: Connection, ms: int) -> None:
    """The connection's busy timeout set to `ms` when it has another (the writer on the loop
    keeps its connection, LIFO: no PRAGMA on the hot path)."""
    pooled = conn.connection
    if pooled.info.get(_BUSY) != ms:
        assert pooled.dbapi_connection is not None
        pooled.dbapi_connection.execute(f"PRAGMA busy_timeout={ms}")
        pooled.info[_BUSY] = ms


@dataclass(frozen=True)
class Database:
    """ONE engine per database URL (and bounds) in this process, and the views of it the
    session factory uses: `reader`, the same engine (the same pool) for transactions that only
    read (no write lock on SQLite); on SQLite `no_wait`, the same engine again for the writer
    on the event loop (`BEGIN IMMEDIATE` without the busy wait: `SessionOpener.on_loop`).

    `green` (PostgreSQL only): the pool of the writes run on the event loop — psycopg's async
    connections under SQLAlchemy's sync API (`AsyncEngine.sync_engine`), used from a greenlet.
    It is the one second pool, kept because it was measured (POST …/tests
    in-process, real threadpool, CPU time of the process): the same writes in worker threads
    cost +0.7% CPU a request one at a time (1,321 vs 1,312 µs, 4 alternating rounds) but +11%
    with 16 concurrent clients (median 2,144 vs 1,933 µs, 3 alternating rounds): the thread
    hand-offs and the GIL contention. Both pools together stay within `Bounds.connections`
    (`Bounds.pools()`); the threads' engine serves the reads, the event hub, the webhook loop."""

    engine: Engine
    reader: Engine
    no_wait: Engine | None
    green: Engine | None


@lru_cache
def database(url: str, echo: bool = False, bounds: Bounds = UNBOUNDED) -> Database:
    engine = build_engine(url, echo=echo, bounds=bounds)
    sqlite = engine.dialect.name == "sqlite"
    return Database(
        engine,
        engine.execution_options(**{READ_ONLY: True}),
        engine.execution_options(**{NO_WAIT: True}) if sqlite else None,
        None if sqlite else _green_engine(url, echo, bounds),
    )


def engine_for(url: str, echo: bool = False, bounds: Bounds = UNBOUNDED) -> Engine:
    """The engine (and pool) of a database URL (and bounds) in this process (`database`)."""
    return database(url, echo, bounds).engine


def get_engine() -> Engine:
    settings = get_settings()
    return engine_for(settings.database_url, settings.sql_echo, Bounds.of(settings))


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
# nothing (32 writer threads spent ~30% more CPU a request than 2-4);
# on SQLite there is one writer anyway, and it runs on the event loop itself
# (`SessionOpener.on_loop`).
WRITERS = {"sqlite": 1, "postgresql": 4}


@contextmanager
def _write_session(engine: Engine) -> Iterator[Session]:
    with (
        SQLITE_WRITER if engine.dialect.name == "sqlite" else nullcontext(),
        AppSession(engine, expire_on_commit=False) as session,
    ):
        yield session


def _is_locked(error: OperationalError) -> bool:
    return "locked" in str(error.orig).lower() or "busy" in str(error.orig).lower()


@contextmanager
def _loop_write_session(session: Session) -> Iterator[Session]:
    try:
        with session:
            yield session
    finally:
        SQLITE_WRITER.release()


def _sqlite_on_loop(no_wait: Engine) -> AbstractContextManager[Session] | None:
    """SQLite: a write session, its transaction begun (BEGIN IMMEDIATE), to use on the event
    loop without waiting — when neither a writer of this process nor another process holds
    the database; else None (the write goes to a thread, which may wait its turn).

    SQLite's work for a request is CPU-bound and short (no network, one writer at a
    time): done on the loop it costs no thread hand-off and no GIL contention (issue
    16: ~45% more writes a second than in a worker thread), and it never waits on a
    lock there (`NO_WAIT`), so the loop is never parked."""
    if not SQLITE_WRITER.acquire(blocking=False):
        return None
    try:
        session = AppSession(no_wait, expire_on_commit=False)
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


def _green_engine(url: str, echo: bool = False, bounds: Bounds = UNBOUNDED) -> Engine:
    """PostgreSQL's writers on the event loop (`Database.green`): psycopg's async connections
    under SQLAlchemy's sync API (`AsyncEngine.sync_engine`), used from a greenlet. Its pool
    opens no connection until a write asks for one."""
    from sqlalchemy.ext.asyncio import create_async_engine

    _pool, _overflow, writers = bounds.pools()
    engine = create_async_engine(
        normalize_database_url(url),
        echo=echo,
        **_PG_JSON,
        pool_size=writers,
        max_overflow=4 if not bounds.connections else 0,
        pool_timeout=POOL_TIMEOUT_SECONDS,
        pool_recycle=3600,
        pool_reset_on_return=None,  # `_reset_when_in_transaction` instead
        connect_args={"prepare_threshold": None, **bounds.connect_args()},
        execution_options={ANSWER_WITHIN: bounds.answer_seconds},
    ).sync_engine
    event.listen(engine.pool, "reset", _reset_when_in_transaction)
    return engine


def _reset_when_in_transaction(dbapi_connection: Any, _record: object, state: PoolResetState) -> None:
    """A connection given back to the writers' pool is rolled back only when psycopg says a transaction
    is open (SQLAlchemy's pool rolls back every one: a commit's connection too, a hop through the event
    loop each write for nothing). SQLAlchemy's own pattern (`PoolEvents.reset`, `reset_on_return=None`);
    a connection found in an unknown state is rolled back, and discarded when that fails, as before."""
    if not state.asyncio_safe:  # given back by the garbage collector: SQLAlchemy only terminates it
        return
    if dbapi_connection.driver_connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        dbapi_connection.rollback()


class OnLoop(NamedTuple):
    """A write session for the event loop (`SessionOpener.on_loop`). `green`: its statements
    wait for the server as coroutines (PostgreSQL's), so it runs in SQLAlchemy's greenlet
    (`sqlalchemy.util.greenlet_spawn`) and the loop goes on meanwhile; else (SQLite's) it
    runs on the loop as it is."""

    session: AbstractContextManager[Session]
    green: bool


class SessionOpener:
    """THE way to get a session (the requests' hops, app.api.deps.in_thread; the event hub;
    the webhook loop): on the one engine of its database (`database`), whatever runs it.

    - `sessions()`: a session that writes, in the calling thread (on SQLite it holds this
      process's writer lock for its lifetime); `sessions(read_only=True)`: one that only reads
      (never a write lock on SQLite);
    - `on_loop()`: a write session to run on the event loop (`OnLoop`), or None (then in a
      thread): SQLite's when the database is free at once, PostgreSQL's always (see
      `Database.green`: the writes' pool);
    - `writers()`: how many write transactions at once (the write gate, app.api.deps).

    Where a write runs — on the loop (SQLite), in a greenlet (PostgreSQL), in a thread
    (SQLite busy) — is this factory's detail; its callers see a session.

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
        db = database(*self.database())
        if read_only:
            return AppSession(db.reader, expire_on_commit=False)
        return _write_session(db.engine)

    def on_loop(self) -> OnLoop | None:
        db = database(*self.database())
        if db.green is not None:
            return OnLoop(AppSession(db.green, expire_on_commit=False), green=True)
        opened = _sqlite_on_loop(db.no_wait) if db.no_wait is not None else None
        return None if opened is None else OnLoop(opened, green=False)

    def writers(self) -> int:
        url, echo, bounds = self.database()
        name = engine_for(url, echo, bounds).dialect.name
        return bounds.pools()[2] if name == "postgresql" else WRITERS.get(name, THREADS)


open_session = SessionOpener()


def opened_by(sessions: object) -> tuple[str, bool, Bounds] | None:
    """The database a session factory opens (`SessionOpener.database()`: its URL, echo and bounds),
    or None for a factory that does not say (a test's own)."""
    database = getattr(sessions, "database", None)
    return None if database is None else database()


def sqlite_engine(sessions: object) -> Engine | None:
    """The engine a session factory opens when it is SQLite's (the checkpoints' engine,
    app.core.wal); None on PostgreSQL or for a factory that does not say (a test's own)."""
    opened = opened_by(sessions)
    engine = None if opened is None else engine_for(*opened)
    return engine if engine is not None and engine.dialect.name == "sqlite" else None


class Sessions(Protocol):
    """What opens a request's sessions (`SessionOpener`: `open_session` or an app's own), and where its
    writes run: app.api.deps takes turns by `writers()` and runs a write where `on_loop()` says."""

    def __call__(self, read_only: bool = False) -> AbstractContextManager[Session]:
        """A session that writes, in the calling thread; `read_only`: one that only reads."""
        ...

    def on_loop(self) -> OnLoop | None:
        """A write session to run on the event loop, or None: the write runs in a thread."""
        ...

    def writers(self) -> int:
        """How many write transactions of this process run at once (the write gate)."""
        ...
