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

import typing
from collections.abc import Callable, Iterable, Sequence
from copy import deepcopy
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import (
    BindParameter,
    Connection,
    Integer,
    Row,
    Select,
    bindparam,
    cast,
    delete,
    func,
    insert,
    literal,
    select,
    union,
    update,
)

from app.core.prepared import Prepared, fetch_together
from app.kit.errors import NotFound
from app.kit.models import CampaignOptions
from app.models.encounters import EncounterOptions
from app.models.fight_rows import Change, CombatantField, CombatantRow, EncounterField, EncounterRow
from app.models.tables import (
    Campaign,
    Character,
    Combatant,
    Encounter,
    EncounterAction,
    LogEntry,
    core_table,
)
from app.models.validation import InvalidBody
from app.rules.dice import EpochClaim
from app.rulesets.contract.adapter import RulesetAdapter
from app.rulesets.contract.combat import EncounterRules
from app.rulesets.registry import get_adapter, rules_for
from app.services import epoch_store
from app.services.locks import StaleVersion
from app.services.records import StoredCharacter
from app.services.uow import CharacterRepository, RollLog
from app.services.visibility import NOT_FIGHTING, Standing, standing_in

_enc = core_table(Encounter)
_cbt = core_table(Combatant)
_chr = core_table(Character)
_act = core_table(EncounterAction)
_camp = core_table(Campaign)
_log = core_table(LogEntry)
# a row of an action or an encounter as a page or a revert reads it: its columns read by name
TableRow = Row[*tuple[Any, ...]]

ENCOUNTER_FIELDS: tuple[EncounterField, ...] = (
    "status",
    "round",
    "turn_order",
    "current_turn",
    "name",
    "options",
    "client_metadata",
    "player_versions",
)
COMBATANT_FIELDS: tuple[CombatantField, ...] = (
    "side",
    "hidden",
    "position",
    "initiative",
    "initiative_override",
    "actions",
    "reaction",
    "conditions",
    "counters",
)

# the statements of every write, built once (an action runs each of them)
_LOAD = (
    select(_enc, _camp.c.ruleset, _camp.c.options.label("campaign_options"))
    .join(_camp, _camp.c.id == _enc.c.campaign_id)
    .where(_enc.c.id == bindparam("encounter_id"))
)
# a lock names the campaign (the caller's): it never reaches another campaign's row
_LOAD_LOCKED = _LOAD.where(_enc.c.campaign_id == bindparam("campaign_id")).with_for_update(of=_enc)
_COMBATANTS = (
    select(*[c for c in _cbt.c if c.name != "created_at"])
    .where(_cbt.c.encounter_id == bindparam("encounter_id"))
    .order_by(_cbt.c.ordinal)
)
_SOME_COMBATANTS = select(*_COMBATANTS.selected_columns).where(
    _cbt.c.encounter_id == bindparam("encounter_id"), _cbt.c.id.in_(bindparam("ids", expanding=True))
)
_UPDATE_COMBATANT = update(_cbt).where(_cbt.c.id == bindparam("combatant_id"))
_UPDATE_ENCOUNTER = update(_enc).where(
    _enc.c.id == bindparam("encounter_id"), _enc.c.version == bindparam("old_version")
)

# on the DBAPI cursor (app.core.prepared): an action's reads (the encounter, the combatants its body
# names and their characters: one round trip on PostgreSQL, `fetch_together`) and its writes (one
# `writes()` batch with the COMMIT; the encounter's order of 200 combatants is not written back by an attack)
_FAST_LOAD = Prepared(_LOAD)
_FAST_LOAD_LOCKED = Prepared(_LOAD_LOCKED)
_LOAD_NAMES = [c.name for c in _LOAD.selected_columns]
_FAST_ONE_COMBATANT = Prepared(
    select(*_COMBATANTS.selected_columns).where(
        _cbt.c.encounter_id == bindparam("encounter_id"), _cbt.c.id == bindparam("combatant_id")
    )
)
_COMBATANT_NAMES = [c.name for c in _COMBATANTS.selected_columns]
_CHARACTER_COLUMNS = [_chr.c[f.name] for f in fields(StoredCharacter)]
_OF_CAMPAIGN = _chr.c.campaign_id == bindparam("campaign_id")
_FAST_CHARACTER = Prepared(select(*_CHARACTER_COLUMNS).where(_chr.c.id == bindparam("id"), _OF_CAMPAIGN))
_FAST_CHARACTER_LOCKED = Prepared(
    select(*_CHARACTER_COLUMNS).where(_chr.c.id == bindparam("id"), _OF_CAMPAIGN).with_for_update()
)
_PIPELINED = 8  # up to this many rows read one statement each, in one round trip; more: one IN query
_NAMED = 2  # the combatants of a body read (and their characters locked) with the encounter: an action's two


