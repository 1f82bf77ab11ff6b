"""A counter of each campaign's events

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 19:00:00.000000

Issue 28 item 2: an event's number comes from its campaign's counter (`event_counter`), counted
by the event's insert itself (an upsert `… RETURNING`), instead of an advisory lock and a
`max(number) + 1`. The counters start at each campaign's last event number.
"""

from typing import Sequence, Union

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0013"
down_revision: Union[str, None] = "0012"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        "event_counter",
        sa.Column("campaign_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("last_number", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.PrimaryKeyConstraint("campaign_id", name=op.f("pk_event_counter")),
    )
    op.execute(
        "INSERT INTO event_counter (campaign_id, last_number)"
        " SELECT campaign_id, max(number) FROM event GROUP BY campaign_id"
    )


def downgrade() -> None:
    op.drop_table("event_counter")
