"""Characters: CRUD with the sheet validated by the campaign's ruleset on every
write, optimistic versions (ETag / If-Match) and ownership checks.

Who may change what on a sheet (rules README): a player edits its own sheet's
free fields; a rule-governed field (declared on the sheet model, see
`app.models.governance`) changes only through rule operations or a GM
edit, which the roll log records as a `sheet_edit` entry with before/after."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from sqlalchemy.engine import Connection
from sqlmodel import Session, col, select

from app.kit.errors import Forbidden, NotFound, PreconditionFailed
from app.models.governance import governed_fields
from app.models.results.common import wire_time
from app.models.schemas import (
    CharacterCreate,
    CharacterLimited,
    CharacterPublic,
    CharacterUpdate,
    merge_metadata,
    merge_patch,
)
from app.models.tables import Character, Player, new_id, utcnow
from app.models.validation import InvalidBody, invalid_from, prefixed
from app.rules.errors import RuleError
from app.rulesets.registry import get_adapter, rules_for
from app.services.auth import authorize
from app.services.changed import CharacterChanged, CharacterCreated, CharacterDeleted
from app.services.encounters.view import status
from app.services.pages import check_if_match, created_order_page
from app.services.provenance import NO_DICE
from app.services.records import Principal, StoredCharacter
from app.services.uow import CampaignRow, CharacterRepository, StaleVersion, UnitOfWork, load_campaign, read_campaign
from app.services.visibility import (
    NOT_FIGHTING,
    Audience,
    Standing,
    about,
    check_visible,
    hidden_from_player,
    level_for,
    others_level,
    sees_all,
    standing_of,
    standings,
    view_version,
)

_PUBLIC = (
    "id",
    "campaign_id",
    "name",
    "kind",
    "player_id",
    "sheet",
    "player_access",
    "version",
    "created_at",
    "updated_at",
)
_LIMITED = ("id", "campaign_id", "name", "kind", "created_at")


def public(character: StoredCharacter | Character, ruleset: str) -> dict[str, Any]:
    """The character as the GM and its owner read it (and players with `observer` access)."""
    adapter = get_adapter(ruleset)
    sheet = adapter.parse_sheet(character.sheet)
    data = {
        **{f: getattr(character, f) for f in _PUBLIC},
        # as it is read (`sheet_as_now`): a value stored while its field was lax ("3", "yes") is
        # sent as today's schema types it, as the export sends it
        "sheet": adapter.dump_sheet(sheet),
        "ruleset": ruleset,
        "derived": adapter.derived(sheet),
        "metadata": character.client_metadata,
    }
    return CharacterPublic.model_validate(data).model_dump()


def limited(character: StoredCharacter | Character, ruleset: str, *, pools: bool = True) -> dict[str, Any]:
    """The character as a player with `limited` access reads it: no sheet, each pool as a status
    word (API.md); `pools=False` when a fight it is in hides them (`hp_visibility: hidden`).
    Its `version` is computed from what it shows (`view_version`), and its `updated_at` is its
    `created_at`: an edit this view does not show moves neither (nor its ETag)."""
    shown = (
        {
            name: {"status": status(r["value"], r["max"])}
            for name, r in rules_for(ruleset).resources(get_adapter(ruleset).parse_sheet(character.sheet)).items()
        }
        if pools
        else {}
    )
    seen = {"id": character.id, "name": character.name, "kind": character.kind, "ruleset": ruleset, "pools": shown}
    data = {
        **{f: getattr(character, f) for f in _LIMITED},
        **seen,
        "version": view_version(seen),
        "updated_at": character.created_at,
    }
    return CharacterLimited.model_validate(data).model_dump()


def view(character: StoredCharacter | Character, ruleset: str, level: str) -> dict[str, Any] | None:
    """The character at one visibility level (`visibility.LEVELS`); None for `none`."""
    if level == "observer":
        return public(character, ruleset)
    if level in ("limited", "masked"):
        return limited(character, ruleset, pools=level == "limited")
    return None


def audience(
    conn: Connection,
    character: StoredCharacter,
    ruleset: str,
    *,
    hidden: bool = False,
    before: StoredCharacter | None = None,
) -> Audience:
    """Who receives an event carrying this character, and what: the GM and its owner the whole
    of it, the other players what their access grants (`hidden`: the GM's alone, and the owner's).
    `before`: the character before this change; when the other players' partial view of it is
    the same, the change is not theirs to know of (they could count the hidden edits)."""
    standing = NOT_FIGHTING if hidden else standing_of(conn, character)
    level = "none" if hidden else others_level(character, standing)
    if level == "observer":
        return Audience()
    shown = view(character, ruleset, level)
    if before is not None and level != "none" and others_level(before, standing) == level:
        hidden = view(before, ruleset, level) == shown
    return Audience(hidden=hidden or level == "none", owner_id=character.player_id, player_data=shown)


def updated_events(
    conn: Connection,
    characters: list[StoredCharacter],
    ruleset: str,
    *,
    hidden: bool = False,
    not_fighting: Collection[str] = (),
    known: Mapping[str, Standing] | None = None,
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The `character.updated` of each of these characters (a fight changed their sheets): its data
    and `events.record`'s audience arguments, their fights read in one query (to record later, in
    the writes' batch: nothing is read then). `hidden`: the change is one the other players may not
    know of (a hidden action: never what or who, API.md): the GM's and the owner's.
    `not_fighting`: characters the caller knows are in no fight; `known`: the standings the caller
    knows (a fight's own: `Fight.stored_standings`). Neither is read again."""
    if not characters:
        return []
    fights = dict(known or {})
    unknown = [c.id for c in characters if c.id not in not_fighting and c.id not in fights]
    if not hidden and unknown:
        fights.update(standings(conn, characters[0].campaign_id, unknown))
    out = []
    for character in characters:
        level = "none" if hidden else others_level(character, fights.get(character.id, NOT_FIGHTING))
        who = (
            Audience()
            if level == "observer"
            else Audience(
                hidden=level == "none", owner_id=character.player_id, player_data=view(character, ruleset, level)
            )
        )
        out.append((public(character, ruleset), who.record_args()))
    return out