def _characters_named(count: int) -> Select[str]:
    """The characters of `count` combatants of an encounter (`c0`…), a subquery."""
    ids: list[BindParameter[Any]] = [bindparam(f"c{i}") for i in range(count)]
    return select(_cbt.c.character_id).where(_cbt.c.encounter_id == bindparam("encounter_id"), _cbt.c.id.in_(ids))


def _characters_of(count: int) -> Prepared:
    """The characters of `count` combatants of an encounter, locked in id order (as the repository locks
    several), read in the same round trip as the encounter's lock and the combatants (after them)."""
    return Prepared(
        select(*_CHARACTER_COLUMNS)
        .where(_chr.c.id.in_(_characters_named(count).scalar_subquery()), _OF_CAMPAIGN)
        .order_by(_chr.c.id)
        .with_for_update(of=_chr)
    )


_CHARACTERS_OF = {n: _characters_of(n) for n in range(1, _NAMED + 1)}


def _fights_of(count: int) -> Prepared:
    """The encounter and every other one showing a character of `count` of its combatants, locked in id
    order (PostgreSQL: sent first, before those characters are locked): an action that changes such a
    character moves those fights too (the unit of work's handler), and locking them in the encounters' order,
    before the characters, is what keeps two actions of two fights sharing a character from deadlocking."""
    other = _cbt.alias("other")
    showing = select(other.c.encounter_id).where(other.c.character_id.in_(_characters_named(count).scalar_subquery()))
    mine = select(cast(bindparam("encounter_id"), _enc.c.id.type))  # typed: `$1` is compared with ids below too
    fights = union(mine, showing).subquery()
    return Prepared(
        select(_enc.c.id)
        .where(_enc.c.id.in_(select(fights.c[0])), _enc.c.campaign_id == bindparam("campaign_id"))
        .order_by(_enc.c.id)
        .with_for_update()
    )


def _elsewhere_of(count: int) -> Prepared:
    """Which characters of `count` combatants of an encounter another encounter shows too: sent after
    those characters are locked, in the same round trip, so the answer holds until the commit (a fight
    adding a character locks it first: `setup._add`)."""
    other = _cbt.alias("other")
    return Prepared(
        select(other.c.character_id)
        .distinct()
        .where(
            other.c.encounter_id != bindparam("encounter_id"),
            other.c.character_id.in_(_characters_named(count).scalar_subquery()),
        )
    )


_FIGHTS_OF = {n: _fights_of(n) for n in range(1, _NAMED + 1)}
_ELSEWHERE_OF = {n: _elsewhere_of(n) for n in range(1, _NAMED + 1)}
_FAST_INSERT_ACTION = Prepared(insert(_act))
_FAST_UPDATE_COMBATANT = Prepared(_UPDATE_COMBATANT.values(**{k: bindparam(k) for k in COMBATANT_FIELDS}))
_FAST_MARK_REVERTED = Prepared(
    update(_act).where(_act.c.id == bindparam("action_id")).values(reverted_by=bindparam("reverted_by"))
)


def _encounter_update(keys: tuple[str, ...], in_batch: bool) -> Prepared:
    """The encounter's versioned update of these fields (and its version, its time), one statement per
    combination. `in_batch`: on PostgreSQL, a version found changed fails the statement itself (division
    by zero, as the character repository's save in a batch: read as StaleVersion, the batch's COMMIT
    then does not run)."""
    prepared = _ENCOUNTER_UPDATES.get((keys, in_batch))
    if prepared is None:
        statement = _UPDATE_ENCOUNTER.values(
            **{k: bindparam(k) for k in keys}, version=bindparam("version"), updated_at=bindparam("updated_at")
        )
        if in_batch:
            saved = statement.returning(_enc.c.version).cte("saved")
            failing = select(
                literal(1, Integer).op("/", return_type=Integer)(
                    select(func.count()).select_from(saved).scalar_subquery()
                )
            )
            prepared = Prepared(statement, postgresql=failing)
        else:
            prepared = Prepared(statement)
        _ENCOUNTER_UPDATES[(keys, in_batch)] = prepared
    return prepared


