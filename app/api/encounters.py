"""Combat encounters (API.md, "Encounters (combat)"): thin handlers, one threadpool
hop each; the service applies the rules, visibility and the transaction."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from app.api.deps import (
    CheckedRoute,
    IdempotencyKey,
    IfMatch,
    PrincipalDep,
    SessionFactory,
    access,
    etag,
    idempotency,
    in_thread,
    in_unit,
    read,
)
from app.models.encounters import EncounterPublic, EncounterSummary, EncounterUpdate, RevertRequest
from app.models.schemas import Page
from app.rulesets.encounter_bodies import (
    CombatantAdd,
    CombatantUpdate,
    EncounterCreate,
    NextTurnRequest,
    StartRequest,
)
from app.rulesets.registry import RULES
from app.rulesets.wire import CombatEntry, CombatPage, StartedPublic
from app.services.encounters import actions, setup, turns
from app.services.encounters.choices import choices as combatant_choices
from app.services.encounters.plan import plan as action_plan
from app.services.encounters.record import read_action

router = APIRouter(tags=["encounters"], route_class=CheckedRoute)
Limit = Annotated[int, Query(ge=1, le=500)]
Cursor = Annotated[str | None, Query(max_length=500)]
Status = Annotated[Literal["setup", "active", "ended"] | None, Query()]
TABLE_DICE = (
    "Table dice are consumed in this order — "
    + "; ".join(f"{rules.ruleset}: {rules.dice_order}" for rules in RULES.values())
    + "."
)


def state(body: dict[str, Any], status_code: int = 200) -> JSONResponse:
    """The encounter with its ETag; a 201 (its creation, new combatants) has its `Location`."""
    headers = {"ETag": etag(body["version"])}
    if status_code == 201:
        headers["Location"] = f"/v1/encounters/{body['id']}"
    return JSONResponse(body, status_code=status_code, headers=headers)


def action(body: dict[str, Any]) -> JSONResponse:
    """A 201 action with the encounter's new ETag and its `Location` (`GET …/actions/{aid}` reads it)."""
    headers = {
        "ETag": etag(body["encounter_version"]),
        "Location": f"/v1/encounters/{body['encounter_id']}/actions/{body['id']}",
    }
    return JSONResponse(body, status_code=201, headers=headers)


def _json(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_unset=True) if model is not None else {}


@router.post(
    "/v1/campaigns/{campaign_id}/encounters",
    status_code=201,
    response_model=EncounterPublic,
    summary="GM: a new encounter from campaign characters (`count` copies an NPC)",
)
@access("gm")
async def create_encounter(
    campaign_id: str, data: EncounterCreate, sessions: SessionFactory, principal: PrincipalDep
) -> JSONResponse:
    return state(await in_thread(sessions, setup.create_encounter, principal, campaign_id, data), 201)


@router.get(
    "/v1/campaigns/{campaign_id}/encounters",
    response_model=Page[EncounterSummary],
    summary="The campaign's encounters, newest first",
)
@access("member")
async def list_encounters(
    campaign_id: str,
    sessions: SessionFactory,
    principal: PrincipalDep,
    limit: Limit = 50,
    cursor: Cursor = None,
    status: Status = None,
) -> JSONResponse:
    return JSONResponse(
        await read(
            sessions,
            partial(setup.list_encounters, limit=limit, cursor=cursor, status=status),
            principal,
            campaign_id,
        )
    )


@router.get(
    "/v1/encounters/{encounter_id}", response_model=EncounterPublic, summary="The encounter as the caller may see it"
)
@access("member")
async def read_encounter(encounter_id: str, sessions: SessionFactory, principal: PrincipalDep) -> JSONResponse:
    return state(await read(sessions, setup.read_encounter, principal, encounter_id))


@router.patch("/v1/encounters/{encounter_id}", response_model=EncounterPublic, summary="GM: name, options")
@access("gm")
async def update_encounter(
    encounter_id: str,
    data: EncounterUpdate,
    sessions: SessionFactory,
    principal: PrincipalDep,
    if_match: IfMatch = None,
) -> JSONResponse:
    return state(await in_thread(sessions, setup.update_encounter, principal, encounter_id, data, if_match))


