"""Characters: CRUD, sheet validated by the campaign's ruleset."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from app.api.deps import CheckedRoute, IfMatch, PrincipalDep, SessionFactory, access, etag, in_thread, read
from app.models.schemas import CharacterCreate, CharacterPage, CharacterPublic, CharacterRead, CharacterUpdate
from app.services import characters

router = APIRouter(tags=["characters"], route_class=CheckedRoute)
Limit = Annotated[int, Query(ge=1, le=500)]
Cursor = Annotated[str | None, Query(max_length=500)]


@router.post("/v1/campaigns/{campaign_id}/characters", status_code=201, response_model=CharacterPublic)
@access("member")
async def create_character(
    campaign_id: str, data: CharacterCreate, sessions: SessionFactory, principal: PrincipalDep, response: Response
) -> dict[str, Any]:
    created = await in_thread(sessions, characters.create_character, principal, campaign_id, data)
    response.headers["ETag"] = etag(created["version"])
    response.headers["Location"] = f"/v1/characters/{created['id']}"
    return created


@router.get("/v1/campaigns/{campaign_id}/characters", response_model=CharacterPage)
@access("member")
async def list_characters(
    campaign_id: str, sessions: SessionFactory, principal: PrincipalDep, limit: Limit = 50, cursor: Cursor = None
) -> dict[str, Any]:
    return await read(sessions, partial(characters.list_characters, limit=limit, cursor=cursor), principal, campaign_id)


@router.get(
    "/v1/characters/{character_id}",
    response_model=CharacterRead,
    summary="The character as the caller may read it: whole (GM, owner, `observer`), or `limited`",
)
@access("member")
async def read_character(
    character_id: str, sessions: SessionFactory, principal: PrincipalDep, response: Response
) -> dict[str, Any]:
    found = await read(sessions, characters.read_character, principal, character_id)
    response.headers["ETag"] = etag(found["version"])
    return found


@router.patch(
    "/v1/characters/{character_id}",
    response_model=CharacterPublic,
    summary="Owner or GM; the sheet is a JSON merge patch",
)
@access("owner_or_gm")
async def update_character(
    character_id: str,
    data: CharacterUpdate,
    sessions: SessionFactory,
    principal: PrincipalDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    updated = await in_thread(sessions, characters.update_character, principal, character_id, data, if_match)
    response.headers["ETag"] = etag(updated["version"])
    return updated


@router.delete("/v1/characters/{character_id}", status_code=204, response_class=Response)
@access("owner_or_gm")
async def delete_character(
    character_id: str, sessions: SessionFactory, principal: PrincipalDep, if_match: IfMatch = None
) -> Response:
    await in_thread(sessions, characters.delete_character, principal, character_id, if_match)
    return Response(status_code=204)
