"""Dice epochs (API.md "Verifiable server dice (commit, then reveal)"): the commitment before the
first die, members' salts, the GM's reveal; and a hidden GM roll published after the reveal."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from app.api.deps import CheckedRoute, PrincipalDep, access, in_thread, read, sessions_of
from app.models.dice_epochs import DiceEpochList, DiceEpochPublic, DiceEpochRevealed, SaltCreate
from app.rulesets.wire import LogEntry
from app.services import dice_epochs

router = APIRouter(prefix="/v1/campaigns/{campaign_id}", tags=["dice epochs"], route_class=CheckedRoute)


@router.get("/dice-epochs", response_model=DiceEpochList, summary="The campaign's dice epochs, newest first")
@access("member")
async def list_dice_epochs(campaign_id: str, request: Request, principal: PrincipalDep) -> JSONResponse:
    return JSONResponse(await read(sessions_of(request), dice_epochs.list_epochs, principal, campaign_id))


@router.get("/dice-epochs/current", response_model=DiceEpochPublic, summary="The current dice epoch (its commitment)")
@access("member")
async def current_dice_epoch(campaign_id: str, request: Request, principal: PrincipalDep) -> JSONResponse:
    sessions = sessions_of(request)
    epoch = await read(sessions, dice_epochs.current_if_open, principal, campaign_id)  # no write lock
    if epoch is None:
        epoch = await in_thread(sessions, dice_epochs.current_epoch, principal, campaign_id)
    return JSONResponse(epoch)


@router.post(
    "/dice-epochs/current/salts",
    status_code=201,
    response_model=DiceEpochPublic,
    summary="Add a salt to the current epoch, before its first die (409 epoch_started after)",
)
@access("member")
async def add_salt(campaign_id: str, data: SaltCreate, request: Request, principal: PrincipalDep) -> JSONResponse:
    epoch = await in_thread(sessions_of(request), dice_epochs.add_salt, principal, campaign_id, data.salt)
    return JSONResponse(epoch, status_code=201)


@router.post(
    "/dice-epochs/current/reveal",
    response_model=DiceEpochRevealed,
    summary="GM: reveal the current epoch's seed and open the next epoch",
)
@access("gm")
async def reveal_dice_epoch(campaign_id: str, request: Request, principal: PrincipalDep) -> JSONResponse:
    return JSONResponse(await in_thread(sessions_of(request), dice_epochs.reveal, principal, campaign_id))


@router.post(
    "/rolls/{entry_id}/publish",
    response_model=LogEntry,
    summary="GM: show a hidden roll to the players, once its dice's epochs are revealed",
)
@access("gm")
async def publish_roll(campaign_id: str, entry_id: str, request: Request, principal: PrincipalDep) -> JSONResponse:
    return JSONResponse(await in_thread(sessions_of(request), dice_epochs.publish, principal, campaign_id, entry_id))
