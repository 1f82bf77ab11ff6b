"""The order in which a campaign's writers take their locks on PostgreSQL, decided here (SQLite's
writer holds the whole database already):

  1. the campaign's row FOR NO KEY UPDATE: its own changes (options, players, tokens, deletion),
     serialised among themselves (`uow.load_campaign(for_update=True)`), and a character given to a
     player (its creation or its PATCH naming one: `characters.hold_players`), so a player's removal
     never meets a character given to it after it listed the player's own;
  2. encounters' rows, then characters' rows, in id order (the unit of work's repository; the
     fights showing a changed character: `FightLocks`);
  3. FOR KEY SHARE on the campaign's row, taken by the foreign key of every insert under it
     (a log entry, an event, a player, a character…), before and after 4;
  4. the campaign's event counter's row (`events.record`), the last one.

NO KEY UPDATE does not conflict with KEY SHARE, so 1 never makes a writer wait in 3 while it
holds 4 (two player creations beside a sheet edit deadlocked so). The deletion alone needs the
row FOR UPDATE: it takes it after every row of 2 (`campaigns._lock_for_deletion`), and never takes 4."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from sqlalchemy import bindparam, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from app.models.tables import Character, Combatant, Encounter, core_table

NO_KEY_UPDATE = {"key_share": True}  # 1: `session.get(Campaign, id, with_for_update=NO_KEY_UPDATE)`


class StaleVersion(Exception):
    """Another writer changed the character between our read and our write (or holds a fight this
    write must move: `FightLocks.showing`); `uow.retried` runs the use case again."""


_enc = core_table(Encounter)
_cbt = core_table(Combatant)
_chr = core_table(Character)

_SHOWING = (  # the encounters showing any of `character_ids`, locked in id order
    select(
        _enc.c.id,
        _enc.c.version,
        _cbt.c.hidden,
        _enc.c.options,
        _enc.c.player_versions,
        _chr.c.player_id,
        _cbt.c.character_id,
    )
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
# an encounter and those showing any of `character_ids`, locked in id order (a fight's write's first
# statement, when an earlier attempt found one of those fights held elsewhere: `FightLocks.first`)
_WITH_SHOWING = (
    select(_enc.c.id)
    .where(
        or_(
            _enc.c.id == bindparam("encounter_id"),
            _enc.c.id.in_(
                select(_cbt.c.encounter_id).where(_cbt.c.character_id.in_(bindparam("character_ids", expanding=True)))
            ),
        ),
        _enc.c.campaign_id == bindparam("campaign_id"),  # never another campaign's fight
    )
    .order_by(_enc.c.id)
    .with_for_update(of=_enc)
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


class FightLocks:
    """The order in which a campaign's writers lock fights and characters on PostgreSQL, decided here
    alone (SQLite's writers take turns: there it changes nothing). A fight's write locks its fight,
    then its characters (`store.load_fight`); so every writer that moves a fight showing a character
    it changes takes those fights BEFORE the character, or, once the character is locked, without
    waiting:

    - a character's own writer (its edit, its deletion, a player's removal, a revert deleting NPC
      copies) knows its characters first: `before(ids)`, then the characters, then `showing(ids)`,
      which also takes any fight that added one of them meanwhile (that fight committed since);
    - a rolling operation or a fight's write locks its characters first (the hot path: one statement)
      and learns their other fights after: `showing(ids)` takes them without waiting, and one held
      elsewhere (by an action of that fight, which waits for these characters: a deadlock) ends the
      attempt (StaleVersion): `retried` runs it again with those characters' fights locked before
      them (`first`, kept across attempts; `start`).

    The campaign's current dice epoch (`epoch_store.claim`) is locked at an attempt's first server die,
    after the fights and characters it locks up front and before the event counter; the fights it
    moves after that are taken without waiting (`showing`), so a writer holding the epoch never waits
    for a writer that waits for it.

    The fights of each character are read once per attempt until they move (`showing` keeps them: no
    fight adds a locked character, as a fight adding one locks it first).

    A fight's version (its ETag, what `If-Match` compares, each action's `encounter_version`) lives on
    its row: a marker on a row every writer takes last (as the event counter) would spare this order,
    but every read of a fight would then sum two rows and an action would number itself under that
    lock, after its body is built."""

    def __init__(self) -> None:
        self.first: set[str] = set()  # characters whose fights the next attempts lock before them
        self.held: set[str] = set()  # characters whose fights this attempt locked before them
        self.alone: set[str] = set()  # characters known to be in no fight to move (nothing to read)
        self.found: dict[str, list[Any]] = {}  # character id -> the rows of its fights, locked

    def start(self, conn: Connection, campaign_id: str) -> None:
        """A new attempt (its transaction's connection): nothing locked yet."""
        self.conn, self.campaign_id = conn, campaign_id
        self.held.clear()
        self.alone.clear()
        self.found.clear()

    def before(self, character_ids: Iterable[str], *, encounter_id: str | None = None) -> None:
        """The fights showing these characters locked in id order (with the encounter `encounter_id`,
        a fight's write's own, when given), before any of them is locked."""
        ids = sorted(set(character_ids))
        if encounter_id is not None:
            self.conn.execute(
                _WITH_SHOWING, {"encounter_id": encounter_id, "character_ids": ids, "campaign_id": self.campaign_id}
            )
        elif ids:
            self.conn.execute(_SHOWING, {"character_ids": ids, "campaign_id": self.campaign_id})
        self.held.update(ids)

    def retried_first(self, *, encounter_id: str | None = None) -> None:
        """At an attempt's start: the fights of the characters an earlier attempt found held elsewhere,
        locked before anything else (with the encounter, for a fight's write)."""
        if self.first:
            self.before(self.first, encounter_id=encounter_id)

    def known(self, *, held: Iterable[str] = (), alone: Iterable[str] = ()) -> None:
        """What the writer's first statement learnt: characters whose fights it locked with it (`held`),
        characters in no fight it must move (`alone`)."""
        self.held.update(held)
        self.alone.update(alone)

    def showing(self, character_ids: Iterable[str]) -> Showing:
        """The fights showing any of these characters (locked), once the characters are locked: each
        fight once, in id order, hidden when each of them is hidden there. Waits for the fights of
        characters in `held`; for others, a fight held elsewhere raises StaleVersion (see above)."""
        ids = sorted({cid for cid in character_ids if cid not in self.alone})
        wanted = [cid for cid in ids if cid not in self.found]
        if wanted:
            params = {"character_ids": wanted, "campaign_id": self.campaign_id}
            if self.held.issuperset(wanted):
                rows = list(self.conn.execute(_SHOWING, params))
            else:
                try:
                    rows = list(self.conn.execute(_SHOWING_NOW, params))
                except DBAPIError as e:
                    if getattr(e.orig, "sqlstate", None) != _LOCK_NOT_AVAILABLE:
                        raise
                    self.first.update(wanted)
                    raise StaleVersion("a fight of a character of this change") from None
            for cid in wanted:
                self.found[cid] = [r for r in rows if r.character_id == cid]
        return _gathered(sorted((r for cid in ids for r in self.found[cid]), key=lambda r: r.id))

    def moving(self, character_ids: Iterable[str]) -> None:
        """These characters' fights are being moved: their versions read here are no longer theirs (a
        later `showing` of them reads them again, still locked)."""
        for cid in character_ids:
            self.found.pop(cid, None)


_LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL: NOWAIT found the row locked


def _gathered(rows: Iterable[Any]) -> Showing:
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
