"""DATABASE_URL forms, settings, and migrations that match the models."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from app.core.config import Settings, get_settings
from app.core.db import normalize_database_url
from app.models.tables import metadata


@pytest.mark.parametrize(
    "given, expected",
    [
        ("sqlite:///path.db", "sqlite:///path.db"),
        ("sqlite:////abs/path.db", "sqlite:////abs/path.db"),
        ("postgresql://user@host:5432/db", "postgresql+psycopg://user@host:5432/db"),
        ("postgres://user:pw@host:5432/db", "postgresql+psycopg://user:pw@host:5432/db"),
        ("postgresql+psycopg2://u@h/db", "postgresql+psycopg://u@h/db"),
        ("POSTGRES://u@h/db", "postgresql+psycopg://u@h/db"),
        ("  postgresql://u@h/db\n", "postgresql+psycopg://u@h/db"),
    ],
)
def test_database_url_plain_forms_map_to_our_drivers(given, expected):
    assert normalize_database_url(given) == expected


@pytest.mark.parametrize(
    "bad",
    # the in-memory forms: each connection its own empty database, the service uses several
    ["mysql://u@h/db", "not a url", "/tmp/x.db", "sqlite://", "sqlite:///:memory:", "sqlite:///file:x?mode=memory"],
)
def test_database_url_unsupported_forms_are_refused_clearly(bad):
    with pytest.raises(ValueError, match="DATABASE_URL"):
        normalize_database_url(bad)


@pytest.mark.parametrize("bad", ["sqlite://", "mysql://u@h/db"])
def test_python_m_app_refuses_an_unusable_database_url_in_one_line(bad, monkeypatch, capsys):
    from app.__main__ import main

    get_settings.cache_clear()
    monkeypatch.setenv("DATABASE_URL", bad)
    try:
        with pytest.raises(SystemExit) as stopped:
            main(["migrate"])
    finally:
        get_settings.cache_clear()
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m app: DATABASE_URL") and err.count("\n") == 1, err


def test_settings_come_from_the_environment_when_built_not_at_import(monkeypatch):
    get_settings.cache_clear()
    monkeypatch.setenv("DATABASE_URL", "postgres://x@y/z")
    monkeypatch.setenv("ADMIN_TOKEN", "")
    monkeypatch.setenv("CORS_ORIGINS", '["https://vtt.example"]')
    try:
        s = get_settings()
        assert (s.database_url, s.admin_token, s.cors_origins) == ("postgres://x@y/z", None, ["https://vtt.example"])
        assert get_settings() is s
    finally:
        get_settings.cache_clear()


def test_migrations_match_the_models(engine):
    """Autogenerate finds no difference between `alembic upgrade head` and the models."""
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata)
    assert diff == []


def test_migrations_build_every_table(engine):
    assert set(inspect(engine).get_table_names()) >= set(metadata.tables) | {"alembic_version"}


def test_default_settings_use_an_embedded_sqlite_file(monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert Settings(_env_file=None).database_url.startswith("sqlite:///")


def test_db_synchronous_commit_reaches_every_postgresql_connection_of_the_process(engine, database_url):
    """DB_SYNCHRONOUS_COMMIT=false sets `synchronous_commit=off` on the threads' connections and on the
    writers' on the loop alike; the default leaves it on (a write is answered once it is on disk)."""
    import asyncio

    from sqlalchemy import text
    from sqlalchemy.util import greenlet_spawn

    from app.core.db import SessionOpener
    from tests.conftest import settings_for

    if engine.dialect.name != "postgresql":
        pytest.skip("synchronous_commit is PostgreSQL's")
    show = text("SHOW synchronous_commit")
    with SessionOpener.of(settings_for(database_url))(read_only=True) as session:
        assert session.execute(show).scalar_one() == "on"
    # its own engines (the bounds differ): the loop's pool below is this test's alone
    sessions = SessionOpener.of(settings_for(database_url).model_copy(update={"db_synchronous_commit": False}))
    with sessions(read_only=True) as session:
        in_thread = session.execute(show).scalar_one()

    async def on_loop() -> str:
        opened = sessions.on_loop()
        assert opened is not None and opened.green

        def read() -> str:
            with opened.session as session:
                return session.execute(show).scalar_one()

        return await greenlet_spawn(read)

    assert (in_thread, asyncio.run(on_loop())) == ("off", "off")
