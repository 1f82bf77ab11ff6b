"""The campaign's event stream: every change, recorded in the transaction that
makes it (so an event exists iff its change was committed), and the one-use
tickets that open a stream from a browser.

Events are numbered per campaign (`number`: 1, 2, 3…), the only id clients see;
the table's global `seq` stays internal. An event carries the new state of what
changed, as a member reads it (a character as `GET /v1/characters/{id}` returns
it, the campaign, the player without its token). A `log.created` event stores a
reference to its roll-log entry (`entry_id`), not the entry's body: the readers
below put the body back (`entry`) when they read, so clients see the same
payload and a big roll is stored once. An encounter event of an action stores it the same
way (`action_ref`: the action's id, which is its roll-log entry's): readers put it back
(`action`), as the GM reads it; what the players read of it is stored beside it when it
differs (`player_data`), and what one player reads of it when that differs again (a
player's own hidden combatant, its own exact pools: `player_views`, kept in the
`player_data` column under `_views`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from pydantic_core import to_jsonable_python
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    String,
    bindparam,
    cast,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    type_coerce,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.sql.dml import Insert
from sqlmodel import Session

from app.core import committed
from app.core.prepared import Prepared
from app.core.security import hash_token, new_token
from app.kit.errors import Unauthorized
from app.models import seen
from app.models.schemas import CampaignPublic, PlayerPublic
from app.models.tables import (
    Campaign,
    Credential,
    Event,
    EventCounter,
    LogEntry,
    Player,
    StreamTicket,
    as_utc,
    core_table,
    utcnow,
)
from app.services.auth import hold
from app.services.provenance import entry_for_viewer
from app.services.records import Principal

_event = core_table(Event)
_COLUMNS = ["campaign_id", "type", "hidden", "created_at", "owner_id", "data", "player_data", "number"]


def _insert_numbered(json_value: Callable[[str], Any], number: Any) -> Insert:
    """INSERT … SELECT: the event, numbered `number` (an expression of the statement)."""
    return insert(_event).from_select(
        _COLUMNS,
        select(
            bindparam("campaign_id", type_=String),
            bindparam("type", type_=String),
            bindparam("hidden", type_=Boolean),
            bindparam("created_at", type_=DateTime(timezone=True)),
            bindparam("owner_id", type_=String),
            json_value("data"),
            json_value("player_data"),
            number,
        ),
    )


# A campaign's events are numbered by its counter (`event_counter`), counted by the insert itself:
# on PostgreSQL ONE statement (the counter's upsert `… RETURNING` in a WITH, the insert reading
# its value), whose row lock on the counter serialises the campaign's event writers from there to
# their commit; on SQLite (one writer at a time already) the upsert, then the insert reading the
# count back in its own statement.
_counter = core_table(EventCounter)


def _count(upsert: Callable[..., Any]) -> Any:
    first = upsert(_counter).values(campaign_id=bindparam("campaign_id", type_=String), last_number=1)
    return first.on_conflict_do_update(
        index_elements=[_counter.c.campaign_id], set_={"last_number": _counter.c.last_number + 1}
    )


_counted = _count(pg_insert).returning(_counter.c.last_number).cte("counted")
_recorded = (
    select(_counter.c.last_number)
    .where(_counter.c.campaign_id == bindparam("campaign_id", type_=String))
    .scalar_subquery()
)
_INSERT_EVENT = _insert_numbered(
    lambda name: type_coerce(bindparam(name, type_=JSON(none_as_null=True)), JSON), _recorded
)
# a parameter in a SELECT list is untyped on PostgreSQL
_PG_INSERT_EVENT = _insert_numbered(
    lambda name: cast(bindparam(name, type_=JSON(none_as_null=True)), JSON), _counted.c.last_number
).add_cte(_counted)
# the same statements on the DBAPI cursor (app.core.prepared: the hot path's writes); the
# counter's own upsert is SQLite's only (PostgreSQL's is in the insert)
_FAST_INSERT_EVENT = Prepared(_INSERT_EVENT, postgresql=_PG_INSERT_EVENT)
_FAST_COUNT = Prepared(_count(sqlite_insert))


def record(
    session: Session,
    campaign_id: str,
    type_: str,
    data: dict[str, Any],
    *,
    hidden: bool = False,
    owner_id: str | None = None,
    player_data: dict[str, Any] | None = None,
    player_views: dict[str, dict[str, Any]] | None = None,
    player_versions: dict[str, Any] | None = None,
    conn: Connection | None = None,
) -> None:
    """Add an event to the current transaction (the caller commits). Call it after
    the change's other writes: it is the last lock a writer takes.

    The event gets the campaign's next number from its counter (`event_counter`, counted
    by the insert: see `_PG_INSERT_EVENT`), so a campaign's event writers are serialised
    from this insert to their commit by the counter's row lock, held only from there to
    the commit; no writer takes a row lock after it (no deadlock), and a rolled-back
    writer's count is rolled back with it (no gap). It also makes a campaign's events
    commit in `seq` order. SQLite writers are serialized already by BEGIN IMMEDIATE.
    (campaign_id, number) is unique: a bug there fails loudly.

    `conn`: the session's connection when the caller holds it; inside a unit of work's
    `writes()` block the insert goes out with its other writes, in one round trip.

    Who receives it (the `Event` table's doc): the GM; the player `owner_id` even when
    `hidden`; the other players nothing when `hidden`, else `player_data` or `data`.
    `player_views`: player id -> what that player receives instead (before all of the above
    but the GM; a hidden event reaches only the player `owner_id` among them).
    `player_versions`: an encounter event's `seen` versions after it: each player reads its own as
    the event's `version` (and its action's `encounter_version`)."""
    stored = player_data
    if player_views or player_versions:
        stored = {_VIEWS: player_views or {}, _OTHERS: player_data}
        if player_versions:
            stored[_SEEN] = player_versions
    values = {
        "campaign_id": campaign_id,
        "type": type_,
        "hidden": hidden,
        "created_at": utcnow(),
        "owner_id": owner_id,
        "data": to_jsonable_python(_completed(session, campaign_id, type_, data)),
        "player_data": None if stored is None else to_jsonable_python(stored),
    }
    conn = conn if conn is not None else session.connection()
    if conn.dialect.name != "postgresql":  # (PostgreSQL's count is in the insert)
        _FAST_COUNT.run(conn, {"campaign_id": campaign_id})
    _FAST_INSERT_EVENT.run(conn, values)
    committed.noted(session, campaign_id)  # this process's streams are told at the commit


_campaign = core_table(Campaign)
_player = core_table(Player)
_VIEWS, _OTHERS, _SEEN = "_views", "_others", "_seen"  # `player_data` holding per-player payloads


def _completed(session: Session, campaign_id: str, type_: str, data: dict[str, Any]) -> dict[str, Any]:
    """The payload as a member reads the resource: a campaign or a player recorded
    without the fields that never change (ruleset, campaign id, creation time) gets
    them here, from the transaction's own rows."""
    if type_ == "campaign.updated" and "ruleset" not in data:
        row = (
            session.connection()
            .execute(select(_campaign.c.ruleset, _campaign.c.created_at).where(_campaign.c.id == campaign_id))
            .one()
        )
        return CampaignPublic.model_validate({**data, "ruleset": row.ruleset, "created_at": row.created_at}).model_dump(
            mode="json", exclude={"role"}
        )
    if type_ == "player.created" and "created_at" not in data:
        created = (
            session.connection().execute(select(_player.c.created_at).where(_player.c.id == data["id"])).scalar_one()
        )
        return PlayerPublic.model_validate(
            {"id": data["id"], "campaign_id": campaign_id, "name": data["name"], "created_at": created}
        ).model_dump(mode="json")
    return data


