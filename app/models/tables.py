"""SQLModel tables: campaigns, credentials, players, characters, the roll log,
idempotency records, encounters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    UniqueConstraint,
    text,
)
from sqlalchemy.types import TypeDecorator
from sqlmodel import AutoString, Field, SQLModel

# Alembic naming convention, so constraints have stable names on every backend.
SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata: MetaData = SQLModel.metadata


class SafeString(TypeDecorator):
    """VARCHAR whose bound values never carry NUL: PostgreSQL text cannot hold
    it (a driver error, not a 'no match'). A NUL becomes U+FFFD, which no id or
    kind this service writes contains, so a look-up simply finds nothing."""

    impl = AutoString
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


def new_id() -> str:
    return uuid4().hex


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(at: datetime) -> datetime:
    """A time read back from the database, with its zone (SQLite gives naive UTC back)."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _ts(**kw: Any) -> Any:
    return Field(default_factory=utcnow, sa_type=DateTime(timezone=True), nullable=False, **kw)


class Campaign(SQLModel, table=True):
    id: str = Field(default_factory=new_id, primary_key=True, max_length=32, sa_type=SafeString(32))
    name: str = Field(max_length=200)
    ruleset: str = Field(max_length=40)
    options: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    version: int = Field(default=1)
    created_at: datetime = _ts()
    updated_at: datetime = _ts()
    # a client's own ids (API.md `metadata`; `metadata` is SQLAlchemy's own attribute)
    client_metadata: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))


class Player(SQLModel, table=True):
    id: str = Field(default_factory=new_id, primary_key=True, max_length=32, sa_type=SafeString(32))
    campaign_id: str = Field(foreign_key="campaign.id", index=True, max_length=32, sa_type=SafeString(32))
    name: str = Field(max_length=200)
    created_at: datetime = _ts()


class Credential(SQLModel, table=True):
    """A bearer token, stored as its SHA-256 (tokens are 256-bit random)."""

    token_hash: str = Field(primary_key=True, max_length=64)
    campaign_id: str = Field(foreign_key="campaign.id", index=True, max_length=32, sa_type=SafeString(32))
    player_id: str | None = Field(default=None, foreign_key="player.id", max_length=32, sa_type=SafeString(32))
    role: str = Field(max_length=10)  # "gm" | "player"
    created_at: datetime = _ts()


class Invite(SQLModel, table=True):
    """A single-use invitation of a player (API.md "Joining a table with a link"): its code stored as
    its SHA-256, like tokens (the code is 256-bit random), spent by the accept that mints a new
    credential for that player. It dies with the player's credentials (a rotation, a removal)."""

    __table_args__ = (Index("ix_invite_expires_at", "expires_at"),)

    code_hash: str = Field(primary_key=True, max_length=64)
    campaign_id: str = Field(foreign_key="campaign.id", max_length=32, sa_type=SafeString(32))
    player_id: str = Field(foreign_key="player.id", index=True, max_length=32, sa_type=SafeString(32))
    expires_at: datetime = Field(sa_type=DateTime(timezone=True), nullable=False)
    created_at: datetime = _ts()


class Character(SQLModel, table=True):
    id: str = Field(default_factory=new_id, primary_key=True, max_length=32, sa_type=SafeString(32))
    campaign_id: str = Field(foreign_key="campaign.id", index=True, max_length=32, sa_type=SafeString(32))
    player_id: str | None = Field(default=None, foreign_key="player.id", max_length=32, sa_type=SafeString(32))
    name: str = Field(max_length=200)
    kind: str = Field(max_length=3)  # "pc" | "npc"
    sheet: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    version: int = Field(default=1)
    created_at: datetime = _ts()
    updated_at: datetime = _ts()
    # what players other than its owner may see of it (API.md): observer | limited | none
    player_access: str = Field(default="observer", max_length=10, sa_type=SafeString(10))
    client_metadata: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))