@router.post(
    "/v1/encounters/{encounter_id}/combatants",
    status_code=201,
    response_model=EncounterPublic,
    summary="GM: add a combatant, or `count` copies of an NPC (in a running fight: its place in the order)",
)
@access("gm")
async def add_combatants(
    encounter_id: str,
    data: CombatantAdd,
    sessions: SessionFactory,
    principal: PrincipalDep,
    if_match: IfMatch = None,
) -> JSONResponse:
    return state(await in_thread(sessions, setup.add_combatants, principal, encounter_id, data, if_match), 201)


@router.patch(
    "/v1/encounters/{encounter_id}/combatants/{combatant_id}",
    response_model=EncounterPublic,
    summary="GM; the owner may set only `reaction`",
)
@access("member")
async def update_combatant(
    encounter_id: str,
    combatant_id: str,
    data: CombatantUpdate,
    sessions: SessionFactory,
    principal: PrincipalDep,
    if_match: IfMatch = None,
) -> JSONResponse:
    return state(
        await in_thread(sessions, setup.update_combatant, principal, encounter_id, combatant_id, data, if_match)
    )


@router.delete(
    "/v1/encounters/{encounter_id}/combatants/{combatant_id}",
    status_code=204,
    response_class=Response,
    summary="GM, before start: remove a combatant",
)
@access("gm")
async def delete_combatant(
    encounter_id: str, combatant_id: str, sessions: SessionFactory, principal: PrincipalDep, if_match: IfMatch = None
) -> Response:
    await in_thread(sessions, setup.delete_combatant, principal, encounter_id, combatant_id, if_match)
    return Response(status_code=204)


