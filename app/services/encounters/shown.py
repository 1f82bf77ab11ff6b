"""The encounters that show a character (it is one of their combatants): a change of that
character outside the fight (a GM's or its owner's PATCH: sheet, name, kind, owner,
player_access; its deletion; a roll or another fight changing its sheet) changes what their view
shows, so it moves each one's version, hence its ETag (a client's `If-None-Match` does not get a
stale 304) and sends its `encounter.updated`, in the character's transaction.

`FightLocks` decides in which order those fights are locked; `move` moves them. Only the unit of
work's handler of what changed (`app.services.handlers`) moves them: no use case does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import bindparam, update

from app.core.prepared import Prepared
from app.models.seen import bumped
from app.models.tables import Encounter, core_table, utcnow
from app.services.locks import Showing
from app.services.uow import UnitOfWork

_enc = core_table(Encounter)
_MOVE = Prepared(  # prepared: it may run in a unit of work's `writes()` batch (an action's)
    update(_enc)
    .where(_enc.c.id == bindparam("encounter_id"), _enc.c.version == bindparam("old_version"))
    .values(version=bindparam("new_version"), updated_at=bindparam("now"), player_versions=bindparam("seen"))
)

# whether the other players' view of the change is the same in a fight of this `hp_visibility`
# (a sheet edit a `status` fight shows as the same words): then only the owners are told
Quiet = Callable[[str], bool]

# what a character's view in an encounter reads (`view.combatant_state`): a change of its metadata alone moves none
SHOWN_FIELDS = ("name", "kind", "player_id", "sheet", "player_access")


def shows_a_change(before: Any, after: Any) -> bool:
    """Whether this change of a character changes what an encounter shows."""
    return any(getattr(before, k) != getattr(after, k) for k in SHOWN_FIELDS)


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