class LogEntry(SQLModel, table=True):
    """The append-only roll log: each row is the body an operation returned."""

    __tablename__ = "roll_log"
    __table_args__ = (
        Index("ix_roll_log_campaign_seq", "campaign_id", "seq"),
        Index("ix_roll_log_character_seq", "character_id", "seq"),
        # the statistics: a campaign's tests, since a time
        Index("ix_roll_log_campaign_kind_created", "campaign_id", "kind", "created_at"),
    )

    seq: int | None = Field(
        default=None,
        sa_column=Column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    )
    id: str = Field(default_factory=new_id, unique=True, max_length=32, sa_type=SafeString(32))
    campaign_id: str = Field(foreign_key="campaign.id", max_length=32, sa_type=SafeString(32))
    character_id: str | None = Field(default=None, max_length=32, sa_type=SafeString(32))
    kind: str = Field(max_length=20, index=True, sa_type=SafeString(20))
    hidden: bool = Field(default=False)
    # the test this entry cancels and rolls again (AS-H2): unique, so a test is rerolled once at most
    rerolls: str | None = Field(default=None, max_length=32, sa_type=SafeString(32), unique=True)
    created_at: datetime = _ts()
    body: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    # A test's figures, written as it is logged (null on other entries and on tests
    # logged before migration 0012), so the statistics are SQL aggregates: its outcome, the exact
    # probability (as a float) of each outcome and of success, and its dice by type (two at most:
    # a test rolls its own die and, in Great Cosmos, the karma d10): the die, how many, their sum
    outcome: str | None = Field(default=None, max_length=30, sa_type=SafeString(30))
    p_super_critical_success: float | None = None
    p_critical_success: float | None = None
    p_success: float | None = None  # the outcome `success` (plain success)
    p_failure: float | None = None
    p_critical_failure: float | None = None
    p_super_critical_failure: float | None = None
    p_any_success: float | None = None  # the test's p_success: the three successful outcomes together
    die_a: str | None = Field(default=None, max_length=10, sa_type=SafeString(10))
    die_a_count: int | None = None
    die_a_total: int | None = None
    die_b: str | None = Field(default=None, max_length=10, sa_type=SafeString(10))
    die_b_count: int | None = None
    die_b_total: int | None = None


# the figure columns of a roll-log entry (null unless given)
LOG_FIGURES = (
    "outcome",
    "p_super_critical_success",
    "p_critical_success",
    "p_success",
    "p_failure",
    "p_critical_failure",
    "p_super_critical_failure",
    "p_any_success",
    "die_a",
    "die_a_count",
    "die_a_total",
    "die_b",
    "die_b_count",
    "die_b_total",
)
# an entry's figure columns when it has none (no test, or a test logged before them), spread into its row;
# never changed (a plain dict: spreading one is twice as fast as a MappingProxyType, on the hot path)
NO_FIGURES: dict[str, None] = dict.fromkeys(LOG_FIGURES)


class DiceEpoch(SQLModel, table=True):
    """A campaign's dice epoch (API.md "Verifiable server dice"): every server die of the campaign
    is number `k` of its current epoch, derived from `seed`; `commitment` (the seed's SHA-256) is
    public from the start, `seed` only once `revealed_at` is set. The seed lives in this row alone:
    the service reads it to derive dice, no route shows it, no log or export holds it, before the
    reveal. `dice` is how many server dice the log holds under it (the next die's `k`); its row
    lock orders the numbers (taken at a transaction's first server die).

    Keyed by campaign and id: an imported epoch keeps the id its dice name (the id is part of each
    die's message), in the campaign it was imported into; it is `imported`, never rolled from, and
    has no seed when the bundle had none (not revealed where it came from)."""

    __tablename__ = "dice_epoch"
    __table_args__ = (
        Index("ix_dice_epoch_campaign_started", "campaign_id", "started_at"),
        # one current epoch a campaign: the one it rolls from
        Index(
            "uq_dice_epoch_current",
            "campaign_id",
            unique=True,
            sqlite_where=text("revealed_at IS NULL AND NOT imported"),
            postgresql_where=text("revealed_at IS NULL AND NOT imported"),
        ),
    )

    campaign_id: str = Field(foreign_key="campaign.id", primary_key=True, max_length=32, sa_type=SafeString(32))
    id: str = Field(default_factory=new_id, primary_key=True, max_length=32, sa_type=SafeString(32))
    seed: bytes | None = Field(default=None, sa_type=LargeBinary(32), nullable=True)
    commitment: str = Field(max_length=64, sa_type=SafeString(64))
    salts: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    dice: int = Field(default=0, sa_type=BigInteger().with_variant(Integer, "sqlite"))
    started_at: datetime = _ts()
    revealed_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True), nullable=True)
    imported: bool = Field(default=False)


class LogEntryCharacter(SQLModel, table=True):
    """The other characters an entry concerns (both sides of a confrontation, every
    participant of a group test), so filtering the log by character finds it."""

    __tablename__ = "roll_log_character"

    character_id: str = Field(primary_key=True, max_length=32, sa_type=SafeString(32))
    seq: int = Field(
        sa_column=Column(BigInteger().with_variant(Integer, "sqlite"), ForeignKey("roll_log.seq"), primary_key=True)
    )


