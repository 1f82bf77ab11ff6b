"""The encounters that show a character (it is one of their combatants): a change of that
character outside the fight (a GM's or its owner's PATCH: sheet, name, kind, owner,
player_access; its deletion) changes what their view shows, so it moves each one's version,
hence its ETag (a client's `If-None-Match` does not get a stale 304) and sends its
`encounter.updated`, in the character's transaction.

Lock order: an encounter write locks its encounter, then the characters it needs
(`store.load_fight`, `load_characters`); a character write that moves encounters locks
those encounters first (`lock_showing`, before the character: same order, no deadlock)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from sqlalchemy import bindparam, or_, select, update
from sqlalchemy.exc import DBAPIError

from app.core.prepared import Prepared
from app.models.seen import bumped
from app.models.tables import Character, Combatant, Encounter, core_table, utcnow
from app.services.uow import StaleVersion, UnitOfWork

_enc = core_table(Encounter)
_cbt = core_table(Combatant)
_chr = core_table(Character)

_SHOWING = (  # the encounters showing any of `character_ids`, locked in id order
    select(_enc.c.id, _enc.c.version, _cbt.c.hidden, _enc.c.options, _enc.c.player_versions, _chr.c.player_id)
    .join(_cbt, _cbt.c.encounter_id == _enc.c.id)
    .join(_chr, _chr.c.id == _cbt.c.character_id)
    .where(
        _enc.c.campaign_id == bindparam("campaign_id"),
        _cbt.c.character_id.in_(bindparam("character_ids", expanding=True)),
    )
    .order_by(_enc.c.id)
    .with_for_update(of=_enc)
)
_SHOWING_NOW = _SHOWING.with_for_update(of=_enc, nowait=True)  # PostgreSQL: a fight locked elsewhere raises
_MOVE = Prepared(  # prepared: it may run in a unit of work's `writes()` batch (an action's)
    update(_enc)
    .where(_enc.c.id == bindparam("encounter_id"), _enc.c.version == bindparam("old_version"))
    .values(version=bindparam("new_version"), updated_at=bindparam("now"), player_versions=bindparam("seen"))
)


class Shown(NamedTuple):
    """An encounter showing a changed character, as locked."""

    id: str
    version: int
    hidden: bool  # the character is hidden there (each of them, for several)
    hp_visibility: str
    player_versions: dict[str, Any]
    owners: frozenset[str]  # the players owning those characters there: they see them whole


Showing = list[Shown]
# whether the other players' view of the change is the same in a fight of this `hp_visibility`
# (a sheet edit a `status` fight shows as the same words): then only the owners are told
Quiet = Callable[[str], bool]

# what a character's view in an encounter reads (`view.combatant_state`): a change of its metadata alone moves none
SHOWN_FIELDS = ("name", "kind", "player_id", "sheet", "player_access")


def lock_showing(uow: UnitOfWork, character_id: str) -> Showing:
    """The encounters of the unit of work's campaign showing this character, locked in id order
    (call it before the character is locked)."""
    return _gathered(uow.conn.execute(_SHOWING, {"campaign_id": uow.campaign_id, "character_ids": [character_id]}))


def lock_showing_any(uow: UnitOfWork, character_ids: list[str], *, wait: bool = True) -> Showing:
    """The encounters showing any of these characters, locked in id order, each once: hidden when each
    of them is hidden there (call it before the characters are locked). `wait=False`: a fight another
    transaction holds raises at once (PostgreSQL's `lock_not_available`: `locked_elsewhere`)."""
    statement = _SHOWING if wait else _SHOWING_NOW
    return _gathered(uow.conn.execute(statement, {"campaign_id": uow.campaign_id, "character_ids": character_ids}))


def _gathered(rows: Any) -> Showing:
    """One `Shown` per encounter of these (encounter, combatant) rows, in their order."""
    found: dict[str, Shown] = {}
    for r in rows:
        owners = frozenset([r.player_id]) if r.player_id is not None else frozenset()
        was = found.get(r.id)
        if was is None:
            hp = (r.options or {}).get("hp_visibility", "exact")
            found[r.id] = Shown(r.id, r.version, r.hidden, hp, r.player_versions, owners)
        else:
            found[r.id] = was._replace(hidden=was.hidden and r.hidden, owners=was.owners | owners)
    return list(found.values())


def lock_with_showing(uow: UnitOfWork, encounter_id: str, character_ids: list[str]) -> None:
    """This encounter and those showing any of these characters, locked in id order (as an action's
    first statement locks them: before any character), for an action that found one of those fights
    held elsewhere (`record.other_fights`)."""
    showing = select(_cbt.c.encounter_id).where(_cbt.c.character_id.in_(bindparam("character_ids", expanding=True)))
    uow.conn.execute(
        select(_enc.c.id)
        .where(
            or_(_enc.c.id == bindparam("encounter_id"), _enc.c.id.in_(showing)),
            _enc.c.campaign_id == bindparam("campaign_id"),  # never another campaign's fight
        )
        .order_by(_enc.c.id)
        .with_for_update(of=_enc),
        {"encounter_id": encounter_id, "character_ids": character_ids, "campaign_id": uow.campaign_id},
    )


def locked_elsewhere(error: DBAPIError) -> bool:
    """`lock_showing_any(…, wait=False)` found a fight another transaction holds."""
    return getattr(error.orig, "sqlstate", None) == "55P03"


def lock_after(
    uow: UnitOfWork, character_ids: list[str], fights_first: set[str], *, locked_first: bool = False
) -> Showing:
    """The fights showing these characters, once the characters are locked. Those fights locked before
    them (`locked_first`: with the encounter; or the characters are in `fights_first`): `lock_joined`.
    Else without waiting:
    a fight's action locks its fight before its characters, so waiting here while holding them could
    deadlock with it (PostgreSQL answers that after its 1 s `deadlock_timeout`); one held elsewhere adds
    these characters to `fights_first` and raises StaleVersion, so the use case runs again (`retried`)
    with their fights locked before them."""
    if locked_first or fights_first.issuperset(character_ids):
        return lock_joined(uow, character_ids)
    try:
        return lock_showing_any(uow, character_ids, wait=False)
    except DBAPIError as e:
        if not locked_elsewhere(e):
            raise
        fights_first.update(character_ids)
        raise StaleVersion("a fight of a character of this change") from None


def lock_joined(uow: UnitOfWork, character_ids: list[str]) -> Showing:
    """Once these characters are locked: the encounters showing them now, locked — those locked before
    them (`lock_showing`, `lock_showing_any`) and any that added one of them while this waited for its
    lock (that combatant committed since). Those are locked after the characters, out of the encounters'
    order: a deadlock then (rare: an action of that new fight at once) is a 409 race_lost, never a
    fight whose version missed the change."""
    return lock_showing_any(uow, character_ids)


def shows_a_change(changed: dict[str, Any], before: Any) -> bool:
    """Whether these changes of a character (field -> new value) change what an encounter shows."""
    return any(k in changed and changed[k] != getattr(before, k) for k in SHOWN_FIELDS)


def move(uow: UnitOfWork, showing: Showing, *, quiet: Quiet | None = None) -> None:
    """Each encounter's version + 1, and its `encounter.updated`: to every player, or to the owners
    alone when the character is hidden there or the others' view of the change is the same (`quiet`):
    the other players' version (`seen`) does not move, so they cannot count such changes. Inside a
    `writes()` batch too."""
    now = utcnow()
    for shown in showing:
        everyone = not shown.hidden and not (quiet is not None and quiet(shown.hp_visibility))
        told = bumped(shown.player_versions, everyone=everyone, owners=shown.owners)
        params = {"encounter_id": shown.id, "old_version": shown.version, "new_version": shown.version + 1}
        _MOVE.run(uow.conn, {**params, "now": now, "seen": told})
        data = {"id": shown.id, "version": shown.version + 1}
        if everyone:
            uow.record("encounter.updated", data, player_versions=told)
        elif not shown.owners:
            uow.record("encounter.updated", data, hidden=True)
        for owner in [] if everyone else sorted(shown.owners):  # (one, but for a change of several characters)
            uow.record("encounter.updated", data, hidden=True, owner_id=owner, player_versions=told)
