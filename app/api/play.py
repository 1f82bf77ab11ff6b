"""Applying the rules: tests, odds, level-ups, rerolls, actions, group tests.
Bodies depend on the campaign's ruleset; openapi.json lists each ruleset's schema."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from app.api.deps import IdempotencyKey, JsonObject, PrincipalDep, SessionDep, idempotency
from app.models.schemas import LogEntryOut, OddsOut, Page
from app.services import play, rolls

router = APIRouter(tags=["play"])
Limit = Annotated[int, Query(ge=1, le=500)]
Cursor = Annotated[str | None, Query(max_length=500)]


@router.post("/v1/characters/{character_id}/tests", status_code=201, response_model=LogEntryOut,
             summary="Owner or GM: apply the ruleset's test rule; logged, effects saved")
def run_test(character_id: str, body: JsonObject, request: Request, session: SessionDep, principal: PrincipalDep,
             idempotency_key: IdempotencyKey = None) -> dict[str, Any]:
    return play.run_test(session, principal, character_id, body, idempotency(request, idempotency_key, body))


@router.post("/v1/characters/{character_id}/tests/odds", response_model=OddsOut,
             summary="Owner or GM: exact probability of every outcome; nothing rolled")
def test_odds(character_id: str, body: JsonObject, session: SessionDep, principal: PrincipalDep) -> dict[str, Any]:
    return play.odds(session, principal, character_id, body)


@router.post("/v1/characters/{character_id}/tests/{test_id}/reroll", status_code=201, response_model=LogEntryOut,
             summary="Owner or GM: cancel a test and roll it again (where the ruleset allows)")
def reroll(character_id: str, test_id: str, body: JsonObject, request: Request, session: SessionDep,
           principal: PrincipalDep, idempotency_key: IdempotencyKey = None) -> dict[str, Any]:
    return play.reroll(session, principal, character_id, test_id, body, idempotency(request, idempotency_key, body))


@router.post("/v1/characters/{character_id}/actions", status_code=201, response_model=LogEntryOut,
             summary="A ruleset-specific character action (`type` names it)")
def character_action(character_id: str, body: JsonObject, request: Request, session: SessionDep,
                     principal: PrincipalDep, idempotency_key: IdempotencyKey = None) -> dict[str, Any]:
    return play.character_action(session, principal, character_id, body, idempotency(request, idempotency_key, body))


@router.post("/v1/characters/{character_id}/level-ups", status_code=201, response_model=LogEntryOut,
             summary="GM: apply the ruleset's level-up, with every die and choice")
def level_up(character_id: str, body: JsonObject, request: Request, session: SessionDep, principal: PrincipalDep,
             idempotency_key: IdempotencyKey = None) -> dict[str, Any]:
    return play.level_up(session, principal, character_id, body, idempotency(request, idempotency_key, body))


@router.get("/v1/characters/{character_id}/level-ups", response_model=Page[LogEntryOut], summary="Level-up history, newest first")
def level_up_history(character_id: str, session: SessionDep, principal: PrincipalDep, limit: Limit = 50, cursor: Cursor = None) -> dict[str, Any]:
    play.ensure_character(session, principal, character_id)
    return rolls.list_log(session, principal, principal.campaign_id, limit=limit, cursor=cursor,
                          character_id=character_id, kind="level_up")


@router.post("/v1/campaigns/{campaign_id}/tests/opposed", status_code=201, response_model=LogEntryOut,
             summary="GM: a confrontation of two characters' tests")
def opposed(campaign_id: str, body: JsonObject, request: Request, session: SessionDep, principal: PrincipalDep,
            idempotency_key: IdempotencyKey = None) -> dict[str, Any]:
    return play.opposed(session, principal, campaign_id, body, idempotency(request, idempotency_key, body))


@router.post("/v1/campaigns/{campaign_id}/tests/group", status_code=201, response_model=LogEntryOut,
             summary="GM: a group test (cooperation, ranking)")
def group(campaign_id: str, body: JsonObject, request: Request, session: SessionDep, principal: PrincipalDep,
          idempotency_key: IdempotencyKey = None) -> dict[str, Any]:
    return play.group(session, principal, campaign_id, body, idempotency(request, idempotency_key, body))
