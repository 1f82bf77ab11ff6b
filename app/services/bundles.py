"""Export and import (API.md): a campaign, or one character, as one
versioned JSON bundle with its whole history, and back as a new campaign (or a new character of
a campaign) with new ids and new tokens.

Every row keeps what it was (each log entry's body: its dice, outcome and effects; every
`created_at`), but its ids: each id the bundle defines (campaign, players, characters,
encounters, combatants, actions and log entries, and the characters and combatants deleted since
that its rows still name) gets a new one, and every place that names it — a column or anywhere
inside a JSON body — names the new one. A bundle names no other id (422 at its place): nothing
imported can name another campaign's rows. And an import vouches for no dice: each entry says
`provenance: "imported"`, what the bundle claimed kept in `imported_provenance`. An import is one transaction,
validated whole before anything is written: a bad bundle is a 422 naming the first bad place
(`errors[0].loc`, under `body`), and nothing of it stays; `dry_run` validates and rolls back."""

from __future__ import annotations

import hashlib
from collections.abc import Container, Iterable
from datetime import UTC, datetime
from functools import cache
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, StrictBool, TypeAdapter, ValidationError
from sqlalchemy import insert, select
from sqlmodel import Session

from app.core.old_step_keys import with_step_keys
from app.core.security import hash_token, new_token
from app.models import seen
from app.models.bundles import (
    CAMPAIGN_FORMAT,
    CHARACTER_FORMAT,
    VERSION,
    BundleEpoch,
    CampaignBundle,
    CharacterBundle,
)
from app.models.fight_state import ENCOUNTER_FIELDS, CombatantState, Counters, EncounterState, StoredChange
from app.models.results.body_ids import IdKind, body_ids
from app.models.tables import (
    LOG_FIGURES,
    NO_FIGURES,
    Campaign,
    Character,
    Combatant,
    Credential,
    DiceEpoch,
    Encounter,
    EncounterAction,
    LogEntry,
    LogEntryCharacter,
    Player,
    core_table,
    new_id,
    utcnow,
)
from app.models.validation import InvalidBody, errors_at, invalid, invalid_from, validate
from app.rules.errors import RuleError
from app.rulesets.registry import RULESET_IDS, get_adapter, rules_for
from app.rulesets.wire import LogEntry as LoggedBody
from app.services import epoch_store, events
from app.services.auth import authorize
from app.services.characters import audience, limited, load_character, public
from app.services.dice_epochs import server_dice
from app.services.encounters.store import COMBATANT_FIELDS
from app.services.provenance import as_imported
from app.services.records import Principal, StoredCharacter
from app.services.uow import load_campaign

_campaign, _player, _character = core_table(Campaign), core_table(Player), core_table(Character)
_dice_epoch = core_table(DiceEpoch)
_encounter, _combatant, _action = core_table(Encounter), core_table(Combatant), core_table(EncounterAction)
_log, _log_char, _cred = core_table(LogEntry), core_table(LogEntryCharacter), core_table(Credential)
M = TypeVar("M", bound=BaseModel)


def _utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _rows(session: Session, query: Any) -> list[Any]:
    return list(session.connection().execute(query).all())


# --- export -----------------------------------------------------------------------------------


def _character_row(c: Any, ruleset: str) -> dict[str, Any]:
    """A character as a bundle carries it: its sheet in the form a sheet is stored in today (a value
    stored while its field was lax, `"false"`, as it is read: `false`), so the bundle imports."""
    return {
        "id": c.id,
        "player_id": c.player_id,
        "name": c.name,
        "kind": c.kind,
        "sheet": get_adapter(ruleset).sheet_as_now(c.sheet),
        "version": c.version,
        "player_access": c.player_access,
        "metadata": c.client_metadata,
        "created_at": _utc(c.created_at),
        "updated_at": _utc(c.updated_at),
    }


def _entries(session: Session, where: Any) -> list[dict[str, Any]]:
    rows = _rows(session, select(_log).where(where).order_by(_log.c.seq))
    others: dict[int, list[str]] = {}
    if rows:
        seqs = [r.seq for r in rows]
        for link in _rows(
            session, select(_log_char).where(_log_char.c.seq.in_(seqs)).order_by(_log_char.c.character_id)
        ):
            others.setdefault(link.seq, []).append(link.character_id)
    return [
        {
            "id": r.id,
            "character_id": r.character_id,
            "kind": r.kind,
            "hidden": r.hidden,
            "rerolls": r.rerolls,
            "characters": others.get(r.seq, []),
            "created_at": _utc(r.created_at),
            "body": r.body,
            "figures": _figures(r),
        }
        for r in rows
    ]


def _figures(row: Any) -> dict[str, Any] | None:
    """A test's figures (its luck statistics), none when it has none (no test, or logged before them)."""
    figures = {name: getattr(row, name) for name in LOG_FIGURES}
    return figures if any(v is not None for v in figures.values()) else None


