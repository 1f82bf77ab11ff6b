"""Invitations: a player joins by a single-use link

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06 01:00:00.000000

`invite` holds the GM's pending invitations of players (API.md "Joining a table with a link"),
each as the SHA-256 of its code; accepting one deletes it and adds a `credential` row for its
player (the credential table already holds any number of tokens per player).
"""

from typing import Sequence, Union

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0016"
down_revision: Union[str, None] = "0015"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        "invite",
        sa.Column("code_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("campaign_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("player_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaign.id"], name=op.f("fk_invite_campaign_id_campaign")),
        sa.ForeignKeyConstraint(["player_id"], ["player.id"], name=op.f("fk_invite_player_id_player")),
        sa.PrimaryKeyConstraint("code_hash", name=op.f("pk_invite")),
    )
    with op.batch_alter_table("invite", schema=None) as batch_op:
        batch_op.create_index("ix_invite_expires_at", ["expires_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_invite_player_id"), ["player_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("invite", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_invite_player_id"))
        batch_op.drop_index("ix_invite_expires_at")
    op.drop_table("invite")
