"""Characters: CRUD, sheet validated by the campaign's ruleset."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from app.api.deps import IfMatch, PrincipalDep, SessionDep, etag
from app.models.schemas import CharacterCreate, CharacterPublic, CharacterUpdate, Page
from app.services import characters

router = APIRouter(tags=["characters"])
Limit = Annotated[int, Query(ge=1, le=500)]
Cursor = Annotated[str | None, Query(max_length=500)]


@router.post("/v1/campaigns/{campaign_id}/characters", status_code=201, response_model=CharacterPublic)
def create_character(campaign_id: str, data: CharacterCreate, session: SessionDep, principal: PrincipalDep, response: Response) -> dict[str, Any]:
    created = characters.create_character(session, principal, campaign_id, data)
    response.headers["ETag"] = etag(created["version"])
    return created


@router.get("/v1/campaigns/{campaign_id}/characters", response_model=Page[CharacterPublic])
def list_characters(campaign_id: str, session: SessionDep, principal: PrincipalDep, limit: Limit = 50, cursor: Cursor = None) -> dict[str, Any]:
    return characters.list_characters(session, principal, campaign_id, limit=limit, cursor=cursor)


@router.get("/v1/characters/{character_id}", response_model=CharacterPublic)
def read_character(character_id: str, session: SessionDep, principal: PrincipalDep, response: Response) -> dict[str, Any]:
    found = characters.read_character(session, principal, character_id)
    response.headers["ETag"] = etag(found["version"])
    return found


@router.patch("/v1/characters/{character_id}", response_model=CharacterPublic, summary="Owner or GM; the sheet is a JSON merge patch")
def update_character(character_id: str, data: CharacterUpdate, session: SessionDep, principal: PrincipalDep,
                     response: Response, if_match: IfMatch = None) -> dict[str, Any]:
    updated = characters.update_character(session, principal, character_id, data, if_match)
    response.headers["ETag"] = etag(updated["version"])
    return updated


@router.delete("/v1/characters/{character_id}", status_code=204, response_class=Response)
def delete_character(character_id: str, session: SessionDep, principal: PrincipalDep, if_match: IfMatch = None) -> Response:
    characters.delete_character(session, principal, character_id, if_match)
    return Response(status_code=204)
