"""Loading and saving one encounter, in SQLAlchemy Core.

`Fight` is the aggregate a use case works on: the encounter row (locked for
writes: `SELECT … FOR UPDATE` on PostgreSQL; SQLite writers are serialized by
`BEGIN IMMEDIATE`), its combatants — read when first asked: all of them, or only
those an action names (an attack in a fight of 200 reads two rows, not 200) — and
the characters it needed, loaded (and locked when it writes them) by the app's
one `CharacterRepository`. `save`
writes what changed: combatants, sheets (the repository's versioned writer: a
lost race is `StaleVersion`, retried on fresh state by `retried`), and the
encounter with its version + 1 (a lost race there is `StaleVersion` too)."""
from __future__ import annotations

from collections.abc import Iterable
from copy import deepcopy
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, update

from app.kit.errors import NotFound
from app.models.encounters import EncounterOptions
from app.models.tables import (
    Campaign,
    Character,
    Combatant,
    Encounter,
    EncounterAction,
    LogEntry,
)
from app.services.encounters.rulesets import EncounterRules, rules_for
from app.services.prepared import Prepared
from app.services.uow import CharacterRepository, RollLog, StaleVersion, StoredCharacter
from app.services.validation import InvalidBody

_enc = Encounter.__table__
_cbt = Combatant.__table__
_chr = Character.__table__
_act = EncounterAction.__table__
_camp = Campaign.__table__
_log = LogEntry.__table__

ENCOUNTER_FIELDS = ("status", "round", "turn_order", "current_turn", "name", "options")
COMBATANT_FIELDS = ("side", "hidden", "position", "initiative", "initiative_override", "actions", "reaction",
                    "conditions", "counters")

# the statements of every write, built once (an action runs each of them)
_LOAD = (select(_enc, _camp.c.ruleset, _camp.c.options.label("campaign_options"))
         .join(_camp, _camp.c.id == _enc.c.campaign_id).where(_enc.c.id == bindparam("encounter_id")))
_LOAD_LOCKED = _LOAD.with_for_update(of=_enc)
_COMBATANTS = select(*[c for c in _cbt.c if c.name != "created_at"]).where(
    _cbt.c.encounter_id == bindparam("encounter_id")).order_by(_cbt.c.ordinal)
_SOME_COMBATANTS = select(*_COMBATANTS.selected_columns).where(
    _cbt.c.encounter_id == bindparam("encounter_id"), _cbt.c.id.in_(bindparam("ids", expanding=True)))
_UPDATE_COMBATANT = update(_cbt).where(_cbt.c.id == bindparam("combatant_id"))
_UPDATE_ENCOUNTER = update(_enc).where(_enc.c.id == bindparam("encounter_id"),
                                       _enc.c.version == bindparam("old_version"))
# on the DBAPI cursor (app.services.prepared): an action's reads, and its writes when nothing but
# the version of the encounter changes (an attack: the turn order of 200 is not written back)
_FAST_LOAD = Prepared(_LOAD)
_FAST_LOAD_LOCKED = Prepared(_LOAD_LOCKED)
_LOAD_NAMES = [c.name for c in _LOAD.selected_columns]
_FAST_ONE_COMBATANT = Prepared(select(*_COMBATANTS.selected_columns).where(
    _cbt.c.encounter_id == bindparam("encounter_id"), _cbt.c.id == bindparam("combatant_id")))
_COMBATANT_NAMES = [c.name for c in _COMBATANTS.selected_columns]
_FAST_BUMP_ENCOUNTER = Prepared(_UPDATE_ENCOUNTER.values(version=bindparam("version"),
                                                         updated_at=bindparam("updated_at")))
_FAST_INSERT_ACTION = Prepared(insert(_act))


