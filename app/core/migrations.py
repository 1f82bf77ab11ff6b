"""Applying the Alembic migrations from code (the run command and the tests)."""
from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

ROOT = Path(__file__).resolve().parents[2]


def alembic_config(database_url: str | None = None) -> Config:
    config = Config(str(ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT / "alembic"))
    config.attributes["configure_logger"] = False
    if database_url is not None:
        config.attributes["database_url"] = database_url
    return config


def upgrade_head(database_url: str | None = None) -> None:
    command.upgrade(alembic_config(database_url), "head")


def downgrade_base(database_url: str | None = None) -> None:
    command.downgrade(alembic_config(database_url), "base")
