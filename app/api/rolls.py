"""Free rolls and the roll log. Entries are returned as they were logged (the very body
its operation returned); `LogEntry` documents them and the tests check them."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from app.api.deps import (
    CheckedRoute,
    IdempotencyKey,
    PrincipalDep,
    access,
    created,
    encoded,
    idempotency,
    in_thread,
    read,
    sessions_of,
)
from app.models.schemas import RollCreate
from app.rulesets.wire import LogEntry, LogKind, LogPage, RollResult
from app.services import rolls

router = APIRouter(prefix="/v1/campaigns/{campaign_id}/rolls", tags=["rolls"], route_class=CheckedRoute)
Limit = Annotated[int, Query(ge=1, le=500)]
Cursor = Annotated[str | None, Query(max_length=500)]


@router.post("", status_code=201, response_model=RollResult, summary="A free dice roll (3d6+2, 4d6kh3, d100…)")
@access("member")
async def roll_dice(
    campaign_id: str,
    data: RollCreate,
    request: Request,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    key = idempotency(request, idempotency_key, data.model_dump(mode="json"))
    return created(await in_thread(sessions_of(request), rolls.free_roll, principal, campaign_id, data, key), principal)


@router.get("", response_model=LogPage, summary="The roll log, newest first; hidden GM rolls only for the GM")
@access("member")
async def list_rolls(
    campaign_id: str,
    request: Request,
    principal: PrincipalDep,
    limit: Limit = 50,
    cursor: Cursor = None,
    character_id: Annotated[str | None, Query(max_length=32)] = None,
    kind: Annotated[LogKind | None, Query(description="Only the entries of this kind (another: 422).")] = None,
) -> Response:
    return encoded(
        await read(
            sessions_of(request),
            partial(rolls.list_log, limit=limit, cursor=cursor, character_id=character_id, kind=kind),
            principal,
            campaign_id,
        )
    )


@router.get("/{entry_id}", response_model=LogEntry, summary="One roll-log entry")
@access("member")
async def get_roll(campaign_id: str, entry_id: str, request: Request, principal: PrincipalDep) -> JSONResponse:
    return JSONResponse(await read(sessions_of(request), rolls.read_log_entry, principal, campaign_id, entry_id))
