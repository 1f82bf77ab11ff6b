"""Campaigns and players: creation with their tokens, reads, option updates."""
from __future__ import annotations

from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from app.kit.errors import Conflict, NotFound
from app.core.security import hash_token, new_token
from app.models.schemas import CampaignCreate, CampaignCreated, CampaignPublic, CampaignUpdate, PlayerCreate, PlayerCreated, PlayerPublic
from app.models.tables import Campaign, Credential, Player, utcnow
from app.services import events
from app.services.auth import Principal, check_gm, check_member
from app.services.pages import check_if_match, created_order_page
from app.services.rulesets import RULESET_IDS, get_adapter
from app.services.validation import InvalidBody, validate


def validated_options(ruleset: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """Options checked against the ruleset (unknown option → 422), defaults filled."""
    adapter = get_adapter(ruleset)
    return validate(adapter.Options, options or {}, loc=("body", "options")).model_dump(mode="json")


def _public(campaign: Campaign, role: str | None) -> dict[str, Any]:
    return CampaignPublic.model_validate({**campaign.model_dump(), "role": role}).model_dump()


def create_campaign(session: Session, data: CampaignCreate) -> dict[str, Any]:
    if data.ruleset not in RULESET_IDS:
        raise InvalidBody(f"unknown ruleset {data.ruleset!r}; known: {', '.join(RULESET_IDS)}", field="ruleset")
    options = validated_options(data.ruleset, data.options)
    campaign = Campaign(name=data.name, ruleset=data.ruleset, options=options)
    token = new_token("gm")
    session.add(campaign)
    session.flush()
    session.add(Credential(token_hash=hash_token(token), campaign_id=campaign.id, role="gm"))
    session.commit()
    return CampaignCreated.model_validate({**_public(campaign, "gm"), "gm_token": token}).model_dump()


def load_campaign(session: Session, principal: Principal, campaign_id: str, *, for_update: bool = False) -> Campaign:
    check_member(principal, campaign_id)
    campaign = session.get(Campaign, campaign_id, with_for_update=for_update)
    if campaign is None:
        raise NotFound("no campaign with this id")
    return campaign


def read_campaign(session: Session, principal: Principal, campaign_id: str) -> dict[str, Any]:
    return _public(load_campaign(session, principal, campaign_id), principal.role)


def update_campaign(session: Session, principal: Principal, campaign_id: str, data: CampaignUpdate,
                    if_match: str | None = None) -> dict[str, Any]:
    campaign = load_campaign(session, principal, campaign_id, for_update=True)
    check_gm(principal, "change the campaign")
    check_if_match(campaign.version, if_match, "campaign")
    if data.name is not None:
        campaign.name = data.name
    if data.options is not None:
        campaign.options = validated_options(campaign.ruleset, {**campaign.options, **data.options})
    campaign.version += 1
    campaign.updated_at = utcnow()
    session.add(campaign)
    events.record(session, campaign_id, "campaign.updated",
                  {"id": campaign_id, "version": campaign.version, "name": campaign.name, "options": campaign.options})
    session.commit()
    return _public(campaign, principal.role)


def list_players(session: Session, principal: Principal, campaign_id: str, *, limit: int = 50,
                 cursor: str | None = None) -> dict[str, Any]:
    load_campaign(session, principal, campaign_id)
    return created_order_page(session, select(Player).where(Player.campaign_id == campaign_id), Player,
                              limit=limit, cursor=cursor, shape=lambda p: PlayerPublic.model_validate(p.model_dump()).model_dump())


def create_player(session: Session, principal: Principal, campaign_id: str, data: PlayerCreate,
                  *, max_players: int) -> dict[str, Any]:
    """A new player and its token; 409 once the campaign has MAX_PLAYERS_PER_CAMPAIGN
    players (tokens are minted per player, so an unbounded count would multiply any
    per-token limit). The count is taken under the campaign's row lock (PostgreSQL;
    SQLite writers are serialized already), so concurrent adds cannot pass the cap."""
    cap = max_players
    load_campaign(session, principal, campaign_id, for_update=True)
    check_gm(principal, "add players")
    players = session.exec(select(func.count()).select_from(Player).where(Player.campaign_id == campaign_id)).one()
    if players >= cap:
        raise Conflict(f"a campaign has at most {cap} players (MAX_PLAYERS_PER_CAMPAIGN)",
                       extra={"max_players": cap})
    player = Player(campaign_id=campaign_id, name=data.name)
    token = new_token("pl")
    session.add(player)
    session.flush()
    session.add(Credential(token_hash=hash_token(token), campaign_id=campaign_id, player_id=player.id, role="player"))
    events.record(session, campaign_id, "player.created", {"id": player.id, "name": player.name})
    session.commit()
    return PlayerCreated.model_validate({**player.model_dump(), "token": token}).model_dump()
