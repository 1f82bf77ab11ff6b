"""Loading and saving one encounter, in SQLAlchemy Core.

`Fight` is the aggregate a use case works on: the encounter row (locked for
writes: `SELECT … FOR UPDATE` on PostgreSQL; SQLite writers are serialized by
`BEGIN IMMEDIATE`), its combatants, and the characters it needed, loaded (and
locked when it writes them) by the app's one `CharacterRepository`. `save`
writes what changed: combatants, sheets (the repository's versioned writer: a
lost race is `StaleVersion`, retried on fresh state by `retried`), and the
encounter with its version + 1 (a lost race there is `StaleVersion` too)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import delete, func, insert, select, update

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


@dataclass
class Fight:
    encounter: dict[str, Any]
    ruleset: str
    campaign_options: dict[str, Any]
    combatants: list[dict[str, Any]]
    repository: CharacterRepository
    characters: dict[str, StoredCharacter] = field(default_factory=dict)
    dirty_combatants: set[str] = field(default_factory=set)
    dirty_sheets: set[str] = field(default_factory=set)
    new_combatants: list[dict[str, Any]] = field(default_factory=list)
    removed_combatants: list[str] = field(default_factory=list)

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
        return self.rules.Options.model_validate(self.encounter["options"])

    def combatant(self, combatant_id: str | None, field_: str = "combatant_id") -> dict[str, Any]:
        """A combatant of this encounter; 422 naming the field for an unknown one."""
        for c in self.combatants:
            if c["id"] == combatant_id:
                return c
        raise InvalidBody(f"no combatant {combatant_id!r} in this encounter", field=field_)

    def character_of(self, combatant: dict[str, Any]) -> StoredCharacter | None:
        return self.characters.get(combatant["character_id"])

    def set_sheet(self, character: StoredCharacter, sheet: dict[str, Any]) -> StoredCharacter:
        """The character's sheet as the use case changed it (written, versioned, by `save`)."""
        changed = replace(character, sheet=sheet)
        self.characters[character.id] = changed
        self.dirty_sheets.add(character.id)
        return changed


def load_fight(conn, encounter_id: str, *, lock: bool, characters: CharacterRepository | None = None) -> Fight:
    """The encounter (locked when `lock`), its campaign's ruleset and options, its combatants;
    its characters are read by `characters` (the unit of work's), else a repository of its campaign."""
    query = (select(_enc, _camp.c.ruleset, _camp.c.options.label("campaign_options"))
             .join(_camp, _camp.c.id == _enc.c.campaign_id).where(_enc.c.id == encounter_id))
    if lock:
        query = query.with_for_update(of=_enc)
    row = conn.execute(query).first()
    if row is None:
        raise NotFound("no encounter with this id")
    data = dict(row._mapping)
    ruleset, campaign_options = data.pop("ruleset"), data.pop("campaign_options")
    combatants = [dict(r._mapping) for r in conn.execute(
        select(_cbt).where(_cbt.c.encounter_id == encounter_id).order_by(_cbt.c.ordinal))]
    if characters is None or characters.campaign_id != data["campaign_id"]:
        characters = CharacterRepository(conn, data["campaign_id"])
    return Fight(encounter=data, ruleset=ruleset, campaign_options=campaign_options or {}, combatants=combatants,
                 repository=characters)


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


def next_action_seq(conn, encounter_id: str) -> int:
    return (conn.execute(select(func.max(_act.c.seq)).where(_act.c.encounter_id == encounter_id)).scalar() or 0) + 1


def save(conn, fight: Fight, now) -> int:
    """Write what the use case changed and bump the encounter's version; returns it."""
    for character_id in sorted(fight.dirty_sheets):
        ch = fight.characters[character_id]
        fight.characters[character_id] = fight.repository.save(ch, sheet=ch.sheet, now=now)
    fight.dirty_sheets.clear()
    if fight.removed_combatants:
        conn.execute(delete(_cbt).where(_cbt.c.id.in_(fight.removed_combatants)))
    if fight.new_combatants:
        conn.execute(insert(_cbt), fight.new_combatants)
    new_ids = {c["id"] for c in fight.new_combatants}
    for c in fight.combatants:
        if c["id"] in fight.dirty_combatants and c["id"] not in new_ids:
            conn.execute(update(_cbt).where(_cbt.c.id == c["id"]).values({k: c[k] for k in COMBATANT_FIELDS}))
    enc = fight.encounter
    version = enc["version"] + 1
    result = conn.execute(
        update(_enc).where(_enc.c.id == enc["id"], _enc.c.version == enc["version"])
        .values({**{k: enc[k] for k in ENCOUNTER_FIELDS}, "version": version, "updated_at": now}))
    if result.rowcount != 1:
        raise StaleVersion(enc["id"])
    enc["version"], enc["updated_at"] = version, now
    return version


def insert_action(conn, log: RollLog, fight: Fight, body: dict[str, Any], *, changes: list[dict[str, Any]],
                  log_hidden: bool, character_id: str | None, others: list[str], reverts: str | None, now) -> None:
    """The action row (the stack) and its roll-log entry (`kind: "combat"`, same id; `others`:
    the other characters involved, so filtering the log by character finds it)."""
    conn.execute(insert(_act), {
        "id": body["id"], "encounter_id": fight.id, "seq": next_action_seq(conn, fight.id), "type": body["type"],
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
