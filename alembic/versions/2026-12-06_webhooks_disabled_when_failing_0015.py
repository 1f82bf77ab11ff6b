"""webhooks disabled when failing, enabled again by the GM

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06 01:00:00.000000

A webhook whose every attempt failed for WEBHOOK_DISABLE_AFTER_HOURS is disabled (API.md round 4,
"Webhooks are fair"): `failing_since` (the first failed attempt since the last delivered one),
`disabled_at`, `disabled_reason` ("failing", or "gm" when the GM disabled it). On PostgreSQL the
webhook notification (0011) also fires when a webhook is enabled again, so the delivery loops
serve it at once.
"""

from typing import Sequence, Union

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = "0015"
down_revision: Union[str, None] = "0014"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

_STR = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    op.add_column("webhook", sa.Column("failing_since", sa.DateTime(timezone=True), nullable=True))
    op.add_column("webhook", sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("webhook", sa.Column("disabled_reason", _STR(length=10), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS jdr_notify_webhooks ON webhook")
        op.execute(
            "CREATE TRIGGER jdr_notify_webhooks AFTER INSERT OR UPDATE OF disabled_at ON webhook "
            "FOR EACH ROW WHEN (NEW.disabled_at IS NULL) EXECUTE FUNCTION jdr_notify_webhooks()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS jdr_notify_webhooks ON webhook")
        op.execute(
            "CREATE TRIGGER jdr_notify_webhooks AFTER INSERT ON webhook "
            "FOR EACH ROW EXECUTE FUNCTION jdr_notify_webhooks()"
        )
    with op.batch_alter_table("webhook") as batch:
        batch.drop_column("disabled_reason")
        batch.drop_column("disabled_at")
        batch.drop_column("failing_since")
