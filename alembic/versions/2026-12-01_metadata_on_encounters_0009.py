"""metadata on encounters

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 15:00:00.000000

API.md round 3 `metadata` on encounters (issue 25 item 9), as 0008 put it on campaigns and
characters: a client's own ids (a string -> string map), stored as `client_metadata`;
existing encounters get an empty map. An index of combatants by character: a character's change
moves the version of the encounters showing it (issue 25, app/services/encounters/shown.py).
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


revision: str = "0009"
down_revision: Union[str, None] = "0008"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    # plain ADD COLUMN, as 0008: the server default fills the existing rows
    op.add_column("encounter", sa.Column("client_metadata", sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
    op.create_index("ix_combatant_character_id", "combatant", ["character_id"])


def downgrade() -> None:
    op.drop_index("ix_combatant_character_id", table_name="combatant")
    op.drop_column("encounter", "client_metadata")