_ENCOUNTER_UPDATES: dict[tuple[tuple[str, ...], bool], Prepared] = {}


def clone(value: Any) -> Any:
    """A copy of a JSON value (dicts, lists, scalars): `deepcopy` without its memo, several times
    faster on a sheet."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


@dataclass
class Fight:
    encounter: EncounterRow
    ruleset: str
    campaign_options: dict[str, Any]
    repository: CharacterRepository
    every: list[CombatantRow] | None = None  # every combatant, in order, once read (None: not yet)
    characters: dict[str, StoredCharacter] = field(default_factory=dict)
    dirty_combatants: set[str] = field(default_factory=set)
    dirty_sheets: set[str] = field(default_factory=set)
    # character id -> the character as stored before the use case changed its sheet (`set_sheet`)
    originals: dict[str, StoredCharacter] = field(default_factory=dict)
    new_combatants: list[CombatantRow] = field(default_factory=list)
    removed_combatants: list[str] = field(default_factory=list)
    _options: tuple[dict[str, Any], EncounterOptions] | None = field(default=None, repr=False)
    _ruleset_options: CampaignOptions | None = field(default=None, repr=False)
    _read: dict[str, CombatantRow] = field(default_factory=dict, repr=False)  # combatants read one by one
    _absent: set[str] = field(default_factory=set, repr=False)  # ids read one by one and not found
    stored: dict[str, Any] = field(default_factory=dict, repr=False)  # the encounter's fields as last written
    # the characters whose other fights are known (locked with the encounter: `load_fight`), and those of
    # them another fight shows too (a change of their sheet moves that fight: `FightLocks.known`)
    elsewhere_known: frozenset[str] = frozenset()
    elsewhere: frozenset[str] = frozenset()
    # the campaign's dice epoch claimed (locked) with the load, after the characters it locked: no
    # other character may be locked after it (`load_characters` refuses: `EpochClaimedEarly`)
    epoch_claimed: bool = False
    # character id -> (the stored sheet, parsed into the ruleset's `Sheet`): parsed once per stored sheet
    _sheets: dict[str, tuple[dict[str, Any], Any]] = field(default_factory=dict, repr=False)

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
    def adapter(self) -> RulesetAdapter:
        return get_adapter(self.ruleset)

    def sheet_of(self, character: StoredCharacter) -> Any:
        """The character's sheet as its ruleset's `Sheet` model (combat reads typed sheets,
        each default in its model once), parsed once per stored sheet: read it, never change it
        (`sheet_copy` gives one to change)."""
        cached = self._sheets.get(character.id)
        if cached is None or cached[0] is not character.sheet:
            cached = (character.sheet, self.adapter.parse_sheet(character.sheet))
            self._sheets[character.id] = cached
        return cached[1]

    def sheet_copy(self, character: StoredCharacter) -> Any:
        """A copy of the character's typed sheet for a use case to change (a Party's): parsed from a
        copy of the stored sheet (shares nothing with it; faster than a deep copy of the model)."""
        return self.adapter.parse_sheet(clone(character.sheet))

    @property
    def ruleset_options(self) -> CampaignOptions:
        """The campaign's options as its ruleset's `Options` (`parse_options`), parsed once: what the
        encounter's rules read (each default lives in that model)."""
        if self._ruleset_options is None:
            self._ruleset_options = get_adapter(self.ruleset).parse_options(self.campaign_options)
        return self._ruleset_options

    @property
    def options(self) -> EncounterOptions:
        """The encounter's options as its ruleset's model (validated again only when they changed;
        in lax mode, as stored data is read: `RulesetAdapter.parse_sheet`)."""
        raw = self.encounter["options"]
        if self._options is None or self._options[0] != raw:
            self._options = (deepcopy(raw), self.rules.Options.model_validate(raw, strict=False))
        return self._options[1]

    @property
    def combatants(self) -> list[CombatantRow]:
        """Every combatant, in the order they were added (read on first use; the ones already read
        alone are kept as they are, with what the use case changed on them)."""
        if self.every is None:
            rows = self.repository.conn.execute(_COMBATANTS, {"encounter_id": self.id})
            self.every = [self._read.setdefault(r.id, typing.cast(CombatantRow, dict(r._mapping))) for r in rows]
        return self.every

    def some(self, combatant_ids: Iterable[str | None]) -> list[CombatantRow]:
        """These combatants (the unknown ones left out), in the order they were added: read in one
        query when the fight's combatants were not all read."""
        wanted = {cid for cid in combatant_ids if cid is not None}
        if self.every is not None:
            return [c for c in self.every if c["id"] in wanted]
        missing = sorted(wanted - self._read.keys() - self._absent)
        conn = self.repository.conn
        if len(missing) > _PIPELINED:
            for r in conn.execute(_SOME_COMBATANTS, {"encounter_id": self.id, "ids": missing}):
                self._read.setdefault(r.id, typing.cast(CombatantRow, dict(r._mapping)))
        elif missing:  # one round trip
            self.found(
                missing,
                fetch_together(
                    conn, [(_FAST_ONE_COMBATANT, {"encounter_id": self.id, "combatant_id": cid}) for cid in missing]
                ),
            )
        return sorted((self._read[cid] for cid in wanted if cid in self._read), key=lambda c: c["ordinal"])

    def found(self, ids: list[str], results: list[list[tuple]]) -> None:
        """The combatants `ids` read one by one (the rows of `_FAST_ONE_COMBATANT` for each)."""
        for cid, rows in zip(ids, results):
            if rows:
                self._read.setdefault(cid, typing.cast(CombatantRow, dict(zip(_COMBATANT_NAMES, rows[0]))))
            else:
                self._absent.add(cid)

    def in_memory(self) -> list[CombatantRow]:
        """The combatants read so far (what a save may have to write)."""
        return self.every if self.every is not None else list(self._read.values())

    def stored_standings(self) -> dict[str, Standing]:
        """The standings (`visibility.standings`) of the characters only this fight shows, from its rows
        as stored: no other fight shows them (`elsewhere`, read with their locks, so it holds until the
        commit), their combatant was read and is unchanged yet, and the encounter's options are as
        loaded (an action never changes them). What the query would read, without its round trip."""
        out: dict[str, Standing] = {}
        status, options = self.stored["status"], self.encounter["options"]
        for c in self.in_memory():
            cid = c["character_id"]
            if cid not in self.elsewhere_known or cid in self.elsewhere or c["id"] in self.dirty_combatants:
                continue
            out[cid] = standing_in(NOT_FIGHTING, hidden=c["hidden"], status=status, options=options)
        return out

    def combatant(self, combatant_id: str | None, field_: str = "combatant_id") -> CombatantRow:
        """A combatant of this encounter; 422 naming the field for an unknown one."""
        if self.every is None and combatant_id in self._read:
            return self._read[combatant_id]
        found = self.some([combatant_id]) if isinstance(combatant_id, str) else []
        if not found:
            raise unknown_combatant(combatant_id, field_)
        return found[0]

    def character_of(self, combatant: CombatantRow) -> StoredCharacter | None:
        return self.characters.get(combatant["character_id"])

    def loaded_character(self, combatant: CombatantRow) -> StoredCharacter:
        """The character of a combatant an action involves: loaded, locked, and checked to exist
        before any rule runs (a deleted one is a 409 first, `actions.act`)."""
        character = self.characters.get(combatant["character_id"])
        assert character is not None
        return character

    def set_sheet(self, character: StoredCharacter, sheet: dict[str, Any]) -> StoredCharacter:
        """The character's sheet as the use case changed it (written, versioned, by `save`)."""
        changed = replace(character, sheet=sheet)
        self.originals.setdefault(character.id, self.characters.get(character.id, character))
        self.characters[character.id] = changed
        self.dirty_sheets.add(character.id)
        return changed


