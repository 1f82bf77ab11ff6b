"""Test fixtures: a real database built by the migrations (SQLite by default,
PostgreSQL when DATABASE_URL is set), one rolled-back transaction per test,
and factories that go through the HTTP API."""
from __future__ import annotations

pytest_plugins = ["tests.fixtures"]

import os
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from app.core.config import Settings
from app.core.db import build_engine, get_session
from app.core.migrations import downgrade_base, upgrade_head
from app.api.deps import session_factory
from app.main import create_app


@pytest.fixture(scope="session")
def database_url(tmp_path_factory) -> str:
    url = os.environ.get("DATABASE_URL")
    if url:
        return url
    return f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"


@pytest.fixture(scope="session")
def engine(database_url: str) -> Iterator[Engine]:
    """The schema is built by `alembic upgrade head` (after a downgrade to base,
    so a reused database starts empty and the downgrades run too)."""
    upgrade_head(database_url)
    downgrade_base(database_url)
    upgrade_head(database_url)
    engine = build_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, admin_token=None, rate_limit_per_minute=0)


@pytest.fixture
def db_session(engine: Engine) -> Iterator[Session]:
    """A session whose commits are savepoints inside a transaction rolled back after the test."""
    connection = engine.connect()
    outer = connection.begin()
    session = Session(bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False)
    try:
        yield session
    finally:
        session.close()
        outer.rollback()
        connection.close()


@pytest.fixture
def app(settings: Settings, db_session: Session):
    application = create_app(settings)
    application.dependency_overrides[get_session] = lambda: db_session
    application.dependency_overrides[session_factory] = lambda: (lambda **_: nullcontext(db_session))
    return application


@pytest.fixture
def client(app) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@dataclass(frozen=True)
class Campaign:
    id: str
    gm_token: str
    ruleset: str
    body: dict[str, Any]

    @property
    def gm(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.gm_token}"}


@dataclass(frozen=True)
class Player:
    id: str
    token: str
    campaign: Campaign

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def campaign_factory(client: TestClient):
    def make(ruleset: str, options: dict[str, Any] | None = None, name: str = "La campagne") -> Campaign:
        body = {"name": name, "ruleset": ruleset}
        if options is not None:
            body["options"] = options
        r = client.post("/v1/campaigns", json=body)
        assert r.status_code == 201, r.text
        data = r.json()
        return Campaign(id=data["id"], gm_token=data["gm_token"], ruleset=ruleset, body=data)
    return make


@pytest.fixture
def player_factory(client: TestClient):
    def make(campaign: Campaign, name: str = "Alice") -> Player:
        r = client.post(f"/v1/campaigns/{campaign.id}/players", json={"name": name}, headers=campaign.gm)
        assert r.status_code == 201, r.text
        return Player(id=r.json()["id"], token=r.json()["token"], campaign=campaign)
    return make


@pytest.fixture
def character_factory(client: TestClient):
    def make(campaign: Campaign, sheet: dict[str, Any], *, kind: str = "pc", name: str = "Hero",
             player: Player | None = None, gm_override: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "kind": kind, "sheet": sheet}
        if player is not None:
            body["player_id"] = player.id
        if gm_override:
            body["gm_override"] = True
        r = client.post(f"/v1/campaigns/{campaign.id}/characters", json=body, headers=campaign.gm)
        assert r.status_code == 201, r.text
        return r.json()
    return make


@pytest.fixture
def count_rows(db_session: Session):
    """Rows in a table, as this test's transaction sees them."""
    def count(table: str, **where: str) -> int:
        clause = " AND ".join(f"{k} = :{k}" for k in where) or "1=1"
        return db_session.connection().execute(text(f"SELECT COUNT(*) FROM {table} WHERE {clause}"), where).scalar_one()
    return count
