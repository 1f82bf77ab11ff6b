"""The campaign's event stream: every change, recorded in the transaction that
makes it (so an event exists iff its change was committed)."""
from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import func, insert, text
from sqlmodel import Session, select

from app.models.tables import Event, utcnow
from app.services.auth import Principal, check_member

_INSERT_EVENT = insert(Event.__table__)
_LOCK = text("SELECT pg_advisory_xact_lock(:key)")


def campaign_lock_key(campaign_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(campaign_id.encode(), digest_size=8).digest(), "big", signed=True)


def campaign_lock(campaign_id: str):
    """The SQL expression taking the campaign's write lock (PostgreSQL), to fold into a query."""
    return func.pg_advisory_xact_lock(campaign_lock_key(campaign_id))


def lock_campaign(session: Session, campaign_id: str) -> None:
    """Take the campaign's write lock for this transaction: every writer of a
    campaign takes it FIRST (before any row lock, so no deadlock).

    Why: on PostgreSQL a sequence value is taken at insert, not at commit, so two
    writers could commit their events out of order and a reader past the later
    one would skip the earlier for good. Serialized writers commit in sequence
    order. SQLite writers are serialized already by BEGIN IMMEDIATE."""
    if session.get_bind().dialect.name == "postgresql":
        session.connection().execute(_LOCK, {"key": campaign_lock_key(campaign_id)})


def record(session: Session, campaign_id: str, type_: str, data: dict[str, Any], *, hidden: bool = False) -> None:
    """Add an event to the current transaction, which holds the campaign's write
    lock (`lock_campaign`); the caller commits."""
    session.connection().execute(
        _INSERT_EVENT, {"campaign_id": campaign_id, "type": type_, "hidden": hidden, "data": data, "created_at": utcnow()}
    )


def events_after(session: Session, principal: Principal, campaign_id: str, after: int, limit: int = 200) -> list[dict[str, Any]]:
    """Events after sequence `after`, oldest first; players never see hidden ones."""
    check_member(principal, campaign_id)
    query = select(Event.seq, Event.type, Event.data).where(Event.campaign_id == campaign_id, Event.seq > after)
    if not principal.is_gm:
        query = query.where(Event.hidden == False)  # noqa: E712 (SQL expression)
    rows = session.exec(query.order_by(Event.seq).limit(limit)).all()
    return [{"seq": seq, "type": type_, "data": data} for seq, type_, data in rows]
