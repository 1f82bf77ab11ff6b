"""Keyset pagination on (created_at, id), and If-Match checks: shared by every list and versioned resource."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_
from sqlmodel import Session
from sqlmodel.sql.expression import SelectOfScalar

from app.kit.errors import PreconditionFailed
from app.models.validation import InvalidBody


def encode_cursor(created_at: datetime, id_: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([created_at.isoformat(), id_]).encode()).decode()


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        stamp, id_ = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return datetime.fromisoformat(stamp), str(id_)
    except Exception:
        raise InvalidBody(
            "the cursor is not one this service returned", field="cursor", code="invalid_cursor"
        ) from None


def created_order_page(
    session: Session,
    query: SelectOfScalar[Any],
    model: type[Any],
    *,
    limit: int,
    cursor: str | None,
    shape: Callable[[Any], dict[str, Any]],
) -> dict[str, Any]:
    """One page of `query` in creation order: `{"items", "next_cursor"}` (stable under inserts)."""
    if cursor:
        stamp, id_ = decode_cursor(cursor)
        query = query.where(or_(model.created_at > stamp, and_(model.created_at == stamp, model.id > id_)))
    rows = list(session.exec(query.order_by(model.created_at, model.id).limit(limit + 1)))
    next_cursor = encode_cursor(rows[limit - 1].created_at, rows[limit - 1].id) if len(rows) > limit else None
    return {"items": [shape(r) for r in rows[:limit]], "next_cursor": next_cursor}


def check_if_match(version: int, if_match: str | None, what: str) -> None:
    """API.md: PATCH and DELETE honour If-Match; a stale version → 412."""
    if if_match is None:
        return
    wanted = [t.strip().removeprefix("W/").strip('"') for t in if_match.split(",")]
    if "*" not in wanted and str(version) not in wanted:
        raise PreconditionFailed(
            f"the {what} is at version {version}; If-Match named {if_match!r}",
            extra={"current_version": version},
            code="stale_version",
        )