def orphan(uow: UnitOfWork, player_id: str) -> None:
    """A removed player's characters, owned by nobody now (the GM's), in the player's removal's unit of
    work: each saved (locked in id order, after the fights showing them: `FightLocks.before`; its
    version and `updated_at` move, so a client's ETag sees the change), told and its fights moved
    (their view shows the owner) by the unit of work (`changed`). One given to another player
    meanwhile is left to that player."""
    owned = select(Character.id).where(
        col(Character.campaign_id) == uow.campaign_id, col(Character.player_id) == player_id
    )
    ids = list(uow.session.exec(owned))
    if not ids:
        return
    uow.locks.before(ids)
    now = utcnow()
    locked = uow.characters.find(ids, lock=True).values()
    for before in [c for c in locked if c.player_id == player_id]:
        uow.changed(CharacterChanged(before, uow.characters.save(before, now=now, player_id=None)))


def normalized_sheet(
    campaign: CampaignRow, raw: dict[str, Any], *, kind: str, gm_override: bool, previous: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The sheet as its ruleset stores it; errors located under `body.sheet`."""
    adapter = get_adapter(campaign.ruleset)
    try:
        options = adapter.parse_options(campaign.options)
        return adapter.normalize_sheet_in_context(
            raw, kind=kind, gm_override=gm_override, options=options, previous=previous
        )
    except ValidationError as exc:
        raise invalid_from(exc, ("body", "sheet")) from None
    except RuleError as exc:
        raise prefixed(exc, "sheet") from None


def hold_players(session: Session, principal: Principal, campaign_id: str) -> None:
    """The campaign's players held until the commit, before any other lock (the campaign's row FOR NO
    KEY UPDATE, as a player's removal takes it first: see `locks`): a character given
    to a player is given before that player's removal lists its characters, or after it (the player is
    then unknown: 422), never between (the removal's DELETE would then break the foreign key: a 500)."""
    load_campaign(session, principal, campaign_id, for_update=True)


def _check_player(session: Session, campaign_id: str, player_id: str | None) -> None:
    if player_id is None:
        return
    player = session.get(Player, player_id)
    if player is None or player.campaign_id != campaign_id:
        raise InvalidBody(f"no player {player_id!r} in this campaign", field="player_id", code="unknown_id")


def create_character(session: Session, principal: Principal, campaign_id: str, data: CharacterCreate) -> dict[str, Any]:
    with UnitOfWork(session, campaign_id) as uow:
        campaign = uow.campaign()
        player_id = data.player_id
        if not principal.is_gm:
            if data.kind != "pc" or (player_id not in (None, principal.player_id)) or data.gm_override:
                raise Forbidden(
                    "a player may only create its own player character, without GM override", code="forbidden"
                )
            if data.player_access is not None:
                raise Forbidden(
                    "only the GM sets what players see of a character (player_access)",
                    field="player_access",
                    code="gm_only",
                )
            player_id = principal.player_id
        if player_id is not None:
            hold_players(session, principal, campaign_id)
        _check_player(session, campaign_id, player_id)
        if principal.is_gm:
            sheet = normalized_sheet(campaign, data.sheet, kind=data.kind, gm_override=data.gm_override)
        else:
            sheet = _players_new_sheet(campaign, data.sheet, kind=data.kind)
        character = uow.characters.add(
            id=new_id(),
            player_id=player_id,
            name=data.name,
            kind=data.kind,
            sheet=sheet,
            now=utcnow(),
            player_access=data.player_access,
            client_metadata=data.metadata,
        )
        uow.changed(CharacterCreated(character))
        uow.commit()
    return public(character, campaign.ruleset)


def list_characters(
    session: Session, principal: Principal, campaign_id: str, *, limit: int, cursor: str | None
) -> dict[str, Any]:
    """The characters the caller may know of, each as it may read it."""
    campaign = load_campaign(session, principal, campaign_id)
    query = select(Character).where(Character.campaign_id == campaign_id)
    if not principal.is_gm:
        hidden = hidden_from_player().params(campaign_id=campaign_id, player_id=principal.player_id)
        query = query.where(col(Character.id).not_in(hidden))
    page = created_order_page(session, query, Character, limit=limit, cursor=cursor, shape=lambda c: c)
    fights = {} if principal.is_gm else standings(session.connection(), campaign_id, [c.id for c in page["items"]])
    page["items"] = [
        view(c, campaign.ruleset, level_for(principal, c, fights.get(c.id, NOT_FIGHTING))) for c in page["items"]
    ]
    return page


def load_character(session: Session, principal: Principal, character_id: str) -> tuple[StoredCharacter, Any]:
    """A character of the caller's campaign that the caller may know of (404 otherwise) and its
    campaign's row, for reading."""
    character = CharacterRepository(session.connection(), principal.campaign_id).get(character_id)
    check_visible(session.connection(), principal, character)
    return character, read_campaign(session.connection(), principal.campaign_id)


def reading_level(conn: Connection, principal: Principal, character: StoredCharacter) -> str:
    """What the caller sees of a character it may know of (its fights read only when they matter)."""
    if sees_all(principal, character) or character.player_access == "none":
        return level_for(principal, character)
    return others_level(character, standing_of(conn, character))


def read_character(session: Session, principal: Principal, character_id: str) -> dict[str, Any]:
    character, campaign = load_character(session, principal, character_id)
    shown = view(character, campaign.ruleset, reading_level(session.connection(), principal, character))
    if shown is None:
        raise NotFound("no character with this id")
    return shown


def update_character(
    session: Session, principal: Principal, character_id: str, data: CharacterUpdate, if_match: str | None
) -> dict[str, Any]:
    with UnitOfWork(session, principal.campaign_id) as uow:
        if data.player_id is not None:  # given to a player: first of all (`hold_players`)
            hold_players(session, principal, principal.campaign_id)
        uow.locks.before([character_id])
        before = uow.characters.get(character_id, lock=True)
        campaign = uow.campaign()
        check_visible(uow.conn, principal, before)
        authorize(principal, before.player_id)
        check_if_match(before.version, if_match, "character")
        fields = data.model_dump(exclude_unset=True)
        if not principal.is_gm and ({"kind", "player_id", "player_access"} & fields.keys() or data.gm_override):
            raise Forbidden(
                "only the GM may change a character's kind, owner, what players see of it "
                "(player_access), or override the rules' bounds",
                code="gm_only",
            )
        changed: dict[str, Any] = {}
        if data.player_access is not None:
            changed["player_access"] = data.player_access
        if "player_id" in fields:
            _check_player(session, campaign.id, data.player_id)
            changed["player_id"] = data.player_id
        if data.name is not None:
            changed["name"] = data.name
        if data.metadata is not None:
            changed["client_metadata"] = merge_metadata(before.client_metadata, data.metadata)
        if data.kind is not None:
            changed["kind"] = data.kind
        kind = changed.get("kind", before.kind)
        governed: list[dict[str, Any]] = []
        if data.sheet is not None or data.kind is not None:
            previous = get_adapter(campaign.ruleset).sheet_as_now(before.sheet)  # what was stored lax, read as it was
            raw = merge_patch(previous, data.sheet or {})
            if principal.is_gm:
                changed["sheet"] = normalized_sheet(
                    campaign, raw, kind=kind, gm_override=data.gm_override, previous=previous
                )
                governed = governed_changes(
                    _governed_baseline(campaign, previous, kind=kind), changed["sheet"], _governed(campaign)
                )
            else:
                changed["sheet"] = _players_edited_sheet(campaign, raw, previous, kind=kind)
        after = _save_version(uow, before, changed, governed)
    return public(after, campaign.ruleset)


# --- who may change what on a sheet -----------------------------------------------

_ABSENT = object()


def _governed(campaign: CampaignRow) -> dict[str, bool]:
    """The campaign's rule-governed sheet keys -> whether a player's creation may set them."""
    sheet_model: type[BaseModel] = get_adapter(campaign.ruleset).Sheet
    return governed_fields(sheet_model)


def governed_changes(before: dict[str, Any], after: dict[str, Any], keys: Any) -> list[dict[str, Any]]:
    """[{field, before, after}] of each rule-governed value that differs, nested keys
    dotted (`stats.force`, `challenges.crochetage.successes`); an absent value is null."""
    changes: list[dict[str, Any]] = []

    def walk(path: str, old: Any, new: Any) -> None:
        if isinstance(old, dict) and isinstance(new, dict):
            for key in [*old, *(k for k in new if k not in old)]:
                walk(f"{path}.{key}", old.get(key, _ABSENT), new.get(key, _ABSENT))
        elif old != new:
            changes.append(
                {"field": path, "before": None if old is _ABSENT else old, "after": None if new is _ABSENT else new}
            )

    for key in keys:
        walk(key, before.get(key, _ABSENT), after.get(key, _ABSENT))
    return changes


def _governed_baseline(campaign: CampaignRow, stored: dict[str, Any], *, kind: str) -> dict[str, Any]:
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
        field=f"sheet.{fields[0]}",
        extra={"fields": fields},
        code="rule_governed_field",
    )