@dataclass
class Fight:
    encounter: dict[str, Any]
    ruleset: str
    campaign_options: dict[str, Any]
    repository: CharacterRepository
    every: list[dict[str, Any]] | None = None  # every combatant, in order, once read (None: not yet)
    characters: dict[str, StoredCharacter] = field(default_factory=dict)
    dirty_combatants: set[str] = field(default_factory=set)
    dirty_sheets: set[str] = field(default_factory=set)
    new_combatants: list[dict[str, Any]] = field(default_factory=list)
    removed_combatants: list[str] = field(default_factory=list)
    _options: tuple[dict[str, Any], EncounterOptions] | None = field(default=None, repr=False)
    _read: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)  # combatants read one by one
    stored: dict[str, Any] = field(default_factory=dict, repr=False)  # the encounter's fields as last written

    @property
    def id(self) -> str:
        return self.encounter["id"]

    @property
    def campaign_id(self) -> str:
        return self.encounter["campaign_id"]

    @property
    def rules(self) -> EncounterRules:
        return rules_for(self.ruleset)

    @property
    def options(self) -> EncounterOptions:
        """The encounter's options as its ruleset's model (validated again only when they changed)."""
        raw = self.encounter["options"]
        if self._options is None or self._options[0] != raw:
            self._options = (deepcopy(raw), self.rules.Options.model_validate(raw))
        return self._options[1]

    @property
    def combatants(self) -> list[dict[str, Any]]:
        """Every combatant, in the order they were added (read on first use; the ones already read
        alone are kept as they are, with what the use case changed on them)."""
        if self.every is None:
            rows = self.repository.conn.execute(_COMBATANTS, {"encounter_id": self.id})
            self.every = [self._read.setdefault(r.id, dict(r._mapping)) for r in rows]
        return self.every

    def some(self, combatant_ids: Iterable[str | None]) -> list[dict[str, Any]]:
        """These combatants (the unknown ones left out), in the order they were added: read in one
        query when the fight's combatants were not all read."""
        wanted = {cid for cid in combatant_ids if cid is not None}
        if self.every is not None:
            return [c for c in self.every if c["id"] in wanted]
        missing = sorted(wanted - self._read.keys())
        conn = self.repository.conn
        if len(missing) == 1:
            row = _FAST_ONE_COMBATANT.first(conn, {"encounter_id": self.id, "combatant_id": missing[0]})
            if row is not None:
                self._read[missing[0]] = dict(zip(_COMBATANT_NAMES, row))
        elif missing:
            for r in conn.execute(_SOME_COMBATANTS, {"encounter_id": self.id, "ids": missing}):
                self._read.setdefault(r.id, dict(r._mapping))
        return sorted((self._read[cid] for cid in wanted if cid in self._read), key=lambda c: c["ordinal"])

    def in_memory(self) -> list[dict[str, Any]]:
        """The combatants read so far (what a save may have to write)."""
        return self.every if self.every is not None else list(self._read.values())

    def combatant(self, combatant_id: str | None, field_: str = "combatant_id") -> dict[str, Any]:
        """A combatant of this encounter; 422 naming the field for an unknown one."""
        if self.every is None and combatant_id in self._read:
            return self._read[combatant_id]
        found = self.some([combatant_id]) if isinstance(combatant_id, str) else []
        if not found:
            raise InvalidBody(f"no combatant {combatant_id!r} in this encounter", field=field_)
        return found[0]

    def character_of(self, combatant: dict[str, Any]) -> StoredCharacter | None:
        return self.characters.get(combatant["character_id"])

    def set_sheet(self, character: StoredCharacter, sheet: dict[str, Any]) -> StoredCharacter:
        """The character's sheet as the use case changed it (written, versioned, by `save`)."""
        changed = replace(character, sheet=sheet)
        self.characters[character.id] = changed
        self.dirty_sheets.add(character.id)
        return changed


def load_fight(conn, encounter_id: str, *, lock: bool, characters: CharacterRepository | None = None) -> Fight:
    """The encounter (locked when `lock`), its campaign's ruleset and options (its combatants are
    read when asked); its characters are read by `characters` (the unit of work's), else a
    repository of its campaign."""
    row = (_FAST_LOAD_LOCKED if lock else _FAST_LOAD).first(conn, {"encounter_id": encounter_id})
    if row is None:
        raise NotFound("no encounter with this id")
    data = dict(zip(_LOAD_NAMES, row))
    ruleset, campaign_options = data.pop("ruleset"), data.pop("campaign_options")
    if characters is None or characters.campaign_id != data["campaign_id"]:
        characters = CharacterRepository(conn, data["campaign_id"])
    return Fight(encounter=data, ruleset=ruleset, campaign_options=campaign_options or {}, repository=characters,
                 stored={k: data[k] for k in ENCOUNTER_FIELDS})


def load_characters(fight: Fight, character_ids: Iterable[str], *, lock: bool) -> None:
    """Load (and lock, in id order against deadlocks) the characters not loaded yet; a
    deleted one stays absent."""
    wanted = [cid for cid in set(character_ids) if cid not in fight.characters]
    fight.characters.update(fight.repository.find(wanted, lock=lock))


def owners(conn, character_ids: Iterable[str]) -> dict[str, str | None]:
    """character id -> its player (for visibility), one query of that column only."""
    ids = sorted(set(character_ids))
    if not ids:
        return {}
    return {r.id: r.player_id for r in conn.execute(select(_chr.c.id, _chr.c.player_id).where(_chr.c.id.in_(ids)))}


def numbered_names(conn, campaign_id: str, base: str, count: int) -> list[str]:
    """"Goblin 1…N", numbered after the campaign's highest "Goblin <k>" already there."""
    taken = conn.execute(select(_chr.c.name).where(_chr.c.campaign_id == campaign_id,
                                                   _chr.c.name.like(base.replace("%", "_") + " %"))).scalars()
    prefix = base + " "
    highest = max((int(n[len(prefix):]) for n in taken if n.startswith(prefix) and n[len(prefix):].isascii()
                   and n[len(prefix):].isdigit() and len(n) - len(prefix) <= 6), default=0)
    return [f"{base} {highest + k}" for k in range(1, count + 1)]


