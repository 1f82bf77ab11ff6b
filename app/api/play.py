"""Applying the rules: tests, odds, level-ups, rerolls, actions, group tests.
Bodies depend on the campaign's ruleset; openapi.json lists each ruleset's schema.

The hot path: handlers are async and do all their database work in ONE
threadpool hop (`in_thread`), and return the logged body as it is (it was built
by the service in the documented shape, so it is not validated again): the
`response_model`s document the results (app.rulesets.wire), the tests check them.
The rolling routes are marked `@direct`: a plain request skips FastAPI's solve (app.api.direct)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from app.api.deps import (
    CheckedRoute,
    IdempotencyKey,
    JsonObject,
    PrincipalDep,
    access,
    created,
    encoded,
    idempotency,
    in_thread,
    in_unit,
    read,
    sessions_of,
)
from app.api.direct import direct
from app.rulesets.wire import (
    ActionResult,
    GroupResult,
    LevelUpPage,
    LevelUpResult,
    OddsResult,
    OpposedResult,
    RerollResult,
    TestResult,
)
from app.services import play

router = APIRouter(tags=["play"], route_class=CheckedRoute)
Limit = Annotated[int, Query(ge=1, le=500)]
Cursor = Annotated[str | None, Query(max_length=500)]


@router.post(
    "/v1/characters/{character_id}/tests",
    status_code=201,
    response_model=TestResult,
    summary="Owner or GM: apply the ruleset's test rule; logged, effects saved",
)
@access("owner_or_gm")
@direct
async def run_test(
    character_id: str,
    body: JsonObject,
    request: Request,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    key = idempotency(request, idempotency_key, body)
    return created(await in_unit(sessions_of(request), play.run_test, principal, character_id, body, key), principal)


@router.post(
    "/v1/characters/{character_id}/tests/odds",
    response_model=OddsResult,
    summary="Owner or GM: exact probability of every outcome; nothing rolled",
)
@access("owner_or_gm")
@direct
async def get_odds(character_id: str, body: JsonObject, request: Request, principal: PrincipalDep) -> JSONResponse:
    return JSONResponse(await read(sessions_of(request), play.odds, principal, character_id, body))


@router.post(
    "/v1/characters/{character_id}/tests/{test_id}/reroll",
    status_code=201,
    response_model=RerollResult,
    summary="Owner or GM: cancel a test and roll it again (where the ruleset allows)",
)
@access("owner_or_gm")
@direct
async def reroll_test(
    character_id: str,
    test_id: str,
    body: JsonObject,
    request: Request,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    key = idempotency(request, idempotency_key, body)
    return created(
        await in_thread(sessions_of(request), play.reroll, principal, character_id, test_id, body, key), principal
    )


@router.post(
    "/v1/characters/{character_id}/actions",
    status_code=201,
    response_model=ActionResult,
    summary="A ruleset-specific character action (`type` names it)",
)
@access("owner_or_gm")
@direct
async def run_action(
    character_id: str,
    body: JsonObject,
    request: Request,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    key = idempotency(request, idempotency_key, body)
    return created(
        await in_thread(sessions_of(request), play.character_action, principal, character_id, body, key), principal
    )


@router.post(
    "/v1/characters/{character_id}/level-ups",
    status_code=201,
    response_model=LevelUpResult,
    summary="GM: apply the ruleset's level-up, with every die and choice",
)
@access("gm")
@direct
async def level_up(
    character_id: str,
    body: JsonObject,
    request: Request,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    key = idempotency(request, idempotency_key, body)
    return created(await in_thread(sessions_of(request), play.level_up, principal, character_id, body, key), principal)


@router.get(
    "/v1/characters/{character_id}/level-ups", response_model=LevelUpPage, summary="Level-up history, newest first"
)
@access("member")
async def list_level_ups(
    character_id: str, request: Request, principal: PrincipalDep, limit: Limit = 50, cursor: Cursor = None
) -> Response:
    return encoded(await read(sessions_of(request), play.level_up_history, principal, character_id, limit, cursor))


@router.post(
    "/v1/campaigns/{campaign_id}/tests/opposed",
    status_code=201,
    response_model=OpposedResult,
    summary="GM: a confrontation of two characters' tests",
)
@access("gm")
@direct
async def run_opposed_test(
    campaign_id: str,
    body: JsonObject,
    request: Request,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    key = idempotency(request, idempotency_key, body)
    return created(await in_thread(sessions_of(request), play.opposed, principal, campaign_id, body, key), principal)


@router.post(
    "/v1/campaigns/{campaign_id}/tests/group",
    status_code=201,
    response_model=GroupResult,
    summary="GM: a group test (cooperation, ranking)",
)
@access("gm")
@direct
async def run_group_test(
    campaign_id: str,
    body: JsonObject,
    request: Request,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    key = idempotency(request, idempotency_key, body)
    return created(await in_thread(sessions_of(request), play.group, principal, campaign_id, body, key), principal)
