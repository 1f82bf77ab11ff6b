"""Luck measured against the exact odds."""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from app.api.deps import CheckedRoute, PrincipalDep, access, read, sessions_of
from app.models.results.stats import CampaignStats
from app.services import stats

router = APIRouter(prefix="/v1/campaigns/{campaign_id}/stats", tags=["rolls"], route_class=CheckedRoute)


@router.get(
    "",
    response_model=CampaignStats,
    summary="The campaign's tests against their exact odds: outcomes, successes and luck, dice",
    description="Per character and for the campaign: each outcome observed beside its expected count (the sum "
    "of each test's exact probability as rolled), successes observed against expected with a luck score "
    "`(observed − expected) / sd`, and the dice by type. Hidden GM entries count for the GM only.",
)
@access("member")
async def campaign_stats(
    campaign_id: str,
    request: Request,
    principal: PrincipalDep,
    character_id: Annotated[str | None, Query(max_length=32)] = None,
    since: Annotated[datetime | None, Query(description="Only the tests logged at or after this time.")] = None,
) -> JSONResponse:
    return JSONResponse(
        await read(
            sessions_of(request),
            partial(stats.campaign_stats, character_id=character_id, since=since),
            principal,
            campaign_id,
        )
    )
