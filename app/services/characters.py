"""Characters: CRUD with the sheet validated by the campaign's ruleset on every
write, optimistic versions (ETag / If-Match) and ownership checks."""
from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from sqlalchemy import update
from sqlmodel import Session, select

from app.core.errors import Forbidden, NotFound, PreconditionFailed
from app.models.schemas import CharacterCreate, CharacterPublic, CharacterUpdate
from app.models.tables import Campaign, Character, Player, utcnow
from app.rules.errors import RuleError
from app.services import events
from app.services.auth import Principal, check_owner_or_gm
from app.services.campaigns import load_campaign
from app.services.pages import check_if_match, created_order_page
from app.services.rulesets import get_adapter
from app.services.validation import InvalidBody, invalid_from, prefixed


def public(character: Character, ruleset: str) -> dict[str, Any]:
    adapter = get_adapter(ruleset)
    data = {**character.model_dump(), "ruleset": ruleset, "derived": adapter.derived(character.sheet)}
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
        if exc.status_code != 422:
            raise
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
    sheet = normalized_sheet(campaign, data.sheet, kind=data.kind, gm_override=data.gm_override)
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
    if data.sheet is not None or data.kind is not None:
        raw = merge_patch(character.sheet, data.sheet or {})
        character.sheet = normalized_sheet(campaign, raw, kind=character.kind, gm_override=data.gm_override,
                                           previous=character.sheet)
    return _save_version(session, character, campaign.ruleset)


def _save_version(session: Session, character: Character, ruleset: str) -> dict[str, Any]:
    """Write the new state only if nobody else wrote since we read (else 412)."""
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
