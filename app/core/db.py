"""The database engine: URL normalisation, SQLite pragmas, sessions."""
from __future__ import annotations

from functools import lru_cache
from typing import Iterator

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


def build_engine(url: str, *, echo: bool = False) -> Engine:
    url = normalize_database_url(url)
    if make_url(url).get_backend_name() == "sqlite":
        engine = create_engine(url, echo=echo, connect_args={"check_same_thread": False, "timeout": 30})
        _sqlite_transactions(engine)
        return engine
    # No pre-ping (a round trip per request): a connection found dead is retried by
    # the write path and answered 503 elsewhere; connections are recycled hourly.
    return create_engine(url, echo=echo, pool_size=10, max_overflow=20, pool_recycle=3600)


def _sqlite_transactions(engine: Engine) -> None:
    """WAL, foreign keys, and transactions SQLAlchemy controls (pysqlite's own
    handling breaks SAVEPOINT). `BEGIN IMMEDIATE` takes the write lock at the
    start, so concurrent writers queue on the busy timeout instead of failing
    when a read snapshot goes stale."""

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
        conn.exec_driver_sql("BEGIN IMMEDIATE")


@lru_cache
def engine_for(url: str, echo: bool = False) -> Engine:
    """One engine (and pool) per database URL in this process."""
    return build_engine(url, echo=echo)


def get_engine() -> Engine:
    settings = get_settings()
    return engine_for(settings.database_url, settings.sql_echo)


def get_session() -> Iterator[Session]:
    with Session(get_engine(), expire_on_commit=False) as session:
        yield session