class IdempotencyRecord(SQLModel, table=True):
    """The first response to an `Idempotency-Key`, per token, replayed on retries."""

    __tablename__ = "idempotency"

    token_hash: str = Field(primary_key=True, max_length=64)
    key: str = Field(primary_key=True, max_length=200)
    request_hash: str = Field(max_length=64)
    status_code: int
    body: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    created_at: datetime = _ts()


class Event(SQLModel, table=True):
    """Every change in a campaign, in commit order, for the live event stream.
    Written in the same transaction as the change (an outbox). `seq` orders the
    whole table (internal); `number` counts a campaign's events (1, 2, 3…): the
    only id clients see (`id:` lines, `Last-Event-ID`, `?after=`).

    Who receives it (API.md, per viewer): the GM `data`; the player `owner_id`
    (the owner of the character it is about) `data`; any other player nothing when
    `hidden`, else `player_data` when set (what it may see of the thing: a character
    it has `limited` access to, an entry without the GM's secrets), else `data`."""

    __table_args__ = (UniqueConstraint("campaign_id", "number", name="uq_event_campaign_number"),)

    seq: int | None = Field(
        default=None,
        sa_column=Column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    )
    campaign_id: str = Field(foreign_key="campaign.id", max_length=32, sa_type=SafeString(32))
    number: int = Field(sa_type=BigInteger().with_variant(Integer, "sqlite"))
    type: str = Field(max_length=40)
    hidden: bool = Field(default=False)
    created_at: datetime = _ts()
    data: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    owner_id: str | None = Field(
        default=None, max_length=32, sa_type=SafeString(32)
    )  # a player: no FK (events outlive players)
    player_data: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


class EventCounter(SQLModel, table=True):
    """How many events a campaign has (its last event's `number`), counted by each event's insert
    (app.services.events.record: an upsert `… RETURNING` instead of a lock and a
    `max() + 1`). Its row lock is the last lock a writer takes. No foreign key: a deleted campaign's
    count is left behind (ids are never reused)."""

    __tablename__ = "event_counter"

    campaign_id: str = Field(primary_key=True, max_length=32, sa_type=SafeString(32))
    last_number: int = Field(sa_type=BigInteger().with_variant(Integer, "sqlite"))