@router.post(
    "/v1/encounters/{encounter_id}/start",
    status_code=201,
    response_model=StartedPublic,
    summary="GM: roll initiative with the ruleset's rule → active, round 1",
    description=TABLE_DICE,
)
@access("gm")
async def start_encounter(
    encounter_id: str,
    request: Request,
    sessions: SessionFactory,
    principal: PrincipalDep,
    data: Annotated[StartRequest | None, Body()] = None,
    if_match: IfMatch = None,
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    data = data or StartRequest()
    key = idempotency(request, idempotency_key, _json(data))
    return state(await in_unit(sessions, turns.start, principal, encounter_id, data, key, if_match), 201)


@router.post(
    "/v1/encounters/{encounter_id}/next-turn",
    status_code=201,
    response_model=CombatEntry,
    summary="GM, or the owner of the combatant whose turn it is: end the turn",
    description="Dice (where a new round re-orders, GC-O1) are consumed as at start. " + TABLE_DICE,
)
@access("member")
async def next_encounter_turn(
    encounter_id: str,
    request: Request,
    sessions: SessionFactory,
    principal: PrincipalDep,
    data: Annotated[NextTurnRequest | None, Body()] = None,
    if_match: IfMatch = None,
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    data = data or NextTurnRequest()
    key = idempotency(request, idempotency_key, _json(data))
    return action(await in_unit(sessions, turns.next_turn, principal, encounter_id, data, key, if_match))


ACTION_DICE = (
    "Table dice are consumed in rule order: the attack test, the reaction test(s), then damage; "
    "a missing die is a 422 naming the next one and whose it is. Each ruleset validates the body "
    "with its own models (`oneOf`, tagged `x-ruleset`); a type it does not implement is a 422."
)


@router.post(
    "/v1/encounters/{encounter_id}/actions",
    status_code=201,
    response_model=CombatEntry,
    summary="An action: attack, move, dash, posture, final_skill (the actor's owner on its turn, or the "
    "GM); heal, damage, condition (GM)",
    description=ACTION_DICE,
)
@access("member")
async def act_in_encounter(
    encounter_id: str,
    data: Annotated[dict[str, Any], Body()],
    request: Request,
    sessions: SessionFactory,
    principal: PrincipalDep,
    if_match: IfMatch = None,
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    key = idempotency(request, idempotency_key, data)
    return action(await in_unit(sessions, actions.act, principal, encounter_id, data, key, if_match))


class ActionChoice(BaseModel):
    type: str
    allowed: bool
    code: str | None = None
    targets: list[str]
    needs: list[str] = Field(
        description="What the body must still say because the sheet cannot (`damage` when no weapon is on the "
        "sheet; `to`, `posture`, `action_id`): never a reason to refuse."
    )
    reactions: list[str] | None = None
    costs: dict[str, Any] | None = None


class Choices(BaseModel):
    combatant_id: str
    turn: bool
    acted: bool
    moved: int
    actions: list[ActionChoice]


class PlannedDie(BaseModel):
    die: str
    purpose: str
    by: str | None
    entered_by: Literal["caller", "server"]
    condition: str | None = Field(
        None, description="Set when the die is needed only on some results of earlier ones (named)."
    )
    depends_on: list[int] | None = Field(
        None,
        description="The dice (numbered from 1, in `dice`) whose results decide whether this one is needed; "
        "empty when they are not named (a player who may not read every party's sheet: which die decides "
        "depends on that sheet).",
    )


class Share(BaseModel):
    probability: str = Field(description="An exact fraction, `numerator/denominator`.")
    p: float


OddsFigure = Literal["outcomes", "hit", "down", "out"]
WITHHELD = " Null when withheld (named in `withheld`)."


class PlanOdds(BaseModel):
    outcomes: dict[str, Share] | None = Field(
        description="Each outcome of the exchange, as the ruleset names them (sum: 1)." + WITHHELD
    )
    hit: Share | None = Field(description="The target's first pool lowered." + WITHHELD)
    down: Share | None = Field(
        description="The target's first pool (hit points, vitality…) brought to 0 by this action, in every "
        "ruleset." + WITHHELD
    )
    out: Share | None = Field(
        None,
        description="Only in a ruleset where 0 does not yet take a combatant out (asgard, AS-C5): the target "
        "left unconscious by this action (0 vitality and a failed volonte test)." + WITHHELD,
    )
    withheld: list[OddsFigure] = Field(
        description="The figures the caller may not be given (null above): for a player, those computed from "
        "something it may not read (a target's sheet it does not see whole, pools it sees as a status or not "
        "at all), as the encounter's `odds_for_players` says. Empty for the GM."
    )


class ActionPlan(BaseModel):
    dice: list[PlannedDie]
    odds: PlanOdds | None = None


@router.get(
    "/v1/encounters/{encounter_id}/choices",
    response_model=Choices,
    summary="What a combatant may do now (the GM, or the combatant's owner)",
    description="Each combat action type: `allowed` when the action route would accept some body of it now "
    "(else the problem `code` it answers), what that body `needs` to say because the sheet cannot (a `damage` "
    "expression when no weapon is on the sheet, `to`, `posture`…: filled, the body is accepted), every target in "
    "reach the caller sees, the target's reactions, and the "
    "`costs` that apply (light/dark points, heroism…: per choice, with what the sheet holds). Built by "
    "running the action route's own checks without writing anything.",
)
@access("member")
async def encounter_choices(
    encounter_id: str,
    sessions: SessionFactory,
    principal: PrincipalDep,
    combatant_id: Annotated[str, Query(min_length=1, max_length=64)],
) -> JSONResponse:
    return JSONResponse(await in_thread(sessions, combatant_choices, principal, encounter_id, combatant_id))


@router.post(
    "/v1/encounters/{encounter_id}/actions/plan",
    response_model=ActionPlan,
    summary="The dice an action will consume, in order, without rolling or writing anything",
    description="Exactly the body of the action (whoever may send it; the same schema): every die it will take, "
    "in order, with whose it is (`by`) and who enters it (`entered_by`); a die needed only on some results of "
    "earlier ones (a damage die only on a hit) carries its `condition` and the dice it `depends_on`. The dice "
    "the body gives (`seed`, table `dice`: those the caller enters) are taken first, as the action takes them: "
    "given every die, the plan is exactly the dice the action then consumes; given too many, the action's "
    "`dice_left_over`. A player who may not read a party's whole sheet (its `player_access`, the fight's "
    "`hp_visibility`) is told dice that do not depend on it: each die some value of that party's pools would ask "
    "(AS-C5's tests when a blow takes vitality to 0) is listed with its `condition` whatever the real value, and "
    "`depends_on` is empty. An action with a target answers its exact `odds` (fractions): each outcome of the "
    "exchange, `hit` (the target's first pool lowered), `down` (that pool brought to 0 by it) and, in asgard, `out` "
    "(left unconscious: AS-C5), from the ruleset's own rules (standing reaction, postures, karma dice, "
    "advantages, protection, primes, groups). A player gets only the figures computed from what it may read "
    "(the others null, named in `withheld`; the encounter's `odds_for_players`). A body the action would "
    "refuse answers that problem.",
)
@access("member")
async def plan_encounter_action(
    encounter_id: str,
    data: Annotated[dict[str, Any], Body()],
    sessions: SessionFactory,
    principal: PrincipalDep,
) -> JSONResponse:
    return JSONResponse(await in_thread(sessions, action_plan, principal, encounter_id, data))


@router.get(
    "/v1/encounters/{encounter_id}/actions",
    response_model=CombatPage,
    summary="The fight's history, newest first, reverted ones marked",
)
@access("member")
async def list_encounter_actions(
    encounter_id: str, sessions: SessionFactory, principal: PrincipalDep, limit: Limit = 50, cursor: Cursor = None
) -> JSONResponse:
    return JSONResponse(
        await read(sessions, partial(actions.list_actions, limit=limit, cursor=cursor), principal, encounter_id)
    )


@router.get(
    "/v1/encounters/{encounter_id}/actions/{action_id}",
    response_model=CombatEntry,
    summary="One action of the fight's history, as the caller may see it",
    description="As `GET …/actions` shows it (reverted ones carry `reverted_by`); an action the caller "
    "may not see (hidden, or a hidden combatant's) is a 404, exactly as an unknown one.",
)
@access("member")
async def read_encounter_action(
    encounter_id: str, action_id: str, sessions: SessionFactory, principal: PrincipalDep
) -> JSONResponse:
    return JSONResponse(await read(sessions, read_action, principal, encounter_id, action_id))


@router.post(
    "/v1/encounters/{encounter_id}/actions/{action_id}/revert",
    status_code=201,
    response_model=CombatEntry,
    summary="GM: undo the latest action not yet reverted",
)
@access("gm")
async def revert_encounter_action(
    encounter_id: str,
    action_id: str,
    request: Request,
    sessions: SessionFactory,
    principal: PrincipalDep,
    data: Annotated[RevertRequest | None, Body()] = None,
    if_match: IfMatch = None,
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    data = data or RevertRequest()
    key = idempotency(request, idempotency_key, _json(data))
    return action(
        await in_unit(sessions, actions.revert, principal, encounter_id, action_id, data.force, key, if_match)
    )


@router.post(
    "/v1/encounters/{encounter_id}/end",
    response_model=EncounterPublic,
    summary="GM: the fight is over; later actions are refused (409)",
    description="200, not 201: ending creates nothing (no action in the history, no new resource, so no "
    "`Location`); like a PATCH, it changes the encounter and answers its new state, with its ETag. "
    "The sheets it changes (a ruleset's end of fight) send `character.updated`, the encounter "
    "`encounter.updated`.",
)
@access("gm")
async def end_encounter(
    encounter_id: str, sessions: SessionFactory, principal: PrincipalDep, if_match: IfMatch = None
) -> JSONResponse:
    return state(await in_thread(sessions, setup.end, principal, encounter_id, if_match))
