"""Campaigns and their players."""
from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.security import HTTPAuthorizationCredentials

from app.api.deps import IfMatch, PrincipalDep, SessionFactory, bearer, etag, in_thread, read
from app.api.ratelimit import limit_campaign_creation
from app.kit.errors import Unauthorized
from app.core.security import same_secret
from app.models.schemas import (
    CampaignCreate, CampaignCreated, CampaignPublic, CampaignUpdate, PlayerCreate, PlayerCreated, PlayerPage,
)
from app.services import campaigns

router = APIRouter(prefix="/v1/campaigns", tags=["campaigns"])


def require_admin(request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
    """When ADMIN_TOKEN is configured, creating a campaign needs it."""
    admin = request.app.state.settings.admin_token
    if admin and (credentials is None or not same_secret(credentials.credentials, admin)):
        raise Unauthorized("creating a campaign needs the admin token on this server",)


@router.post("", status_code=201, response_model=CampaignCreated, dependencies=[Depends(limit_campaign_creation), Depends(require_admin)],
             summary="Create a campaign; the GM token is returned once")
async def create_campaign(data: CampaignCreate, sessions: SessionFactory, response: Response) -> dict[str, Any]:
    created = await in_thread(sessions, campaigns.create_campaign, data)
    response.headers["ETag"] = etag(created["version"])
    return created


@router.get("/{campaign_id}", response_model=CampaignPublic)
async def read_campaign(campaign_id: str, sessions: SessionFactory, principal: PrincipalDep, response: Response) -> dict[str, Any]:
    campaign = await read(sessions, campaigns.read_campaign, principal, campaign_id)
    response.headers["ETag"] = etag(campaign["version"])
    return campaign


@router.patch("/{campaign_id}", response_model=CampaignPublic, summary="GM: rename or change options")
async def update_campaign(campaign_id: str, data: CampaignUpdate, sessions: SessionFactory, principal: PrincipalDep,
                          response: Response, if_match: IfMatch = None) -> dict[str, Any]:
    campaign = await in_thread(sessions, campaigns.update_campaign, principal, campaign_id, data, if_match)
    response.headers["ETag"] = etag(campaign["version"])
    return campaign


@router.post("/{campaign_id}/players", status_code=201, response_model=PlayerCreated, summary="GM: add a player; its token is returned once")
async def create_player(campaign_id: str, data: PlayerCreate, request: Request, sessions: SessionFactory,
                        principal: PrincipalDep) -> dict[str, Any]:
    cap = request.app.state.settings.max_players_per_campaign
    return await in_thread(sessions, partial(campaigns.create_player, max_players=cap), principal, campaign_id, data)


@router.get("/{campaign_id}/players", response_model=PlayerPage, summary="The campaign's players")
async def list_players(campaign_id: str, sessions: SessionFactory, principal: PrincipalDep,
                 limit: Annotated[int, Query(ge=1, le=500)] = 50,
                 cursor: Annotated[str | None, Query(max_length=500)] = None) -> dict[str, Any]:
    return await read(sessions, partial(campaigns.list_players, limit=limit, cursor=cursor), principal, campaign_id)
