"""Free dice rolls and the roll log (append-only: nothing here edits or deletes it)."""

from __future__ import annotations

import base64
import json
from functools import cache
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, String, and_, bindparam, cast, or_
from sqlalchemy.engine import Connection
from sqlmodel import Session, select

from app.core.prepared import Prepared
from app.kit.errors import NotFound
from app.models import seen
from app.models.results.common import RollResult
from app.models.schemas import RollCreate
from app.models.tables import EncounterAction, LogEntry, LogEntryCharacter, core_table
from app.models.validation import InvalidBody
from app.rules.dice import Expression, parse
from app.rulesets.contract.adapter import Outcome
from app.services.auth import check_owner_or_gm
from app.services.idempotency import Idempotency
from app.services.operations import RollingWork, retried
from app.services.provenance import entry_for_viewer
from app.services.records import Principal
from app.services.uow import json_text
from app.services.visibility import in_hiding_from_player, not_seen_whole


def free_roll(
    session: Session, principal: Principal, campaign_id: str, data: RollCreate, idem: Idempotency | None
) -> dict[str, Any]:
    """Any member rolls dice; attributed to a character only by its owner or the GM."""
    expression = parse(data.expression)  # an invalid expression is a 422 before anything else
    return _free_roll(RollingWork(session, principal, campaign_id, idem), data, expression)


@retried
def _free_roll(uow: RollingWork, req: RollCreate, expression: Expression) -> dict[str, Any]:
    with uow:
        for character in uow.lock([req.character_id] if req.character_id else []):
            check_owner_or_gm(uow.principal, character.player_id, "attribute a roll to this character")
        total = expression.roll(uow.context(req).dice, req.purpose)
        body = RollResult.of(
            kind="roll", expression=req.expression, total=total, purpose=req.purpose, character_id=req.character_id
        )
        return uow.commit_outcome(Outcome(body, req.character_id))


# A page stops at this many bytes of entries (at least one entry), whatever its
# limit: the cursor goes on from there. Entries are bounded (1,000 dice a request).
PAGE_MAX_BYTES = 1_000_000


def _cursor(entry_id: str) -> str:
    """Opaque and per campaign: the last entry's id (already public), never the
    log's global sequence, whose gaps would show hidden and other campaigns' rolls."""
    return base64.urlsafe_b64encode(f"e{entry_id}".encode()).decode().rstrip("=")