def unknown_combatant(combatant_id: Any, field_: str) -> InvalidBody:
    """The refusal of an id naming no combatant here; a player naming one it may not see (a hidden
    one) gets exactly this one too (hidden things are unknown things)."""
    return InvalidBody(f"no combatant {combatant_id!r} in this encounter", field=field_, code="unknown_id")


def load_fight(
    conn: Connection,
    encounter_id: str,
    *,
    lock: bool,
    characters: CharacterRepository | None = None,
    combatants: Iterable[str] = (),
    first: Query | None = None,
    epochs: EpochClaim | None = None,
) -> Fight:
    """The encounter (locked when `lock`), its campaign's ruleset and options (its combatants are
    read when asked); its characters are read by `characters` (the unit of work's), else a
    repository of its campaign.

    In the same round trip on PostgreSQL (`fetch_together`, the BEGIN included): `first`, a
    statement sent before the others with the check of its rows (called first: the caller's
    credential); `combatants`, the ids of combatants to read with it (an action's, as its body
    names them; the unknown ones are left out) and, when `lock`, their characters, locked (in id
    order, after the encounter: as `load_characters` would lock them), then which of them another
    fight shows too (`Fight.elsewhere`). On PostgreSQL those other fights are locked first, with the
    encounter, in id order (`_fights_of`)."""
    named = sorted({c for c in combatants if isinstance(c, str) and 0 < len(c) <= 64})
    named = named if len(named) <= _NAMED else []
    params = {"encounter_id": encounter_id}
    if lock:  # every lock names the campaign, the repository's (the caller's)
        if characters is None:
            raise TypeError("a locked load names its campaign: give it the unit of work's repository")
        params["campaign_id"] = characters.campaign_id
    queries = [] if first is None else [(first[0], first[1])]
    by_number = {**params, **{f"c{i}": cid for i, cid in enumerate(named)}}
    pre_locked = lock and bool(named) and conn.dialect.name == "postgresql"  # (SQLite's writers take turns)
    if pre_locked:
        queries.append((_FIGHTS_OF[len(named)], by_number))
    queries.append((_FAST_LOAD_LOCKED if lock else _FAST_LOAD, params))
    queries += [(_FAST_ONE_COMBATANT, {**params, "combatant_id": cid}) for cid in named]
    if lock and named:
        queries += [(_CHARACTERS_OF[len(named)], by_number), (_ELSEWHERE_OF[len(named)], by_number)]
    claiming = pre_locked and epochs is not None and characters is not None
    if claiming:
        assert characters is not None
        queries.append(epoch_store.claim_query(characters.campaign_id))
    results = fetch_together(conn, queries)
    claimed = results.pop() if claiming else []
    if first is not None:
        first[2](results.pop(0))
    if pre_locked:
        results.pop(0)
    if not results[0]:
        raise NotFound("no encounter with this id")
    data = dict(zip(_LOAD_NAMES, results[0][0]))
    ruleset, campaign_options = data.pop("ruleset"), data.pop("campaign_options")
    if characters is None or characters.campaign_id != data["campaign_id"]:
        characters = CharacterRepository(conn, data["campaign_id"])
    fight = Fight(
        encounter=typing.cast(EncounterRow, data),
        ruleset=ruleset,
        campaign_options=campaign_options or {},
        repository=characters,
        stored={k: data[k] for k in ENCOUNTER_FIELDS},
    )
    fight.found(named, results[1 : 1 + len(named)])
    if lock and named:
        for row in results[-2]:
            character = StoredCharacter(*row)
            if character.campaign_id == characters.campaign_id:
                fight.characters[character.id] = character
        fight.elsewhere_known = frozenset(fight.characters)
        fight.elsewhere = frozenset(row[0] for row in results[-1])
    if claimed and epochs is not None:
        epochs.given(epoch_store.epoch_of(claimed[0]))
        fight.epoch_claimed = True
    return fight


