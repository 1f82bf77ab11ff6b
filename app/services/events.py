"""The campaign's event stream: every change, recorded in the transaction that
makes it (so an event exists iff its change was committed)."""
from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, String, bindparam, cast, func, insert
from sqlmodel import Session, select

from app.models.tables import Event, utcnow
from app.services.auth import Principal, check_member

_event = Event.__table__
_COLUMNS = ["campaign_id", "type", "hidden", "created_at", "data"]
_INSERT_EVENT = insert(_event)
# PostgreSQL: the campaign's transaction lock, taken in the same statement as the insert
_LOCKED_INSERT_EVENT = insert(_event).from_select(
    _COLUMNS,
    select(
        bindparam("campaign_id", type_=String), bindparam("type", type_=String), bindparam("hidden", type_=Boolean),
        bindparam("created_at", type_=DateTime(timezone=True)), cast(bindparam("data", type_=JSON), JSON),
    ).select_from(select(func.pg_advisory_xact_lock(bindparam("key", type_=BigInteger)).label("locked")).subquery()),
)


def campaign_lock_key(campaign_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(campaign_id.encode(), digest_size=8).digest(), "big", signed=True)


def record(session: Session, campaign_id: str, type_: str, data: dict[str, Any], *, hidden: bool = False) -> None:
    """Add an event to the current transaction (the caller commits). Call it after
    the change's other writes: it is the last lock a writer takes.

    On PostgreSQL a sequence value is taken at insert, not at commit, so two
    writers could commit their events out of order and a reader past the later
    one would skip the earlier for good. The insert takes the campaign's
    transaction lock first (in the same statement), so a campaign's events commit
    in sequence order; the lock is held only from the insert to the commit, and
    no writer takes a row lock after it (no deadlock). SQLite writers are
    serialized already by BEGIN IMMEDIATE."""
    values = {"campaign_id": campaign_id, "type": type_, "hidden": hidden, "data": data, "created_at": utcnow()}
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        conn.execute(_LOCKED_INSERT_EVENT, {**values, "key": campaign_lock_key(campaign_id)})
    else:
        conn.execute(_INSERT_EVENT, values)


def events_after(session: Session, principal: Principal, campaign_id: str, after: int, limit: int = 200) -> list[dict[str, Any]]:
    """Events after sequence `after`, oldest first; players never see hidden ones."""
    check_member(principal, campaign_id)
    query = select(Event.seq, Event.type, Event.data).where(Event.campaign_id == campaign_id, Event.seq > after)
    if not principal.is_gm:
        query = query.where(Event.hidden == False)  # noqa: E712 (SQL expression)
    rows = session.exec(query.order_by(Event.seq).limit(limit)).all()
    return [{"seq": seq, "type": type_, "data": data} for seq, type_, data in rows]
