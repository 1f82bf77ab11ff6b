"""Free dice rolls and the roll log (append-only: nothing here edits or deletes it)."""
from __future__ import annotations

import base64
from typing import Any

from sqlalchemy import or_
from sqlmodel import Session, select

from app.core.errors import NotFound
from app.models.schemas import RollCreate
from app.models.tables import LogEntry, LogEntryCharacter
from app.rules.dice import parse
from app.services.auth import Principal, check_member
from app.services.operations import Idempotency, perform
from app.services.rulesets.base import Outcome
from app.services.validation import InvalidBody


def free_roll(session: Session, principal: Principal, campaign_id: str, data: RollCreate, idem: Idempotency | None) -> dict[str, Any]:
    expression = parse(data.expression)

    def run(_adapter, req: RollCreate, _chars, ctx) -> Outcome:
        total = expression.roll(ctx.dice, req.purpose)
        body = {"expression": req.expression, "total": total, "purpose": req.purpose, "character_id": req.character_id}
        return Outcome(kind="roll", body=body, character_id=req.character_id)

    return perform(
        session, principal, campaign_id=campaign_id,
        parse=lambda _a: data,
        targets=lambda req: [req.character_id] if req.character_id else [],
        authorize=lambda *_: None,  # any member may roll (hidden and table dice are checked by perform)
        run=run,
        idem=idem,
    )


def _cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"s{seq}".encode()).decode().rstrip("=")


def _seq(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        seq = int(text[1:]) if text.startswith("s") and text[1:].isdigit() else -1
        if not 0 < seq < 2**62:
            raise ValueError
        return seq
    except Exception:
        raise InvalidBody("the cursor is not one this service returned", field="cursor") from None


def list_log(session: Session, principal: Principal, campaign_id: str, *, limit: int, cursor: str | None,
             character_id: str | None = None, kind: str | None = None) -> dict[str, Any]:
    """Newest first, keyset-paginated on the log's sequence; players never see hidden entries."""
    check_member(principal, campaign_id)
    query = select(LogEntry.seq, LogEntry.body).where(LogEntry.campaign_id == campaign_id)
    if character_id is not None:
        involved = select(LogEntryCharacter.seq).where(LogEntryCharacter.character_id == character_id)
        query = query.where(or_(LogEntry.character_id == character_id, LogEntry.seq.in_(involved)))
    if kind is not None:
        query = query.where(LogEntry.kind == kind)
    if not principal.is_gm:
        query = query.where(LogEntry.hidden == False)  # noqa: E712 (SQL expression)
    if cursor:
        query = query.where(LogEntry.seq < _seq(cursor))
    rows = session.exec(query.order_by(LogEntry.seq.desc()).limit(limit + 1)).all()
    next_cursor = _cursor(rows[limit - 1][0]) if len(rows) > limit else None
    return {"items": [body for _seq_, body in rows[:limit]], "next_cursor": next_cursor}


def read_log_entry(session: Session, principal: Principal, campaign_id: str, entry_id: str) -> dict[str, Any]:
    check_member(principal, campaign_id)
    entry = session.exec(select(LogEntry).where(LogEntry.id == entry_id, LogEntry.campaign_id == campaign_id)).first()
    if entry is None or (entry.hidden and not principal.is_gm):
        raise NotFound("no roll-log entry with this id")
    return entry.body