class EpochClaimedEarly(StaleVersion):
    """An action that claimed the dice epoch with its load needs a character it did not lock there:
    locked now, it would be locked after the epoch, against the order of a test (its character,
    then the epoch). The attempt is rolled back and run again claiming the epoch at its first die."""


# a statement, its parameters and the check of its rows (see `load_fight`)
Query = tuple[Prepared, dict[str, Any], Callable[[list[tuple]], None]]


def load_characters(fight: Fight, character_ids: Iterable[str], *, lock: bool) -> None:
    """Load (and lock, in id order against deadlocks) the characters not loaded yet; a
    deleted one stays absent."""
    wanted = sorted({cid for cid in character_ids if cid not in fight.characters})
    if lock and wanted and fight.epoch_claimed:
        raise EpochClaimedEarly(fight.id)
    if len(wanted) <= 1 or len(wanted) > _PIPELINED:
        fight.characters.update(fight.repository.find(wanted, lock=lock))
        return
    read = _FAST_CHARACTER_LOCKED if lock else _FAST_CHARACTER
    campaign_id = fight.repository.campaign_id
    # one round trip; locked one by one in id order, as the repository does
    queries = [(read, {"id": cid, "campaign_id": campaign_id}) for cid in wanted]
    for rows in fetch_together(fight.repository.conn, queries):
        for row in rows:
            character = StoredCharacter(*row)
            if character.campaign_id == fight.repository.campaign_id:
                fight.characters[character.id] = character


