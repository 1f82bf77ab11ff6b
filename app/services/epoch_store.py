"""The dice epochs' rows (API.md "Verifiable server dice"): the current epoch claimed by a
transaction's first server die, its count written with the transaction's other writes, a new
epoch opened (its seed from the OS CSPRNG), and an epoch as the API shows it.

A bottom module (statements only): the unit of work claims through it, the use cases of
`app.services.dice_epochs` read and change epochs through it."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from app.core.prepared import Prepared
from app.models.results.common import wire_time
from app.models.tables import DiceEpoch, core_table, new_id, utcnow
from app.rules.dice import Epoch

_epoch = core_table(DiceEpoch)
_COLUMNS = (_epoch.c.id, _epoch.c.seed, _epoch.c.salts, _epoch.c.dice)
_CURRENT = (
    (_epoch.c.campaign_id == bindparam("campaign_id")) & _epoch.c.revealed_at.is_(None) & _epoch.c.imported.is_(False)
)
# the current epoch, its row locked until the commit: the numbers `k` are given out in order
_CLAIM = Prepared(select(*_COLUMNS).where(_CURRENT).with_for_update())
_COUNT = Prepared(
    update(_epoch)
    .where(_epoch.c.campaign_id == bindparam("campaign_id"), _epoch.c.id == bindparam("epoch_id"))
    .values(dice=bindparam("count"))
)
_NOT_NOW = text("revealed_at IS NULL AND NOT imported")


def _opening(campaign_id: str, now: datetime) -> dict[str, Any]:
    seed = secrets.token_bytes(32)  # the OS CSPRNG
    return {
        "id": new_id(),
        "campaign_id": campaign_id,
        "seed": seed,
        "commitment": hashlib.sha256(seed).hexdigest(),
        "salts": [],
        "dice": 0,
        "started_at": now,
        "revealed_at": None,
        "imported": False,
    }


def open_epoch(conn: Connection, campaign_id: str, now: datetime | None = None) -> None:
    """A new current epoch for the campaign, unless it has one (a concurrent opening: the one index
    of current epochs keeps one)."""
    values = _opening(campaign_id, now or utcnow())
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(_epoch).values(**values)
    statement = statement.on_conflict_do_nothing(index_elements=["campaign_id"], index_where=_NOT_NOW)
    conn.execute(statement)


def claim_query(campaign_id: str) -> tuple[Prepared, dict[str, Any]]:
    """The claim's statement (`claim`), to run with others in one round trip (`fetch_together`)."""
    return _CLAIM, {"campaign_id": campaign_id}


def epoch_of(row: tuple) -> Epoch:
    return Epoch(row[0], bytes(row[1]), tuple(row[2]), row[3])  # a current epoch always has its seed


def claim(conn: Connection, campaign_id: str) -> Epoch:
    """The campaign's current epoch, locked: what a transaction's first server die draws from.
    None found: a reveal committed while this waited for the row (the next statement sees the new
    one), or a campaign that has none yet (one is opened)."""
    for _ in range(3):
        row = _CLAIM.first(conn, {"campaign_id": campaign_id})
        if row is not None:
            return epoch_of(row)
        open_epoch(conn, campaign_id)
    raise RuntimeError(f"campaign {campaign_id}: no current dice epoch could be claimed")


def count(conn: Connection, campaign_id: str, epoch_id: str, dice: int) -> None:
    """The epoch's count of logged server dice (a prepared statement: it may go in a `writes()` batch)."""
    _COUNT.run(conn, {"campaign_id": campaign_id, "epoch_id": epoch_id, "count": dice})


def current_row(conn: Connection, campaign_id: str, *, lock: bool = False) -> dict[str, Any] | None:
    """The campaign's current epoch's row (locked when `lock`), or None if it has none."""
    query = select(_epoch).where(_CURRENT)
    if lock:
        query = query.with_for_update()
    row = conn.execute(query, {"campaign_id": campaign_id}).mappings().first()
    return None if row is None else dict(row)


def current(conn: Connection, campaign_id: str, *, lock: bool = False) -> dict[str, Any]:
    """The campaign's current epoch's row (opened if it has none)."""
    row = current_row(conn, campaign_id, lock=lock)
    if row is None:
        open_epoch(conn, campaign_id)
        row = current_row(conn, campaign_id, lock=lock)  # this one, or a concurrent writer's (the index keeps one)
        if row is None:
            raise RuntimeError(f"campaign {campaign_id}: no current dice epoch after opening one")
    return row


def change(conn: Connection, campaign_id: str, epoch_id: str, **values: Any) -> None:
    """The epoch's row changed (its salts, its reveal)."""
    conn.execute(update(_epoch).where(_epoch.c.campaign_id == campaign_id, _epoch.c.id == epoch_id).values(**values))


def every(conn: Connection, campaign_id: str) -> list[dict[str, Any]]:
    """The campaign's epochs, newest first."""
    query = (
        select(_epoch)
        .where(_epoch.c.campaign_id == campaign_id)
        .order_by(_epoch.c.started_at.desc(), _epoch.c.revealed_at.is_(None).desc(), _epoch.c.id)
    )
    return [dict(row) for row in conn.execute(query).mappings()]


def by_ids(conn: Connection, campaign_id: str, ids: list[str]) -> list[dict[str, Any]]:
    if not ids:
        return []
    query = select(_epoch).where(_epoch.c.campaign_id == campaign_id, _epoch.c.id.in_(ids))
    return [dict(row) for row in conn.execute(query).mappings()]


def public(row: dict[str, Any]) -> dict[str, Any]:
    """An epoch as the API shows it: its seed only once revealed."""
    out: dict[str, Any] = {
        "id": row["id"],
        "campaign_id": row["campaign_id"],
        "commitment": row["commitment"],
        "salts": list(row["salts"]),
        "started_at": wire_time(row["started_at"]),
        "revealed_at": wire_time(row["revealed_at"]) if row["revealed_at"] is not None else None,
        "dice": row["dice"],
    }
    if row["revealed_at"] is not None and row["seed"] is not None:
        out["seed"] = bytes(row["seed"]).hex()
    if row.get("imported"):
        out["imported"] = True
    return out
