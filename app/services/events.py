"""The campaign's event stream: every change, recorded in the transaction that
makes it (so an event exists iff its change was committed).

A `log.created` event stores a reference to its roll-log entry (`entry_id`), not
the entry's body: the readers below put the body back (`entry`) when they read,
so clients see the same payload and a big roll is stored once."""
from __future__ import annotations

import hashlib
from typing import Any, NamedTuple

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, String, bindparam, cast, func, insert, text
from sqlmodel import Session, select

from app.models.tables import Campaign, Event, LogEntry, utcnow
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


class StoredEvent(NamedTuple):
    seq: int
    campaign_id: str
    type: str
    hidden: bool
    data: dict[str, Any]  # as clients see it (a log entry's body put back)


def events_after(session: Session, principal: Principal, campaign_id: str, after: int, limit: int = 200) -> list[dict[str, Any]]:
    """Events after sequence `after`, oldest first; players never see hidden ones."""
    check_member(principal, campaign_id)
    page = events_page(session, campaign_id, after, include_hidden=principal.is_gm, limit=limit)
    return [{"seq": e.seq, "type": e.type, "data": e.data} for e in page]


_EVENT_COLUMNS = (_event.c.seq, _event.c.campaign_id, _event.c.type, _event.c.hidden, _event.c.data)


def events_page(session: Session, campaign_id: str, after: int, *, include_hidden: bool, upto: int | None = None,
                limit: int = 100) -> list[StoredEvent]:
    """One page of a campaign's events in (after, upto], oldest first (the caller checked membership)."""
    query = select(*_EVENT_COLUMNS).where(_event.c.campaign_id == campaign_id, _event.c.seq > after)
    if upto is not None:
        query = query.where(_event.c.seq <= upto)
    if not include_hidden:
        query = query.where(_event.c.hidden == False)  # noqa: E712 (SQL expression)
    rows = session.connection().execute(query.order_by(_event.c.seq).limit(limit)).all()
    return _with_bodies(session, rows)


def latest_seq(session: Session, campaign_id: str) -> int:
    """The campaign's last event sequence (0 when it has none): "the present" of its stream."""
    return latest_seqs(session, [campaign_id]).get(campaign_id, 0)


def latest_seqs(session: Session, campaign_ids: list[str]) -> dict[str, int]:
    """Each campaign's last event sequence (0 when none), one index probe per campaign."""
    if not campaign_ids:
        return {}
    last = select(func.max(_event.c.seq)).where(_event.c.campaign_id == _campaign.c.id).scalar_subquery()
    rows = session.connection().execute(select(_campaign.c.id, last).where(_campaign.c.id.in_(campaign_ids))).all()
    found = {cid: seq or 0 for cid, seq in rows}
    return {cid: found.get(cid, 0) for cid in campaign_ids}


def poll(session: Session, cursors: dict[str, int], watermark: int | None, limit: int) -> tuple[list[StoredEvent], int | None]:
    """The events of the campaigns in `cursors` past each one's cursor, oldest first, at
    most `limit` (each campaign then gets a prefix of its new events: the next call goes on).

    PostgreSQL: one index range per campaign (LATERAL), exact because a campaign's
    events commit in sequence order (see `record`) while different campaigns' may not.
    SQLite: writers are serialized, so the whole table commits in sequence order and
    one range past a process-wide `watermark` serves every campaign; the new
    watermark is returned (None on PostgreSQL). Pass watermark=None when no
    campaign was tracked before: every cursor then comes from this transaction."""
    if not cursors:
        return [], watermark
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        ids = list(cursors)
        rows = conn.execute(_PG_POLL, {"ids": ids, "curs": [cursors[c] for c in ids], "n": limit}).all()
        return _with_bodies(session, rows), None
    top = conn.execute(select(func.max(_event.c.seq))).scalar() or 0
    if watermark is None or watermark >= top:
        return [], top
    # a campaign's cursor is never behind the watermark for an event it lacks: one
    # tracked since an earlier call was served up to the watermark, one added since
    # had its cursor read (latest_seqs) in this same transaction
    rows = conn.execute(
        select(*_EVENT_COLUMNS)
        .where(_event.c.seq > watermark, _event.c.seq <= top, _event.c.campaign_id.in_(list(cursors)))
        .order_by(_event.c.seq).limit(limit)
    ).all()
    next_watermark = rows[-1].seq if len(rows) == limit else top
    return _with_bodies(session, [r for r in rows if r.seq > cursors[r.campaign_id]]), next_watermark


_campaign = Campaign.__table__
_log = LogEntry.__table__
_PG_POLL = text(
    "SELECT e.seq, e.campaign_id, e.type, e.hidden, e.data"
    " FROM unnest(CAST(:ids AS text[]), CAST(:curs AS bigint[])) AS c(cid, cur)"
    " CROSS JOIN LATERAL (SELECT seq, campaign_id, type, hidden, data FROM event"
    "   WHERE event.campaign_id = c.cid AND event.seq > c.cur ORDER BY event.seq LIMIT :n) AS e"
    " ORDER BY e.seq LIMIT :n"
).columns(seq=BigInteger, campaign_id=String, type=String, hidden=Boolean, data=JSON)


def _with_bodies(session: Session, rows) -> list[StoredEvent]:
    """Rows as clients see them: each `log.created` gets its entry's body back (one query per page)."""
    refs = {r.data["entry_id"] for r in rows if r.type == "log.created" and "entry_id" in r.data}
    bodies: dict[str, Any] = {}
    if refs:
        found = session.connection().execute(select(_log.c.id, _log.c.body).where(_log.c.id.in_(list(refs))))
        bodies = {entry_id: body for entry_id, body in found}
    return [StoredEvent(r.seq, r.campaign_id, r.type, r.hidden, _client_view(r.type, r.data, bodies)) for r in rows]


def _client_view(type_: str, data: dict[str, Any], bodies: dict[str, Any]) -> dict[str, Any]:
    if type_ != "log.created" or "entry_id" not in data:
        return data  # events written before references keep their body inline
    rest = {k: v for k, v in data.items() if k != "entry_id"}
    return {"entry": bodies.get(data["entry_id"]), **rest}
