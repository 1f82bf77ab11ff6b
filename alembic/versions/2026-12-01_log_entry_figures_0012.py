"""Roll-log figures for the statistics

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 18:00:00.000000

Issue 29 item 3: each test's outcome, the exact probability of each outcome and of success, and
its dice by type, written as it is logged, so `GET /v1/campaigns/{cid}/stats` aggregates them in
SQL (an index on the campaign, kind and time finds a campaign's tests). Tests logged before this migration keep null figures: the statistics count them as tests
without expected figures (`tests_without_odds`).
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


revision: str = "0012"
down_revision: Union[str, None] = "0011"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

FLOATS = (
    "p_super_critical_success",
    "p_critical_success",
    "p_success",
    "p_failure",
    "p_critical_failure",
    "p_super_critical_failure",
    "p_any_success",
)


def upgrade() -> None:
    with op.batch_alter_table("roll_log") as batch:
        batch.add_column(sa.Column("outcome", sa.String(length=30), nullable=True))
        for name in FLOATS:
            batch.add_column(sa.Column(name, sa.Float(), nullable=True))
        for die in ("die_a", "die_b"):
            batch.add_column(sa.Column(die, sa.String(length=10), nullable=True))
            batch.add_column(sa.Column(f"{die}_count", sa.Integer(), nullable=True))
            batch.add_column(sa.Column(f"{die}_total", sa.Integer(), nullable=True))
    op.create_index("ix_roll_log_campaign_kind_created", "roll_log", ["campaign_id", "kind", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_roll_log_campaign_kind_created", table_name="roll_log")
    with op.batch_alter_table("roll_log") as batch:
        for die in ("die_b", "die_a"):
            for name in (f"{die}_total", f"{die}_count", die):
                batch.drop_column(name)
        for name in reversed(FLOATS):
            batch.drop_column(name)
        batch.drop_column("outcome")