def _players_sheet(
    campaign: CampaignRow,
    raw: dict[str, Any],
    baseline: dict[str, Any],
    keys: Any,
    *,
    kind: str,
    previous: dict[str, Any] | None,
) -> dict[str, Any]:
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
        untouched = {
            **{k: v for k, v in raw.items() if k not in touched},
            **{k: baseline[k] for k in touched if k in baseline},
        }
        try:
            normalized_sheet(campaign, untouched, kind=kind, gm_override=False, previous=previous)
        except RuleError:
            raise exc from None
        raise _refuse_governed(touched) from None
    changed = [c["field"] for c in governed_changes(baseline, sheet, keys)]
    if changed:
        raise _refuse_governed(changed)
    return sheet


def _players_edited_sheet(
    campaign: CampaignRow, raw: dict[str, Any], previous: dict[str, Any], *, kind: str
) -> dict[str, Any]:
    """A player's PATCH of its own sheet: free fields only."""
    return _players_sheet(
        campaign,
        raw,
        _governed_baseline(campaign, previous, kind=kind),
        _governed(campaign),
        kind=kind,
        previous=previous,
    )


def _players_new_sheet(campaign: CampaignRow, raw: dict[str, Any], *, kind: str) -> dict[str, Any]:
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


def _save_version(
    uow: UnitOfWork, before: StoredCharacter, changed: dict[str, Any], governed: list[dict[str, Any]]
) -> StoredCharacter:
    """Write the new state only if nobody else wrote since we read (else 412); a GM
    edit of rule-governed fields (`governed`) is logged as a `sheet_edit` entry, in
    the same transaction; commits."""
    now = utcnow()
    try:
        after = uow.characters.save(before, now=now, **changed)
    except StaleVersion:
        raise PreconditionFailed(
            "the character changed while this request was applied; read it again", code="concurrent_change"
        ) from None
    uow.changed(CharacterChanged(before, after, edited=True))
    telling = uow.telling()
    telling.move()  # the fights showing it first: a tracker hears of them before the edit
    if governed:
        body = {
            "id": new_id(),
            "kind": "sheet_edit",
            "character_id": after.id,
            "changes": governed,
            "rolls": [],
            "hidden": False,
            "created_at": wire_time(now),
            **NO_DICE,
        }
        uow.log.append(body, character_id=after.id, hidden=False, created_at=now)
        uow.record(
            "log.created",
            {"entry_id": body["id"], "characters_changed": [{"id": after.id, "version": after.version}]},
            **about(uow.conn, [after]).record_args(),
        )
    telling.tell()
    uow.commit()
    return after


def delete_character(session: Session, principal: Principal, character_id: str, if_match: str | None) -> None:
    with UnitOfWork(session, principal.campaign_id) as uow:
        uow.locks.before([character_id])
        character = uow.characters.get(character_id, lock=True)
        check_visible(uow.conn, principal, character)
        authorize(principal, character.player_id)
        check_if_match(character.version, if_match, "character")
        uow.changed(CharacterDeleted(character))
        uow.commit()