def _after(session: Session, principal: Principal, campaign_id: str, cursor: str) -> int:
    """The sequence the page continues below; 422 for a cursor not of this campaign's log, and
    for a player, built from an entry it may not read (hidden, or about a character hidden from
    it): exactly as an unknown one."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except Exception:
        text = ""
    conn, row = session.connection(), None
    if text.startswith("e") and 1 < len(text) <= 40:
        row = _CURSOR_SEQ.first(conn, {"id": text[1:], "campaign_id": campaign_id})
    if row is not None and not principal.is_gm:
        readable = _READABLE_SEQ.first(
            conn, {"seq": row[0], "campaign_id": campaign_id, "player_id": principal.player_id}
        )
        row = None if row[1] or readable is None else row
    if row is None:
        raise InvalidBody("the cursor is not one this service returned", field="cursor", code="invalid_cursor")
    return row[0]


_log = core_table(LogEntry)
_involved = core_table(LogEntryCharacter)
_CURSOR_SEQ = Prepared(
    select(_log.c.seq, _log.c.hidden).where(
        _log.c.id == bindparam("id"), _log.c.campaign_id == bindparam("campaign_id")
    )
)


_Query = TypeVar("_Query", bound=Select[Any])


def _leave_out_hidden_characters(query: _Query) -> _Query:
    """Without the entries about a character in hiding from the player `:player_id` (a hidden
    combatant's, as the character routes hide them), nor — but for combat entries, which follow
    their fight's rules — about one it does not see whole (`player_access` `limited` or `none`),
    whether the entry's own character or one involved (`app.services.visibility` says which:
    subqueries on `:campaign_id` and `:player_id`, so the statement stays one prepared statement)."""

    def about(characters: Select[Any]) -> ColumnElement[bool]:
        involved = select(_involved.c.seq).where(_involved.c.character_id.in_(characters))
        return or_(
            and_(_log.c.character_id.is_not(None), _log.c.character_id.in_(characters)), _log.c.seq.in_(involved)
        )

    return query.where(~about(in_hiding_from_player()), or_(_log.c.kind == "combat", ~about(not_seen_whole())))


_READABLE_SEQ = Prepared(_leave_out_hidden_characters(select(_log.c.seq).where(_log.c.seq == bindparam("seq"))))


@cache
def _page_query(by_character: bool, by_kind: bool, with_hidden: bool, below: bool, about_hidden: bool) -> Prepared:
    """The page's statement for one combination of filters (32 at most), prepared once:
    each entry's id and its stored JSON text, newest first. `about_hidden` (a player's page):
    without the entries about characters hidden from `:player_id`."""
    query = select(_log.c.id, cast(_log.c.body, String)).where(_log.c.campaign_id == bindparam("campaign_id"))
    if by_character:
        involved = select(_involved.c.seq).where(_involved.c.character_id == bindparam("character_id"))
        query = query.where(or_(_log.c.character_id == bindparam("character_id"), _log.c.seq.in_(involved)))
    if by_kind:
        query = query.where(_log.c.kind == bindparam("kind"))
    if not with_hidden:
        query = query.where(_log.c.hidden == False)  # noqa: E712 (SQL expression)
    if about_hidden:
        query = _leave_out_hidden_characters(query)
    if below:
        query = query.where(_log.c.seq < bindparam("below"))
    return Prepared(query.order_by(_log.c.seq.desc()).limit(bindparam("n")))


class JsonPage:
    """A page of the log whose entries are their stored JSON texts, sent as they are
    (no entry is decoded and encoded again): `json` is the page's JSON text,
    `{"items": [...], "next_cursor": ...}`."""

    __slots__ = ("items", "next_cursor")

    def __init__(self, items: list[str], next_cursor: str | None):
        self.items, self.next_cursor = items, next_cursor

    @property
    def json(self) -> str:
        return f'{{"items":[{",".join(self.items)}],"next_cursor":{json.dumps(self.next_cursor)}}}'


def list_log(
    session: Session,
    principal: Principal,
    campaign_id: str,
    *,
    limit: int,
    cursor: str | None,
    character_id: str | None = None,
    kind: str | None = None,
) -> JsonPage:
    """Newest first, keyset-paginated on the log's sequence; players never see
    hidden entries; a page is bounded by count and by bytes (of the stored texts)."""
    conn = session.connection()
    params = {
        "campaign_id": campaign_id,
        "character_id": character_id,
        "kind": kind,
        "n": limit + 1,
        "player_id": principal.player_id,
        "below": _after(session, principal, campaign_id, cursor) if cursor else None,
    }
    query = _page_query(character_id is not None, kind is not None, principal.is_gm, bool(cursor), not principal.is_gm)
    rows = query.all(conn, params)
    items: list[str] = []
    total, last = 0, ""
    combat = [] if principal.is_gm else [entry_id for entry_id, text in rows[:limit] if '"combat"' in text]
    versions = _player_versions(conn, combat)
    for entry_id, text in rows[:limit]:
        total += len(text)
        if items and total > PAGE_MAX_BYTES:
            return JsonPage(items, _cursor(last))
        items.append(text if principal.is_gm else _text_for_player(text, principal, versions))
        last = entry_id
    return JsonPage(items, _cursor(last) if len(rows) > limit else None)


_act = core_table(EncounterAction)


def _player_versions(conn: Connection, ids: list[str]) -> dict[str, dict[str, Any] | None]:
    """The players' versions each of these combat entries made (`encounter_action.seen_versions`,
    by the entry's id: an action is logged under its own id), read once for a page; nothing read
    for none."""
    if not ids:
        return {}
    rows = conn.execute(select(_act.c.id, _act.c.seen_versions).where(_act.c.id.in_(ids)))
    return {row.id: row.seen_versions for row in rows}


def _text_for_player(text: str, principal: Principal, versions: dict[str, dict[str, Any] | None]) -> str:
    """A stored entry's text as a player reads it: the text as it is, but for an entry with a seed
    (the GM's) and a combat entry (its `encounter_version` the player's own, `models.seen`: the GM's
    counts changes the player was never told of); only those are decoded."""
    if '"seed"' not in text and '"combat"' not in text:
        return text
    return json_text(_for_player(json.loads(text), principal, versions))


def _for_player(body: dict[str, Any], principal: Principal, versions: dict[str, dict[str, Any] | None]) -> dict:
    body = entry_for_viewer(body, is_gm=False)
    if body.get("kind") == "combat" and body.get("id") in versions:
        fallback = body["encounter_version"]
        body = {**body, "encounter_version": seen.of(versions[body["id"]], principal.player_id, fallback)}
    return body


def read_log_entry(session: Session, principal: Principal, campaign_id: str, entry_id: str) -> dict[str, Any]:
    conn = session.connection()
    query = select(_log.c.body, _log.c.hidden).where(_log.c.id == entry_id, _log.c.campaign_id == campaign_id)
    if not principal.is_gm:
        query = _leave_out_hidden_characters(query)
    row = conn.execute(query, {"campaign_id": campaign_id, "player_id": principal.player_id}).first()
    if row is None or (row.hidden and not principal.is_gm):
        raise NotFound("no roll-log entry with this id")
    if principal.is_gm:
        return dict(row.body)
    versions = _player_versions(conn, [entry_id] if row.body.get("kind") == "combat" else [])
    return _for_player(row.body, principal, versions)
