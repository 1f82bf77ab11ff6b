"""metadata on campaigns and characters

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 13:00:00.000000

API.md round 3 `metadata`: a client's own ids on a campaign and on a character (a string
-> string map), stored as `client_metadata` (`metadata` is SQLAlchemy's own attribute);
existing rows get an empty map.
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


revision: str = "0008"
down_revision: Union[str, None] = "0007"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TABLES = ("campaign", "character")


def upgrade() -> None:
    # plain ADD COLUMN (not a batch copy: SQLite could not drop and rebuild `campaign`, which other
    # tables reference); the server default fills the existing rows
    for table in TABLES:
        op.add_column(table, sa.Column("client_metadata", sa.JSON(), nullable=False, server_default=sa.text("'{}'")))


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_column(table, "client_metadata")