class StreamTicket(SQLModel, table=True):
    """A one-use, short-lived ticket that opens one event stream from a browser
    (`EventSource` cannot send `Authorization`): stored as its SHA-256, bound to
    the credential that asked for it (its role, player and campaign); it dies
    with that credential."""

    __tablename__ = "stream_ticket"
    __table_args__ = (Index("ix_stream_ticket_expires_at", "expires_at"),)

    ticket_hash: str = Field(primary_key=True, max_length=64)
    token_hash: str = Field(
        sa_column=Column(
            AutoString(64), ForeignKey("credential.token_hash", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    campaign_id: str = Field(max_length=32, sa_type=SafeString(32))
    expires_at: datetime = Field(sa_type=DateTime(timezone=True), nullable=False)


class Encounter(SQLModel, table=True):
    """One fight of one campaign (API.md, "Encounters"): its status, round, turn
    order and turn pointer; `version` counts every change (ETag / If-Match)."""

    __table_args__ = (Index("ix_encounter_campaign_created", "campaign_id", "created_at", "id"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32, sa_type=SafeString(32))
    campaign_id: str = Field(foreign_key="campaign.id", max_length=32, sa_type=SafeString(32))
    name: str = Field(max_length=200)
    status: str = Field(default="setup", max_length=10)  # "setup" | "active" | "ended"
    round: int = Field(default=0)
    version: int = Field(default=1)
    options: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    turn_order: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    current_turn: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # a client's own ids (API.md `metadata`, as on campaigns and characters)
    client_metadata: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    # the players' count of the changes they were told of (`encounters/seen.py`): `players` for every
    # player, plus `owners[player_id]` for those told alone (of their own hidden combatant…)
    player_versions: dict[str, Any] = Field(
        default_factory=lambda: {"players": 1, "owners": {}}, sa_column=Column(JSON, nullable=False)
    )
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class Combatant(SQLModel, table=True):
    """A campaign character in one encounter: what exists only during the fight
    (side, position, initiative, conditions, per-round counters). What a fight
    changes on the character itself is written to its sheet."""

    __table_args__ = (
        Index("ix_combatant_encounter_ordinal", "encounter_id", "ordinal"),
        Index("ix_combatant_character_id", "character_id"),  # the encounters showing a character
    )

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32, sa_type=SafeString(32))
    encounter_id: str = Field(foreign_key="encounter.id", max_length=32, sa_type=SafeString(32))
    character_id: str = Field(max_length=32, sa_type=SafeString(32))  # no FK: a deleted character leaves its place
    ordinal: int  # the order combatants were added in (table dice follow it)
    side: str = Field(max_length=40)
    hidden: bool = Field(default=False)
    position: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    initiative: int | None = Field(default=None)
    initiative_override: int | None = Field(default=None)
    actions: int = Field(default=1)
    reaction: str | None = Field(default=None, max_length=20)
    conditions: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    counters: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = _ts()


class EncounterAction(SQLModel, table=True):
    """The encounter's action stack: each action is also a roll-log entry (`kind:
    "combat"`, same id); `changes` (before/after, with where each field lives) is
    what a revert restores."""

    __tablename__ = "encounter_action"
    __table_args__ = (UniqueConstraint("encounter_id", "seq", name="uq_encounter_action_encounter_seq"),)

    id: str = Field(primary_key=True, max_length=32, sa_type=SafeString(32))
    encounter_id: str = Field(foreign_key="encounter.id", max_length=32, sa_type=SafeString(32))
    seq: int
    type: str = Field(max_length=20)
    hidden: bool = Field(default=False)
    changes: list[Any] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    reverts: str | None = Field(default=None, max_length=32, sa_type=SafeString(32))
    reverted_by: str | None = Field(default=None, max_length=32, sa_type=SafeString(32))
    # the encounter's `player_versions` once this action was made: its `encounter_version` for a player
    seen_versions: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime = _ts()


def core_table(model: type[SQLModel]) -> Table:
    """A table model's Core table, for the statements compiled once (app/core/prepared.py):
    SQLModel sets `__table__` when it makes the class, and its types do not declare it."""
    return model.__table__  # type: ignore[attr-defined]  # set by SQLModel's metaclass, undeclared


# --- webhooks --------------------------------------------------------------


class Webhook(SQLModel, table=True):
    """A receiver of a campaign's events (API.md, "Webhooks"): `last_number` is the last
    event number done with (delivered, or failed after every attempt); `lease_owner` /
    `lease_expires` say which delivery loop (process) holds it now: one owner at a time, taken
    with a conditional UPDATE; `attempts` / `next_attempt_at` the retries of the next event.
    `failing_since`: the first failed attempt since the last delivered one; a webhook failing for
    WEBHOOK_DISABLE_AFTER_HOURS is disabled (`disabled_at`, `disabled_reason`), as is one the GM
    disables: no loop serves it until the GM enables it again. `served_at`: when a loop last took
    its lease, cleared once it has nothing left to deliver; the latest of a campaign's is the
    campaign's turn (the delivery loops serve first the campaigns served longest ago, and before
    them a campaign that had nothing to deliver: round robin, whatever their number).

    `secret` signs the deliveries (HMAC-SHA256 needs the key itself, so it cannot be stored
    hashed as tokens are): shown once at creation, never read back by any route, export or event."""

    __table_args__ = (Index("ix_webhook_campaign_created", "campaign_id", "created_at", "id"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32, sa_type=SafeString(32))
    campaign_id: str = Field(
        sa_column=Column(SafeString(32), ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False)
    )
    url: str = Field(max_length=2000)
    events: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    secret: str = Field(max_length=100)
    last_number: int = Field(default=0, sa_type=BigInteger().with_variant(Integer, "sqlite"))
    attempts: int = Field(default=0)
    next_attempt_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    lease_owner: str | None = Field(default=None, max_length=64)
    lease_expires: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    failing_since: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    disabled_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    disabled_reason: str | None = Field(default=None, max_length=10)  # "failing" | "gm"
    served_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    created_at: datetime = _ts()


class WebhookDelivery(SQLModel, table=True):
    """One attempt at delivering one event to one webhook: the deliveries log."""

    __tablename__ = "webhook_delivery"
    __table_args__ = (Index("ix_webhook_delivery_webhook_created", "webhook_id", "created_at", "id"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32, sa_type=SafeString(32))
    webhook_id: str = Field(
        sa_column=Column(SafeString(32), ForeignKey("webhook.id", ondelete="CASCADE"), nullable=False)
    )
    event_number: int = Field(sa_type=BigInteger().with_variant(Integer, "sqlite"))
    event_type: str = Field(max_length=40)
    message_id: str = Field(max_length=80)  # the `webhook-id` header: the same on every attempt
    attempt: int
    status: str = Field(max_length=10)  # "delivered" | "retrying" | "failed"
    response_code: int | None = Field(default=None)
    error: str | None = Field(default=None, max_length=500)
    duration_ms: int = Field(default=0)
    created_at: datetime = _ts()
