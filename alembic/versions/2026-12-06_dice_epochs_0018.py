"""dice epochs: every server die is number k of its campaign's committed epoch

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06 07:00:00.000000

API.md round 4, "Verifiable server dice (commit, then reveal)": a campaign's server dice are
derived from its current epoch's secret seed, whose SHA-256 is published before the first die.
Each existing campaign gets its first epoch here (a fresh seed from the OS CSPRNG): its dice
logged before this migration stay outside epochs, as they were rolled.
"""

import hashlib
import os
import uuid
from datetime import UTC, datetime
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

import app.models.tables

revision: str = "0018"
down_revision: Union[str, None] = "0017"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    epochs = op.create_table(
        "dice_epoch",
        sa.Column("id", app.models.tables.SafeString(length=32), nullable=False),
        sa.Column("campaign_id", app.models.tables.SafeString(length=32), nullable=False),
        sa.Column("seed", sa.LargeBinary(length=32), nullable=False),
        sa.Column("commitment", app.models.tables.SafeString(length=64), nullable=False),
        sa.Column("salts", sa.JSON(), nullable=False),
        sa.Column("dice", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revealed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("imported", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaign.id"], name=op.f("fk_dice_epoch_campaign_id_campaign")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dice_epoch")),
    )
    op.create_index("ix_dice_epoch_campaign_started", "dice_epoch", ["campaign_id", "started_at"], unique=False)
    op.create_index(
        "uq_dice_epoch_current",
        "dice_epoch",
        ["campaign_id"],
        unique=True,
        sqlite_where=sa.text("revealed_at IS NULL"),
        postgresql_where=sa.text("revealed_at IS NULL"),
    )
    campaigns = [row[0] for row in op.get_bind().execute(sa.text("SELECT id FROM campaign"))]
    now = datetime.now(UTC)
    rows = []
    for cid in campaigns:
        seed = os.urandom(32)
        rows.append(
            {
                "id": uuid.uuid4().hex,
                "campaign_id": cid,
                "seed": seed,
                "commitment": hashlib.sha256(seed).hexdigest(),
                "salts": [],
                "dice": 0,
                "started_at": now,
                "revealed_at": None,
                "imported": False,
            }
        )
    if rows:
        op.bulk_insert(epochs, rows)


def downgrade() -> None:
    op.drop_index("uq_dice_epoch_current", table_name="dice_epoch")
    op.drop_index("ix_dice_epoch_campaign_started", table_name="dice_epoch")
    op.drop_table("dice_epoch")
