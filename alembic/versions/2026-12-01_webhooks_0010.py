"""webhooks and their deliveries log

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 16:00:00.000000

Issue 29 item 1 (API.md round 3, "Webhooks"): `webhook` (a campaign's receiver, its signing
secret, how far its deliveries went, its retry state and the lease of the delivery loop that
holds it) and `webhook_delivery` (one row per attempt). Both go with their campaign
(ON DELETE CASCADE).
"""

from typing import Sequence, Union

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = "0010"
down_revision: Union[str, None] = "0009"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

_NUMBER = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_STR = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    op.create_table(
        "webhook",
        sa.Column("id", _STR(length=32), nullable=False),
        sa.Column("campaign_id", _STR(length=32), nullable=False),
        sa.Column("url", _STR(length=2000), nullable=False),
        sa.Column("events", sa.JSON(), nullable=True),
        sa.Column("secret", _STR(length=100), nullable=False),
        sa.Column("last_number", _NUMBER, nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", _STR(length=64), nullable=True),
        sa.Column("lease_expires", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"], ["campaign.id"], name=op.f("fk_webhook_campaign_id_campaign"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook")),
    )
    op.create_index("ix_webhook_campaign_created", "webhook", ["campaign_id", "created_at", "id"], unique=False)
    op.create_table(
        "webhook_delivery",
        sa.Column("id", _STR(length=32), nullable=False),
        sa.Column("webhook_id", _STR(length=32), nullable=False),
        sa.Column("event_number", _NUMBER, nullable=False),
        sa.Column("event_type", _STR(length=40), nullable=False),
        sa.Column("message_id", _STR(length=80), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status", _STR(length=10), nullable=False),
        sa.Column("response_code", sa.Integer(), nullable=True),
        sa.Column("error", _STR(length=500), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["webhook_id"], ["webhook.id"], name=op.f("fk_webhook_delivery_webhook_id_webhook"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_delivery")),
    )
    op.create_index(
        "ix_webhook_delivery_webhook_created", "webhook_delivery", ["webhook_id", "created_at", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_delivery_webhook_created", table_name="webhook_delivery")
    op.drop_table("webhook_delivery")
    op.drop_index("ix_webhook_campaign_created", table_name="webhook")
    op.drop_table("webhook")