def owners(conn: Connection, character_ids: Iterable[str]) -> dict[str, str | None]:
    """character id -> its player (for visibility), one query of that column only."""
    ids = sorted(set(character_ids))
    if not ids:
        return {}
    return {r.id: r.player_id for r in conn.execute(select(_chr.c.id, _chr.c.player_id).where(_chr.c.id.in_(ids)))}


def numbered_names(conn: Connection, campaign_id: str, base: str, count: int) -> list[str]:
    """ "Goblin 1…N", numbered after the campaign's highest "Goblin <k>" already there."""
    taken = conn.execute(
        select(_chr.c.name).where(_chr.c.campaign_id == campaign_id, _chr.c.name.like(base.replace("%", "_") + " %"))
    ).scalars()
    prefix = base + " "
    highest = max(
        (
            int(n[len(prefix) :])
            for n in taken
            if n.startswith(prefix)
            and n[len(prefix) :].isascii()
            and n[len(prefix) :].isdigit()
            and len(n) - len(prefix) <= 6
        ),
        default=0,
    )
    return [f"{base} {highest + k}" for k in range(1, count + 1)]


def next_ordinal(fight: Fight) -> int:
    return max((c["ordinal"] for c in fight.combatants), default=0) + 1


def write_roster(conn: Connection, fight: Fight) -> None:
    """The combatants added or removed, written now: an action that adds or removes some (`join`
    and its revert) writes them before its save is handed to the batch."""
    if fight.removed_combatants:
        conn.execute(delete(_cbt).where(_cbt.c.id.in_(fight.removed_combatants)))
        fight.removed_combatants.clear()
    if fight.new_combatants:
        conn.execute(insert(_cbt), fight.new_combatants)
        fight.new_combatants.clear()


def save(
    conn: Connection, fight: Fight, now: datetime, *, later: Callable[[Callable[[], object]], None] | None = None
) -> int:
    """Write what the use case changed (the encounter's fields that differ from those read: the
    order of 200 combatants is not written back by an attack) and bump its version; returns it.

    `later`: the statements are handed to it (to run in the unit of work's `writes()` batch, in
    this order) instead of running now; the fight in memory is what they will have written
    either way. Combatants added or removed are written now (Core's executemany)."""
    run = later or _now
    for character_id in sorted(fight.dirty_sheets):
        ch = fight.characters[character_id]
        run(partial(fight.repository.save, ch, sheet=ch.sheet, now=now))
        fight.characters[character_id] = replace(ch, version=ch.version + 1, updated_at=now)  # what `save` returns
    fight.dirty_sheets.clear()
    if (fight.removed_combatants or fight.new_combatants) and later is not None:
        raise RuntimeError("combatants are added or removed by a save that runs now (or `write_roster` first)")
    new_ids = {c["id"] for c in fight.new_combatants}
    write_roster(conn, fight)
    for c in fight.in_memory():
        if c["id"] in fight.dirty_combatants and c["id"] not in new_ids:
            run(
                partial(
                    _FAST_UPDATE_COMBATANT.run, conn, {"combatant_id": c["id"], **{k: c[k] for k in COMBATANT_FIELDS}}
                )
            )
    fight.dirty_combatants.clear()
    enc = fight.encounter
    version = enc["version"] + 1
    changed: dict[str, Any] = {
        k: enc[k] for k in ENCOUNTER_FIELDS if k not in fight.stored or enc[k] != fight.stored[k]
    }
    params = {
        "encounter_id": enc["id"],
        "old_version": enc["version"],
        **changed,
        "version": version,
        "updated_at": now,
    }
    run(partial(_bump, conn, fight.repository, tuple(changed), params))
    enc["version"], enc["updated_at"] = version, now
    fight.stored.update(changed)
    return version


