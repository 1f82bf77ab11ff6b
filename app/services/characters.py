"""Characters: CRUD with the sheet validated by the campaign's ruleset on every
write, optimistic versions (ETag / If-Match) and ownership checks.

Who may change what on a sheet (rules README): a player edits its own sheet's
free fields; a rule-governed field (declared on the sheet model, see
`app.models.rulesets.governance`) changes only through rule operations or a GM
edit, which the roll log records as a `sheet_edit` entry with before/after."""
from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from sqlalchemy import insert, update
from sqlmodel import Session, select

from app.kit.errors import Forbidden, NotFound, PreconditionFailed
from app.models.rulesets.governance import governed_fields
from app.models.schemas import CharacterCreate, CharacterPublic, CharacterUpdate
from app.models.tables import Campaign, Character, LogEntry, Player, new_id, utcnow
from app.rules.errors import RuleError
from app.services import events
from app.services.auth import Principal, check_owner_or_gm
from app.services.campaigns import load_campaign
from app.services.operations import iso
from app.services.pages import check_if_match, created_order_page
from app.services.rulesets import get_adapter
from app.services.validation import InvalidBody, invalid_from, prefixed


def public(character: Character, ruleset: str) -> dict[str, Any]:
    adapter = get_adapter(ruleset)
    data = {**character.model_dump(), "ruleset": ruleset, "derived": adapter.derived(adapter.parse_sheet(character.sheet))}
    return CharacterPublic.model_validate(data).model_dump()


