"""The baseline of issue #7: the least a FastAPI + SQLModel service can do per roll.

    BENCH_DATABASE_URL=sqlite:////tmp/base.db .venv/bin/uvicorn --app-dir bench baseline_app:app

- `POST /roll`: roll 3d6 with the secure RNG, insert one row with the ORM
  (`add` + `commit` + `refresh`), return it — no auth, no validation of a body,
  no log/outbox/version bookkeeping;
- `GET /ping`: return a constant — the framework's own floor.

Same driver and pragmas as the app on SQLite (WAL, synchronous=NORMAL,
busy_timeout) and the same psycopg 3 driver on PostgreSQL, so the ratio
measures the app's code, not a different database setup.
"""

from __future__ import annotations

import os
import random
from datetime import datetime, timezone
from typing import Any, Iterator
from uuid import uuid4

from fastapi import Depends, FastAPI
from sqlalchemy import JSON, Column, DateTime, event
from sqlmodel import Field, Session, SQLModel, create_engine

_rng = random.SystemRandom()


class BenchRoll(SQLModel, table=True):
    __tablename__ = "bench_roll"

    id: str = Field(default_factory=lambda: uuid4().hex, primary_key=True, max_length=32)
    expression: str = Field(default="3d6", max_length=20)
    rolls: list[int] = Field(sa_column=Column(JSON, nullable=False))
    total: int
    created_at: datetime = Field(
        default_factory=lambda: datetime.now(timezone.utc), sa_type=DateTime(timezone=True), nullable=False
    )


def _engine():
    url = os.environ.get("BENCH_DATABASE_URL", "sqlite:////tmp/jdr-bench-baseline.db")
    if url.startswith(("postgres://", "postgresql://")):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record):
        cur = dbapi_conn.cursor()
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=30000"):
            cur.execute(f"PRAGMA {pragma}")
        cur.close()

    return engine


engine = _engine()
SQLModel.metadata.create_all(engine)
app = FastAPI(title="jdr-rules-api baseline")


def get_session() -> Iterator[Session]:
    with Session(engine) as session:
        yield session


@app.post("/roll", status_code=201)
def roll(session: Session = Depends(get_session)) -> dict[str, Any]:
    dice = [_rng.randint(1, 6) for _ in range(3)]
    row = BenchRoll(rolls=dice, total=sum(dice))
    session.add(row)
    session.commit()
    session.refresh(row)
    return row.model_dump(mode="json")


@app.get("/ping")
def ping() -> dict[str, bool]:
    return {"ok": True}
