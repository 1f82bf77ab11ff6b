"""Export and import (API.md round 3): a campaign or one character as one versioned JSON bundle."""

from __future__ import annotations

import re
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from app.api.deps import CheckedRoute, PrincipalDep, SessionFactory, access, in_thread, read, require_admin
from app.api.ratelimit import limit_campaign_creation
from app.core.config import Settings
from app.models.bundles import CampaignBundle, CampaignImportChecked, CampaignImported, CharacterBundle
from app.models.schemas import CharacterPublic
from app.services import bundles

router = APIRouter(tags=["campaigns"], route_class=CheckedRoute)


def larger_bodies(settings: Settings) -> list[tuple[re.Pattern[str], int]]:
    """The import routes take bundles up to IMPORT_MAX_BODY_BYTES (a 10,000-entry campaign is about
    5 MB), every other route MAX_BODY_BYTES (app.api.limits.BodySizeLimit's `larger`)."""
    limit = max(settings.import_max_body_bytes, settings.max_body_bytes)
    return [
        (re.compile(r"/v1/campaigns/import"), limit),
        (re.compile(r"/v1/campaigns/[^/]+/characters/import"), limit),
    ]


@router.get(
    "/v1/campaigns/{campaign_id}/export",
    response_model=CampaignBundle,
    summary="GM: the campaign and its whole history as one JSON bundle",
)
@access("gm")
async def export_campaign(campaign_id: str, sessions: SessionFactory, principal: PrincipalDep) -> dict[str, Any]:
    return await read(sessions, bundles.export_campaign, principal, campaign_id)


@router.post(
    "/v1/campaigns/import",
    status_code=201,
    response_model=CampaignImported | CampaignImportChecked,
    dependencies=[Depends(limit_campaign_creation), Depends(require_admin)],
    summary="A new campaign from a bundle: new ids and tokens, the whole history kept; ?dry_run=true only validates",
    responses={
        200: {"model": CampaignImportChecked, "description": "`dry_run`: the bundle is valid; nothing was written."}
    },
)
@access("admin")
async def import_campaign(
    data: CampaignBundle,
    sessions: SessionFactory,
    response: Response,
    dry_run: Annotated[bool, Query(description="Validate the bundle and write nothing (200).")] = False,
) -> dict[str, Any]:
    result = await in_thread(sessions, partial(bundles.import_campaign, dry_run=dry_run), data)
    if dry_run:
        response.status_code = 200
    else:
        response.headers["Location"] = f"/v1/campaigns/{result['id']}"
    return result


@router.get(
    "/v1/characters/{character_id}/export",
    response_model=CharacterBundle,
    summary="GM: one character (its sheet, metadata, level-ups)",
)
@access("gm")
async def export_character(character_id: str, sessions: SessionFactory, principal: PrincipalDep) -> dict[str, Any]:
    return await read(sessions, bundles.export_character, principal, character_id)


@router.post(
    "/v1/campaigns/{campaign_id}/characters/import",
    status_code=201,
    response_model=CharacterPublic,
    summary="GM: a new character of the campaign from a character bundle (unowned), with its level-ups",
)
@access("gm")
async def import_character(
    campaign_id: str, data: CharacterBundle, sessions: SessionFactory, principal: PrincipalDep, response: Response
) -> dict[str, Any]:
    created = await in_thread(sessions, bundles.import_character, principal, campaign_id, data)
    response.headers["Location"] = f"/v1/characters/{created['id']}"
    return created