class StoredEvent(NamedTuple):
    seq: int  # the table's order (internal: SQLite's poll watermark)
    number: int  # the campaign's count: the event's id for clients
    campaign_id: str
    type: str
    hidden: bool
    data: dict[str, Any]  # as the GM (and the owner) sees it, a log entry's body put back
    owner_id: str | None = None  # a player who sees `data` even when hidden
    player_data: dict[str, Any] | None = None  # what the other players see instead of `data`
    player_views: dict[str, dict[str, Any]] | None = None  # what one player sees instead of the above
    player_versions: dict[str, Any] | None = None  # an encounter event's players' versions (`seen`)

    def payload_for(self, viewer: Principal) -> dict[str, Any] | None:
        """The event's data as `viewer` may see it, or None when it is not for it (API.md
        round 3: per viewer, the GM, the owner, then what the other players may see)."""
        if viewer.is_gm:
            return self.data
        found = self._players(viewer)
        if found is None or self.player_versions is None:
            return found
        version = seen.of(self.player_versions, viewer.player_id, found["version"])
        action = found.get("action")
        if action is not None:
            return {**found, "version": version, "action": {**action, "encounter_version": version}}
        return {**found, "version": version}

    def _players(self, viewer: Principal) -> dict[str, Any] | None:
        if self.player_views is not None and viewer.player_id in self.player_views:
            if self.hidden and viewer.player_id != self.owner_id:
                return None
            return self.player_views[viewer.player_id]
        if self.owner_id is not None and viewer.player_id == self.owner_id:
            return self.data
        if self.hidden:
            return None
        return self.data if self.player_data is None else self.player_data


_EVENT_COLUMNS = (
    _event.c.seq,
    _event.c.number,
    _event.c.campaign_id,
    _event.c.type,
    _event.c.hidden,
    _event.c.data,
    _event.c.owner_id,
    _event.c.player_data,
)


