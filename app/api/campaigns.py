"""Campaigns and their players, and the tokens' lifecycle: who am I, rotation,
removing a player, deleting a campaign, inviting a player by a link."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response

from app.api.deps import (
    CheckedRoute,
    IfMatch,
    PrincipalDep,
    SessionFactory,
    access,
    etag,
    in_thread,
    read,
    require_admin,
)
from app.api.ratelimit import RateLimiter, client_address, limit_campaign_creation
from app.kit.errors import NotFound
from app.models.schemas import (
    CampaignCreate,
    CampaignCreated,
    CampaignPublic,
    CampaignUpdate,
    GmTokenRotated,
    InviteAccepted,
    InviteCreate,
    InviteCreated,
    Me,
    PlayerCreate,
    PlayerCreated,
    PlayerPage,
    PlayerTokenRotated,
)
from app.services import auth, campaigns

router = APIRouter(tags=["campaigns"], route_class=CheckedRoute)
CAMPAIGN = "/v1/campaigns/{campaign_id}"


@router.post(
    "/v1/campaigns",
    status_code=201,
    response_model=CampaignCreated,
    dependencies=[Depends(limit_campaign_creation), Depends(require_admin)],
    summary="Create a campaign; the GM token is returned once",
)
@access("admin")
async def create_campaign(data: CampaignCreate, sessions: SessionFactory, response: Response) -> dict[str, Any]:
    created = await in_thread(sessions, campaigns.create_campaign, data)
    response.headers["ETag"] = etag(created["version"])
    response.headers["Location"] = f"/v1/campaigns/{created['id']}"
    return created


@router.get(CAMPAIGN, response_model=CampaignPublic)
@access("member")
async def read_campaign(
    campaign_id: str, sessions: SessionFactory, principal: PrincipalDep, response: Response
) -> dict[str, Any]:
    campaign = await read(sessions, campaigns.read_campaign, principal, campaign_id)
    response.headers["ETag"] = etag(campaign["version"])
    return campaign


@router.patch(CAMPAIGN, response_model=CampaignPublic, summary="GM: rename or change options")
@access("gm")
async def update_campaign(
    campaign_id: str,
    data: CampaignUpdate,
    sessions: SessionFactory,
    principal: PrincipalDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    campaign = await in_thread(sessions, campaigns.update_campaign, principal, campaign_id, data, if_match)
    response.headers["ETag"] = etag(campaign["version"])
    return campaign


@router.delete(
    CAMPAIGN,
    status_code=204,
    response_class=Response,
    summary="GM: delete the campaign and everything of it (players, tokens, characters, log, events, encounters)",
)
@access("gm")
async def delete_campaign(
    campaign_id: str, sessions: SessionFactory, principal: PrincipalDep, if_match: IfMatch = None
) -> Response:
    await in_thread(sessions, campaigns.delete_campaign, principal, campaign_id, if_match)
    return Response(status_code=204)


@router.post(
    CAMPAIGN + "/players",
    status_code=201,
    response_model=PlayerCreated,
    summary="GM: add a player; its token is returned once",
)
@access("gm")
async def create_player(
    campaign_id: str,
    data: PlayerCreate,
    request: Request,
    sessions: SessionFactory,
    principal: PrincipalDep,
    response: Response,
) -> dict[str, Any]:
    cap = request.app.state.settings.max_players_per_campaign
    player = await in_thread(sessions, partial(campaigns.create_player, max_players=cap), principal, campaign_id, data)
    response.headers["Location"] = f"/v1/campaigns/{campaign_id}/players/{player['id']}"
    return player


@router.get(CAMPAIGN + "/players", response_model=PlayerPage, summary="The campaign's players")
@access("member")
async def list_players(
    campaign_id: str,
    sessions: SessionFactory,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[str | None, Query(max_length=500)] = None,
) -> dict[str, Any]:
    return await read(sessions, partial(campaigns.list_players, limit=limit, cursor=cursor), principal, campaign_id)


@router.delete(
    CAMPAIGN + "/players/{player_id}",
    status_code=204,
    response_class=Response,
    summary="GM: remove a player; its token dies, its characters stay (unowned)",
)
@access("gm")
async def delete_player(
    campaign_id: str, player_id: str, sessions: SessionFactory, principal: PrincipalDep
) -> Response:
    await in_thread(sessions, campaigns.delete_player, principal, campaign_id, player_id)
    return Response(status_code=204)


@router.post(
    CAMPAIGN + "/players/{player_id}/token/rotate",
    response_model=PlayerTokenRotated,
    summary="GM: a new token for a player; the old one is dead at once",
)
@access("gm")
async def rotate_player_token(
    campaign_id: str, player_id: str, sessions: SessionFactory, principal: PrincipalDep
) -> dict[str, str]:
    return await in_thread(sessions, campaigns.rotate_player_token, principal, campaign_id, player_id)


@router.post(
    CAMPAIGN + "/players/{player_id}/invites",
    status_code=201,
    response_model=InviteCreated,
    summary="GM: a single-use link (and its QR code) that gives a player a token of its own on a new device",
    description="Whoever opens `url` first joins as that player (`POST /v1/invites/{code}/accept`). The code is "
    "shown once (only its hash is stored); it lasts `expires_in` seconds (1 hour by default, at most 7 days). "
    "Rotating the player's token or removing the player revokes its pending invitations and every credential "
    "they gave. `qr_svg` is `url` as a QR code, so the code never travels again to be drawn.",
)
@access("gm")
async def create_invite(
    campaign_id: str,
    player_id: str,
    request: Request,
    sessions: SessionFactory,
    principal: PrincipalDep,
    data: InviteCreate | None = None,
) -> dict[str, Any]:
    base = request.app.state.settings.public_url or str(request.base_url)  # PUBLIC_URL behind a proxy
    return await in_thread(
        sessions, campaigns.create_invite, principal, campaign_id, player_id, data or InviteCreate(), base
    )


@router.post(
    "/v1/invites/{code}/accept",
    status_code=201,
    response_model=InviteAccepted,
    summary="Accept an invitation (no token): a new token of the invited player, for this device",
    description="Single use: a spent, expired or unknown code is the same 404, and counts as a "
    "failed authentication of the client's address (AUTH_FAILURES_PER_MINUTE).",
)
async def accept_invite(code: str, request: Request, sessions: SessionFactory) -> dict[str, str]:
    limiter: RateLimiter = request.app.state.rate_limiter
    address = client_address(request)
    await limiter.refuse_failing_address(address)
    try:
        return await in_thread(sessions, campaigns.accept_invite, code)
    except NotFound:
        await limiter.count_failure(address)
        raise


@router.post(
    CAMPAIGN + "/gm-token/rotate",
    response_model=GmTokenRotated,
    summary="GM: a new GM token; the old one (this request's) is dead at once",
)
@access("gm")
async def rotate_gm_token(campaign_id: str, sessions: SessionFactory, principal: PrincipalDep) -> dict[str, str]:
    return await in_thread(sessions, campaigns.rotate_gm_token, principal, campaign_id)


@router.get("/v1/me", response_model=Me, summary="Who this token is: its campaign, role and player")
@access("member")
async def read_me(sessions: SessionFactory, principal: PrincipalDep) -> dict[str, str | None]:
    return await read(sessions, auth.me, principal)