def _now(write: Callable[[], object]) -> None:
    write()


def _bump(conn: Connection, repository: CharacterRepository, keys: tuple[str, ...], params: dict[str, Any]) -> None:
    """The encounter's versioned update: StaleVersion if its version is not the one read (in the unit
    of work's batch: when the batch is sent, nothing committed)."""
    in_batch = repository.batch
    cursor = _encounter_update(keys, in_batch is not None).run(conn, params)

    def stale() -> None:
        raise StaleVersion(params["encounter_id"])

    if in_batch is not None:
        in_batch.expect_one(cursor, stale)
    elif cursor.rowcount != 1:
        stale()


def insert_action(
    conn: Connection,
    log: RollLog,
    fight: Fight,
    body: dict[str, Any],
    *,
    changes: list[Change],
    log_hidden: bool,
    character_id: str | None,
    others: list[str],
    reverts: str | None,
    now: datetime,
    seen_versions: dict[str, Any] | None = None,
) -> None:
    """The action row (the stack) and its roll-log entry (`kind: "combat"`, same id; `others`:
    the other characters involved, so filtering the log by character finds it). Its place in the
    stack (`seq`) is the encounter's version it made: unique, increasing, and no query."""
    _FAST_INSERT_ACTION.run(
        conn,
        {
            "id": body["id"],
            "encounter_id": fight.id,
            "seq": body["encounter_version"],
            "type": body["type"],
            "hidden": body["hidden"],
            "changes": changes,
            "reverts": reverts,
            "reverted_by": None,
            "seen_versions": seen_versions,
            "created_at": now,
        },
    )
    log.append(
        body,
        character_id=character_id,
        hidden=log_hidden,
        created_at=now,
        others=[cid for cid in others if cid != character_id],
    )


def latest_action(conn: Connection, encounter_id: str) -> TableRow | None:
    """The latest action that is not a revert and not reverted (the one a revert may undo)."""
    return conn.execute(
        select(_act)
        .where(_act.c.encounter_id == encounter_id, _act.c.type != "revert", _act.c.reverted_by.is_(None))
        .order_by(_act.c.seq.desc())
        .limit(1)
    ).first()


def action_row(conn: Connection, encounter_id: str, action_id: str) -> TableRow | None:
    """The action's row with its logged body (`body`), or None."""
    return conn.execute(_WITH_BODY.where(_act.c.id == action_id, _act.c.encounter_id == encounter_id)).first()


def mark_reverted(conn: Connection, action_id: str, by: str) -> None:
    _FAST_MARK_REVERTED.run(conn, {"action_id": action_id, "reverted_by": by})


_WITH_BODY = select(_act, _log.c.body).join(_log, _log.c.id == _act.c.id)


def action_page(conn: Connection, encounter_id: str, *, before_seq: int | None, limit: int) -> Sequence[TableRow]:
    """Actions newest first, with their logged bodies (`body`)."""
    query = _WITH_BODY.where(_act.c.encounter_id == encounter_id)
    if before_seq is not None:
        query = query.where(_act.c.seq < before_seq)
    return conn.execute(query.order_by(_act.c.seq.desc()).limit(limit + 1)).all()


def insert_encounter(conn: Connection, row: EncounterRow) -> None:
    conn.execute(insert(_enc), row)


def encounter_page(
    conn: Connection, campaign_id: str, *, status: str | None, after: tuple[datetime, str] | None, limit: int
) -> Sequence[TableRow]:
    """Newest first, keyset on (created_at, id)."""
    query = select(_enc).where(_enc.c.campaign_id == campaign_id)
    if status is not None:
        query = query.where(_enc.c.status == status)
    if after is not None:
        stamp, last_id = after
        query = query.where((_enc.c.created_at < stamp) | ((_enc.c.created_at == stamp) & (_enc.c.id < last_id)))
    return conn.execute(query.order_by(_enc.c.created_at.desc(), _enc.c.id.desc()).limit(limit + 1)).all()
