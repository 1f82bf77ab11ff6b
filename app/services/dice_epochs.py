"""Dice epochs' use cases (API.md "Verifiable server dice (commit, then reveal)"): the epochs a
member reads, a salt any member adds before the current epoch's first die, the GM's reveal (the
seed published, the next epoch opened), and a hidden GM roll published once its dice's epochs are
revealed. Numbering the dice is the unit of work's (`UnitOfWork.epochs`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import select, update
from sqlmodel import Session

from app.kit.errors import Conflict, NotFound
from app.models.dice_epochs import MAX_SALTS
from app.models.results.common import wire_time
from app.models.tables import LogEntry, core_table, utcnow
from app.services import epoch_store
from app.services.records import Principal
from app.services.uow import UnitOfWork

_log = core_table(LogEntry)


def list_epochs(session: Session, principal: Principal, campaign_id: str) -> dict[str, Any]:
    return {"items": [epoch_store.public(row) for row in epoch_store.every(session.connection(), campaign_id)]}


def current_if_open(session: Session, principal: Principal, campaign_id: str) -> dict[str, Any] | None:
    """The current epoch, read (a read's transaction: no write lock), or None if the campaign has none
    yet (`current_epoch` opens it)."""
    row = epoch_store.current_row(session.connection(), campaign_id)
    return None if row is None else epoch_store.public(row)


def current_epoch(session: Session, principal: Principal, campaign_id: str) -> dict[str, Any]:
    """The current epoch, opened if the campaign has none (a campaign from before epochs that the
    migration missed, or whose epoch a concurrent reveal is replacing)."""
    with UnitOfWork(session, campaign_id) as uow:
        uow.campaign()  # 404 for a campaign that is gone
        row = epoch_store.current(uow.conn, campaign_id)  # opened if it has none (a bundle of an older version)
        uow.commit()
    return epoch_store.public(row)


def add_salt(session: Session, principal: Principal, campaign_id: str, salt: str) -> dict[str, Any]:
    """Any member, before the current epoch's first die (409 `epoch_started` after: the dice already
    rolled were derived without it); at most MAX_SALTS. Its row locked: a die and a salt never cross."""
    with UnitOfWork(session, campaign_id) as uow:
        uow.campaign()
        row = epoch_store.current(uow.conn, campaign_id, lock=True)
        if row["dice"] > 0:
            raise Conflict(
                f"the current dice epoch has rolled {row['dice']} dice already: a salt is added before its first "
                "die (reveal it to open the next one)",
                code="epoch_started",
            )
        if len(row["salts"]) >= MAX_SALTS:
            raise Conflict(f"the epoch has {MAX_SALTS} salts already, the most it takes", code="too_many_salts")
        salts = [*row["salts"], salt]
        epoch_store.change(uow.conn, campaign_id, row["id"], salts=salts)
        epoch = epoch_store.public({**row, "salts": salts})
        uow.record("dice_epoch.salted", {"epoch": epoch})
        uow.commit()
    return epoch


def reveal(session: Session, principal: Principal, campaign_id: str) -> dict[str, Any]:
    """GM (the route's `access`): the current epoch closed and its seed published; the next one opened (a new seed)."""
    with UnitOfWork(session, campaign_id) as uow:
        uow.campaign()
        row = epoch_store.current(uow.conn, campaign_id, lock=True)
        now = utcnow()
        epoch_store.change(uow.conn, campaign_id, row["id"], revealed_at=now)
        epoch_store.open_epoch(uow.conn, campaign_id, now)
        revealed = epoch_store.public({**row, "revealed_at": now})
        following = epoch_store.public(epoch_store.current(uow.conn, campaign_id))
        uow.record("dice_epoch.revealed", {"epoch": revealed, "next": following})
        uow.commit()
    return {**revealed, "next": following}


def server_dice(value: Any) -> Iterator[dict[str, Any]]:
    """Every server die in an entry (a dict with `epoch` and `k`), wherever the entry lists it."""
    if isinstance(value, dict):
        if "epoch" in value and "k" in value and "value" in value:
            yield value
            return
        for item in value.values():
            yield from server_dice(item)
    elif isinstance(value, list):
        for item in value:
            yield from server_dice(item)


def publish(session: Session, principal: Principal, campaign_id: str, entry_id: str) -> dict[str, Any]:
    """GM (the route's `access`): a hidden roll shown to the players, once every epoch its dice
    belong to is revealed (409 `epoch_not_revealed` before: its dice would tell the players numbers
    of an epoch still secret).
    Publishing one published already answers it again."""
    with UnitOfWork(session, campaign_id) as uow:
        uow.campaign()
        query = select(_log.c.seq, _log.c.hidden, _log.c.body).where(
            _log.c.id == entry_id, _log.c.campaign_id == campaign_id
        )
        row = uow.conn.execute(query.with_for_update()).first()
        if row is None:
            raise NotFound("no roll-log entry with this id")
        body = row.body
        if body.get("published_at"):
            return dict(body)
        if not row.hidden or not body.get("hidden"):
            # the players read it already; or it is hidden from them because of what it shows (a hidden
            # combatant, pools they may not read), not by the GM: that is no die to publish
            raise Conflict("this roll was not hidden by the GM", code="not_hidden")
        epochs = sorted({die["epoch"] for die in server_dice(body)})
        secret = [e["id"] for e in epoch_store.by_ids(uow.conn, campaign_id, epochs) if e["revealed_at"] is None]
        if secret:
            raise Conflict(
                "the roll's dice belong to an epoch not revealed yet: reveal it first",
                code="epoch_not_revealed",
                extra={"epochs": secret},
            )
        body = {**body, "published_at": wire_time(utcnow())}
        uow.conn.execute(update(_log).where(_log.c.seq == row.seq).values(hidden=False, body=body))
        uow.record("log.published", {"entry_id": entry_id})
        uow.commit()
    return body
