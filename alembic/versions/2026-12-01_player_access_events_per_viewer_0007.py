"""characters' player_access; events per viewer

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 12:00:00.000000

`character.player_access` (API.md round 3): what players other than the owner see
of a character — `observer`, `limited` or `none`; existing characters get their
kind's default (a PC `observer`, an NPC `none`). `event.owner_id` and
`event.player_data`: an event's owner receives `data` even when it is hidden from
the other players, who receive `player_data` instead of `data` when it is set.
"""

from typing import Sequence, Union

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = "0007"
down_revision: Union[str, None] = "0006"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table("character", schema=None) as batch_op:
        batch_op.add_column(sa.Column("player_access", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=True))
    op.execute("UPDATE \"character\" SET player_access = CASE WHEN kind = 'npc' THEN 'none' ELSE 'observer' END")
    with op.batch_alter_table("character", schema=None) as batch_op:
        batch_op.alter_column(
            "player_access", existing_type=sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False
        )
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.add_column(sa.Column("owner_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True))
        batch_op.add_column(sa.Column("player_data", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.drop_column("player_data")
        batch_op.drop_column("owner_id")
    with op.batch_alter_table("character", schema=None) as batch_op:
        batch_op.drop_column("player_access")
