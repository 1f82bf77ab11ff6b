"""SQLite's WAL checkpoints in a thread of the serving process (app.core.wal, issue 28 item 1): the
app's connections checkpoint by themselves only past a safety net, the app copies the log back every
SQLITE_CHECKPOINT_SECONDS off the event loop, and with 0 everything is as SQLite does by default."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from fastapi.testclient import TestClient

from app.core import wal
from app.core.config import Settings
from app.core.db import Bounds, SessionOpener, build_engine, sqlite_engine
from app.core.migrations import upgrade_head
from app.main import create_app


def _settings(path, seconds: float) -> Settings:
    return Settings(
        database_url=f"sqlite:///{path}", admin_token=None, rate_limit_per_minute=0, sqlite_checkpoint_seconds=seconds
    )


def _log_pages(path) -> int:
    """The pages the write-ahead log holds now (its size: a 32-byte header, then pages with 24-byte headers)."""
    wal_file = path.with_name(path.name + "-wal")
    if not wal_file.exists() or wal_file.stat().st_size == 0:
        return 0
    with sqlite3.connect(path) as db:
        page = db.execute("PRAGMA page_size").fetchone()[0]
    return (wal_file.stat().st_size - 32) // (page + 24)


@pytest.mark.parametrize("seconds, pages", [(0.5, wal.SAFETY_PAGES), (0, wal.DEFAULT_PAGES)])
def test_the_connections_checkpoint_by_themselves_only_past_the_safety_net(tmp_path, seconds, pages):
    engine = build_engine(f"sqlite:///{tmp_path / 'a.db'}", bounds=Bounds.of(_settings(tmp_path / "a.db", seconds)))
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == pages
    engine.dispose()


def test_a_checkpoint_copies_the_log_back_outside_any_transaction(tmp_path):
    path = tmp_path / "b.db"
    engine = build_engine(f"sqlite:///{path}", bounds=Bounds(checkpoint_seconds=0.5))
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x TEXT)")
        for _ in range(50):
            conn.exec_driver_sql("INSERT INTO t VALUES (?)", ("x" * 3000,))
    pending = _log_pages(path)
    assert pending > 30
    done = wal.checkpoint(engine)
    assert done == wal.Checkpoint(0, pending, pending)
    with engine.begin() as conn:  # the next write starts the log again from its beginning
        conn.exec_driver_sql("INSERT INTO t VALUES ('y')")
    assert wal.checkpoint(engine).log_pages < pending
    engine.dispose()


def test_the_serving_app_checkpoints_in_a_thread(tmp_path, monkeypatch):
    path = tmp_path / "c.db"
    upgrade_head(f"sqlite:///{path}")
    seen: list[tuple[str, wal.Checkpoint]] = []
    real = wal.checkpoint

    def watched(engine):
        done = real(engine)
        seen.append((threading.current_thread().name, done))
        return done

    monkeypatch.setattr(wal, "checkpoint", watched)
    app = create_app(_settings(path, 0.05))
    with TestClient(app) as client:
        loop_thread = threading.current_thread().name
        for n in range(5):
            assert client.post("/v1/campaigns", json={"name": f"C{n}", "ruleset": "great-cosmos"}).status_code == 201
        deadline = time.monotonic() + 10
        while not any(done.copied > 0 for _, done in seen) and time.monotonic() < deadline:
            time.sleep(0.02)
        copied = [(thread, done) for thread, done in seen if done.copied > 0]
        assert copied, seen
        assert all(thread != loop_thread for thread, _ in copied)
        assert all(done.busy == 0 and done.copied == done.log_pages for _, done in copied)
    ticks = len(seen)
    time.sleep(0.2)
    assert len(seen) == ticks, "the checkpoints stop with the app"


def test_no_thread_with_zero_seconds_nor_on_postgresql(tmp_path, monkeypatch):
    path = tmp_path / "d.db"
    upgrade_head(f"sqlite:///{path}")
    calls: list[object] = []
    monkeypatch.setattr(wal, "checkpoint", calls.append)
    with TestClient(create_app(_settings(path, 0))) as client:
        assert client.post("/v1/campaigns", json={"name": "C", "ruleset": "great-cosmos"}).status_code == 201
        time.sleep(0.2)
    assert calls == []
    assert sqlite_engine(SessionOpener("postgresql://nobody@127.0.0.1:1/none")) is None
    assert sqlite_engine(lambda read_only=False: None) is None  # a factory of a test's own


def test_the_docs_name_the_setting_its_default_and_the_safety_net():
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text().split())
    assert Settings.model_fields["sqlite_checkpoint_seconds"].default == 0.5
    assert "every `SQLITE_CHECKPOINT_SECONDS` (0.5)" in text
    assert wal.SAFETY_PAGES == 10_000 and "past 10,000 pages" in text
    assert wal.DEFAULT_PAGES == 1000 and "past 1,000 pages" in text
