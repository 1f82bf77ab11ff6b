"""Applying the Alembic migrations from code (the run command and the tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config


def _root() -> Path:
    """The folder holding alembic.ini: the source tree, or the working directory
    when the package is installed elsewhere (the Docker image runs from /srv)."""
    for candidate in (Path(__file__).resolve().parents[2], Path.cwd()):
        if (candidate / "alembic.ini").is_file():
            return candidate
    raise FileNotFoundError("alembic.ini not found next to the app nor in the working directory")


def alembic_config(database_url: str | None = None) -> Config:
    root = _root()
    config = Config(str(root / "alembic.ini"))
    config.set_main_option("script_location", str(root / "alembic"))
    config.attributes["configure_logger"] = False
    if database_url is not None:
        config.attributes["database_url"] = database_url
    return config


def upgrade_head(database_url: str | None = None) -> None:
    command.upgrade(alembic_config(database_url), "head")


def downgrade_base(database_url: str | None = None) -> None:
    command.downgrade(alembic_config(database_url), "base")
