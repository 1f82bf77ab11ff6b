"""players' encounter versions: the count of the changes they were told of

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06 04:00:00.000000

A player's `version` (and ETag) of an encounter counts only the changes that player was told of
(API.md round 4, "Input and views"): `encounter.player_versions` holds `{"players": n, "owners":
{player_id: n}}`, and each action keeps the value it made (`encounter_action.seen_versions`), its
`encounter_version` for a player. An existing fight starts from its version (a player's next read
then moves on from what it saw).
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: Union[str, None] = "0016"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.add_column("encounter", sa.Column("player_versions", sa.JSON(), nullable=True))
    op.add_column("encounter_action", sa.Column("seen_versions", sa.JSON(), nullable=True))
    start = "'{\"players\": ' || version || ', \"owners\": {}}'"
    value = f"CAST({start} AS JSON)" if op.get_bind().dialect.name == "postgresql" else start
    op.execute(f"UPDATE encounter SET player_versions = {value}")
    with op.batch_alter_table("encounter") as batch:
        batch.alter_column("player_versions", existing_type=sa.JSON(), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("encounter_action") as batch:
        batch.drop_column("seen_versions")
    with op.batch_alter_table("encounter") as batch:
        batch.drop_column("player_versions")