def events_page(
    session: Session, campaign_id: str, after: int, *, viewer: Principal, upto: int | None = None, limit: int = 100
) -> list[StoredEvent]:
    """One page of the campaign's events numbered in (after, upto] that `viewer` receives, oldest
    first (the caller checked membership)."""
    query = select(*_EVENT_COLUMNS).where(_event.c.campaign_id == campaign_id, _event.c.number > after)
    if upto is not None:
        query = query.where(_event.c.number <= upto)
    if not viewer.is_gm:
        query = query.where(or_(_event.c.hidden == False, _event.c.owner_id == viewer.player_id))  # noqa: E712
    rows = session.connection().execute(query.order_by(_event.c.number).limit(limit)).all()
    return _with_bodies(session, rows)


def latest_number(session: Session, campaign_id: str) -> int:
    """The campaign's last event number (0 when it has none): "the present" of its stream."""
    return latest_numbers(session, [campaign_id]).get(campaign_id, 0)


def latest_numbers(session: Session, campaign_ids: list[str]) -> dict[str, int]:
    """Each campaign's last event number (0 when none), one index probe per campaign."""
    if not campaign_ids:
        return {}
    last = select(func.max(_event.c.number)).where(_event.c.campaign_id == _campaign.c.id).scalar_subquery()
    rows = session.connection().execute(select(_campaign.c.id, last).where(_campaign.c.id.in_(campaign_ids))).all()
    found = {cid: number or 0 for cid, number in rows}
    return {cid: found.get(cid, 0) for cid in campaign_ids}


def live_tokens(session: Session, token_hashes: set[str]) -> set[str]:
    """Which of these credentials still exist (one primary-key probe each): a stream
    lives by its token."""
    if not token_hashes:
        return set()
    rows = session.connection().execute(select(_cred.c.token_hash).where(_cred.c.token_hash.in_(sorted(token_hashes))))
    return {row[0] for row in rows}


