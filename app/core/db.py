"""The database engine: URL normalisation, SQLite pragmas, sessions."""
from __future__ import annotations

import threading
from contextlib import contextmanager, nullcontext
from functools import lru_cache
from typing import ContextManager, Iterator

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, create_engine

from app.core.config import get_settings


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


# Database work runs in the threadpool, one hop per request (app.api.deps.in_thread);
# the pool has a connection for every thread, so a thread never waits for another
# one to give a connection back. A pool wait that still times out is a 503.
THREADS = 32
POOL_TIMEOUT_SECONDS = 5
READ_ONLY = "jdr_read_only"  # execution option: a transaction that never writes


def build_engine(url: str, *, echo: bool = False) -> Engine:
    url = normalize_database_url(url)
    if make_url(url).get_backend_name() == "sqlite":
        engine = create_engine(url, echo=echo, connect_args={"check_same_thread": False, "timeout": 30},
                               pool_size=THREADS, max_overflow=4, pool_timeout=POOL_TIMEOUT_SECONDS)
        _sqlite_transactions(engine)
        return engine
    # No pre-ping (a round trip per request): a connection found dead is retried by
    # the write path and answered 503 elsewhere; connections are recycled hourly.
    return create_engine(url, echo=echo, pool_size=8, max_overflow=THREADS - 8 + 4,
                         pool_timeout=POOL_TIMEOUT_SECONDS, pool_recycle=3600)


def _sqlite_transactions(engine: Engine) -> None:
    """WAL, foreign keys, and transactions SQLAlchemy controls (pysqlite's own
    handling breaks SAVEPOINT). `BEGIN IMMEDIATE` takes the write lock at the
    start, so concurrent writers queue on the busy timeout instead of failing
    when a read snapshot goes stale; a read-only transaction (sessions from
    `read_engine`) is a plain deferred `BEGIN` and never takes the write lock."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get(READ_ONLY) else "BEGIN IMMEDIATE")


@lru_cache
def engine_for(url: str, echo: bool = False) -> Engine:
    """One engine (and pool) per database URL in this process."""
    return build_engine(url, echo=echo)


def get_engine() -> Engine:
    settings = get_settings()
    return engine_for(settings.database_url, settings.sql_echo)


@lru_cache
def _read_engine(url: str, echo: bool = False) -> Engine:
    return engine_for(url, echo).execution_options(**{READ_ONLY: True})


def get_read_engine() -> Engine:
    """The same pool, for transactions that only read (no write lock on SQLite)."""
    settings = get_settings()
    return _read_engine(settings.database_url, settings.sql_echo)


# SQLite has one writer at a time: this process's writers queue here (woken at
# once) rather than in SQLite's busy handler (which sleeps up to 100 ms a try).
# Locks are always taken in one order: this lock first, then the database's
# (BEGIN IMMEDIATE), so a writer never holds the database lock while it waits
# for this one.
SQLITE_WRITER = threading.Lock()


@contextmanager
def _write_session(engine: Engine) -> Iterator[Session]:
    with SQLITE_WRITER if engine.dialect.name == "sqlite" else nullcontext():
        with Session(engine, expire_on_commit=False) as session:
            yield session


def open_session(read_only: bool = False) -> ContextManager[Session]:
    """A session for one request's work: read-only ones never take a write lock;
    on SQLite, writing ones hold this process's writer lock for their lifetime."""
    if read_only:
        return Session(get_read_engine(), expire_on_commit=False)
    return _write_session(get_engine())


def get_session() -> Iterator[Session]:
    with Session(get_engine(), expire_on_commit=False) as session:
        yield session