def normalized_sheet(campaign: Campaign, raw: dict[str, Any], *, kind: str, gm_override: bool,
                     previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The sheet as its ruleset stores it; errors located under `body.sheet`."""
    adapter = get_adapter(campaign.ruleset)
    try:
        options = adapter.Options.model_validate(campaign.options)
        return adapter.normalize_sheet_in_context(raw, kind=kind, gm_override=gm_override,
                                                  options=options, previous=previous)
    except ValidationError as exc:
        raise invalid_from(exc, ("body", "sheet")) from None
    except RuleError as exc:
        raise prefixed(exc, "sheet") from None


def _check_player(session: Session, campaign_id: str, player_id: str | None) -> None:
    if player_id is None:
        return
    player = session.get(Player, player_id)
    if player is None or player.campaign_id != campaign_id:
        raise InvalidBody(f"no player {player_id!r} in this campaign", field="player_id")


def create_character(session: Session, principal: Principal, campaign_id: str, data: CharacterCreate) -> dict[str, Any]:
    campaign = load_campaign(session, principal, campaign_id)
    player_id = data.player_id
    if not principal.is_gm:
        if data.kind != "pc" or (player_id not in (None, principal.player_id)) or data.gm_override:
            raise Forbidden("a player may only create its own player character, without GM override")
        player_id = principal.player_id
    _check_player(session, campaign_id, player_id)
    if principal.is_gm:
        sheet = normalized_sheet(campaign, data.sheet, kind=data.kind, gm_override=data.gm_override)
    else:
        sheet = _players_new_sheet(campaign, data.sheet, kind=data.kind)
    character = Character(campaign_id=campaign_id, player_id=player_id, name=data.name, kind=data.kind, sheet=sheet)
    session.add(character)
    session.flush()
    events.record(session, campaign_id, "character.created", {"id": character.id, "version": character.version, "name": character.name})
    session.commit()
    return public(character, campaign.ruleset)


def list_characters(session: Session, principal: Principal, campaign_id: str, *, limit: int, cursor: str | None) -> dict[str, Any]:
    campaign = load_campaign(session, principal, campaign_id)
    query = select(Character).where(Character.campaign_id == campaign_id)
    return created_order_page(session, query, Character, limit=limit, cursor=cursor,
                              shape=lambda c: public(c, campaign.ruleset))


def load_character(session: Session, principal: Principal, character_id: str, *, for_update: bool = False) -> tuple[Character, Campaign]:
    query = select(Character, Campaign).join(Campaign, Campaign.id == Character.campaign_id).where(Character.id == character_id)
    if for_update:
        query = query.with_for_update(of=Character)
    row = session.exec(query).first()
    if row is None or row[0].campaign_id != principal.campaign_id:
        raise NotFound("no character with this id")
    return row[0], row[1]


def read_character(session: Session, principal: Principal, character_id: str) -> dict[str, Any]:
    character, campaign = load_character(session, principal, character_id)
    return public(character, campaign.ruleset)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def update_character(session: Session, principal: Principal, character_id: str, data: CharacterUpdate, if_match: str | None) -> dict[str, Any]:
    character, campaign = load_character(session, principal, character_id, for_update=True)
    session.expunge(character)  # edited as a plain object, written by the versioned UPDATE below
    check_owner_or_gm(principal, character.player_id, "change this character")
    check_if_match(character.version, if_match, "character")
    fields = data.model_dump(exclude_unset=True)
    if not principal.is_gm and ({"kind", "player_id"} & fields.keys() or data.gm_override):
        raise Forbidden("only the GM may change a character's kind, owner, or override the rules' bounds")
    if "player_id" in fields:
        _check_player(session, campaign.id, data.player_id)
        character.player_id = data.player_id
    if data.name is not None:
        character.name = data.name
    if data.kind is not None:
        character.kind = data.kind
    changes: list[dict[str, Any]] = []
    if data.sheet is not None or data.kind is not None:
        previous = character.sheet
        raw = merge_patch(previous, data.sheet or {})
        if principal.is_gm:
            character.sheet = normalized_sheet(campaign, raw, kind=character.kind, gm_override=data.gm_override,
                                               previous=previous)
            changes = governed_changes(_governed_baseline(campaign, previous, kind=character.kind),
                                       character.sheet, _governed(campaign))
        else:
            character.sheet = _players_edited_sheet(campaign, raw, previous, kind=character.kind)
    return _save_version(session, character, campaign.ruleset, changes)


# --- who may change what on a sheet -----------------------------------------------

_ABSENT = object()


def _governed(campaign: Campaign) -> dict[str, bool]:
    """The campaign's rule-governed sheet keys -> whether a player's creation may set them."""
    return governed_fields(get_adapter(campaign.ruleset).Sheet)


def governed_changes(before: dict[str, Any], after: dict[str, Any], keys: Any) -> list[dict[str, Any]]:
    """[{field, before, after}] of each rule-governed value that differs, nested keys
    dotted (`stats.force`, `challenges.crochetage.successes`); an absent value is null."""
    changes: list[dict[str, Any]] = []

    def walk(path: str, old: Any, new: Any) -> None:
        if isinstance(old, dict) and isinstance(new, dict):
            for key in [*old, *(k for k in new if k not in old)]:
                walk(f"{path}.{key}", old.get(key, _ABSENT), new.get(key, _ABSENT))
        elif old != new:
            changes.append({"field": path, "before": None if old is _ABSENT else old,
                            "after": None if new is _ABSENT else new})

    for key in keys:
        walk(key, before.get(key, _ABSENT), after.get(key, _ABSENT))
    return changes


def _governed_baseline(campaign: Campaign, stored: dict[str, Any], *, kind: str) -> dict[str, Any]:
    """The stored sheet, a governed key it lacks (a sheet stored before that field
    existed) filled as its ruleset fills it today, so an edit never 'changes' it."""
    if all(key in stored for key in _governed(campaign)):
        return stored
    try:
        filled = normalized_sheet(campaign, stored, kind=kind, gm_override=True, previous=stored)
    except RuleError:
        return stored
    return {**filled, **stored}


def _pruned(value: Any) -> Any:
    """A value as a merge patch can state it: null members are absent (RFC 7396)."""
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v is not None}
    return value


def _refuse_governed(changed: list[str]) -> Forbidden:
    fields = list(dict.fromkeys(changed))
    return Forbidden(
        f"a player may not change the rule-governed sheet field(s) {', '.join(fields)}: "
        "only rule operations and the GM change them",
        field=f"sheet.{fields[0]}", extra={"fields": fields},
    )


def _players_sheet(campaign: Campaign, raw: dict[str, Any], baseline: dict[str, Any], keys: Any, *, kind: str,
                   previous: dict[str, Any] | None) -> dict[str, Any]:
    """The player's sheet, normalized; 403 naming each governed key in `keys` it changes
    from `baseline` (the same value sent again is no change). A key whose raw value
    differs is refused even when its value is also invalid (no value of it is the
    player's), unless the sheet is invalid without it too (then the 422 stands)."""
    touched = [k for k in keys if _pruned(raw.get(k)) != _pruned(baseline.get(k))]
    try:
        sheet = normalized_sheet(campaign, raw, kind=kind, gm_override=False, previous=previous)
    except RuleError as exc:
        if not touched:
            raise
        untouched = {**{k: v for k, v in raw.items() if k not in touched},
                     **{k: baseline[k] for k in touched if k in baseline}}
        try:
            normalized_sheet(campaign, untouched, kind=kind, gm_override=False, previous=previous)
        except RuleError:
            raise exc from None
        raise _refuse_governed(touched) from None
    changed = [c["field"] for c in governed_changes(baseline, sheet, keys)]
    if changed:
        raise _refuse_governed(changed)
    return sheet


def _players_edited_sheet(campaign: Campaign, raw: dict[str, Any], previous: dict[str, Any], *, kind: str) -> dict[str, Any]:
    """A player's PATCH of its own sheet: free fields only."""
    return _players_sheet(campaign, raw, _governed_baseline(campaign, previous, kind=kind), _governed(campaign),
                          kind=kind, previous=previous)


def _players_new_sheet(campaign: Campaign, raw: dict[str, Any], *, kind: str) -> dict[str, Any]:
    """A player's own new character: it builds its sheet (stats, pools and maxima…:
    the governed fields marked settable at creation); the other governed fields
    (karma, level, light/dark points…) stay where the rules start them, i.e. as
    the ruleset fills them when the sheet leaves them out."""
    fixed = [k for k, at_creation in _governed(campaign).items() if not at_creation and k in raw]
    if not fixed:
        return normalized_sheet(campaign, raw, kind=kind, gm_override=False)
    start = normalized_sheet(campaign, {k: v for k, v in raw.items() if k not in fixed}, kind=kind, gm_override=False)
    return _players_sheet(campaign, raw, start, fixed, kind=kind, previous=None)


# --- versioned writes -------------------------------------------------------------

_INSERT_LOG = insert(LogEntry.__table__)


def _log_sheet_edit(session: Session, character: Character, changes: list[dict[str, Any]], now) -> dict[str, Any]:
    """The GM's edit of rule-governed fields, in the roll log (visible to the table)."""
    body = {"id": new_id(), "kind": "sheet_edit", "character_id": character.id, "changes": changes,
            "rolls": [], "hidden": False, "created_at": iso(now)}
    session.connection().execute(_INSERT_LOG, {
        "id": body["id"], "campaign_id": character.campaign_id, "character_id": character.id, "kind": "sheet_edit",
        "hidden": False, "created_at": now, "body": body, "rerolls": None,
    })
    return body


def _save_version(session: Session, character: Character, ruleset: str,
                  changes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Write the new state only if nobody else wrote since we read (else 412); a GM
    edit of rule-governed fields (`changes`) is logged in the same transaction."""
    now = utcnow()
    result = session.execute(
        update(Character)
        .where(Character.id == character.id, Character.version == character.version)
        .values(name=character.name, kind=character.kind, player_id=character.player_id,
                sheet=character.sheet, version=character.version + 1, updated_at=now)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:
        session.rollback()
        raise PreconditionFailed("the character changed while this request was applied; read it again")
    if changes:
        entry = _log_sheet_edit(session, character, changes, now)
        events.record(session, character.campaign_id, "log.created",
                      {"entry_id": entry["id"], "characters_changed": [{"id": character.id, "version": character.version + 1}]})
    events.record(session, character.campaign_id, "character.updated", {"id": character.id, "version": character.version + 1})
    session.commit()
    character.version += 1
    character.updated_at = now
    return public(character, ruleset)


def delete_character(session: Session, principal: Principal, character_id: str, if_match: str | None) -> None:
    character, _ = load_character(session, principal, character_id, for_update=True)
    check_owner_or_gm(principal, character.player_id, "delete this character")
    check_if_match(character.version, if_match, "character")
    session.delete(character)
    events.record(session, character.campaign_id, "character.deleted", {"id": character.id})
    session.commit()
