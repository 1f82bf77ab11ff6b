"""Alembic environment: the app's metadata and engine (DATABASE_URL, normalised)."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context

from app.core.config import get_settings
from app.core.db import build_engine, normalize_database_url
from app.models.tables import SafeString, metadata

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def run_migrations_offline() -> None:
    url = config.attributes.get("database_url") or get_settings().database_url
    context.configure(
        url=normalize_database_url(url), target_metadata=metadata, literal_binds=True, render_as_batch=True
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = build_engine(config.attributes.get("database_url") or get_settings().database_url)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


def _render_item(type_, obj, autogen_context):
    """Autogenerate writes SafeString columns as the VARCHAR they are (no app import in migrations)."""
    if type_ == "type" and isinstance(obj, SafeString):
        return f"sqlmodel.sql.sqltypes.AutoString(length={obj.impl.length})"
    return False


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_item=_render_item,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