def next_ordinal(fight: Fight) -> int:
    return max((c["ordinal"] for c in fight.combatants), default=0) + 1


def save(conn, fight: Fight, now) -> int:
    """Write what the use case changed (the encounter's fields that differ from those read: the
    order of 200 combatants is not written back by an attack) and bump its version; returns it."""
    for character_id in sorted(fight.dirty_sheets):
        ch = fight.characters[character_id]
        fight.characters[character_id] = fight.repository.save(ch, sheet=ch.sheet, now=now)
    fight.dirty_sheets.clear()
    if fight.removed_combatants:
        conn.execute(delete(_cbt).where(_cbt.c.id.in_(fight.removed_combatants)))
    if fight.new_combatants:
        conn.execute(insert(_cbt), fight.new_combatants)
    new_ids = {c["id"] for c in fight.new_combatants}
    dirty = [{"combatant_id": c["id"], **{k: c[k] for k in COMBATANT_FIELDS}} for c in fight.in_memory()
             if c["id"] in fight.dirty_combatants and c["id"] not in new_ids]
    if dirty:
        conn.execute(_UPDATE_COMBATANT, dirty)
    fight.dirty_combatants.clear()
    enc = fight.encounter
    version = enc["version"] + 1
    changed = {k: enc[k] for k in ENCOUNTER_FIELDS if k not in fight.stored or enc[k] != fight.stored[k]}
    params = {"encounter_id": enc["id"], "old_version": enc["version"], **changed, "version": version,
              "updated_at": now}
    result = conn.execute(_UPDATE_ENCOUNTER, params) if changed else _FAST_BUMP_ENCOUNTER.run(conn, params)
    if result.rowcount != 1:
        raise StaleVersion(enc["id"])
    enc["version"], enc["updated_at"] = version, now
    fight.stored.update(changed)
    return version


def insert_action(conn, log: RollLog, fight: Fight, body: dict[str, Any], *, changes: list[dict[str, Any]],
                  log_hidden: bool, character_id: str | None, others: list[str], reverts: str | None, now) -> None:
    """The action row (the stack) and its roll-log entry (`kind: "combat"`, same id; `others`:
    the other characters involved, so filtering the log by character finds it). Its place in the
    stack (`seq`) is the encounter's version it made: unique, increasing, and no query."""
    _FAST_INSERT_ACTION.run(conn, {
        "id": body["id"], "encounter_id": fight.id, "seq": body["encounter_version"], "type": body["type"],
        "hidden": body["hidden"], "changes": changes, "reverts": reverts, "reverted_by": None, "created_at": now,
    })
    log.append(body, character_id=character_id, hidden=log_hidden, created_at=now,
               others=[cid for cid in others if cid != character_id])


def latest_action(conn, encounter_id: str):
    """The latest action that is not a revert and not reverted (the one a revert may undo)."""
    return conn.execute(
        select(_act).where(_act.c.encounter_id == encounter_id, _act.c.type != "revert", _act.c.reverted_by.is_(None))
        .order_by(_act.c.seq.desc()).limit(1)).first()


def action_row(conn, encounter_id: str, action_id: str):
    return conn.execute(select(_act).where(_act.c.id == action_id, _act.c.encounter_id == encounter_id)).first()


def mark_reverted(conn, action_id: str, by: str) -> None:
    conn.execute(update(_act).where(_act.c.id == action_id).values(reverted_by=by))


def action_page(conn, encounter_id: str, *, before_seq: int | None, limit: int):
    """Actions newest first, with their logged bodies: (seq, body, reverted_by)."""
    query = (select(_act.c.seq, _act.c.reverted_by, _log.c.body).join(_log, _log.c.id == _act.c.id)
             .where(_act.c.encounter_id == encounter_id))
    if before_seq is not None:
        query = query.where(_act.c.seq < before_seq)
    return conn.execute(query.order_by(_act.c.seq.desc()).limit(limit + 1)).all()


def insert_encounter(conn, row: dict[str, Any]) -> None:
    conn.execute(insert(_enc), row)


def encounter_page(conn, campaign_id: str, *, status: str | None, after: tuple | None, limit: int):
    """Newest first, keyset on (created_at, id)."""
    query = select(_enc).where(_enc.c.campaign_id == campaign_id)
    if status is not None:
        query = query.where(_enc.c.status == status)
    if after is not None:
        stamp, last_id = after
        query = query.where((_enc.c.created_at < stamp) | ((_enc.c.created_at == stamp) & (_enc.c.id < last_id)))
    return conn.execute(query.order_by(_enc.c.created_at.desc(), _enc.c.id.desc()).limit(limit + 1)).all()
