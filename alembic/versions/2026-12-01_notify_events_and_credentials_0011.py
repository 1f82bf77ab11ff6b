"""PostgreSQL: NOTIFY on new events and on changed credentials

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 17:00:00.000000

Issue 28 item 4: the event streams and the webhook loop of every worker and instance are woken
by LISTEN/NOTIFY (app.core.notify) instead of polling the outbox every half second. The triggers
send the notifications, so every writer (the ORM, the hot path's prepared statements, an import)
sends them without knowing: after each statement adding events, `jdr_events` with each campaign's
id (delivered at commit; equal notifications of one transaction are folded into one); after each
statement updating or deleting credentials (a rotated token, a removed player, a deleted
campaign's cascade), `jdr_credentials`, so streams living by a dead token end at once; after a
webhook is made, `jdr_webhooks` with its campaign's id (the delivery loops then follow it).
Statement-level triggers: an import's thousands of events cost one trigger call. Nothing on
SQLite (one process writes; its streams poll a local file). A connection with `jdr.notify=off`
(EVENT_NOTIFY=false: app.core.db.Bounds) sends no `jdr_events`: a deployment that polls pays nothing
for them at commit.
"""

from typing import Sequence, Union

from alembic import op


revision: str = "0011"
down_revision: Union[str, None] = "0010"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        """
        CREATE FUNCTION jdr_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF current_setting('jdr.notify', true) IS DISTINCT FROM 'off' THEN
                PERFORM pg_notify('jdr_events', c.campaign_id) FROM (SELECT DISTINCT campaign_id FROM new_events) AS c;
            END IF;
            RETURN NULL;
        END $$
        """
    )
    op.execute(
        "CREATE TRIGGER jdr_notify_events AFTER INSERT ON event REFERENCING NEW TABLE AS new_events "
        "FOR EACH STATEMENT EXECUTE FUNCTION jdr_notify_events()"
    )
    op.execute(
        """
        CREATE FUNCTION jdr_notify_credentials() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('jdr_credentials', '');
            RETURN NULL;
        END $$
        """
    )
    op.execute(
        "CREATE TRIGGER jdr_notify_credentials AFTER UPDATE OR DELETE ON credential "
        "FOR EACH STATEMENT EXECUTE FUNCTION jdr_notify_credentials()"
    )
    op.execute(
        """
        CREATE FUNCTION jdr_notify_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('jdr_webhooks', NEW.campaign_id);
            RETURN NULL;
        END $$
        """
    )
    op.execute(
        "CREATE TRIGGER jdr_notify_webhooks AFTER INSERT ON webhook FOR EACH ROW EXECUTE FUNCTION jdr_notify_webhooks()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS jdr_notify_webhooks ON webhook")
    op.execute("DROP FUNCTION IF EXISTS jdr_notify_webhooks()")
    op.execute("DROP TRIGGER IF EXISTS jdr_notify_credentials ON credential")
    op.execute("DROP FUNCTION IF EXISTS jdr_notify_credentials()")
    op.execute("DROP TRIGGER IF EXISTS jdr_notify_events ON event")
    op.execute("DROP FUNCTION IF EXISTS jdr_notify_events()")