def poll(
    session: Session, cursors: dict[str, int], watermark: int | None, limit: int
) -> tuple[list[StoredEvent], int | None]:
    """The events of the campaigns in `cursors` (campaign -> last event number sent) past
    each one's cursor, oldest first, at most `limit` (each campaign then gets a prefix
    of its new events: the next call goes on).

    PostgreSQL: one index range per campaign (LATERAL), exact because a campaign's
    events commit in number order (see `record`) while different campaigns' may not.
    SQLite: writers are serialized, so the whole table commits in `seq` order and
    one range past a process-wide `seq` `watermark` serves every campaign; the new
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
    # had its cursor read (latest_numbers) in this same transaction
    rows = conn.execute(
        select(*_EVENT_COLUMNS)
        .where(_event.c.seq > watermark, _event.c.seq <= top, _event.c.campaign_id.in_(list(cursors)))
        .order_by(_event.c.seq)
        .limit(limit)
    ).all()
    next_watermark = rows[-1].seq if len(rows) == limit else top
    return _with_bodies(session, [r for r in rows if r.number > cursors[r.campaign_id]]), next_watermark


_log = core_table(LogEntry)
_PG_POLL = text(
    "SELECT e.seq, e.number, e.campaign_id, e.type, e.hidden, e.data, e.owner_id, e.player_data"
    " FROM unnest(CAST(:ids AS text[]), CAST(:curs AS bigint[])) AS c(cid, cur)"
    " CROSS JOIN LATERAL (SELECT seq, number, campaign_id, type, hidden, data, owner_id, player_data FROM event"
    "   WHERE event.campaign_id = c.cid AND event.number > c.cur ORDER BY event.number LIMIT :n) AS e"
    " ORDER BY e.seq LIMIT :n"
).columns(
    seq=BigInteger,
    number=BigInteger,
    campaign_id=String,
    type=String,
    hidden=Boolean,
    data=JSON,
    owner_id=String,
    player_data=JSON,
)


def _with_bodies(session: Session, rows: Sequence[Any]) -> list[StoredEvent]:
    """Rows as clients see them: each `log.created` gets its entry's body back, an action's
    encounter event its action (one query per page)."""
    refs = {r.data["entry_id"] for r in rows if r.type == "log.created" and "entry_id" in r.data}
    refs.update(r.data[ACTION_REF] for r in rows if ACTION_REF in r.data)
    bodies: dict[str, Any] = {}
    if refs:
        found = session.connection().execute(select(_log.c.id, _log.c.body).where(_log.c.id.in_(list(refs))))
        bodies = dict(found.all())  # (not dict(found): a Result has keys(), dict() would read it as a mapping)
    return [
        StoredEvent(
            r.seq,
            r.number,
            r.campaign_id,
            r.type,
            r.hidden,
            _client_view(r.type, r.data, bodies),
            r.owner_id,
            _players_view(r.type, r.data, _others(r.player_data), bodies),
            _views(r.player_data),
            r.player_data.get(_SEEN) if r.player_data is not None and _VIEWS in r.player_data else None,
        )
        for r in rows
    ]


def _others(player_data: dict[str, Any] | None) -> dict[str, Any] | None:
    return player_data.get(_OTHERS) if player_data is not None and _VIEWS in player_data else player_data


def _views(player_data: dict[str, Any] | None) -> dict[str, dict[str, Any]] | None:
    return player_data.get(_VIEWS) if player_data is not None else None


ACTION_REF = "action_ref"  # an encounter event's action, stored as its id (the readers put it back)


def _client_view(type_: str, data: dict[str, Any], bodies: dict[str, Any], *, for_gm: bool = True) -> dict[str, Any]:
    if ACTION_REF in data:
        rest = {k: v for k, v in data.items() if k != ACTION_REF}
        body = bodies.get(data[ACTION_REF])
        return {**rest, "action": body if for_gm or body is None else entry_for_viewer(body, is_gm=False)}
    if type_ != "log.created" or "entry_id" not in data:
        return data  # events written before references keep their body inline
    rest = {k: v for k, v in data.items() if k != "entry_id"}
    entry = bodies.get(data["entry_id"])
    return {"entry": entry if for_gm or entry is None else entry_for_viewer(entry, is_gm=False), **rest}


def _players_view(
    type_: str, data: dict[str, Any], player_data: dict[str, Any] | None, bodies: dict[str, Any]
) -> dict[str, Any] | None:
    """What players other than the owner receive when it differs from the GM's: the stored
    `player_data`, or a log entry without what only the GM sees (its seed)."""
    if player_data is not None:
        return _client_view(type_, player_data, bodies, for_gm=False)
    if ACTION_REF in data:  # the players read what the GM does, but for its seed
        return _client_view(type_, data, bodies, for_gm=False)
    if type_ == "log.created" and "entry_id" in data:
        shown = _client_view(type_, data, bodies, for_gm=False)
        if shown["entry"] is not bodies.get(data["entry_id"]):  # entry_for_viewer left something out
            return shown
    return None


# --- stream tickets -------------------------------------------------------------------
TICKET_SECONDS = 60
_ticket = core_table(StreamTicket)
_cred = core_table(Credential)


def issue_ticket(session: Session, principal: Principal, campaign_id: str) -> dict[str, Any]:
    """A one-use ticket for `GET …/events?ticket=` (a browser's EventSource sends no
    headers), valid TICKET_SECONDS, bound to the caller's credential: its role,
    player and campaign, and it dies with it. Stored hashed; expired tickets are
    swept here."""
    now = utcnow()
    ticket = new_token("st")
    expires_at = now + timedelta(seconds=TICKET_SECONDS)
    conn = session.connection()
    hold(conn, principal)  # the ticket refers to it
    conn.execute(delete(_ticket).where(_ticket.c.expires_at < now))
    conn.execute(
        insert(_ticket),
        {
            "ticket_hash": hash_token(ticket),
            "token_hash": principal.token_hash,
            "campaign_id": campaign_id,
            "expires_at": expires_at,
        },
    )
    session.commit()
    return {"ticket": ticket, "expires_at": expires_at}


_REDEEM = (
    delete(_ticket)
    .where(_ticket.c.ticket_hash == bindparam("ticket_hash"))
    .returning(_ticket.c.token_hash, _ticket.c.campaign_id, _ticket.c.expires_at)
)


def redeem_ticket(session: Session, ticket: str) -> Principal:
    """The principal of a ticket, which is used up here (one DELETE … RETURNING: of
    two concurrent uses, on any workers, one gets it). 401 when it is unknown,
    used, expired or its credential is gone."""
    conn = session.connection()
    row = conn.execute(_REDEEM, {"ticket_hash": hash_token(ticket)}).first()
    credential = None
    if row is not None and as_utc(row.expires_at) > utcnow():
        credential = conn.execute(
            select(_cred.c.campaign_id, _cred.c.role, _cred.c.player_id).where(_cred.c.token_hash == row.token_hash)
        ).first()
    session.commit()
    if row is None or credential is None or credential.campaign_id != row.campaign_id:  # (no row: no credential)
        raise Unauthorized(
            "invalid stream ticket: unknown, already used or expired (ask for another)", code="ticket_invalid"
        )
    return Principal(credential.campaign_id, credential.role, credential.player_id, row.token_hash)


def spend_ticket(session: Session, ticket: str) -> None:
    """Use a ticket up without opening anything (a refused ticket is spent): `redeem_ticket`'s
    DELETE, its row not read."""
    session.connection().execute(_REDEEM, {"ticket_hash": hash_token(ticket)})
    session.commit()