def _dump(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    return model.model_validate(data).model_dump(mode="json")


def export_campaign(session: Session, principal: Principal, campaign_id: str) -> dict[str, Any]:
    """GM: the campaign and its whole history as one bundle (no token, no webhook secret)."""
    campaign = load_campaign(session, principal, campaign_id)
    players = _rows(
        session,
        select(_player).where(_player.c.campaign_id == campaign_id).order_by(_player.c.created_at, _player.c.id),
    )
    characters = _rows(
        session,
        select(_character)
        .where(_character.c.campaign_id == campaign_id)
        .order_by(_character.c.created_at, _character.c.id),
    )
    encounters = _rows(
        session,
        select(_encounter)
        .where(_encounter.c.campaign_id == campaign_id)
        .order_by(_encounter.c.created_at, _encounter.c.id),
    )
    ids = [e.id for e in encounters]
    combatants = (
        _rows(
            session,
            select(_combatant)
            .where(_combatant.c.encounter_id.in_(ids))
            .order_by(_combatant.c.ordinal, _combatant.c.id),
        )
        if ids
        else []
    )
    actions = (
        _rows(session, select(_action).where(_action.c.encounter_id.in_(ids)).order_by(_action.c.seq)) if ids else []
    )
    order = {eid: i for i, eid in enumerate(ids)}
    actions.sort(key=lambda a: (order[a.encounter_id], a.seq))
    log = _entries(session, _log.c.campaign_id == campaign_id)
    deleted, removed = _gone(campaign.ruleset, characters, combatants, actions, log)
    return _dump(
        CampaignBundle,
        {
            "format": CAMPAIGN_FORMAT,
            "version": VERSION,
            "exported_at": utcnow(),
            "campaign": {
                "id": campaign.id,
                "name": campaign.name,
                "ruleset": campaign.ruleset,
                "options": get_adapter(campaign.ruleset).options_as_now(campaign.options),  # as `sheet`
                "metadata": campaign.client_metadata,
                "version": campaign.version,
                "created_at": _utc(campaign.created_at),
                "updated_at": _utc(campaign.updated_at),
            },
            "players": [{"id": p.id, "name": p.name, "created_at": _utc(p.created_at)} for p in players],
            "characters": [_character_row(c, campaign.ruleset) for c in characters],
            "encounters": [
                {
                    **{
                        k: getattr(e, k)
                        for k in ("id", "name", "status", "round", "version", "options", "turn_order", "current_turn")
                    },
                    "metadata": e.client_metadata,
                    "created_at": _utc(e.created_at),
                    "updated_at": _utc(e.updated_at),
                    "combatants": [_combatant_row(c) for c in combatants if c.encounter_id == e.id],
                }
                for e in encounters
            ],
            "actions": [
                {
                    **{
                        k: getattr(a, k)
                        for k in ("id", "encounter_id", "seq", "type", "hidden", "changes", "reverts", "reverted_by")
                    },
                    "created_at": _utc(a.created_at),
                }
                for a in actions
            ],
            "log": log,
            "level_ups": [e["id"] for e in log if e["kind"] == "level_up"],
            "deleted_characters": deleted,
            "removed_combatants": removed,
            "dice_epochs": _exported_epochs(session, campaign_id),
        },
    )


def _gone(
    ruleset: str, characters: list[Any], combatants: list[Any], actions: list[Any], log: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """The characters deleted since and the combatants removed since that the campaign's rows still
    name (a deleted character leaves its place in a fight and its entries in the log; a change
    record keeps the combatant it changed), in order of first mention: the bundle defines them too,
    since it names no id it does not define."""
    changes = [c for a in actions for c in a.changes if isinstance(c, dict)]
    in_bodies = [(kind, value) for e in log for kind, value, _ in body_ids(e["body"])]
    named = [
        *(c.character_id for c in combatants),
        *(c.get("character_id") for c in changes),
        *(e["character_id"] for e in log),
        *(other for e in log for other in e["characters"]),
        *(value for kind, value in in_bodies if kind == "character"),  # a revert's NPC copy, deleted with it
    ]
    known = {c.id for c in characters}
    deleted = [x for x in dict.fromkeys(named) if x is not None and x not in known]
    naming = rules_for(ruleset).naming_counters
    fighters = [
        *(c.get("combatant_id") for c in changes),
        *(v for c in combatants for k, v in (c.counters or {}).items() if k in naming),
        *(value for kind, value in in_bodies if kind == "combatant"),
    ]
    present = {c.id for c in combatants}
    removed = [x for x in dict.fromkeys(fighters) if isinstance(x, str) and x not in present]
    return deleted, removed


_COMBATANT = ("id", "character_id", "ordinal", *COMBATANT_FIELDS)  # and what a fight changes of it


def _combatant_row(c: Any) -> dict[str, Any]:
    return {**{k: getattr(c, k) for k in _COMBATANT}, "created_at": _utc(c.created_at)}


def export_character(session: Session, principal: Principal, character_id: str) -> dict[str, Any]:
    """GM: one character (sheet, metadata) and its level-ups."""
    character, campaign = load_character(session, principal, character_id)
    authorize(principal)  # the route's: the GM's
    row = session.connection().execute(select(_character).where(_character.c.id == character.id)).one()
    level_ups = _entries(session, (_log.c.character_id == character.id) & (_log.c.kind == "level_up"))
    return _dump(
        CharacterBundle,
        {
            "format": CHARACTER_FORMAT,
            "version": VERSION,
            "exported_at": utcnow(),
            "ruleset": campaign.ruleset,
            "character": _character_row(row, campaign.ruleset),
            "level_ups": level_ups,
        },
    )


# --- import -----------------------------------------------------------------------------------


def _remap(value: Any, ids: dict[str, str]) -> Any:
    """`value` with every string that is an id of the bundle replaced by its new id, at any depth."""
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_remap(v, ids) for v in value]
    if isinstance(value, dict):
        return {ids.get(k, k): _remap(v, ids) for k, v in value.items()}
    return value


def _bad(loc: Iterable[Any], msg: str) -> InvalidBody:
    where = [str(p) for p in loc]
    errors = [{"loc": ["body", *where], "msg": msg}]
    return InvalidBody(f"{'.'.join(where)}: {msg}", extra={"errors": errors}, code="invalid_bundle")


def _unique(items: list[Any], where: str, ids: set[str]) -> None:
    for i, item in enumerate(items):
        if item.id in ids:
            raise _bad([where, i, "id"], f"the id {item.id!r} is used twice in the bundle")
        ids.add(item.id)


def _check_sheets(ruleset: str, characters: list[Any], where: str) -> None:
    """Each sheet as its ruleset reads it; errors located at the sheet's place in the bundle."""
    adapter = get_adapter(ruleset)
    for i, character in enumerate(characters):
        loc = (where, i, "sheet") if where else ("character", "sheet")
        try:
            adapter.Sheet.model_validate(character.sheet)  # a request body: strict (stored rows are read lax)
        except ValidationError as exc:
            raise invalid_from(exc, ("body", *loc)) from None
        except RuleError as exc:
            inner = (exc.field or "").removeprefix("sheet").removeprefix(".")
            raise _bad([*loc, *(inner.split(".") if inner else [])], exc.detail) from None


def _check_ruleset(ruleset: str, loc: list[Any]) -> None:
    if ruleset not in RULESET_IDS:
        raise _bad(loc, f"unknown ruleset {ruleset!r}; known: {', '.join(RULESET_IDS)}")


def _check_campaign(bundle: CampaignBundle) -> None:
    """Every place the database would refuse, or the rules would, in bundle order."""
    _check_ruleset(bundle.campaign.ruleset, ["campaign", "ruleset"])
    validate(get_adapter(bundle.campaign.ruleset).Options, bundle.campaign.options, loc=("body", "campaign", "options"))
    ids: set[str] = {bundle.campaign.id}
    _unique(bundle.players, "players", ids)
    players = {p.id for p in bundle.players}
    _unique(bundle.characters, "characters", ids)
    for i, character in enumerate(bundle.characters):
        if character.player_id is not None and character.player_id not in players:
            raise _bad(["characters", i, "player_id"], f"no player {character.player_id!r} in the bundle")
    _check_sheets(bundle.campaign.ruleset, bundle.characters, "characters")
    _unique(bundle.encounters, "encounters", ids)
    rules = rules_for(bundle.campaign.ruleset)
    for i, encounter in enumerate(bundle.encounters):
        validate(rules.Options, encounter.options, loc=("body", "encounters", i, "options"))
        _unique(encounter.combatants, f"encounters.{i}.combatants", ids)
        _check_fight(encounter, ("encounters", i), rules.Counters)
    characters = {c.id for c in bundle.characters} | _gone_defined(bundle.deleted_characters, "deleted_characters", ids)
    fighters = {c.id for e in bundle.encounters for c in e.combatants}
    fighters |= _gone_defined(bundle.removed_combatants, "removed_combatants", ids)
    for i, encounter in enumerate(bundle.encounters):
        for j, combatant in enumerate(encounter.combatants):
            where = ("encounters", i, "combatants", j)
            _defined(combatant.character_id, characters, [*where, "character_id"], "character")
            for name in rules.naming_counters:
                named = combatant.counters.get(name)
                if isinstance(named, str):
                    _defined(named, fighters, [*where, "counters", name], "combatant")
    encounters = {e.id for e in bundle.encounters}
    actions = {a.id for a in bundle.actions}  # an action and its log entry may share an id
    sheet = get_adapter(bundle.campaign.ruleset).Sheet
    seen: set[tuple[str, int]] = set()
    for i, action in enumerate(bundle.actions):
        if action.encounter_id not in encounters:
            raise _bad(["actions", i, "encounter_id"], f"no encounter {action.encounter_id!r} in the bundle")
        if (action.encounter_id, action.seq) in seen:
            raise _bad(["actions", i, "seq"], "two actions of one encounter have this seq")
        seen.add((action.encounter_id, action.seq))
        _defined(action.reverts, actions, ["actions", i, "reverts"], "action")
        _defined(action.reverted_by, actions, ["actions", i, "reverted_by"], "action")
        for k, change in enumerate(action.changes):
            where = ("actions", i, "changes", k)
            checked = _check_change(change, where, sheet, rules.Counters)
            _defined(checked.combatant_id, fighters, [*where, "combatant_id"], "combatant")
            _defined(checked.character_id, characters, [*where, "character_id"], "character")
    _check_log(bundle.log, bundle.campaign.ruleset)
    for i, entry in enumerate(bundle.log):
        _defined(entry.character_id, characters, ["log", i, "character_id"], "character")
        for k, other in enumerate(entry.characters):
            _defined(other, characters, ["log", i, "characters", k], "character")
    by_encounter = {e.id: {c.id for c in e.combatants} for e in bundle.encounters}
    removed = set(bundle.removed_combatants)
    _check_body_ids(bundle.log, "log", characters, by_encounter, removed, actions | {e.id for e in bundle.log})
    entries: set[str] = set()
    for i, entry in enumerate(bundle.log):
        if entry.id in entries or (entry.id in ids and entry.id not in actions):
            raise _bad(["log", i, "id"], f"the id {entry.id!r} is used twice in the bundle")
        entries.add(entry.id)
    rerolled: set[str] = set()
    for i, entry in enumerate(bundle.log):
        if entry.rerolls is not None and (entry.rerolls not in entries or entry.rerolls in rerolled):
            raise _bad(["log", i, "rerolls"], f"rerolls {entry.rerolls!r}: no such entry earlier, or rerolled twice")
        if entry.rerolls is not None:
            rerolled.add(entry.rerolls)
    for i, level_up in enumerate(bundle.level_ups):
        if level_up not in entries:
            raise _bad(["level_ups", i], f"no log entry {level_up!r} in the bundle")
    _check_epochs(bundle.dice_epochs)
    epochs = {e.id for e in bundle.dice_epochs}
    for i, entry in enumerate(bundle.log):
        for die in server_dice(entry.body):
            if die["epoch"] not in epochs:
                raise _bad(["log", i, "body"], f"a die names the dice epoch {die['epoch']!r}, not in the bundle")


def _check_body_ids(
    entries: list[Any],
    part: str,
    characters: set[str],
    by_encounter: dict[str, set[str]],
    removed: set[str],
    history: set[str],
) -> None:
    """Every id an entry's body carries (`body_ids`: its steps', changes', dice's…) is one the
    bundle defines: a character (or one deleted since), the bundle's encounter, a combatant of
    that encounter (or one removed since), an entry of the log or an action. Any other would be
    stored as it is (an import gives new ids only to those the bundle defines) and read, or played
    again (AS-H2 resolves a logged request), as another campaign's row."""
    known: dict[IdKind, Container[str]] = {"character": characters, "encounter": by_encounter, "entry": history}
    for i, entry in enumerate(entries):
        encounter = entry.body.get("encounter_id")
        fighters = by_encounter.get(encounter, set()) if isinstance(encounter, str) else set()
        for k, (kind, value, _) in enumerate(body_ids(entry.body)):
            if kind == "combatant":
                if value in fighters or value in removed:
                    continue
            elif value in known[kind]:
                continue
            place = body_ids(entry.body, places=True)[k][2] or ()
            raise _bad([part, i, "body", *place], f"no {_WHAT[kind]} {value!r} in the bundle {_NAMES_ONLY}")


_WHAT: dict[IdKind, str] = {
    "character": "character",
    "encounter": "encounter",
    "combatant": "combatant of this entry's encounter",
    "entry": "log entry",
}
_NAMES_ONLY = "(a bundle names only the ids it defines)"


def _defined(value: str | None, known: set[str], loc: list[Any], what: str) -> None:
    """An id the bundle names must be one it defines: any other (another campaign's character, say)
    would be stored as it is, and read, locked or reverted as that other row."""
    if value is not None and value not in known:
        raise _bad(loc, f"no {what} {value!r} in the bundle {_NAMES_ONLY}")


def _gone_defined(gone: list[str], where: str, ids: set[str]) -> set[str]:
    """The ids of rows deleted since that the bundle defines, each once and no other row's."""
    for i, item in enumerate(gone):
        if item in ids:
            raise _bad([where, i], f"the id {item!r} is used twice in the bundle")
        ids.add(item)
    return set(gone)


# --- the fight's state and history, as the services will read them (app.models.fight_state) ------------


def _check_fight(encounter: Any, where: tuple[Any, ...], counters: type[Counters]) -> None:
    """The encounter's state and its combatants' typed, each combatant with an ordinal of its own;
    every order entry and the current turn naming combatants of this encounter (a combatant's
    character may be gone: deleted since, it leaves its place in the fight)."""
    state = validate(
        EncounterState, {name: getattr(encounter, name) for name in EncounterState.model_fields}, loc=("body", *where)
    )
    fighters = {c.id for c in encounter.combatants}
    ordinals: dict[int, int] = {}  # ordinal -> the combatant holding it
    for j, combatant in enumerate(encounter.combatants):
        loc = (*where, "combatants", j)
        fields = {name: getattr(combatant, name) for name in CombatantState.model_fields}
        validate(CombatantState, fields, loc=("body", *loc))
        validate(counters, combatant.counters, loc=("body", *loc, "counters"))
        # the order of arrival, which table dice and every list of the fight follow: one place each
        if combatant.ordinal in ordinals:
            raise _bad(
                [*loc, "ordinal"], f"ordinal {combatant.ordinal} is combatant {ordinals[combatant.ordinal]}'s too"
            )
        ordinals[combatant.ordinal] = j
    _check_turns(state, where, fighters)


def _check_turns(state: EncounterState, where: tuple[Any, ...], fighters: set[str]) -> None:
    slots = {entry.slot for entry in state.turn_order}
    for k, entry in enumerate(state.turn_order):
        for name, ids in (("combatant_id", [entry.combatant_id]), ("parallel_with", entry.parallel_with)):
            for cid in ids:
                if cid not in fighters:
                    raise _bad([*where, "turn_order", k, name], f"no combatant {cid!r} in this encounter")
    current = state.current_turn
    if current is None:
        return
    if state.turn_order and current.slot not in slots:
        raise _bad([*where, "current_turn", "slot"], f"no slot {current.slot} in the turn order")
    named = [current.combatant_id] if current.combatant_id is not None else []
    for who in [*named, *current.combatant_ids]:
        if who not in fighters:
            raise _bad([*where, "current_turn"], f"no combatant {who!r} in this encounter")


@cache
def _field(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    """A model's field alone, with its constraints (what a change record's before and after hold)."""
    info = model.model_fields[name]
    annotation: Any = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    return TypeAdapter(annotation)


def _check_change(raw: Any, where: tuple[Any, ...], sheet: type[BaseModel], counters: type[Counters]) -> StoredChange:
    """One change record of an action: where it lives, which field, and a before and an after that
    field can hold (what a revert writes back). A change may name a combatant removed since, or a
    character deleted since: a revert passes over it."""
    change = validate(StoredChange, raw, loc=("body", *where))
    if change.on == "encounter":
        if change.field not in ENCOUNTER_FIELDS:
            raise _bad([*where, "field"], f"no encounter field {change.field!r}")
        value = _field(EncounterState, ENCOUNTER_FIELDS[change.field])
    elif change.combatant_id is None:
        raise _bad([*where, "combatant_id"], f"a change of a {change.on} names its combatant")
    elif change.on == "roster":
        if change.field != "joined":
            raise _bad([*where, "field"], "a roster change is `joined`")
        value = _JOINED
    elif change.on == "combatant":
        if change.field not in CombatantState.model_fields:
            raise _bad([*where, "field"], f"no combatant field {change.field!r}")
        value = _nullable(counters) if change.field == "counters" else _field(CombatantState, change.field)
    else:
        if change.key is None or change.key not in sheet.model_fields:
            raise _bad([*where, "key"], f"no sheet field {change.key!r}")
        value = _field(sheet, change.key)
    for side in ("before", "after"):
        held = getattr(change, side)
        if change.on == "sheet" and held is None:  # a field the sheet did not store (its default)
            continue
        try:
            value.validate_python(held)
        except ValidationError as exc:
            raise invalid_from(exc, ("body", *where, side)) from None
    return change


_JOINED: TypeAdapter[Any] = TypeAdapter(StrictBool)


@cache
def _nullable(model: type[BaseModel]) -> TypeAdapter[Any]:
    nullable: Any = model | None
    return TypeAdapter(nullable)


def _check_log(entries: list[Any], ruleset: str, part: str = "log") -> None:
    """Each entry's body as the roll log serves it (`LogEntry`: its kind's result, of this
    ruleset), naming the entry it is and the character it is about (which may be gone: a deleted
    character's entries stay in the log)."""
    for i, entry in enumerate(entries):
        where = (part, i)
        body = _logged_body(entry)
        try:
            _LOGGED.validate_python(_as_older_rows_are(body))
        except ValidationError as exc:
            raise invalid_from(exc, ("body", *where, "body")) from None
        for name, value in (("id", entry.id), ("kind", entry.kind), ("character_id", entry.character_id)):
            if body.get(name, value) != value:
                raise _bad([*where, "body", name], f"the body's {name} is not the entry's ({value!r})")
        if body.get("ruleset", ruleset) != ruleset:
            raise _bad([*where, "body", "ruleset"], f"an entry of another ruleset than {ruleset}")
        if entry.figures is not None and (entry.kind != "test" or entry.figures.outcome != body.get("outcome")):
            raise _bad([*where, "figures", "outcome"], "figures are a test's, of its outcome")


_LOGGED: TypeAdapter[Any] = TypeAdapter(LoggedBody)


def _as_older_rows_are(body: Any) -> Any:
    """A copy of a log body to check, with a stand-in for what rows stored by earlier versions lack
    (served as they are stored): a `provenance`, and the `key` of a step whose text
    migration 0014 does not know (it stays without one, as in a database that migration keyed)."""
    checked = _unkeyed_steps_allowed(body)
    if isinstance(checked, dict) and "provenance" not in checked:
        checked["provenance"] = "server"
    return checked


def _unkeyed_steps_allowed(value: Any) -> Any:
    if isinstance(value, list):
        return [_unkeyed_steps_allowed(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _unkeyed_steps_allowed(v) for k, v in value.items()}
    if "rule" in out and "what" in out and "key" not in out:
        out["key"] = "unknown"
    return out


def _logged_body(entry: Any) -> Any:
    """A combat entry's body with its steps keyed (a bundle exported before step keys existed has
    none: each gets the key migration 0014 gave the stored ones); the other entries' as they are."""
    return with_step_keys(entry.body) if entry.kind == "combat" else entry.body


def _entry_rows(
    entries: list[Any], campaign_id: str, ids: dict[str, str]
) -> tuple[list[dict[str, Any]], list[tuple[str, list[str]]]]:
    rows, links = [], []
    for entry in entries:
        new = ids.setdefault(entry.id, new_id())
        rows.append(
            {
                "id": new,
                "campaign_id": campaign_id,
                "character_id": _remap(entry.character_id, ids),
                "kind": entry.kind,
                "hidden": entry.hidden,
                "rerolls": _remap(entry.rerolls, ids),
                "created_at": entry.created_at,
                "body": _remap(as_imported(_logged_body(entry)), ids),  # dice it did not roll: `imported`
                **(entry.figures.model_dump() if entry.figures is not None else NO_FIGURES),
            }
        )
        links.append((new, [_remap(c, ids) for c in entry.characters]))
    return rows, links


def _insert_log(session: Session, rows: list[dict[str, Any]], links: list[tuple[str, list[str]]]) -> None:
    if not rows:
        return
    conn = session.connection()
    conn.execute(insert(_log), rows)
    if any(others for _, others in links):
        seqs = dict(conn.execute(select(_log.c.id, _log.c.seq).where(_log.c.id.in_([r["id"] for r in rows]))).all())
        pairs = [{"character_id": c, "seq": seqs[eid]} for eid, others in links for c in others]
        conn.execute(insert(_log_char), pairs)


# --- reading a bundle: no database, so off the event loop and before a writer's turn ---------------

# the items of a long list validated at once: pydantic holds the GIL for one call, so a bundle of
# tens of thousands of entries validated whole would hold up every other thread of the process
# (the event loop's included) for a second or more; a batch takes a few milliseconds
_BATCH = 200


def read_campaign(data: Any) -> CampaignBundle:
    """The bundle, validated and checked whole (every place the database or the rules would refuse),
    as `import_campaign` writes it; a 422 naming the first bad place."""
    bundle = _validated(CampaignBundle, data, ("log", "actions"))
    _check_campaign(bundle)
    return bundle


def read_character(data: Any) -> CharacterBundle:
    return _validated(CharacterBundle, data, ("level_ups",))


def _validated(model: type[M], data: Any, lists: tuple[str, ...]) -> M:
    """`validate(model, data)`, each of its long `lists` a batch of items at a time; the errors
    as `validate` gives them, in the model's field order."""
    long = {n: data[n] for n in lists if isinstance(data, dict) and isinstance(data.get(n), list)}
    long = {n: items for n, items in long.items() if len(items) > _BATCH}
    if not long:
        return validate(model, data)
    errors: list[dict[str, Any]] = []
    shell: M | None = None
    try:
        shell = model.model_validate({**data, **{n: [] for n in long}})
    except ValidationError as exc:
        errors += errors_at(exc, ("body",))
    read: dict[str, list[Any]] = {}
    for name, items in long.items():
        adapter, out = _items_of(model, name), []
        for start in range(0, len(items), _BATCH):
            try:
                out += adapter.validate_python(items[start : start + _BATCH])
            except ValidationError as exc:
                for e in errors_at(exc, ()):
                    errors.append({**e, "loc": ["body", name, start + e["loc"][0], *e["loc"][1:]]})
        read[name] = out
    if errors or shell is None:
        order = list(model.model_fields)
        errors.sort(key=lambda e: order.index(e["loc"][1]) if e["loc"][1:2] and e["loc"][1] in order else -1)
        raise invalid(errors)
    return shell.model_copy(update=read)


@cache
def _items_of(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    items: Any = model.model_fields[name].annotation  # list[...]
    return TypeAdapter(items)


def import_campaign(session: Session, data: Any, *, dry_run: bool = False) -> dict[str, Any]:
    """A new campaign from a bundle (read already, `read_campaign`, or to read), with new ids and
    tokens; `dry_run`: validated, nothing written."""
    bundle = data if isinstance(data, CampaignBundle) else read_campaign(data)
    ids = {bundle.campaign.id: new_id()}
    for item in [
        *bundle.players,
        *bundle.characters,
        *bundle.encounters,
        *(c for e in bundle.encounters for c in e.combatants),
        *bundle.actions,
        *bundle.log,
    ]:
        ids.setdefault(getattr(item, "id"), new_id())  # noqa: B009  # every bundle row has an id
    for gone in [*bundle.deleted_characters, *bundle.removed_combatants]:
        ids[gone] = new_id()  # names no row: nothing of another campaign
    cid = ids[bundle.campaign.id]
    conn = session.connection()
    c = bundle.campaign
    conn.execute(
        insert(_campaign),
        [
            {
                "id": cid,
                "name": c.name,
                "ruleset": c.ruleset,
                "options": c.options,
                "client_metadata": c.metadata,
                "version": c.version,
                "created_at": c.created_at,
                "updated_at": c.updated_at,
            }
        ],
    )
    gm_token = new_token("gm")
    tokens = {p.id: new_token("pl") for p in bundle.players}
    if bundle.players:
        conn.execute(
            insert(_player),
            [{"id": ids[p.id], "campaign_id": cid, "name": p.name, "created_at": p.created_at} for p in bundle.players],
        )
    conn.execute(
        insert(_cred),
        [
            {
                "token_hash": hash_token(gm_token),
                "campaign_id": cid,
                "player_id": None,
                "role": "gm",
                "created_at": utcnow(),
            }
        ]
        + [
            {
                "token_hash": hash_token(tokens[p.id]),
                "campaign_id": cid,
                "player_id": ids[p.id],
                "role": "player",
                "created_at": utcnow(),
            }
            for p in bundle.players
        ],
    )
    if bundle.characters:
        conn.execute(insert(_character), [_character_insert(ch, cid, ids) for ch in bundle.characters])
    if bundle.encounters:
        conn.execute(
            insert(_encounter),
            [
                {
                    "id": ids[e.id],
                    "campaign_id": cid,
                    "name": e.name,
                    "status": e.status,
                    "round": e.round,
                    "version": e.version,
                    "player_versions": seen.starting_at(e.version),
                    "options": _remap(e.options, ids),
                    "turn_order": _remap(e.turn_order, ids),
                    "current_turn": _remap(e.current_turn, ids),
                    "client_metadata": e.metadata,
                    "created_at": e.created_at,
                    "updated_at": e.updated_at,
                }
                for e in bundle.encounters
            ],
        )
        combatants = [
            {
                **_remap(cb.model_dump(exclude={"created_at"}), ids),
                "encounter_id": ids[e.id],
                "created_at": cb.created_at,
            }
            for e in bundle.encounters
            for cb in e.combatants
        ]
        if combatants:
            conn.execute(insert(_combatant), combatants)
    rows, links = _entry_rows(bundle.log, cid, ids)
    _insert_log(session, rows, links)
    _insert_epochs(session, cid, bundle.dice_epochs)
    if bundle.actions:
        conn.execute(
            insert(_action),
            [{**_remap(a.model_dump(exclude={"created_at"}), ids), "created_at": a.created_at} for a in bundle.actions],
        )
    if not dry_run:
        _import_events(session, cid, c.ruleset, bundle, ids)
    counts = {
        "players": len(bundle.players),
        "characters": len(bundle.characters),
        "encounters": len(bundle.encounters),
        "actions": len(bundle.actions),
        "log": len(bundle.log),
        "level_ups": len(bundle.level_ups),
    }
    if dry_run:
        session.rollback()
        return {"dry_run": True, "valid": True, "counts": counts}
    session.commit()
    return {
        "id": cid,
        "name": c.name,
        "ruleset": c.ruleset,
        "gm_token": gm_token,
        "players": [{"id": ids[p.id], "name": p.name, "token": tokens[p.id]} for p in bundle.players],
        "counts": counts,
    }


def _exported_epochs(session: Session, campaign_id: str) -> list[dict[str, Any]]:
    """The campaign's epochs, oldest first, as `GET …/dice-epochs` shows them (a seed only once
    revealed: the current epoch's is never exported), but one that vouches for nothing yet (no die,
    no salt: the one an import opens) and where each came from (an import of the bundle makes
    them all `imported`): a bundle's import exports the same epochs again."""
    rows = reversed(epoch_store.every(session.connection(), campaign_id))
    return [
        {k: v for k, v in epoch_store.public(e).items() if k != "imported"}
        for e in rows
        if e["dice"] or e["salts"] or e["revealed_at"] is not None
    ]


def _check_epochs(epochs: list[BundleEpoch]) -> None:
    """Unique ids; a seed whose SHA-256 is its commitment (an epoch that does not keep its word is
    refused: its dice could not be checked); no seed before its reveal."""
    seen: set[str] = set()
    for i, epoch in enumerate(epochs):
        if epoch.id in seen:
            raise _bad(["dice_epochs", i, "id"], f"the dice epoch {epoch.id!r} is listed twice")
        seen.add(epoch.id)
        if epoch.seed is not None:
            if epoch.revealed_at is None:
                raise _bad(["dice_epochs", i, "seed"], "an epoch not revealed has no seed in a bundle")
            if hashlib.sha256(bytes.fromhex(epoch.seed)).hexdigest() != epoch.commitment:
                raise _bad(["dice_epochs", i, "seed"], "the seed's SHA-256 is not the epoch's commitment")


def _insert_epochs(session: Session, campaign_id: str, epochs: list[BundleEpoch]) -> None:
    """The bundle's epochs, kept (imported: checkable, never rolled from), then the campaign's own."""
    conn = session.connection()
    if epochs:
        conn.execute(
            insert(_dice_epoch),
            [
                {
                    "campaign_id": campaign_id,
                    "id": e.id,
                    "seed": bytes.fromhex(e.seed) if e.seed is not None else None,
                    "commitment": e.commitment,
                    "salts": e.salts,
                    "dice": e.dice,
                    "started_at": e.started_at,
                    "revealed_at": e.revealed_at,
                    "imported": True,
                }
                for e in epochs
            ],
        )
    epoch_store.open_epoch(conn, campaign_id)


def _import_events(
    session: Session, campaign_id: str, ruleset: str, bundle: CampaignBundle, ids: dict[str, str]
) -> None:
    """What the import made, as the event mirror tells it (API.md: "an import" is one of
    the changes every stream and webhook hears of): `player.created` for each player,
    `character.created` for each character (as each viewer reads it: the GM, its owner, then its
    `player_access`, its fights included), `encounter.created` for each encounter, in that order.
    The history itself (log entries, actions) is not replayed as events: it is read by its own
    routes (`GET …/rolls`, `…/actions`), as after any resume."""
    conn = session.connection()
    for p in bundle.players:
        events.record(session, campaign_id, "player.created", {"id": ids[p.id], "name": p.name}, conn=conn)
    for ch in bundle.characters:
        row = _character_insert(ch, campaign_id, ids)
        stored = StoredCharacter(
            **{k: row[k] for k in ("id", "campaign_id", "name", "kind", "player_id", "sheet", "version")},
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            player_access=row["player_access"],
            client_metadata=row["client_metadata"] or {},
        )
        who = audience(conn, stored, ruleset)
        events.record(
            session, campaign_id, "character.created", public(stored, ruleset), conn=conn, **who.record_args()
        )
    for e in bundle.encounters:
        events.record(session, campaign_id, "encounter.created", {"id": ids[e.id], "version": e.version}, conn=conn)


def _character_insert(ch: Any, campaign_id: str, ids: dict[str, str]) -> dict[str, Any]:
    return {
        "id": ids[ch.id],
        "campaign_id": campaign_id,
        "player_id": _remap(ch.player_id, ids),
        "name": ch.name,
        "kind": ch.kind,
        "sheet": _remap(ch.sheet, ids),
        "version": ch.version,
        "player_access": ch.player_access,
        "client_metadata": ch.metadata,
        "created_at": ch.created_at,
        "updated_at": ch.updated_at,
    }


def import_character(session: Session, principal: Principal, campaign_id: str, data: Any) -> dict[str, Any]:
    """GM: a new character of this campaign from a character bundle (unowned), with its level-ups."""
    campaign = load_campaign(session, principal, campaign_id, for_update=True)
    bundle = data if isinstance(data, CharacterBundle) else read_character(data)
    if bundle.ruleset != campaign.ruleset:
        raise _bad(["ruleset"], f"a {bundle.ruleset} character cannot join a {campaign.ruleset} campaign")
    _check_sheets(campaign.ruleset, [bundle.character], "")
    for i, entry in enumerate(bundle.level_ups):
        if entry.character_id != bundle.character.id:
            raise _bad(["level_ups", i, "character_id"], "a level-up of another character")
        if entry.kind != "level_up":
            raise _bad(["level_ups", i, "kind"], "a level-up entry is of kind `level_up`")
        for k, other in enumerate(entry.characters):
            _defined(other, {bundle.character.id}, ["level_ups", i, "characters", k], "character")
        _defined(entry.rerolls, set(), ["level_ups", i, "rerolls"], "entry")
    _check_log(bundle.level_ups, campaign.ruleset, part="level_ups")
    _check_body_ids(bundle.level_ups, "level_ups", {bundle.character.id}, {}, set(), set())
    ids = {bundle.character.id: new_id()}
    row = {**_character_insert(bundle.character, campaign_id, ids), "player_id": None}
    session.connection().execute(insert(_character), [row])
    rows, links = _entry_rows(bundle.level_ups, campaign_id, ids)
    _insert_log(session, rows, links)
    character = Character.model_validate({**row})
    shown = public(character, campaign.ruleset)
    others = limited(character, campaign.ruleset) if character.player_access == "limited" else None
    events.record(
        session, campaign_id, "character.created", shown, hidden=character.player_access == "none", player_data=others
    )
    session.commit()
    return shown
