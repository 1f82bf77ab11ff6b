"""events numbered per campaign; stream tickets

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 10:00:00.000000

`event.number` counts each campaign's events (1, 2, 3…), backfilled in `seq`
order; unique per campaign, it replaces the (campaign_id, seq) index. The
`stream_ticket` table holds the one-use tickets of browser event streams.
"""

from typing import Sequence, Union

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = "0006"
down_revision: Union[str, None] = "0005"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

_NUMBER = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.add_column(sa.Column("number", _NUMBER, nullable=True))
    # each campaign's events numbered in the order they were committed (UPDATE … FROM: PostgreSQL, SQLite >= 3.33)
    op.execute(
        "UPDATE event SET number = numbered.n FROM"
        " (SELECT seq, row_number() OVER (PARTITION BY campaign_id ORDER BY seq) AS n FROM event) AS numbered"
        " WHERE event.seq = numbered.seq"
    )
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.alter_column("number", existing_type=_NUMBER, nullable=False)
        batch_op.create_unique_constraint("uq_event_campaign_number", ["campaign_id", "number"])
        batch_op.drop_index("ix_event_campaign_seq")

    op.create_table(
        "stream_ticket",
        sa.Column("ticket_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("campaign_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["token_hash"],
            ["credential.token_hash"],
            name=op.f("fk_stream_ticket_token_hash_credential"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("ticket_hash", name=op.f("pk_stream_ticket")),
    )
    with op.batch_alter_table("stream_ticket", schema=None) as batch_op:
        batch_op.create_index("ix_stream_ticket_expires_at", ["expires_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_stream_ticket_token_hash"), ["token_hash"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("stream_ticket", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_stream_ticket_token_hash"))
        batch_op.drop_index("ix_stream_ticket_expires_at")
    op.drop_table("stream_ticket")

    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.create_index("ix_event_campaign_seq", ["campaign_id", "seq"], unique=False)
        batch_op.drop_constraint("uq_event_campaign_number", type_="unique")
        batch_op.drop_column("number")
