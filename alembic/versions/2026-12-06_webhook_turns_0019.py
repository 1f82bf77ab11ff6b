"""webhook turns: when each webhook was last served

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06 10:00:00.000000

`served_at`: when a delivery loop last took the webhook's lease, cleared once it has nothing left
to deliver. The latest of a campaign's webhooks is the campaign's turn: the delivery loops read
first the campaigns served longest ago (before them, the ones that had nothing to deliver), so
campaigns take turns whatever their number (the loops read at most 32 due webhooks a tick).
Existing webhooks start with none: each campaign's first turn comes by its oldest waiting event.
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


revision: str = "0019"
down_revision: Union[str, None] = "0018"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.add_column("webhook", sa.Column("served_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("webhook") as batch:
        batch.drop_column("served_at")
