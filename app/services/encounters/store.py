"""Loading and saving one encounter, in SQLAlchemy Core.

`Fight` is the aggregate a use case works on: the encounter row (locked for
writes: `SELECT … FOR UPDATE` on PostgreSQL; SQLite writers are serialized by
`BEGIN IMMEDIATE`), its combatants, and the characters it needed (sheets locked
when it writes them). `save` writes what changed: combatants, sheets (each
`UPDATE … WHERE id = ? AND version = ?`, a lost race retried by the caller),
and the encounter with its version + 1.

The character loader and versioned sheet writer here are this package's own
(the characters repository is being reworked); they speak to the same table."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select, update

from app.kit.errors import NotFound
from app.models.encounters import EncounterOptions
from app.models.tables import (
    Campaign,
    Character,
    Combatant,
    Encounter,
    EncounterAction,
    LogEntry,
    new_id,
)
from app.services.encounters.rulesets import EncounterRules, rules_for
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
_CHARACTER_COLUMNS = (_chr.c.id, _chr.c.campaign_id, _chr.c.name, _chr.c.kind, _chr.c.player_id, _chr.c.sheet,
                      _chr.c.version)


class Retry(Exception):
    """A sheet changed between our read and our write: the use case runs again on fresh state."""


@dataclass
class Fight:
    encounter: dict[str, Any]
    ruleset: str
    campaign_options: dict[str, Any]
    combatants: list[dict[str, Any]]
    characters: dict[str, dict[str, Any]] = field(default_factory=dict)
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

    def character_of(self, combatant: dict[str, Any]) -> dict[str, Any] | None:
        return self.characters.get(combatant["character_id"])


def load_fight(conn, encounter_id: str, *, lock: bool) -> Fight:
    """The encounter (locked when `lock`), its campaign's ruleset and options, its combatants."""
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
    return Fight(encounter=data, ruleset=ruleset, campaign_options=campaign_options or {}, combatants=combatants)


def load_characters(conn, fight: Fight, character_ids: Iterable[str], *, lock: bool) -> None:
    """Load (and lock, in id order against deadlocks) the characters not loaded yet."""
    wanted = sorted({cid for cid in character_ids if cid not in fight.characters})
    if not wanted:
        return
    query = select(*_CHARACTER_COLUMNS).where(_chr.c.id.in_(wanted)).order_by(_chr.c.id)
    if lock:
        query = query.with_for_update()
    for row in conn.execute(query):
        if row.campaign_id == fight.campaign_id:
            fight.characters[row.id] = dict(row._mapping)


def campaign_characters(conn, campaign_id: str, character_ids: list[str], *, lock: bool = False) -> dict[str, dict]:
    query = select(*_CHARACTER_COLUMNS).where(_chr.c.id.in_(sorted(set(character_ids)))).order_by(_chr.c.id)
    if lock:
        query = query.with_for_update()
    return {r.id: dict(r._mapping) for r in conn.execute(query) if r.campaign_id == campaign_id}


def owners(conn, character_ids: Iterable[str]) -> dict[str, str | None]:
    """character id -> its player (for visibility), one query."""
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


def insert_character(conn, campaign_id: str, name: str, sheet: dict[str, Any], now) -> dict[str, Any]:
    row = {"id": new_id(), "campaign_id": campaign_id, "player_id": None, "name": name, "kind": "npc",
           "sheet": sheet, "version": 1, "created_at": now, "updated_at": now}
    conn.execute(insert(_chr), row)
    return row


def next_ordinal(fight: Fight) -> int:
    return max((c["ordinal"] for c in fight.combatants), default=0) + 1


def next_action_seq(conn, encounter_id: str) -> int:
    return (conn.execute(select(func.max(_act.c.seq)).where(_act.c.encounter_id == encounter_id)).scalar() or 0) + 1


_UPDATE_SHEET = (
    update(_chr)
    .where(_chr.c.id == bindparam("cid"), _chr.c.version == bindparam("expected"))
    .values(sheet=bindparam("sheet"), version=bindparam("new_version"), updated_at=bindparam("now"))
)


def save(conn, fight: Fight, now) -> int:
    """Write what the use case changed and bump the encounter's version; returns it."""
    for character_id in sorted(fight.dirty_sheets):
        ch = fight.characters[character_id]
        result = conn.execute(_UPDATE_SHEET, {"cid": character_id, "expected": ch["version"], "sheet": ch["sheet"],
                                              "new_version": ch["version"] + 1, "now": now})
        if result.rowcount != 1:
            raise Retry()
        ch["version"] += 1
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
        raise Retry()
    enc["version"], enc["updated_at"] = version, now
    return version


def insert_action(conn, fight: Fight, body: dict[str, Any], *, changes: list[dict[str, Any]], log_hidden: bool,
                  character_id: str | None, reverts: str | None, now) -> None:
    """The action row (the stack) and its roll-log entry (`kind: "combat"`, same id)."""
    conn.execute(insert(_act), {
        "id": body["id"], "encounter_id": fight.id, "seq": next_action_seq(conn, fight.id), "type": body["type"],
        "hidden": body["hidden"], "changes": changes, "reverts": reverts, "reverted_by": None, "created_at": now,
    })
    conn.execute(insert(_log), {
        "id": body["id"], "campaign_id": fight.campaign_id, "character_id": character_id, "kind": "combat",
        "hidden": log_hidden, "created_at": now, "body": body, "rerolls": None,
    })


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
